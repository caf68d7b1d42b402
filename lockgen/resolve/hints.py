"""Why a cell's main resolution failed, in the user's terms: uv's explanation and lockgen's hints.

uv names requirements, indexes and "the exclude newer time"; the user wrote a config and
templates. :func:`explain` ties uv's text (parsed by :mod:`lockgen.resolve.uvout`) back to what
the user can change: the template line that fought a pin (:mod:`lockgen.resolve.blame`, C08), the
``allow-build`` a package without wheels needs (C26), the ``pins`` entry naming a version the
index lacks, the ``exclude-newer`` cutoff, the index source a package is pinned to (C25), the
pages uv read for a package it found nowhere. Pure: plan and text in, text out (blame reads the
templates).
"""

from __future__ import annotations

from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.plan.plan import Plan, exact_pin, index_pins
from lockgen.resolve import blame, fetch, uvout
from lockgen.resolve.cellrun import CellRun

__all__ = ["explain"]


def explain(run: CellRun, stderr: str) -> str:
    """The message of a cell whose main resolution failed with ``stderr``: ``cell <name>: uv could
    not resolve it:`` with uv's explanation (canonical URLs, without uv's build hints) and
    lockgen's ``lockgen: …`` hints."""
    plan = run.plan
    why = run.mirrors.canonical(uvout.without_build_hints(uvout.explain(stderr)))
    fought = blame.blame(run.root, plan, stderr)
    # a fought pin explains the failure: uv's "wheels are required" hints about the versions it
    # backtracked through would point the user at the wrong fix (a review found that)
    built = "" if fought else _build_hint(run, stderr)
    hint = built + _pin_hint(run, stderr) + _cutoff_hint(run, stderr)
    hint += _index_hint(plan, stderr) or _where_hint(plan, stderr)
    return f"cell {plan.cell.name}: uv could not resolve it:\n{why}{fought}{hint}"


def _build_hint(run: CellRun, stderr: str) -> str:
    """Say what to do when uv needed to build a package lockgen may not build (CASES C26)."""
    names = [n for n in uvout.needs_wheels(stderr) if n not in run.plan.allow_build]
    if not names:
        return ""
    target = run.plan.target
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
    return "".join(
        f"\nlockgen: {name}=={version} is the version the pins give {name} (the pins table of {run.config}, or a "
        f"rule's pins, for this cell); the index has no such version: change the pin"
        for name, version in uvout.no_such_version(stderr).items()
        if (pinned := pins.get(name)) is not None and Version(pinned) == Version(version)
    )


def _cutoff_hint(run: CellRun, stderr: str) -> str:
    """Name the ``exclude-newer`` setting when uv says the versions asked for are newer than it
    (uv's text names only "the exclude newer time")."""
    names = uvout.too_new(stderr)
    if not names or not run.plan.exclude_newer:
        return ""
    return (
        f"\nlockgen: {', '.join(names)}: the versions required were published after exclude-newer "
        f"({run.plan.exclude_newer}, set in {run.config}): move the cutoff or the requirement"
    )


def _index_hint(plan: Plan, stderr: str) -> str:
    """Say where lockgen sent a package uv could not find: a package pinned to an index source
    comes from that index only, so "not found in the package registry" means that index has no
    page for it for this cell (HTTP 404: not every flavour's index has every package), or refused
    the login (uv reports HTTP 401/403 the same way). Empty when no such package is named."""
    pinned = {canonicalize_name(r.name): s for s, r in index_pins(plan)}
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
    for name in uvout.not_found(stderr):
        source = plan.served_by(name)
        if source is not None:
            pages = ", ".join(source.find_links() or source.urls)
            lines.append(
                f"\nlockgen: {name}: source {source.name!r} lists no usable file of it ({pages}); check the name, or those pages"
            )
        else:
            page = f"{plan.index_url.rstrip('/')}/{name}/"
            lines.append(
                f"\nlockgen: {name}: the index {plan.index_url} lists no usable file of it ({page}); check the name, or that page"
            )
    return "".join(lines)
