"""``lockgen bump NAME==VERSION…``: move every pin that binds (config, templates, project dependencies),
re-lock, write all of it or nothing (:func:`lockgen.bump.run.bump`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lockgen.bump.run import BumpOptions, bump
from lockgen.commands import common

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    options = BumpOptions(run=common.run_options(args), no_lock=args.no_lock, dry_run=args.dry_run)
    say = None if args.json else (lambda line: print(line, file=sys.stderr))
    outcome = bump(Path.cwd(), args.config, args.pins, options, common.reporter(args), say=say)
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    else:
        print(outcome.final(), file=sys.stderr)
    return outcome.exit_code
