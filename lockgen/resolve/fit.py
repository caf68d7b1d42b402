"""Does a version of a package fit a cell: is there a file of it uv can use for the cell's target?

``lockgen bump`` asks when several lines pin a package to different versions behind markers
(``numpy==1.26.4; python_version < "3.12"`` beside ``numpy==2.1.0; python_version >= "3.12"``):
a new version is meant for the lines that reach a cell it fits (:mod:`lockgen.bump.lines`). uv
answers: ``NAME==VERSION`` alone, without dependencies, for the cell's target, Python, index,
find-links, index sources and ``exclude-newer`` (the cell's own inputs, other requirements left
out), written under the cell's work folder.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.plan.render import Rendered
from lockgen.resolve import uv, uvout
from lockgen.runtime.errors import LockgenError

__all__ = ["fits"]

log = logging.getLogger("lockgen")


def fits(
    root: Path, plan: Plan, name: NormalizedName, version: Version, mirrors: Mirrors, runner: uv.RunnerLike
) -> bool | None:
    """Whether uv finds a file of ``name==version`` for ``plan``'s cell (True/False); None when
    it could not tell (a host it could not reach, a file lockgen could not write)."""
    from lockgen.resolve.cellrun import CellRun
    from lockgen.resolve.pipeline import ask

    template = plan.rendered.files.get("requirements", ("requirements.in.j2", ""))[0]
    probe = replace(
        plan, rendered=Rendered(files={"requirements": (template, f"{name}=={version}\n")}), pinned={},
        pinned_specifiers={}, optional=(), no_deps=(), work=f"{plan.work}/fit",
    )  # fmt: skip
    run = CellRun(root, probe, uv.Options(), mirrors, runner)
    try:
        result = ask(run, f"{probe.work}/pylock.toml", no_deps=True)
    except (LockgenError, OSError) as exc:
        log.debug("cell %s: could not ask uv whether %s %s fits: %s", plan.cell.name, name, version, exc)
        return None
    if result.returncode == 0:
        return True
    if result.returncode != 1 or uvout.unreachable_hosts(
        result.stderr
    ):  # not a resolution's "no" (2: uv's usage error)
        return None
    log.debug("cell %s: %s %s does not fit: %s", plan.cell.name, name, version, uvout.reason(result.stderr))
    return False
