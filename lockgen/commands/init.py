"""``lockgen init [FILE…]``: write a config and templates from the project's requirement files or
pyproject.toml (:func:`lockgen.scaffold.scaffold`, then :func:`lockgen.scaffold.write`); ``--dry-run`` prints them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lockgen.scaffold import Options, default_index_builds, scaffold, write

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    root = Path(args.config) if args.config else Path.cwd()
    pythons = tuple(v.strip() for v in (args.python or "").split(",") if v.strip())
    options = Options(
        files=tuple(args.files),
        commands=tuple(args.commands),
        indexes=tuple(args.index),
        pythons=pythons,
        exclude_newer=args.exclude_newer,
        with_dev=args.with_dev,
    )
    draft = scaffold(root, options, torch_builds=None if args.offline else default_index_builds(args.mirror))
    for line in draft.explanation:
        print(f"  {line}", file=sys.stderr)
    if draft.not_carried:
        count = len(draft.not_carried)
        print(f"not carried ({count} line{'s' if count != 1 else ''}):", file=sys.stderr)
        for line in draft.not_carried:
            print(f"  {line}", file=sys.stderr)
    if args.dry_run:
        for rel, text in draft.files.items():
            print(f"--- {rel}\n{text}", end="" if text.endswith("\n") else "\n")
        return 0
    for rel in write(root, draft):
        print(f"wrote {rel}", file=sys.stderr)
    print("next: lockgen matrix (the cells), lockgen all (lock them), lockgen check (in CI)", file=sys.stderr)
    return 0
