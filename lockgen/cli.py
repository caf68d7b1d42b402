"""The command line: argparse, then one call per command. Each command is a module of
:mod:`lockgen.commands` that declares its arguments beside its handler: ``HELP`` (its line in
``lockgen --help``, and its description), ``USAGE`` (its arguments, for the one-line usage),
``OPTIONS`` (the options it takes that may come before or after the command, shared ones from
:mod:`lockgen.commands.options`), ``arguments(parser)`` (its own positionals and options) and
``run(args)``, which turns them into one call of the core and an exit code: 0 ok, 1 a
stale/changed/failed cell, 2 usage or config error, 130 interrupted. Errors print as
``error: …``; tracebacks only with ``-v``. This module builds the parser from those modules and
dispatches."""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from types import FrameType, ModuleType
from typing import Any, NoReturn

from lockgen import __version__
from lockgen.commands.options import Option
from lockgen.runtime import clock
from lockgen.runtime.credentials import redact
from lockgen.runtime.errors import LockgenError

__all__ = ["COMMANDS", "build_parser", "command", "handler", "main", "parse", "shared_options"]

#: Every command, in ``--help`` order; each is the module ``lockgen.commands.<command>``.
COMMANDS = (
    "all", "lock", "matrix", "detect", "check", "diff", "bump", "why", "install", "merge", "audit", "sbom",
    "licenses", "init", "bundle",
)  # fmt: skip
#: Where a subcommand stores an option given after it (merged with the one before by :func:`parse`).
_AFTER = "after_"


def command(name: str) -> ModuleType:
    """The module of a command (light to import: it imports its core only when it runs)."""
    return importlib.import_module(f"lockgen.commands.{name}")


def handler(name: str) -> Callable[[argparse.Namespace], int]:
    """``run`` of the command's module."""
    run: Callable[[argparse.Namespace], int] = command(name).run
    return run


@functools.cache
def shared_options() -> dict[str, tuple[Option, tuple[str, ...]]]:
    """Every option a command lists in ``OPTIONS``, by ``dest``: the option and the commands that
    take it (in :data:`COMMANDS` order). Raises ``ValueError`` when two commands define one flag
    differently (a shared option is defined once, in :mod:`lockgen.commands.options`)."""
    found: dict[str, tuple[Option, tuple[str, ...]]] = {}
    for name in COMMANDS:
        for opt in command(name).OPTIONS:
            known, takers = found.get(opt.dest, (opt, ()))
            if not known.same(opt):
                raise ValueError(f"{opt.name}: {name} and {takers[0]} define it differently")
            found[opt.dest] = (known, (*takers, name))
    return found


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


def _add(parser: argparse.ArgumentParser | argparse._ArgumentGroup, opt: Option, dest: str, text: str) -> None:
    """``opt`` with a ``SUPPRESS`` default, so that :func:`parse` sees where it was given."""
    parser.add_argument(*opt.flags, dest=dest, default=argparse.SUPPRESS, help=text, **opt.kwargs)


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The parser: every shared option on the main parser and on each command (hidden from the
    help of commands that do not take it, so that a misplaced one gets :func:`parse`'s message),
    each command's own arguments on it. Built once per process (argparse makes a help formatter
    for every argument it adds; ``parse_args`` leaves the parser unchanged): do not modify the
    returned parser."""
    parser = argparse.ArgumentParser(
        prog="lockgen",
        # one line: argparse's own would list every option (10 lines) above each usage error
        usage="lockgen [-h] [--version] [OPTIONS] COMMAND [ARGS] [OPTIONS]",
        description="Per-target lock files from a build matrix. Options go before or after the command.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show lockgen's and uv's versions")
    every = parser.add_argument_group("options of every command")
    some = parser.add_argument_group("options of some commands (lockgen COMMAND --help says what each does there)")
    for dest, (opt, takers) in shared_options().items():
        if len(takers) == len(COMMANDS):
            _add(every, opt, dest, opt.help)
        else:
            _add(some, opt, dest, f"{opt.help} ({', '.join(takers)})")
    # not required here: parse() says a command is missing only after argparse has had its say
    # about unknown options (`lockgen --bogus` named the missing command, not --bogus)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = command(name)
        usage = f"lockgen {name} [OPTIONS] {module.USAGE}".rstrip()  # argparse's lists every option
        description = module.HELP[0].upper() + module.HELP[1:] + "."
        p = sub.add_parser(name, help=module.HELP, prog=f"lockgen {name}", usage=usage, description=description)
        module.arguments(p)
        own = {opt.dest: opt for opt in module.OPTIONS}
        for dest, (opt, _) in shared_options().items():
            text = (own[dest].own_help or opt.help) if dest in own else argparse.SUPPRESS
            _add(p, opt, _AFTER + dest, text)
    return parser


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line: an option may come before or after the command (repeatable ones
    collect both; otherwise the later wins). One given to a command that does not take it, before
    or after it, is a usage error (exit 2) naming the commands that do."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("a command is required (lockgen --help lists them)")
    for dest, (opt, takers) in shared_options().items():
        before = vars(args).pop(dest, None)
        after = vars(args).pop(_AFTER + dest, None)
        if (before is not None or after is not None) and args.command not in takers:
            parser.error(f"{opt.name} does not apply to {args.command} (only to {', '.join(takers)})")
        if opt.repeatable:
            value = [*(before or []), *(after or [])]
        else:
            value = after if after is not None else before if before is not None else opt.default
        setattr(args, dest, value)
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
    clock.start()  # a cooldown (exclude-newer = "7 days") counts back from here, for the whole run
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
