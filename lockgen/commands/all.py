"""``lockgen all``: lock every stale cell of the matrix (:func:`lockgen.run.lock.lock_project`)."""

from __future__ import annotations

import argparse

from lockgen.commands.common import lock_cells

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    return lock_cells(args, ())
