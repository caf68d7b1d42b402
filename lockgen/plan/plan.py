"""Stage 5: everything one cell's resolution depends on, and its input hash.

A :class:`Plan` is pure data built from config, cell, target and rendered inputs. Its
:attr:`Plan.input_hash` covers exactly what can change a lock: the rendered inputs, the target,
index URL, sources and find-links, ``exclude-newer``, pins that cannot move, layers, the uv
version and lockgen's lock format. It contains no absolute path, so the same project gives the
same hash on any machine (conda-lock stores such a hash per platform so a staleness check needs
no solve; so does lockgen, in each lock's header). Mirrors are not part of it: they change where
lockgen fetches from, never what a lock says.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from lockgen.config import WORK, Config
from lockgen.config.model import BackendFamily
from lockgen.errors import ConfigError
from lockgen.locks.lock import LOCK_FORMAT  # part of the input hash
from lockgen.plan.matrix import Cell
from lockgen.plan.render import ROLES, Rendered, render, render_strings, variables
from lockgen.plan.sources import CellSource, cell_sources, local_folder_listing
from lockgen.plan.target import Target


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
    optional: tuple[str, ...] = ()
    no_deps: tuple[str, ...] = ()
    local_files: Mapping[str, list[str]] = field(default_factory=dict)
    templates: str = "templates"  # the config's templates folder
    layer_only: frozenset[str] = frozenset()  # sources only optional layers need
    backends: tuple[BackendFamily, ...] = ()  # the backend invariants' families (C27)
    replace: frozenset[str] = frozenset()  # canonical names a layer may set to another version than main (C22)

    @property
    def index_url(self) -> str:
        return self.cell.settings.index_url

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

    def _links(self, sources) -> tuple[str, ...]:
        settings = self.cell.settings.find_links
        links = [link for key in sorted(settings) for link in settings[key]]
        links += [link for source in sources for link in source.find_links()]
        return tuple(dict.fromkeys(links))

    @property
    def flavor(self) -> str:
        """The build the cell gets: its ``flavor`` setting, else its backend (``cu130``)."""
        return self.cell.settings.flavor or self.cell.backend

    def requirement_names(self) -> set[str]:
        """Canonical names of the requirements the rendered inputs name (``packaging``)."""
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.utils import canonicalize_name

        names = set()
        for _, text in self.rendered.files.values():
            for line in text.splitlines():
                try:
                    names.add(canonicalize_name(Requirement(line.split(" #")[0].strip()).name))
                except InvalidRequirement:
                    continue
        return names

    def urls(self) -> tuple[str, ...]:
        """Every URL the plan makes lockgen or uv fetch (mirrors must match one of them)."""
        return (self.index_url, *self.find_links, *(url for s in self.sources for url in s.urls))

    @property
    def exclude_newer(self) -> str | None:
        return self.cell.settings.exclude_newer

    @property
    def allow_build(self) -> frozenset[str]:
        from packaging.utils import canonicalize_name

        return frozenset(canonicalize_name(n) for n in self.cell.settings.allow_build or ())

    def served_by(self, package: str) -> CellSource | None:
        """The first of the cell's sources named for ``package`` (canonical name), if any."""
        return next((s for s in self.sources if package in s.packages), None)

    def input_path(self, role: str) -> str:
        return f"{self.work}/{ROLES[role]}"

    @functools.cached_property
    def input_data(self) -> dict[str, object]:
        """Everything the lock depends on, by part (see :data:`PART_NAMES`)."""
        data: dict[str, object] = {
            "format": LOCK_FORMAT,
            "uv": self.uv_version,
            "target": self.target.to_dict(),
            "index_url": self.index_url,
            "find_links": list(self.find_links),
            "exclude_newer": self.exclude_newer,
            "sources": [s.to_dict() for s in self.sources],
            "pinned": dict(self.pinned),
            "optional": list(self.optional),
            "no_deps": list(self.no_deps),
            "allow_build": sorted(self.allow_build),
            "local_files": dict(self.local_files),
            "backends": [dataclasses.asdict(f) for f in self.backends],
            "allow_mix": dict(self.cell.settings.allow_mix),
        }
        if self.replace:  # only when set, so that adding the setting left every other hash as it was
            data["replace"] = sorted(self.replace)
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


#: What each input part is, for ``check``'s "stale because …" (issue 6).
PART_NAMES = {
    "format": "lockgen's lock format", "uv": "the uv version", "target": "the target (os, arch, python, manylinux, macos)",
    "index_url": "index-url", "find_links": "find-links", "exclude_newer": "exclude-newer", "sources": "sources",
    "pinned": "pins that cannot move (pins, pinned)", "optional": "optional", "no_deps": "no-deps",
    "allow_build": "allow-build", "local_files": "the files of a local wheel folder",
    "backends": "backends (the backend invariants)", "allow_mix": "allow-mix", "replace": "replace",
}  # fmt: skip


def _digest(value: object) -> str:
    blob = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def pinned_versions(cell: Cell, sources: tuple[CellSource, ...]) -> dict[str, str]:
    """Exact versions of the pins that cannot move, with the local version label the backend
    ``index`` source gives the package (``2.13.0+cu130``; :meth:`CellSource.pin_label`: none for
    a package it serves unlabelled, C25) and none where it comes from the default index or a
    find-links page (the seed's ``torch_constraints``)."""
    from packaging.utils import canonicalize_name

    pins = {canonicalize_name(k): v for k, v in cell.settings.pins.items()}
    result = {}
    for name in cell.settings.pinned or ():
        key = canonicalize_name(name)
        if key not in pins:
            raise ConfigError("config", [f"pinned: {name!r} (cell {cell.name}) has no version in pins; add it to the pins table"])
        source = next((s for s in sources if key in s.packages), None)
        label = source.pin_label(key) if source else ""  # the source's label policy (C25)
        result[key] = pins[key] + label if "+" not in pins[key] else pins[key]
    return result


def make_plan(config: Config, env, cell: Cell, target: Target, uv_version: str) -> Plan:
    """Render the cell's templates and build its plan: its lock under the config's ``locks``
    folder, its rendered inputs under ``.lockgen/<cell>/``. Raises ``TemplateError``/``ConfigError``."""
    sources = cell_sources(config.root, dict(config.sources), cell, target)
    pinned = pinned_versions(cell, sources)
    rendered = render(env, config, cell, target)
    if pinned:  # required (the seed installs them first) and constrained exactly
        lines = "# pins that cannot move\n" + "".join(f"{p}=={v}\n" for p, v in sorted(pinned.items()))
        files = dict(rendered.files)
        for role in ("requirements", "constraints"):
            name, text = files.get(role, ("(pinned)", ""))
            files[role] = (name, (text if not text or text.endswith("\n") else text + "\n") + lines)
        rendered = Rendered(files=files)
    context = variables(config, cell, target)
    optional = render_strings(env, cell.settings.optional or (), context, cell, "optional")
    return Plan(
        cell=cell,
        target=target,
        rendered=rendered,
        lock=cell.lock_path(config),
        work=f"{WORK}/{cell.name}",
        uv_version=uv_version,
        sources=sources,
        pinned=pinned,
        optional=optional,
        no_deps=render_strings(env, cell.settings.no_deps or (), context, cell, "no-deps"),
        local_files=local_folder_listing(config.root, sources),
        templates=config.templates,
        layer_only=layer_only_sources(sources, optional, pinned),
        backends=config.backends,
        replace=frozenset(cell.settings.replace or ()),
    )


def layer_only_sources(sources: tuple[CellSource, ...], optional: tuple[str, ...], pinned) -> frozenset[str]:
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
