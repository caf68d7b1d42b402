"""``lockgen licenses [CELL…]``: each locked package's license per cell, and the ``[licenses]``
policy (:func:`lockgen.dossier.run.licenses_command`)."""

from __future__ import annotations

import argparse

from lockgen.commands import common
from lockgen.dossier.run import licenses_command

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    text, code = licenses_command(
        common.project(args), args.cells, fmt=args.format, mirrors=tuple(args.mirror), offline=args.offline
    )
    common.print_text(text)
    return code
