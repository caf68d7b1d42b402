"""``lockgen audit [CELL…]``: every locked package against OSV advisories
(:func:`lockgen.dossier.run.audit_command`); ``--fix``: move the affected ones to fixed versions
and re-lock (:func:`lockgen.dossier.fix.fix_command`)."""

from __future__ import annotations

import argparse

from lockgen.commands import common

__all__ = ["run"]


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
