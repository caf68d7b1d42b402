"""``lockgen sbom [CELL…]``: CycloneDX 1.6 SBOMs of the locks, per cell and merged (:func:`lockgen.dossier.run.sbom_command`)."""

from __future__ import annotations

import argparse
import sys

from lockgen.commands import common, options

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "write CycloneDX 1.6 SBOMs of the locks, per cell and merged"
USAGE = "[CELL ...]"
OPTIONS = (*options.EVERY, options.MIRROR)


def arguments(parser: argparse.ArgumentParser) -> None:
    options.locked_cells(parser, metadata=True)
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write <cell>.cdx.json and matrix.cdx.json here (default: print the merged SBOM)",
    )
    parser.add_argument(
        "--serial-number", metavar="UUID",
        help="the SBOMs' serial number (default: derived from the locks, so the same locks give the same bytes)",
    )  # fmt: skip
    parser.add_argument(
        "--timestamp", action="store_true",
        help="record the time of writing in the metadata (default: none, for byte-stable SBOMs)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from lockgen.dossier.run import sbom_command

    text, code = sbom_command(
        common.project(args), args.cells, output=args.output, mirrors=tuple(args.mirror), offline=args.offline,
        serial=args.serial_number, timestamp=args.timestamp,
    )  # fmt: skip
    if args.output is None:
        common.print_text(text)
    else:  # the SBOMs went to files: what was written goes to stderr
        print(text, end="", file=sys.stderr)
    return code
