"""``lockgen diff [OLD [NEW]]``: what changed between two sets of locks, git revisions or folders
(the diff engine's entry, :func:`lockgen.locks.diffcmd.diff_command`); as markdown with an OSV
source, the advisories the change fixes or introduces too (:func:`lockgen.dossier.diffnote.advisories_note`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from lockgen.commands import common
from lockgen.locks.diffcmd import diff_command, folders_only
from lockgen.project import Project
from lockgen.runtime.errors import LockgenError

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    project = _project(args)
    root, locks = (project.root, project.config.locks) if project is not None else (Path.cwd(), "locks")
    text, code = diff_command(root, locks, args.old, args.new, args.format, args.exit_code)
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
