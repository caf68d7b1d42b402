"""``lockgen check [CELL…]``: exit 1 if any lock or the manifest is out of date (:func:`lockgen.run.check.check`)."""

from __future__ import annotations

import argparse
import json

from lockgen.commands import common
from lockgen.run.check import check

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    result = check(common.project(args), args.cells, args.only)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return result.exit_code
    for cell in result.cells:
        if cell.state.bad or (cell.reasons and cell.state.value == "up to date"):
            print(f"{cell.name}: {cell.state}" + "".join(f"\n  {r}" for r in cell.reasons))
    if result.manifest:
        print(f"manifest: {result.manifest}")
    print("some locks are out of date; run `lockgen all`" if result.exit_code else "all locks are up to date")
    return result.exit_code
