"""``lockgen lock CELL…``: lock the named cells (:func:`lockgen.run.lock.lock_project`)."""

from __future__ import annotations

import argparse

from lockgen.commands.common import lock_cells

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    return lock_cells(args, args.cells)
