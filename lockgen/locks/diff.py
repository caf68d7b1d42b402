"""The changes between two sets of locks, as records a reviewer can group and read.

:func:`diff` compares two :class:`~lockgen.locks.lockset.LockSet` cell by cell, and in each cell
the main lock and every layer lock package by package; :func:`group` merges the same change
across cells (``matplotlib 3.10.1 → 3.10.3`` in 12 of 12 cells). The formats live in
:mod:`lockgen.locks.diffformat`.

Kinds (:class:`Kind`), per package in a cell's main lock or one of its layers:

* ``upgrade``, ``downgrade`` (flagged), ``added``, ``removed``;
* ``label``: the same public version with another local label (``2.13.0+cu126 → 2.13.0+cu130``);
* ``source``: where its files come from changed (index, find-links, direct URL; see
  :mod:`lockgen.locks._origin`). With the version unchanged any change of place counts; when the
  version moved too, any change but of a folder named after the version or its label (a release
  folder moves with its version); two repositories on one host are two places (issue 16).
  Where its files come from is known from the cell's ``pylock.toml`` (its artifacts' URLs) or a
  direct URL; a layer lock (or a lock copied without its pylock) only lists, in its header, the
  pages an installer may read for all of its packages. Judged by that list alone, a package whose
  lines are identical (version, hashes) is no change, and one whose lines changed moved only when
  no page is on both sides: a page added to the header for another package (issue 18) moves
  nothing;
* ``files``: same version, same source, more files (every old hash kept): not flagged;
* ``hash``: same version, same source, other hashes (an old one gone or replaced): flagged, a re-uploaded file or a tampered
  index;
* ``vcs``: a VCS entry's commit changed (its repository changing is a ``source`` change);
* ``publisher`` (flagged): a main package's PEP 740 publisher identities, as the pylocks record
  them, changed or disappeared (:func:`lockgen.locks.publishers.changes`): the project is now
  published by another repository or workflow, or without attestations.

Per cell: ``cell-added``, ``cell-removed`` (``old``/``new`` carry the manifest status of a cell
listed without a lock, e.g. ``failed: …``); ``layer-added``, ``layer-removed`` (with an
``added``/``removed`` change per package in it); ``unavailable`` (flagged: an optional layer the
cell had, or was asked for, is now recorded as unavailable in the main header; ``new`` is the
reason), ``available`` (it is back); ``unreadable``: a file that could not be read (flagged when
it is the new side).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.pylock import Package
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, NormalizedName, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from lockgen.locks import _origin, publishers
from lockgen.locks.lock import Entry, Lock
from lockgen.locks.lockset import MAIN, CellLocks, LockSet, Unreadable

__all__ = ["Change", "Group", "Kind", "diff", "group"]


class Kind(str, enum.Enum):
    """What changed; the value is what the formats and JSON say."""

    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    ADDED = "added"
    REMOVED = "removed"
    LABEL = "label"
    SOURCE = "source"
    HASH = "hash"
    FILES = "files"  # same version and source, files added, every old hash kept (a newer wheel, a new lock format)
    VCS = "vcs"
    PUBLISHER = "publisher"
    CELL_ADDED = "cell-added"
    CELL_REMOVED = "cell-removed"
    LAYER_ADDED = "layer-added"
    LAYER_REMOVED = "layer-removed"
    UNAVAILABLE = "unavailable"
    AVAILABLE = "available"
    UNREADABLE = "unreadable"

    def __str__(self) -> str:
        return self.value


_ORDER = {kind: i for i, kind in enumerate(Kind)}
_FLAGGED = frozenset({Kind.DOWNGRADE, Kind.HASH, Kind.UNAVAILABLE, Kind.PUBLISHER})


@dataclass(frozen=True, kw_only=True)
class Change:
    """One change in one cell. ``package``: None for a cell- or layer-level change; ``old`` /
    ``new``: versions (or places, commits, reasons; "" for none); ``layer``: ``main`` or the layer
    name; ``total``: the number of cells of the set it counts against (the new set; the old one
    for a removed cell); ``detail``: more for this cell only (which file's hash changed), not
    part of what :func:`group` merges on."""

    package: NormalizedName | None
    kind: Kind
    old: str
    new: str
    cell: str
    layer: str = MAIN
    flagged: bool = False
    total: int = 0
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Group:
    """Identical changes (``package``, ``kind``, ``old``, ``new``, ``layer``) across ``cells``
    (sorted) of ``total`` cells; ``details`` are the members' ``(cell, detail)``, when any."""

    package: NormalizedName | None
    kind: Kind
    old: str
    new: str
    layer: str
    flagged: bool
    cells: tuple[str, ...]
    total: int
    details: tuple[tuple[str, str], ...] = ()

    @property
    def count(self) -> int:
        return len(self.cells)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: ``package``, ``kind``, ``old``, ``new``, ``layer``, ``flagged``, ``cells``,
        ``count``, ``total``, ``details`` (``{cell: detail}``)."""
        return {
            "package": self.package, "kind": self.kind.value, "old": self.old, "new": self.new, "layer": self.layer,
            "flagged": self.flagged, "cells": list(self.cells), "count": self.count, "total": self.total,
            "details": dict(self.details),
        }  # fmt: skip


def group(changes: Iterable[Change]) -> list[Group]:
    """Merge identical changes across cells. Order: flagged first, then cell- and layer-level
    changes, then by package, kind, layer, old, new."""
    buckets: dict[tuple[str | None, Kind, str, str, str], list[Change]] = {}
    for change in changes:
        buckets.setdefault((change.package, change.kind, change.old, change.new, change.layer), []).append(change)
    return sorted((_merged(members) for members in buckets.values()), key=_group_order)


def _merged(members: Sequence[Change]) -> Group:
    first = members[0]
    return Group(
        package=first.package, kind=first.kind, old=first.old, new=first.new, layer=first.layer,
        flagged=any(m.flagged for m in members), cells=tuple(sorted({m.cell for m in members})),
        total=max(m.total for m in members), details=tuple(sorted({(m.cell, m.detail) for m in members if m.detail})),
    )  # fmt: skip


def _group_order(g: Group) -> tuple[bool, bool, str, int, bool, str, str, str]:
    return (
        not g.flagged,
        g.package is not None,
        g.package or "",
        _ORDER[g.kind],
        g.layer != MAIN,
        g.layer,
        g.old,
        g.new,
    )


def diff(old: LockSet, new: LockSet) -> list[Change]:
    """Every change from ``old`` to ``new``, sorted by cell, layer (main first), package, kind."""
    totals = (len(old.cell_names()), len(new.cell_names()))
    changes: list[Change] = []
    for cell in sorted(old.cell_names() | new.cell_names()):
        changes += _Cell(cell, old, new, totals).changes()
    return sorted(changes, key=lambda c: (c.cell, c.layer != MAIN, c.layer, c.package or "", _ORDER[c.kind]))


@dataclass
class _Cell:
    """The changes of one cell."""

    name: str
    old: LockSet
    new: LockSet
    totals: tuple[int, int]
    out: list[Change] = field(default_factory=list)

    def add(self, package: str | None, kind: Kind, old: str, new: str, layer: str = MAIN, detail: str = "") -> None:
        self.out.append(Change(
            package=canonicalize_name(package) if package is not None else None, kind=kind, old=old, new=new,
            cell=self.name, layer=layer, flagged=kind in _FLAGGED, detail=detail,
            total=self.totals[0] if kind is Kind.CELL_REMOVED else self.totals[1],
        ))  # fmt: skip

    def changes(self) -> list[Change]:
        before, after = self.old.cells.get(self.name), self.new.cells.get(self.name)
        broken = self.unreadable()
        if before is not None and after is not None:
            self.compare(before, after)
        elif before is not None and MAIN not in broken:
            status = self.new.statuses.get(self.name)
            self.add(None, Kind.CELL_REMOVED, "", status.short() if status else "")
        elif after is not None and MAIN not in broken:
            status = self.old.statuses.get(self.name)
            # the old status only: a reason the cell no longer has is not repeated (issue 17)
            self.add(None, Kind.CELL_ADDED, status.status if status else "", "")
        return self.out

    def unreadable(self) -> set[str]:
        """Record files unreadable on one side only (or changed while unreadable); the layers
        (``main``, names) they were, on either side."""
        before, after = _problems(self.old.problems, self.name), _problems(self.new.problems, self.name)
        for key, problem in after.items():
            if key not in before or before[key].sha256 != problem.sha256:
                self.out.append(Change(
                    package=None, kind=Kind.UNREADABLE, old="", new=problem.reason, cell=self.name, layer=problem.layer,
                    flagged=True, total=self.totals[1], detail=problem.message,
                ))  # fmt: skip
        for key, problem in before.items():
            if key not in after:
                self.out.append(Change(
                    package=None, kind=Kind.UNREADABLE, old=problem.reason, new="", cell=self.name, layer=problem.layer,
                    total=self.totals[1], detail=problem.message,
                ))  # fmt: skip
        return set(before) | set(after)

    def compare(self, before: CellLocks, after: CellLocks) -> None:
        both_pylocks = before.pylock is not None and after.pylock is not None
        self.entries(MAIN, before.main, after.main, _packages(before, both_pylocks), _packages(after, both_pylocks))
        for package, old, new in publishers.changes(before.pylock, after.pylock):
            self.add(package, Kind.PUBLISHER, old, new)
        gone = [n for n in before.layers if n not in after.layers]
        came = [n for n in after.layers if n not in before.layers]
        explained = self.availability(before, after, gone, came)
        for name in before.layers:
            if name in after.layers:
                self.entries(name, before.layers[name], after.layers[name], {}, {})
        for name in gone:
            if name not in explained:
                self.add(None, Kind.LAYER_REMOVED, str(before.layers[name].header.kind), "", name)
                self.entries(name, before.layers[name], None, {}, {})
        for name in came:
            if name not in explained:
                self.add(None, Kind.LAYER_ADDED, "", str(after.layers[name].header.kind), name)
                self.entries(name, None, after.layers[name], {}, {})

    def availability(self, before: CellLocks, after: CellLocks, gone: list[str], came: list[str]) -> set[str]:
        """Record optional entries that became unavailable or available; the names of the layers
        that explains (gone or come with them, so not reported again)."""
        was = {u.requirement: u.reason for u in before.main.header.unavailable}
        now = {u.requirement: u.reason for u in after.main.header.unavailable}
        explained: set[str] = set()
        for requirement in sorted(now.keys() - was.keys()):
            name = _requirement_name(requirement)
            layer = _layer_with(before, gone, name)
            old = _shown(before.layers[layer].entry(name) if layer and name else None)
            self.add(name, Kind.UNAVAILABLE, old, now[requirement], layer or f"optional-{name or requirement}")
            explained.update([layer] if layer else [])
        for requirement in sorted(was.keys() - now.keys()):
            name = _requirement_name(requirement)
            layer = _layer_with(after, came, name)
            if layer and name:
                self.add(name, Kind.AVAILABLE, was[requirement], _shown(after.layers[layer].entry(name)), layer)
                explained.add(layer)
        return explained

    def entries(self, layer: str, before: Lock | None, after: Lock | None,
                old_pl: Mapping[str, Package], new_pl: Mapping[str, Package]) -> None:  # fmt: skip
        """Record the package changes between two locks of the cell (None: the layer is absent)."""
        a = {e.name: e for e in before.entries} if before else {}
        b = {e.name: e for e in after.entries} if after else {}
        for name in sorted(a.keys() | b.keys()):
            if name not in b:
                self.add(name, Kind.REMOVED, _shown(a[name], old_pl.get(name)), "", layer)
            elif name not in a:
                self.add(name, Kind.ADDED, "", _shown(b[name], new_pl.get(name)), layer)
            elif before is not None and after is not None:
                self.package(layer, _Side(a[name], before, old_pl.get(name)), _Side(b[name], after, new_pl.get(name)))

    def package(self, layer: str, a: _Side, b: _Side) -> None:
        """Record what changed of one package present on both sides."""
        name = a.entry.name
        va, vb = a.version(), b.version()
        if a.vcs() is not None or b.vcs() is not None:
            ra, rb = a.vcs(), b.vcs()
            if ra is not None and rb is not None and ra[0] == rb[0]:
                if ra[1] != rb[1]:
                    self.add(name, Kind.VCS, ra[1], rb[1], layer, detail=ra[0])
            elif ra != rb:
                self.add(name, Kind.SOURCE, _vcs_place(a, ra), _vcs_place(b, rb), layer)
            return
        if va is not None and vb is not None and va != vb:
            self.add(name, _version_kind(va, vb), str(va), str(vb), layer)
            if _moved(a, b, versions=(va, vb)):
                self.add(name, Kind.SOURCE, _places(a.sources()), _places(b.sources()), layer)
        elif _moved(a, b) or ((va is None or vb is None) and a.entry.url != b.entry.url):
            self.add(name, Kind.SOURCE, _places(a.sources()), _places(b.sources()), layer)
        elif set(a.entry.hashes) != set(b.entry.hashes):
            kind = Kind.FILES if set(a.entry.hashes) < set(b.entry.hashes) else Kind.HASH  # files added, or changed
            self.add(
                name, kind, _shown(a.entry, a.package), _shown(b.entry, b.package), layer, detail=_hash_detail(a, b)
            )


@dataclass(frozen=True)
class _Side:
    """A package on one side: its entry, the lock holding it and its pylock package, if any."""

    entry: Entry
    lock: Lock
    package: Package | None

    def version(self) -> Version | None:
        return _origin.version(self.entry, self.package)

    def sources(self) -> frozenset[str]:
        return _origin.sources(self.entry, self.lock.header, self.package)

    def vcs(self) -> tuple[str, str] | None:
        return _origin.vcs(self.entry)

    def exact(self) -> bool:
        """Whether :meth:`sources` says where this package's files are (not a header's pages)."""
        return _origin.exact(self.entry, self.package)


def _moved(a: _Side, b: _Side, versions: tuple[Version, Version] | None = None) -> bool:
    """Whether the package's files come from elsewhere; with ``versions`` (old, new: the version
    moved) a folder named after the version or its label may move with it
    (:func:`lockgen.locks._origin.unversioned`). See the module docstring for a side that knows
    only its lock header's pages."""
    old, new = a.sources(), b.sources()
    if versions is not None:
        old, new = _origin.unversioned(old, versions[0]), _origin.unversioned(new, versions[1])
    if a.exact() and b.exact():
        return old != new
    if _same_lines(a.entry, b.entry):
        return False
    return not old & new


def _same_lines(a: Entry, b: Entry) -> bool:
    """Whether two entries are written as the same lines (``# via`` aside: who asks for a
    package is no change of the package)."""
    return (a.name, a.version, a.extras, a.url, a.editable, a.hashes) == (
        b.name,
        b.version,
        b.extras,
        b.url,
        b.editable,
        b.hashes,
    )


def _problems(problems: Sequence[Unreadable], cell: str) -> dict[str, Unreadable]:
    """The cell's unreadable files by layer (``main``, a layer name, ``pylock``)."""
    return {p.layer: p for p in problems if p.cell == cell}


def _packages(cell: CellLocks, use: bool) -> dict[str, Package]:
    """The cell's pylock packages by name; empty unless ``use`` (both sides have a pylock, so
    their sources are judged alike)."""
    if not use or cell.pylock is None:
        return {}
    return {p.name: p for p in cell.pylock.packages}


def _version_kind(old: Version, new: Version) -> Kind:
    if Version(old.public) == Version(new.public):
        return Kind.LABEL
    return Kind.UPGRADE if new > old else Kind.DOWNGRADE


def _shown(entry: Entry | None, package: Package | None = None) -> str:
    """An entry as a change shows it: its version, else its URL (a local path, a VCS URL)."""
    if entry is None:
        return ""
    found = _origin.version(entry, package)
    return str(found) if found is not None else entry.url or ""


def _vcs_place(side: _Side, repo: tuple[str, str] | None) -> str:
    return f"{repo[0]}@{repo[1]}" if repo is not None else _places(side.sources())


def _places(places: frozenset[str]) -> str:
    return ", ".join(sorted(places)) or "(none)"


def _requirement_name(requirement: str) -> NormalizedName | None:
    """The project an optional entry names: a requirement's name, or a wheel URL's project."""
    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement:
        pass
    try:
        return parse_wheel_filename(requirement.rsplit("/", 1)[-1].split("#")[0])[0]
    except InvalidWheelFilename:
        return None


def _layer_with(cell: CellLocks, names: Sequence[str], package: NormalizedName | None) -> str | None:
    """Of the optional layers ``names`` of ``cell``, the one for ``package``: named
    ``optional-<package>``, else holding it."""
    if package is None:
        return None
    for name in names:
        if name == f"optional-{package}":
            return name
    return next((n for n in names if cell.layers[n].entry(package) is not None), None)


def _hash_detail(a: _Side, b: _Side) -> str:
    """Which files' hashes changed (from the pylocks), else how the hash lists differ."""
    old, new = _origin.files(a.package), _origin.files(b.package)
    if old and new:
        changed = sorted(f for f in old.keys() & new.keys() if old[f] != new[f])
        parts = [f"sha256 of {', '.join(changed)} changed"] if changed else []
        parts += [f"new file {', '.join(sorted(new.keys() - old.keys()))}"] if new.keys() - old.keys() else []
        parts += [f"file gone {', '.join(sorted(old.keys() - new.keys()))}"] if old.keys() - new.keys() else []
        if parts:
            return "; ".join(parts)
    kept = len(set(a.entry.hashes) & set(b.entry.hashes))
    return f"{kept} of {len(a.entry.hashes)} hashes kept, {len(b.entry.hashes) - kept} new"
