"""The cores of ``lockgen check --online``, ``lockgen check --resolve`` and ``lockgen bundle``:
plain values in, a report out; the CLI only prints it. Each reads the committed locks; none
writes ``locks/``."""

from __future__ import annotations

from collections.abc import Sequence

from lockgen.locks.lockset import LockSet
from lockgen.project import Project
from lockgen.rot.cells import chosen_cells
from lockgen.rot.online import JOBS, TIMEOUT, OnlineReport
from lockgen.rot.reproduce import ReproReport
from lockgen.runs import SILENT, Reporter

__all__ = ["online_command", "resolve_command"]


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
