"""``lockgen all``: lock every stale cell of the matrix (:func:`lockgen.run.lock.lock_project`)."""

from __future__ import annotations

import argparse

from lockgen.commands import options
from lockgen.commands.common import lock_cells

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "lock every stale cell of the matrix"
USAGE = ""
OPTIONS = (
    *options.EVERY, options.ONLY, *options.RESOLVING, options.LOCK_DRY_RUN, options.JSON,
    options.SHARD.meaning("only shard I of N (1-based) of the selected cells; lockgen merge joins the shards' locks"),
)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """None but its options."""


def run(args: argparse.Namespace) -> int:
    return lock_cells(args, ())
