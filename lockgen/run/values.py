"""The values a lock run takes and gives: :class:`RunOptions` in, a :class:`CellResult` per cell
as it goes (to a :class:`Reporter`), a :class:`RunResult` at the end. Plain data: the pipeline
(:mod:`lockgen.run.lock`), the no-op path (:mod:`lockgen.run.noop`) and the reporters
(:mod:`lockgen.run.progress`) share them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from lockgen.locks.shard import Shard
from lockgen.resolve import uv
from lockgen.runtime.states import CellState
from lockgen.runtime.words import cut

if TYPE_CHECKING:  # the no-op path imports this module: the spread's imports are not paid there
    from lockgen.locks.spread import Difference

__all__ = ["REASON_CHARS", "SILENT", "CellResult", "Reporter", "RunOptions", "RunResult", "Silent", "default_jobs"]

#: How much of uv's explanation a failed cell's manifest reason keeps.
REASON_CHARS = 400


def default_jobs(cells: int) -> int:
    """Default concurrency: one cell more than CPU cores (a resolution mostly waits on the
    network: through the page cache, uv's reads are chains of round trips; on 2 cores a cold run
    took 15 s at 3 cells at once, 19 s at 2, and a warm one the same), at most 8 and at most
    the number of cells (docs/benchmarks.md)."""
    return max(1, min(cells, 8, max(2, (os.cpu_count() or 1) + 1)))


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How ``all``/``lock`` run: ``force`` re-resolves up-to-date cells and revalidates cached
    pages; ``uv`` options pass to uv (upgrades); ``jobs`` cells at once; ``online`` turns off the
    reuse of pages fetched in the run; ``mirrors`` are ``CANONICAL=MIRROR`` strings; ``wait``
    queues behind another run instead of refusing; ``retry_unavailable`` re-resolves cells whose
    optional source was unreachable; ``shard`` locks only that shard of the selected cells
    (:mod:`lockgen.locks.shard`) and writes a shard manifest; ``coverage*``: the kernel-coverage
    step's off switch and budget (docs/select.md, "Kernel coverage")."""

    force: bool = False
    uv: uv.Options = field(default_factory=uv.Options)
    jobs: int | None = None
    online: bool = False
    mirrors: tuple[str, ...] = ()
    wait: bool = False
    retry_unavailable: bool = False
    shard: Shard | None = None
    #: the kernel-coverage step: False turns it off (``--no-coverage``); a budget in MB and seconds
    #: (``--coverage-budget``, ``--coverage-seconds``) over the config's ``[coverage]`` (None: the config's)
    coverage: bool = True
    coverage_mb: int | None = None
    coverage_seconds: float | None = None

    @property
    def refresh(self) -> bool:
        return self.force or self.uv.upgrade or bool(self.uv.upgrade_packages)


@dataclass(frozen=True)
class CellResult:
    """What happened to one cell (or a removed lock's path) in a run."""

    name: str
    state: CellState
    seconds: float = 0.0
    message: str = ""

    def reason(self) -> str:
        """The one line the manifest records for a failed cell (installers show it): the
        message's first line without the ``cell NAME:`` prefix (the manifest is keyed by cell);
        when that line only announces an explanation (``uv could not resolve it:``), uv's cause
        (its ``cause:`` block, else the next line; at most :data:`REASON_CHARS` characters, cut at a
        sentence end); then
        lockgen's own hints (``lockgen: …`` lines: what to do). Fresh-eyes reviews met ``cell X is
        failed: cell X: uv could not resolve it:`` and a cause cut at its first line."""
        lines = [line.strip(" ╰─▶×│") for line in self.message.splitlines()]
        lines = [line for line in lines if line]
        if not lines:
            return ""
        first = lines[0].removeprefix(f"cell {self.name}: ")
        rest = lines[1:]
        hints = [line.removeprefix("lockgen: ") for line in rest if line.startswith("lockgen: ")]
        if first.endswith(":") and rest:
            start = next((i for i, line in enumerate(rest) if line.startswith("cause: ")), 0)
            cause: list[str] = []
            for line in rest[start:]:
                if cause and line.startswith(("hint: ", "lockgen: ", "error: ")):
                    break
                cause.append(line.removeprefix("cause: ").removeprefix("error: "))
            first = f"{first} {cut(' '.join(cause), REASON_CHARS)}"  # at a sentence end (issue 17)
        return "; ".join([first, *hints])


@dataclass
class RunResult:
    """What a run did. ``exit_code``: 130 interrupted, 1 a cell failed (or the manifest could
    not be written), else 0."""

    results: list[CellResult] = field(default_factory=list)
    manifest_error: str | None = None
    report: list[str] = field(default_factory=list)  # the change report, one line per group
    changes: list[dict[str, object]] = field(default_factory=list)  # the same, for --json
    would_write: list[str] | None = None  # --dry-run: the project files the run would write or remove
    #: the packages whose versions differ across the cells after the run, with their causes
    #: (lockgen.run.harmonize); None: the run resolved nothing (or was a shard), none computed
    differences: list[Difference] | None = None

    def to_dict(self) -> dict[str, object]:
        """``lockgen all --json``: each cell's state and message, the changes, the manifest error
        (and with ``--dry-run``: ``dry_run: true`` and ``would_write``, the files it would write
        or remove; nothing was written)."""
        cells = [
            {"cell": r.name, "state": str(r.state), "seconds": round(r.seconds, 1), "message": r.message}
            for r in self.results
        ]
        data: dict[str, object] = {
            "exit_code": self.exit_code,
            "cells": cells,
            "changes": self.changes,
            "report": self.report,
            "manifest_error": self.manifest_error,
        }
        if self.would_write is not None:
            data.update(dry_run=True, would_write=list(self.would_write))
        if self.differences is not None:
            data["differences"] = [d.to_dict() for d in self.differences]
        return data

    @property
    def interrupted(self) -> bool:
        return any(r.state is CellState.INTERRUPTED for r in self.results)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 1 if self.manifest_error or any(r.state.bad for r in self.results) else 0


class Reporter(Protocol):
    """Receives progress. ``update`` may be called from worker threads."""

    def start(self, names: Sequence[str]) -> None: ...
    def update(self, result: CellResult) -> None: ...
    def finish(self, run: RunResult) -> None: ...


class Silent:
    def start(self, names: Sequence[str]) -> None:
        pass

    def update(self, result: CellResult) -> None:
        pass

    def finish(self, run: RunResult) -> None:
        pass


SILENT = Silent()
