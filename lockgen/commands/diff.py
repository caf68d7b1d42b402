"""``lockgen diff [OLD [NEW]]``: what changed between two sets of locks, git revisions or folders
(the diff engine's entry, :func:`lockgen.locks.diffcmd.diff_command`); as markdown with an OSV
source, the advisories the change fixes or introduces too (:func:`lockgen.dossier.diffnote.advisories_note`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lockgen.commands import common, options

if TYPE_CHECKING:
    from lockgen.project import Project

__all__ = ["FORMATS", "HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "show what changed between two sets of locks (git revisions or folders)"
USAGE = "[OLD [NEW]]"
OPTIONS = (*options.EVERY, options.MIRROR)
#: ``--format`` values: the renderers of :data:`lockgen.locks.diffcmd.FORMATS`, named here so that
#: building the parser does not import the diff code (~90 ms).
FORMATS = ("text", "markdown", "json")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", nargs="?", metavar="OLD", help="git revision or folder (default: HEAD)")
    parser.add_argument("new", nargs="?", metavar="NEW", help="git revision or folder (default: the work tree)")
    parser.add_argument(
        "--format", choices=FORMATS, default="text", help="text (default), markdown (a PR comment) or json"
    )
    parser.add_argument("--exit-code", action="store_true", help="exit 1 when there are changes")
    parser.add_argument(
        "--osv", metavar="SOURCE",
        help="with markdown: also list the advisories the change fixes or introduces (an OSV API URL or export)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from lockgen.locks.diffcmd import diff_command

    project = _project(args)
    root, locks = (project.root, project.config.locks) if project is not None else (Path.cwd(), "locks")
    stale = _stale(project) if project is not None and args.new is None else None
    text, code = diff_command(root, locks, args.old, args.new, args.format, args.exit_code, stale)
    if stale and args.format == "json":
        print(f"warning: {stale}", file=sys.stderr)
    if project is not None and args.format == "markdown" and (args.osv or project.config.audit.osv):
        from lockgen.dossier.diffnote import advisories_note

        text = text.rstrip("\n") + "\n" + advisories_note(project, args.old, args.new, args.osv, tuple(args.mirror))
    common.print_text(text)
    return code


def _project(args: argparse.Namespace) -> Project | None:
    """The project ``lockgen diff`` compares in; None for two folders where no config is found
    (comparing two copies of locks needs none)."""
    from lockgen.locks.diffcmd import folders_only
    from lockgen.runtime.errors import LockgenError

    try:
        return common.project(args)
    except LockgenError:
        if args.config is None and folders_only(Path.cwd(), args.old, args.new):
            return None
        raise


def _stale(project: Project) -> str | None:
    """:func:`stale_note` of the project; a config or template it cannot plan now is said, not fatal
    (the diff of lock files still holds)."""
    from lockgen.run.check import stale_note
    from lockgen.runtime.errors import LockgenError

    try:
        return stale_note(project)
    except LockgenError as exc:
        print(f"warning: cannot tell whether the locks are stale: {exc}", file=sys.stderr)
        return None
