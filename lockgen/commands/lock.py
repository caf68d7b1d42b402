"""``lockgen lock CELL…``: lock the named cells (:func:`lockgen.run.lock.lock_project`)."""

from __future__ import annotations

import argparse

from lockgen.commands import options
from lockgen.commands.common import lock_cells

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "lock the named cells"
USAGE = "CELL [CELL ...]"
OPTIONS = (*options.EVERY, options.ONLY, *options.RESOLVING, options.LOCK_DRY_RUN, options.JSON)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cells", nargs="+", metavar="CELL", help="a cell of the matrix (an alias: the cell it reuses)")


def run(args: argparse.Namespace) -> int:
    return lock_cells(args, args.cells)
