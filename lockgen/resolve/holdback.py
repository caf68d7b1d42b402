"""What holds a package back when ``--upgrade-package NAME`` leaves it where it was.

uv picks the newest version the inputs allow; when that is the locked one, a user wants to know
which input decided it (pip-tools and uv say nothing; issue 18 met "already the newest allowed
under the exclude-newer cutoff" for a package a template pinned). Per cell, in this order:

1. a pin that cannot move (the config's ``pinned``, as :meth:`Plan.pin_requirements` has it);
2. a line of the rendered requirements, constraints or overrides naming the package with a
   specifier that stops newer versions (``==``, ``===``, ``~=``, ``<``, ``<=``), named by its
   template line (:class:`lockgen.plan.render.LineMap`);
3. otherwise uv is asked once more with ``NAME>LOCKED`` added to the requirements, and its
   explanation (:mod:`lockgen.resolve.uvout`) says which: the ``exclude-newer`` cutoff, another
   requirement (``torch==2.13.0 depends on numpy<2.5``), or that the index has nothing newer.

:func:`holder` answers for one cell; it writes only under the cell's work folder.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.config import Config
from lockgen.plan import reqline
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.plan.render import LineMap, Rendered
from lockgen.resolve import uv, uvout
from lockgen.runtime.errors import LockgenError

__all__ = ["holder"]

log = logging.getLogger("lockgen")

_STOPS = ("==", "===", "~=", "<", "<=")
_ROLE = {"requirements": "requirement", "constraints": "constraint", "overrides": "override"}


def holder(
    config: Config,
    lines: LineMap,
    plan: Plan,
    name: str,
    locked: Version,
    mirrors: Mirrors,
    runner: uv.RunnerLike | None = None,
) -> str:
    """What keeps ``name`` at ``locked`` in ``plan``'s cell, as a phrase (``the pin
    templates/requirements.in.j2:3: numpy==2.4.5``, ``the exclude-newer cutoff
    2026-11-25T00:00:00Z: …``, ``torch==2.13.0, which requires numpy<2.5``); "" when nothing
    was found (uv found a newer version allowed after all)."""
    key = canonicalize_name(name)
    pinned = plan.pin_requirements().get(key)
    if pinned is not None:
        return f"the pin {key}{pinned} ({config.source}: pins and pinned)"
    found = _input_line(lines, plan, key)
    if found:
        return found
    return _ask_uv(config.root, plan, key, locked, mirrors, runner or uv.Runner())


def _input_line(lines: LineMap, plan: Plan, name: str) -> str:
    """The first rendered input line of ``name`` whose specifier stops newer versions."""
    for role in ("overrides", "constraints", "requirements"):
        if role not in plan.rendered.files:
            continue
        template, text = plan.rendered.files[role]
        for raw in text.splitlines():
            line = reqline.parse(raw)
            if line is None or line.name != name or not any(s.operator in _STOPS for s in line.requirement.specifier):
                continue
            where = lines.origin(template, raw)
            place = f"{where[0]}:{where[1]}" if where else f"{plan.templates}/{template}"
            kind = (
                "pin"
                if reqline.pin_of(line.requirement) is not None and "==" in str(line.requirement.specifier)
                else _ROLE[role]
            )
            return f"the {kind} {place}: {line.body}"
    return ""


def _ask_uv(root: Path, plan: Plan, name: str, locked: Version, mirrors: Mirrors, runner: uv.RunnerLike) -> str:
    """Resolve the cell's inputs with ``name>locked`` added and read why uv cannot."""
    from lockgen.resolve.cellrun import CellRun
    from lockgen.resolve.hints import in_config_terms
    from lockgen.resolve.pipeline import ask

    files = dict(plan.rendered.files)
    template, text = files.get("requirements", ("", ""))
    files["requirements"] = (
        template,
        (text if not text or text.endswith("\n") else text + "\n") + f"{name}>{locked.public}\n",
    )
    probe = replace(plan, rendered=Rendered(files=files), work=f"{plan.work}/holdback")
    run = CellRun(root, probe, uv.Options(), mirrors, runner)
    try:
        result = ask(run, f"{probe.work}/pylock.toml")
    except (LockgenError, OSError) as exc:
        log.debug("cell %s: the hold-back probe of %s failed: %s", plan.cell.name, name, exc)
        return ""
    if result.returncode == 0:
        return ""
    # uv's words in the config's terms first (issue 16): the probe's own `NAME>LOCKED` may sit in
    # the generated index-pins project, which must read as "you require", never as a holder.
    stderr = in_config_terms(run, result.stderr)
    if name in uvout.too_new(stderr) and plan.inputs.exclude_newer:
        return f"the exclude-newer cutoff {plan.inputs.exclude_newer}: newer versions were published after it"
    for dependent, requirement in uvout.depends_on(stderr, name):
        who = dependent if "==" in dependent else f"every version of {dependent}"
        return f"{who}, which requires {requirement}"
    if uvout.only_available(stderr, name) or canonicalize_name(name) in uvout.no_version_of(stderr):
        return "nothing newer on the index" + (
            f" before the exclude-newer cutoff {plan.inputs.exclude_newer}" if plan.inputs.exclude_newer else ""
        )
    return "uv: " + " ".join(uvout.reason(stderr).split())[:300]
