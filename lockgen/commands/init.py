"""``lockgen init [FILE…]``: write a config and templates from the project's requirement files or
pyproject.toml (:func:`lockgen.scaffold.scaffold`, then :func:`lockgen.scaffold.write`); ``--dry-run`` prints them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lockgen.commands import options

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "write a config and templates from the project's requirement files or pyproject.toml"
USAGE = "[FILE ...]"
OPTIONS = (
    *options.EVERY, options.MIRROR, options.DRY_RUN.meaning("change nothing; print the files that would be written"),
    options.PYTHON.meaning("the matrix's Pythons, comma-separated (X.Y,X.Y)"),
)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="*", default=[], metavar="FILE",
        help="requirement files (default: requirements*.txt, requirements/); FILE:os=linux,arch=aarch64 says "
        "its platform (keys os, arch, backend)",
    )  # fmt: skip
    parser.add_argument(
        "--commands", action="append", default=[], metavar="SCRIPT",
        help="an installer script (or a file of pip install lines) whose torch install commands to read; "
        "nothing in it runs (repeatable; SCRIPT:os=macos says its platform)",
    )  # fmt: skip
    parser.add_argument(
        "--index", action="append", default=[], metavar="URL",
        help="a backend index (…/whl/cu128) for files that name none (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--exclude-newer",
        metavar="DATE",
        help='resolve as of this date or time, or a cooldown such as "7 days" (default: today, UTC)',
    )
    parser.add_argument(
        "--offline", action="store_true",
        help="read nothing from the default index: which build PyPI's linux torch is comes from init's table",
    )  # fmt: skip
    parser.add_argument(
        "--with-dev", action="store_true",
        help="also read the development and test requirement files (requirements-dev.txt, …), as a dev group "
        "every cell installs",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from lockgen.scaffold import Options, default_index_builds, scaffold, write

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
