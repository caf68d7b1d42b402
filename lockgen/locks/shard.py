"""Shards: split the cells of a run among CI runners, then merge what they wrote.

``lockgen all --shard I/N`` locks shard I of N (1-based) and ``lockgen matrix --json --shard I/N``
lists it. :func:`assign` deals the selected cells in matrix order into N contiguous blocks whose
sizes differ by at most one (the first ``M mod N`` shards take one more), counting only the cells
that resolve: neighbouring cells share their os and sources, so a shard's cells reuse the index
pages its first cell fetched (:mod:`lockgen.resolve.freshness`); round-robin would make every
cell of a shard fetch them again. An alias goes with the cell it reuses; skipped cells, which
resolve nothing, are listed in shard 1. Every cell is in exactly one shard.

A shard run writes a *shard manifest*: the manifest of its own cells only, with ``"shard": "I/N"``
(:func:`shard_manifest_text`), so :func:`merge` knows which cells each folder holds even though a
CI checkout also brings the other cells' committed locks. ``lockgen merge DIR…`` (each DIR a shard's
``locks/`` folder) copies each cell's files from the shard that owns it into the project's locks
folder, removes locks of cells the matrix no longer resolves, and writes the one manifest a single
``lockgen all`` writes: the manifest is a function of config, locks and recorded failures
(:meth:`lockgen.project.Project.manifest_text`), so the bytes are the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lockgen.runtime.errors import UsageError
from lockgen.locks import manifest, store
from lockgen.locks.lock import normalized

if TYPE_CHECKING:
    from lockgen.config import Config
    from lockgen.plan.matrix import Cell
    from lockgen.plan.plan import Plan

__all__ = ["MergeResult", "Project", "Shard", "assign", "merge", "select", "shard_manifest_text"]


class Project(Protocol):
    """What the shard engine needs of a loaded project (:class:`lockgen.project.Project`, a layer
    above the locks: the engine is handed one, it does not load one)."""

    @property
    def root(self) -> Path: ...
    @property
    def config(self) -> Config: ...
    @property
    def cells(self) -> tuple[Cell, ...]: ...
    def plans(self, cells: Sequence[Cell]) -> list[Plan]: ...
    def rows(self, plans: Sequence[Plan] = ()) -> list[manifest.Row]: ...
    def detect_rules(self) -> dict[str, Any] | None: ...
    def manifest_text(
        self, failed: dict[str, str] | None = None, root: Path | None = None, coverage: Mapping[str, Any] | None = None
    ) -> str: ...
    def coverage(self, read: Any = None, previous: Mapping[str, Any] | None = None) -> dict[str, Any]: ...

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``total`` (1-based), as ``--shard I/N`` spells it."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/4"`` -> ``Shard(2, 4)``. Raises :class:`UsageError` unless ``1 <= I <= N``."""
        match = _SPEC.match(text)
        if not match:
            raise UsageError(f"--shard {text!r}: expected I/N, shard I of N counted from 1 (e.g. --shard 2/4)")
        index, total = int(match[1]), int(match[2])
        if total < 1 or not 1 <= index <= total:
            raise UsageError(f"--shard {text}: I must be between 1 and N (N at least 1)")
        return cls(index, total)


def assign(cells: Sequence[Cell], total: int) -> dict[str, int]:
    """``{cell name: shard}`` (1-based) for ``cells`` in matrix order: the cells that resolve in
    ``total`` contiguous blocks of sizes differing by at most one; an alias in its cell's shard
    (shard 1 when that cell is not in ``cells`` or resolves nothing); skipped cells in shard 1."""
    resolved = [c for c in cells if c.resolves]
    size, extra = divmod(len(resolved), total)
    shards: dict[str, int] = {}
    start = 0
    for index in range(total):
        end = start + size + (1 if index < extra else 0)
        shards.update((c.name, index + 1) for c in resolved[start:end])
        start = end
    for cell in cells:
        if cell.name not in shards:
            shards[cell.name] = shards.get(cell.settings.alias or "", 1)
    return shards


def select(cells: Sequence[Cell], shard: Shard) -> list[Cell]:
    """The ``cells`` of ``shard``, in matrix order (see :func:`assign`); may be empty."""
    shards = assign(cells, shard.total)
    return [c for c in cells if shards[c.name] == shard.index]


def shard_manifest_text(
    project: Project,
    cells: Sequence[str],
    failed: Mapping[str, str],
    shard: Shard,
    coverage: Mapping[str, Any] | None = None,
) -> str:
    """The manifest a shard run writes: the entries of its ``cells`` (as the project's manifest
    has them, with their GPU ``coverage``) with ``failed`` (cell -> reason) and ``"shard": "I/N"``."""
    rows = [r for r in project.rows() if r.name in set(cells)]
    data = manifest.build(project.root, rows, project.detect_rules(), failed, strict=False, coverage=coverage)
    return manifest.dumps({**data, "shard": str(shard)})


# --------------------------------------------------------------------------- merge


@dataclass(frozen=True)
class _Part:
    """What one shard folder holds for the merge: its cells (those its manifest lists, except
    skipped and alias entries) and their recorded failures."""

    folder: Path
    shard: str
    cells: frozenset[str]
    failed: Mapping[str, str]


@dataclass
class MergeResult:
    """What :func:`merge` did: per cell ``changed``/``unchanged``, cells recorded as failed by
    their shard, lock paths removed (cells the matrix no longer resolves)."""

    cells: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    report: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0


def _shard_coverage(folder: Path) -> dict[str, Any]:
    """The GPU cells' coverage records of a shard folder's manifest (checked against the merged
    pylocks by :meth:`lockgen.project.Project.coverage` before they are used)."""
    return manifest.recorded_coverage(manifest.read(folder / manifest.MANIFEST_NAME))


def _part(folder: Path) -> _Part:
    """Read a shard folder's manifest. Raises :class:`UsageError` when it has none or it is not
    a shard manifest."""
    if not folder.is_dir():
        raise UsageError(
            f"{folder}: {'is not a folder' if folder.exists() else 'does not exist'}; "
            "pass the locks folder a `lockgen all --shard I/N` run wrote"
        )
    text = manifest.read(folder / manifest.MANIFEST_NAME)
    if text is None:
        raise UsageError(
            f"{folder}: no {manifest.MANIFEST_NAME}; pass the locks folder a `lockgen all --shard I/N` run wrote"
        )
    try:
        data: dict[str, Any] = json.loads(text)
        shard = data["shard"]
        cells = frozenset(
            name for name, entry in data["cells"].items() if entry.get("status") not in ("skipped", "alias")
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UsageError(
            f'{folder}/{manifest.MANIFEST_NAME}: not the manifest of a shard run (no "shard"); '
            "write the shards with `lockgen all --shard I/N`"
        ) from None
    return _Part(folder, str(shard), cells, manifest.failures(text))


def _cell_files(folder: Path, cell: str) -> dict[str, str]:
    """``{path relative to the locks folder: text (LF)}`` of a cell in a locks ``folder``: its
    main lock and every file of its folder (pylock.toml, layers), temporaries left out. Raises
    :class:`UsageError` naming a file that is not UTF-8 text."""
    sub = folder / cell
    paths = [folder / f"{cell}.txt"] + (sorted(sub.rglob("*")) if sub.is_dir() else [])
    files: dict[str, str] = {}
    for path in paths:
        if path.is_file() and not path.name.startswith("."):
            try:
                files[path.relative_to(folder).as_posix()] = normalized(path.read_bytes().decode("utf-8"))
            except UnicodeDecodeError:
                raise UsageError(f"{path}: not UTF-8 text, so not a lock lockgen wrote") from None
    return files


def _owners(project: Project, parts: Sequence[_Part]) -> dict[str, tuple[_Part, dict[str, str]]]:
    """The shard folder and files of every cell the matrix resolves. Raises :class:`UsageError`
    naming the cell and both folders when two shards hold different files for it, and naming
    the cells no shard holds."""
    wanted = [c.name for c in project.cells if c.resolves]
    owners: dict[str, tuple[_Part, dict[str, str]]] = {}
    for part in parts:
        for cell in sorted(part.cells & set(wanted)):
            files = _cell_files(part.folder, cell)
            if cell in owners and owners[cell][1] != files:
                other = owners[cell][0]
                raise UsageError(
                    f"cell {cell}: shards {other.folder} ({other.shard}) and {part.folder} ({part.shard}) hold "
                    "different files for it; merge the folders of one run of the shards"
                )
            owners.setdefault(cell, (part, files))
    missing = [name for name in wanted if name not in owners]
    if missing:
        raise UsageError(
            f"no shard holds cell{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
            "pass the locks folder of every shard (lockgen all --shard I/N for I = 1..N)"
        )
    return owners


def _check_inputs(project: Project, owners: Mapping[str, tuple[_Part, Mapping[str, str]]]) -> None:
    """Refuse cells whose shard lock was made from other inputs than the project's: a main lock
    whose input hash is not its plan's (a shard run on an older commit, or with another config or
    templates) would be merged as current and ``check`` would then call it stale. A cell its shard
    recorded as failed, or holding no main lock, keeps the project's files and is not checked.
    Raises :class:`UsageError` naming each folder and its cells; renders templates (the plans),
    runs nothing."""
    from lockgen.runtime.errors import LockFormatError
    from lockgen.locks.lock import Lock

    locked = {
        cell: (part, files[f"{cell}.txt"])
        for cell, (part, files) in owners.items()
        if cell not in part.failed and f"{cell}.txt" in files
    }
    plans = {p.cell.name: p for p in project.plans([c for c in project.cells if c.name in locked])}
    other: dict[Path, list[str]] = {}
    for cell, (part, text) in sorted(locked.items()):
        try:
            input_hash = Lock.parse(text, f"{part.folder}/{cell}.txt").header.input_hash
        except LockFormatError:
            input_hash = None
        if input_hash != plans[cell].input_hash:
            other.setdefault(part.folder, []).append(cell)
    if other:
        raise UsageError(*(
            f"{folder}: cell{'s' if len(cells) > 1 else ''} {', '.join(cells)} locked from other inputs than "
            "this project's (the input hash is not the current plan's: a shard of an older commit, config or "
            "templates); re-run that shard (lockgen all --shard I/N) on this commit, then merge again"
            for folder, cells in other.items()
        ))  # fmt: skip


def merge(project: Project, folders: Sequence[Path], wait: bool = False) -> MergeResult:
    """``lockgen merge DIR…``: write every resolved cell's files from the shard folder that holds
    it into the project's locks folder, remove locks of cells the matrix no longer resolves, and
    write the manifest (the bytes a single ``lockgen all`` writes). Holds the project's run lock.
    A cell whose shard recorded it as failed and holds no main lock keeps the project's files.
    Raises :class:`UsageError` (nothing written) for a folder that does not exist or is not a
    shard's, two shards disagreeing on a cell, a cell no shard holds, or a cell locked from other
    inputs than the project's (:func:`_check_inputs`); :class:`~lockgen.locks.store.Busy`;
    :class:`~lockgen.runtime.errors.ConfigError`/:class:`~lockgen.runtime.errors.TemplateError` from the plans."""
    from lockgen.locks.folder import orphan_cells
    from lockgen.locks.lockset import LockSet
    from lockgen.locks.report import change_report

    parts = [_part(Path(folder)) for folder in folders]
    if not parts:
        raise UsageError("lockgen merge needs at least one shard folder")
    owners = _owners(project, parts)
    _check_inputs(project, owners)
    root, locks = project.root, project.config.locks
    result = MergeResult()
    with store.ProjectLock(root, wait=wait):
        store.recover(root)
        store.clean_temporaries(root, locks)
        before = LockSet.from_folder(root / locks, locks)
        for cell, (part, files) in sorted(owners.items()):
            if cell in part.failed:
                result.failed[cell] = part.failed[cell]
            if f"{cell}.txt" not in files:
                result.cells[cell] = "unchanged"
                continue
            texts = {f"{locks}/{rel}": text for rel, text in files.items()}
            folder = root / locks / cell
            stale = [
                p.relative_to(root).as_posix() for p in sorted(folder.rglob("*")) if p.is_file()
                and not p.name.startswith(".") and p.relative_to(root).as_posix() not in texts
            ] if folder.is_dir() else []  # fmt: skip
            changed = store.replace_files(root, cell, texts, stale)
            result.cells[cell] = "changed" if changed else "unchanged"
        resolved = {c.name for c in project.cells if c.resolves}
        for cell, paths in orphan_cells(root, locks, resolved).items():
            store.remove_cell(root, cell, paths)
            result.removed += [path.rstrip("/") for path in paths]
        shards = {c: r for part in parts for c, r in _shard_coverage(part.folder).items() if c in part.cells}
        coverage = project.coverage(previous=shards)  # the shards' records of the cells they locked
        store.write_text(root / manifest.manifest_path(locks), project.manifest_text(result.failed, coverage=coverage))
        after = LockSet.from_folder(root / locks, locks)
        result.report = change_report(before, after, sorted(owners)).lines()
    return result
