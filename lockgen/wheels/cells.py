"""A GPU cell's kernel coverage for the manifest: which locked wheels carry GPU code, and what.

The GPU wheels of a cell (issue 19): in its ``pylock.toml`` (the main layer as the target installs
it), the platform wheels of the backend family's framework builds (``builds``, default torch),
of the packages named after one (``torchvision``, ``torchaudio``, ``torchao``: some do not declare
torch as a dependency), of every package that depends on one of them, directly or not (the
main lock's ``# via`` annotations: ``torch`` is "via torchvision" when torchvision requires it),
and of every package whose local version label names the family (``+cu124``, ``+rocm7.2``: a
GPU build such as llama.cpp's server wheels, which need no torch). Wheels of the family's runtime
packages (``nvidia-*``, NVIDIA's and AMD's own libraries) are not read: their vendor builds them
for every architecture of their toolkit. The optional and no-deps layers' GPU wheels come from
their lock files (:mod:`lockgen.wheels.layers`).

The record (``coverage`` of a manifest entry, docs/manifest.md) lists each main GPU wheel read,
with its code (empty lists for a wheel without any), grouped by the GPU runtimes it is linked
against (``linked``), the ones
that could not be read, the GPU runtimes the cell installs (``runtimes``), and per layer the same
for its wheels. It is carried from the committed manifest while the cell's GPU wheels (name,
version, sha256) and each layer's lock text stay the same, so ``lockgen check`` and a no-op run
read nothing; :class:`lockgen.wheels.reading.Reader` reads what is missing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.tags import Tag
from packaging.utils import canonicalize_name

from lockgen.config import WORK
from lockgen.config.model import BackendFamily
from lockgen.locks import pylockfile
from lockgen.locks.lock import Lock
from lockgen.runtime import bounded
from lockgen.runtime.errors import InputError, LockFormatError
from lockgen.wheels.coverage import Code
from lockgen.wheels.layers import layer_wheels
from lockgen.wheels.model import GpuLayer, GpuWheel, Read

__all__ = [
    "CACHE", "GpuLayer", "GpuWheel", "Read", "carried", "carried_layer", "cell_coverage", "gpu_family", "gpu_wheels",
    "layer_record", "main_record", "runtimes",
]  # fmt: skip

CACHE = f"{WORK}/coverage"


Reading = Callable[[Sequence[GpuWheel]], Read]


def gpu_family(backend: str, families: Sequence[BackendFamily]) -> BackendFamily | None:
    """The GPU family of a cell's backend (``cu130`` -> cuda), or None (cpu, mps, unknown)."""
    from lockgen.resolve.invariants import backend_build

    build = backend_build(backend, families)
    family = next((f for f in families if build is not None and f.name == build.family), None)
    return family if family is not None and family.gpu else None


def gpu_wheels(root: Path, lock_path: str, family: BackendFamily) -> list[GpuWheel] | None:
    """The main layer's GPU wheels of the cell whose main lock is ``lock_path`` (see the module
    docstring), sorted by name; None when the cell has no pylock (nothing to read them from).
    Raises :class:`LockFormatError` for a pylock or lock that cannot be read."""
    pylock_path = f"{lock_path.removesuffix('.txt')}/{pylockfile.PYLOCK_NAME}"
    try:
        text = bounded.read_text(root / pylock_path, pylock_path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LockFormatError(f"{pylock_path}: cannot read it ({exc.strerror})") from None
    except InputError as exc:
        raise LockFormatError(exc.problems[0].text() if exc.problems else str(exc)) from None
    pylock = pylockfile.main_only(pylockfile.loads(text, pylock_path))
    main = Lock.read(root / lock_path, lock_path)
    builds: set[str] = {canonicalize_name(b) for b in family.builds}
    wanted = _dependents(builds, main) | {p.name for p in pylock.packages if any(p.name.startswith(b) for b in builds)}
    wanted |= {p.name for p in pylock.packages if p.version is not None and _labelled(p.version.local, family)}
    found = []
    for package in pylock.packages:
        if package.name not in wanted:
            continue
        for wheel in package.wheels or ():
            tags = pylockfile.wheel_tags(wheel)
            if not tags or all(tag.platform == "any" for tag in tags):
                continue
            sha256 = wheel.hashes.get("sha256")
            if not sha256:
                continue
            found.append(GpuWheel(name=str(package.name), version=str(package.version), sha256=sha256,
                                  url=wheel.url, path=str(wheel.path) if wheel.path else None, size=wheel.size))  # fmt: skip
    return sorted(found, key=lambda w: w.key)


def _labelled(label: str | None, family: BackendFamily) -> bool:
    """Whether a local version label names the family (``cu124``, ``cu128.torch2.9.0``, ``rocm7.2``)."""
    return bool(label) and any(_flavor(pattern).search(label or "") for pattern in family.flavors)


@functools.lru_cache(maxsize=64)
def _flavor(pattern: str) -> re.Pattern[str]:
    head, version, tail = pattern.lower().partition("{version}")
    return re.compile(re.escape(head) + (r"\d" if version else "") + re.escape(tail))


def _dependents(builds: set[str], main: Lock | None) -> set[str]:
    """``builds`` and every package of ``main`` that depends on one of them, transitively."""
    if main is None:
        return builds
    required_by = {entry.name: {canonicalize_name(v) for v in entry.via if "/" not in v} for entry in main.entries}
    found, todo = set(builds), list(builds)
    while todo:
        for dependent in required_by.get(canonicalize_name(todo.pop()), ()):
            if dependent not in found:
                found.add(dependent)
                todo.append(dependent)
    return found


_RUNTIME_PACKAGE = re.compile(r"nvidia-cuda-runtime(?:-cu(\d{1,3}))?")


def runtimes(
    main: Lock | None, wheels: Iterable[GpuWheel], codes: Mapping[str, Code], builds: Iterable[str]
) -> list[str]:
    """The GPU runtime libraries the cell installs (sorted names as
    :func:`lockgen.wheels.binaries.gpu_runtime` gives them): the ones any read main wheel ships,
    the ones the framework builds' code (torch) is linked against (the backend invariants, C27,
    make the lock install those), and CUDA's runtime package of the main lock
    (``nvidia-cuda-runtime-cu12`` or ``nvidia-cuda-runtime`` 13.x ship ``libcudart.so.<major>``
    and ``cudart64_<major>.dll``)."""
    wanted = {canonicalize_name(b) for b in builds}
    found: set[str] = set()
    for wheel in wheels:
        code = codes.get(wheel.sha256)
        if code is not None:
            found.update(code.bundles)
            if canonicalize_name(wheel.name) in wanted:
                found.update(n for group in code.linked for n in group.needs)
    for entry in main.entries if main is not None else ():
        match = _RUNTIME_PACKAGE.fullmatch(entry.name)
        major = (match.group(1) or (str(entry.version.major) if entry.version else None)) if match else None
        if major:
            found.update({f"libcudart.so.{major}", f"cudart64_{major}.dll"})
    return sorted(found)


def _wheels(wheels: Sequence[GpuWheel], read: Read) -> dict[str, Any]:
    kept = [w for w in wheels if w.sha256 not in read.skipped]
    done = [w for w in kept if w.sha256 in read.codes]
    return {
        "wheels": [{"name": w.name, "version": w.version, "sha256": w.sha256, **_code(read.codes[w.sha256])} for w in done],
        "unread": [{"name": w.name, "version": w.version, "sha256": w.sha256, "reason": read.unread.get(w.sha256, "not read")}
                   for w in kept if w.sha256 not in read.codes],
    }  # fmt: skip


def _code(code: Code) -> dict[str, list[str]]:
    data = code.to_dict()
    del data["bundles"]  # what the wheel ships is in the cell's runtimes
    return data


def main_record(wheels: Sequence[GpuWheel], read: Read, main: Lock | None, builds: Iterable[str]) -> dict[str, Any]:
    """The main layer's part of the ``coverage`` object: ``wheels`` (read, with their code),
    ``unread`` and ``runtimes`` (:func:`runtimes`)."""
    return {**_wheels(wheels, read), "runtimes": runtimes(main, wheels, read.codes, builds)}


def layer_record(layer: GpuLayer, read: Read) -> dict[str, Any]:
    """A layer's entry of the ``coverage`` object's ``layers``."""
    return {"name": layer.name, "kind": layer.kind, "sha256": layer.sha256, **_wheels(layer.wheels, read)}


def _current(part: Mapping[str, Any]) -> bool:
    """Whether a recorded part has this reader's shape (every wheel's ``linked``), else it is read again."""
    wheels = part.get("wheels", [])
    return isinstance(wheels, list) and all(
        isinstance(w, Mapping) and isinstance(w.get("linked"), list) for w in wheels
    )


def _parsed(previous: Mapping[str, Any]) -> tuple[dict[str, Code], dict[str, str], list[tuple[str, str, str]]]:
    read = {w["sha256"]: Code.from_dict(w) for w in previous.get("wheels", [])}
    unread = {w["sha256"]: str(w["reason"]) for w in previous.get("unread", []) if w["sha256"] not in read}
    keys = sorted([(w["name"], w["version"], w["sha256"]) for w in previous.get("wheels", [])]
                  + [(w["name"], w["version"], w["sha256"]) for w in previous.get("unread", [])])  # fmt: skip
    return read, unread, keys


def carried(previous: Any, wheels: Sequence[GpuWheel], allow_unread: bool = True) -> dict[str, Any] | None:
    """The main part of a previous manifest entry's ``coverage`` when it was made of exactly these
    ``wheels`` (read or unread) by this reader, else None; with ``allow_unread`` False a record
    with unread wheels is not carried either (``lockgen all`` tries them again)."""
    if not isinstance(previous, Mapping) or (previous.get("unread") and not allow_unread) or not _current(previous):
        return None
    try:
        read, unread, keys = _parsed(previous)
        installed = sorted(str(r) for r in previous["runtimes"])
    except (KeyError, TypeError, AttributeError, ValueError):
        return None
    if keys != sorted(w.key for w in wheels):
        return None
    return {**_wheels(wheels, Read(read, unread)), "runtimes": installed}


def carried_layer(previous: Any, layer: GpuLayer, allow_unread: bool = True) -> dict[str, Any] | None:
    """The previous record of ``layer`` (same name and lock text sha256, this reader's shape), else None."""
    if not isinstance(previous, Mapping) or not isinstance(previous.get("layers"), list):
        return None
    for item in previous["layers"]:
        if not isinstance(item, Mapping) or (item.get("name"), item.get("sha256")) != (layer.name, layer.sha256):
            continue
        if (item.get("unread") and not allow_unread) or not _current(item):
            return None
        try:
            read, unread, keys = _parsed(item)
        except (KeyError, TypeError, AttributeError):
            return None
        wheels = [GpuWheel(name=n, version=v, sha256=s, url=None, path=None, size=None) for n, v, s in keys]
        return {"name": layer.name, "kind": layer.kind, "sha256": layer.sha256, **_wheels(wheels, Read(read, unread))}
    return None


def cell_coverage(root: Path, lock_path: str, family: BackendFamily, fits: frozenset[Tag],
                  previous: Sequence[Any], read: Reading | None) -> dict[str, Any] | None:  # fmt: skip
    """The ``coverage`` object of a GPU cell whose main lock is ``lock_path``: each part carried
    from the first of ``previous`` records that has it (the shards', the manifest on disk), else
    read with ``read`` (``lockgen all``); None when the cell has no pylock, no GPU wheels and no
    layers, or (without ``read``) a part cannot be carried. Raises :class:`LockFormatError` for
    locks that cannot be read."""
    wheels = gpu_wheels(root, lock_path, family)
    main = Lock.read(root / lock_path, lock_path)
    if wheels is None or main is None:
        return None
    layers = layer_wheels(root, main, family, fits)
    if not wheels and not layers:
        return None
    allow = read is None
    part = next((p for p in (carried(r, wheels, allow) for r in previous) if p is not None), None)
    if part is None:
        if read is None:
            return None
        part = main_record(wheels, read(wheels), main, family.builds)
    parts = []
    for layer in layers:
        found = next((p for p in (carried_layer(r, layer, allow) for r in previous) if p is not None), None)
        if found is None:
            if read is None:
                return None
            found = layer_record(layer, read(layer.wheels))
        parts.append(found)
    return {**part, "layers": parts}
