"""The command line. Each handler turns parsed arguments into one call of the core
(:mod:`lockgen.pipeline`) and an exit code: 0 ok, 1 a stale/changed/failed cell, 2 usage or
config error. Errors print as ``error: …``; tracebacks only with ``-v``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback
from pathlib import Path

from lockgen import __version__, pipeline
from lockgen.resolve import uv
from lockgen.errors import LockgenError


def _project(args) -> pipeline.Project:
    return pipeline.Project.load(Path.cwd(), args.config)


def _reporter(args):
    from lockgen.progress import LiveReporter, PlainReporter

    return LiveReporter() if sys.stderr.isatty() and not args.verbose else PlainReporter()


def _lock(args, names) -> int:
    run_options = pipeline.RunOptions(
        force=args.force, uv=uv.Options(upgrade=args.upgrade, upgrade_packages=tuple(args.upgrade_package)),
        jobs=args.jobs, online=args.online, mirrors=tuple(args.mirror),
    )  # fmt: skip
    run = pipeline.lock_project(Path.cwd(), args.config, names, args.only, run_options, _reporter(args))
    return run.exit_code


def cmd_all(args) -> int:
    return _lock(args, ())


def cmd_lock(args) -> int:
    return _lock(args, args.cells)


def cmd_matrix(args) -> int:
    rows = pipeline.describe(_project(args), args.only)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        where = f"skipped: {row['skip']}" if row["skip"] else row["lock"]
        if row["alias"]:
            where = f"alias of {row['alias']}" + (f" (interpreter {row['interpreter']})" if row["interpreter"] else "")
        print(f"{row['name']:<34} {row['target']:<24} {where}")
    return 0


def cmd_check(args) -> int:
    run = pipeline.check_project(Path.cwd(), args.config, args.cells, args.only)
    for r in run.results:
        if r.status != pipeline.UP_TO_DATE:
            print(f"{r.name}: {r.status}" + (f" ({r.message})" if r.message else ""))
    if run.manifest_stale:
        print("manifest: does not match the locks; run `lockgen all`")
    bad = run.exit_code != 0
    print("some locks are out of date; run `lockgen all`" if bad else "all locks are up to date")
    return run.exit_code


class _Version(argparse.Action):
    """``--version``, looked up only when asked for (reading uv's metadata costs a no-op run)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"lockgen {__version__} (uv {uv.uv_version()})")
        parser.exit()


def cmd_detect(args) -> int:
    import os

    from lockgen.detect import pretend, probe

    query = Path(args.gpu_query).read_text() if args.gpu_query else None
    machine = pretend(
        probe(os.environ), os=args.os, arch=args.arch, interpreter=args.interpreter, gpu=args.gpu, cuda=args.cuda,
        gpu_query=query,
    )  # fmt: skip
    python = args.python or f"{sys.version_info.major}.{sys.version_info.minor}"
    found = pipeline.detect(_project(args), machine, python, args.cpu, python_given=args.python is not None)
    if args.json:
        print(json.dumps(found, indent=2, sort_keys=True))
    else:
        print(f"{found['cell']}: {found['lock']}\n  {found['reason']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lockgen", description="Per-target lock files from a build matrix.")
    parser.add_argument("--version", action=_Version, nargs=0, help="show lockgen's and uv's versions")
    config_help = "config file or folder (default: nearest upward)"
    parser.add_argument("-C", "--config", metavar="PATH", help=config_help)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs and tracebacks")
    base = argparse.ArgumentParser(add_help=False)  # also accepted after the command
    base.add_argument("-C", "--config", metavar="PATH", default=argparse.SUPPRESS, help=config_help)
    base.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logs and tracebacks")
    common = argparse.ArgumentParser(add_help=False, parents=[base])
    common.add_argument(
        "--only", action="append", default=[], metavar="KEY=VALUE",
        help="select cells by axis (os, arch, backend, python) or name; repeat to narrow",
    )  # fmt: skip
    resolving = argparse.ArgumentParser(add_help=False)
    resolving.add_argument("-j", "--jobs", type=int, metavar="N", help="cells resolved at once (default: CPU cores, 2 to 8)")
    resolving.add_argument("--force", action="store_true", help="re-resolve even cells whose inputs did not change")
    resolving.add_argument(
        "--mirror", action="append", default=[], metavar="CANONICAL=MIRROR",
        help="fetch URLs under CANONICAL from MIRROR; locks keep CANONICAL (repeatable; also LOCKGEN_MIRRORS)",
    )  # fmt: skip
    resolving.add_argument(
        "--online", action="store_true", help="resolve every cell online (no reuse of pages fetched in this run)"
    )
    resolving.add_argument("--upgrade", action="store_true", help="let uv pick the newest allowed versions")
    resolving.add_argument("--upgrade-package", action="append", default=[], metavar="NAME", help="upgrade one package")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("all", parents=[common, resolving], help="lock every stale cell of the matrix")
    p.set_defaults(func=cmd_all)
    p = sub.add_parser("lock", parents=[common, resolving], help="lock the named cells")
    p.add_argument("cells", nargs="+", metavar="CELL")
    p.set_defaults(func=cmd_lock)
    p = sub.add_parser("matrix", parents=[common], help="list the cells of the matrix")
    p.add_argument("--json", action="store_true", help="print a JSON list of cells")
    p.set_defaults(func=cmd_matrix)
    p = sub.add_parser("detect", parents=[base], help="print the cell (and lock) for this machine")
    p.add_argument("--cpu", action="store_true", help="accept the CPU cell when no GPU is found")
    p.add_argument("--python", metavar="X.Y", help="target Python (default: this interpreter's)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--os", choices=["linux", "windows", "macos"], help="pretend: operating system")
    p.add_argument("--arch", choices=["x86_64", "aarch64"], help="pretend: host arch")
    p.add_argument("--interpreter", choices=["x86_64", "aarch64"], help="pretend: interpreter arch")
    p.add_argument("--gpu", choices=["nvidia", "amd", "apple", "none"], help="pretend: GPU kind")
    p.add_argument("--cuda", metavar="X.Y", help="pretend: the NVIDIA driver's CUDA version")
    p.add_argument("--gpu-query", metavar="FILE", help="pretend: saved nvidia-smi --query-gpu output")
    p.set_defaults(func=cmd_detect)
    p = sub.add_parser("check", parents=[common], help="exit 1 if any lock or the manifest is out of date")
    p.add_argument("cells", nargs="*", metavar="CELL")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        print("error: -j/--jobs must be at least 1", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(relativeCreated)7.0fms %(name)s: %(message)s" if args.verbose else "%(name)s: %(message)s")
    try:
        return args.func(args)
    except LockgenError as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # a file lockgen must write or read is not usable
        if args.verbose:
            traceback.print_exc()
        print(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
