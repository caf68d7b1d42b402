"""Progress reporters for :func:`lockgen.run.lock.lock`: a live table on a terminal, plain log
lines otherwise, and the summary table at the end."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from lockgen.run.values import CellResult, RunResult
from lockgen.runtime.states import CellState

if TYPE_CHECKING:
    from rich.live import Live
    from rich.table import Table

__all__ = ["LiveReporter", "PlainReporter", "cells_named", "failure_groups", "print_summary"]

_STYLE = {
    CellState.FAILED: "red", CellState.INTERRUPTED: "red", CellState.LOCKED: "green", CellState.UNCHANGED: "green",
    CellState.UP_TO_DATE: "dim", CellState.RESOLVING: "yellow", CellState.SKIPPED: "dim",
}  # fmt: skip


def _seconds(result: CellResult) -> str:
    return f"{result.seconds:.1f}s" if result.seconds else ""


class PlainReporter:
    """One line per state change, for CI logs: ``lockgen: <cell>: <status> (<time>)``."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.lock = threading.Lock()

    def start(self, names: Sequence[str]) -> None:
        pass

    def update(self, result: CellResult) -> None:
        with self.lock:
            extra = f" ({_seconds(result)})" if result.seconds else ""
            note = f": {result.message}" if result.message and result.state is not CellState.FAILED else ""
            print(f"lockgen: {result.name}: {result.state}{extra}{note}", file=self.stream, flush=True)

    def coverage(self, done: int, fetched: int, wheel: str) -> None:
        """One line per wheel whose kernel coverage was read: wheels read so far, MB downloaded."""
        with self.lock:
            print(f"lockgen: kernel coverage: {wheel} read ({done} wheel{'s' if done > 1 else ''}, "
                  f"{fetched / 1e6:,.0f} MB so far)", file=self.stream, flush=True)  # fmt: skip

    def finish(self, run: RunResult) -> None:
        print_summary(run, self.stream)


class LiveReporter:
    """A live table (rich) with each cell's state and time, redrawn as cells progress."""

    def __init__(self, stream: TextIO | None = None):
        from rich.console import Console

        self.stream = stream = stream or sys.stderr
        self.console = Console(file=stream)
        self.rows: dict[str, CellResult] = {}
        self.lock = threading.Lock()
        self.live: Live | None = None
        self.reading: str | None = None  # the kernel-coverage row, while it reads

    def _table(self) -> Table:
        from rich.table import Table

        table = Table(box=None, show_header=False)
        for row in self.rows.values():
            table.add_row(row.name, f"[{_STYLE.get(row.state, '')}]{row.state}", _seconds(row))
        if self.reading is not None:
            table.add_row("kernel coverage", "[cyan]reading", self.reading)
        return table

    def coverage(self, done: int, fetched: int, wheel: str) -> None:
        """The kernel-coverage row: wheels read so far, MB downloaded, the last wheel."""
        with self.lock:
            self.reading = f"{done} wheel{'s' if done > 1 else ''}, {fetched / 1e6:,.0f} MB ({wheel})"
            if self.live is None:
                from rich.live import Live

                self.live = Live(self._table(), console=self.console, refresh_per_second=4, transient=True)
                self.live.start()
            self.live.update(self._table())

    def start(self, names: Sequence[str]) -> None:
        self.rows = {n: CellResult(n, CellState.WAITING) for n in names}

    def update(self, result: CellResult) -> None:
        with self.lock:
            self.rows[result.name] = result
            if self.live is None and result.state is CellState.RESOLVING:  # no display for a no-op run
                from rich.live import Live

                self.live = Live(self._table(), console=self.console, refresh_per_second=4, transient=True)
                self.live.start()
            if self.live:
                self.live.update(self._table())

    def finish(self, run: RunResult) -> None:
        if self.live:
            self.live.stop()
        print_summary(run, self.stream)


def failure_groups(results: Sequence[CellResult]) -> list[tuple[list[str], str]]:
    """The failed cells' messages, each distinct one once with the cells it hit, in order
    (C28: an unreachable host, or the same uv error, in 26 cells is one message). A message's
    ``cell <name>: `` prefix is dropped and its other mentions of the cell read ``<cell>``."""
    groups: dict[str, list[str]] = {}
    for r in results:
        if r.state is CellState.FAILED:
            text = re.sub(
                rf"(?<![\w.-]){re.escape(r.name)}(?![\w.])", "<cell>", r.message.removeprefix(f"cell {r.name}: ")
            )
            groups.setdefault(text, []).append(r.name)
    return [(cells, text) for text, cells in groups.items()]


def cells_named(cells: Sequence[str], total: int) -> str:
    """``cell a``, ``cells a, b`` or, when they are every one of the run's ``total`` cells (more
    than one), ``all 8 cells`` (issue 16: a cause shared by every cell is said once, without a
    list nobody reads)."""
    if len(cells) > 1 and len(cells) == total:
        return f"all {total} cells"
    return f"cell{'s' if len(cells) > 1 else ''} {', '.join(cells)}"


def print_summary(run: RunResult, stream: TextIO) -> None:
    """The summary table (cell, status, time), each failure's explanation, then the counts.

    Plain text, so a no-op run does not pay for importing rich."""
    body = [
        (r.name, str(r.state), _seconds(r), r.message if r.state is not CellState.FAILED else "") for r in run.results
    ]
    rows = [("cell", "status", "time", "note" if any(row[3] for row in body) else ""), *body]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}".rstrip(), file=stream)
    total = sum(1 for r in run.results if r.state is not CellState.REMOVED)
    for cells, text in failure_groups(run.results):
        print(f"error: {cells_named(cells, total)}: {text}", file=stream)
    if run.manifest_error:
        print(f"error: {run.manifest_error}", file=stream)
    for line in run.report:
        print(line, file=stream)
    counts: dict[str, int] = {}
    for r in run.results:
        counts[str(r.state)] = counts.get(str(r.state), 0) + 1
    print(", ".join(f"{n} {s}" for s, n in counts.items()) or "no cells", file=stream, flush=True)
