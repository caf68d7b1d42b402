"""``lockgen sbom``: CycloneDX 1.6 JSON SBOMs of the locks, one per cell and one merged, written
with ``cyclonedx-python-lib``.

Per cell: the metadata component is the application at that cell (the project's ``[project]``
name and version, else the project folder's name), with the cell's ``os``, ``arch``,
``backend``, ``python``, target and extra axes as ``lockgen:*`` properties. Each main-lock
package is a ``library`` component: its purl (``pkg:pypi/torch@2.13.0%2Bcu130``: the local label
kept; ``repository_url`` when it comes from an index source or a non-default ``index-url``;
``download_url`` for a direct URL), the sha256 of every file the lock lists, a ``distribution``
external reference per file URL (with its hash), and its license (:mod:`.licenses`). Each layer
is a component of its own (``lockgen:layer-kind``) whose nested components are the layer's
packages. The dependency graph is the resolution's: each lock entry's ``# via`` names the
packages that required it (uv's annotations), so ``via jinja2`` on markupsafe is the edge
jinja2 → markupsafe; entries required by a template hang off the application.

Merged: the application is the metadata component; each cell is an ``application`` component
(its properties, its layers nested) depending on its direct packages; each package version is
one component listing the cells that lock it (``lockgen:cell``), with every file of every cell.

Byte-stable: no timestamp unless asked, and a serial number derived from the locks' digests
(UUID 5), so the same locks give the same bytes.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from packaging.utils import NormalizedName

from lockgen import __version__
from lockgen.config.model import DEFAULT_INDEX_URL
from lockgen.dossier.inventory import Inventory, Locked
from lockgen.dossier.licenses import License, license_of
from lockgen.dossier.metadata import MetadataCache
from lockgen.locks.lockset import MAIN

if TYPE_CHECKING:
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component

    from lockgen.plan.plan import Plan
    from lockgen.project import Project

__all__ = ["MERGED", "build_all", "purl_of"]

MERGED = "matrix"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_NAMESPACE = uuid.UUID("6f0e4d5a-3c1b-5e8f-9a7d-2b4c6e8f0a1c")  # lockgen's: serial numbers are UUID 5 under it


@dataclass
class _Context:
    project_name: str
    project_version: str | None
    licenses: Mapping[tuple[NormalizedName, str], License]
    plans: Mapping[str, Plan]
    axes: Mapping[str, Mapping[str, str]]
    targets: Mapping[str, str]
    components: dict[str, Component] = field(default_factory=dict)


def build_all(
    project: Project, inventory: Inventory, cache: MetadataCache, *, serial: str | None = None, timestamp: bool = False
) -> dict[str, str]:
    """``{cell: SBOM JSON, …, "matrix": merged SBOM JSON}``. ``serial``: the merged SBOM's serial
    number (a UUID; the cells' are UUID 5 under it); default: derived from the locks."""
    context = _context(project, inventory, cache)
    digest = hashlib.sha256("\n".join(f"{c} {_digest(inventory, c)}" for c in inventory.cells).encode()).hexdigest()
    base = uuid.UUID(serial) if serial else uuid.uuid5(_NAMESPACE, digest)
    documents = {}
    for cell in inventory.cells:
        bom = _cell_bom(context, inventory, cell)
        bom.serial_number = uuid.uuid5(base, cell)
        documents[cell] = _dump(bom, timestamp)
    merged = _merged_bom(context, inventory)
    merged.serial_number = base
    documents[MERGED] = _dump(merged, timestamp)
    return documents


def _digest(inventory: Inventory, cell: str) -> str:
    locks = inventory.locks.cells[cell]
    return " ".join(
        lock.render().rsplit("content-sha256: ", 1)[-1][:64] for lock in [locks.main, *locks.layers.values()]
    )


def _context(project: Project, inventory: Inventory, cache: MetadataCache) -> _Context:
    from lockgen.plan.target import target_for

    fetched = cache.fetch(inventory.packages)
    licenses = {
        (name, str(version)): license_of(f.raw) if f.raw is not None else License(missing=f.missing)
        for (name, version), f in fetched.items()
    }
    cells = {c.name: c for c in project.cells}
    known = [cells[name] for name in inventory.cells if name in cells and cells[name].resolves]
    plans = {p.cell.name: p for p in project.plans(known)}
    meta = project.config.project
    return _Context(
        project_name=(meta.name if meta and meta.name else project.root.name),
        project_version=meta.version if meta else None,
        licenses=licenses,
        plans=plans,
        axes={c.name: {**c.axes, **c.extra} for c in known},
        targets={c.name: target_for(c).platform for c in known},
    )


def purl_of(item: Locked, plan: Plan | None) -> Any:
    """The package URL of a locked package: ``pkg:pypi/<name>@<version>`` (local label kept),
    with ``repository_url`` for an index source or a non-default index, ``download_url`` for a
    direct URL, ``vcs_url`` for a VCS checkout; None for a project folder (no version)."""
    from packageurl import PackageURL

    entry = item.entry
    qualifiers: dict[str, str] = {}
    if entry.url is not None and "+" in entry.url.split("://")[0]:
        qualifiers["vcs_url"] = entry.url
    elif entry.url is not None and "://" in entry.url:
        qualifiers["download_url"] = entry.url
    elif entry.version is None:
        return None
    elif plan is not None:
        source = plan.served_by(item.name)
        if source is not None and source.kind == "index":
            qualifiers["repository_url"] = source.urls[0]
        elif source is None and plan.index_url.rstrip("/") != DEFAULT_INDEX_URL:
            qualifiers["repository_url"] = plan.index_url
    elif item.index_url and item.index_url.rstrip("/") != DEFAULT_INDEX_URL:
        qualifiers["repository_url"] = item.index_url
    version = str(entry.version) if entry.version is not None else None
    return PackageURL(type="pypi", name=item.name, version=version, qualifiers=qualifiers or None)


def _component(context: _Context, item: Locked, ref: str, cells: Sequence[str] = ()) -> Component:
    from cyclonedx.model import ExternalReference, ExternalReferenceType, HashAlgorithm, HashType, Property, XsUri
    from cyclonedx.model.component import Component, ComponentType

    purl = purl_of(item, context.plans.get(item.cell))
    hashes = sorted({a.sha256 for a in item.artifacts if a.sha256})
    refs = [
        ExternalReference(
            type=ExternalReferenceType.DISTRIBUTION,
            url=XsUri(a.url),
            hashes=[HashType(alg=HashAlgorithm.SHA_256, content=a.sha256)] if a.sha256 else [],
        )
        for a in item.artifacts
        if a.url
    ]
    properties = [Property(name="lockgen:layer", value=item.layer)] if not cells else []
    properties += [Property(name="lockgen:cell", value=c) for c in cells]
    found = context.licenses.get((item.name, str(item.version)))
    if found is not None and found.proprietary:
        properties.append(Property(name="lockgen:license:proprietary", value="true"))
    return Component(
        type=ComponentType.LIBRARY, name=item.name, version=str(item.version) if item.version else None,
        bom_ref=ref, purl=purl, hashes=[HashType(alg=HashAlgorithm.SHA_256, content=h) for h in hashes],
        external_references=refs, properties=properties, licenses=_licenses(found),
    )  # fmt: skip


def _licenses(found: License | None) -> list[Any]:
    from cyclonedx.model.license import DisjunctiveLicense, LicenseExpression

    if found is None or (found.expression is None and found.name is None):
        return []
    if found.expression is not None:
        from cyclonedx.contrib.license.exceptions import InvalidSpdxLicenseException
        from cyclonedx.contrib.license.factories import LicenseFactory

        try:  # one SPDX license id: a license object; else the expression (LicenseRef-… included)
            return [LicenseFactory().make_with_id(found.expression)]
        except InvalidSpdxLicenseException:
            return [LicenseExpression(found.expression)]
    return [DisjunctiveLicense(name=found.name)]


def _ref(item: Locked) -> str:
    purl = purl_of(item, None)
    return purl.to_string() if purl is not None else f"pkg:generic/{item.name}?path={item.entry.url}"


def _cell_properties(context: _Context, cell: str) -> list[Any]:
    from cyclonedx.model import Property

    values = {"cell": cell, **context.axes.get(cell, {})}
    if cell in context.targets:
        values["target"] = context.targets[cell]
    return [Property(name=f"lockgen:{k}", value=v) for k, v in values.items()]


def _layer_component(cell: str, layer: str, kind: str, ref: str) -> Component:
    from cyclonedx.model import Property
    from cyclonedx.model.component import Component, ComponentType

    return Component(
        type=ComponentType.APPLICATION, name=layer, bom_ref=ref, description=f"the {layer} install layer of {cell}",
        properties=[Property(name="lockgen:layer", value=layer), Property(name="lockgen:layer-kind", value=kind),
                    Property(name="lockgen:cell", value=cell)],
    )  # fmt: skip


def _edges(items: Iterable[Locked], refs: Mapping[tuple[str, NormalizedName], str]) -> dict[str, set[str]]:
    """``parent ref -> child refs`` from the entries' ``# via`` (same layer first, then main)."""
    edges: dict[str, set[str]] = {}
    for item in items:
        child = refs[(item.layer, item.name)]
        for via in item.entry.via:
            name = _package(via)
            parent = (refs.get((item.layer, name)) or refs.get((MAIN, name))) if name else None
            if parent is not None and parent != child:
                edges.setdefault(parent, set()).add(child)
    return edges


def _package(via: str) -> NormalizedName | None:
    """The package a ``# via`` item names (uv writes canonical names); None for a file."""
    from packaging.utils import canonicalize_name

    return canonicalize_name(via) if _NAME.fullmatch(via) else None


def _direct(items: Iterable[Locked], refs: Mapping[tuple[str, NormalizedName], str]) -> list[str]:
    """Refs of the entries no locked package required (a template, the config, a layer asked)."""
    out = []
    for item in items:
        names = [n for n in map(_package, item.entry.via) if n is not None]
        if not any((item.layer, n) in refs or (MAIN, n) in refs for n in names):
            out.append(refs[(item.layer, item.name)])
    return out


def _cell_bom(context: _Context, inventory: Inventory, cell: str) -> Bom:
    from cyclonedx.model.component import Component, ComponentType

    bom = _new_bom(context)
    root = Component(
        type=ComponentType.APPLICATION, name=context.project_name, version=context.project_version,
        bom_ref=f"cell:{cell}", properties=_cell_properties(context, cell),
    )  # fmt: skip
    bom.metadata.component = root
    items = inventory.of_cell(cell)
    refs = {(i.layer, i.name): _ref(i) if i.layer == MAIN else f"layer:{i.layer}/{_ref(i)}" for i in items}
    components: dict[str, Component] = {}
    kinds = {ref.name: str(ref.kind) for ref in inventory.locks.cells[cell].main.header.layers}
    layers: dict[str, Component] = {}
    for item in items:
        component = _component(context, item, refs[(item.layer, item.name)])
        components[component.bom_ref.value or ""] = component
        if item.layer == MAIN:
            bom.components.add(component)
        else:
            if item.layer not in layers:
                layers[item.layer] = _layer_component(
                    cell, item.layer, kinds.get(item.layer, ""), f"layer:{item.layer}"
                )
                bom.components.add(layers[item.layer])
            layers[item.layer].components.add(component)
    _register(bom, root, components, layers, items, refs)
    return bom


def _register(
    bom: Bom,
    root: Component,
    components: Mapping[str, Component],
    layers: Mapping[str, Component],
    items: Sequence[Locked],
    refs: Mapping[tuple[str, NormalizedName], str],
) -> None:
    edges = _edges(items, refs)
    direct = _direct(items, refs)
    main_direct = [components[r] for r in direct if not r.startswith("layer:")]
    bom.register_dependency(root, [*main_direct, *layers.values()])
    for name, layer in layers.items():
        bom.register_dependency(layer, [components[r] for r in direct if r.startswith(f"layer:{name}/")])
    for ref, component in components.items():
        bom.register_dependency(component, [components[c] for c in sorted(edges.get(ref, ()))])


def _merged_bom(context: _Context, inventory: Inventory) -> Bom:
    from cyclonedx.model.component import Component, ComponentType

    bom = _new_bom(context)
    root = Component(type=ComponentType.APPLICATION, name=context.project_name, version=context.project_version,
                     bom_ref="matrix")  # fmt: skip
    bom.metadata.component = root
    by_ref: dict[str, list[Locked]] = {}
    for item in inventory.packages:
        by_ref.setdefault(_ref(item), []).append(item)
    packages: dict[str, Component] = {}
    for ref, items in sorted(by_ref.items()):
        first = items[0]
        union = Locked(cell=first.cell, layer=first.layer, lock=first.lock, line=first.line, entry=first.entry,
                       artifacts=tuple({(a.url, a.sha256): a for i in items for a in i.artifacts}.values()),
                       index_url=first.index_url)  # fmt: skip
        packages[ref] = _component(context, union, ref, cells=sorted({i.cell for i in items}))
        bom.components.add(packages[ref])
    cells = []
    edges: dict[str, set[str]] = {}
    for cell in inventory.cells:
        items = inventory.of_cell(cell)
        refs = {(i.layer, i.name): _ref(i) for i in items}
        component = Component(type=ComponentType.APPLICATION, name=cell, version=context.project_version,
                              bom_ref=f"cell:{cell}", properties=_cell_properties(context, cell))  # fmt: skip
        kinds = {ref.name: str(ref.kind) for ref in inventory.locks.cells[cell].main.header.layers}
        layer_parts = {}
        for layer in sorted({i.layer for i in items} - {MAIN}):
            layer_parts[layer] = _layer_component(cell, layer, kinds.get(layer, ""), f"cell:{cell}/layer:{layer}")
            component.components.add(layer_parts[layer])
        bom.components.add(component)
        cells.append(component)
        direct = [
            (i.layer, refs[(i.layer, i.name)]) for i in items if refs[(i.layer, i.name)] in set(_direct([i], refs))
        ]
        bom.register_dependency(
            component, [*(packages[r] for layer, r in direct if layer == MAIN), *layer_parts.values()]
        )
        for layer, part in layer_parts.items():
            bom.register_dependency(part, [packages[r] for name, r in direct if name == layer])
        for parent, children in _edges(items, refs).items():
            edges.setdefault(parent, set()).update(children)
    bom.register_dependency(root, cells)
    for ref, component in packages.items():
        bom.register_dependency(component, [packages[c] for c in sorted(edges.get(ref, ())) if c in packages])
    return bom


def _new_bom(context: _Context) -> Bom:
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType

    bom = Bom()
    bom.metadata.tools.components.add(Component(type=ComponentType.APPLICATION, name="lockgen", version=__version__))
    return bom


def _dump(bom: Bom, timestamp: bool) -> str:
    import datetime

    from cyclonedx.output.json import JsonV1Dot6

    if timestamp:
        bom.metadata.timestamp = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    else:
        bom.metadata.timestamp = None  # type: ignore[assignment]  # the library omits a None timestamp
    return JsonV1Dot6(bom).output_as_string(indent=2) + "\n"
