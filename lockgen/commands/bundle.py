"""``lockgen bundle CELL… -o DIR``: the locked files of cells in a folder that installs with no network
(:func:`lockgen.rot.bundle.bundle_command`)."""

from __future__ import annotations

import argparse
import sys

from lockgen.commands import common
from lockgen.rot.bundle import bundle_command

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    result = bundle_command(common.project(args), args.cells, args.output, mirrors=tuple(args.mirror), jobs=args.jobs)
    for line in result.lines():
        print(line, file=sys.stderr)
    return result.exit_code
