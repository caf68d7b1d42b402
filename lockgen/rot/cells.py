"""Which cells' locks a selection of the rot commands reads (``CELL…``, ``--only``)."""

from __future__ import annotations

from collections.abc import Sequence

from lockgen.errors import LockFormatError
from lockgen.locks.lockset import LockSet
from lockgen.plan.matrix import select
from lockgen.project import Project

__all__ = ["chosen_cells"]


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
