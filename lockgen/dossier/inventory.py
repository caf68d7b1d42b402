"""What a set of locks ships: every locked package of every cell, main lock and layers.

An :class:`Inventory` is read from the project's locks folder through the lock model
(:class:`~lockgen.locks.lockset.LockSet`): one :class:`Locked` record per package per lock, with
the artifacts its ``pylock.toml`` lists (URL, sha256) for the main lock, and the hashes alone for
a layer (layer locks have no pylock). Versions with a local label (``2.13.0+cu130``) keep it;
:attr:`Locked.public` is the public version advisories are judged by (issue 22).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.pylock import Package
from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.locks import pylockfile
from lockgen.locks.lock import Entry
from lockgen.locks.lockset import MAIN, CellLocks, LockSet
from lockgen.runtime.errors import LockFormatError, UsageError
from lockgen.runtime.words import did_you_mean

__all__ = ["Artifact", "Inventory", "Locked", "from_lockset", "read"]


@dataclass(frozen=True, kw_only=True)
class Artifact:
    """One file of a locked package: ``kind`` (``wheel``, ``sdist``, ``archive``), file ``name``,
    canonical ``url`` (None: a project-relative path, or only a hash is known) and hex ``sha256``."""

    kind: str
    name: str
    url: str | None
    sha256: str | None


@dataclass(frozen=True, kw_only=True)
class Locked:
    """A package as one lock of one cell has it. ``layer``: ``main`` or the layer's name;
    ``lock``: the project-relative lock path; ``line``: the 1-based line of its requirement in
    that lock; ``artifacts``: from the cell's pylock (main) or the lock's hashes (layers)."""

    cell: str
    layer: str
    lock: str
    line: int
    entry: Entry
    artifacts: tuple[Artifact, ...] = ()
    index_url: str | None = None  # the lock's default index (its header's index-url)

    @property
    def name(self) -> NormalizedName:
        return self.entry.name

    @property
    def version(self) -> Version | None:
        return self.entry.version

    @property
    def public(self) -> Version | None:
        """The version without its local label (``2.13.0`` of ``2.13.0+cu130``): what indexes and
        advisories name. None for a package without a version (a project folder)."""
        return Version(self.entry.version.public) if self.entry.version is not None else None

    @property
    def registry(self) -> bool:
        """Whether the package is a release of a public project (a version, not a VCS checkout
        or a project folder): what advisories can be about."""
        url = self.entry.url or ""
        return self.entry.version is not None and not self.entry.editable and "+" not in url.split("://")[0]


@dataclass(frozen=True)
class Inventory:
    """The packages of the chosen ``cells`` (in name order) of ``locks``."""

    locks: LockSet
    cells: tuple[str, ...]
    packages: tuple[Locked, ...]

    def of_cell(self, cell: str) -> list[Locked]:
        return [p for p in self.packages if p.cell == cell]

    def keys(self) -> list[tuple[NormalizedName, Version]]:
        """Every distinct ``(name, public version)`` of a registry package, sorted: what is asked
        of an advisory source, once for the whole matrix."""
        found = {(p.name, p.public) for p in self.packages if p.registry and p.public is not None}
        return sorted((n, v) for n, v in found if v is not None)

    def layers(self, cell: str) -> list[str]:
        """The cell's layer names in install order (main first)."""
        return [MAIN, *self.locks.cells[cell].layers]


def read(root: Path, locks: str, cells: Sequence[str] = (), *, artifacts: bool = True) -> Inventory:
    """The inventory of the project at ``root`` whose locks folder is ``locks`` (project-relative),
    limited to ``cells`` when given; without ``artifacts`` the pylocks are not read (an audit needs
    names and versions only) and main packages carry their hashes alone. Raises :class:`UsageError` naming an unknown cell (with the
    closest names), and :class:`LockFormatError` naming every lock that cannot be read."""
    return from_lockset(LockSet.from_folder(root / locks, locks, label=locks, pylocks=artifacts), cells, locks)


def from_lockset(lockset: LockSet, cells: Sequence[str] = (), locks: str = "locks") -> Inventory:
    """The inventory of a lock set read elsewhere (a git revision, a folder): see :func:`read`."""
    known = sorted(lockset.cells)
    for name in cells:
        if name not in lockset.cells:
            why = lockset.statuses.get(name)
            if why is not None:
                raise UsageError(f"cell {name} has no lock of its own ({why.text()})")
            hint = did_you_mean(name, known) or f"; cells with locks: {', '.join(known) or 'none'}"
            raise UsageError(f"no lock for cell {name} in {locks}/{hint}")
    chosen = tuple(sorted(set(cells))) if cells else tuple(known)
    problems = [p for p in lockset.problems if p.cell is None or p.cell in chosen or not cells]
    problems = [p for p in problems if p.layer != "manifest.json"]
    if problems:
        raise LockFormatError(*(p.message for p in problems))
    packages = [item for cell in chosen for item in _cell(lockset.cells[cell])]
    return Inventory(locks=lockset.only(chosen), cells=chosen, packages=tuple(packages))


def _cell(cell: CellLocks) -> Iterator[Locked]:
    pylock = {p.name: p for p in pylockfile.main_only(cell.pylock).packages} if cell.pylock is not None else {}
    for layer, lock in [(MAIN, cell.main), *cell.layers.items()]:
        lines = lock.entry_lines()
        for entry in lock.entries:
            package = pylock.get(entry.name) if layer == MAIN else None
            artifacts = _artifacts(package) if package is not None else _hashed(entry)
            yield Locked(
                cell=cell.name, layer=layer, lock=lock.header.path, line=lines.get(entry.name, 1), entry=entry,
                artifacts=artifacts, index_url=lock.header.index_url,
            )  # fmt: skip


def _artifacts(package: Package) -> tuple[Artifact, ...]:
    found = []
    for kind, artifact in pylockfile.artifacts(package):
        found.append(
            Artifact(
                kind=kind,
                name=pylockfile.file_name(artifact),
                url=getattr(artifact, "url", None),
                sha256=artifact.hashes.get("sha256"),
            )
        )
    return tuple(sorted(found, key=lambda a: (a.kind != "wheel", a.name)))


def _hashed(entry: Entry) -> tuple[Artifact, ...]:
    """A layer entry's artifacts: only its hashes are known (and a direct URL, if it has one)."""
    if entry.url is not None and len(entry.hashes) <= 1:
        name = entry.url.rsplit("/", 1)[-1]
        return (
            Artifact(kind="archive", name=name, url=entry.url, sha256=_hex(entry.hashes[0]) if entry.hashes else None),
        )
    return tuple(Artifact(kind="file", name="", url=None, sha256=_hex(h)) for h in entry.hashes)


def _hex(value: str) -> str:
    return value.removeprefix("sha256:")
