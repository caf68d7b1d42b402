"""Install layers after the main lock: one per optional package, then the no-deps layer.

The seed installs optional accelerators one by one after everything else and only warns when
one cannot be had; it installs no-deps packages last, without their dependencies. lockgen
resolves each optional package as its own layer, with every version of the main lock as a
constraint (so a layer can add packages but never move one), and writes it to
``locks/<cell>/optional-<package>.txt``; an optional package that cannot be had for the cell (no
fitting wheel, an unreachable source, no resolution) is recorded as unavailable with the reason,
and the cell still succeeds. The no-deps layer (``locks/<cell>/no-deps.txt``) is resolved with
``--no-deps``; failing it fails the cell. The main lock's header lists the layers in install order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lockgen.resolve import fetch
from lockgen.resolve import uv
from lockgen.errors import CellFailed
from lockgen.locks.lock import UNREACHABLE, is_lock, lock_text, locked_versions, set_hashes
from lockgen.plan.plan import Plan

OPTIONAL, NO_DEPS = "optional", "no-deps"


@dataclass
class Built:
    """Layers of one cell: files to write (path -> text), in install order, and what was left out."""

    layers: list[tuple[str, str, str]] = field(default_factory=list)  # (name, path, flag)
    unavailable: list[tuple[str, str]] = field(default_factory=list)  # (requirement, reason)
    skipped_urls: list[str] = field(default_factory=list)  # notes on wheel URLs that did not fit
    dateless: set[str] = field(default_factory=set)  # sources that served layer artifacts without upload times
    files: dict[str, str] = field(default_factory=dict)

    def header_lines(self) -> Iterator[str]:
        for name, path, flag in self.layers:
            yield f"layer: {name} {path} {flag}"
        for requirement, reason in self.unavailable:
            yield f"unavailable: {requirement}: {' '.join(reason.split())}"  # one header line
        for note in self.skipped_urls:
            yield f"skipped-url: {note}"


def layer_folder(plan: Plan) -> str:
    """``locks/<cell>``: where the cell's layer locks live."""
    return plan.lock.removesuffix(".txt")


def resolve(ctx, pins: str) -> Built:
    """Resolve every layer of ``ctx.plan``; ``pins`` is a constraints file of every version of
    the main lock, so an optional layer cannot move one."""
    plan = ctx.plan
    built = Built()
    for entry in plan.optional:
        try:
            name, line, notes = _requirement(ctx, entry)
            built.skipped_urls += notes
        except _Unavailable as exc:
            built.unavailable.append((entry, str(exc)))
            continue
        body = _compile(ctx, f"optional-{name}", line, (pins,), plan.layer_find_links(name), built=built)
        if isinstance(body, _Unavailable):
            built.unavailable.append((entry, str(body)))
            continue
        _add(built, plan, f"optional-{name}", OPTIONAL, body)
    if plan.no_deps:
        body = _compile(ctx, NO_DEPS, "".join(f"{line}\n" for line in plan.no_deps), (), plan.find_links, no_deps=True, built=built)
        if isinstance(body, _Unavailable):
            raise CellFailed(f"cell {plan.cell.name}: the no-deps layer cannot be resolved: {body}")
        _add(built, plan, NO_DEPS, NO_DEPS, body)
    return built


def _add(built: Built, plan: Plan, name: str, flag: str, body: str) -> None:
    path = f"{layer_folder(plan)}/{name}.txt"
    install = "--no-deps " if flag == NO_DEPS else ""
    extra = [
        f"# layer-of: {plan.lock}",
        f"# install after {plan.lock}: pip install {install}--require-hashes -r {path}",
    ]
    built.layers.append((name, path, flag))
    built.files[path] = lock_text(plan, body, extra)


class _Unavailable(Exception):
    pass


def _requirement(ctx, entry: str) -> tuple[str, str, list[str]]:
    """``(canonical name, requirements line, notes on skipped URLs)`` of an optional entry: a
    requirement, a direct wheel URL, or a package a ``urls`` source serves (its URL that fits the
    target, pinned by sha256). Raises :class:`_Unavailable` with the reason when nothing fits or
    is reachable."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name, parse_wheel_filename

    plan = ctx.plan
    if "://" in entry:
        candidates, name, specifier = [entry], None, None
    else:
        try:
            req = Requirement(entry)
        except InvalidRequirement as exc:
            raise CellFailed(f"cell {plan.cell.name}: optional entry {entry!r} is not a requirement: {exc}") from None
        name, specifier = canonicalize_name(req.name), req.specifier
        source = plan.served_by(name)
        if source is None or source.kind != "urls":
            return name, f"{entry}\n", []
        candidates = list(source.urls)
    kept, notes = fetch.fitting(candidates, plan.target, name)
    if specifier is not None:
        kept = [u for u in kept if specifier.contains(parse_wheel_filename(fetch.wheel_name(u))[1], prereleases=True)]
    if not kept:
        raise _Unavailable("no wheel URL fits this target (" + ("; ".join(notes) or "none listed") + ")")
    url = kept[0]
    project = canonicalize_name(parse_wheel_filename(fetch.wheel_name(url))[0])
    try:
        digest = fetch.sha256_of(ctx.root, url, ctx.mirrors)
    except fetch.FetchError as exc:
        prefix = f"{UNREACHABLE} " if exc.transient else "not available: "
        raise _Unavailable(ctx.mirrors.canonical(prefix + str(exc))) from None
    return project, f"{project} @ {ctx.mirrors.fetch_url(url)} --hash=sha256:{digest}\n", notes


def _compile(ctx, name: str, requirements: str, constraints: tuple[str, ...], find_links=None, no_deps: bool = False, built: Built | None = None):
    """Resolve one layer; its body (canonical URLs) or an :class:`_Unavailable` reason. Records
    in ``built`` the sources that served its artifacts without upload times."""
    from lockgen.locks.lock import atomic_write

    plan = ctx.plan
    source = f"{plan.work}/layer-{name}.in"
    output = f"{plan.work}/layer-{name}.txt"
    atomic_write(ctx.root / source, requirements)
    (ctx.root / output).unlink(missing_ok=True)
    inputs = uv.Inputs(source, constraints, find_links=find_links)
    result = ctx.run(output, inputs=inputs, no_deps=no_deps)
    if result.returncode != 0:
        reason = ctx.mirrors.canonical(_reason(result.stderr))
        network = any(w in result.stderr for w in ("Failed to fetch", "Failed to read", "Connection", "timed out", "dns error"))
        return _Unavailable(f"{UNREACHABLE} {reason}" if network else reason)
    body = ctx.read(output)
    from lockgen.resolve.resolve import pylock  # noqa: cycle, fixed later

    described, _ = pylock(ctx, inputs, locked_versions(body), f"layer-{name}", no_deps)
    body, unhashed = set_hashes(body, described)
    if built is not None and plan.exclude_newer:
        from lockgen.resolve.verify import without_upload_time

        built.dateless.update(without_upload_time(plan, described, ctx.mirrors))
    if unhashed:
        raise CellFailed(f"cell {plan.cell.name}: layer {name}: no sha256 for {', '.join(unhashed)}")
    return body


def _reason(stderr: str) -> str:
    """The gist of uv's error on one line: its last explanatory line."""
    lines = [line.strip(" ╰─▶×│") for line in uv.explain(stderr).splitlines()]
    lines = [line.removeprefix("error: ").removeprefix("cause: ") for line in lines if line and not line.startswith("hint")]
    if not lines:
        return "uv failed without a message"
    return lines[0] if len(lines) == 1 else f"{lines[0]}: {lines[-1]}"


def remove_stale(root: Path, plan: Plan, built: Built) -> None:
    """Delete layer files of this cell that the current config no longer produces."""
    folder = root / layer_folder(plan)
    if not folder.is_dir():
        return
    keep = {root / path for path in built.files}
    for path in folder.glob("*.txt"):
        if path not in keep and is_lock(path):
            path.unlink()
