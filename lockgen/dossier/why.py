"""``lockgen why NAME [CELL…]``: which requirements bring a package into each cell's lock.

Each locked entry carries uv's ``# via`` data: the packages that require it, or the input that
asks for it (a committed template, the config's ``optional``/``no-deps`` entries, a layer's
constraint on the main lock's versions). :func:`why` walks that data upward from NAME to the
inputs, in every selected cell, and names where each chain *starts*: the template line that
renders the requirement (:class:`lockgen.plan.render.LineMap`), the ``[project]`` dependency or
PEP 735 group entry a template renders, the config's ``pinned`` pins, ``optional`` or ``no-deps``
entry. Cells with the same answer (version, layer, chains) are one group, as ``lockgen diff``
groups changes. Shortest chains first; at most :data:`MAX_CHAINS` per cell (the rest counted).

Like pnpm's and pdm's ``why`` and ``pip-tree -r``, but per target: a package may be in a cell's
lock for another reason than in the next cell's, or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import NormalizedName, canonicalize_name

from lockgen.locks.lock import Entry
from lockgen.locks.lockset import MAIN, CellLocks
from lockgen.plan import reqline
from lockgen.plan.plan import Plan
from lockgen.plan.render import LineMap
from lockgen.project import Project
from lockgen.runtime import bounded
from lockgen.runtime.errors import InputError, UsageError
from lockgen.runtime.words import counted

__all__ = ["MAX_CHAINS", "REFUSED", "Answer", "Chain", "Start", "Why", "render_text", "why"]

#: Chains shown per cell (shortest first); more are counted.
MAX_CHAINS = 12
_MAX_DEPTH = 25


@dataclass(frozen=True, kw_only=True)
class Start:
    """Where a chain starts: ``source`` (``templates/requirements.in.j2:3``,
    ``pyproject.toml: project.dependencies[2]``, ``pyproject.toml: tool.lockgen.optional``) and
    ``text``, the requirement as written there (empty when lockgen cannot tell)."""

    source: str
    text: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "text": self.text}


@dataclass(frozen=True, kw_only=True)
class Chain:
    """``start`` asks for ``path[0]``, which requires ``path[1]``, …, up to the package asked about."""

    start: Start
    path: tuple[str, ...]

    def text(self) -> str:
        start = f"{self.start.source}" + (f" `{self.start.text}`" if self.start.text else "")
        return " → ".join([start, *self.path])

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start.to_dict(), "path": list(self.path)}


@dataclass(frozen=True, kw_only=True)
class Answer:
    """The same answer in ``cells``: the package at ``version`` in lock ``layer`` (``main`` or a
    layer's name), brought in by ``chains`` (``more``: chains not shown)."""

    version: str
    layer: str
    chains: tuple[Chain, ...]
    cells: tuple[str, ...]
    more: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version, "layer": self.layer, "cells": list(self.cells), "count": len(self.cells),
            "chains": [c.to_dict() for c in self.chains], "more_chains": self.more,
        }  # fmt: skip


@dataclass
class Why:
    """The answer of ``lockgen why``: ``groups`` (most cells first), ``absent`` (cells whose locks
    do not have the package), ``unlocked`` (selected cells without a lock: cell -> why)."""

    package: NormalizedName
    groups: list[Answer] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    unlocked: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``lockgen why --json``."""
        return {
            "package": self.package, "groups": [g.to_dict() for g in self.groups], "absent": self.absent,
            "unlocked": self.unlocked,
        }  # fmt: skip


def why(project: Project, name: str, cells: Sequence[str] = ()) -> Why:
    """Explain ``name`` in the ``cells`` (default: every cell the matrix resolves) from their
    committed locks. Raises :class:`UsageError` for an unknown cell, or a package no selected
    cell's lock has (with the closest names)."""
    from lockgen.locks.changed import lockset_of
    from lockgen.plan.render import environment

    key = canonicalize_name(name)
    chosen = _cells(project, cells)
    config = project.config
    locks = lockset_of(project.root / config.locks, config.locks, chosen)
    answer = Why(package=key)
    plans = {p.cell.name: p for p in project.plans([project.cell(c) for c in chosen])}
    refused = {c: entries for c in chosen if c in plans and (entries := _refused(project, plans[c])) is not None}
    present = [c for c in chosen if c in locks.cells or c in refused]
    for cell in chosen:
        if cell not in present:
            answer.unlocked[cell] = "no readable lock; run lockgen all"
    lines = LineMap(environment(config, project.template_overlay()), config.templates)
    starts = _Starts(project, lines)
    grouped: dict[tuple[str, str, tuple[Chain, ...], int], list[str]] = {}
    for cell in present:
        if cell in refused:
            found = _explain([(REFUSED, refused[cell])], key, plans.get(cell), starts)
        else:
            found = _explain(_layers(locks.cells[cell]), key, plans.get(cell), starts)
        if found is None:
            answer.absent.append(cell)
            continue
        grouped.setdefault(found, []).append(cell)
    if not grouped:
        _unknown(key, locks.cells.values(), bool(present))
    answer.groups = sorted(
        (Answer(version=v, layer=layer, chains=chains, cells=tuple(sorted(names)), more=more)
         for (v, layer, chains, more), names in grouped.items()),
        key=lambda g: (-len(g.cells), g.layer != MAIN, g.version, g.cells),
    )  # fmt: skip
    return answer


def _cells(project: Project, cells: Sequence[str]) -> list[str]:
    """The selected cells that resolve (an alias stands for its cell); unknown names refused."""
    from lockgen.plan.matrix import select

    resolved = {c.name: c for c in project.cells}
    if not cells:
        return [c.name for c in project.cells if c.resolves]
    select(project.cells, cells)  # an unknown name: refused as every command refuses it, with close names
    chosen = []
    for name in cells:
        cell = resolved[name]
        target = cell.settings.alias or name
        if resolved[target].resolves and target not in chosen:
            chosen.append(target)
    return chosen


def _unknown(key: str, cells: Iterable[CellLocks], any_locked: bool) -> None:
    from lockgen.runtime.words import did_you_mean

    if not any_locked:
        raise UsageError("no selected cell has a lock; run lockgen all first")
    known = sorted({e.name for c in cells for lock in (c.main, *c.layers.values()) for e in lock.entries})
    raise UsageError(f"{key}: in no selected cell's lock{did_you_mean(key, known)}")


#: The ``layer`` of an answer read from a failed cell's refused resolution (not from a lock).
REFUSED = "refused"


def _layers(cell: CellLocks) -> list[tuple[str, Sequence[Entry]]]:
    return [(MAIN, cell.main.entries), *((name, lock.entries) for name, lock in cell.layers.items())]


def _refused(project: Project, plan: Plan) -> list[Entry] | None:
    """The entries of the main resolution the last run refused for ``plan``'s cell (its backend
    invariants failed: :func:`lockgen.resolve.pipeline.refused_path`), read with the lock model;
    None when there is none (or it cannot be read: then the committed lock answers)."""
    from lockgen.locks.lock import parse_entries
    from lockgen.resolve.pipeline import refused_path
    from lockgen.runtime.bounded import read_text
    from lockgen.runtime.errors import LockgenError

    path = project.root / refused_path(plan)
    try:
        return list(parse_entries(read_text(path, refused_path(plan)), refused_path(plan)))
    except (OSError, LockgenError):  # missing, or refused by the bounded reader (a FIFO, huge, not UTF-8)
        return None


def _explain(
    locks: Sequence[tuple[str, Sequence[Entry]]], key: NormalizedName, plan: Plan | None, starts: _Starts
) -> tuple[str, str, tuple[Chain, ...], int] | None:
    """``(version, layer, chains, chains not shown)`` of ``key`` in one cell's ``locks`` (layer
    name, entries), or None."""
    entries: dict[NormalizedName, Entry] = {}
    for _, listed in locks:
        for entry in listed:
            entries.setdefault(entry.name, entry)
    where = next(((layer, e) for layer, listed in locks for e in listed if e.name == key), None)
    if where is None:
        return None
    layer, entry = where
    paths = _chains(key, entries)
    chains = tuple(dict.fromkeys(Chain(start=starts.of(source, path[0], plan), path=path) for source, path in paths))
    shown = chains[:MAX_CHAINS]
    version = str(entry.version) if entry.version is not None else entry.url or ""
    return version, layer, shown, len(chains) - len(shown)


def _chains(key: NormalizedName, entries: Mapping[NormalizedName, Entry]) -> list[tuple[str, tuple[str, ...]]]:
    """``(source, (top, …, key))`` for every path up the ``# via`` data from ``key`` to an input,
    shortest first (breadth first; no package twice on a path)."""
    found: list[tuple[str, tuple[str, ...]]] = []
    queue: list[tuple[str, ...]] = [(key,)]
    while queue and len(found) < MAX_CHAINS * 4:
        path = queue.pop(0)
        entry = entries.get(canonicalize_name(path[0]))
        if entry is None or len(path) > _MAX_DEPTH:
            continue
        for via in entry.via:
            parent = _package(via, entries)
            if parent is None:
                found.append((via, path))
            elif parent not in path:
                queue.append((parent, *path))
    return found


def _package(via: str, entries: Mapping[NormalizedName, Entry]) -> NormalizedName | None:
    """The package a ``# via`` item names (``torch``, ``torch[cuda]``), None for an input."""
    req = reqline.requirement(via)
    if req is None:
        return None
    name = canonicalize_name(req.name)
    return name if name in entries else None


class _Starts:
    """Names the template line or config entry an input's requirement of a package comes from."""

    def __init__(self, project: Project, lines: LineMap) -> None:
        self.project, self.lines = project, lines
        self._strings: list[tuple[str, str]] | None = None

    def of(self, source: str, top: str, plan: Plan | None) -> Start:
        config = self.project.config
        if plan is None:
            return Start(source=source)
        key = canonicalize_name(top)
        if source == plan.lock:
            return Start(source=source, text=f"{key}: the main lock's version (layers resolve with it as a constraint)")
        prefix = f"{config.source} ("
        if source.startswith(prefix) and source.endswith(")"):
            return self._config_entry(source[len(prefix) : -1], key, plan)
        for template, text in plan.rendered.files.values():
            if f"{plan.templates}/{template}" == source:
                return self._template_line(template, text, key, plan) or Start(source=source)
        return Start(source=source)

    def _template_line(self, template: str, text: str, key: NormalizedName, plan: Plan) -> Start | None:
        from lockgen.plan.sources import applies

        config = self.project.config
        pinned = plan.pin_requirements()
        for raw in text.splitlines():
            line = reqline.parse(raw)
            if line is None or line.name != key or not applies(line.requirement.marker, plan.target):
                continue
            origin = self.lines.origin(template, raw)
            if origin is not None:
                return Start(source=f"{origin[0]}:{origin[1]}", text=line.body)
            for where, value in self._project_strings():
                if value.strip() == line.body:
                    return Start(source=where, text=value.strip())
            if key in pinned and line.body == f"{key}{pinned[key]}":
                pins = f"{config.key_prefix}.pinned" if config.key_prefix else "pinned"
                return Start(source=f"{config.source}: {pins}", text=line.body)
            return Start(source=f"{plan.templates}/{template}", text=line.body)
        return None

    def _config_entry(self, layer: str, key: NormalizedName, plan: Plan) -> Start:
        config = self.project.config
        setting = "no-deps" if layer == "no-deps" else "optional"
        entries = plan.no_deps if setting == "no-deps" else plan.optional
        text = next(
            (e for e in entries if (r := reqline.requirement(e)) is not None and canonicalize_name(r.name) == key), ""
        )
        where = f"{config.key_prefix}.{setting}" if config.key_prefix else setting
        return Start(source=f"{config.source}: {where}", text=text)

    def _project_strings(self) -> list[tuple[str, str]]:
        """``(file: key path, requirement)`` of the project's metadata (``[project]``, groups)."""
        if self._strings is None:
            from lockgen.bump import toml as bump_toml
            from lockgen.config.load import parse_toml

            self._strings = []
            project = self.project.config.project
            if project is not None:
                rel = project.path
                try:
                    text = self.project.overlay.get(rel) or bounded.read_text(self.project.root / rel, rel)
                    data = parse_toml(text)
                except (OSError, ValueError, InputError):
                    data = {}
                self._strings = [(f"{rel}: {r.key_path}", r.value) for r in bump_toml.requirement_strings(data)]
        return self._strings


def render_text(answer: Why) -> str:
    """The terminal text: per group a heading (``numpy 2.4.5 in 12 of 12 cells``) and its chains."""
    total = sum(len(g.cells) for g in answer.groups) + len(answer.absent)
    out: list[str] = []
    for g in answer.groups:
        layer = "" if g.layer == MAIN else f" [layer {g.layer}]"
        if g.layer == REFUSED:
            layer = " [in the resolution the last run refused: the cell failed, nothing was locked]"
        names = ", ".join(g.cells[:4]) + (f", +{len(g.cells) - 4} more" if len(g.cells) > 4 else "")
        out.append(f"{answer.package} {g.version}{layer} in {len(g.cells)} of {counted(total, 'cell')}: {names}")
        out += [f"  {c.text()}" for c in g.chains] or ["  (no # via data in the lock)"]
        out += [f"  … {counted(g.more, 'more chain')}"] if g.more else []
    if answer.absent:
        out.append(f"not in the lock of {counted(len(answer.absent), 'cell')}: {', '.join(answer.absent)}")
    out += [f"{cell}: {reason}" for cell, reason in answer.unlocked.items()]
    return "\n".join(out) + "\n"
