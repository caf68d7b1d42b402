"""``lockgen diff [OLD [NEW]]``: what changed between two sets of locks, git revisions or folders
(the diff engine's entry, :func:`lockgen.locks.diffcmd.diff_command`); as markdown with an OSV
source, the advisories the change fixes or introduces too (:func:`lockgen.dossier.diffnote.advisories_note`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lockgen.commands import common
from lockgen.locks.diffcmd import diff_command, folders_only
from lockgen.project import Project
from lockgen.run.check import stale_note
from lockgen.runtime.errors import LockgenError

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
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
    try:
        return common.project(args)
    except LockgenError:
        if args.config is None and folders_only(Path.cwd(), args.old, args.new):
            return None
        raise


def _stale(project: Project) -> str | None:
    """:func:`stale_note` of the project; a config or template it cannot plan now is said, not fatal
    (the diff of lock files still holds)."""
    try:
        return stale_note(project)
    except LockgenError as exc:
        print(f"warning: cannot tell whether the locks are stale: {exc}", file=sys.stderr)
        return None
