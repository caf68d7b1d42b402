"""The cores of ``lockgen check --online``, ``lockgen check --resolve`` and ``lockgen bundle``:
plain values in, a report out; the CLI only prints it. Each reads the committed locks; none
writes ``locks/``."""

from __future__ import annotations

from collections.abc import Sequence

from lockgen.errors import LockFormatError
from lockgen.locks.lockset import LockSet
from lockgen.plan.matrix import select
from lockgen.project import Project
from lockgen.rot.online import JOBS, TIMEOUT, OnlineReport
from lockgen.rot.reproduce import ReproReport
from lockgen.runs import SILENT, Reporter

__all__ = ["chosen_cells", "online_command", "resolve_command"]


def chosen_cells(project: Project, lockset: LockSet, names: Sequence[str], only: Sequence[str]) -> list[str]:
    """The cells whose locks the selection (``CELL…``, ``--only``; none: every cell) installs: a
    cell with its own lock, the cell an alias reuses; skipped cells and cells without a lock are
    left out. Raises :class:`~lockgen.errors.UsageError` for an unknown name and
    :class:`LockFormatError` naming every chosen lock that cannot be read."""
    picked = select(project.cells, names, only)
    wanted = []
    for cell in picked:
        name = cell.settings.alias or cell.name
        if not cell.settings.skip and name in lockset.cells and name not in wanted:
            wanted.append(name)
    problems = [p.message for p in lockset.problems if p.cell in {c.name for c in picked} or p.cell in wanted]
    if problems:
        raise LockFormatError(*problems)
    return sorted(wanted)


def online_command(
    project: Project,
    names: Sequence[str] = (),
    only: Sequence[str] = (),
    *,
    mirrors: Sequence[str] = (),
    jobs: int | None = None,
    timeout: float | None = None,
    attestations: bool = False,
) -> OnlineReport:
    """``lockgen check --online [CELL…]`` (:mod:`lockgen.rot.online`)."""
    from lockgen.rot.online import check_online

    locks = project.config.locks
    lockset = LockSet.from_folder(project.root / locks, locks, label=locks)
    cells = chosen_cells(project, lockset, names, only)
    return check_online(
        lockset, cells, project.mirrors(mirrors), jobs=jobs or JOBS, timeout=timeout or TIMEOUT,
        attestations=attestations,
    )  # fmt: skip


def resolve_command(
    project: Project,
    names: Sequence[str] = (),
    only: Sequence[str] = (),
    *,
    mirrors: Sequence[str] = (),
    jobs: int | None = None,
    wait: bool = False,
    reporter: Reporter = SILENT,
) -> ReproReport:
    """``lockgen check --resolve [CELL…]`` (:mod:`lockgen.rot.reproduce`)."""
    from lockgen.rot.reproduce import reproduce

    return reproduce(project, names, only, mirrors=mirrors, jobs=jobs, wait=wait, reporter=reporter)
