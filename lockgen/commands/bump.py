"""``lockgen bump NAME==VERSION…``: move every pin that binds (config, templates, project dependencies),
re-lock, write all of it or nothing (:func:`lockgen.bump.run.bump`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lockgen.commands import common, options

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "move pins (config, templates, project dependencies), re-lock, write all of it or nothing"
USAGE = "NAME==VERSION [NAME==VERSION ...]"
OPTIONS = (
    *options.EVERY, *options.RESOLVING, options.JSON.meaning("print what moved and the re-lock as JSON"),
    options.DRY_RUN.meaning("change nothing: write no file, report what would change"),
)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pins", nargs="+", metavar="NAME==VERSION", help="a package and the version to move it to")
    parser.add_argument(
        "--no-lock", action="store_true", help="only edit the pins (config and templates); lock nothing"
    )


def run(args: argparse.Namespace) -> int:
    from lockgen.bump.run import BumpOptions, bump

    options = BumpOptions(run=common.run_options(args), no_lock=args.no_lock, dry_run=args.dry_run)
    say = None if args.json else (lambda line: print(line, file=sys.stderr))
    outcome = bump(Path.cwd(), args.config, args.pins, options, common.reporter(args), say=say)
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    else:
        print(outcome.final(), file=sys.stderr)
    return outcome.exit_code
