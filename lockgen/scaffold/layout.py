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

__all__ = ["Cell", "as_list", "axes_of", "detect_table", "excludes", "inline", "matches", "matrix_table"]

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


def detect_table(cells: Iterable[Cell], why: list[str]) -> dict[str, object] | None:
    """A ``[detect]`` table that fits ``cells`` (os, arch, backend, …), so ``lockgen detect``, the
    vendored selector and ``install --detect`` pick among them (docs/installing.md, Detect):
    ``[[nvidia]]`` rules for the CUDA backends, newest first, each with the CUDA version its
    label says as ``min-cuda`` (``cu128`` -> 12.8) and a ``match`` for the platforms it has; the
    oldest as ``nvidia-unknown-cuda``; ``amd`` for a ROCm backend; ``apple`` for ``mps``; and
    ``no-gpu`` per os with a ``cpu`` cell. Checked against the cells by the selector's own
    validator (:func:`lockgen.cellselect.rules_problems`); None when no backend can be routed."""
    import re

    from lockgen.cellselect import DetectRules, rules_problems

    cells = list(cells)
    oses = {c[0] for c in cells}
    arches = {c[1] for c in cells}
    table: dict[str, object] = {}
    cuda: dict[str, tuple[int, int]] = {}
    for c in cells:
        found = re.fullmatch(r"cu(\d+)", c[2])
        if found:
            digits = found[1]
            cuda[c[2]] = (int(digits), 0) if len(digits) <= 2 else (int(digits[:-1]), int(digits[-1]))
    rocm = sorted({c[2] for c in cells if c[2].startswith("rocm")}, key=_version_of, reverse=True)
    if rocm:
        table["amd"] = rocm[0]
    if any(c[:3] == ("macos", "aarch64", "mps") for c in cells):
        table["apple"] = "mps"
    no_gpu = {os_: "cpu" for os_ in OS_ORDER if any(c[0] == os_ and c[2] == "cpu" for c in cells)}
    if no_gpu:
        table["no-gpu"] = inline(dict(no_gpu))
    if cuda:
        ordered = sorted(cuda, key=lambda b: cuda[b], reverse=True)
        table["nvidia-unknown-cuda"] = ordered[-1]
        rules = tomlkit.aot()
        for backend in ordered:
            rule = tomlkit.table()
            where = {(c[0], c[1]) for c in cells if c[2] == backend}
            match: dict[str, object] = {}
            b_oses = [o for o in OS_ORDER if any(w[0] == o for w in where)]
            b_arches = [a for a in ARCH_ORDER if any(w[1] == a for w in where)]
            if set(b_oses) != oses:
                match["os"] = b_oses if len(b_oses) > 1 else b_oses[0]
            if set(b_arches) != arches:
                match["arch"] = b_arches if len(b_arches) > 1 else b_arches[0]
            if match:
                rule["match"] = inline(match)
            rule["min-cuda"] = "{}.{}".format(*cuda[backend])
            rule["backend"] = backend
            rules.append(rule)
        table["nvidia"] = rules
    if not table:
        return None
    plain = {k: (v.unwrap() if hasattr(v, "unwrap") else v) for k, v in table.items()}
    rows = [{"os": c[0], "arch": c[1], "backend": c[2]} for c in cells]
    problems = rules_problems(DetectRules.from_dict(plain, "detect"), rows)
    if problems:  # a table that does not fit is not written: name why
        why.append("[detect]: not written (" + "; ".join(f"{k}: {m}" for k, m in problems) + ")")
        return None
    routed = (
        [f"NVIDIA {', '.join(sorted(cuda, key=lambda b: cuda[b], reverse=True))} by the driver's CUDA"] if cuda else []
    )
    routed += [f"AMD {rocm[0]}"] if rocm else []
    routed += ["Apple silicon mps"] if "apple" in table else []
    routed += [f"no GPU (with --cpu) cpu on {', '.join(no_gpu)}"] if no_gpu else []
    why.append(f"[detect]: {'; '.join(routed)}: rules that fit the matrix, for lockgen detect, the selector and "
               "install --detect (lockgen detect --cell NAME needs none)")  # fmt: skip
    return table


def _version_of(label: str) -> tuple[int, ...]:
    import re

    return tuple(int(p) for p in re.findall(r"\d+", label))
