"""``lockgen init``: the matrix and rule tables of a draft config, from the cells it has. Pure.

Shared by the two composers (:mod:`.compose` for requirement files, :mod:`.variants` for a
``pyproject.toml``'s backend extras): the axes of a set of cells, the ``exclude`` entries for
the combinations no cell has, and the rule ``match`` tables that cover a set of cells exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import product

import tomlkit
import tomlkit.items

__all__ = ["Cell", "as_list", "axes_of", "excludes", "inline", "matches", "matrix_table"]

Cell = tuple[str, ...]  # (os, arch, backend[, variant])
OS_ORDER = ("linux", "windows", "macos")
ARCH_ORDER = ("x86_64", "aarch64")


def axes_of(cells: Iterable[Cell], extra: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """The ``os``, ``arch`` and ``backend`` axes of ``cells`` (then ``extra`` ones), in
    lockgen's order (oses and arches), backends as first seen."""
    cells = list(cells)
    axes = {
        "os": [o for o in OS_ORDER if any(c[0] == o for c in cells)],
        "arch": [a for a in ARCH_ORDER if any(c[1] == a for c in cells)],
        "backend": list(dict.fromkeys(c[2] for c in cells)),
    }
    return {**axes, **(extra or {})}


def matrix_table(axes: dict[str, list[str]], pythons: list[str], cells: Iterable[Cell]) -> tomlkit.items.Table:
    """The ``[matrix]`` table: the axes, ``python`` and ``exclude`` entries for every
    combination of the axes not in ``cells``."""
    covered = set(cells)
    missing = [c for c in product(*axes.values()) if c not in covered]
    matrix = tomlkit.table()
    for axis, values in axes.items():
        matrix[axis] = values
    matrix["python"] = list(pythons)
    if missing:
        entries = tomlkit.array()
        for entry in excludes(missing, axes):
            entries.append(inline(entry))
        matrix["exclude"] = entries.multiline(True)
    return matrix


def inline(values: dict[str, object]) -> tomlkit.items.InlineTable:
    table = tomlkit.inline_table()
    table.update(values)
    return table


def as_list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def excludes(missing: list[Cell], axes: dict[str, list[str]]) -> list[dict[str, object]]:
    """Exclude entries covering exactly the ``missing`` combinations: a whole os (or os and
    arch, …) when every combination under it is missing, else the last axis's values as a list."""
    names = list(axes)
    left = set(missing)
    entries: list[dict[str, object]] = []
    for depth in range(1, len(names)):
        groups: dict[Cell, set[Cell]] = {}
        for c in left:
            groups.setdefault(c[:depth], set()).add(c)
        for prefix in sorted(groups, key=lambda p: [axes[n].index(v) for n, v in zip(names, p)]):
            under = {(*prefix, *rest) for rest in product(*(axes[n] for n in names[depth:]))}
            if under <= left:
                entries.append(dict(zip(names, prefix)))
                left -= under
    groups = {}
    for c in left:
        groups.setdefault(c[:-1], set()).add(c)
    for prefix in sorted(groups, key=lambda p: [axes[n].index(v) for n, v in zip(names, p)]):
        values = [v for v in axes[names[-1]] if (*prefix, v) in groups[prefix]]
        entries.append({**dict(zip(names, prefix)), names[-1]: values if len(values) > 1 else values[0]})
    return entries


def matches(found: list[Cell], names: list[str]) -> list[dict[str, object]]:
    """Rule ``match`` tables covering exactly ``found``: per backend (and variant), the oses
    whose arch sets agree together."""
    out = []
    rest = names[2:]
    for tail in dict.fromkeys(tuple(c[2:]) for c in found):
        by_os: dict[str, list[str]] = {}
        for c in found:
            if tuple(c[2:]) == tail:
                by_os.setdefault(c[0], []).append(c[1])
        by_arches: dict[tuple[str, ...], list[str]] = {}
        for os_, os_arches in by_os.items():
            by_arches.setdefault(tuple(os_arches), []).append(os_)
        for arches, oses in by_arches.items():
            match: dict[str, object] = {
                "os": oses if len(oses) > 1 else oses[0],
                "arch": list(arches) if len(arches) > 1 else arches[0],
            }
            match |= dict(zip(rest, tail))
            out.append(match)
    return out
