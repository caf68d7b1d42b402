"""The matrix's version spread: each package whose versions differ across cells, and why.

:func:`spread` finds, from ``{cell: {name: version}}`` (each cell's main resolution), every
package locked at more than one version; a :class:`Difference` records it once, with its common
version (the one most cells have; a tie goes to the newest) and, for each cell off it, a
:class:`Cause`: forced (a backend label, the cell's own pin, the ``requires-python`` of the
common version, no wheel of it for the cell's platform and Python, or uv kept the cell's version
when asked for the common one: another requirement holds it) or not forced (``drift``: the cell
was locked at another time). ``uv lock`` keeps one version per package across platforms where it
can; per-target lockers do not (docs/review-and-ci.md, "Differences across cells").

``locks/differences.json`` keeps the latest run's record (:func:`dumps`, :func:`loads`: sorted
keys, no timestamps or paths, so that the same locks give the same bytes); ``check --json``
reports it and ``diff`` says when a difference appears or disappears (:func:`changes`). A
package present in some cells only (a marker, an optional layer) is not a difference of
versions and is not listed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any, Protocol

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.version import InvalidVersion, Version

from lockgen.plan.plan import Plan
from lockgen.runtime.errors import LockFormatError

__all__ = [
    "DIFFERENCES_NAME", "Cause", "Difference", "Evidence", "Off", "Release", "cause", "changes", "common_version",
    "differences_path", "dumps", "explain", "loads", "spread",
]  # fmt: skip

DIFFERENCES_NAME = "differences.json"
#: Layout version of ``differences.json``.
FORMAT = 1


class Cause(str, Enum):
    """Why a cell is off its package's common version. Every cause but :attr:`DRIFT` is forced."""

    BACKEND_LABEL = "backend label"  # versions carry backend labels (2.13.0+cu130 vs +cpu): never harmonized
    PIN = "pin"  # the cell's own pin (its config or template) excludes the common version
    PRERELEASE = "prerelease"  # the common version is a pre-release the cell's prerelease setting does not allow
    REQUIRES_PYTHON = "requires-python"  # the common version's requires-python excludes the cell's Python
    NO_WHEEL = "no wheel"  # the common version has no wheel for the cell's platform and Python (and no build)
    HELD = "held"  # uv kept the cell's version when asked for the common one (another requirement holds it)
    DRIFT = "drift"  # not forced: the cells were locked at different times

    @property
    def forced(self) -> bool:
        return self is not Cause.DRIFT


@dataclass(frozen=True, order=True)
class Off:
    """One cell off its package's common version: its ``version``, the ``cause`` and a sentence
    saying what forces it (empty for drift)."""

    cell: str
    version: str
    cause: Cause
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"cell": self.cell, "version": self.version, "cause": self.cause.value, "detail": self.detail}


@dataclass(frozen=True)
class Difference:
    """A package locked at more than one version across the cells. ``versions``: version ->
    the cells that lock it (sorted); ``off``: each cell not on ``common``, sorted by cell."""

    name: str
    common: str
    versions: Mapping[str, tuple[str, ...]]
    off: tuple[Off, ...]

    @property
    def forced(self) -> bool:
        """Every cell off the common version is forced there."""
        return all(o.cause.forced for o in self.off)

    @property
    def causes(self) -> tuple[Cause, ...]:
        """The distinct causes, in :class:`Cause` order."""
        found = {o.cause for o in self.off}
        return tuple(c for c in Cause if c in found)

    def sentence(self) -> str:
        """One line for a report: ``numpy: 2.5.5 in 8 cells, 2.4.6 in 4 (forced: requires-python: …)``."""
        counts = ", ".join(
            f"{v} in {len(cells)} cell{'s' if len(cells) != 1 else ''}"
            for v, cells in sorted(self.versions.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        )
        if self.forced:
            details = sorted({o.detail or o.cause.value for o in self.off})
            why = "forced: " + "; ".join(details[:3]) + ("; …" if len(details) > 3 else "")
        else:
            drifted = sorted(o.cell for o in self.off if not o.cause.forced)
            why = f"not forced, drift: {', '.join(drifted[:4])}{', …' if len(drifted) > 4 else ''}"
        return f"{self.name}: {counts} ({why})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "common": self.common,
            "forced": self.forced,
            "causes": [c.value for c in self.causes],
            "versions": {v: list(cells) for v, cells in sorted(self.versions.items())},
            "off": [o.to_dict() for o in self.off],
        }


def _key(version: str) -> tuple[int, Version | str]:
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


def common_version(versions: Mapping[str, Sequence[str]]) -> str:
    """The version most cells lock (``versions``: version -> cells); a tie goes to the newest."""
    return max(versions, key=lambda v: (len(versions[v]), _key(v)))


def spread(locked: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, tuple[str, ...]]]:
    """``{name: {version: cells}}`` of every package that ``locked`` (``{cell: {name:
    version}}``) holds at more than one version, names and cells sorted."""
    seen: dict[str, dict[str, list[str]]] = {}
    for cell in sorted(locked):
        for name, version in locked[cell].items():
            seen.setdefault(name, {}).setdefault(version, []).append(cell)
    return {
        name: {v: tuple(cells) for v, cells in sorted(by.items())}
        for name, by in sorted(seen.items())
        if len(by) > 1
    }


class Release(Protocol):
    """What an index page says of one version (:class:`lockgen.resolve.releases.Release`)."""

    @property
    def requires_python(self) -> str | None: ...
    @property
    def tags(self) -> frozenset[Tag]: ...
    @property
    def sdist(self) -> bool: ...


#: ``(plan, name) -> {version: Release}`` from the run's pages (None where there is none).
Evidence = Callable[[Plan, str], Mapping[str, Release]]


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


@lru_cache(maxsize=4096)
def _specifier(text: str) -> SpecifierSet | None:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def cause(
    name: str,
    target: str,
    version: str,
    plan: Plan,
    evidence: Evidence | None,
    held: Mapping[tuple[str, str], str] | None = None,
    recorded: Mapping[tuple[str, str, str, str], tuple[Cause, str]] | None = None,
) -> tuple[Cause, str]:
    """Why ``plan``'s cell locks ``name`` at ``version`` and not at ``target``: a cause and a
    sentence (see the module docstring for the order of the evidence). ``recorded``: causes a
    run wrote, by ``(cell, name, version, target)``, used where no page evidence is at hand
    (``lockgen merge``)."""
    want, have = _version(target), _version(version)
    if (want is not None and want.local) or (have is not None and have.local):
        return (
            Cause.BACKEND_LABEL,
            f"{name} {version} and {target} carry backend labels, never harmonized across backends",
        )
    pin = plan.pin_requirements().get(name)
    spec = _specifier(pin) if pin else None
    if spec is not None and want is not None and not spec.contains(want, prereleases=True):
        return Cause.PIN, f"{plan.cell.name} pins {name}{pin}"
    mode = plan.prerelease_package.get(name, plan.prerelease)
    if want is not None and want.is_prerelease and mode != "allow" and not (spec is not None and spec.prereleases):
        return Cause.PRERELEASE, f"{name} {target} is a pre-release; the cell allows one only with prerelease = \"allow\""
    if evidence is None and recorded:
        found = recorded.get((plan.cell.name, name, version, target))
        if found is not None:
            return found
    release = evidence(plan, name).get(target) if evidence is not None else None
    if release is not None:
        python = plan.target.python
        requires = _specifier(release.requires_python) if release.requires_python else None
        if requires is not None and not requires.contains(python, prereleases=True):
            return (
                Cause.REQUIRES_PYTHON,
                f"{name} {target} requires Python {release.requires_python} (the cell has {python})",
            )
        buildable = release.sdist and name in plan.allow_build
        if not buildable and not (release.tags & plan.target.supported_tags()):
            return Cause.NO_WHEEL, f"{name} {target} has no wheel for {plan.target.platform}, Python {python}"
    said = (held or {}).get((plan.cell.name, name))
    if said is not None:
        return Cause.HELD, said
    return Cause.DRIFT, ""


def explain(
    locked: Mapping[str, Mapping[str, str]],
    plans: Mapping[str, Plan],
    evidence: Evidence | None = None,
    held: Mapping[tuple[str, str], str] | None = None,
    recorded: Iterable[Difference] = (),
) -> list[Difference]:
    """Every package ``locked`` (``{cell: {name: version}}``) holds at more than one version,
    each cell off the common version with its cause. Cells without a plan (not in the matrix
    any more) are left out. ``recorded``: differences runs wrote (see :func:`cause`)."""
    causes = {(o.cell, d.name, o.version, d.common): (o.cause, o.detail) for d in recorded for o in d.off}
    found = []
    known = {cell: versions for cell, versions in locked.items() if cell in plans}
    for name, versions in spread(known).items():
        common = common_version(versions)
        off = tuple(
            sorted(
                Off(cell, version, *cause(name, common, version, plans[cell], evidence, held, causes))
                for version, cells in versions.items()
                if version != common
                for cell in cells
            )
        )
        found.append(Difference(name, common, versions, off))
    return found


def differences_path(locks: str) -> str:
    """``<locks>/differences.json``, project-relative."""
    return f"{locks}/{DIFFERENCES_NAME}"


def dumps(differences: Iterable[Difference]) -> str:
    """The text of ``differences.json``: sorted, LF, ending with a newline."""
    data = {"format": FORMAT, "packages": [d.to_dict() for d in sorted(differences, key=lambda d: d.name)]}
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def loads(text: str, where: str) -> list[Difference]:
    """Parse ``differences.json`` (untrusted: read from disk or git) into :class:`Difference`
    values. Raises ``LockFormatError`` naming ``where`` and the key path of what is wrong."""
    from lockgen.locks.jsonfile import load_json
    from lockgen.runtime.errors import InputError

    try:  # bounded: depth and numbers (a shard's or another revision's file)
        data = load_json(text, where, "a differences file")
    except InputError as exc:
        why = exc.problems[0].message if exc.problems else str(exc)
        raise LockFormatError(f"{where}: {why}; run `lockgen all` to write it again") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("packages"), list):
        raise LockFormatError(f"{where}: not a differences file of format {FORMAT}; run `lockgen all` to write it again")
    found = []
    for i, entry in enumerate(data["packages"]):
        try:
            found.append(_difference(entry))
        except (KeyError, TypeError, ValueError) as exc:
            raise LockFormatError(f"{where}: packages[{i}]: {exc or 'malformed'}; run `lockgen all` to write it again") from None
    return found


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of strings")
    return tuple(value)


def _difference(entry: Any) -> Difference:
    if not isinstance(entry, dict):
        raise ValueError("expected a table")
    name, common = entry["name"], entry["common"]
    if not isinstance(name, str) or not isinstance(common, str):
        raise ValueError("name and common must be strings")
    versions = entry["versions"]
    if not isinstance(versions, dict):
        raise ValueError("versions must be a table")
    off = []
    for item in entry["off"]:
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("cell", "version", "cause")):
            raise ValueError("off entries need cell, version and cause")
        detail = item.get("detail", "")
        off.append(Off(item["cell"], item["version"], Cause(item["cause"]), detail if isinstance(detail, str) else ""))
    return Difference(name, common, {str(v): _strings(c) for v, c in versions.items()}, tuple(sorted(off)))


def changes(
    before: Mapping[str, Mapping[str, Sequence[str]]],
    after: Mapping[str, Mapping[str, Sequence[str]]],
    explained: Mapping[str, Difference] | None = None,
) -> list[str]:
    """Lines for ``diff``: each package whose versions started or stopped differing across the
    cells between ``before`` and ``after`` (each ``{name: {version: cells}}``, as :func:`spread`
    gives); ``explained``: the new side's records, whose sentence says why, when it has one."""
    explained = explained or {}
    lines = []
    for name in sorted(set(before) | set(after)):
        if name in after and name not in before:
            known = explained.get(name)
            said = known.sentence() if known is not None else f"{name}: {', '.join(sorted(after[name]))}"
            lines.append(f"now differs across cells: {said}")
        elif name in before and name not in after:
            lines.append(f"no longer differs across cells: {name} (one version in every cell that has it)")
    return lines
