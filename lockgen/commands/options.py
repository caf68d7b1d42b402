"""The options several commands share, each defined once (:class:`Option`). A command takes one by
listing it in its ``OPTIONS``, as it is or with that command's own help text
(``WAIT.meaning("…")``); :mod:`lockgen.cli` accepts every such option before or after the command
and refuses it, naming the commands that take it, for a command that does not. Imports nothing
but the standard library: the parser is built from every command's declarations on each run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "AXIS", "CELL", "CONFIG", "CPU", "DRY_RUN", "EVERY", "FORCE", "JOBS", "JSON", "LOCK_DRY_RUN", "MIRROR", "ONLINE", "ONLY",
    "PYTHON", "RESOLVING", "SHARD", "VERBOSE", "WAIT", "Option", "locked_cells", "option",
]  # fmt: skip


@dataclass(frozen=True)
class Option:
    """One option: its flags, its help text, its value when not given (``[]`` for a repeatable
    one) and its other argparse keywords (``action``, ``type``, ``metavar``, ``choices``).
    ``own_help`` is one command's text for it (:meth:`meaning`), where it means more there."""

    flags: tuple[str, ...]
    help: str
    default: Any = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    own_help: str | None = None

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments: the last flag (``--select-cell``: ``select_cell``)."""
        return self.flags[-1].lstrip("-").replace("-", "_")

    @property
    def name(self) -> str:
        """How a usage error names it: ``-j/--jobs``."""
        return "/".join(self.flags)

    @property
    def repeatable(self) -> bool:
        """Given before and after the command, a repeatable option collects both."""
        return self.kwargs.get("action") == "append"

    def meaning(self, text: str) -> Option:
        """This option with one command's own help text (what it does for that command)."""
        return replace(self, own_help=text)

    def same(self, other: Option) -> bool:
        """Whether two commands' copies are the one option (all but the own help text equal)."""
        return replace(self, own_help=None) == replace(other, own_help=None)


def option(*flags: str, help: str, default: Any = None, **kwargs: Any) -> Option:
    """An :class:`Option`, written the way ``add_argument`` takes it."""
    if kwargs.get("action") == "store_true":
        default = False
    return Option(flags, help, default, kwargs)


def locked_cells(parser: Any, *, metadata: bool = False) -> None:
    """The ``[CELL ...]`` argument of the commands that read the committed locks (audit, sbom,
    licenses) and, with ``metadata``, their ``--offline`` (package metadata from the cache only)."""
    parser.add_argument(
        "cells", nargs="*", default=[], metavar="CELL", help="cells to read (default: every cell with a lock)"
    )
    if metadata:
        parser.add_argument(
            "--offline", action="store_true", help="read package metadata from the cache only; fetch nothing"
        )


def _axis(text: str) -> tuple[str, str]:
    """``--axis NAME=VALUE``, parsed as the selector parses it (imported only when given)."""
    from lockgen.cellselect import parse_axis

    return parse_axis(text)


CONFIG = option("-C", "--config", metavar="PATH", help="config file or folder (default: the nearest one upward)")
VERBOSE = option("-v", "--verbose", action="store_true", help="debug logs and tracebacks")
#: The options every command takes.
EVERY = (CONFIG, VERBOSE)

ONLY = option(
    "--only", action="append", default=[], metavar="KEY=VALUE",
    help="select cells by os, arch, backend, python or name; repeat a key to accept several values",
)  # fmt: skip
JOBS = option("-j", "--jobs", type=int, metavar="N", help="how much runs at once: cells resolved, or requests made")
MIRROR = option(
    "--mirror", action="append", default=[], metavar="CANONICAL=MIRROR",
    help="fetch URLs under CANONICAL from MIRROR; locks keep CANONICAL (repeatable; also LOCKGEN_MIRRORS)",
)  # fmt: skip
ONLINE = option("--online", action="store_true", help="ask the hosts again, reusing nothing fetched before")
WAIT = option("--wait", action="store_true", help="wait for another lockgen run on this project instead of refusing")
SHARD = option("--shard", metavar="I/N", help="only shard I of N (1-based) of the selected cells")
JSON = option("--json", action="store_true", help="print JSON")
DRY_RUN = option("--dry-run", action="store_true", help="change nothing; say what would be done")
CPU = option("--cpu", action="store_true", help="accept the CPU cell when no GPU is found")
PYTHON = option("--python", metavar="X.Y", help="the target Python")
CELL = option("--cell", "--select-cell", metavar="NAME", help="one cell, by name")
AXIS = option(
    "--axis", action="append", default=[], type=_axis, metavar="NAME=VALUE",
    help="the value of an extra matrix axis (repeatable)",
)  # fmt: skip
FORCE = option("--force", action="store_true", help="re-resolve even cells whose inputs did not change")

#: How ``all``, ``lock`` and ``bump`` resolve (:func:`lockgen.commands.common.run_options`).
RESOLVING = (
    JOBS.meaning("cells resolved at once (default: CPU cores + 1, 2 to 8)"),
    FORCE,
    MIRROR,
    ONLINE.meaning("resolve every cell online (no reuse of pages fetched in this run)"),
    option("--upgrade", action="store_true", help="let uv pick the newest allowed versions"),
    option("--upgrade-package", action="append", default=[], metavar="NAME", help="upgrade one package (repeatable)"),
    WAIT,
    option(
        "--no-coverage", action="store_true",
        help="do not read the GPU wheels' kernel coverage (the manifest records none for cells whose wheels changed)",
    ),
    option(
        "--coverage-budget", type=int, metavar="MB",
        help="download at most MB megabytes to read kernel coverage; past it wheels are 'not measured: budget' "
        "(default: [coverage] budget-mb, 16000)",
    ),
    option(
        "--coverage-seconds", type=float, metavar="S",
        help="spend at most S seconds reading kernel coverage (default: [coverage] budget-seconds, 1800)",
    ),
    option("--retry-unavailable", action="store_true", help="re-resolve cells whose optional source was unreachable"),
)  # fmt: skip
#: ``--dry-run`` of ``all`` and ``lock``.
LOCK_DRY_RUN = DRY_RUN.meaning("change nothing: resolve in .lockgen/ and report what would change")
