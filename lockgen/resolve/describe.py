"""The entries of a resolution: what uv's requirements output adds to its PEP 751 data.

uv renders a resolution's versions, pinned exactly and offline, as a requirements file
(:func:`request`: the pins as a constraint, written to ``<work>/<name>-pins.txt``). That file
adds what PEP 751 data does not carry: the extras a package was asked for (pip 23.2 needs them on
the locked line, CASES C19), ``# via`` annotations and, per package, the index or find-links
page it came from (``# from``: the source identity verify judges, :mod:`lockgen.plan.identity`). :func:`resolved` reads it with the lock
model into :class:`Resolved` entries; hashes come from the PEP 751 data. Direct references (a
local project folder, editable or not, a local archive, a VCS checkout) are described from the
PEP 751 data too: the package's own name, its path relative to the project root, a VCS URL at the
commit uv resolved (issue 9; the lines are those of :mod:`lockgen.locks.lock`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from packaging.pylock import Package, PackageArchive, PackageDirectory, Pylock
from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.locks import pylockfile
from lockgen.locks.lock import Entry, is_local, parse_entries
from lockgen.plan import identity
from lockgen.plan.plan import Plan
from lockgen.plan.sources import INDEX_PROJECT_NAME
from lockgen.resolve import labels
from lockgen.resolve.cellrun import CellRun
from lockgen.resolve.inputs import URL_PINS, Inputs
from lockgen.runtime.errors import CellFailed

__all__ = ["Request", "Resolved", "request", "resolved"]


@dataclass(frozen=True)
class Resolved:
    """One uv resolution read back: target-only PEP 751 data and the entries of the lock (each
    with the index or find-links page uv took it from, canonical: ``Entry.index``)."""

    pylock: Pylock
    entries: tuple[Entry, ...]
    warnings: tuple[str, ...] = ()

    @property
    def indexes(self) -> dict[NormalizedName, str]:
        """``{name: canonical index URL}`` of the packages uv named an index or find-links page
        for (a local folder: its project-relative path); what verify judges sources by
        (:mod:`lockgen.plan.identity`)."""
        return {e.name: e.index for e in self.entries if e.index}


@dataclass(frozen=True)
class Request:
    """The uv run that describes resolution ``name``: its exact pins (``pins_text``, written to
    ``pins``), the inputs uv gets (the resolution's, the pins as one more constraint) and the
    requirements file it writes (``output``)."""

    pins: str
    pins_text: str
    inputs: Inputs
    output: str


def request(plan: Plan, inputs: Inputs, pylock: Pylock, name: str) -> Request:
    """How to have uv describe ``pylock``, the resolution ``name`` (``main``, ``layer-<name>``)
    of ``inputs``: every registry package pinned exactly (direct references are described from
    ``pylock`` itself)."""
    pins = f"{plan.work}/{name}-pins.txt"
    text = "".join(f"{p.name}=={p.version}\n" for p in pylock.packages if pylockfile.registry(p))
    given = replace(inputs, constraints=(*inputs.constraints, pins))
    return Request(pins=pins, pins_text=text, inputs=given, output=f"{plan.work}/{name}.requirements.txt")


def resolved(run: CellRun, asked: Request, inputs: Inputs, pylock: Pylock, text: str) -> Resolved:
    """The entries of ``pylock``'s resolution from uv's requirements ``text`` (canonical) for
    ``asked``: the extras asked of each package and its ``# via`` (lockgen's work files named as
    a reviewer can open them); hashes from ``pylock``. Raises :class:`CellFailed` when uv
    described another version than ``pylock`` locked."""
    plan = run.plan
    entries = _direct_entries(run, parse_entries(text, asked.output), pylock)
    hashes = {p.name: pylockfile.sha256s(p) for p in pylock.packages}
    versions = {p.name: p.version for p in pylock.packages}
    via = _via_names(run, inputs, asked.pins)
    fixed = []
    for entry in entries:
        if entry.name in versions and entry.version is not None and not _same_build(entry, versions[entry.name]):
            raise CellFailed(
                f"cell {plan.cell.name}: uv described {entry.name} {entry.version}, not {versions[entry.name]}"
            )
        notes = tuple(dict.fromkeys(via.get(v, v) for v in entry.via if via.get(v, v)))
        index = identity.project_path(entry.index, run.root) if entry.index else None
        fixed.append(by_url(replace(entry, hashes=tuple(hashes.get(entry.name, ())), via=notes, index=index), pylock))
    return Resolved(pylock=pylock, entries=tuple(sorted(fixed, key=lambda e: e.name)))


def by_url(entry: Entry, pylock: Pylock) -> Entry:
    """``entry`` as ``name @ URL`` of its one wheel when it is an extension's build from a
    find-links page or an index whose local label names a torch (``2.8.3+cu130torch2.13``, the
    label of flash-attn's and natten's prebuilt wheels): such a wheel carries its label in its
    file name only, its metadata says ``2.8.3``, and pip 23 refuses it for
    ``flash-attn==2.8.3+cu130torch2.13`` ("has inconsistent version"), while it takes a direct
    URL as the ``urls`` source locks it (pip compares only the name then). The hash is the one
    wheel's. Any other entry, and one whose package has several artifacts for the target or a
    local file, is returned as it is."""
    version = entry.version
    if entry.url is not None or version is None or version.local is None:
        return entry
    label = labels.read(version.local)
    if not isinstance(label, labels.Label) or label.torch is None:
        return entry
    package = next((p for p in pylock.packages if p.name == entry.name), None)
    if package is None or package.sdist is not None or len(package.wheels or ()) != 1:
        return entry
    (wheel,) = package.wheels or ()
    if not wheel.url or not wheel.url.startswith(("https://", "http://")):
        return entry
    return replace(entry, url=wheel.url, hashes=tuple(f"sha256:{h}" for k, h in wheel.hashes.items() if k == "sha256"))


def _same_build(entry: Entry, locked: Version | None) -> bool:
    """Whether ``entry`` (uv's requirements line) is the version the pylock data ``locked``. A
    direct URL's version is its file name's, which may carry a local label its metadata lacks
    (flash-attn's release-page wheels: ``flash_attn-2.8.3+cu130torch2.13-…whl``, metadata 2.8.3;
    issue 16): the same build."""
    if entry.version == locked:
        return True
    return (
        entry.url is not None
        and locked is not None
        and locked.local is None
        and entry.version is not None
        and Version(entry.version.public) == locked
    )


def _direct_entries(run: CellRun, entries: Iterable[Entry], pylock: Pylock) -> list[Entry]:
    """``entries`` with each direct reference uv wrote as requested (``-e ./sub``, ``./sub``,
    ``pkg @ file:///…``, ``pkg @ git+…@main``) rewritten from its pylock package: its real name,
    a project-relative path, the VCS commit (issue 9)."""
    folder = pylockfile.pylock_path(run.plan.lock).rsplit("/", 1)[0]
    by_name = {p.name: p for p in pylock.packages}
    by_path = {_project_path(folder, p): p for p in pylock.packages if _local_path(p) is not None}
    result = []
    for entry in entries:
        package = by_name.get(entry.name)
        if entry.url is not None and (is_local(entry.url) or entry.url.startswith("/")):
            package = by_path.get(_normalized(run, entry.url))
        if package is None or not (package.vcs is not None or _local_path(package) is not None):
            result.append(entry)
            continue
        url = _reference(folder, package, entry.url)
        result.append(replace(entry, name=package.name, version=package.version, url=url,
                              editable=bool(package.directory is not None and package.directory.editable)))  # fmt: skip
    return result


def _local_path(package: Package) -> str | None:
    """The lock-relative path of a project folder or local archive package."""
    if isinstance(package.directory, PackageDirectory):
        return package.directory.path
    if isinstance(package.archive, PackageArchive) and package.archive.path is not None:
        return package.archive.path
    return None


def _project_path(folder: str, package: Package) -> str:
    return posixpath.normpath(posixpath.join(folder, _local_path(package) or ""))


def _normalized(run: CellRun, url: str) -> str:
    """A path uv wrote as requested (``./sub``, ``/abs/sub``) relative to the project root."""
    path = Path(url)
    if path.is_absolute():
        try:
            return path.resolve().relative_to(run.root.resolve()).as_posix()
        except ValueError:
            return url
    return posixpath.normpath(url)


def _reference(folder: str, package: Package, written: str | None) -> str:
    """The lock's direct reference of a package: ``./sub`` (a project-relative path) or
    ``git+<url>@<commit>[#subdirectory=…]``: the repository as uv ``written`` it (the user's
    spelling; uv's PEP 751 data normalizes it), at the commit of the resolution."""
    if package.vcs is not None:
        vcs = package.vcs
        if written is not None and written.startswith(f"{vcs.type}+"):
            base, sep, fragment = written.partition("#")
            if "@" in base.rsplit("/", 1)[-1]:  # a revision after the path (never the user@ of the host)
                base = base[: base.rindex("@")]
            return f"{base}@{vcs.commit_id}{sep}{fragment}"
        url = f"{vcs.type}+{vcs.url or vcs.path}@{vcs.commit_id}"
        return url + (f"#subdirectory={vcs.subdirectory}" if vcs.subdirectory else "")
    rel = _project_path(folder, package)
    return "." if rel == "." else f"./{rel}"


def _via_names(run: CellRun, inputs: Inputs, pins: str) -> Mapping[str, str]:
    """uv's ``# via`` items that name lockgen's work files, mapped to what a reviewer can open:
    the committed template that rendered them (issue 6), or nothing (the exact pins)."""
    plan = run.plan
    files = plan.rendered.files
    names: dict[str, str] = {f"-c {pins}": ""}
    for role, flag in (("requirements", "-r"), ("constraints", "-c"), ("overrides", "--override")):
        if role in files:
            names[f"{flag} {plan.inputs.input_paths[role]}"] = f"{plan.templates}/{files[role][0]}"
    if inputs.requirements != plan.inputs.input_paths["requirements"]:
        names[f"-r {inputs.requirements}"] = (
            f"{run.config} ({inputs.requirements.rsplit('/', 1)[-1].removesuffix('.in')})"
        )
    for constraint in inputs.constraints:
        if constraint.endswith(URL_PINS):
            names[f"-c {constraint}"] = ""
        elif constraint.endswith("-pins.txt"):
            names[f"-c {constraint}"] = plan.lock
    for extra in inputs.extra:  # the index pins project repeats the requirements' own lines
        names[f"{INDEX_PROJECT_NAME} ({extra})"] = ""
    return names
