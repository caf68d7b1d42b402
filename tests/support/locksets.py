"""Hand-made lock folders for the diff tests, written through the lock model.

A folder is described as data: cells (:class:`CellSpec`) of pins (:class:`Pin`), layers and
unavailable optional entries. :func:`write_locks` renders each cell's main lock, its layer locks
(the main header's ``layer`` refs carry their digests) and its ``pylock.toml`` the way lockgen
writes them: ``locks/<cell>.txt``, ``locks/<cell>/<layer>.txt``, ``locks/<cell>/pylock.toml``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from packaging.pylock import Package, PackageWheel, Pylock
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.locks import pylockfile
from lockgen.locks.lock import Entry, Header, LayerKind, LayerRef, Lock, Unavailable, text_sha256

PYPI = "https://files.pythonhosted.org/packages/4e/3c/{digest}"


def digest_of(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


@dataclass
class Pin:
    """A locked package: ``version`` (None for a VCS or path URL), ``url`` for a direct
    reference, ``where`` the folder its pylock wheel lives in (``{digest}`` filled in),
    ``digest`` its sha256 (default: derived from name and version)."""

    version: str | None
    url: str | None = None
    where: str = PYPI
    digest: str | None = None
    extra: tuple[str, ...] = ()  # sha256 of more wheels of the same version (e.g. for newer machines)

    def sha256(self, name: str) -> str:
        return self.digest or digest_of(name, str(self.version), self.url or "")

    def entry(self, name: str) -> Entry:
        hashes = (
            ()
            if self.url and self.url.startswith("git+")
            else tuple(sorted(f"sha256:{h}" for h in (self.sha256(name), *self.extra)))
        )
        version = Version(self.version) if self.version and not self.url else None
        return Entry(
            name=canonicalize_name(name),
            version=version,
            url=self.url,
            hashes=hashes,
            via=("templates/requirements.in.j2",),
        )

    def package(self, name: str) -> Package:
        sha = self.sha256(name)
        wheel = f"{self.where.format(digest=sha)}/{name.replace('-', '_')}-{self.version}-py3-none-any.whl"
        more = [PackageWheel(url=wheel.replace("-py3-none-any", f"-cp312-cp312-manylinux_2_{34 + i}_x86_64"), hashes={"sha256": h})
                for i, h in enumerate(self.extra)]  # fmt: skip
        return Package(name=canonicalize_name(name), version=Version(self.version or "0"),
                       wheels=[PackageWheel(url=wheel, hashes={"sha256": sha}), *more])  # fmt: skip


@dataclass
class LayerSpec:
    kind: LayerKind
    pins: dict[str, Pin]
    find_links: tuple[str, ...] = ()


@dataclass
class CellSpec:
    pins: dict[str, Pin]
    layers: dict[str, LayerSpec] = field(default_factory=dict)
    unavailable: list[Unavailable] = field(default_factory=list)
    pylock: bool = True


def header(cell: str, kind: LayerKind, path: str, **more: object) -> Header:
    return Header(
        cell=cell, kind=kind, path=path, target="x86_64-manylinux_2_28, Python 3.12, backend cu130", uv="0.13.9",
        input_hash=f"sha256:{digest_of(cell)}", exclude_newer="2026-11-25T00:00:00Z", **more,  # type: ignore[arg-type]
    )  # fmt: skip


def write_locks(folder: Path, cells: dict[str, CellSpec], manifest: dict[str, object] | None = None) -> Path:
    """Write ``cells`` into the locks folder ``folder`` (created); returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    for cell, spec in cells.items():
        refs = []
        for name, layer in spec.layers.items():
            path = f"locks/{cell}/{name}.txt"
            entries = tuple(pin.entry(n) for n, pin in sorted(layer.pins.items()))
            lock = Lock(
                header=header(cell, layer.kind, path, layer_of=f"locks/{cell}.txt", find_links=layer.find_links),
                entries=entries,
            )
            text = lock.render()
            (folder / cell).mkdir(exist_ok=True)
            (folder / cell / f"{name}.txt").write_text(text, newline="\n")
            refs.append(LayerRef(kind=layer.kind, name=name, sha256=text_sha256(text), path=path))
        main = Lock(
            header=header(cell, LayerKind.MAIN, f"locks/{cell}.txt", index_url="https://pypi.org/simple",
                          layers=tuple(refs), unavailable=tuple(spec.unavailable)),
            entries=tuple(pin.entry(n) for n, pin in sorted(spec.pins.items())),
        )  # fmt: skip
        (folder / f"{cell}.txt").write_text(main.render(), newline="\n")
        if spec.pylock:
            packages = [pin.package(n) for n, pin in sorted(spec.pins.items()) if pin.version]
            pylock = Pylock(lock_version=Version("1.0"), created_by="lockgen", packages=packages)
            (folder / cell).mkdir(exist_ok=True)
            (folder / cell / "pylock.toml").write_text(pylockfile.dumps(pylock), newline="\n")
    if manifest is not None:
        (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return folder


CU = "https://download.pytorch.org/whl/{flavor}"
MYLIB = "git+https://github.com/example/mylib@"


NAMES = ("linux-x86_64-cu130-py3.12", "linux-x86_64-cu130-py3.13", "windows-x86_64-cpu-py3.12")


def base_cells(names: tuple[str, ...] = NAMES) -> dict[str, CellSpec]:
    """A small world: per cell numpy, matplotlib, torch (from download.pytorch.org), an
    optional flash-attn layer from a find-links page and an unhashed layer with a VCS entry."""
    cells = {}
    for name in names:
        cells[name] = CellSpec(
            pins={
                "numpy": Pin("2.4.5"),
                "matplotlib": Pin("3.10.1"),
                "torch": Pin("2.13.0+cu126", where=CU.format(flavor="cu126")),
            },
            layers={
                "optional-flash-attn": LayerSpec(
                    LayerKind.OPTIONAL, {"flash-attn": Pin("2.8.2")}, ("https://wheels.example.org/fa/",)
                ),
                "unhashed": LayerSpec(LayerKind.UNHASHED, {"mylib": Pin(None, url=MYLIB + "a" * 40)}),
            },
        )
    return copy.deepcopy(cells)
