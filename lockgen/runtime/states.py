"""The states a cell can be in, shared by the pipeline, ``check``, the reporters and the manifest."""

from __future__ import annotations

import enum

__all__ = ["CellState"]


class CellState(str, enum.Enum):
    """What happened to a cell in a run, or what ``check`` found.

    The value is what the terminal, ``--json`` output and the manifest say. :attr:`bad` states make
    ``lockgen all``/``lock``/``check`` exit 1.
    """

    WAITING = "waiting"
    RESOLVING = "resolving"
    LOCKED = "locked"  # resolved, and a lock's bytes changed
    UNCHANGED = "unchanged"  # resolved, same bytes as before
    UP_TO_DATE = "up to date"  # not resolved: its inputs did not change
    SKIPPED = "skipped"  # listed with a reason, not resolved
    ALIAS = "alias"  # reuses another cell's lock
    FAILED = "failed"  # could not be locked; its old files are kept
    INTERRUPTED = "interrupted"  # Ctrl-C/SIGTERM stopped it, or it never started
    STALE = "stale"  # check: its inputs changed since it was locked
    MISSING = "missing"  # check: no lock
    EDITED = "edited"  # check: a lock file is not what lockgen wrote
    ORPHAN = "orphan"  # check: a lock of a cell no longer in the matrix
    REMOVED = "removed"  # all: such a lock was deleted

    def __str__(self) -> str:
        return self.value

    @property
    def bad(self) -> bool:
        """Whether this state makes the run exit 1."""
        return self in _BAD


_BAD = frozenset(
    {CellState.FAILED, CellState.INTERRUPTED, CellState.STALE, CellState.MISSING, CellState.EDITED, CellState.ORPHAN}
)
