"""The command line. Each handler turns parsed arguments into one call of the core
(:mod:`lockgen.pipeline`) and an exit code: 0 ok, 1 a stale/changed/failed cell, 2 usage or
config error. Errors print as ``error: …``; tracebacks only with ``-v``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class _Option:
    """One option, defined once: its flags, argparse keywords (no ``dest``/``default``), its
    default and the commands that take it. Every option may come before or after the command."""

    flags: tuple[str, ...]
    kwargs: Mapping[str, Any]
    default: Any
    commands: tuple[str, ...]

    @property
    def dest(self) -> str:
        return self.flags[-1].lstrip("-").replace("-", "_")

    @property
    def name(self) -> str:
        return "/".join(self.flags)


_RESOLVING = ("all", "lock")
_SELECTING = ("all", "lock", "matrix", "check")
_EVERY = ("all", "lock", "matrix", "detect", "check")
OPTIONS = (
    _Option(("-C", "--config"), {"metavar": "PATH", "help": "config file or folder (default: nearest upward)"}, None, _EVERY),
    _Option(("-v", "--verbose"), {"action": "store_true", "help": "debug logs and tracebacks"}, False, _EVERY),
    _Option(
        ("--only",), {"action": "append", "metavar": "KEY=VALUE", "help": "select cells by os, arch, backend, python or name; repeat a key to accept several values"},
        [], _SELECTING,
    ),  # fmt: skip
    _Option(("-j", "--jobs"), {"type": int, "metavar": "N", "help": "cells resolved at once (default: CPU cores, 2 to 8)"}, None, _RESOLVING),
    _Option(("--force",), {"action": "store_true", "help": "re-resolve even cells whose inputs did not change"}, False, _RESOLVING),
    _Option(
        ("--mirror",), {"action": "append", "metavar": "CANONICAL=MIRROR", "help": "fetch URLs under CANONICAL from MIRROR; locks keep CANONICAL (repeatable; also LOCKGEN_MIRRORS)"},
        [], _RESOLVING,
    ),  # fmt: skip
    _Option(("--online",), {"action": "store_true", "help": "resolve every cell online (no reuse of pages fetched in this run)"}, False, _RESOLVING),
    _Option(("--upgrade",), {"action": "store_true", "help": "let uv pick the newest allowed versions"}, False, _RESOLVING),
    _Option(("--upgrade-package",), {"action": "append", "metavar": "NAME", "help": "upgrade one package (repeatable)"}, [], _RESOLVING),
    _Option(("--json",), {"action": "store_true", "help": "print JSON"}, False, ("matrix", "detect")),
    _Option(("--cpu",), {"action": "store_true", "help": "accept the CPU cell when no GPU is found"}, False, ("detect",)),
    _Option(("--python",), {"metavar": "X.Y", "help": "target Python (default: this interpreter's)"}, None, ("detect",)),
    _Option(("--os",), {"choices": ["linux", "windows", "macos"], "help": "pretend: operating system"}, None, ("detect",)),
    _Option(("--arch",), {"choices": ["x86_64", "aarch64"], "help": "pretend: host arch"}, None, ("detect",)),
    _Option(("--interpreter",), {"choices": ["x86_64", "aarch64"], "help": "pretend: interpreter arch"}, None, ("detect",)),
    _Option(("--gpu",), {"choices": ["nvidia", "amd", "apple", "none"], "help": "pretend: GPU kind"}, None, ("detect",)),
    _Option(("--cuda",), {"metavar": "X.Y", "help": "pretend: the NVIDIA driver's CUDA version"}, None, ("detect",)),
    _Option(("--gpu-query",), {"metavar": "FILE", "help": "pretend: saved nvidia-smi --query-gpu output"}, None, ("detect",)),
)  # fmt: skip
#: Where a subcommand stores an option given after it (merged with the one before by :func:`parse`).
_AFTER = "after_"


def build_parser() -> argparse.ArgumentParser:
    """The parser: every option of :data:`OPTIONS` on the main parser and on each command (hidden
    from the help of commands that do not take it), all with ``SUPPRESS`` defaults so that
    :func:`parse` sees what was given where."""
    parser = argparse.ArgumentParser(
        prog="lockgen", description="Per-target lock files from a build matrix. Options go before or after the command.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show lockgen's and uv's versions")
    groups: dict[tuple[str, ...], argparse._ArgumentGroup] = {}
    for option in OPTIONS:
        if option.commands not in groups:
            which = "every command" if option.commands == _EVERY else " and ".join(option.commands).replace(" and ", ", ", len(option.commands) - 2)
            groups[option.commands] = parser.add_argument_group(f"options of {which}")
        groups[option.commands].add_argument(*option.flags, dest=option.dest, default=argparse.SUPPRESS, **option.kwargs)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands = {
        "all": (cmd_all, "lock every stale cell of the matrix"),
        "lock": (cmd_lock, "lock the named cells"),
        "matrix": (cmd_matrix, "list the cells of the matrix"),
        "detect": (cmd_detect, "print the cell (and lock) for this machine"),
        "check": (cmd_check, "exit 1 if any lock or the manifest is out of date"),
    }
    for command, (func, text) in commands.items():
        p = sub.add_parser(command, help=text)
        p.set_defaults(func=func)
        if command == "lock":
            p.add_argument("cells", nargs="+", metavar="CELL")
        elif command == "check":
            p.add_argument("cells", nargs="*", metavar="CELL")
        for option in OPTIONS:  # all of them, so that a misplaced one gets parse()'s message
            kwargs = {**option.kwargs} if command in option.commands else {**option.kwargs, "help": argparse.SUPPRESS}
            p.add_argument(*option.flags, dest=_AFTER + option.dest, default=argparse.SUPPRESS, **kwargs)
    return parser


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line: an option may come before or after the command (repeatable ones
    collect both; otherwise the later wins). One given to a command that does not take it, before
    or after it, is a usage error (exit 2) naming the commands that do."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for option in OPTIONS:
        before = vars(args).pop(option.dest, None)
        after = vars(args).pop(_AFTER + option.dest, None)
        if (before is not None or after is not None) and args.command not in option.commands:
            parser.error(f"{option.name} does not apply to {args.command} (only to {', '.join(option.commands)})")
        if option.kwargs.get("action") == "append":
            value = [*(before or []), *(after or [])]
        else:
            value = after if after is not None else before if before is not None else option.default
        setattr(args, option.dest, value)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
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
