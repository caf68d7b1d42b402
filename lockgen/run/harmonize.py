"""One version set for the matrix: why each difference across cells exists, and which cells to move.

:func:`explain` turns the cells' locked versions into :class:`lockgen.locks.spread.Difference`
records, each cell off its package's common version with its :class:`~lockgen.locks.spread.Cause`,
from cheap, deterministic evidence, in this order:

1. a backend label on either version (``2.13.0+cu130`` vs ``+cpu``): never harmonized across
   backends (the backend decides the build);
2. the cell's own pin (``pins``, a template's ``==``/specifier) excludes the common version;
3. the index page of the common version (the run's copy, :mod:`lockgen.resolve.releases`): its
   ``requires-python`` excludes the cell's Python, or none of its wheels has a tag the cell's
   target installs (``packaging.tags``) and the package may not be built there;
4. uv was asked to prefer the common version in this run and kept the cell's own (``held``: the
   cell's other requirements hold it);
5. otherwise drift: nothing forces it (the cells were locked at different times).

:func:`moves` says, from the ``harmonize`` setting (docs/configuration.md, "Harmonizing"), which
cells of this run to resolve again and what to prefer there: ``unforced`` moves the drifted
cells to the common version; ``common`` moves every cell to the newest version each of them can
take; ``off`` moves nothing. The versions are handed to uv as preferences (its output file),
never as constraints: what uv cannot take it leaves, and the run reports it as held. A package
this run upgrades (``--upgrade-package``) is not moved: uv ignores a preference for it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from lockgen.config.model import Harmonize
from lockgen.locks.spread import Cause, Difference, Off, common_version, spread
from lockgen.plan.plan import Plan
from lockgen.resolve.releases import Release

__all__ = ["Evidence", "Release", "explain", "moves"]

#: ``(plan, name) -> {version: Release}`` from the run's pages; None: no page evidence.
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
) -> tuple[Cause, str]:
    """Why ``plan``'s cell locks ``name`` at ``version`` and not at ``target``: a cause and a
    sentence (see the module docstring for the order of the evidence)."""
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
) -> list[Difference]:
    """Every package ``locked`` (``{cell: {name: version}}``) holds at more than one version,
    each cell off the common version with its cause. Cells without a plan (not in the matrix
    any more) are left out."""
    found = []
    known = {cell: versions for cell, versions in locked.items() if cell in plans}
    for name, versions in spread(known).items():
        common = common_version(versions)
        off = tuple(
            sorted(
                Off(cell, version, *cause(name, common, version, plans[cell], evidence, held))
                for version, cells in versions.items()
                if version != common
                for cell in cells
            )
        )
        found.append(Difference(name, common, versions, off))
    return found


def moves(
    differences: Collection[Difference],
    setting: Harmonize,
    plans: Mapping[str, Plan],
    movable: Collection[str],
    evidence: Evidence | None = None,
    upgrade: Collection[str] = (),
) -> dict[str, dict[str, str]]:
    """``{cell: {name: version to prefer}}``: the cells of ``movable`` (those this run resolves)
    to resolve again, by the ``harmonize`` setting. A package with a backend label is never
    moved, nor one of ``upgrade``; nor is a cell forced off the target."""
    wanted: dict[str, dict[str, str]] = {}
    for difference in differences:
        mode = setting.of(difference.name)
        if mode == "off" or difference.name in upgrade or Cause.BACKEND_LABEL in difference.causes:
            continue
        target = _target(difference, mode, plans, evidence)
        if target is None:
            continue
        for version, cells in difference.versions.items():
            if version == target:
                continue
            for cell in cells:
                if cell in movable and cause(difference.name, target, version, plans[cell], evidence)[0] is Cause.DRIFT:
                    wanted.setdefault(cell, {})[difference.name] = target
    return {cell: dict(sorted(names.items())) for cell, names in sorted(wanted.items())}


def _target(difference: Difference, mode: str, plans: Mapping[str, Plan], evidence: Evidence | None) -> str | None:
    """The version to move ``difference``'s cells to: the common one (``unforced``), or the
    newest every cell can take (``common``; None: none)."""
    newest = sorted(difference.versions, key=lambda v: (_version(v) is not None, _version(v) or Version("0")))
    if mode == "unforced":
        return difference.common
    for target in reversed(newest):
        if all(
            cause(difference.name, target, version, plans[cell], evidence)[0] is Cause.DRIFT
            for version, cells in difference.versions.items()
            if version != target
            for cell in cells
        ):
            return target
    return None
