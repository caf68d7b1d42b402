"""``lockgen licenses [CELL…]``: each locked package's license per cell, and the ``[licenses]``
policy (:func:`lockgen.dossier.run.licenses_command`)."""

from __future__ import annotations

import argparse

from lockgen.commands import common, options

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "list each locked package's license per cell and check the [licenses] policy"
USAGE = "[CELL ...]"
OPTIONS = (*options.EVERY, options.MIRROR)


def arguments(parser: argparse.ArgumentParser) -> None:
    options.locked_cells(parser, metadata=True)
    parser.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")


def run(args: argparse.Namespace) -> int:
    from lockgen.dossier.run import licenses_command

    text, code = licenses_command(
        common.project(args), args.cells, fmt=args.format, mirrors=tuple(args.mirror), offline=args.offline
    )
    common.print_text(text)
    return code
