"""The command line. Each handler turns parsed arguments into one call of the core and an exit
code: 0 ok, 1 a stale/changed/failed cell, 2 usage or config error, 130 interrupted. Errors print
as ``error: …``; tracebacks only with ``-v``. Every option is accepted before or after the
command."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import traceback
from pathlib import Path

from lockgen import __version__
from lockgen.errors import LockgenError

__all__ = ["build_parser", "main"]


def _project(args: argparse.Namespace):
    from lockgen.project import Project

    return Project.load(Path.cwd(), args.config)


def _reporter(args: argparse.Namespace):
    from lockgen.progress import LiveReporter, PlainReporter

    return LiveReporter() if sys.stderr.isatty() and not args.verbose else PlainReporter()


def _run_options(args: argparse.Namespace):
    from lockgen import pipeline
    from lockgen.resolve import uv

    return pipeline.RunOptions(
        force=args.force, uv=uv.Options(upgrade=args.upgrade, upgrade_packages=tuple(args.upgrade_package)),
        jobs=args.jobs, online=args.online, mirrors=tuple(args.mirror), wait=args.wait,
        retry_unavailable=args.retry_unavailable,
    )  # fmt: skip


def _lock(args: argparse.Namespace, names) -> int:
    from lockgen import pipeline

    run = pipeline.lock_project(Path.cwd(), args.config, names, args.only, _run_options(args), _reporter(args))
    if getattr(args, "json", False):
        print(json.dumps(run.to_dict(), indent=2))
    return run.exit_code


def cmd_all(args: argparse.Namespace) -> int:
    return _lock(args, ())


def cmd_lock(args: argparse.Namespace) -> int:
    return _lock(args, args.cells)


def cmd_matrix(args: argparse.Namespace) -> int:
    from lockgen.plan.matrix import select
    from lockgen.plan.target import target_for

    project = _project(args)
    cells = select(project.cells, only=args.only)
    rows = []
    for cell in cells:
        target = target_for(cell)
        rows.append({
            "name": cell.name, **cell.axes, "lock": cell.lock_path(project.config), "target": target.platform,
            "python_tag": target.python_tag, "skip": cell.settings.skip, "alias": cell.settings.alias,
            "interpreter": cell.settings.interpreter,
        })  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        where = f"skipped: {row['skip']}" if row["skip"] else row["lock"]
        if row["alias"]:
            where = f"alias of {row['alias']}" + (f" (interpreter {row['interpreter']})" if row["interpreter"] else "")
        print(f"{row['name']:<34} {row['target']:<24} {where}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from lockgen.check import check

    result = check(_project(args), args.cells, args.only)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return result.exit_code
    for cell in result.cells:
        if cell.state.bad or cell.reasons and cell.state.value == "up to date":
            print(f"{cell.name}: {cell.state}" + "".join(f"\n  {r}" for r in cell.reasons))
    if result.manifest:
        print(f"manifest: {result.manifest}")
    print("some locks are out of date; run `lockgen all`" if result.exit_code else "all locks are up to date")
    return result.exit_code


def cmd_detect(args: argparse.Namespace) -> int:
    from lockgen.detect import run

    return run(_project(args), args)


def cmd_diff(args: argparse.Namespace) -> int:
    from lockgen.locks.diffcmd import diff_command

    project = _project(args)
    text, code = diff_command(project.root, project.config.locks, args.old, args.new, args.format, args.exit_code)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return code


def cmd_bump(args: argparse.Namespace) -> int:
    from lockgen.bump import bump
    from lockgen.config import find_config

    result = bump(find_config(Path.cwd(), args.config), args.pins)
    for line in result.lines():
        print(line, file=sys.stderr)
    if args.no_lock or not result.written:
        return 0
    return _lock(args, ())


class _Version(argparse.Action):
    """``--version``, looked up only when asked for (reading uv's metadata costs a no-op run)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from lockgen.resolve.uv import uv_version

        print(f"lockgen {__version__} (uv {uv_version()})")
        parser.exit()


def _options(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """The global options (``-C``, ``-v``), on the main parser and again on every command."""
    default = {"default": argparse.SUPPRESS} if suppress else {}
    parser.add_argument("-C", "--config", metavar="PATH", help="config file or folder (default: nearest upward)", **default)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs and tracebacks", **default)


def _resolving(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-j", "--jobs", type=int, metavar="N", help="cells resolved at once (default: CPU cores, 2 to 8)")
    parser.add_argument("--force", action="store_true", help="re-resolve even cells whose inputs did not change")
    parser.add_argument(
        "--mirror", action="append", default=[], metavar="CANONICAL=MIRROR",
        help="fetch URLs under CANONICAL from MIRROR; locks keep CANONICAL (repeatable; also LOCKGEN_MIRRORS)",
    )  # fmt: skip
    parser.add_argument("--online", action="store_true", help="resolve every cell online (no reuse of pages fetched in this run)")
    parser.add_argument("--upgrade", action="store_true", help="let uv pick the newest allowed versions")
    parser.add_argument("--upgrade-package", action="append", default=[], metavar="NAME", help="upgrade one package")
    parser.add_argument("--wait", action="store_true", help="wait for another lockgen run on this project instead of refusing")
    parser.add_argument(
        "--retry-unavailable", action="store_true", help="re-resolve cells whose optional source was unreachable"
    )


def _only(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--only", action="append", default=[], metavar="KEY=VALUE",
        help="select cells by axis (os, arch, backend, python) or name; repeat to narrow",
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lockgen", description="Per-target lock files from a build matrix.")
    parser.add_argument("--version", action=_Version, nargs=0, help="show lockgen's and uv's versions")
    _options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, func, help: str, *, resolving: bool = False, only: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        _options(p, suppress=True)
        if resolving:
            _resolving(p)
        if only:
            _only(p)
        p.set_defaults(func=func)
        return p

    p = command("all", cmd_all, "lock every stale cell of the matrix", resolving=True, only=True)
    p.add_argument("--json", action="store_true", help="print the result and the change report as JSON")
    p = command("lock", cmd_lock, "lock the named cells", resolving=True, only=True)
    p.add_argument("cells", nargs="+", metavar="CELL")
    p.add_argument("--json", action="store_true", help="print the result and the change report as JSON")
    p = command("matrix", cmd_matrix, "list the cells of the matrix", only=True)
    p.add_argument("--json", action="store_true", help="print a JSON list of cells")
    p = command("check", cmd_check, "exit 1 if any lock or the manifest is out of date", only=True)
    p.add_argument("cells", nargs="*", metavar="CELL")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p = command("detect", cmd_detect, "print the cell (and lock) for this machine")
    from lockgen.select import build_parser as select_arguments

    select_arguments(p)
    from lockgen.locks.diffcmd import FORMATS

    p = command("diff", cmd_diff, "show what changed between two sets of locks (git revisions or folders)")
    p.add_argument("old", nargs="?", metavar="OLD", help="git revision or folder (default: HEAD)")
    p.add_argument("new", nargs="?", metavar="NEW", help="git revision or folder (default: the work tree)")
    p.add_argument("--format", choices=FORMATS, default="text")
    p.add_argument("--exit-code", action="store_true", help="exit 1 when there are changes")
    p = command("bump", cmd_bump, "edit pins in the config, then re-lock the cells that changed", resolving=True)
    p.add_argument("pins", nargs="+", metavar="NAME==VERSION")
    p.add_argument("--no-lock", action="store_true", help="only edit the config")
    p.set_defaults(only=[])
    return parser


def _interrupt(signum, frame):  # SIGTERM behaves like Ctrl-C: stop, clean up, exit 130
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name, value in (("config", None), ("verbose", False)):
        if not hasattr(args, name):
            setattr(args, name, value)
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        print("error: -j/--jobs must be at least 1", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(relativeCreated)7.0fms %(name)s: %(message)s" if args.verbose else "%(name)s: %(message)s",
    )
    try:
        previous = signal.signal(signal.SIGTERM, _interrupt)
    except ValueError:  # not the main thread (tests may call main from one)
        previous = None
    try:
        return args.func(args)
    except LockgenError as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # a file lockgen must read is not usable
        if args.verbose:
            traceback.print_exc()
        print(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
