"""``lockgen bump NAME==VERSION…``: edit pins in the config and templates (:func:`lockgen.bump.pins.bump`),
then lock the cells whose inputs changed, as ``lockgen all`` does (unless ``--no-lock``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lockgen.bump.pins import bump
from lockgen.commands import common
from lockgen.config import find_config

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    path = find_config(Path.cwd(), args.config)
    result = bump(path, args.pins, templates=common.project(args).config.templates)
    for line in result.lines():
        print(line, file=sys.stderr)
    if args.no_lock or not result.changed:
        return 0
    try:
        code = common.lock_cells(args, ())
    except BaseException:  # a config or template error, Ctrl-C: the edits stay all the same
        print(f"lockgen bump: {result.kept_after_failure(Path.cwd())}", file=sys.stderr)
        raise
    if code:
        print(f"lockgen bump: {result.kept_after_failure(Path.cwd())}", file=sys.stderr)
    return code
