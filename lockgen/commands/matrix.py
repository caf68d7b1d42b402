"""``lockgen matrix``: list the cells of the matrix (:func:`lockgen.run.matrix.rows`), a table or ``--json``."""

from __future__ import annotations

import argparse
import json

from lockgen.commands import common
from lockgen.run.matrix import rows

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    found = rows(common.project(args), args.only, common.shard(args))
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    width = max((len(str(row["name"])) for row in found), default=0) + 1
    for row in found:
        where = f"skipped: {row['skip']}" if row["skip"] else row["lock"]
        if row["alias"]:
            where = f"alias of {row['alias']}" + (f" (interpreter {row['interpreter']})" if row["interpreter"] else "")
        print(f"{row['name']:<{max(width, 34)}} {row['target']:<24} {where}")
    return 0
