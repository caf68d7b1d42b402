"""Why a cell's main resolution failed, in the user's terms: uv's explanation and lockgen's hints.

uv names requirements, indexes and "the exclude newer time"; the user wrote a config and
templates. :func:`explain` ties uv's text (parsed by :mod:`lockgen.resolve.uvout`) back to what
the user can change: the template line that fought a pin (:mod:`lockgen.resolve.blame`, C08), the
``allow-build`` a package without wheels needs (C26), the ``pins`` entry naming a version the
index lacks, the ``exclude-newer`` cutoff, the index source a package is pinned to (C25), the
pages uv read for a package it found nowhere, what an index source does have of a package (read
by :mod:`lockgen.resolve.offers` before). uv's own wording is put in the config's terms
(:func:`in_config_terms`: no ``lockgen-index-pins``, no work-file paths). Pure: plan and text
in, text out (blame reads the templates).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from lockgen.plan.plan import Plan, exact_pin
from lockgen.plan.sources import INDEX_PROJECT_NAME
from lockgen.resolve import blame, fetch, uvout
from lockgen.resolve.cellrun import CellRun
from lockgen.resolve.inputs import URL_PINS
from lockgen.resolve.offers import Offer
from lockgen.runtime.errors import CellFailed

__all__ = ["NeedsBuilding", "explain", "in_config_terms", "needs_building", "to_ask"]


class NeedsBuilding(CellFailed):
    """Packages of the cell have no wheel for its target in any version the requirements allow,
    and ``allow-build`` does not name them (CASES C26); the message names them all."""


def needs_building(
    run: CellRun, names: Sequence[str], stderr: str, pythons: Mapping[NormalizedName, str] | None = None
) -> str:
    """The message of a cell (or layer) whose ``names`` have no wheel for its target: every one
    found in this run (uv names one per run; lockgen left each out to look for the next), and one
    ``allow-build`` line to copy, with the packages it already allows (issue 17). ``stderr``: uv's
    first failure, for the first package's versions ("" when uv did not fail: a source archive
    whose metadata uv read without building). ``pythons``: the packages whose version has wheels
    for the cell's platform, only for other Pythons (:func:`lockgen.resolve.offers.other_pythons`):
    that is said first, with the ways out that keep wheels (another Python for the cell, another
    version), and building from source comes last: a pin made for older Pythons is not a package
    to build."""
    plan = run.plan
    target = plan.target
    given = pythons or {}
    pythons = {canonicalize_name(n): given[canonicalize_name(n)] for n in names if canonicalize_name(n) in given}
    listed = ", ".join(names)
    line = json.dumps(sorted({*plan.inputs.allow_build, *names}))
    where = run.mirrors.canonical(uvout.without_build_hints(uvout.cause(stderr))) if stderr else ""
    said = "\nuv said, of the first one: " + where if where else ""
    if pythons:
        whose = "; ".join(pythons.values())
        return (
            f"cell {plan.cell.name}: {whose}, and this cell's Python is {target.python} ({target.python_tag}): "
            f"give the cell a Python those wheels serve (the matrix's python values), or require a version of "
            f"{', '.join(pythons)} with a {target.python_tag} wheel; building from source is the last resort "
            f"(allow-build = {line}, a compiler and the package's build dependencies on every machine that locks)"
            + said
        )
    return (
        f"cell {plan.cell.name}: {listed}: no wheel for {target.platform} {target.python_tag} in any version the "
        f"requirements allow ({len(names)} package{'s' if len(names) > 1 else ''}, all found in this run); to build "
        f"{'them' if len(names) > 1 else 'it'} from source, copy into the cell's settings: allow-build = {line}" + said
    )


def explain(
    run: CellRun,
    stderr: str,
    offered: Mapping[NormalizedName, Offer] | None = None,
    pythons: Mapping[NormalizedName, str] | None = None,
) -> str:
    """The message of a cell whose main resolution failed with ``stderr``: ``cell <name>: uv could
    not resolve it:`` with uv's explanation (canonical URLs, without uv's build hints, in the
    config's terms: :func:`in_config_terms`) and lockgen's ``lockgen: …`` hints. With ``offered``
    (what the sources :func:`to_ask` names do list, :mod:`lockgen.resolve.offers`), the first
    line says it in the config's terms instead: ``source 'pytorch' (…/rocm6.2) has torch
    2.12.0+rocm6.2, not 2.13.0+rocm6.2`` (issue 16)."""
    plan = run.plan
    why = in_config_terms(run, run.mirrors.canonical(uvout.without_build_hints(uvout.explain(stderr))))
    fought = blame.blame(run.root, plan, stderr)
    # a fought pin explains the failure: uv's "wheels are required" hints about the versions it
    # backtracked through would point the user at the wrong fix (a review found that)
    built = "" if fought else _build_hint(run, stderr, pythons or {})
    hint = built + _pin_hint(run, stderr) + _cutoff_hint(run, stderr)
    headline = _offered(plan, stderr, offered or {})
    if not headline:
        hint += _index_hint(plan, stderr) or _where_hint(plan, stderr)
        return f"cell {plan.cell.name}: uv could not resolve it:\n{why}{fought}{hint}"
    return f"cell {plan.cell.name}: {headline}\nuv could not resolve it:\n{why}{fought}{hint}"


def to_ask(plan: Plan, stderr: str) -> list[NormalizedName]:
    """The packages uv could not have that an index or find-links source of ``plan`` serves:
    whose pages :mod:`lockgen.resolve.offers` reads to say what the source has."""
    names = [*uvout.no_such_version(stderr), *uvout.not_found(stderr)]
    return [
        n
        for n in dict.fromkeys(names)
        if (s := plan.inputs.served_by.get(n)) is not None and s.kind in ("index", "find-links")
    ]


def _offered(plan: Plan, stderr: str, offered: Mapping[NormalizedName, Offer]) -> str:
    """``source 'pytorch' (URL) has torch A, B, not C`` for each package uv could not have from
    its source; empty when ``offered`` has none of them."""
    wanted = uvout.no_such_version(stderr)
    target = f"{plan.target.platform} {plan.target.python_tag}"
    said = []
    for name, offer in offered.items():
        if offer.error is not None:
            continue  # a page it could not read: the index hint says so, with what to check (a login)
        source = offer.source
        text = f"source {source.name!r} ({source.urls[0]}) {offer.served(target)}"
        said.append(f"{text}, not {wanted[name]}" if name in wanted else text)
    return "; ".join(said)


#: lockgen's work files and generated project, as uv names them, and what the user knows them as.
_INDEX_PINS = re.compile(rf"\b{re.escape(INDEX_PROJECT_NAME)}(?:==0)?(?: \([^)]*\))?( depends on| depend on)?")


def in_config_terms(run: CellRun, text: str) -> str:
    """uv's ``text`` with lockgen's internals in the config's terms (issue 16): the generated
    project that pins packages to their index source (``lockgen-index-pins depends on torch==…``
    reads ``you require torch==…``, uv's words for the requirements), the rendered inputs under
    ``.lockgen/<cell>/`` as the templates they come from, the main lock's pins as that lock."""
    plan = run.plan
    text = _INDEX_PINS.sub(lambda m: "you require" if m.group(1) else "your requirements", text)
    names = {
        plan.inputs.input_paths[role]: f"{plan.templates}/{template}"
        for role, (template, _) in plan.rendered.files.items()
    }
    names[f"{plan.work}/main-pins.txt"] = f"the versions of {plan.lock}"
    names[f"{plan.work}/{URL_PINS}"] = "the wheel URLs of the urls sources"
    for path, shown in sorted(names.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(path, shown)
    return text


def _build_hint(run: CellRun, stderr: str, pythons: Mapping[NormalizedName, str]) -> str:
    """Say what to do when uv needed to build a package lockgen may not build (CASES C26); for
    a version whose wheels serve only other Pythons (``pythons``), that first."""
    names = [n for n in uvout.needs_wheels(stderr) if n not in run.plan.inputs.allow_build]
    if not names:
        return ""
    target = run.plan.target
    if any(n in pythons for n in names):
        return "\nlockgen: " + needs_building(run, names, "", pythons).split(": ", 1)[1]
    listed = ", ".join(names)
    return (
        f"\nlockgen: {listed}: no wheel for {target.platform} {target.python_tag} in any version the "
        f"requirements allow; add {'them' if len(names) > 1 else 'it'} to allow-build to build from source"
    )


def _pin_hint(run: CellRun, stderr: str) -> str:
    """Tie a version the index does not have back to the config when the config's ``pins`` give
    it (uv's text names only the requirement; a fresh-eyes review had to guess where it came
    from)."""
    pins = {canonicalize_name(k): exact_pin(v) for k, v in run.plan.cell.settings.pins.items()}
    hints = []
    for name, version in uvout.no_such_version(stderr).items():
        pinned = pins.get(name)
        if pinned is None or Version(pinned).public != Version(version).public:
            continue  # the label a source's policy adds (2.13.0 -> 2.13.0+cu130) is the same pin
        source = run.plan.inputs.served_by.get(name)
        where = f"source {source.name!r}" if source is not None else "the index"
        label = Version(version).local
        labelled = f"; +{label} is the label {where} gives it" if label and not Version(pinned).local else ""
        hints.append(
            f"\nlockgen: {name}=={pinned} is the version the pins give {name} (pins.{name} in {run.config}, or a "
            f"rule's pins, for this cell{labelled}); {where} has no such version: change the pin"
        )
    return "".join(hints)


def _cutoff_hint(run: CellRun, stderr: str) -> str:
    """Name the ``exclude-newer`` setting when uv says the versions asked for are newer than it
    (uv's text names only "the exclude newer time")."""
    names = uvout.too_new(stderr)
    if not names or not run.plan.inputs.exclude_newer:
        return ""
    return (
        f"\nlockgen: {', '.join(names)}: the versions required were published after exclude-newer "
        f"({run.plan.inputs.exclude_newer}, set in {run.config}): move the cutoff or the requirement, or exempt the "
        f"package: exclude-newer-package = {{ {names[0]} = false }} (or a date of its own)"
    )


def _index_hint(plan: Plan, stderr: str) -> str:
    """Say where lockgen sent a package uv could not find: a package pinned to an index source
    comes from that index only, so "not found in the package registry" means that index has no
    page for it for this cell (HTTP 404: not every flavour's index has every package), or refused
    the login (uv reports HTTP 401/403 the same way). Empty when no such package is named."""
    pinned = {canonicalize_name(r.name): s for s, r in plan.inputs.index_pins}
    hints = []
    for name in uvout.not_in_registry(stderr):  # an (explicit) index that does not serve it, or refused to
        source = pinned.get(name)
        if source is not None:
            hints.append(
                f"\nlockgen: {name} is taken only from index source {source.name!r} ({source.urls[0]}): that index has no "
                f"{name} for this cell (HTTP 404 for {source.urls[0].rstrip('/')}/{name}/), or refused the login "
                f"({fetch.LOGIN_HINT})"
            )
    return "".join(hints)


def _where_hint(plan: Plan, stderr: str) -> str:
    """Name the pages uv read for a package it found nowhere (a typo, or a page that lists
    nothing: an empty or garbled index page), canonical URLs only."""
    lines = []
    newer = set(uvout.too_new(stderr))  # its versions exist, after the cutoff: _cutoff_hint says so
    for name in (n for n in uvout.not_found(stderr) if n not in newer):
        source = plan.inputs.served_by.get(name)
        if source is not None:
            pages = ", ".join(source.find_links() or source.urls)
            lines.append(
                f"\nlockgen: {name}: source {source.name!r} lists no usable file of it ({pages}); check the name, or those pages"
            )
        else:
            page = f"{plan.inputs.index_url.rstrip('/')}/{name}/"
            lines.append(
                f"\nlockgen: {name}: the index {plan.inputs.index_url} lists no usable file of it ({page}); check the name, or that page"
            )
    return "".join(lines)
