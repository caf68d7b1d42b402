"""``lockgen diff [OLD [NEW]]``: what changed between two sets of locks, git revisions or folders
(the diff engine's entry, :func:`lockgen.locks.diffcmd.diff_command`)."""

from __future__ import annotations

import argparse
import sys

from lockgen.commands import common
from lockgen.locks.diffcmd import diff_command

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    project = common.project(args)
    text, code = diff_command(project.root, project.config.locks, args.old, args.new, args.format, args.exit_code)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return code
