"""What every step of one cell's resolution shares: a :class:`CellRun`, and the builds the cell learned.

A :class:`CellRun` is the context of :mod:`lockgen.resolve.pipeline`: the project root, the
cell's plan, uv's options, the mirrors, the runner (the seam for tests: a recorded uv), the
builds this cell learned (its own: what one cell learns never changes another's lock, issue 17)
and what the run shares between cells, none of which changes what a cell resolves to (the
probe's findings, the hashes it verified, the versions each cell locked before). Its helpers
read and write the cell's work files and make its lock headers; it runs nothing itself.
"""

from __future__ import annotations

import posixpath
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.pylock import Package, Pylock

from lockgen.locks import pylockfile
from lockgen.locks.lock import Header, LayerKind, decode
from lockgen.locks.paths import confine_file
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.plan.sources import index_pages
from lockgen.resolve import uv
from lockgen.resolve.hashcheck import Verified
from lockgen.resolve.inputs import write_file
from lockgen.resolve.probe import Reach
from lockgen.runtime.bounded import read_file
from lockgen.runtime.errors import LockFormatError, LockgenError

if TYPE_CHECKING:
    from lockgen.resolve.gate import Gate
    from lockgen.resolve.provenance import Provenance

__all__ = ["Builds", "CellRun", "committed", "committed_pylock", "install_links", "read_committed"]


@dataclass
class Builds:
    """The ``allow-build`` packages that must be built from source because no version they may
    have offers a wheel for the target; learned by one cell, for that cell only (issue 17). Every
    other package is locked from wheels only (``--only-binary :all:``): uv prefers an older
    version with a wheel to a newer sdist-only one (CASES C26)."""

    _names: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def names(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._names)

    def add(self, names: Iterable[str]) -> None:
        with self._lock:
            self._names.update(names)

    @classmethod
    def learned(cls, root: Path, plans: Iterable[Plan]) -> Builds:
        """What the committed ``pylock.toml`` files show: ``allow-build`` packages locked from an
        sdist alone (so a warm run does not learn them again)."""
        pylocks = {}
        for plan in plans:
            pylock = committed_pylock(root, plan)
            if pylock is not None:
                pylocks[plan.cell.name] = pylock
        return cls.from_pylocks(plans, pylocks)

    @classmethod
    def from_pylocks(cls, plans: Iterable[Plan], pylocks: Mapping[str, Pylock]) -> Builds:
        """:meth:`learned` from already read committed pylocks (cell name -> pylock)."""
        builds = cls()
        for plan in plans:
            pylock = pylocks.get(plan.cell.name)
            if pylock is not None:
                builds.add(p.name for p in pylock.packages if p.name in plan.inputs.allow_build and _built(p))
        return builds


def _built(package: Package) -> bool:
    """Whether installing ``package`` builds it: an sdist alone, a VCS checkout, a project folder."""
    return bool(package.sdist and not package.wheels) or package.vcs is not None or package.directory is not None


@dataclass(frozen=True)
class CellRun:
    """What every uv run of one cell shares. ``config`` is the config file's name (locks say
    which file generated them)."""

    root: Path
    plan: Plan
    options: uv.Options
    mirrors: Mirrors
    runner: uv.RunnerLike
    config: str = "pyproject.toml"
    builds: Builds = field(default_factory=Builds)
    reach: Reach | None = None  # hosts the run's probe found down (C28); None: not probed
    verified: Verified = field(default_factory=Verified)  # file hashes computed in this run (and kept)
    locked: Mapping[str, str] | None = None  # name -> version of the committed pylock.toml, if read already
    provenance: Provenance | None = None  # the run's publisher lookups (PEP 740); None: none made
    gate: Gate | None = None  # the run's lock-time gate (malicious entries, PEP 792 status); None: none
    #: the ``allow-build`` packages the committed lock built from source: only the order of the
    #: first online resolution's uv runs (lockgen.resolve.pipeline._hinted), never what it resolves to
    hint: frozenset[str] = frozenset()

    @property
    def stop(self) -> threading.Event | None:
        """Set when the run is interrupted (the runner's event): downloads check it between
        chunks. None for a runner without one (a test's replaying runner)."""
        stopped: threading.Event | None = getattr(self.runner, "stopped", None)
        return stopped

    def read(self, path: str) -> str:
        """uv's output at ``path``, canonical; a login uv wrote into it is removed from the file too."""
        raw = (self.root / path).read_text(encoding="utf-8")
        clean = self.mirrors.scrub(raw)
        if clean != raw:
            (self.root / path).write_text(clean, encoding="utf-8")
        return self.mirrors.canonical(clean)

    def write(self, path: str, text: str) -> None:
        write_file(self.root, path, text)

    def header(self, kind: LayerKind, path: str, **fields: Any) -> Header:
        """The header of one of this cell's lock files."""
        plan = self.plan
        target = plan.target
        macos = f", macOS >= {target.macos}" if target.macos else ""
        return Header(
            cell=plan.cell.name, kind=kind, path=path, config=self.config, uv=plan.uv_version,
            target=f"{target.platform}, Python {target.python}{macos}, backend {plan.cell.backend}",
            input_hash=plan.input_hash, exclude_newer=plan.inputs.exclude_newer, exclude_newer_span=plan.exclude_newer_span,
            index_url=plan.inputs.index_url, **fields,
        )  # fmt: skip


def install_links(plan: Plan, links: Iterable[str], packages: Iterable[Package]) -> tuple[str, ...]:
    """The find-links an install of a resolution needs (a lock header's ``find-links``): ``links``
    (the find-links setting and sources uv read) and the per-package pages of the index-source
    packages it locked."""
    return tuple(dict.fromkeys([*links, *index_pages(plan.sources, [p.name for p in packages])]))


def committed_pylock(root: Path, plan: Plan) -> Pylock | None:
    """The committed ``pylock.toml`` of ``plan``'s cell, or None when there is none or it cannot
    be used. It is input from elsewhere (a fork's locks): read with the one bounded reader, only
    inside the locks folder after symlinks (a FIFO, ``/dev/zero``, a huge file or a link out is
    not read, and counts as no preferences)."""
    rel = pylockfile.pylock_path(plan.lock)
    try:
        path = confine_file(root, posixpath.dirname(plan.lock), rel, LockFormatError)
        return pylockfile.loads(decode(read_file(path, rel), rel), rel)
    except (OSError, LockgenError):
        return None


def committed(root: Path, plans: Sequence[Plan]) -> dict[str, dict[str, str]]:
    """:func:`read_committed`'s versions alone."""
    return read_committed(root, plans)[0]


def read_committed(root: Path, plans: Sequence[Plan]) -> tuple[dict[str, dict[str, str]], dict[str, frozenset[str]]]:
    """Each cell's committed ``pylock.toml``, read once: ``{cell: {name: version}}`` (uv's
    preferences, the pages to prefetch). Only these small tables are kept (memory flat in
    cells). What a committed lock was built from is not carried into the run: each cell learns
    its own builds (issue 17: a build learned in one cell or an earlier run made another cell
    lock an sdist, so a full, a forced and a lone run differed); the second mapping, ``{cell:
    allow-build packages its lock built}``, is only a hint of the order in which the cell's first
    resolution runs uv (:attr:`CellRun.hint`), checked by the cell itself."""
    locked: dict[str, dict[str, str]] = {}
    built: dict[str, frozenset[str]] = {}
    for plan in plans:
        pylock = committed_pylock(root, plan)
        if pylock is None:
            continue
        pylock = pylockfile.main_only(pylock)  # the main lock's versions: a layer's extras are not preferences
        locked[plan.cell.name] = {sys.intern(p.name): sys.intern(str(p.version)) for p in pylock.packages if p.version}
        hint = frozenset(p.name for p in pylock.packages if p.name in plan.inputs.allow_build and _built(p))
        if hint:
            built[plan.cell.name] = hint
    return locked, built
