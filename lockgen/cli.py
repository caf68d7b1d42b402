"""The command line: argparse, then one call per command. Each command's handler is ``run(args)``
of its module in :mod:`lockgen.commands` (imported only for the command given), which turns the
parsed arguments into one call of the core and an exit code: 0 ok, 1 a stale/changed/failed
cell, 2 usage or config error, 130 interrupted. Errors print as ``error: …``; tracebacks only
with ``-v``. Every option is defined once (:data:`OPTIONS`) and accepted before or after the
command."""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, NoReturn

from lockgen import __version__
from lockgen.runtime.credentials import redact
from lockgen.runtime.errors import LockgenError

__all__ = ["COMMANDS", "OPTIONS", "build_parser", "handler", "main", "parse"]

#: Every command, in ``--help`` order: its help line. Its handler is ``run`` of
#: ``lockgen.commands.<command>``; its positional arguments are in :func:`_positionals`.
COMMANDS = {
    "all": "lock every stale cell of the matrix",
    "lock": "lock the named cells",
    "matrix": "list the cells of the matrix",
    "detect": "print the cell (and lock) for this machine",
    "check": "exit 1 if any lock or the manifest is out of date",
    "diff": "show what changed between two sets of locks (git revisions or folders)",
    "bump": "move pins (config, templates, project dependencies), re-lock, write all of it or nothing",
    "why": "show which requirements bring a package into each cell's lock",
    "install": "install a cell's layers into a venv, as the manifest says",
    "merge": "merge the locks folders of `lockgen all --shard I/N` runs into locks/ and one manifest",
    "audit": "check every locked package of every cell against OSV advisories (--fix: move to fixed versions)",
    "sbom": "write CycloneDX 1.6 SBOMs of the locks, per cell and merged",
    "licenses": "list each locked package's license per cell and check the [licenses] policy",
    "init": "write a config and templates from the project's requirement files or pyproject.toml",
    "bundle": "write the locked files of cells into a folder that installs with no network",
}


def handler(command: str) -> Callable[[argparse.Namespace], int]:
    """``run`` of the command's module, ``lockgen.commands.<command>`` (imported now: building the
    parser imports no command, so ``lockgen --version`` and a no-op run stay fast)."""
    run: Callable[[argparse.Namespace], int] = importlib.import_module(f"lockgen.commands.{command}").run
    return run


def _axis(text: str) -> tuple[str, str]:
    """``--axis NAME=VALUE``, parsed as the selector parses it."""
    from lockgen.cellselect import parse_axis

    return parse_axis(text)


class _Version(argparse.Action):
    """``--version``, looked up only when asked for (reading uv's metadata costs a no-op run)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> NoReturn:
        from lockgen.runtime.uvbin import uv_version

        print(f"lockgen {__version__} (uv {uv_version()})")
        parser.exit()


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


_RESOLVING = ("all", "lock", "bump")
_SELECTING = ("all", "lock", "matrix", "check")
_DOSSIER = ("audit", "sbom", "licenses")
_EVERY = tuple(COMMANDS)
_INSTALL = ("install",)
OPTIONS = (
    _Option(("-C", "--config"), {"metavar": "PATH", "help": "config file or folder (default: nearest upward)"}, None, _EVERY),
    _Option(("-v", "--verbose"), {"action": "store_true", "help": "debug logs and tracebacks"}, False, _EVERY),
    _Option(
        ("--only",), {"action": "append", "metavar": "KEY=VALUE", "help": "select cells by os, arch, backend, python or name; repeat a key to accept several values"},
        [], _SELECTING,
    ),
    _Option(("-j", "--jobs"), {"type": int, "metavar": "N", "help": "cells resolved at once (default: CPU cores + 1, 2 to 8); check --online and bundle: requests at once (default 16, 8)"}, None, (*_RESOLVING, "check", "bundle")),
    _Option(("--force",), {"action": "store_true", "help": "re-resolve even cells whose inputs did not change"}, False, _RESOLVING),
    _Option(
        ("--mirror",), {"action": "append", "metavar": "CANONICAL=MIRROR", "help": "fetch URLs under CANONICAL from MIRROR; locks keep CANONICAL (repeatable; also LOCKGEN_MIRRORS)"},
        [], (*_RESOLVING, "install", "diff", *_DOSSIER, "check", "bundle", "init"),
    ),
    _Option(
        ("--online",), {"action": "store_true", "help": "all, lock, bump: resolve every cell online (no reuse of pages fetched in this run); check: check every locked file on its host (deleted, moved, size or hash changed)"},
        False, (*_RESOLVING, "check"),
    ),
    _Option(("--upgrade",), {"action": "store_true", "help": "let uv pick the newest allowed versions"}, False, _RESOLVING),
    _Option(("--upgrade-package",), {"action": "append", "metavar": "NAME", "help": "upgrade one package (repeatable)"}, [], _RESOLVING),
    _Option(("--wait",), {"action": "store_true", "help": "wait for another lockgen run on this project (install: into this venv) instead of refusing"}, False, (*_RESOLVING, "merge", "audit", "check", "install")),
    _Option(("--shard",), {"metavar": "I/N", "help": "only shard I of N (1-based) of the selected cells; see lockgen merge"}, None, ("all", "matrix")),
    _Option(("--no-coverage",), {"action": "store_true", "help": "do not read the GPU wheels' kernel coverage (the manifest records none for cells whose wheels changed)"}, False, _RESOLVING),
    _Option(("--coverage-budget",), {"type": int, "metavar": "MB", "help": "download at most MB megabytes to read kernel coverage; past it wheels are 'not measured: budget' (default: [coverage] budget-mb, 16000)"}, None, _RESOLVING),
    _Option(("--coverage-seconds",), {"type": float, "metavar": "S", "help": "spend at most S seconds reading kernel coverage (default: [coverage] budget-seconds, 1800)"}, None, _RESOLVING),
    _Option(("--retry-unavailable",), {"action": "store_true", "help": "re-resolve cells whose optional source was unreachable"}, False, _RESOLVING),
    _Option(("--json",), {"action": "store_true", "help": "print JSON"}, False, ("all", "lock", "matrix", "detect", "check", "bump", "why")),
    _Option(
        ("--dry-run",), {"action": "store_true", "help": "change nothing: resolve in .lockgen/ and report what would change (all, lock, bump), say what would be installed (install) or written (init)"},
        False, ("all", "lock", "bump", "install", "init"),
    ),
    _Option(("--cpu",), {"action": "store_true", "help": "accept the CPU cell when no GPU is found"}, False, ("detect", "install")),
    _Option(("--python",), {"metavar": "X.Y", "help": "target Python (default: the cell's only Python in the matrix, else this interpreter's; install: or the path of the interpreter to create the venv from; init: the matrix's, comma-separated)"}, None, ("detect", "install", "init")),
    _Option(("--os",), {"choices": ["linux", "windows", "macos"], "help": "pretend: operating system"}, None, ("detect",)),
    _Option(("--arch",), {"choices": ["x86_64", "aarch64"], "help": "pretend: host arch"}, None, ("detect",)),
    _Option(("--interpreter",), {"choices": ["x86_64", "aarch64"], "help": "pretend: interpreter arch"}, None, ("detect",)),
    _Option(("--gpu",), {"choices": ["nvidia", "amd", "apple", "none"], "help": "pretend: GPU kind"}, None, ("detect",)),
    _Option(("--cuda",), {"metavar": "X.Y", "help": "pretend: the NVIDIA driver's CUDA version"}, None, ("detect",)),
    _Option(("--gfx",), {"metavar": "LIST", "help": "pretend: AMD GPUs by gfx target (gfx1100,gfx1036)"}, None, ("detect",)),
    _Option(("--cell", "--select-cell"), {"metavar": "NAME", "help": "detect: take this cell (the way past GPU facts that cannot be known); why: the cell to explain"}, None, ("detect", "why")),
    _Option(("--axis",), {"action": "append", "type": lambda text: _axis(text), "metavar": "NAME=VALUE", "help": "the value of an extra matrix axis (repeatable)"}, [], ("detect", "install")),
    _Option(("--gpu-query",), {"metavar": "FILE", "help": "pretend: saved nvidia-smi --query-gpu output"}, None, ("detect",)),
    _Option(("--detect",), {"action": "store_true", "help": "install the cell lockgen.cellselect picks for this machine"}, False, _INSTALL),
    _Option(("--venv",), {"metavar": "PATH", "help": "the virtual environment (default: .venv in the project root)"}, None, _INSTALL),
    _Option(("--installer",), {"choices": ["uv", "pip"], "help": "run the manifest's uv (default) or pip commands"}, "uv", _INSTALL),
    _Option(("--index-url",), {"metavar": "URL", "help": "install from this index instead of the recorded one"}, None, _INSTALL),
    _Option(("--reinstall",), {"action": "store_true", "help": "install even when the venv is up to date"}, False, _INSTALL),
)  # fmt: skip
#: Where a subcommand stores an option given after it (merged with the one before by :func:`parse`).
_AFTER = "after_"


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The parser: every option of :data:`OPTIONS` on the main parser and on each command (hidden
    from the help of commands that do not take it), all with ``SUPPRESS`` defaults so that
    :func:`parse` sees what was given where. Built once per process (argparse makes a help
    formatter for every argument it adds; ``parse_args`` leaves the parser unchanged): do not
    modify the returned parser."""
    parser = argparse.ArgumentParser(
        prog="lockgen",
        # one line: argparse's own would list every option (10 lines) above each usage error
        usage="lockgen [-h] [--version] [OPTIONS] COMMAND [ARGS] [OPTIONS]",
        description="Per-target lock files from a build matrix. Options go before or after the command.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show lockgen's and uv's versions")
    groups: dict[tuple[str, ...], argparse._ArgumentGroup] = {}
    for option in OPTIONS:
        if option.commands not in groups:
            which = (
                "every command"
                if option.commands == _EVERY
                else " and ".join(option.commands).replace(" and ", ", ", len(option.commands) - 2)
            )
            groups[option.commands] = parser.add_argument_group(f"options of {which}")
        groups[option.commands].add_argument(
            *option.flags, dest=option.dest, default=argparse.SUPPRESS, **option.kwargs
        )
    # not required here: parse() says a command is missing only after argparse has had its say
    # about unknown options (`lockgen --bogus` named the missing command, not --bogus)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command, text in COMMANDS.items():
        usage = f"lockgen {command} [OPTIONS]{_ARGUMENTS.get(command, '')}"  # argparse's lists every option
        p = sub.add_parser(command, help=text, prog=f"lockgen {command}", usage=usage)
        _positionals(command, p)
        for option in OPTIONS:  # all of them, so that a misplaced one gets parse()'s message
            kwargs = {**option.kwargs} if command in option.commands else {**option.kwargs, "help": argparse.SUPPRESS}
            p.add_argument(*option.flags, dest=_AFTER + option.dest, default=argparse.SUPPRESS, **kwargs)
    return parser


#: ``lockgen diff --format`` values: the renderers of :data:`lockgen.locks.diffcmd.FORMATS`, named
#: here so that building the parser (every command) does not import the diff code (~90 ms).
DIFF_FORMATS = ("text", "markdown", "json")
#: The arguments of each command as its one-line usage shows them (see :func:`_positionals`).
_ARGUMENTS = {
    "lock": " CELL [CELL ...]", "check": " [CELL ...]", "diff": " [OLD [NEW]]", "install": " [CELL]",
    "merge": " DIR [DIR ...]", "bump": " NAME==VERSION [NAME==VERSION ...]", "why": " NAME [CELL ...]",
    "audit": " [CELL ...]", "sbom": " [CELL ...]", "licenses": " [CELL ...]", "init": " [FILE ...]",
    "bundle": " CELL [CELL ...] -o DIR",
}  # fmt: skip
#: ``lockgen audit --format`` values (:data:`lockgen.dossier.auditformat.FORMATS`).
AUDIT_FORMATS = ("text", "markdown", "json", "sarif")
#: ``--fail-on`` thresholds (:data:`lockgen.config.model.SEVERITIES`).
FAIL_ON = ("any", "low", "medium", "high", "critical", "none")


def _positionals(command: str, p: argparse.ArgumentParser) -> None:
    """The arguments only one command takes."""
    if command == "lock":
        p.add_argument("cells", nargs="+", metavar="CELL")
    elif command == "check":
        p.add_argument("cells", nargs="*", default=[], metavar="CELL")
        p.add_argument(
            "--resolve", action="store_true",
            help="resolve every cell again into .lockgen/reproduce/ (the recorded uv and cutoff) and explain any drift",
        )  # fmt: skip
        p.add_argument(
            "--attestations", action="store_true",
            help="with --online: verify each file's PEP 740 attestations (needs lockgen[attestations])",
        )  # fmt: skip
        p.add_argument(
            "--timeout", type=float, metavar="SECONDS", default=None,
            help="with --online: the time budget of the whole check (default 600)",
        )  # fmt: skip
    elif command == "bundle":
        p.add_argument("cells", nargs="+", metavar="CELL")
        p.add_argument(
            "-o", "--output", metavar="DIR", required=True,
            help="the bundle folder (created; a bundle there already is added to, its files reused)",
        )  # fmt: skip
    elif command == "diff":
        p.add_argument("old", nargs="?", metavar="OLD", help="git revision or folder (default: HEAD)")
        p.add_argument("new", nargs="?", metavar="NEW", help="git revision or folder (default: the work tree)")
        p.add_argument(
            "--format", choices=DIFF_FORMATS, default="text", help="text (default), markdown (a PR comment) or json"
        )
        p.add_argument("--exit-code", action="store_true", help="exit 1 when there are changes")
        p.add_argument(
            "--osv",
            metavar="SOURCE",
            help="with markdown: also list the advisories the change fixes or introduces (an OSV API URL or export)",
        )
    elif command == "install":
        p.add_argument("cell", nargs="?", metavar="CELL", help="the cell to install (or --detect)")
        p.add_argument(
            "--from", dest="from_dir", metavar="DIR", default=None,
            help="install from a bundle folder (lockgen bundle): its locks and files, no network, no project",
        )  # fmt: skip
    elif command == "merge":
        p.add_argument("dirs", nargs="+", metavar="DIR", help="a shard's locks folder (repeat for every shard)")
    elif command in ("audit", "sbom", "licenses"):
        p.add_argument(
            "cells", nargs="*", default=[], metavar="CELL", help="cells to read (default: every cell with a lock)"
        )
        if command == "audit":
            p.add_argument(
                "--format", choices=AUDIT_FORMATS, default="text", help="text (default), markdown, json or sarif"
            )
            p.add_argument(
                "--osv",
                metavar="SOURCE",
                help="OSV API URL, or an export folder or zip (default: [audit] osv, else https://api.osv.dev)",
            )
            p.add_argument(
                "--fail-on",
                choices=FAIL_ON,
                default=None,
                help="lowest severity that makes the exit code 1 (default: [audit] fail-on, else any)",
            )
            p.add_argument(
                "--fix",
                action="store_true",
                help="move each affected package to its smallest fixed version the config allows, and re-lock",
            )
        else:
            p.add_argument(
                "--offline", action="store_true", help="read package metadata from the cache only; fetch nothing"
            )
        if command == "licenses":
            p.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
        if command == "sbom":
            p.add_argument(
                "-o",
                "--output",
                metavar="DIR",
                help="write <cell>.cdx.json and matrix.cdx.json here (default: print the merged SBOM)",
            )
            p.add_argument(
                "--serial-number",
                metavar="UUID",
                help="the SBOMs' serial number (default: derived from the locks, so the same locks give the same bytes)",
            )
            p.add_argument(
                "--timestamp",
                action="store_true",
                help="record the time of writing in the metadata (default: none, for byte-stable SBOMs)",
            )
    elif command == "init":
        p.add_argument(
            "files",
            nargs="*",
            default=[],
            metavar="FILE",
            help="requirement files (default: requirements*.txt, requirements/); FILE:os=linux,arch=aarch64 says "
            "its platform (keys os, arch, backend)",
        )
        p.add_argument(
            "--commands",
            action="append",
            default=[],
            metavar="SCRIPT",
            help="an installer script (or a file of pip install lines) whose torch install commands to read; "
            "nothing in it runs (repeatable; SCRIPT:os=macos says its platform)",
        )
        p.add_argument(
            "--index",
            action="append",
            default=[],
            metavar="URL",
            help="a backend index (…/whl/cu128) for files that name none (repeatable)",
        )
        p.add_argument("--exclude-newer", metavar="DATE", help="resolve as of this date or time (default: today, UTC)")
        p.add_argument(
            "--offline",
            action="store_true",
            help="read nothing from the default index: which build PyPI's linux torch is comes from init's table",
        )
        p.add_argument(
            "--with-dev",
            action="store_true",
            help="also read the development and test requirement files (requirements-dev.txt, …), as a dev group "
            "every cell installs",
        )
    elif command == "bump":
        p.add_argument("pins", nargs="+", metavar="NAME==VERSION")
        p.add_argument("--no-lock", action="store_true", help="only edit the pins (config and templates); lock nothing")
    elif command == "why":
        p.add_argument("package", metavar="NAME", help="the package to explain")
        p.add_argument(
            "cells", nargs="*", default=[], metavar="CELL", help="the cells to look at (default: every locked cell)"
        )


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line: an option may come before or after the command (repeatable ones
    collect both; otherwise the later wins). One given to a command that does not take it, before
    or after it, is a usage error (exit 2) naming the commands that do."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("a command is required (lockgen --help lists them)")
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
    args.func = handler(args.command)
    return args


def _interrupt(
    signum: int, frame: FrameType | None
) -> NoReturn:  # SIGTERM behaves like Ctrl-C: stop, clean up, exit 130
    raise KeyboardInterrupt


def _redact_logs() -> None:
    """No log line shows a login (``-v`` logs uv's command lines; lockgen.runtime.credentials)."""
    from lockgen.runtime.credentials import RedactFilter

    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactFilter) for f in handler.filters):
            handler.addFilter(RedactFilter())


def _discard_stdout() -> None:
    """Point stdout at the null device, so that the interpreter's last flush of what is still
    buffered does not fail again on the closed pipe (the idiom of Python's ``signal`` docs, "Note
    on SIGPIPE"). Exits quietly: the reader closed the pipe on purpose; the exit code is 1 (an
    output could not be written)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # not a real file (tests capture it): nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _settle(args: argparse.Namespace) -> None:
    """Before any command reads the project: finish or roll back what a killed run left
    (:func:`lockgen.locks.journal.settle`); ``init``'s folder is ``-C`` itself."""
    from pathlib import Path

    from lockgen.locks import journal

    if args.command == "init":
        journal.settle(Path(args.config) if args.config else Path.cwd())
    elif not (args.command == "install" and getattr(args, "from_dir", None) is not None):
        journal.settle_project(Path.cwd(), args.config)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        print("error: -j/--jobs must be at least 1", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(relativeCreated)7.0fms %(name)s: %(message)s" if args.verbose else "%(name)s: %(message)s",
    )
    _redact_logs()
    try:
        previous = signal.signal(signal.SIGTERM, _interrupt)
    except ValueError:  # not the main thread (tests may call main from one)
        previous = None
    try:
        command: Callable[[argparse.Namespace], int] = args.func
        _settle(args)
        code = command(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:  # the reader went away (`lockgen matrix --json | head -1`)
        _discard_stdout()
        return 1
    except LockgenError as exc:
        if args.verbose:
            print(redact(traceback.format_exc()), end="", file=sys.stderr)  # -v: no secret in it either
        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # a file lockgen must read is not usable
        if args.verbose:
            print(redact(traceback.format_exc()), end="", file=sys.stderr)  # -v: no secret in it either
        print(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
