"""``lockgen merge DIR…``: merge the locks folders of ``lockgen all --shard I/N`` runs into the
project's locks and one manifest (the shard engine, :func:`lockgen.locks.shard.merge`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lockgen.commands import common, options

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "merge the locks folders of `lockgen all --shard I/N` runs into locks/ and one manifest"
USAGE = "DIR [DIR ...]"
OPTIONS = (*options.EVERY, options.WAIT)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="a shard's locks folder (repeat for every shard)")


def run(args: argparse.Namespace) -> int:
    from lockgen.locks.shard import merge
    from lockgen.runtime.words import counted

    result = merge(common.project(args), [Path(d) for d in args.dirs], wait=args.wait)
    for line in result.report:
        print(line, file=sys.stderr)
    for cell, why in sorted(result.failed.items()):
        print(f"{cell}: failed in its shard: {why}", file=sys.stderr)
    for path in result.removed:
        print(f"{path}: removed (its cell is not resolved by the matrix any more)", file=sys.stderr)
    changed = sum(state == "changed" for state in result.cells.values())
    print(
        f"merged {counted(len(result.cells), 'cell')} from {counted(len(args.dirs), 'shard folder')}: {changed} changed",
        file=sys.stderr,
    )
    return result.exit_code
