"""``lockgen why NAME [CELL…]``: which requirements bring a package into each cell's lock (:func:`lockgen.dossier.why.why`)."""

from __future__ import annotations

import argparse
import json
import sys

from lockgen.commands import common, options

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "show which requirements bring a package into each cell's lock"
USAGE = "NAME [CELL ...]"
OPTIONS = (
    *options.EVERY, options.JSON.meaning("print the requirement chains as JSON"),
    options.CELL.meaning("a cell to explain (as a CELL argument)"),
)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("package", metavar="NAME", help="the package to explain")
    parser.add_argument(
        "cells", nargs="*", default=[], metavar="CELL", help="the cells to look at (default: every locked cell)"
    )


def run(args: argparse.Namespace) -> int:
    from lockgen.dossier.why import render_text, why

    cells = [*args.cells, *([args.select_cell] if args.select_cell else [])]  # `why NAME CELL` or `--cell CELL`
    answer = why(common.project(args), args.package, cells)
    if args.json:
        print(json.dumps(answer.to_dict(), indent=2))
    else:
        sys.stdout.write(render_text(answer))
    return 0
