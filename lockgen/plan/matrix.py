"""Stage 2: expand the build matrix into cells.

Semantics follow CI matrices (GitHub Actions ``strategy.matrix``): the cross product of the axes,
minus every combination an ``exclude`` entry matches, then each ``include`` entry either adds its
variables to every cell it matches or, when it names every axis and matches none, adds a cell.
Ordered ``rules`` then give each cell its settings: the config's top-level settings first, each
matching rule on top (later rules win), an ``include``'s variables last.

Besides os, arch, backend and python a matrix may have extra named axes (``variant = ["full",
"portable"]``, issue 9): they multiply the cells like the others, ``exclude``/``include``/rule
``match``/``--only`` name them like the others, and their values are appended to cell names in
declaration order (``linux-x86_64-cu128-py3.13-portable``), so a matrix without extra axes keeps
its names.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from lockgen.config import AXES, Config, Settings, selector_matches
from lockgen.runtime.errors import ConfigError, Problem, UsageError

__all__ = [
    "Cell", "Expansion", "Selectable", "expand", "expand_matrix", "parse_selectors", "select", "with_alias_sources",
]  # fmt: skip

log = logging.getLogger("lockgen")


@dataclass(frozen=True, kw_only=True)
class Cell:
    """One point of the matrix: a target to lock, with its merged settings. ``extra``: the values
    of the matrix's extra axes (axis -> value, in declaration order)."""

    os: str
    arch: str
    backend: str
    python: str
    settings: Settings
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """Stable, filesystem-safe name: ``linux-x86_64-cu130-py3.12``, then each extra axis's
        value in declaration order (``linux-x86_64-cu128-py3.13-portable``)."""
        return "-".join((self.os, self.arch, self.backend, f"py{self.python}", *self.extra.values()))

    @property
    def resolves(self) -> bool:
        """Whether a run resolves this cell (it is neither skipped nor an alias of another)."""
        return not (self.settings.skip or self.settings.alias)

    @property
    def axes(self) -> dict[str, str]:
        """The four built-in axes (os, arch, backend, python) -> value."""
        return {axis: getattr(self, axis) for axis in AXES}

    @property
    def values(self) -> dict[str, str]:
        """Every axis -> value: the built-in ones, then the extra ones."""
        return {**self.axes, **self.extra}

    def lock_path(self, config: Config) -> str:
        """The lock file, relative to the project root (``locks/<cell>.txt``)."""
        return f"{config.locks}/{self.name}.txt"


@dataclass(frozen=True, kw_only=True)
class Expansion:
    """The cells of a matrix, in a stable order, and ``warnings`` about entries that do nothing,
    one line each, starting with the entry's key path (``tool.lockgen.rules[3].match: …``)."""

    cells: tuple[Cell, ...]
    warnings: tuple[str, ...] = ()


def expand(config: Config) -> list[Cell]:
    """Every cell of the matrix (see :func:`expand_matrix`); its warnings go to the ``lockgen``
    logger, one warning line each."""
    expansion = expand_matrix(config)
    for warning in expansion.warnings:
        log.warning("%s", warning)
    return list(expansion.cells)


def expand_matrix(config: Config) -> Expansion:
    """Return every cell of the matrix, in a stable order (axis order as written, then includes),
    with warnings for an exclude entry that matches no combination of the axes and a rule whose
    ``match`` matches no cell (issue "Trust", item 8; the values they name are checked against the
    axes by :mod:`lockgen.config.validate`).

    Raises :class:`ConfigError` when an include entry matches no cell and does not name every
    axis (it could neither extend a cell nor add one), for bad aliases and pins, and for a matrix
    without cells.
    """
    prefix = f"{config.key_prefix}." if config.key_prefix else ""
    combos, extra_vars, warnings = _combinations(config, prefix)
    warnings += [
        f"{prefix}rules[{i}].match: matches no cell, so the rule does nothing; fix or remove it"
        for i, rule in enumerate(config.rules)
        if combos and not any(rule.matches(c) for c in combos)
    ]
    cells = _cells(config, combos, extra_vars)
    problems: list[Problem | str] = [
        *_cell_problems(config, cells, prefix),
        *_unversioned_pins(config, cells.values(), prefix),
    ]
    if not cells:
        problems.append(
            f"{prefix}matrix: has no cells; list values for os, arch, backend and python, or add include entries"
        )
    if problems:
        raise ConfigError(config.source, problems)
    return Expansion(cells=tuple(cells.values()), warnings=tuple(warnings))


def _combinations(config: Config, prefix: str) -> tuple[list[dict[str, str]], list[dict[str, Any]], list[str]]:
    """The axis combinations (the product minus the excludes, then the includes that add one),
    each one's include ``vars``, and the warnings for excludes that match nothing. Raises
    :class:`ConfigError` for an include that matches no combination and cannot add one."""
    names = config.axis_names
    product: list[dict[str, str]] = [
        dict(zip(names, values)) for values in itertools.product(*(config.axes[a] for a in names))
    ]
    warnings = [
        f"{prefix}matrix.exclude[{i}]: matches no combination of the axes, so it excludes nothing; fix or remove it"
        for i, sel in enumerate(config.exclude)
        if not any(selector_matches(sel, c) for c in product)
    ]
    combos = [c for c in product if not any(selector_matches(sel, c) for sel in config.exclude)]
    extra_vars: list[dict[str, Any]] = [{} for _ in combos]
    problems = []
    for i, inc in enumerate(config.include):
        hits = [j for j, c in enumerate(combos) if all(c[a] == v for a, v in inc.axes.items())]
        for j in hits:
            extra_vars[j].update(inc.vars)
        if not hits:
            if len(inc.axes) == len(names):
                combos.append({axis: inc.axes[axis] for axis in names})
                extra_vars.append(dict(inc.vars))
            else:
                missing = ", ".join(a for a in names if a not in inc.axes)
                problems.append(f"{prefix}matrix.include[{i}]: matches no cell and cannot add one (missing {missing})")
    if problems:
        raise ConfigError(config.source, problems)
    return combos, extra_vars, warnings


def _cells(config: Config, combos: Sequence[dict[str, str]], extra_vars: Sequence[dict[str, Any]]) -> dict[str, Cell]:
    """Cell name -> cell, each with the defaults, then every rule that matches it, then its
    include ``vars`` merged in; the first of two combinations with one name wins."""
    cells: dict[str, Cell] = {}
    for combo, inc_vars in zip(combos, extra_vars):
        settings = config.defaults
        for rule in config.rules:
            if rule.matches(combo):
                settings = settings.merged(rule.settings)
        settings = settings.merged(Settings(vars=inc_vars))
        cell = Cell(**{a: combo[a] for a in AXES}, extra={a: combo[a] for a in config.extra_axes}, settings=settings)
        cells.setdefault(cell.name, cell)
    return cells


def _unversioned_pins(config: Config, cells: Iterable[Cell], prefix: str) -> list[str]:
    """A ``pinned`` name some cells have no version for in their merged ``pins`` (a rule gives
    it to other cells only), one problem per ``pinned`` entry: its key path (the top level's, or
    the last matching rule that sets ``pinned``) and the cells. A name no pins table has at all is
    a validation problem (:meth:`lockgen.config.sources.SourceChecks.references`)."""
    from packaging.utils import canonicalize_name

    found: dict[tuple[str, str], list[str]] = {}
    for cell in cells:
        pins = {canonicalize_name(k) for k in cell.settings.pins}
        setters = [
            i for i, rule in enumerate(config.rules) if rule.settings.pinned is not None and rule.matches(cell.values)
        ]
        where = f"{prefix}rules[{setters[-1]}].pinned" if setters else f"{prefix}pinned"
        for i, name in enumerate(cell.settings.pinned or ()):
            if canonicalize_name(name) not in pins:
                found.setdefault((f"{where}[{i}]", name), []).append(cell.name)
    return [
        f"{key}: {name!r} has no version in the pins of cell{'s' if len(names) > 1 else ''} {', '.join(names)} "
        f"(a rule's pins give it to other cells only); add it to {prefix}pins or to a rule matching these cells"
        for (key, name), names in found.items()
    ]


def _cell_problems(config: Config, cells: Mapping[str, Cell], prefix: str) -> list[Problem]:
    """What is wrong with the cells' merged settings: an alias naming no cell (with the closest
    names), a skipped cell or another alias, or a cell of another Python. Each problem names the
    key path that sets the alias (the last matching rule's ``rules[3].alias``, else the top
    level's) and the cells it is wrong for."""
    from lockgen.runtime.words import did_you_mean

    found: dict[tuple[str, str], list[str]] = {}
    for cell in cells.values():
        alias, settings = cell.settings.alias, cell.settings
        target = cells.get(alias) if alias else None
        if not alias:
            continue
        if target is None:
            others = [name for name in cells if name != cell.name]
            message = f"alias {alias!r} names no cell of the matrix{did_you_mean(alias, others)}"
        elif target.settings.alias or target.settings.skip or settings.skip:
            message = f"alias {alias!r}: an alias and its cell must be resolved (not skipped, not aliases)"
        elif target.python != cell.python:
            message = f"alias {alias!r} is for Python {target.python}, not {cell.python}"
        else:
            continue
        setters = [i for i, rule in enumerate(config.rules) if rule.settings.alias and rule.matches(cell.values)]
        key = f"{prefix}rules[{setters[-1]}].alias" if setters else f"{prefix}alias"
        found.setdefault((key, message), []).append(cell.name)
    return [Problem(key=key, message=message, cells=tuple(names)) for (key, message), names in found.items()]


def parse_selectors(selectors: Iterable[str], extra: Sequence[str] = ()) -> dict[str, set[str]]:
    """Parse ``--only KEY=VALUE`` strings into axis -> accepted values.

    Repeating a key accepts any of its values; different keys must all match. Besides the four
    axes and the ``extra`` ones, ``name`` selects by cell name. Raises :class:`UsageError` on a
    malformed selector.
    """
    keys = (*AXES, *extra, "name")
    result: dict[str, set[str]] = {}
    for text in selectors:
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value or key not in keys:
            raise UsageError(f"--only {text!r}: write KEY=VALUE with KEY one of {', '.join(keys)}")
        result.setdefault(key, set()).add(value)
    return result


class Selectable(Protocol):
    """What :func:`select` reads of a cell (manifest rows of the no-op path qualify too)."""

    @property
    def name(self) -> str: ...
    @property
    def os(self) -> str: ...
    @property
    def arch(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def python(self) -> str: ...
    @property
    def extra(self) -> Mapping[str, str]: ...


_C = TypeVar("_C", bound=Selectable)


def select(cells: Sequence[_C], names: Sequence[str] = (), only: Iterable[str] = ()) -> list[_C]:
    """Cells named in ``names`` (all when empty) that also match every ``--only`` selector.

    Raises :class:`UsageError` for an unknown cell name (suggesting close ones), for a selector
    value that no cell has (listing the values of that key; issue "Trust", item 8), or when the
    selectors together match nothing.
    """
    from lockgen.runtime.words import did_you_mean

    by_name = {c.name: c for c in cells}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        hints = [name + did_you_mean(name, by_name) for name in unknown]
        raise UsageError(f"unknown cell(s): {'; '.join(hints)}. `lockgen matrix` lists the cells")
    chosen = [by_name[n] for n in dict.fromkeys(names)] if names else list(cells)
    selectors = parse_selectors(only, list(dict.fromkeys(axis for c in cells for axis in c.extra)))
    for key, values in selectors.items():
        have = list(dict.fromkeys(_value(c, key) for c in cells))
        for value in sorted(values):
            if value in have:
                continue
            if key == "name":
                raise UsageError(
                    f"--only name={value}: no such cell{did_you_mean(value, have)}; `lockgen matrix` lists the cells"
                )
            raise UsageError(f"--only {key}={value}: {value!r} is not a value of the {key} axis ({', '.join(have)})")
    chosen = [c for c in chosen if all(_value(c, k) in v for k, v in selectors.items())]
    if not chosen:
        raise UsageError("no cell matches the selection; `lockgen matrix` lists the cells")
    return chosen


def _value(cell: Selectable, key: str) -> str:
    if key in cell.extra:
        return cell.extra[key]
    value: str = getattr(cell, key)
    return value


def with_alias_sources(cells: Sequence[Cell], chosen: Sequence[Cell]) -> list[Cell]:
    """``chosen`` with the cell each chosen alias reuses put before it, when not chosen already:
    ``lockgen lock <alias>`` locks the cell whose lock the alias installs (issue 8: it reported
    success while that cell had no lock)."""
    by_name = {c.name: c for c in cells}
    names = {c.name for c in chosen}
    result: list[Cell] = []
    for cell in chosen:
        source = cell.settings.alias
        if source and source not in names and source in by_name:
            result.append(by_name[source])
            names.add(source)
        result.append(cell)
    return result
