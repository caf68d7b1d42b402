"""``lockgen check --resolve [CELL…]``: would the same inputs resolve to the same locks today?

Every selected cell is resolved again, from scratch, into ``.lockgen/reproduce/<locks>/``: the
same config, templates and cutoff (``exclude-newer``), the pinned uv (which must be the version
each lock records, else the audit says so), every page revalidated, and *no* preference for the
committed versions (a fresh resolution, as a new clone's first ``lockgen all`` would make).
``locks/`` is not touched; nor is the no-op stamp (it is put back as it was). The committed locks
and the scratch ones are then compared with the diff engine (:mod:`lockgen.locks.diff`), and
each difference is explained from the pages an installer reads
(:class:`~lockgen.index.pages.PageReader`), as one of:

* **a file deleted**: a locked file's hash is on no page any more;
* **a yank**: the locked version's files are yanked (PEP 592: uv keeps a yanked version only
  when a lock prefers it, which a fresh resolution does not);
* **a new upload under the cutoff**: the new version's files were uploaded before the cutoff
  (the cutoff is in the future, or the index dated them so) and the lock predates them;
* **a page changed**: the same version has other files now (a new wheel, a re-uploaded one), or
  the page offers a version without an upload time (``exclude-newer`` cannot hide it);
* otherwise it follows from the cell's other changes (a dependency of a package that moved) or
  from the inputs (a stale lock: ``lockgen check`` says which inputs changed).

A cell is ``reproducible`` when the fresh resolution equals the committed one, else ``drift``
(exit 1), ``failed`` (it does not resolve today: uv's reason, and the locked files checked the
same way) or ``stale`` (its inputs changed since it was locked; the drift is explained all the
same).
"""

from __future__ import annotations

import dataclasses
import datetime
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from lockgen.config import WORK, cooldown
from lockgen.index.pages import PageFile, PageReader, timestamp
from lockgen.locks import store
from lockgen.locks.diff import Change, Kind, diff, group
from lockgen.locks.diffformat import headline
from lockgen.locks.lock import Entry, Header, Lock
from lockgen.locks.lockset import MAIN, CellLocks, LockSet
from lockgen.locks.stamp import STAMP
from lockgen.project import Project
from lockgen.rot.locate import pages_for
from lockgen.run.values import SILENT, Reporter, RunOptions
from lockgen.runtime import clock
from lockgen.runtime.states import CellState
from lockgen.runtime.words import counted

__all__ = ["SCRATCH", "CellDrift", "Explained", "ReproReport", "reproduce"]

#: Where the cells are resolved again (the project's locks folder name below it).
SCRATCH = f"{WORK}/reproduce"


@dataclass(frozen=True)
class Explained:
    """One difference (``change``: as ``lockgen diff`` says it) and why (``why``)."""

    change: str
    why: str
    layer: str = MAIN


@dataclass
class CellDrift:
    """One cell's outcome: ``state`` (``reproducible``, ``drift``, ``failed``, ``stale``),
    ``notes`` (a stale lock, another uv, uv's failure) and the ``explained`` differences."""

    cell: str
    state: str
    notes: list[str] = field(default_factory=list)
    explained: list[Explained] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "cell": self.cell, "state": self.state, "notes": list(self.notes),
            "changes": [{"change": e.change, "why": e.why, "layer": e.layer} for e in self.explained],
        }  # fmt: skip


@dataclass
class ReproReport:
    """Every selected cell's :class:`CellDrift`, and where the scratch locks are."""

    folder: str
    cells: list[CellDrift] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if any(c.state != "reproducible" for c in self.cells) else 0

    def to_dict(self) -> dict[str, object]:
        return {"ok": self.exit_code == 0, "scratch": self.folder, "cells": [c.to_dict() for c in self.cells]}

    def lines(self) -> list[str]:
        out = []
        for cell in self.cells:
            out.append(f"{cell.cell}: {cell.state}")
            out += [f"  {note}" for note in cell.notes]
            for item in cell.explained:
                where = "" if item.layer == MAIN else f" [{item.layer}]"
                out.append(f"  {item.change}{where}: {item.why}")
        same = sum(c.state == "reproducible" for c in self.cells)
        out.append(
            f"{same} of {counted(len(self.cells), 'cell')} resolve{'s' if same == 1 else ''} today to their committed locks (fresh locks in {self.folder}/)"
        )
        return out


def reproduce(
    project: Project,
    names: Sequence[str] = (),
    only: Sequence[str] = (),
    *,
    mirrors: Sequence[str] = (),
    jobs: int | None = None,
    wait: bool = False,
    reporter: Reporter = SILENT,
) -> ReproReport:
    """Resolve the selected cells again and explain the drift (see the module docstring).
    Raises :class:`~lockgen.runtime.errors.UsageError` for an unknown cell, or when another run holds the
    project (without ``wait``)."""
    from lockgen.rot.cells import chosen_cells
    from lockgen.run import lock as pipeline
    from lockgen.run.check import state_of
    from lockgen.runtime.uvbin import uv_version

    locks = project.config.locks
    committed = LockSet.from_folder(project.root / locks, locks, label=locks)
    cells = chosen_cells(project, committed, names, only)
    scratch = f"{SCRATCH}/{locks}"
    store.refuse_linked_work(project.root, scratch, depth=0)  # never deleted, nor written, through a link
    shutil.rmtree(project.root / scratch, ignore_errors=True)
    report = ReproReport(folder=scratch)
    if not cells:
        return report
    plans = {p.cell.name: p for p in project.plans([project.cell(c) for c in cells])}
    notes: dict[str, list[str]] = {c: [] for c in cells}
    stale = set()
    for name in cells:
        recorded = committed.cells[name].main.header.uv
        if recorded != uv_version():
            notes[name].append(
                f"locked with uv {recorded}, resolved again with uv {uv_version()} (this lockgen's): install the "
                f"lockgen that pins uv {recorded} to reproduce exactly"
            )
        state = state_of(project.root, plans[name])
        if state.state is not CellState.UP_TO_DATE:
            stale.add(name)
            notes[name].append(f"its lock is {state.state} ({'; '.join(state.reasons)}): the inputs changed too")
    scratch_project = dataclasses.replace(project, config=dataclasses.replace(project.config, locks=scratch))
    options = RunOptions(force=True, jobs=jobs, mirrors=tuple(mirrors), wait=wait)
    stamp = project.root / STAMP
    kept = stamp.read_bytes() if stamp.is_file() else None
    # a cooldown ("7 days") counts back from when the lock was made, not from today: cells locked
    # with one are resolved again from the start their header records, one run per start
    starts: dict[datetime.datetime | None, list[str]] = {}
    for name in cells:
        starts.setdefault(_recorded_start(committed.cells[name].main.header), []).append(name)
    today = clock.started()
    results = []
    try:
        for moment, group in starts.items():
            clock.start(moment or today)
            results += pipeline.lock(scratch_project, group, (), options, reporter).results
    finally:  # the scratch run's stamp names the scratch locks: the project's comes back
        clock.start(today)
        if kept is not None:
            stamp.write_bytes(kept)
        else:
            stamp.unlink(missing_ok=True)
    failed = {r.name: r for r in results if r.state is CellState.FAILED}
    fresh = LockSet.from_folder(project.root / scratch, scratch, label=scratch)
    with PageReader(project.mirrors(mirrors)) as reader:
        explainer = _Explainer(reader)
        for name in cells:
            drift = CellDrift(cell=name, state="reproducible", notes=notes[name])
            if name in failed:
                drift.state = "failed"
                drift.notes.append(f"it does not resolve today: {failed[name].reason()}")
                drift.explained += explainer.locked_files(committed.cells[name])
            else:
                changes = diff(committed.only([name]), fresh.only([name]))
                drift.explained += [
                    explainer.explain(c, committed.cells[name], fresh.cells.get(name), changes) for c in changes
                ]
                if drift.explained:
                    drift.state = "stale" if name in stale else "drift"
            report.cells.append(drift)
    return report


class _Explainer:
    """Why each difference (see the module docstring), from the pages an installer reads."""

    def __init__(self, reader: PageReader) -> None:
        self.reader = reader

    def files(self, lock: Lock, name: str) -> tuple[list[PageFile], list[str]]:
        """The files the pages of ``lock``'s sources list for ``name``, and the pages' errors."""
        pages = [self.reader.page(url) for url in pages_for(lock.header, canonicalize_name(name))]
        return [f for p in pages for f in p.files], [f"{p.url}: {p.error}" for p in pages if p.error]

    def explain(self, change: Change, old: CellLocks, new: CellLocks | None, others: Sequence[Change]) -> Explained:
        text = headline(group([change])[0])
        if change.package is None:
            return Explained(text, "the cell's layers changed", change.layer)
        old_lock = old.main if change.layer == MAIN else old.layers.get(change.layer)
        new_lock = (new.main if change.layer == MAIN else new.layers.get(change.layer)) if new is not None else None
        lock = old_lock or new_lock
        if lock is None:
            return Explained(text, "its layer changed", change.layer)
        listed, errors = self.files(lock, change.package)
        entry = old_lock.entry(change.package) if old_lock is not None else None
        why = self._old_side(entry, listed)
        if why is None and new_lock is not None:
            why = self._new_side(new_lock, change, listed, lock.header.exclude_newer)
        if why is None and change.kind in (Kind.HASH, Kind.FILES, Kind.SOURCE):
            why = "a page changed: the same version has other files now"
        if why is None and errors:
            why = f"the pages could not all be read ({'; '.join(errors)})"
        if why is None:
            moved = [c for c in others if c is not change and c.package is not None and c.kind is not Kind.ADDED]
            why = (
                "it follows from the cell's other changes (dependencies)"
                if moved
                else "uv resolves it differently today"
            )
        return Explained(text, why, change.layer)

    def _old_side(self, entry: Entry | None, listed: Sequence[PageFile]) -> str | None:
        """A deleted locked file or a yanked locked version, if that is it."""
        if entry is None or entry.url is not None or not entry.hashes:
            return None
        digests = [h.removeprefix("sha256:") for h in entry.hashes]
        by_sha = {f.sha256: f for f in listed if f.sha256}
        gone = [d for d in digests if d not in by_sha]
        if gone and len(gone) == len(digests):
            return f"a file deleted: no page lists the locked files of {entry.name} {entry.version} any more"
        yanked = [by_sha[d] for d in digests if d in by_sha and by_sha[d].yanked is not False]
        if yanked:
            reason = next((y.yanked for y in yanked if isinstance(y.yanked, str) and y.yanked), "")
            return f"a yank: {entry.name} {entry.version} is yanked" + (f" ({reason})" if reason else "")
        if gone:
            return f"a file deleted: {len(gone)} of the {len(digests)} locked files of {entry.name} {entry.version} are gone"
        return None

    def _new_side(self, lock: Lock, change: Change, listed: Sequence[PageFile], cutoff: str | None) -> str | None:
        """A new upload under the cutoff, or a page offering a version without an upload time."""
        entry = lock.entry(change.package or "")
        if entry is None or not entry.hashes:
            return None
        digests = {h.removeprefix("sha256:") for h in entry.hashes}
        files = [f for f in listed if f.sha256 in digests]
        if not files:
            return None
        times = [f.upload_time for f in files if f.upload_time is not None]
        limit = timestamp(cutoff)
        if times and limit is not None and min(times) <= limit:
            first = min(times).strftime("%Y-%m-%dT%H:%M:%SZ")
            return f"a new upload under the cutoff: {entry.name} {entry.version} was uploaded {first}, before exclude-newer {cutoff}"
        if not times and limit is not None:
            return f"a page changed: it offers {entry.name} {entry.version} without an upload time, so exclude-newer cannot hide it"
        return None

    def locked_files(self, cell: CellLocks) -> list[Explained]:
        """For a cell that no longer resolves: its locked files that are gone or yanked."""
        out = []
        for layer, lock in [(MAIN, cell.main), *cell.layers.items()]:
            for entry in lock.entries:
                if entry.url is not None or not entry.hashes:
                    continue
                listed, _ = self.files(lock, entry.name)
                why = self._old_side(entry, listed)
                if why is not None:
                    out.append(Explained(f"{entry.name} {entry.version}", why, layer))
        return out


def _recorded_start(header: Header) -> datetime.datetime | None:
    """When the run that made a lock started, for a lock whose cutoff is a duration
    (``exclude-newer-span``): its recorded cutoff plus the duration; None for a fixed cutoff or
    a header that does not say (:mod:`lockgen.config.cooldown`)."""
    if not header.exclude_newer or not header.exclude_newer_span:
        return None
    try:
        span = cooldown.span(header.exclude_newer_span)
        cutoff = datetime.datetime.fromisoformat(header.exclude_newer.replace("Z", "+00:00"))
    except ValueError:
        return None
    return cutoff + span if span is not None and cutoff.tzinfo is not None else None
