"""``lockgen matrix``: list the cells of the matrix (:func:`lockgen.run.matrix.rows`), a table or ``--json``."""

from __future__ import annotations

import argparse
import json

from lockgen.commands import common, options

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "list the cells of the matrix"
USAGE = ""
OPTIONS = (
    *options.EVERY, options.ONLY, options.SHARD.meaning("list only shard I of N (1-based) of the selected cells"),
    options.JSON.meaning("print the cells as JSON objects"),
)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """None but its options."""


def run(args: argparse.Namespace) -> int:
    from lockgen.run.matrix import rows

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
