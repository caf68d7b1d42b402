"""Step 1 of a cell's resolution: what uv reads, written under ``.lockgen/<cell>/`` before it resolves.

* The rendered requirements, constraints and overrides, with every URL in them through the
  mirrors (:meth:`~lockgen.plan.mirror.Mirrors.rewrite`): a direct reference written in a template
  (``pkg @ https://…``, a bare wheel URL) is fetched from the mirror like every other URL, and
  uv's outputs are read back canonical (issue 9, C23).
* ``index-pins/pyproject.toml``: the packages the requirements name that an index source serves,
  pinned to that index as uv explicit indexes (:func:`lockgen.plan.sources.index_project`, C25).
* ``url-pins.txt``: a constraint ``name @ URL`` for each package of the cell's ``urls`` sources
  with a wheel URL that fits the target (:func:`url_pins`). A constraint applies only where the
  package is required (directly or by a dependency), so a URL no requirement reaches is never
  fetched; a package the main requirements name is hashed by lockgen first (``--hash``: uv checks
  the file against it) and fails the cell when it cannot be had.
* ``build-pins.txt``: constraints excluding the builds on find-links pages and index sources whose
  label names another torch or backend than the cell's (:mod:`lockgen.resolve.builds`).
* uv's output file, seeded with the versions the cell has locked (:func:`write_preferences`).

What the files are is pure (:func:`main_inputs`: an :class:`Inputs`, the value the uv command is
built from); :func:`write_main` writes them and returns that value. No file here holds a login:
URLs carry environment references uv expands, and uv's environment carries the values
(:meth:`~lockgen.plan.mirror.Mirrors.uv_env`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from lockgen.locks import pylockfile
from lockgen.locks.lock import body_entries
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan, index_pins
from lockgen.plan.sources import INDEX_PROJECT, CellSource, index_project
from lockgen.resolve import builds, choose, fetch
from lockgen.runtime import bounded
from lockgen.runtime.errors import CellFailed, LockgenError

__all__ = [
    "BUILD_PINS", "URL_PINS", "Inputs", "UrlPin", "has_lines", "layer_index", "main_inputs", "url_constraints", "url_pins",
    "write_file",
    "write_main", "write_preferences",
]  # fmt: skip

#: The constraints that pin ``urls``-source packages to their URL, under the cell's work folder.
URL_PINS = "url-pins.txt"
#: The constraints that exclude the page builds whose label does not fit (:mod:`lockgen.resolve.builds`).
BUILD_PINS = "build-pins.txt"


@dataclass(frozen=True)
class Inputs:
    """Project-relative input files of one ``uv pip compile``."""

    requirements: str
    constraints: tuple[str, ...] = ()
    overrides: str | None = None
    find_links: tuple[str, ...] | None = None  # None: the plan's main find-links
    extra: tuple[str, ...] = ()  # more requirement sources (the index pins project)


@dataclass(frozen=True)
class UrlPin:
    """A package of a ``urls`` source and the URL that serves it to this cell (canonical);
    ``direct``: the main requirements name it."""

    source: CellSource
    name: NormalizedName
    url: str
    direct: bool


def url_pins(plan: Plan) -> list[UrlPin]:
    """The URL each package of the cell's ``urls`` sources comes from: of its URLs whose wheel
    tags fit the target, the newest version the main requirements allow (:func:`fetch.best`)
    among the builds whose label fits the cell and its pinned torch
    (:func:`lockgen.resolve.choose.by_label`; issue 16)."""
    wanted: dict[str, list[SpecifierSet]] = {}
    for req in plan.inputs.required:
        wanted.setdefault(canonicalize_name(req.name), []).append(req.specifier)
    pins = []
    for source in plan.sources:
        if source.kind != "urls":
            continue
        for package in source.packages:
            kept, _ = fetch.fitting(source.urls, plan.target, package)
            url = choose.by_label(kept, plan, plan.inputs.pinned_torch).best(wanted.get(package, ()))
            if url is not None:
                pins.append(UrlPin(source, canonicalize_name(package), url, package in wanted))
    return pins


def url_constraints(plan: Plan) -> tuple[str, ...]:
    """The URL pins file as a constraint, when the cell has URL pins (main and layers read it)."""
    return (f"{plan.work}/{URL_PINS}",) if url_pins(plan) else ()


def main_inputs(plan: Plan, build_pins: bool = False) -> Inputs:
    """The files the main resolution of ``plan`` reads: the rendered requirements, constraints and
    overrides, the index pins project and the URL pins when the cell has any, and the build pins
    (:data:`BUILD_PINS`) when ``build_pins`` (:func:`write_main` wrote them). A constraints or
    overrides file that renders to no requirement (a template whose lines are all for other
    cells) is not handed to uv, whose warning about it became every such cell's note (issue 17)."""
    files = plan.rendered.files
    extra = (f"{plan.work}/{INDEX_PROJECT}",) if plan.inputs.index_pins else ()
    pins = url_constraints(plan) + ((f"{plan.work}/{BUILD_PINS}",) if build_pins else ())
    given = {role for role in ("constraints", "overrides") if role in files and has_lines(files[role][1])}
    return Inputs(
        requirements=plan.inputs.input_paths["requirements"],
        constraints=((plan.inputs.input_paths["constraints"],) if "constraints" in given else ()) + pins,
        overrides=plan.inputs.input_paths["overrides"] if "overrides" in given else None,
        extra=extra,
    )


def has_lines(text: str) -> bool:
    """Whether rendered requirements ``text`` holds anything but blank and comment lines."""
    return any(line.split(" #", 1)[0].strip() and not line.lstrip().startswith("#") for line in text.splitlines())


def write_file(root: Path, path: str, text: str) -> None:
    """Write a work file at the project-relative ``path`` (its folders made as needed)."""
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def write_main(
    root: Path, plan: Plan, mirrors: Mirrors, *, refresh: bool = False, stop: threading.Event | None = None
) -> Inputs:
    """Write everything the main resolution reads (see the module docstring) and return it as
    :func:`main_inputs` names it. ``refresh`` downloads a pinned URL's file again (its cached
    hash not trusted); ``stop`` interrupts a download. Raises :class:`CellFailed` when a
    ``urls``-source package the requirements name has no URL for the target, or its file cannot
    be downloaded (unreachable, unauthorized, gone)."""
    for role, (_, text) in plan.rendered.files.items():
        write_file(root, plan.inputs.input_paths[role], mirrors.rewrite(text))
    pins = plan.inputs.index_pins
    if pins:
        write_file(root, f"{plan.work}/{INDEX_PROJECT}", index_project(pins, mirrors.mirrored))
    chosen = url_pins(plan)
    _missing(plan, chosen)
    lines = []
    for pin in chosen:
        line = f"{pin.name} @ {mirrors.file_url(pin.url)}"
        if pin.direct:
            try:
                digest = fetch.sha256_of(root, pin.url, mirrors, refresh=refresh, stop=stop)
                line += f" --hash=sha256:{digest}"
            except fetch.FetchError as exc:
                raise CellFailed(f"cell {plan.cell.name}: {pin.name} (source {pin.source.name!r}): {exc}") from None
        lines.append(line)
    if lines:
        header = "# generated by lockgen: the wheel URL of each package of the cell's urls sources\n"
        write_file(root, f"{plan.work}/{URL_PINS}", header + "\n".join(lines) + "\n")
    found = builds.read(root, plan, mirrors, plan.inputs.main_find_links, plan.inputs.pinned_torch)
    for req in plan.inputs.required:
        why = found.none_fits(canonicalize_name(req.name))
        if why:
            raise CellFailed(f"cell {plan.cell.name}: {why}")
    excluded = found.constraints()
    if excluded:
        write_file(root, f"{plan.work}/{BUILD_PINS}", excluded)
    return main_inputs(plan, build_pins=bool(excluded))


def _missing(plan: Plan, chosen: Sequence[UrlPin]) -> None:
    """A package the main requirements name that a ``urls`` source serves needs a URL that fits."""
    have = {pin.name for pin in chosen}
    for req in plan.inputs.required:
        name = canonicalize_name(req.name)
        source = plan.inputs.served_by.get(name)
        if source is not None and source.kind == "urls" and name not in have:
            kept, notes = fetch.fitting(source.urls, plan.target, name)
            notes += choose.by_label(kept, plan, plan.inputs.pinned_torch).notes
            listed = "; ".join(notes) or "none listed for it"
            raise CellFailed(
                f"cell {plan.cell.name}: {name}: source {source.name!r} has no wheel URL for "
                f"{plan.target.platform} {plan.target.python_tag} ({listed}); add one to its urls, or require {name} "
                "only where one fits (a marker)"
            )


def layer_index(root: Path, plan: Plan, mirrors: Mirrors, layer: str, requirements: str) -> tuple[str, ...]:
    """The index pins project of one layer's requirements (``layer`` names the layer), written
    when they name a package of an index source; the extra requirement sources uv gets."""
    pins = index_pins(plan, requirements)
    if not pins:
        return ()
    path = f"{plan.work}/{layer}-{INDEX_PROJECT}"
    write_file(root, path, index_project(pins, mirrors.mirrored))
    return (path,)


def write_preferences(root: Path, plan: Plan, output: str, locked: Mapping[str, str] | None, prefer: bool) -> None:
    """Put the versions the cell has locked where uv writes, as a minimal ``pylock.toml`` (uv
    reads an existing output file's names and versions as preferences, as pip-compile does), so a
    changed input moves only what it must. ``locked``: name -> version of the committed
    ``pylock.toml`` when the run read it already; else it is read here, and failing that the main
    lock's entries (a lock of an older lockgen format). ``prefer=False`` (a hand-edited lock):
    start from nothing."""
    target = root / output
    target.parent.mkdir(parents=True, exist_ok=True)
    versions = _locked_versions(root, plan, locked) if prefer else {}
    if not versions:
        target.unlink(missing_ok=True)
        return
    lines = ['lock-version = "1.0"', 'created-by = "lockgen"']
    for name, version in sorted(versions.items()):
        lines += ["", "[[packages]]", f'name = "{name}"', f'version = "{version}"']
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _locked_versions(root: Path, plan: Plan, locked: Mapping[str, str] | None) -> dict[str, str]:
    if locked is not None:
        return dict(locked)
    try:
        committed = bounded.read_text(root / pylockfile.pylock_path(plan.lock), plan.lock)
        pylock = pylockfile.main_only(pylockfile.loads(committed, plan.lock))
        return {p.name: str(p.version) for p in pylock.packages if p.version}
    except (OSError, UnicodeDecodeError, LockgenError):  # an edited or foreign file: the main lock, else nothing
        pass
    try:
        text = bounded.read_text(root / plan.lock, plan.lock)
        return {e.name: str(e.version) for e in body_entries(text, plan.lock) if e.version and not e.url}
    except (OSError, UnicodeDecodeError, LockgenError):
        return {}
