"""Stage 2: expand the build matrix into cells.

Semantics follow CI matrices (GitHub Actions ``strategy.matrix``): the cross product of the axes,
minus every combination an ``exclude`` entry matches, then each ``include`` entry either adds its
variables to every cell it matches or, when it names all four axes and matches none, adds a cell.
Ordered ``rules`` then give each cell its settings: the config's top-level settings first, each
matching rule on top (later rules win), an ``include``'s variables last.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lockgen.config import AXES, Config, Settings, selector_matches
from lockgen.errors import ConfigError, UsageError


@dataclass(frozen=True, kw_only=True)
class Cell:
    """One point of the matrix: a target to lock, with its merged settings."""

    os: str
    arch: str
    backend: str
    python: str
    settings: Settings

    @property
    def name(self) -> str:
        """Stable, filesystem-safe name: ``linux-x86_64-cu130-py3.12``."""
        return f"{self.os}-{self.arch}-{self.backend}-py{self.python}"

    @property
    def axes(self) -> dict[str, str]:
        return {axis: getattr(self, axis) for axis in AXES}

    def lock_path(self, config: Config) -> str:
        """The lock file, relative to the project root (``locks/<cell>.txt``)."""
        return f"{config.locks}/{self.name}.txt"


def expand(config: Config) -> list[Cell]:
    """Return every cell of the matrix, in a stable order (axis order as written, then includes).

    Raises :class:`ConfigError` when an include entry matches no cell and does not name all four
    axes (it could neither extend a cell nor add one).
    """
    combos: list[dict[str, str]] = [
        dict(zip(AXES, values)) for values in itertools.product(*(config.axes[a] for a in AXES))
    ]
    combos = [c for c in combos if not any(selector_matches(sel, c) for sel in config.exclude)]
    extra_vars: list[dict[str, Any]] = [{} for _ in combos]
    problems = []
    for i, inc in enumerate(config.include):
        hits = [j for j, c in enumerate(combos) if all(c[a] == v for a, v in inc.axes.items())]
        for j in hits:
            extra_vars[j].update(inc.vars)
        if not hits:
            if len(inc.axes) == len(AXES):
                combos.append(dict(inc.axes))
                extra_vars.append(dict(inc.vars))
            else:
                missing = ", ".join(a for a in AXES if a not in inc.axes)
                path = f"{config.key_prefix + '.' if config.key_prefix else ''}matrix.include[{i}]"
                problems.append(f"{path}: matches no cell and cannot add one (missing {missing})")
    if problems:
        raise ConfigError(config.source, problems)

    cells: dict[str, Cell] = {}
    for combo, inc_vars in zip(combos, extra_vars):
        settings = config.defaults
        for rule in config.rules:
            if rule.matches(combo):
                settings = settings.merged(rule.settings)
        settings = settings.merged(Settings(vars=inc_vars))
        cell = Cell(**combo, settings=settings)
        cells.setdefault(cell.name, cell)
    from packaging.utils import canonicalize_name

    for cell in cells.values():
        alias, settings = cell.settings.alias, cell.settings
        target = cells.get(alias) if alias else None
        if alias and target is None:
            problems.append(f"cell {cell.name}: alias {alias!r} names no cell of the matrix")
        elif alias and (target.settings.alias or target.settings.skip or settings.skip):
            problems.append(f"cell {cell.name}: alias {alias!r}: an alias and its cell must be resolved (not skipped, not aliases)")
        elif alias and target.python != cell.python:
            problems.append(f"cell {cell.name}: alias {alias!r} is for Python {target.python}, not {cell.python}")
        pins = {canonicalize_name(k) for k in settings.pins}
        for name in settings.pinned or ():
            if canonicalize_name(name) not in pins:
                problems.append(f"cell {cell.name}: pinned {name!r} has no version in pins; add it to the pins table")
    if not cells:
        prefix = f"{config.key_prefix}." if config.key_prefix else ""
        problems.append(f"{prefix}matrix: has no cells; list values for os, arch, backend and python, or add include entries")
    if problems:
        raise ConfigError(config.source, problems)
    return list(cells.values())


def parse_selectors(selectors: Iterable[str]) -> dict[str, set[str]]:
    """Parse ``--only KEY=VALUE`` strings into axis -> accepted values.

    Repeating a key accepts any of its values; different keys must all match. Besides the four
    axes, ``name`` selects by cell name. Raises :class:`UsageError` on a malformed selector.
    """
    result: dict[str, set[str]] = {}
    for text in selectors:
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value or key not in (*AXES, "name"):
            raise UsageError(
                f"--only {text!r}: write KEY=VALUE with KEY one of {', '.join((*AXES, 'name'))}"
            )
        result.setdefault(key, set()).add(value)
    return result


def select(cells: Sequence[Cell], names: Sequence[str] = (), only: Iterable[str] = ()) -> list[Cell]:
    """Cells named in ``names`` (all when empty) that also match every ``--only`` selector.

    Raises :class:`UsageError` for an unknown cell name (suggesting close ones) or when the
    selectors match nothing.
    """
    by_name = {c.name: c for c in cells}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        import difflib

        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, list(by_name), n=3)
            hints.append(f"{name}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
        raise UsageError(f"unknown cell(s): {'; '.join(hints)}. `lockgen matrix` lists the cells")
    chosen = [by_name[n] for n in dict.fromkeys(names)] if names else list(cells)
    selectors = parse_selectors(only)
    chosen = [
        c for c in chosen
        if all((c.name if k == "name" else getattr(c, k)) in v for k, v in selectors.items())
    ]  # fmt: skip
    if not chosen:
        raise UsageError("no cell matches the selection; `lockgen matrix` lists the cells")
    return chosen
