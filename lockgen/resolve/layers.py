"""Step 6 of a cell's resolution: the install layers after the main lock (what to resolve, and what an outcome means).

One layer per optional package, then no-deps, then unhashed.

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

This module decides; :mod:`lockgen.resolve.pipeline` runs each layer through the same steps as
the main resolution (inputs, uv, parse, newer levels, verify, describe): :func:`jobs` says what
each layer resolves, :func:`unavailable` and :func:`replacements` what an outcome means,
:func:`layer_lock` and :func:`unhashed_lock` make the lock files.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.pylock import Package, Pylock
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from lockgen.index.files import filename_of
from lockgen.locks.lock import UNREACHABLE, LayerKind, LayerRef, Lock, Replacement, Unavailable, text_sha256
from lockgen.plan.direct import SDISTS, EntryRefused, read_optional
from lockgen.plan.plan import Plan
from lockgen.plan.sources import index_pages
from lockgen.resolve import builds, choose, fetch, inputs, uvout
from lockgen.resolve.cellrun import CellRun, install_links
from lockgen.resolve.describe import Resolved
from lockgen.resolve.hints import NeedsBuilding, in_config_terms
from lockgen.resolve.inputs import BUILD_PINS, Inputs, layer_index, url_constraints, url_pins
from lockgen.resolve.invariants import Problem
from lockgen.runtime.errors import CellFailed
from lockgen.runtime.words import cut

__all__ = [
    "REASON_CHARS", "Built", "Job", "Layer", "LayerKilled", "LayerUnavailable", "Main", "Untrusted", "broken_stack", "failed",
    "job_inputs", "jobs", "layer_folder", "layer_lock", "main_of", "no_resolution", "not_had", "refuse_moves",
    "replacements", "unavailable", "unbuilt", "unhashed_lock", "write_preferences",
]  # fmt: skip


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
    #: layer name -> (its optional entry, None for no-deps; the packages it installs), for step 7
    installs: dict[str, tuple[str | None, list[Package]]] = field(default_factory=dict)

    def add(self, layer: Layer) -> None:
        """Take in a resolved layer."""
        self.locks.append(layer.lock)
        self.replaces += layer.replaces
        self.unverified |= layer.unverified
        self.dateless |= layer.dateless
        self.packages += layer.packages
        self.installs[layer.job.name] = (layer.job.entry, list(layer.packages))

    def withdraw(self, name: str, unavailable: Unavailable) -> None:
        """Take optional layer ``name`` out (its lock, replacements and packages): the cell cannot
        have it, for the ``unavailable`` reason (a backend mix found after it was resolved)."""
        self.locks = [lock for lock in self.locks if _name(lock) != name]
        self.replaces = [r for r in self.replaces if r.by != name]
        _, gone = self.installs.pop(name, (None, []))
        self.packages = [p for p in self.packages if all(p is not g for g in gone)]
        self.unavailable.append(unavailable)

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


@dataclass(frozen=True)
class Layer:
    """One resolved layer: its job, lock, what it installs, the main versions it replaces and
    what its checks found (sources with unchecked page hashes or without upload times)."""

    job: Job
    lock: Lock
    packages: tuple[Package, ...]
    replaces: tuple[Replacement, ...]
    unverified: frozenset[str]
    dateless: frozenset[str]


class LayerKilled(CellFailed):
    """uv was killed while resolving a layer: not a reason to drop the layer for good."""


class Untrusted(CellFailed):
    """A layer's files failed verify (a hash that does not match its page, a file from another
    host than its source): the cell fails even for an optional layer, as for main."""


class LayerUnavailable(Exception):
    """A layer this cell cannot have, with uv's reason; ``not_in_registry``: the packages the
    index has no project for (see :func:`lockgen.resolve.uvout.not_in_registry`)."""

    def __init__(self, reason: str, not_in_registry: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.not_in_registry = tuple(not_in_registry)


@dataclass(frozen=True)
class Main:
    """What every layer takes from the main resolution: its versions (``mains``: name ->
    version, which a layer must not move), the constraint file of those versions (``pins``), the
    pages of its index-source packages (a layer constrained to their versions must find them
    there) and the URL pins (its ``urls``-source packages come from their URL in a layer too)."""

    mains: Mapping[str, str]
    pins: str
    pages: tuple[str, ...]
    url_pins: tuple[str, ...]
    url_names: frozenset[str]


@dataclass(frozen=True)
class Job:
    """One layer to resolve: ``name`` (``optional-<package>``, ``no-deps``), its requirements text,
    constraints and find-links; ``entry``: the optional entry it comes from (None: no-deps)."""

    kind: LayerKind
    name: str
    requirements: str
    constraints: tuple[str, ...]
    links: tuple[str, ...]
    no_deps: bool = False
    entry: str | None = None
    notes: tuple[str, ...] = ()  # wheel URLs of the entry that did not fit the target

    @property
    def source(self) -> str:
        return f"layer-{self.name}"


def main_of(run: CellRun, main: Resolved) -> Main:
    """What the layers of ``run.plan`` take from the main resolution ``main`` (its versions are in
    ``<work>/main-pins.txt``, written when main was described; without the ``replace`` packages,
    ``<work>/layer-pins.txt``)."""
    plan = run.plan
    return Main(
        mains={p.name: str(p.version) for p in main.pylock.packages if p.version is not None},
        pins=_layer_pins(run),
        pages=index_pages(plan.sources, [p.name for p in main.pylock.packages]),
        url_pins=url_constraints(plan),
        url_names=frozenset(pin.name for pin in url_pins(plan)),
    )


def jobs(run: CellRun, main: Main) -> Iterator[tuple[str | None, Job | LayerUnavailable]]:
    """The layers of ``run.plan`` in install order: per optional entry ``(entry, job)``, or
    ``(entry, why)`` when it cannot be had without running uv (its host is down: C28; no wheel
    URL fits; its file cannot be downloaded); then ``(None, job)`` for the no-deps layer. Raises
    :class:`CellFailed` for an optional entry that is not a requirement."""
    plan = run.plan
    for entry in plan.optional:
        down = run.reach.layer_failure(plan, entry) if run.reach else None
        if down:  # the probe found its host down: no uv run, retried when a run reaches it (C28)
            yield entry, LayerUnavailable(f"{UNREACHABLE} {down}")
            continue
        try:
            name, line, notes = _requirement(run, entry, main.mains.get("torch"))
        except LayerUnavailable as exc:
            yield entry, exc
            continue
        links = (*plan.layer_find_links(name), *main.pages)
        constraints = (main.pins,) if name in main.url_names else (main.pins, *main.url_pins)
        torch = main.mains.get("torch")
        found = builds.read(run.root, plan, run.mirrors, plan.layer_find_links(name), Version(torch) if torch else None)
        why = found.none_fits(canonicalize_name(name))
        if why:
            yield entry, LayerUnavailable(why)
            continue
        excluded = found.constraints()
        if excluded:
            path = f"{plan.work}/optional-{name}-{BUILD_PINS}"
            run.write(path, excluded)
            constraints += (path,)
        yield (
            entry,
            Job(LayerKind.OPTIONAL, f"optional-{name}", line, constraints, links, entry=entry, notes=tuple(notes)),
        )
    if plan.no_deps:
        text = "".join(f"{line}\n" for line in plan.no_deps)
        links = (*plan.inputs.find_links, *main.pages)
        yield None, Job(LayerKind.NO_DEPS, "no-deps", text, (main.pins, *main.url_pins), links, no_deps=True)


def job_inputs(run: CellRun, job: Job, mains: Mapping[str, str]) -> tuple[Inputs, str]:
    """Write the layer's requirements (and its index pins project); its uv inputs and the output
    uv writes, seeded with main's versions ``mains`` as uv's preferences (a ``replace`` package
    the constraint leaves free keeps main's version unless the layer needs another; issue 17)."""
    plan = run.plan
    source = f"{plan.work}/{job.source}.in"
    output = f"{plan.work}/{job.source}/pylock.toml"
    run.write(source, job.requirements)
    write_preferences(run, output, mains)
    extra = layer_index(run.root, plan, run.mirrors, job.source, job.requirements)
    return Inputs(source, job.constraints, find_links=tuple(dict.fromkeys(job.links)), extra=extra), output


#: How long an unavailable reason may be (cut at a sentence end: :func:`lockgen.runtime.words.cut`).
REASON_CHARS = 300


def broken_stack(plan: Plan, entry: str, found: Sequence[Problem]) -> Unavailable:
    """The record of an optional layer that would break the cell's backend invariants (C27):
    what each package shows, and how to accept it anyway."""
    hint = f' (to accept it: allow-mix = {{ "{found[0].package}" = "why" }})'
    what = "; ".join(f"{p.evidence}, but {p.why}" if p.why else p.evidence for p in found)
    reason = cut(f"it would install a broken {plan.flavor} stack (backend invariants, C27): {what}", REASON_CHARS)
    return Unavailable(requirement=entry, reason=reason + hint)


def unavailable(plan: Plan, entry: str | None, job: Job | None, why: LayerUnavailable) -> Unavailable:
    """The record of a layer this cell cannot have (CASES C22, C28). Raises :class:`CellFailed`
    for the no-deps layer (it must resolve against main's versions), and for an optional entry
    the index has no project for that no source or find-links page may serve: a typo, not a
    layer this cell cannot have (recorded as unavailable it would pass ``check`` and be dropped
    for good; a fresh-eyes review: ``optional = ["orjsn"]`` exited 0)."""
    if entry is None:
        raise CellFailed(
            f"cell {plan.cell.name}: the no-deps layer cannot be resolved against the main lock's versions: {why}"
        )
    name = job.name.removeprefix("optional-") if job is not None else None
    if (
        name is not None
        and name in why.not_in_registry
        and not (plan.inputs.served_by.get(name) or plan.layer_find_links(name))
    ):
        raise CellFailed(
            f"cell {plan.cell.name}: optional entry {entry!r}: the index {plan.inputs.index_url} has no project {name}; "
            "check the name in optional (a package from a named source or a find-links page is unavailable instead)"
        )
    return Unavailable(requirement=entry, reason=str(why))


def failed(run: CellRun, job: Job, returncode: int, stderr: str) -> LayerUnavailable | None:
    """What a failed uv run of ``job`` means: a :class:`LayerUnavailable` to retry later (a host
    uv could not reach), or None: try once more without main's versions to tell a fight with main
    (:func:`refuse_moves`) from a layer that cannot be had (:func:`no_resolution`). Raises :class:`CellFailed` when uv was
    killed by a signal: not a reason to drop the layer for good."""
    if returncode < 0:
        raise LayerKilled(f"cell {run.plan.cell.name}: uv was killed while resolving layer {job.name}")
    if uvout.unreachable_hosts(stderr):
        return LayerUnavailable(f"{UNREACHABLE} {in_config_terms(run, run.mirrors.canonical(uvout.reason(stderr)))}")
    return None


def unbuilt(plan: Plan, pylock: Pylock) -> list[str]:
    """Packages of a layer's resolution that only a source archive serves (an sdist URL whose
    static metadata uv read without building) and that ``allow-build`` does not name: the layer
    cannot install them without a build the config did not allow."""
    return sorted(
        p.name
        for p in pylock.packages
        if p.name not in plan.inputs.allow_build and not p.wheels and (p.sdist is not None or _source_archive(p))
    )


def _source_archive(package: Package) -> bool:
    archive = package.archive
    location = (archive.url or archive.path or "") if archive is not None else ""
    return location.split("#")[0].endswith(SDISTS)


def write_preferences(run: CellRun, output: str, versions: Mapping[str, str]) -> None:
    """Seed uv's ``output`` with ``versions`` (name -> version) as its preferences: uv reads an
    existing output file's versions, as pip-compile does."""
    inputs.write_preferences(run.root, run.plan, output, dict(versions), prefer=True)


def no_resolution(run: CellRun, stderr: str) -> LayerUnavailable:
    """A layer uv could not resolve (and that does not fight main): unavailable, with uv's
    explanation cut at a sentence end."""
    why = in_config_terms(run, run.mirrors.canonical(uvout.without_build_hints(uvout.cause(stderr))))
    reason = cut(why, REASON_CHARS)
    return LayerUnavailable(reason, uvout.not_in_registry(stderr))


def not_had(plan: Plan, job: Job, failure: CellFailed) -> LayerUnavailable:
    """An optional layer a step refused (it would move a main version ``replace`` does not name,
    a verify problem, uv could not describe it): unavailable with that reason, without the
    ``cell X: layer Y`` the cell's message would start with (issue 17: optional means optional)."""
    text = str(failure).removeprefix(f"cell {plan.cell.name}: ").removeprefix(f"layer {job.name}").lstrip(": ")
    if isinstance(failure, NeedsBuilding):  # its first line says it all; uv's wording follows
        text = text.split("\n", 1)[0]
    return LayerUnavailable(cut(f"it {text}" if text.startswith("would ") else text, REASON_CHARS))


def refuse_moves(run: CellRun, name: str, layer: Mapping[str, str], mains: Mapping[str, str]) -> list[tuple[str, str]]:
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


def replacements(run: CellRun, job: Job, pylock: Pylock, mains: Mapping[str, str]) -> list[Replacement]:
    """The packages of main the layer sets to another version, each one ``replace`` names (the
    main lock's ``replaces``); :func:`refuse_moves` for the others."""
    layer: dict[str, str] = {p.name: str(p.version) for p in pylock.packages if p.version is not None}
    moved = refuse_moves(run, job.name, layer, mains)
    return [Replacement(name=canonicalize_name(p), main=mains[p], layer=v, by=job.name) for p, v in moved]


def layer_lock(run: CellRun, job: Job, inputs: Inputs, resolved: Resolved) -> Lock:
    """The lock file of a resolved layer, under the cell's folder."""
    plan = run.plan
    path = f"{layer_folder(plan.lock)}/{job.name}.txt"
    links = install_links(plan, inputs.find_links or (), resolved.pylock.packages)
    header = run.header(job.kind, path, layer_of=plan.lock, find_links=links)
    return Lock(header=header, entries=resolved.entries)


def unhashed_lock(run: CellRun, main: Resolved) -> Lock | None:
    """The ``unhashed`` layer: main's editable, local-path and VCS requirements (None: it has none)."""
    plan = run.plan
    unhashed = [e for e in main.entries if e.unhashed]
    if not unhashed:
        return None
    path = f"{layer_folder(plan.lock)}/unhashed.txt"
    header = run.header(LayerKind.UNHASHED, path, layer_of=plan.lock, find_links=plan.inputs.main_find_links)
    return Lock(header=header, entries=tuple(unhashed))


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


def _requirement(run: CellRun, entry: str, torch: str | None = None) -> tuple[str, str, list[str]]:
    """``(canonical name, requirements line, notes on skipped URLs)`` of an optional entry
    (:mod:`lockgen.plan.direct` reads its form): a requirement; a direct wheel URL or a package
    a ``urls`` source serves (of its URLs that fit the target, the newest build whose label fits
    the cell and main's ``torch``: :func:`lockgen.resolve.choose.by_label`; pinned by sha256);
    a source archive URL or a local archive (uv hashes it). Raises :class:`LayerUnavailable`
    with the reason when nothing fits (every build seen, and why it was passed over) or is
    reachable, :class:`CellFailed` for a form the config check lets through by mistake."""
    plan = run.plan
    try:
        form = read_optional(entry)
    except EntryRefused as exc:
        raise CellFailed(f"cell {plan.cell.name}: optional entry {entry!r} is {exc}") from None
    specifier = None
    if form.kind in ("archive", "local") and form.name is not None and form.url is not None:
        line = f"{form.name} @ {run.mirrors.file_url(form.url)}" if form.kind == "archive" else form.text
        return form.name, f"{line}\n", []
    if form.kind == "wheel" and form.url is not None:
        candidates, name = [form.url], form.name
    else:
        req = form.requirement
        assert req is not None
        name, specifier = canonicalize_name(req.name), req.specifier
        served = plan.inputs.served_by.get(name)
        if served is None or served.kind != "urls":
            return name, f"{entry}\n", []
        candidates = list(served.urls)
    kept, notes = fetch.fitting(candidates, plan.target, name)
    if specifier is not None:
        kept = [u for u in kept if specifier.contains(fetch.version_of(u), prereleases=True)]
    chosen = choose.by_label(kept, plan, Version(torch) if torch else None)
    best = chosen.best()
    if best is None:
        seen = "; ".join([*notes, *chosen.notes]) or "none listed"
        raise LayerUnavailable(f"no build fits this cell (builds seen: {seen})")
    url = best
    project = parse_wheel_filename(filename_of(url))[0]
    try:
        digest = fetch.sha256_of(run.root, url, run.mirrors, refresh=run.options.refresh, stop=run.stop)
    except fetch.FetchError as exc:  # unauthorized is retried too: a login may be given next time
        prefix = f"{UNREACHABLE} " if exc.transient else "not available: "
        raise LayerUnavailable(run.mirrors.canonical(prefix + str(exc))) from None
    return project, f"{project} @ {run.mirrors.file_url(url)} --hash=sha256:{digest}\n", notes
