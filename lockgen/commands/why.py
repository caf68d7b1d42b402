"""``lockgen why NAME [CELL…]``: which requirements bring a package into each cell's lock (:func:`lockgen.dossier.why.why`)."""

from __future__ import annotations

import argparse
import json
import sys

from lockgen.commands import common
from lockgen.dossier.why import render_text, why

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    cells = [*args.cells, *([args.select_cell] if args.select_cell else [])]  # `why NAME CELL` or `--cell CELL`
    answer = why(common.project(args), args.package, cells)
    if args.json:
        print(json.dumps(answer.to_dict(), indent=2))
    else:
        sys.stdout.write(render_text(answer))
    return 0
