"""``lockgen check``: is every lock what the config gives, as lockgen wrote it? No side effects.

A cell is ``up to date`` when its main lock's input hash is the plan's, its text is exactly what
lockgen wrote (``content-sha256``, line endings aside: CASES C17) and every layer file it lists has
the digest it lists (so a main lock and layers from two runs never pass). Otherwise ``stale``
(saying which inputs changed: :data:`lockgen.plan.plan.PART_NAMES`), ``edited`` or ``missing``.
The manifest must be the one the locks give; a lock of a cell no longer in the matrix, or of a
skipped cell, is an ``orphan``: one row per cell, naming its files (main lock and cell folder).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lockgen.locks import manifest
from lockgen.locks.folder import edited, orphan_cells
from lockgen.locks.lock import Lock, decode, older_lock
from lockgen.locks.paths import confine_file, resolving_once
from lockgen.plan.matrix import select
from lockgen.plan.plan import PART_NAMES, Plan
from lockgen.project import Project
from lockgen.runtime.bounded import read_file
from lockgen.runtime.errors import InputError, LockFormatError, LockgenError
from lockgen.runtime.states import CellState

if TYPE_CHECKING:
    from lockgen.locks.spread import Difference

__all__ = ["CellCheck", "CheckResult", "check", "current_locks", "recorded_differences", "stale_note", "state_of"]


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
    #: the last run's record of the versions that differ across cells (locks/differences.json;
    #: None: no record); informational, never a reason to fail
    differences: list[Difference] | None = None
    differences_error: str | None = None  # why the record could not be read

    @property
    def exit_code(self) -> int:
        return 1 if self.manifest or any(c.state.bad for c in self.cells) else 0

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "ok": self.exit_code == 0, "cells": [c.to_dict() for c in self.cells], "manifest": self.manifest,
            "differences": None if self.differences is None else [d.to_dict() for d in self.differences],
        }  # fmt: skip
        if self.differences_error:
            data["differences_error"] = self.differences_error
        return data


def state_of(root: Path, plan: Plan) -> CellCheck:
    """The state of ``plan``'s cell from its files on disk (see the module docstring)."""
    found = _state(root, plan.cell.name, plan.lock, plan.input_hash, plan)
    return found if found is not None else CellCheck(plan.cell.name, CellState.STALE, ())  # with a plan: never None


def _state(root: Path, name: str, lock: str, input_hash: str, plan: Plan | None) -> CellCheck | None:
    """:func:`state_of` for the cell ``name`` whose main lock is at ``lock`` and whose inputs
    hash to ``input_hash``; None when the lock is stale and there is no ``plan`` to say why."""
    try:
        main = Lock.read(confine_file(root, posixpath.dirname(lock), lock, LockFormatError), lock)
    except LockFormatError as exc:
        if _older_format(root / lock):
            return CellCheck(name, CellState.STALE, ("it was written by an older lockgen (the lock format changed)",))
        return CellCheck(name, CellState.EDITED, (str(exc),))
    if main is None:
        return CellCheck(name, CellState.MISSING, (f"{lock} does not exist",))
    if main.header.input_hash != input_hash:
        return CellCheck(name, CellState.STALE, changed_inputs(main, plan)) if plan is not None else None
    problem = edited(root, lock, main)
    if problem:
        return CellCheck(name, CellState.EDITED, (problem,))
    notes = tuple(f"optional {u.requirement} unavailable: {u.reason}" for u in main.header.unavailable if u.retry)
    return CellCheck(name, CellState.UP_TO_DATE, notes)


def _stamped(project: Project) -> dict[str, tuple[str, str]]:
    """``{cell: (main lock path, input hash)}`` from the no-op stamp (:mod:`lockgen.locks.stamp`)
    when it still describes the project (its config, templates and every file the plans read
    are as when it was written): then a cell's input hash is known without rendering its
    templates, which is most of what ``check`` paid per cell. Empty otherwise."""
    from lockgen.locks import stamp

    memo = stamp.read(project.root, project.config.source)
    if memo is None or memo.locks != project.config.locks:
        return {}
    return {r.name: (r.lock, r.input_hash) for r in memo.rows if r.input_hash and not (r.skip or r.alias)}


def _older_format(path: Path) -> bool:
    """A lock an older lockgen wrote, untouched since (its digest holds, its layout is not ours)."""
    try:
        text = decode(read_file(path, str(path)), str(path))
    except (OSError, LockFormatError, InputError):
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
        files = _changed_files(main, plan) if part in ("local_files", "local_projects") else []
        if files:
            reasons += [r for r in files if r not in reasons]
        elif part in plan.rendered.files:
            reasons.append(f"the rendered {plan.templates}/{plan.rendered.files[part][0]}")
        elif part == "uv":
            reasons.append(f"the uv version ({main.header.uv} -> {plan.uv_version})")
        else:
            reasons.append(PART_NAMES.get(part, part))
    return tuple(reasons) or ("its input hash",)


def _changed_files(main: Lock, plan: Plan) -> list[str]:
    """The local input files whose content differs from what ``main`` records (its
    ``local-file`` fields), each named: ``wheels/spark/x.whl changed (sha256 ab12… -> cd34…)``,
    ``… added``, ``… removed`` (issue 16). Empty for a lock that records none (an older one)."""
    old = {ref.path: ref.sha256 for ref in main.header.local_files}
    new = dict(plan.local_inputs)
    if not old:
        return []
    found = []
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            found.append(f"{path} {_of(plan, path, 'removed from')}")
        elif path not in old:
            found.append(f"{path} {_of(plan, path, 'added to')}")
        elif old[path] != new[path]:
            found.append(f"{path} {_of(plan, path, 'of')} changed (sha256 {old[path][:12]}… -> {new[path][:12]}…)")
    return found


def _of(plan: Plan, path: str, how: str) -> str:
    """``added to the local wheel folder wheels``, ``of the local project sub``: what ``path`` is to ``plan``."""
    import posixpath

    folder = posixpath.dirname(path)
    if folder in plan.local_files:
        return f"{how} the local wheel folder {folder}"
    project = next((p for p in plan.local_projects if path == p or path.startswith(p.rstrip("/") + "/")), None)
    if project is not None:
        return f"{how} the local project requirement {project}" if path != project else "(a local requirement)"
    return f"{how} the local inputs"


def check(project: Project, names: Sequence[str] = (), only: Sequence[str] = ()) -> CheckResult:
    """Compare each selected cell's lock with its plan, and the manifest with the locks.
    Resolves nothing, starts no process and writes nothing."""
    with resolving_once():
        return _check(project, names, only)


def _check(project: Project, names: Sequence[str], only: Sequence[str]) -> CheckResult:
    chosen = select(project.cells, names, only)
    result = CheckResult()
    stamped = _stamped(project)
    quick: dict[str, CellCheck] = {}  # decided from the stamp's input hash, without a plan
    for cell in chosen:
        if cell.resolves and cell.name in stamped and stamped[cell.name][0] == cell.lock_path(project.config):
            found = _state(project.root, cell.name, *stamped[cell.name], None)
            if found is not None:
                quick[cell.name] = found
    by_name = {p.cell.name: p for p in project.plans([c for c in chosen if c.name not in quick])}
    resolved = {c.name for c in project.cells if c.resolves}
    left = orphan_cells(project.root, project.config.locks, resolved)
    for cell in chosen:
        if cell.name in quick:
            row = quick[cell.name]
        elif cell.name in by_name:
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
    result.differences, result.differences_error = recorded_differences(project.root, project.config.locks)
    return result


def stale_note(project: Project) -> str | None:
    """Why the locks folder is not what the config gives now, in one sentence for ``lockgen
    diff`` (None when every cell's lock is up to date): the cells whose inputs changed since they
    were locked (a template or the config edited) or that have no lock, what changed, and what to
    run. Resolves nothing, as :func:`check`."""
    from lockgen.runtime.words import counted

    cells = [c for c in check(project).cells if c.state in (CellState.STALE, CellState.MISSING)]
    if not cells:
        return None
    names = ", ".join(c.name for c in cells[:3]) + (f" and {len(cells) - 3} more" if len(cells) > 3 else "")
    reasons = list(dict.fromkeys(r for c in cells if c.state is CellState.STALE for r in c.reasons))
    missing = sum(1 for c in cells if c.state is CellState.MISSING)
    what = [f"changed since they were locked: {'; '.join(reasons[:4])}"] if reasons else []
    what += [f"{counted(missing, 'cell')} {'has' if missing == 1 else 'have'} no lock yet"] if missing else []
    return (
        f"the locks of {counted(len(cells), 'cell')} ({names}) are stale: {', and '.join(what)}; "
        "run `lockgen all`, then `lockgen diff` shows what the edit does to the locks"
    )


def recorded_differences(root: Path, locks: str) -> tuple[list[Difference] | None, str | None]:
    """``(differences, error)`` of ``<locks>/differences.json`` (:mod:`lockgen.locks.spread`):
    (None, None) when there is none; (None, why) when it cannot be read."""
    from lockgen.locks.spread import differences_path, loads

    where = differences_path(locks)
    try:
        text = decode(read_file(root / where, where), where)
    except FileNotFoundError:
        return None, None
    except (OSError, LockgenError) as exc:
        return None, str(exc)
    try:
        return loads(text, where), None
    except LockFormatError as exc:
        return None, str(exc)


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
    """Why ``locks/manifest.json`` is not the manifest the locks give (None: it is). Every entry
    is checked against its lock: the manifest is rebuilt from the locks, and a ``failed`` entry
    is accepted only for a cell with no current, intact lock (issue 16: a manifest that says
    ``failed`` over a good lock leaves installers nothing to install)."""
    path = manifest.manifest_path(project.config.locks)
    text = manifest.read(project.root / path)
    if text is None:
        return f"{path} is missing; run `lockgen all`"
    failed = manifest.failures(text)
    wrong = current_locks(project, failed)
    if wrong:
        return (
            f"{path} records {', '.join(wrong)} as failed, but {'their locks are' if len(wrong) > 1 else 'its lock is'} "
            "current and intact; run `lockgen all` to rewrite the manifest"
        )
    try:
        expected = project.manifest_text(failed)
    except LockFormatError as exc:
        return str(exc)
    return None if text == expected else f"{path} does not match the locks; run `lockgen all`"


def current_locks(
    project: Project, names: Iterable[str], plans: Sequence[Plan] = (), root: Path | None = None
) -> list[str]:
    """Those of the cells ``names`` whose lock is current and intact (``lockgen check`` would
    call it up to date) under ``root`` (default: the project's; a staged run's copy of the
    locks), planned from ``plans`` or, for a cell not among them, planned here (a cell that
    cannot be planned has no current lock)."""
    from lockgen.runtime.errors import ConfigError, TemplateError

    by_name = {p.cell.name: p for p in plans}
    found = []
    for name in sorted(set(names)):
        plan = by_name.get(name)
        if plan is None:
            cell = next((c for c in project.cells if c.name == name and c.resolves), None)
            try:
                planned = project.plans([cell]) if cell is not None else []
            except (ConfigError, TemplateError):
                planned = []
            plan = planned[0] if planned else None
        if plan is not None and state_of(root or project.root, plan).state is CellState.UP_TO_DATE:
            found.append(name)
    return found
