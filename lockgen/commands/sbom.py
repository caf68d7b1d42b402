"""``lockgen sbom [CELL…]``: CycloneDX 1.6 SBOMs of the locks, per cell and merged (:func:`lockgen.dossier.run.sbom_command`)."""

from __future__ import annotations

import argparse
import sys

from lockgen.commands import common
from lockgen.dossier.run import sbom_command

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    text, code = sbom_command(
        common.project(args), args.cells, output=args.output, mirrors=tuple(args.mirror), offline=args.offline,
        serial=args.serial_number, timestamp=args.timestamp,
    )  # fmt: skip
    if args.output is None:
        common.print_text(text)
    else:  # the SBOMs went to files: what was written goes to stderr
        print(text, end="", file=sys.stderr)
    return code
