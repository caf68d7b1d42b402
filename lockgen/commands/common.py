"""What several commands share when they run: the project, a lock run's options and reporter, the
lock run itself. (Their shared options are :mod:`lockgen.commands.options`.) Its imports of the
core are made when a command runs, so that building the parser imports none."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lockgen.locks.shard import Shard
    from lockgen.project import Project
    from lockgen.run.values import Reporter, RunOptions

__all__ = ["lock_cells", "print_text", "project", "reporter", "run_options", "shard"]


def project(args: argparse.Namespace) -> Project:
    """The project of ``-C``/``--config`` (default: the nearest one upward of the working folder)."""
    from lockgen.project import Project

    return Project.load(Path.cwd(), args.config)


def reporter(args: argparse.Namespace) -> Reporter:
    """A live table on a terminal (without ``-v``), else one log line per state change."""
    from lockgen.run.progress import LiveReporter, PlainReporter

    return LiveReporter() if sys.stderr.isatty() and not args.verbose else PlainReporter()


def shard(args: argparse.Namespace) -> Shard | None:
    """``--shard I/N``, if given."""
    from lockgen.locks.shard import Shard

    return Shard.parse(args.shard) if args.shard is not None else None


def run_options(args: argparse.Namespace) -> RunOptions:
    """How ``all``/``lock``/``bump`` run (:data:`lockgen.commands.options.RESOLVING`)."""
    from lockgen.resolve import uv
    from lockgen.run.values import RunOptions

    return RunOptions(
        force=args.force, uv=uv.Options(upgrade=args.upgrade, upgrade_packages=tuple(args.upgrade_package)),
        jobs=args.jobs, online=args.online, mirrors=tuple(args.mirror), wait=args.wait,
        retry_unavailable=args.retry_unavailable, shard=shard(args), coverage=not args.no_coverage,
        coverage_mb=args.coverage_budget, coverage_seconds=args.coverage_seconds,
    )  # fmt: skip


def print_text(text: str) -> None:
    """``text`` on stdout, ending with one newline."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def lock_cells(args: argparse.Namespace, names: Sequence[str]) -> int:
    """Lock the stale cells among ``names`` (all of them: empty) with :func:`lockgen.run.lock.lock_project`
    (``--dry-run``: :func:`lockgen.run.lock.dry_run`); ``--json`` prints the run."""
    from lockgen.run.lock import dry_run, lock_project

    run_lock = dry_run if args.dry_run else lock_project
    run = run_lock(Path.cwd(), args.config, names, args.only, run_options(args), reporter(args))
    if args.json:
        print(json.dumps(run.to_dict(), indent=2))
    if run.would_write is not None:
        files = ", ".join(run.would_write) if run.would_write else "no file"
        print(f"--dry-run: would write {files}; nothing written", file=sys.stderr)
    return run.exit_code
