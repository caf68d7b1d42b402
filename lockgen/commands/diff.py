"""``lockgen diff [OLD [NEW]]``: what changed between two sets of locks, git revisions or folders
(the diff engine's entry, :func:`lockgen.locks.diffcmd.diff_command`); as markdown with an OSV
source, the advisories the change fixes or introduces too (:func:`lockgen.dossier.diffnote.advisories_note`)."""

from __future__ import annotations

import argparse

from lockgen.commands import common
from lockgen.locks.diffcmd import diff_command

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    project = common.project(args)
    text, code = diff_command(project.root, project.config.locks, args.old, args.new, args.format, args.exit_code)
    if args.format == "markdown" and (args.osv or project.config.audit.osv):
        from lockgen.dossier.diffnote import advisories_note

        text = text.rstrip("\n") + "\n" + advisories_note(project, args.old, args.new, args.osv, tuple(args.mirror))
    common.print_text(text)
    return code
