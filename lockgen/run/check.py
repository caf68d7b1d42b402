"""``lockgen check``: is every lock what the config gives, as lockgen wrote it? No side effects.

A cell is ``up to date`` when its main lock's input hash is the plan's, its text is exactly what
lockgen wrote (``content-sha256``, line endings aside: CASES C17) and every layer file it lists has
the digest it lists (so a main lock and layers from two runs never pass). Otherwise ``stale``
(saying which inputs changed: :data:`lockgen.plan.plan.PART_NAMES`), ``edited`` or ``missing``.
The manifest must be the one the locks give; a lock of a cell no longer in the matrix, or of a
skipped cell, is an ``orphan``: one row per cell, naming its files (main lock and cell folder).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lockgen.locks import manifest
from lockgen.locks.folder import edited, orphan_cells
from lockgen.locks.lock import Lock, older_lock
from lockgen.plan.matrix import select
from lockgen.plan.plan import PART_NAMES, Plan
from lockgen.project import Project
from lockgen.runtime.errors import LockFormatError
from lockgen.runtime.states import CellState

__all__ = ["CellCheck", "CheckResult", "check", "state_of"]


@dataclass(frozen=True)
class CellCheck:
    """The state of one cell and why (``reasons``: changed inputs, the edited file, …)."""

    name: str
    state: CellState
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"cell": self.name, "state": str(self.state), "reasons": list(self.reasons)}


@dataclass
class CheckResult:
    cells: list[CellCheck] = field(default_factory=list)
    manifest: str | None = None  # why the manifest does not match, if it does not

    @property
    def exit_code(self) -> int:
        return 1 if self.manifest or any(c.state.bad for c in self.cells) else 0

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.exit_code == 0, "cells": [c.to_dict() for c in self.cells], "manifest": self.manifest,
        }  # fmt: skip


def state_of(root: Path, plan: Plan) -> CellCheck:
    """The state of ``plan``'s cell from its files on disk (see the module docstring)."""
    name = plan.cell.name
    try:
        main = Lock.read(root / plan.lock, plan.lock)
    except LockFormatError as exc:
        if _older_format(root / plan.lock):
            return CellCheck(name, CellState.STALE, ("it was written by an older lockgen (the lock format changed)",))
        return CellCheck(name, CellState.EDITED, (str(exc),))
    if main is None:
        return CellCheck(name, CellState.MISSING, (f"{plan.lock} does not exist",))
    if main.header.input_hash != plan.input_hash:
        return CellCheck(name, CellState.STALE, changed_inputs(main, plan))
    problem = edited(root, plan.lock, main)
    if problem:
        return CellCheck(name, CellState.EDITED, (problem,))
    notes = tuple(f"optional {u.requirement} unavailable: {u.reason}" for u in main.header.unavailable if u.retry)
    return CellCheck(name, CellState.UP_TO_DATE, notes)


def _older_format(path: Path) -> bool:
    """A lock an older lockgen wrote, untouched since (its digest holds, its layout is not ours)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return older_lock(text)


def changed_inputs(main: Lock, plan: Plan) -> tuple[str, ...]:
    """What changed since ``main`` was locked, by input part (older locks without parts: all)."""
    old, new = main.header.input_parts, plan.input_parts
    if not old:
        return ("its lock predates lockgen's input parts; re-lock it",)
    reasons = []
    for part in sorted(set(old) | set(new)):
        if old.get(part) == new.get(part):
            continue
        if part in plan.rendered.files:
            reasons.append(f"the rendered {plan.templates}/{plan.rendered.files[part][0]}")
        elif part == "uv":
            reasons.append(f"the uv version ({main.header.uv} -> {plan.uv_version})")
        else:
            reasons.append(PART_NAMES.get(part, part))
    return tuple(reasons) or ("its input hash",)


def check(project: Project, names: Sequence[str] = (), only: Sequence[str] = ()) -> CheckResult:
    """Compare each selected cell's lock with its plan, and the manifest with the locks.
    Resolves nothing, starts no process and writes nothing."""
    chosen = select(project.cells, names, only)
    result = CheckResult()
    by_name = {p.cell.name: p for p in project.plans(chosen)}
    resolved = {c.name for c in project.cells if c.resolves}
    left = orphan_cells(project.root, project.config.locks, resolved)
    for cell in chosen:
        if cell.name in by_name:
            row = state_of(project.root, by_name[cell.name])
        elif cell.settings.skip:
            row = CellCheck(cell.name, CellState.SKIPPED, (cell.settings.skip,))
        else:
            row = _alias(project, cell.name, cell.settings.alias or "")
        if cell.name in left:  # skipped or an alias now, with the lock files of before
            row = _orphan(project, cell.name, left.pop(cell.name))
        result.cells.append(row)
    result.cells += [_orphan(project, name, paths) for name, paths in left.items()]
    result.manifest = manifest_problem(project)
    return result


def _orphan(project: Project, name: str, paths: Sequence[str]) -> CellCheck:
    """The one row of a cell whose lock files are left over (see :func:`orphan_cells`)."""
    cell = next((c for c in project.cells if c.name == name), None)
    if cell is None:
        why = "its cell is not resolved by the matrix any more"
    elif cell.settings.skip:
        why = f"its cell is skipped now ({cell.settings.skip})"
    else:
        why = f"its cell is an alias of {cell.settings.alias} now"
    return CellCheck(name, CellState.ORPHAN, (why, f"lock files left: {', '.join(paths)}; `lockgen all` removes them"))


def _alias(project: Project, name: str, alias: str) -> CellCheck:
    """An alias is as good as the lock of the cell it reuses: missing when that has none."""
    lock = project.cell(alias).lock_path(project.config)
    if not (project.root / lock).is_file():
        return CellCheck(name, CellState.MISSING, (f"it reuses {alias}, which has no lock ({lock})",))
    return CellCheck(name, CellState.ALIAS, (f"reuses {alias}",))


def manifest_problem(project: Project) -> str | None:
    """Why ``locks/manifest.json`` is not the manifest the locks give (None: it is)."""
    path = manifest.manifest_path(project.config.locks)
    text = manifest.read(project.root / path)
    if text is None:
        return f"{path} is missing; run `lockgen all`"
    try:
        expected = project.manifest_text(manifest.failures(text))
    except LockFormatError as exc:
        return str(exc)
    return None if text == expected else f"{path} does not match the locks; run `lockgen all`"
