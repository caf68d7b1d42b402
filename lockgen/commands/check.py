"""``lockgen check [CELL…]``: exit 1 if any lock or the manifest is out of date (:func:`lockgen.run.check.check`);
``--online``: the locked files on their hosts (:func:`lockgen.rot.command.online_command`), ``--resolve``:
the same inputs resolved again into a scratch folder (:func:`lockgen.rot.command.resolve_command`)."""

from __future__ import annotations

import argparse
import json
import sys

from lockgen.commands import common, options

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "exit 1 if any lock or the manifest is out of date"
USAGE = "[CELL ...]"
OPTIONS = (
    *options.EVERY, options.ONLY, options.MIRROR, options.JSON,
    options.JOBS.meaning("with --online: requests at once (default 16); with --resolve: cells resolved at once"),
    options.ONLINE.meaning("check every locked file on its host (deleted, moved, size or hash changed)"),
    options.WAIT.meaning("with --resolve: wait for another lockgen run on this project instead of refusing"),
)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cells", nargs="*", default=[], metavar="CELL", help="cells to check (default: all)")
    parser.add_argument(
        "--resolve", action="store_true",
        help="resolve every cell again into .lockgen/reproduce/ (the recorded uv and cutoff) and explain any drift",
    )  # fmt: skip
    parser.add_argument(
        "--attestations", action="store_true",
        help="with --online: verify each file's PEP 740 attestations (needs lockgen[attestations])",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", default=None,
        help="with --online: the time budget of the whole check (default 600)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    if args.online or args.resolve:
        return _over_time(args)
    if args.attestations:
        print("error: --attestations goes with --online", file=sys.stderr)
        return 2
    from lockgen.run.check import check
    from lockgen.runtime.states import CellState

    result = check(common.project(args), args.cells, args.only)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return result.exit_code
    for cell in result.cells:
        if cell.state.bad or (cell.reasons and cell.state is CellState.UP_TO_DATE):
            print(f"{cell.name}: {cell.state}" + "".join(f"\n  {r}" for r in cell.reasons))
        elif cell.state in (CellState.SKIPPED, CellState.ALIAS):  # not locked, by the config's word: one line each
            print(
                f"{cell.name}: {cell.state}"
                + (f" ({' '.join(' '.join(cell.reasons).split())})" if cell.reasons else "")
            )
    if result.manifest:
        print(f"manifest: {result.manifest}")
    print("some locks are out of date; run `lockgen all`" if result.exit_code else "all locks are up to date")
    return result.exit_code


def _over_time(args: argparse.Namespace) -> int:
    """``check --online`` and/or ``check --resolve``: docs/locks-over-time.md."""
    from lockgen.rot.command import online_command, resolve_command
    from lockgen.rot.online import OnlineReport
    from lockgen.rot.reproduce import ReproReport

    if args.attestations and not args.online:
        print("error: --attestations goes with --online", file=sys.stderr)
        return 2
    project = common.project(args)
    reports: dict[str, OnlineReport | ReproReport] = {}
    if args.online:
        reports["online"] = online_command(
            project, args.cells, args.only, mirrors=tuple(args.mirror), jobs=args.jobs, timeout=args.timeout,
            attestations=args.attestations,
        )  # fmt: skip
    if args.resolve:
        print("resolving the cells again into .lockgen/reproduce/ (locks/ is not touched) …", file=sys.stderr)
        reports["resolve"] = resolve_command(
            project, args.cells, args.only, mirrors=tuple(args.mirror), jobs=args.jobs, wait=args.wait
        )
    if args.json:
        data = {key: report.to_dict() for key, report in reports.items()}
        print(json.dumps(data[next(iter(data))] if len(data) == 1 else data, indent=2))
    else:
        for report in reports.values():
            common.print_text("\n".join(report.lines()))
    return max(report.exit_code for report in reports.values())
