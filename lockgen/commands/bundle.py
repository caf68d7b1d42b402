"""``lockgen bundle CELL… -o DIR``: the locked files of cells in a folder that installs with no network
(:func:`lockgen.rot.bundle.bundle_command`)."""

from __future__ import annotations

import argparse
import sys

from lockgen.commands import common, options

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "write the locked files of cells into a folder that installs with no network"
USAGE = "CELL [CELL ...] -o DIR"
OPTIONS = (*options.EVERY, options.MIRROR, options.JOBS.meaning("downloads at once (default 8)"))


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cells", nargs="+", metavar="CELL", help="a cell whose locked files go into the bundle")
    parser.add_argument(
        "-o", "--output", metavar="DIR", required=True,
        help="the bundle folder (created; a bundle there already is added to, its files reused)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from lockgen.rot.bundle import bundle_command

    result = bundle_command(common.project(args), args.cells, args.output, mirrors=tuple(args.mirror), jobs=args.jobs)
    for line in result.lines():
        print(line, file=sys.stderr)
    return result.exit_code
