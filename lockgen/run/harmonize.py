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

from collections.abc import Collection, Mapping

from packaging.version import InvalidVersion, Version

from lockgen.config.model import Harmonize
from lockgen.locks.spread import Cause, Difference, Evidence, cause, explain
from lockgen.plan.plan import Plan

__all__ = ["explain", "moves"]


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


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
