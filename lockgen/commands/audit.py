"""``lockgen audit [CELL…]``: every locked package against OSV advisories
(:func:`lockgen.dossier.run.audit_command`); ``--fix``: move the affected ones to fixed versions
and re-lock (:func:`lockgen.dossier.fix.fix_command`)."""

from __future__ import annotations

import argparse

from lockgen.commands import common, options

__all__ = ["FAIL_ON", "FORMATS", "HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "check every locked package of every cell against OSV advisories (--fix: move to fixed versions)"
USAGE = "[CELL ...]"
OPTIONS = (
    *options.EVERY,
    options.MIRROR,
    options.WAIT.meaning("with --fix: wait for another lockgen run on this project instead of refusing"),
)
#: ``--format`` values (:data:`lockgen.dossier.auditformat.FORMATS`), named here so that building
#: the parser imports none of the audit code.
FORMATS = ("text", "markdown", "json", "sarif")
#: ``--fail-on`` thresholds (:data:`lockgen.config.model.SEVERITIES`).
FAIL_ON = ("any", "low", "medium", "high", "critical", "none")


def arguments(parser: argparse.ArgumentParser) -> None:
    options.locked_cells(parser)
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), markdown, json or sarif")
    parser.add_argument(
        "--osv", metavar="SOURCE",
        help="OSV API URL, or an export folder or zip (default: [audit] osv, else https://api.osv.dev)",
    )  # fmt: skip
    parser.add_argument(
        "--fail-on", choices=FAIL_ON, default=None,
        help="lowest severity that makes the exit code 1 (default: [audit] fail-on, else any)",
    )  # fmt: skip
    parser.add_argument(
        "--fix", action="store_true",
        help="move each affected package to its smallest fixed version the config allows, and re-lock",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    if args.fix:
        from lockgen.dossier.fix import fix_command

        return fix_command(
            common.project(args), args.cells, args.osv, args.fail_on, common.run_options(args), common.reporter(args)
        )
    from lockgen.dossier.run import audit_command

    text, code = audit_command(
        common.project(args),
        args.cells,
        osv=args.osv,
        fail_on=args.fail_on,
        fmt=args.format,
        mirrors=tuple(args.mirror),
    )
    common.print_text(text)
    return code
