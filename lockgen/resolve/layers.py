"""Install layers after the main lock: one per optional package, then no-deps, then unhashed.

The seed installs optional accelerators one by one after everything else and only warns when
one cannot be had; it installs no-deps packages last, without their dependencies. lockgen
resolves each optional package as its own layer and the no-deps layer with every version of the
main lock as a constraint, so a layer adds packages and never moves one (CASES C22): a layer that
cannot be resolved so is resolved once more without main's versions, and a package it would then
set to another version than main fails the cell, naming the package and both versions. The
``replace`` setting declares such a replacement intended: those packages are left out of the
constraint, and each one the layer sets to another version is recorded (``Replacement``: the main
lock's ``replaces`` header, the manifest, ``lockgen install``'s output). An optional package that
cannot be had for the cell (no fitting wheel, an unreachable source, no resolution) is recorded
as unavailable with the reason, and the cell still succeeds; an interrupted or crashed uv is not
a reason (the cell fails, or the run stops). Editable, local-path and VCS requirements of the
main resolution go to the ``unhashed`` layer: they have no hash pip ``--require-hashes`` could
check, so they are installed after main, without hashes and without dependencies (which main has).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from packaging.pylock import Package
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from lockgen.errors import CellFailed
from lockgen.locks.lock import UNREACHABLE, LayerKind, LayerRef, Lock, Replacement, Unavailable, text_sha256
from lockgen.plan.plan import Plan
from lockgen.plan.sources import index_pages
from lockgen.resolve import fetch, hashcheck, uv, uvout, verify
from lockgen.resolve.cellrun import CellRun, Resolved, describe, read_pylock
from lockgen.resolve.inputs import install_links, layer_index, main_extra
from lockgen.resolve.inputs import url_pins as inputs_url_pins
from lockgen.resolve.newer import add_newer_wheels

__all__ = ["Built", "layer_folder", "resolve"]


@dataclass
class Built:
    """The layers of one cell, in install order, and what was left out."""

    locks: list[Lock] = field(default_factory=list)
    unavailable: list[Unavailable] = field(default_factory=list)
    replaces: list[Replacement] = field(default_factory=list)
    skipped_urls: list[str] = field(default_factory=list)  # notes on wheel URLs that did not fit
    dateless: set[str] = field(default_factory=set)  # sources that served layer artifacts without upload times
    packages: list[Package] = field(default_factory=list)  # what the layers install (backend invariants)
    unverified: set[str] = field(default_factory=set)  # sources whose page hashes were not checked

    def refs(self) -> tuple[LayerRef, ...]:
        """The main lock's ``layer`` fields: each layer file's path and the sha256 of its text."""
        return tuple(
            LayerRef(kind=lock.header.kind, name=_name(lock), sha256=text_sha256(lock.render()), path=lock.header.path)
            for lock in self.locks
        )


def _name(lock: Lock) -> str:
    return lock.header.path.rsplit("/", 1)[-1].removesuffix(".txt")


def layer_folder(lock: str) -> str:
    """``locks/<cell>``: where the layer files of the main lock ``locks/<cell>.txt`` live."""
    return lock.removesuffix(".txt")


class _Unavailable(Exception):
    """A layer this cell cannot have, with uv's reason; ``not_in_registry``: the packages the
    index has no project for (see :func:`lockgen.resolve.uvout.not_in_registry`)."""

    def __init__(self, reason: str, not_in_registry: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.not_in_registry = tuple(not_in_registry)


def resolve(run: CellRun, main: Resolved) -> Built:
    """Resolve every layer of ``run.plan`` against the main resolution ``main`` (its versions are
    written to ``<work>/main-pins.txt`` by :func:`~lockgen.resolve.resolve.describe`; the
    ``replace`` packages are left out of that constraint). Raises :class:`CellFailed` when a layer
    would set a package to another version than main without ``replace`` naming it (C22)."""
    plan = run.plan
    pins = _layer_pins(run)
    mains: dict[str, str] = {p.name: str(p.version) for p in main.pylock.packages if p.version is not None}
    built = Built()
    # main's packages from index sources: a layer constrained to their versions must find them there
    main_pages = index_pages(plan.sources, [p.name for p in main.pylock.packages])
    # and those from urls sources come from their URL in a layer too (a layer never moves one)
    url_pins = main_extra(plan)[1]
    url_names = {pin.name for pin in inputs_url_pins(plan)}
    for entry in plan.optional:
        down = run.reach.layer_failure(plan, entry) if run.reach else None
        if down:  # the probe found its host down: no uv run, retried when a run reaches it (C28)
            built.unavailable.append(Unavailable(requirement=entry, reason=f"{UNREACHABLE} {down}"))
            continue
        name = None  # known once _requirement has read the entry
        try:
            name, line, notes = _requirement(run, entry)
            built.skipped_urls += notes
            links = (*plan.layer_find_links(name), *main_pages)
            constraints = (pins,) if name in url_names else (pins, *url_pins)
            lock = _layer(run, built, LayerKind.OPTIONAL, f"optional-{name}", line, constraints, links, mains=mains)
        except _Unavailable as exc:
            if name in exc.not_in_registry and not (plan.served_by(name) or plan.layer_find_links(name)):
                raise CellFailed(_no_such_project(plan, entry, name)) from None
            built.unavailable.append(Unavailable(requirement=entry, reason=str(exc)))
            continue
        built.locks.append(lock)
    if plan.no_deps:
        text = "".join(f"{line}\n" for line in plan.no_deps)
        try:
            links = (*plan.find_links, *main_pages)
            lock = _layer(
                run, built, LayerKind.NO_DEPS, "no-deps", text, (pins, *url_pins), links, no_deps=True, mains=mains
            )
            built.locks.append(lock)
        except _Unavailable as exc:
            raise CellFailed(
                f"cell {plan.cell.name}: the no-deps layer cannot be resolved against the main lock's versions: {exc}"
            ) from None
    unhashed = [e for e in main.entries if e.unhashed]
    if unhashed:
        path = f"{layer_folder(plan.lock)}/unhashed.txt"
        header = run.header(LayerKind.UNHASHED, path, layer_of=plan.lock, find_links=plan.main_find_links)
        built.locks.append(Lock(header=header, entries=tuple(unhashed)))
    return built


def _no_such_project(plan: Plan, entry: str, name: str) -> str:
    """An optional entry the index has no project for, and that no source or find-links page may
    serve, is a typo, not a layer this cell cannot have: recorded as unavailable it would pass ``check`` and be dropped for good (a
    fresh-eyes review: ``optional = ["orjsn"]`` exited 0)."""
    return (
        f"cell {plan.cell.name}: optional entry {entry!r}: the index {plan.index_url} has no project {name}; "
        "check the name in optional (a package from a named source or a find-links page is unavailable instead)"
    )


def _layer_pins(run: CellRun) -> str:
    """The constraint file of the layers: the main lock's versions, without the ``replace``
    packages (then written to ``<work>/layer-pins.txt``)."""
    plan = run.plan
    pins = f"{plan.work}/main-pins.txt"
    if not plan.replace:
        return pins
    lines = (run.root / pins).read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if line.strip() and canonicalize_name(Requirement(line).name) not in plan.replace]
    run.write(f"{plan.work}/layer-pins.txt", "".join(f"{line}\n" for line in kept))
    return f"{plan.work}/layer-pins.txt"


def _layer(
    run: CellRun,
    built: Built,
    kind: LayerKind,
    name: str,
    requirements: str,
    constraints: tuple[str, ...],
    links: Sequence[str],
    no_deps: bool = False,
    mains: Mapping[str, str] | None = None,
) -> Lock:
    """One layer's lock. Raises :class:`_Unavailable` with uv's reason when it cannot be had, and
    :class:`CellFailed` when it would move a version of main (``mains``: name -> version) that
    ``replace`` does not name."""
    plan = run.plan
    source = f"{plan.work}/layer-{name}.in"
    output = f"{plan.work}/layer-{name}/pylock.toml"
    run.write(source, requirements)
    (run.root / output).unlink(missing_ok=True)
    inputs = uv.Inputs(
        source,
        constraints,
        find_links=tuple(dict.fromkeys(links)),
        extra=layer_index(run, f"layer-{name}", requirements),
    )
    result = run.compile_learning(output, inputs=inputs, no_deps=no_deps)
    if result.returncode != 0:
        if result.returncode < 0:  # killed by a signal: not a reason to drop the layer for good
            raise CellFailed(f"cell {plan.cell.name}: uv was killed while resolving layer {name}")
        why = run.mirrors.canonical(uvout.reason(result.stderr))
        if uvout.unreachable_hosts(result.stderr):
            raise _Unavailable(f"{UNREACHABLE} {why}")
        free = uv.Inputs(
            source, constraints[1:], find_links=inputs.find_links, extra=inputs.extra
        )  # without main's versions
        _refuse_moves(run, name, _unconstrained(run, name, free, no_deps), mains or {})
        raise _Unavailable(why, uvout.not_in_registry(result.stderr))
    pylock = add_newer_wheels(run, read_pylock(run, output), f"layer-{name}", inputs.find_links, inputs.extra)
    moved = _refuse_moves(
        run, name, {p.name: str(p.version) for p in pylock.packages if p.version is not None}, mains or {}
    )
    built.replaces += [
        Replacement(name=canonicalize_name(p), main=(mains or {})[p], layer=v, by=name) for p, v in moved
    ]
    checked = hashcheck.check(plan, pylock, run.root, run.mirrors, run.verified, run.stop)
    built.unverified |= checked.unverified
    found = verify.artifact_problems(plan, pylock, run.mirrors) + list(checked.problems)
    if found:
        raise CellFailed(f"cell {plan.cell.name}: layer {name}: " + "; ".join(found))
    if plan.exclude_newer:
        built.dateless.update(verify.without_upload_time(plan, pylock))
    built.packages += pylock.packages
    resolved = describe(run, inputs, pylock, f"layer-{name}", no_deps)
    path = f"{layer_folder(plan.lock)}/{name}.txt"
    header = run.header(
        kind, path, layer_of=plan.lock, find_links=install_links(plan, inputs.find_links or (), pylock.packages)
    )
    return Lock(header=header, entries=resolved.entries)


def _unconstrained(run: CellRun, name: str, inputs: uv.Inputs, no_deps: bool) -> dict[str, str]:
    """``{name: version}`` the layer resolves to without main's versions ({} when it cannot be
    resolved even so): what it would set, to name both versions when it fights main (C22)."""
    output = f"{run.plan.work}/layer-{name}-free/pylock.toml"
    (run.root / output).unlink(missing_ok=True)
    if run.compile_learning(output, inputs=inputs, no_deps=no_deps).returncode != 0:
        return {}
    return {p.name: str(p.version) for p in read_pylock(run, output).packages if p.version is not None}


def _refuse_moves(run: CellRun, name: str, layer: Mapping[str, str], mains: Mapping[str, str]) -> list[tuple[str, str]]:
    """``[(package, layer version)]`` where ``layer`` sets a package of main to another version and
    ``replace`` names it. Raises :class:`CellFailed` naming the package and both versions for each
    one it does not name (C22: a layer never silently contradicts a main pin)."""
    plan = run.plan
    moved = sorted((p, v) for p, v in layer.items() if p in mains and Version(v) != Version(mains[p]))
    refused = [(p, v) for p, v in moved if p not in plan.replace]
    if refused:
        listed = "; ".join(f"{p} to {v} (the main lock has {p}=={mains[p]})" for p, v in refused)
        names = ", ".join(f'"{p}"' for p, _ in refused)
        raise CellFailed(
            f"cell {plan.cell.name}: layer {name} would set {listed} (CASES C22); loosen the layer's requirement, "
            f"or declare the replacement in the cell's settings: replace = [{names}]"
        )
    return moved


def _requirement(run: CellRun, entry: str) -> tuple[str, str, list[str]]:
    """``(canonical name, requirements line, notes on skipped URLs)`` of an optional entry: a
    requirement, a direct wheel URL, or a package a ``urls`` source serves (its URL that fits the
    target, pinned by sha256). Raises :class:`_Unavailable` with the reason when nothing fits or
    is reachable."""
    plan = run.plan
    if "://" in entry:
        candidates, name, specifier = [entry], None, None
    else:
        try:
            req = Requirement(entry)
        except InvalidRequirement as exc:
            raise CellFailed(f"cell {plan.cell.name}: optional entry {entry!r} is not a requirement: {exc}") from None
        name, specifier = canonicalize_name(req.name), req.specifier
        served = plan.served_by(name)
        if served is None or served.kind != "urls":
            return name, f"{entry}\n", []
        candidates = list(served.urls)
    kept, notes = fetch.fitting(candidates, plan.target, name)
    if specifier is not None:
        kept = [u for u in kept if specifier.contains(fetch.version_of(u), prereleases=True)]
    if not kept:
        raise _Unavailable("no wheel URL fits this target (" + ("; ".join(notes) or "none listed") + ")")
    url = kept[0]
    project = canonicalize_name(parse_wheel_filename(fetch.wheel_name(url))[0])
    try:
        digest = fetch.sha256_of(run.root, url, run.mirrors, refresh=run.options.refresh, stop=run.stop)
    except fetch.FetchError as exc:  # unauthorized is retried too: a login may be given next time
        prefix = f"{UNREACHABLE} " if exc.transient else "not available: "
        raise _Unavailable(run.mirrors.canonical(prefix + str(exc))) from None
    return project, f"{project} @ {run.mirrors.file_url(url)} --hash=sha256:{digest}\n", notes
