"""Stage 5: everything one cell's resolution depends on, and its input hash.

A :class:`Plan` is pure data built from config, cell, target and rendered inputs. Its
:attr:`Plan.input_hash` covers exactly what can change a lock: the rendered inputs, the target,
index URL, sources and find-links, ``exclude-newer``, pins that cannot move (exact, or PEP 440
specifiers), layers, the uv version and lockgen's lock format; when set, the prerelease settings
and the metadata files of local project requirements (issue 9; parts added only when used, so
the hash of every other lock stays the same). It contains no absolute path, so the same project gives the
same hash on any machine (conda-lock stores such a hash per platform so a staleness check needs
no solve; so does lockgen, in each lock's header). Mirrors are not part of it: they change where
lockgen fetches from, never what a lock says.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import NormalizedName, canonicalize_name

from lockgen.config import WORK, Config, cooldown
from lockgen.config.model import DEFAULT_BACKENDS, BackendFamily
from lockgen.plan import reqline
from lockgen.plan.content import Digests
from lockgen.plan.matrix import Cell
from lockgen.plan.render import ROLES, Rendered, render, render_strings, variables
from lockgen.plan.sources import (
    CellSource,
    applies,
    cell_sources,
    index_name,
    local_folder_listing,
    requirement_lines,
)
from lockgen.plan.target import Target
from lockgen.runtime import bounded, clock, keyed
from lockgen.runtime.errors import ConfigError, Problem, TemplateError

if TYPE_CHECKING:
    import jinja2
    from packaging.requirements import Requirement
    from packaging.version import Version

__all__ = [
    "LOCK_FORMAT", "PART_NAMES", "PROJECT_FILES", "Plan", "ResolveInput", "exact_pin", "explicit_indexes", "index_pins",
    "layer_only_sources", "local_projects", "local_requirements", "make_plan", "pinned_versions",
]  # fmt: skip

#: The version of the lock layout :mod:`lockgen.locks.lock` writes, a part of every input hash:
#: bumped when the layout or what a lock lists changes, so every lock is re-resolved once (3: the
#: wheels of newer manylinux/macOS levels, :mod:`lockgen.resolve.newer`; 4: the pylock.toml names
#: its target, `requires-python` and `environments`, and the main lock its pylock digest). Kept
#: here, with the other parts of the input hash: the lock model reads every format of its layout.
LOCK_FORMAT = 4

#: The files of a local project whose content decides its metadata (PEP 517/621 projects).
PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")


@dataclass(frozen=True, kw_only=True)
class ResolveInput:
    """What ``resolve/`` reads of a plan, computed once (:attr:`Plan.inputs`) so that one cell's
    resolution never calls back into ``plan/`` for it: plain fields, canonical names."""

    required: tuple[Requirement, ...]  # the main requirements that apply to the target, by name
    index_pins: tuple[tuple[CellSource, Requirement], ...]  # of ``required``: those an index source serves
    pinned_torch: Version | None  # the torch version the cell's pins fix exactly
    served_by: Mapping[str, CellSource]  # canonical name -> the first of the cell's sources naming it
    explicit_indexes: Mapping[str, str]  # index name -> canonical URL, of the index sources
    find_links: tuple[str, ...]  # every find-links page of the cell (layers)
    main_find_links: tuple[str, ...]  # the main resolution's (without layer-only sources)
    exclude_newer: str | None  # the cutoff as an RFC 3339 timestamp
    cutoffs: Mapping[str, str]  # uv --exclude-newer-package: the sources' cutoffs, then the setting's
    allow_build: frozenset[NormalizedName]
    index_url: str  # the default index ("" when the config gives none)
    prerelease: str | None  # uv --prerelease
    prerelease_package: Mapping[str, str]  # uv --prerelease-package: canonical name -> mode
    input_paths: Mapping[str, str]  # role -> where its rendered file is written (.lockgen/<cell>/requirements.in)


@dataclass(frozen=True, kw_only=True)
class Plan:
    """One cell, ready to resolve. Paths are relative to the project root."""

    cell: Cell
    target: Target
    rendered: Rendered
    lock: str  # locks/<cell>.txt
    work: str  # .lockgen/<cell>, where rendered inputs are written
    uv_version: str
    sources: tuple[CellSource, ...] = ()
    pinned: Mapping[str, str] = field(default_factory=dict)  # canonical name -> exact version
    pinned_specifiers: Mapping[str, str] = field(default_factory=dict)  # canonical name -> specifier ("==2.8.0.*")
    optional: tuple[str, ...] = ()
    no_deps: tuple[str, ...] = ()
    local_files: Mapping[str, list[str]] = field(default_factory=dict)
    templates: str = "templates"  # the config's templates folder
    layer_only: frozenset[str] = frozenset()  # sources only optional layers need
    backends: tuple[BackendFamily, ...] = ()  # the backend invariants' families (C27)
    replace: frozenset[str] = frozenset()  # canonical names a layer may set to another version than main (C22)
    local_projects: Mapping[str, str] = field(
        default_factory=dict
    )  # project-relative folder -> digest of its metadata files
    read_files: tuple[str, ...] = ()  # project files outside config and templates the plan read (the no-op stamp's key)
    # every local input file (folder wheels, local projects' metadata files, local archives) -> sha256: the
    # main lock lists them (``local-file``) so that ``check`` can name the file that changed
    local_inputs: Mapping[str, str] = field(default_factory=dict)
    #: the ``harmonize`` setting when it is not the default (docs/configuration.md): part of the
    #: input hash only then, so that the setting's arrival left every lock's hash as it was
    harmonize: Mapping[str, object] = field(default_factory=dict)

    @property
    def index_url(self) -> str:
        return self.cell.settings.index_url or ""

    def pin_requirements(self) -> dict[str, str]:
        """``{name: specifier}`` of every pin that cannot move, as its constraint line writes it:
        ``==2.13.0+cu130`` for an exact pin, the specifier as written for the others."""
        exact = {name: f"=={version}" for name, version in self.pinned.items()}
        return dict(sorted({**exact, **self.pinned_specifiers}.items()))

    @property
    def prerelease(self) -> str | None:
        """uv ``--prerelease`` for every package of the cell (None: uv's default)."""
        return self.cell.settings.prerelease

    @property
    def prerelease_package(self) -> Mapping[str, str]:
        """uv ``--prerelease-package``: canonical name -> mode."""
        return self.cell.settings.prerelease_package

    @property
    def exclude_newer_package(self) -> Mapping[str, str]:
        """uv ``--exclude-newer-package``: canonical name -> ``false`` or its own cutoff, a
        duration resolved at the run's start (:func:`lockgen.config.cooldown.cutoff`)."""
        now = clock.started()
        return {name: cooldown.cutoff(value, now) for name, value in self.cell.settings.exclude_newer_package.items()}

    @property
    def find_links(self) -> tuple[str, ...]:
        """All find-links of the cell, de-duplicated: the ``find-links`` setting (sorted by key),
        then each source's pages. Layers resolve with all of them."""
        return self._links(self.sources)

    @property
    def main_find_links(self) -> tuple[str, ...]:
        """The find-links of the main resolution: without sources that serve only optional
        packages (an unreachable NATTEN host makes the natten layer unavailable, not the cell)."""
        return self._links([s for s in self.sources if s.name not in self.layer_only])

    def layer_find_links(self, package: str) -> tuple[str, ...]:
        """The find-links of ``package``'s optional layer: the main ones plus the layer-only
        sources that serve it."""
        return self._links([s for s in self.sources if s.name not in self.layer_only or package in s.packages])

    def _links(self, sources: Iterable[CellSource]) -> tuple[str, ...]:
        settings = self.cell.settings.find_links
        links = [link for key in sorted(settings) for link in settings[key]]
        links += [link for source in sources for link in source.find_links()]
        return tuple(dict.fromkeys(links))

    @property
    def flavor(self) -> str:
        """The build the cell gets: its ``flavor`` setting, else its backend (``cu130``)."""
        return self.cell.settings.flavor or self.cell.backend

    def requirement_names(self) -> set[NormalizedName]:
        """Canonical names of the requirements the rendered inputs name (``packaging``)."""
        from packaging.utils import canonicalize_name

        from lockgen.plan import reqline

        names: set[NormalizedName] = set()
        for _, text in self.rendered.files.values():
            for line in text.splitlines():
                req = reqline.requirement(line)
                if req is not None:
                    names.add(canonicalize_name(req.name))
        return names

    def urls(self) -> tuple[str, ...]:
        """Every URL the plan makes lockgen or uv fetch (mirrors must match one of them)."""
        return (self.index_url, *self.find_links, *(url for s in self.sources for url in s.urls))

    @property
    def exclude_newer(self) -> str | None:
        """The cell's cutoff as an RFC 3339 timestamp (what uv gets, what the lock header says): the
        setting, or a duration (``"7 days"``) resolved at the run's start (:mod:`lockgen.config.cooldown`)."""
        value = self.cell.settings.exclude_newer
        return cooldown.cutoff(value, clock.started()) if value else None

    def source_cutoffs(self) -> dict[str, str]:
        """``{package: cutoff}`` of the packages the cell's sources serve: the source's own
        ``exclude-newer`` (resolved as :attr:`exclude_newer` is), else ``false`` when the cell has
        a cutoff (a backend index states no upload times, and uv drops a file without one); uv
        ``--exclude-newer-package``. Empty when neither sets one."""
        now = clock.started()
        found = {}
        for source in self.sources:
            own = cooldown.cutoff(source.exclude_newer, now) if source.exclude_newer else None
            if own is not None or self.exclude_newer:
                found.update(dict.fromkeys(source.packages, own or "false"))
        return found

    @property
    def exclude_newer_span(self) -> str | None:
        """The duration the cutoff was counted back by (``"7 days"``), or None for a fixed one."""
        value = self.cell.settings.exclude_newer
        return value if cooldown.is_span(value) else None

    @property
    def allow_build(self) -> frozenset[NormalizedName]:
        from packaging.utils import canonicalize_name

        return frozenset(canonicalize_name(n) for n in self.cell.settings.allow_build or ())

    def served_by(self, package: str) -> CellSource | None:
        """The first of the cell's sources named for ``package`` (canonical name), if any."""
        return next((s for s in self.sources if package in s.packages), None)

    def input_path(self, role: str) -> str:
        return f"{self.work}/{ROLES[role]}"

    @functools.cached_property
    def inputs(self) -> ResolveInput:
        """What the resolution reads of this plan, computed once (:class:`ResolveInput`)."""
        from packaging.version import Version

        required = tuple(_required(self, None))
        torch = self.cell.settings.pins.get("torch")
        exact = exact_pin(torch) if torch is not None else None
        served: dict[str, CellSource] = {}
        for source in self.sources:
            for package in source.packages:
                served.setdefault(package, source)
        return ResolveInput(
            required=required,
            index_pins=tuple(_pinned_to_index(self, required)),
            pinned_torch=Version(exact) if exact else None,
            served_by=served,
            explicit_indexes=explicit_indexes(self),
            find_links=self.find_links,
            main_find_links=self.main_find_links,
            exclude_newer=self.exclude_newer,
            cutoffs={**self.source_cutoffs(), **self.exclude_newer_package},
            allow_build=self.allow_build,
            index_url=self.index_url,
            prerelease=self.prerelease,
            prerelease_package=self.prerelease_package,
            input_paths={role: self.input_path(role) for role in ROLES},
        )

    @functools.cached_property
    def input_data(self) -> dict[str, object]:
        """Everything the lock depends on, by part (see :data:`PART_NAMES`)."""
        data: dict[str, object] = {
            "format": LOCK_FORMAT,
            "uv": self.uv_version,
            "target": self.target.to_dict(),
            "index_url": self.index_url,
            "find_links": list(self.find_links),
            "exclude_newer": self.cell.settings.exclude_newer,  # as written: a duration does not move the hash
            "sources": [s.to_dict() for s in self.sources],
            "pinned": {**self.pinned, **self.pinned_specifiers},
            "optional": list(self.optional),
            "no_deps": list(self.no_deps),
            "allow_build": sorted(self.allow_build),
            "local_files": dict(self.local_files),
            "backends": [_family_data(f) for f in self.backends],
            "allow_mix": dict(self.cell.settings.allow_mix),
        }
        if self.replace:  # only when set, so that adding the setting left every other hash as it was
            data["replace"] = sorted(self.replace)
        # parts added by issue 9 only when used, so the input hash of every other lock stays
        if self.prerelease or self.prerelease_package:
            data["prerelease"] = {"mode": self.prerelease, "packages": dict(sorted(self.prerelease_package.items()))}
        if self.local_projects:
            data["local_projects"] = dict(self.local_projects)
        if self.cell.settings.exclude_newer_package:  # only when set; as written (a duration does not move it)
            data["exclude_newer_package"] = dict(sorted(self.cell.settings.exclude_newer_package.items()))
        if self.harmonize:  # only when not the default
            data["harmonize"] = dict(self.harmonize)
        for role, (template, text) in sorted(self.rendered.files.items()):
            data[role] = {"template": template, "text": text}
        return data

    @functools.cached_property
    def input_parts(self) -> dict[str, str]:
        """``{part: short digest}`` of :attr:`input_data` (the main lock's ``input-parts``
        header), so ``check`` can say which input changed."""
        return {part: _digest(value)[:12] for part, value in sorted(self.input_data.items())}

    @functools.cached_property
    def input_hash(self) -> str:
        """``sha256:<hex>`` of the canonical JSON of everything the lock depends on."""
        return "sha256:" + _digest(self.input_data)


# -- what the requirements name, for the target


def _required(plan: Plan, text: str | None) -> list[Requirement]:
    """The requirements of ``text`` (None: the main ones) that apply to the target, by name."""
    if text is None:
        text = plan.rendered.files.get("requirements", ("", ""))[1]
    return [r for r in requirement_lines(text) if not r.url and applies(r.marker, plan.target)]


def index_pins(plan: Plan, text: str | None = None) -> list[tuple[CellSource, Requirement]]:
    """Requirements of ``text`` (default: the main requirements) that name a package of one of
    the cell's index sources and apply to the target: each is pinned to that index."""
    return _pinned_to_index(plan, _required(plan, text))


def _pinned_to_index(plan: Plan, reqs: Iterable[Requirement]) -> list[tuple[CellSource, Requirement]]:
    found = []
    for req in reqs:
        source = plan.served_by(canonicalize_name(req.name))
        if source is not None and source.kind == "index":
            found.append((source, req))
    return found


def explicit_indexes(plan: Plan) -> dict[str, str]:
    """``{index name: canonical URL}`` of the cell's index sources (for uv's login variables)."""
    return {index_name(s): s.urls[0] for s in plan.sources if s.kind == "index"}


#: What each input part is, for ``check``'s "stale because …" (issue 6).
PART_NAMES = {
    "format": "lockgen's lock format", "uv": "the uv version", "target": "the target (os, arch, python, manylinux, macos)",
    "index_url": "index-url", "find_links": "find-links", "exclude_newer": "exclude-newer", "sources": "sources",
    "pinned": "pins that cannot move (pins, pinned)", "optional": "optional", "no_deps": "no-deps",
    "allow_build": "allow-build", "local_files": "the content of a local wheel folder",
    "backends": "backends (the backend invariants)", "allow_mix": "allow-mix", "replace": "replace",
    "prerelease": "prerelease, prerelease-package", "local_projects": "the metadata files of a local project requirement (their content)",
    "exclude_newer_package": "exclude-newer-package",
}  # fmt: skip


@functools.lru_cache(maxsize=64)
def _family_data(family: BackendFamily) -> dict[str, object]:
    """A backend family as input data; its ``minor`` policy only when not the built-in default
    (added by issue 17: every other lock keeps its hash).

    Every cell of a matrix names the same few families: each one's data is made once per
    process (``dataclasses.asdict`` cost ~0.3 ms a family, 4 a cell). The dict is shared: its
    readers only digest it (:attr:`Plan.input_data`), never change it."""
    data = dataclasses.asdict(family)
    builtin = next((f.minor for f in DEFAULT_BACKENDS if f.name == family.name), BackendFamily.minor)
    if data["minor"] == builtin:
        del data["minor"]
    return data


def _digest(value: object) -> str:
    blob = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def exact_pin(value: str) -> str | None:
    """The version a ``pins`` value fixes exactly: a bare version (``"2.13.0"``) or a single
    ``==`` clause without a wildcard (``"==2.13.0"``); None for any other specifier
    (``"==2.8.0.*"``, ``">=2.7,<2.8"``)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        Version(value)
        return value
    except InvalidVersion:
        pass
    try:
        specs = list(SpecifierSet(value))
    except InvalidSpecifier:
        return None
    if len(specs) == 1 and specs[0].operator in ("==", "===") and not specs[0].version.endswith(".*"):
        return specs[0].version
    return None


def pinned_versions(cell: Cell, sources: Sequence[CellSource]) -> tuple[dict[str, str], dict[str, str]]:
    """The pins that cannot move: ``(exact, specifiers)``, both canonical name -> text.

    An exact pin (:func:`exact_pin`) gets the backend's local version label (``2.13.0+cu130``)
    where the package comes from a backend ``index`` source and none where it comes from the
    default index or a find-links page (the seed's ``torch_constraints``). A PEP 440 specifier
    (``==2.8.0.*``, issue 9) is kept as written, without a label: the package is required and
    constrained by it, verify checks the locked version against it, and the source's label rules
    apply as to any package the source serves.
    """
    from packaging.specifiers import SpecifierSet
    from packaging.utils import canonicalize_name

    pins = {canonicalize_name(k): v for k, v in cell.settings.pins.items()}
    exact: dict[str, str] = {}
    specifiers: dict[str, str] = {}
    for name in cell.settings.pinned or ():
        key = canonicalize_name(name)
        if key not in pins:
            raise ConfigError(
                "config", [f"pinned: {name!r} (cell {cell.name}) has no version in pins; add it to the pins table"]
            )
        version = exact_pin(pins[key])
        if version is None:
            specifiers[key] = str(SpecifierSet(pins[key]))
            continue
        source = next((s for s in sources if key in s.packages), None)
        label = source.pin_label(key) if source else ""  # the source's label policy (C25)
        exact[key] = version + label if "+" not in version else version
    return exact, specifiers


def local_requirements(text: str) -> list[str]:
    """The local paths a rendered requirements file names: ``-e PATH``/``--editable PATH``, a bare
    path (``./sub``, ``file:./sub``) and ``name @ file:…``, as written (no Jinja, no options)."""
    from urllib.parse import unquote, urlsplit

    from packaging.requirements import InvalidRequirement, Requirement

    found = []
    for raw in text.splitlines():
        line = reqline.strip_comment(raw)
        for flag in ("-e ", "--editable ", "--editable="):
            if line.startswith(flag):
                line = line[len(flag) :].strip()
                break
        if line.startswith(("-", "#")) or not line:
            continue
        url = line.split(";")[0].strip()
        if " @ " in url or url.startswith(("git+", "hg+", "svn+", "bzr+", "http://", "https://")):
            try:
                url = Requirement(line).url or ""
            except InvalidRequirement:
                continue
        if url.startswith("file:"):
            url = unquote(urlsplit(url).path) if url.startswith("file://") else url.removeprefix("file:")
        elif "://" in url or not url.startswith((".", "/")):
            continue
        found.append(url.split("#")[0].split("[")[0].rstrip("/") or ".")
    return found


def local_projects(
    root: Path, paths: Iterable[str], where: str, cell: Cell, digests: Digests | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """``({project-relative folder: digest}, {project-relative file: sha256})`` of local project
    requirements: the digest covers the files its metadata comes from (:func:`project_files`: a
    changed ``pyproject.toml``, or a requirements file its metadata reads, changes what the cell
    locks), by content (:mod:`lockgen.plan.content`). A local archive (a wheel or sdist file)
    counts whole. Raises :class:`TemplateError` for a path outside the project: a lock names local
    projects relative to the project root."""
    import posixpath

    digests = digests if digests is not None else Digests(root)
    result, files = {}, {}
    for path in paths:
        resolved = (root / path).resolve()
        try:
            rel = resolved.relative_to(root.resolve()).as_posix()
        except ValueError:
            raise TemplateError(
                f"{where}: the local requirement {path!r} is outside the project folder (cell {cell.name}); "
                "a lock names local projects relative to the project root: move it inside, or require it from an index"
            ) from None
        folder = posixpath.normpath(rel)
        read = (
            [folder]
            if resolved.is_file()
            else [posixpath.normpath(f"{folder}/{name}") for name in project_files(resolved)]
        )
        digest = hashlib.sha256()
        for file in read:
            sha = digests.sha256(file)
            files[file] = sha
            name = posixpath.basename(file) if file == folder else posixpath.relpath(file, folder)
            digest.update(f"{name}\0{sha}\0".encode())
        result[folder] = digest.hexdigest()[:16]
    return dict(sorted(result.items())), dict(sorted(files.items()))


def _check_optional(config: Config, cell: Cell, entries: Iterable[str]) -> None:
    """Refuse, when the config is read, an optional entry a hashed layer cannot lock (a VCS URL,
    a project folder: :mod:`lockgen.plan.direct`), naming it, its setting and the cell."""
    from lockgen.plan.direct import EntryRefused, read_optional

    problems = []
    for entry in entries:
        try:
            read_optional(entry)
        except EntryRefused as exc:
            key = config.setting_key(cell.values, "optional", "optional")
            problems.append(Problem(key=key, cells=(cell.name,), message=f"optional entry {entry!r} is {exc}"))
    if problems:
        raise ConfigError(config.source, problems)


def project_files(folder: Path) -> list[str]:
    """The files of a local project (relative to it, sorted) its metadata may come from: the
    :data:`PROJECT_FILES` it has, the files its ``[tool.uv] cache-keys`` name (uv rebuilds a
    project's metadata when one changes), and the files setuptools reads dynamic dependencies
    from (``[tool.setuptools.dynamic] dependencies = { file = [...] }``). Only files inside the
    project folder count; globs in ``cache-keys`` are expanded. The tables are read leniently
    (:func:`~lockgen.runtime.keyed.dig`): a value of another type (``cache-keys = 5``,
    ``file = 3``) names no file."""
    from lockgen.config import parse_toml

    found = {name for name in PROJECT_FILES if (folder / name).is_file()}
    try:
        data = parse_toml(bounded.read_text(folder / "pyproject.toml", "pyproject.toml"))
    except Exception:  # no pyproject.toml, or one uv will complain about itself
        data = {}
    uv, dynamic = keyed.dig(data, "tool", "uv"), keyed.dig(data, "tool", "setuptools", "dynamic")
    named = [
        key["file"] for key in keyed.listed(keyed.dig(uv, "cache-keys")) if isinstance(keyed.dig(key, "file"), str)
    ]
    entries = [keyed.dig(dynamic, "dependencies"), *keyed.table(keyed.dig(dynamic, "optional-dependencies")).values()]
    for entry in entries:
        names = keyed.dig(entry, "file")
        named += [names] if isinstance(names, str) else [n for n in keyed.listed(names) if isinstance(n, str)]
    base = folder.resolve()
    for pattern in named:
        if not Path(pattern).parts or Path(pattern).is_absolute():
            continue  # "", ".": no file; an absolute path: outside the project
        try:
            matches = sorted(folder.glob(pattern))
        except ValueError:  # not a glob pathlib takes ("a**"): uv's to refuse, no file of ours
            continue
        for match in matches:
            try:
                rel = match.resolve().relative_to(base).as_posix()
            except ValueError:
                continue  # outside the project folder
            if match.is_file():
                found.add(rel)
    return sorted(found)


def make_plan(
    config: Config,
    env: jinja2.Environment,
    cell: Cell,
    target: Target,
    uv_version: str,
    digests: Digests | None = None,
) -> Plan:
    """Render the cell's templates and build its plan: its lock under the config's ``locks``
    folder, its rendered inputs under ``.lockgen/<cell>/``; local inputs by content through
    ``digests`` (a run's shared cache; default: a fresh read-only one). Raises
    ``TemplateError``/``ConfigError``."""
    digests = digests if digests is not None else Digests(config.root)
    sources = cell_sources(config, cell, target)
    pinned, specifiers = pinned_versions(cell, sources)
    rendered = render(env, config, cell, target)
    pin_lines = {**{p: f"=={v}" for p, v in pinned.items()}, **specifiers}
    if pin_lines:  # required (the seed installs them first) and constrained (exactly, or by the specifier)
        lines = "# pins that cannot move\n" + "".join(f"{p}{v}\n" for p, v in sorted(pin_lines.items()))
        files = dict(rendered.files)
        for role in ("requirements", "constraints"):
            name, text = files.get(role, ("(pinned)", ""))
            files[role] = (name, (text if not text or text.endswith("\n") else text + "\n") + lines)
        rendered = Rendered(files=files)
    context = variables(config, cell, target)
    optional = render_strings(env, cell.settings.optional or (), context, cell, "optional")
    _check_optional(config, cell, optional)
    requirements = rendered.files.get("requirements", ("", ""))
    projects, project_inputs = local_projects(
        config.root, local_requirements(requirements[1]), f"{config.templates}/{requirements[0]}", cell, digests
    )
    read = list(project_inputs)
    local_files = local_folder_listing(config.root, sources, _setting_links(cell), digests)
    local_inputs = {
        f"{folder}/{item.rsplit(':', 1)[0]}": item.rsplit(":", 1)[1]
        for folder, items in local_files.items()
        for item in items
    }
    return Plan(
        cell=cell,
        target=target,
        rendered=rendered,
        lock=cell.lock_path(config),
        work=f"{WORK}/{cell.name}",
        uv_version=uv_version,
        sources=sources,
        pinned=pinned,
        pinned_specifiers=specifiers,
        optional=optional,
        no_deps=render_strings(env, cell.settings.no_deps or (), context, cell, "no-deps"),
        local_files=local_files,
        templates=config.templates,
        layer_only=layer_only_sources(sources, optional, {**pinned, **specifiers}),
        backends=config.backends,
        replace=frozenset(cell.settings.replace or ()),
        local_projects=projects,
        read_files=tuple(sorted(set(read))),
        local_inputs=dict(sorted({**local_inputs, **project_inputs}.items())),
        harmonize={} if config.harmonize.default else config.harmonize.to_dict(),
    )


def _setting_links(cell: Cell) -> list[str]:
    """The values of the cell's ``find-links`` setting, in :attr:`Plan.find_links` order."""
    settings = cell.settings.find_links
    return [link for key in sorted(settings) for link in settings[key]]


def layer_only_sources(
    sources: tuple[CellSource, ...], optional: tuple[str, ...], pinned: Mapping[str, str]
) -> frozenset[str]:
    """Names of the find-links/index sources whose every package is named only by optional
    entries (and none is pinned): the main resolution does not need them."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names = set()
    for entry in optional:
        try:
            names.add(canonicalize_name(Requirement(entry).name))
        except InvalidRequirement:
            continue  # a URL
    return frozenset(
        s.name for s in sources if s.kind != "urls" and set(s.packages) <= names and not set(s.packages) & set(pinned)
    )
