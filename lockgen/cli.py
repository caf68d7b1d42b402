"""The command line. Each handler turns parsed arguments into one call of the core and an exit
code: 0 ok, 1 a stale/changed/failed cell, 2 usage or config error, 130 interrupted. Errors print
as ``error: …``; tracebacks only with ``-v``. Every option is accepted before or after the
command."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from lockgen import __version__
from lockgen.credentials import redact
from lockgen.errors import LockgenError

if TYPE_CHECKING:
    from lockgen.locks.shard import Shard
    from lockgen.project import Project
    from lockgen.runs import Reporter, RunOptions

__all__ = ["OPTIONS", "build_parser", "main", "parse"]


def _project(args: argparse.Namespace) -> Project:
    from lockgen.project import Project

    return Project.load(Path.cwd(), args.config)


def _reporter(args: argparse.Namespace) -> Reporter:
    from lockgen.progress import LiveReporter, PlainReporter

    return LiveReporter() if sys.stderr.isatty() and not args.verbose else PlainReporter()


def _shard(args: argparse.Namespace) -> Shard | None:
    from lockgen.locks.shard import Shard

    return Shard.parse(args.shard) if args.shard is not None else None


def _run_options(args: argparse.Namespace) -> RunOptions:
    from lockgen.resolve import uv
    from lockgen.runs import RunOptions

    return RunOptions(
        force=args.force, uv=uv.Options(upgrade=args.upgrade, upgrade_packages=tuple(args.upgrade_package)),
        jobs=args.jobs, online=args.online, mirrors=tuple(args.mirror), wait=args.wait,
        retry_unavailable=args.retry_unavailable, shard=_shard(args),
    )  # fmt: skip


def _lock(args: argparse.Namespace, names: Sequence[str]) -> int:
    from lockgen import pipeline

    run_lock = pipeline.dry_run if args.dry_run else pipeline.lock_project
    run = run_lock(Path.cwd(), args.config, names, args.only, _run_options(args), _reporter(args))
    if args.json:
        print(json.dumps(run.to_dict(), indent=2))
    if run.would_write is not None:
        files = ", ".join(run.would_write) if run.would_write else "no file"
        print(f"--dry-run: would write {files}; nothing written", file=sys.stderr)
    return run.exit_code


def cmd_all(args: argparse.Namespace) -> int:
    return _lock(args, ())


def cmd_lock(args: argparse.Namespace) -> int:
    return _lock(args, args.cells)


def cmd_matrix(args: argparse.Namespace) -> int:
    from lockgen.plan.matrix import select, with_alias_sources
    from lockgen.plan.target import target_for

    project = _project(args)
    cells = select(project.cells, only=args.only)
    shard = _shard(args)
    if shard is not None:  # the cells `lockgen all --shard` locks: an alias's cell goes with it
        from lockgen.locks.shard import select as select_shard

        cells = select_shard(with_alias_sources(project.cells, cells), shard)
    rows = []
    for cell in cells:
        target = target_for(cell)
        rows.append({
            "name": cell.name, **cell.values, "lock": cell.lock_path(project.config), "target": target.platform,
            "python_tag": target.python_tag, "skip": cell.settings.skip, "alias": cell.settings.alias,
            "interpreter": cell.settings.interpreter,
        })  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max((len(str(row["name"])) for row in rows), default=0) + 1
    for row in rows:
        where = f"skipped: {row['skip']}" if row["skip"] else row["lock"]
        if row["alias"]:
            where = f"alias of {row['alias']}" + (f" (interpreter {row['interpreter']})" if row["interpreter"] else "")
        print(f"{row['name']:<{max(width, 34)}} {row['target']:<24} {where}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    if args.online or args.resolve:
        return _check_over_time(args)
    if args.attestations:
        print("error: --attestations goes with --online", file=sys.stderr)
        return 2
    from lockgen.check import check

    result = check(_project(args), args.cells, args.only)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return result.exit_code
    for cell in result.cells:
        if cell.state.bad or (cell.reasons and cell.state.value == "up to date"):
            print(f"{cell.name}: {cell.state}" + "".join(f"\n  {r}" for r in cell.reasons))
    if result.manifest:
        print(f"manifest: {result.manifest}")
    print("some locks are out of date; run `lockgen all`" if result.exit_code else "all locks are up to date")
    return result.exit_code


def _check_over_time(args: argparse.Namespace) -> int:
    """``check --online`` (the locked files on their hosts) and/or ``check --resolve`` (the same
    inputs resolved again into a scratch folder): docs/locks-over-time.md."""
    from lockgen.rot.command import online_command, resolve_command
    from lockgen.rot.online import OnlineReport
    from lockgen.rot.reproduce import ReproReport

    if args.attestations and not args.online:
        print("error: --attestations goes with --online", file=sys.stderr)
        return 2
    project = _project(args)
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
            _print("\n".join(report.lines()))
    return max(report.exit_code for report in reports.values())


def cmd_bundle(args: argparse.Namespace) -> int:
    from lockgen.rot.bundle import bundle_command

    result = bundle_command(_project(args), args.cells, args.output, mirrors=tuple(args.mirror), jobs=args.jobs)
    for line in result.lines():
        print(line, file=sys.stderr)
    return result.exit_code


def cmd_detect(args: argparse.Namespace) -> int:
    from lockgen.detect import run

    return run(_project(args), args)


def _axis(text: str) -> tuple[str, str]:
    """``--axis NAME=VALUE``, parsed as the selector parses it."""
    from lockgen.select import parse_axis

    return parse_axis(text)


def cmd_install(args: argparse.Namespace) -> int:
    from lockgen.install import Options, install, install_bundle

    options = Options(
        cell=args.cell, detect=args.detect, venv=args.venv, cpu=args.cpu, python=args.python, dry_run=args.dry_run,
        installer=args.installer, mirrors=tuple(args.mirror), index_url=args.index_url, force=args.reinstall,
        wait=args.wait,
        axes=tuple(args.axis),
    )  # fmt: skip
    if args.from_dir is not None:  # a bundle: its own locks and manifest, no project, no network
        return install_bundle(Path(args.from_dir), options)
    return install(_project(args), options)


def cmd_diff(args: argparse.Namespace) -> int:
    from lockgen.locks.diffcmd import diff_command

    project = _diff_project(args)
    root, locks = (project.root, project.config.locks) if project is not None else (Path.cwd(), "locks")
    text, code = diff_command(root, locks, args.old, args.new, args.format, args.exit_code)
    if project is not None and args.format == "markdown" and (args.osv or project.config.audit.osv):
        from lockgen.dossier.diffnote import advisories_note

        text = text.rstrip("\n") + "\n" + advisories_note(project, args.old, args.new, args.osv, tuple(args.mirror))
    _print(text)
    return code


def _diff_project(args: argparse.Namespace) -> Project | None:
    """The project ``lockgen diff`` compares in; None for two folders where no config is found
    (comparing two copies of locks needs none)."""
    from lockgen.locks.diffcmd import folders_only

    try:
        return _project(args)
    except LockgenError:
        if args.config is None and folders_only(Path.cwd(), args.old, args.new):
            return None
        raise


def cmd_why(args: argparse.Namespace) -> int:
    from lockgen.why import render_text, why

    answer = why(_project(args), args.package, args.cells)
    if args.json:
        print(json.dumps(answer.to_dict(), indent=2))
    else:
        sys.stdout.write(render_text(answer))
    return 0


def cmd_bump(args: argparse.Namespace) -> int:
    from lockgen.bump_run import BumpOptions, bump

    options = BumpOptions(run=_run_options(args), no_lock=args.no_lock, dry_run=args.dry_run)
    say = None if args.json else (lambda line: print(line, file=sys.stderr))
    outcome = bump(Path.cwd(), args.config, args.pins, options, _reporter(args), say=say)
    if args.json:
        print(json.dumps(outcome.to_dict(), indent=2))
    else:
        print(outcome.final(), file=sys.stderr)
    return outcome.exit_code


def cmd_merge(args: argparse.Namespace) -> int:
    from lockgen.locks.shard import merge

    result = merge(_project(args), [Path(d) for d in args.dirs], wait=args.wait)
    for line in result.report:
        print(line, file=sys.stderr)
    for cell, why in sorted(result.failed.items()):
        print(f"{cell}: failed in its shard: {why}", file=sys.stderr)
    for path in result.removed:
        print(f"{path}: removed (its cell is not resolved by the matrix any more)", file=sys.stderr)
    changed = sum(state == "changed" for state in result.cells.values())
    print(f"merged {len(result.cells)} cells from {len(args.dirs)} shard folders: {changed} changed", file=sys.stderr)
    return result.exit_code


def _print(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def cmd_audit(args: argparse.Namespace) -> int:
    if args.fix:
        from lockgen.dossier.fix import fix_command

        return fix_command(_project(args), args.cells, args.osv, args.fail_on, _run_options(args), _reporter(args))
    from lockgen.dossier.run import audit_command

    text, code = audit_command(
        _project(args), args.cells, osv=args.osv, fail_on=args.fail_on, fmt=args.format, mirrors=tuple(args.mirror)
    )
    _print(text)
    return code


def cmd_sbom(args: argparse.Namespace) -> int:
    from lockgen.dossier.run import sbom_command

    text, code = sbom_command(
        _project(args), args.cells, output=args.output, mirrors=tuple(args.mirror), offline=args.offline,
        serial=args.serial_number, timestamp=args.timestamp,
    )  # fmt: skip
    (_print if args.output is None else functools.partial(print, end="", file=sys.stderr))(text)
    return code


def cmd_licenses(args: argparse.Namespace) -> int:
    from lockgen.dossier.run import licenses_command

    text, code = licenses_command(
        _project(args), args.cells, fmt=args.format, mirrors=tuple(args.mirror), offline=args.offline
    )
    _print(text)
    return code


def cmd_init(args: argparse.Namespace) -> int:
    from lockgen.scaffold import Options, scaffold, write

    root = Path(args.config) if args.config else Path.cwd()
    pythons = tuple(v.strip() for v in (args.python or "").split(",") if v.strip())
    options = Options(
        files=tuple(args.files),
        commands=tuple(args.commands),
        indexes=tuple(args.index),
        pythons=pythons,
        exclude_newer=args.exclude_newer,
    )
    draft = scaffold(root, options)
    for line in draft.explanation:
        print(f"  {line}", file=sys.stderr)
    if args.dry_run:
        for rel, text in draft.files.items():
            print(f"--- {rel}\n{text}", end="" if text.endswith("\n") else "\n")
        return 0
    for rel in write(root, draft):
        print(f"wrote {rel}", file=sys.stderr)
    print("next: lockgen matrix (the cells), lockgen all (lock them), lockgen check (in CI)", file=sys.stderr)
    return 0


class _Version(argparse.Action):
    """``--version``, looked up only when asked for (reading uv's metadata costs a no-op run)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> NoReturn:
        from lockgen.uvbin import uv_version

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
_EVERY = (
    "all",
    "lock",
    "matrix",
    "detect",
    "check",
    "diff",
    "bump",
    "install",
    "merge",
    "init",
    "why",
    *_DOSSIER,
    "bundle",
)
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
        [], (*_RESOLVING, "install", "diff", *_DOSSIER, "check", "bundle"),
    ),
    _Option(
        ("--online",), {"action": "store_true", "help": "all, lock, bump: resolve every cell online (no reuse of pages fetched in this run); check: check every locked file on its host (deleted, moved, size or hash changed)"},
        False, (*_RESOLVING, "check"),
    ),
    _Option(("--upgrade",), {"action": "store_true", "help": "let uv pick the newest allowed versions"}, False, _RESOLVING),
    _Option(("--upgrade-package",), {"action": "append", "metavar": "NAME", "help": "upgrade one package (repeatable)"}, [], _RESOLVING),
    _Option(("--wait",), {"action": "store_true", "help": "wait for another lockgen run on this project (install: into this venv) instead of refusing"}, False, (*_RESOLVING, "merge", "audit", "check", "install")),
    _Option(("--shard",), {"metavar": "I/N", "help": "only shard I of N (1-based) of the selected cells; see lockgen merge"}, None, ("all", "matrix")),
    _Option(("--retry-unavailable",), {"action": "store_true", "help": "re-resolve cells whose optional source was unreachable"}, False, _RESOLVING),
    _Option(("--json",), {"action": "store_true", "help": "print JSON"}, False, ("all", "lock", "matrix", "detect", "check", "bump", "why")),
    _Option(
        ("--dry-run",), {"action": "store_true", "help": "change nothing: resolve in .lockgen/ and report what would change (all, lock, bump), say what would be installed (install) or written (init)"},
        False, ("all", "lock", "bump", "install", "init"),
    ),
    _Option(("--cpu",), {"action": "store_true", "help": "accept the CPU cell when no GPU is found"}, False, ("detect", "install")),
    _Option(("--python",), {"metavar": "X.Y", "help": "target Python (default: the cell's only Python in the matrix, else this interpreter's; init: the matrix's, comma-separated)"}, None, ("detect", "install", "init")),
    _Option(("--os",), {"choices": ["linux", "windows", "macos"], "help": "pretend: operating system"}, None, ("detect",)),
    _Option(("--arch",), {"choices": ["x86_64", "aarch64"], "help": "pretend: host arch"}, None, ("detect",)),
    _Option(("--interpreter",), {"choices": ["x86_64", "aarch64"], "help": "pretend: interpreter arch"}, None, ("detect",)),
    _Option(("--gpu",), {"choices": ["nvidia", "amd", "apple", "none"], "help": "pretend: GPU kind"}, None, ("detect",)),
    _Option(("--cuda",), {"metavar": "X.Y", "help": "pretend: the NVIDIA driver's CUDA version"}, None, ("detect",)),
    _Option(("--gfx",), {"metavar": "LIST", "help": "pretend: AMD GPUs by gfx target (gfx1100,gfx1036)"}, None, ("detect",)),
    _Option(("--cell", "--select-cell"), {"metavar": "NAME", "help": "take this cell (the way past GPU facts that cannot be known)"}, None, ("detect",)),
    _Option(("--axis",), {"action": "append", "type": lambda text: _axis(text), "metavar": "NAME=VALUE", "help": "the value of an extra matrix axis (repeatable)"}, [], ("detect", "install")),
    _Option(("--gpu-query",), {"metavar": "FILE", "help": "pretend: saved nvidia-smi --query-gpu output"}, None, ("detect",)),
    _Option(("--detect",), {"action": "store_true", "help": "install the cell lockgen.select picks for this machine"}, False, _INSTALL),
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
    commands = {
        "all": (cmd_all, "lock every stale cell of the matrix"),
        "lock": (cmd_lock, "lock the named cells"),
        "matrix": (cmd_matrix, "list the cells of the matrix"),
        "detect": (cmd_detect, "print the cell (and lock) for this machine"),
        "check": (cmd_check, "exit 1 if any lock or the manifest is out of date"),
        "diff": (cmd_diff, "show what changed between two sets of locks (git revisions or folders)"),
        "bump": (cmd_bump, "move pins (config, templates, project dependencies), re-lock, write all of it or nothing"),
        "why": (cmd_why, "show which requirements bring a package into each cell's lock"),
        "install": (cmd_install, "install a cell's layers into a venv, as the manifest says"),
        "merge": (cmd_merge, "merge the locks folders of `lockgen all --shard I/N` runs into locks/ and one manifest"),
        "audit": (
            cmd_audit,
            "check every locked package of every cell against OSV advisories (--fix: move to fixed versions)",
        ),
        "sbom": (cmd_sbom, "write CycloneDX 1.6 SBOMs of the locks, per cell and merged"),
        "licenses": (cmd_licenses, "list each locked package's license per cell and check the [licenses] policy"),
        "init": (cmd_init, "write a config and templates from the project's requirement files or pyproject.toml"),
        "bundle": (cmd_bundle, "write the locked files of cells into a folder that installs with no network"),
    }
    for command, (func, text) in commands.items():
        usage = f"lockgen {command} [OPTIONS]{_ARGUMENTS.get(command, '')}"  # argparse's lists every option
        p = sub.add_parser(command, help=text, prog=f"lockgen {command}", usage=usage)
        p.set_defaults(func=func)
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
        p.add_argument("cells", nargs="*", metavar="CELL")
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
        p.add_argument("cells", nargs="*", metavar="CELL", help="cells to read (default: every cell with a lock)")
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
    elif command == "bump":
        p.add_argument("pins", nargs="+", metavar="NAME==VERSION")
        p.add_argument("--no-lock", action="store_true", help="only edit the pins (config and templates); lock nothing")
    elif command == "why":
        p.add_argument("package", metavar="NAME", help="the package to explain")
        p.add_argument("cells", nargs="*", metavar="CELL", help="the cells to look at (default: every locked cell)")


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
    return args


def _interrupt(
    signum: int, frame: FrameType | None
) -> NoReturn:  # SIGTERM behaves like Ctrl-C: stop, clean up, exit 130
    raise KeyboardInterrupt


def _redact_logs() -> None:
    """No log line shows a login (``-v`` logs uv's command lines; lockgen.credentials)."""
    from lockgen.credentials import RedactFilter

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
