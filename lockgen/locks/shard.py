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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lockgen.config import WORK
from lockgen.runtime.errors import InputError, LockFormatError, Problem, UsageError
from lockgen.runtime.bounded import read_file
from lockgen.locks import journal, manifest, manifestfile, store
from lockgen.locks.lock import LayerKind, Lock, decode, intact, normalized, text_sha256
from lockgen.locks.manifestfile import CellEntry
from lockgen.locks.paths import refs_problem
from lockgen.runtime.writing import write_error

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
    def coverage(
        self,
        read: Any = None,
        previous: Mapping[str, Any] | None = None,
        names: Sequence[str] | None = None,
        root: Path | None = None,
    ) -> dict[str, Any]: ...


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
    skipped and alias entries), their manifest entries and their recorded failures."""

    folder: Path
    shard: str
    cells: frozenset[str]
    entries: Mapping[str, CellEntry]
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


def _part(folder: Path, locks: str) -> _Part:
    """Read a shard folder's manifest into typed values (:mod:`lockgen.locks.manifestfile`: every
    cell name plain, every path where lockgen writes it). Raises :class:`UsageError` when it has
    none or it is not a shard manifest, :class:`InputError` naming each bad field."""
    if not folder.is_dir():
        raise UsageError(
            f"{folder}: {'is not a folder' if folder.exists() else 'does not exist'}; "
            "pass the locks folder a `lockgen all --shard I/N` run wrote"
        )
    path = folder / manifest.MANIFEST_NAME
    if path.is_symlink() or not path.is_file():
        raise UsageError(
            f"{folder}: no {manifest.MANIFEST_NAME}; pass the locks folder a `lockgen all --shard I/N` run wrote"
        )
    read = manifestfile.load(read_file(path, str(path)), str(path), locks)
    if read.shard is None:
        raise UsageError(
            f'{path}: not the manifest of a shard run (no "shard"); write the shards with `lockgen all --shard I/N`'
        )
    cells = frozenset(name for name, entry in read.cells.items() if entry.status not in ("skipped", "alias"))
    failed = {name: entry.reason or "failed" for name, entry in read.cells.items() if entry.status == "failed"}
    return _Part(folder, read.shard, cells, read.cells, failed)


#: A temporary a killed shard run may have left in a cell folder (``.<name>.<8 hex>.tmp``): skipped.
_TEMPORARY = re.compile(r"\..+\.[0-9a-f]{8}\.tmp")


def _cell_files(part: _Part, cell: str, locks: str) -> dict[str, str]:
    """``{path relative to the locks folder: text (LF)}`` of a cell in a shard folder, verified
    before anything is written (:func:`_verify`): its main lock and the files of its folder
    (``pylock.toml``, the layers its main lock lists). Raises :class:`InputError` naming the file:
    a symlink, a folder or an unknown name where a lock belongs, text that is not UTF-8, a lock
    that is not intact, a digest that is not the one its shard manifest or main lock lists."""
    folder = part.folder
    problems: list[str] = []
    files: dict[str, str] = {}
    main, sub = folder / f"{cell}.txt", folder / cell
    for path in [main] + (sorted(sub.iterdir()) if sub.is_dir() and not sub.is_symlink() else []):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            problems.append(f"{path}: a symlink; a shard holds plain files only")
        elif path.is_dir():
            problems.append(f"{path}: a folder inside the cell's folder; lockgen writes none there")
        elif path.is_file():
            if _TEMPORARY.fullmatch(path.name):
                continue
            try:
                files[rel] = normalized(decode(read_file(path, str(path)), str(path)))
            except LockFormatError as exc:
                problems.append(str(exc))
            except InputError as exc:  # over the size limit, or replaced by a FIFO meanwhile
                problems += [p.text() for p in exc.problems]
            except OSError as exc:
                problems.append(f"{path}: cannot read it ({exc.strerror or exc})")
        elif path.exists():
            problems.append(f"{path}: not a regular file (a FIFO or a device); a shard holds plain files only")
    entry = part.entries.get(cell)
    if f"{cell}.txt" not in files and entry is not None and entry.installable and not any(
        p.startswith(f"{main}:") for p in problems
    ):
        problems.append(f"{main}: missing, but {folder / manifest.MANIFEST_NAME} lists cell {cell} as {entry.status}")
    if sub.is_symlink():
        problems.append(f"{sub}: a symlink; a shard holds plain files only")
    if not problems and f"{cell}.txt" in files:
        problems += _verify(part, cell, files, locks)
    if problems:
        raise InputError(*(Problem(message=p) for p in problems))
    return files


def _verify(part: _Part, cell: str, files: Mapping[str, str], locks: str) -> list[str]:
    """Why the shard's files of ``cell`` are not the ones lockgen wrote for its manifest (empty:
    they are): the main lock parses, is intact (its ``content-sha256``), is the cell's and names
    its layers and pylock where lockgen writes them; each of those files is there, intact and has
    the digest the main lock lists; no other file is in the cell's folder; the shard manifest's
    sha256 of every layer is the file's."""
    folder = part.folder
    where = f"{folder}/{cell}.txt"
    text = files[f"{cell}.txt"]
    try:
        main = Lock.parse(text, where)
    except LockFormatError as exc:
        return [str(exc)]
    if not intact(text):
        return [f"{where}: not the lock lockgen wrote (its content-sha256 does not match: edited or truncated)"]
    if main.header.kind is not LayerKind.MAIN or main.header.cell != cell:
        return [f"{where}: not the main lock of cell {cell} (it says cell {main.header.cell}, kind {main.header.kind})"]
    problem = refs_problem(main.header, f"{locks}/{cell}.txt")
    if problem:
        return [f"{where}: {problem}"]
    problems = []
    known = {f"{cell}.txt"}
    for ref in main.header.layers:
        rel = f"{cell}/{ref.name}.txt"
        known.add(rel)
        layer = files.get(rel)
        if layer is None:
            problems.append(f"{folder}/{rel}: missing, but {where} lists it as layer {ref.name}")
        elif text_sha256(layer) != ref.sha256 or not intact(layer):
            problems.append(f"{folder}/{rel}: not the layer {where} lists (edited, truncated, or from another run)")
    from lockgen.locks.pylockfile import PYLOCK_NAME

    pylock = f"{cell}/{PYLOCK_NAME}"
    if main.header.pylock is not None:
        known.add(pylock)
        if pylock not in files:
            problems.append(f"{folder}/{pylock}: missing, but {where} lists it")
        elif text_sha256(files[pylock]) != main.header.pylock.sha256:
            problems.append(f"{folder}/{pylock}: not the pylock.toml {where} lists (edited, or from another run)")
    problems += [f"{folder}/{rel}: not a file lockgen writes for cell {cell} (its main lock does not list it)" for rel in sorted(set(files) - known)]  # fmt: skip
    entry = part.entries.get(cell)
    if entry is not None and entry.layers:
        listed = {layer.lock: layer.sha256 for layer in entry.layers}
        actual = {f"{locks}/{rel}": text_sha256(files[rel]) for rel in known if rel.endswith(".txt") and rel in files}
        if listed != actual:
            problems.append(
                f"{folder}/{manifest.MANIFEST_NAME}: cell {cell}'s layers are not the files in {folder} (their sha256)"
            )
    return problems


def _owners(project: Project, parts: Sequence[_Part]) -> dict[str, tuple[_Part, dict[str, str]]]:
    """The shard folder and files of every cell the matrix resolves, each verified
    (:func:`_cell_files`). Raises :class:`InputError` listing every bad file of every shard,
    :class:`UsageError` naming the cell and both folders when two shards hold different files
    for it, and naming the cells no shard holds."""
    wanted = [c.name for c in project.cells if c.resolves]
    locks = project.config.locks
    owners: dict[str, tuple[_Part, dict[str, str]]] = {}
    problems: list[Problem] = []
    for part in parts:
        for cell in sorted(part.cells & set(wanted)):
            try:
                files = _cell_files(part, cell, locks)
            except InputError as exc:
                problems += exc.problems
                continue
            if cell in owners and owners[cell][1] != files:
                other = owners[cell][0]
                raise UsageError(
                    f"cell {cell}: shards {other.folder} ({other.shard}) and {part.folder} ({part.shard}) hold "
                    "different files for it; merge the folders of one run of the shards"
                )
            owners.setdefault(cell, (part, files))
    if problems:
        raise InputError(
            *problems, Problem(message="nothing was merged; re-run those shards (lockgen all --shard I/N)")
        )
    missing = [name for name in wanted if name not in owners]
    if missing:
        raise UsageError(
            f"no shard holds cell{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
            "pass the locks folder of every shard (lockgen all --shard I/N for I = 1..N)"
        )
    return owners


def _check_inputs(project: Project, owners: Mapping[str, tuple[_Part, Mapping[str, str]]]) -> set[str]:
    """Refuse cells whose shard lock was made from other inputs than the project's: a main lock
    whose input hash is not its plan's (a shard run on an older commit, or with another config or
    templates) would be merged as current and ``check`` would then call it stale. A cell its shard
    recorded as failed is not refused but returned when its main lock is of other inputs: such a
    lock (the one the failed run kept, or one a shard made up) never replaces the project's files;
    one of the current inputs does. A cell holding no main lock keeps the project's files.
    Runs after :func:`_owners` verified every file, so a truncated lock is named as such, not as
    one of other inputs. Raises :class:`UsageError` naming each folder and its cells; renders
    templates (the plans), runs nothing."""
    locked = {cell: (part, files[f"{cell}.txt"]) for cell, (part, files) in owners.items() if f"{cell}.txt" in files}
    plans = {p.cell.name: p for p in project.plans([c for c in project.cells if c.name in locked])}
    other: dict[Path, list[str]] = {}
    kept: set[str] = set()
    for cell, (part, text) in sorted(locked.items()):
        input_hash = Lock.parse(text, f"{part.folder}/{cell}.txt").header.input_hash
        if input_hash == plans[cell].input_hash:
            continue
        if cell in part.failed:
            kept.add(cell)
        else:
            other.setdefault(part.folder, []).append(cell)
    if other:
        raise UsageError(*(
            f"{folder}: cell{'s' if len(cells) > 1 else ''} {', '.join(cells)} locked from other inputs than "
            "this project's (the input hash is not the current plan's: a shard of an older commit, config or "
            "templates); re-run that shard (lockgen all --shard I/N) on this commit, then merge again"
            for folder, cells in other.items()
        ))  # fmt: skip
    return kept


def _merged_manifest(
    project: Project,
    texts: Mapping[str, str],
    removals: Sequence[str],
    failed: dict[str, str],
    shards: Mapping[str, Any],
) -> str:
    """The manifest the project's locks folder gives once ``texts`` are written and ``removals``
    removed (with ``failed`` cells and the shards' GPU coverage records), built on a scratch copy
    of the locks folder (:class:`~lockgen.locks.stage.Stage`), so that it joins the one journaled
    write of the merge. Call holding the run lock."""
    from lockgen.locks.stage import Stage

    stage = Stage.create(project.root, project.config.locks)
    try:
        for path, text in texts.items():
            (stage.out / path).parent.mkdir(parents=True, exist_ok=True)
            (stage.out / path).write_text(text, encoding="utf-8")
        for path in removals:
            (stage.out / path).unlink(missing_ok=True)
        coverage = project.coverage(previous=shards, root=stage.out)  # the shards' records of the cells they locked
        return project.manifest_text(failed, root=stage.out, coverage=coverage)
    except OSError as exc:
        raise write_error(f"{WORK}/", exc) from None
    finally:
        stage.discard()


def _merged_differences(
    project: Project,
    parts: Sequence[_Part],
    owners: Mapping[str, tuple[_Part, Mapping[str, str]]],
    texts: Mapping[str, str],
) -> dict[str, str]:
    """``{path: text}`` of the merged ``differences.json`` (:mod:`lockgen.locks.spread`): the merged cells' versions,
    each cell's cause as the shard that locked it recorded it (a shard run weighed its own
    cells' pages), else what the locks and plans alone show."""
    from lockgen.locks import pylockfile, spread

    locks = project.config.locks
    plans = {p.cell.name: p for p in project.plans([c for c in project.cells if c.resolves])}
    versions: dict[str, dict[str, str]] = {}
    for cell, plan in plans.items():
        rel = pylockfile.pylock_path(plan.lock)
        text = texts.get(rel)
        try:
            if text is None:
                text = decode(read_file(project.root / rel, rel), rel)
            pylock = pylockfile.loads(text, rel)
        except (OSError, LockFormatError):
            continue
        versions[cell] = {p.name: str(p.version) for p in pylock.packages if p.version}
    recorded: list[spread.Difference] = []
    by_folder = {part.folder: part for part in parts}
    for folder in sorted(by_folder):
        path = folder / spread.DIFFERENCES_NAME
        try:
            mine = {c for c, (part, _) in owners.items() if part.folder == folder}
            found = spread.loads(decode(read_file(path, str(path)), str(path)), str(path))
        except (OSError, LockFormatError):
            continue
        recorded += [replace(d, off=tuple(o for o in d.off if o.cell in mine)) for d in found]
    return {spread.differences_path(locks): spread.dumps(spread.explain(versions, plans, recorded=recorded))}


def merge(project: Project, folders: Sequence[Path], wait: bool = False) -> MergeResult:
    """``lockgen merge DIR…``: write every resolved cell's files from the shard folder that holds
    it into the project's locks folder, remove locks of cells the matrix no longer resolves, and
    write the manifest (the bytes a single ``lockgen all`` writes). Holds the project's run lock.
    A cell whose shard recorded it as failed and holds no main lock, or one of other inputs than
    the project's, keeps the project's files.

    Every shard file is verified before anything is written (:func:`_owners`, :func:`_check_inputs`);
    then all of it (every cell's files, the removals, the manifest) is **one** journaled write
    (:func:`lockgen.locks.journal.replace_files`): a merge that is refused or killed leaves
    ``locks/`` as it was, or the next run finishes it. Raises :class:`UsageError` (nothing
    written) for a folder that does not exist or is not a shard's, two shards disagreeing on a
    cell, a cell no shard holds, or a cell locked from other inputs than the project's;
    :class:`InputError` for a shard file that is not what lockgen wrote; :class:`~lockgen.locks.store.Busy`;
    :class:`~lockgen.runtime.errors.ConfigError`/:class:`~lockgen.runtime.errors.TemplateError` from the plans."""
    from lockgen.locks.folder import orphan_cells
    from lockgen.locks.lockset import LockSet
    from lockgen.locks.report import change_report

    locks = project.config.locks
    parts = [_part(Path(folder), locks) for folder in folders]
    if not parts:
        raise UsageError("lockgen merge needs at least one shard folder")
    owners = _owners(project, parts)
    for cell in _check_inputs(project, owners):  # failed, with a lock of other inputs: keep the project's
        part, files = owners[cell]
        owners[cell] = (part, {})
    root = project.root
    result = MergeResult()
    with store.ProjectLock(root, wait=wait):
        journal.recover(root)
        journal.clean_temporaries(root, locks)
        before = LockSet.from_folder(root / locks, locks)
        texts: dict[str, str] = {}
        removals: list[str] = []
        for cell, (part, files) in sorted(owners.items()):
            if cell in part.failed:
                result.failed[cell] = part.failed[cell]
            if f"{cell}.txt" not in files:
                result.cells[cell] = "unchanged"
                continue
            cell_texts = {f"{locks}/{rel}": text for rel, text in files.items()}
            stale = [p for p in journal.files_under(root, [f"{locks}/{cell}/"]) if p not in cell_texts]
            changed = bool(stale) or any(store.differs(root, path, text) for path, text in cell_texts.items())
            result.cells[cell] = "changed" if changed else "unchanged"
            texts.update(cell_texts)
            removals += stale
        resolved = {c.name for c in project.cells if c.resolves}
        for paths in orphan_cells(root, locks, resolved).values():
            removals += journal.files_under(root, paths)
            result.removed += [path.rstrip("/") for path in paths]
        shards = {c: r for part in parts for c, r in _shard_coverage(part.folder).items() if c in part.cells}
        texts[manifest.manifest_path(locks)] = _merged_manifest(project, texts, removals, result.failed, shards)
        texts.update(_merged_differences(project, parts, owners, texts))
        journal.replace_files(root, "merge", texts, removals)
        after = LockSet.from_folder(root / locks, locks)
        result.report = change_report(before, after, sorted(owners)).lines()
    return result
