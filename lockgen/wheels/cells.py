"""A GPU cell's kernel coverage for the manifest: which locked wheels carry GPU code, and what.

The GPU wheels of a cell (issue 19): in its ``pylock.toml`` (the main layer as the target installs
it), the platform wheels of the backend family's framework builds (``builds``, default torch),
of the packages named after one (``torchvision``, ``torchaudio``, ``torchao``: some do not declare
torch as a dependency) and of every package that depends on one of them, directly or not (the
main lock's ``# via`` annotations: ``torch`` is "via torchvision" when torchvision requires it). Wheels of the family's
runtime packages (``nvidia-*``, NVIDIA's and AMD's own libraries) are not read: their vendor builds
them for every architecture of their toolkit.

The record (``coverage`` of a manifest entry, docs/manifest.md) lists each GPU wheel read, with
its code (empty lists for a wheel without any), and the ones that could not be read. It is
carried from the committed manifest while the cell's GPU wheels (name, version, sha256) stay the
same, so ``lockgen check`` and a no-op run read nothing; :func:`refresh` reads what is missing,
from the cache by sha256 (``.lockgen/coverage/``) or the wheel itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from lockgen.config import WORK
from lockgen.config.model import BackendFamily
from lockgen.locks import pylockfile
from lockgen.locks.lock import Lock
from lockgen.runtime.errors import Interrupted, LockFormatError
from lockgen.wheels.coverage import Code, CoverageError
from lockgen.wheels.remote import cached, read_local, read_remote, store

__all__ = ["CACHE", "GpuWheel", "carried", "gpu_family", "gpu_wheels", "record", "refresh"]

CACHE = f"{WORK}/coverage"
log = logging.getLogger("lockgen.coverage")


@dataclass(frozen=True)
class GpuWheel:
    """A locked GPU wheel: ``url`` (canonical) or ``path`` (project-relative), ``size`` bytes."""

    name: str
    version: str
    sha256: str
    url: str | None
    path: str | None
    size: int | None

    @property
    def key(self) -> tuple[str, str, str]:
        return self.name, self.version, self.sha256


def gpu_family(backend: str, families: Sequence[BackendFamily]) -> BackendFamily | None:
    """The GPU family of a cell's backend (``cu130`` -> cuda), or None (cpu, mps, unknown)."""
    from lockgen.resolve.invariants import backend_build

    build = backend_build(backend, families)
    family = next((f for f in families if build is not None and f.name == build.family), None)
    return family if family is not None and family.gpu else None


def gpu_wheels(root: Path, lock_path: str, family: BackendFamily) -> list[GpuWheel] | None:
    """The GPU wheels of the cell whose main lock is ``lock_path`` (see the module docstring),
    sorted by name; None when the cell has no pylock (nothing to read them from). Raises
    :class:`LockFormatError` for a pylock or lock that cannot be read."""
    pylock_path = f"{lock_path.removesuffix('.txt')}/{pylockfile.PYLOCK_NAME}"
    try:
        text = (root / pylock_path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LockFormatError(f"{pylock_path}: cannot read it ({exc.strerror})") from None
    pylock = pylockfile.loads(text, pylock_path)
    main = Lock.read(root / lock_path, lock_path)
    builds: set[str] = {canonicalize_name(b) for b in family.builds}
    wanted = _dependents(builds, main) | {p.name for p in pylock.packages if any(p.name.startswith(b) for b in builds)}
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


def record(wheels: Sequence[GpuWheel], codes: Mapping[str, Code], unread: Mapping[str, str]) -> dict[str, Any]:
    """The manifest's ``coverage`` object: ``wheels`` (read, with their code) and ``unread``."""
    read = [w for w in wheels if w.sha256 in codes]
    return {
        "wheels": [{"name": w.name, "version": w.version, "sha256": w.sha256, **codes[w.sha256].to_dict()} for w in read],
        "unread": [{"name": w.name, "version": w.version, "sha256": w.sha256, "reason": unread.get(w.sha256, "not read")}
                   for w in wheels if w.sha256 not in codes],
    }  # fmt: skip


def carried(previous: Any, wheels: Sequence[GpuWheel], allow_unread: bool = True) -> dict[str, Any] | None:
    """The previous manifest entry's ``coverage`` when it was made of exactly these ``wheels``
    (read or unread), else None; with ``allow_unread`` False a record with unread wheels is not
    carried either (``lockgen all`` tries them again)."""
    if not isinstance(previous, Mapping) or (previous.get("unread") and not allow_unread):
        return None
    try:
        read = {w["sha256"]: Code.from_dict(w) for w in previous.get("wheels", [])}
        unread = {w["sha256"]: str(w["reason"]) for w in previous.get("unread", []) if w["sha256"] not in read}
        keys = sorted([(w["name"], w["version"], w["sha256"]) for w in previous.get("wheels", [])]
                      + [(w["name"], w["version"], w["sha256"]) for w in previous.get("unread", [])])  # fmt: skip
    except (KeyError, TypeError, AttributeError):
        return None
    if keys != sorted(w.key for w in wheels):
        return None
    return record(wheels, read, unread)


def refresh(
    root: Path,
    wheels: Sequence[GpuWheel],
    fetch_url: Callable[[str], str],
    stop: threading.Event | None = None,
    offline: bool = False,
) -> tuple[dict[str, Any], int]:
    """(the ``coverage`` record, bytes downloaded) of ``wheels``: each from the cache by sha256,
    else read (a local wheel whole, a remote one by range requests through ``fetch_url``, the
    mirror mapping) and cached. A wheel that cannot be read (offline, HTTP errors, a broken
    file) is ``unread`` with the reason: the selector then says the cell's coverage is partial."""
    cache = root / CACHE
    cache.mkdir(parents=True, exist_ok=True)  # also the folder of the members' temporary copies
    codes: dict[str, Code] = {}
    unread: dict[str, str] = {}
    fetched = 0
    client = None
    try:
        for wheel in wheels:
            if stop is not None and stop.is_set():
                raise Interrupted("interrupted while reading the GPU wheels")
            hit = cached(cache, wheel.sha256)
            if hit is not None:
                codes[wheel.sha256] = hit
                continue
            try:
                if wheel.path is not None:
                    code = read_local(root / wheel.path, wheel.sha256, cache.parent)
                elif offline or wheel.url is None:
                    raise CoverageError("offline" if offline else "the pylock gives no URL")
                else:
                    if client is None:
                        client = _client()
                    code, count = read_remote(client, fetch_url(wheel.url), wheel.size, cache.parent)
                    fetched += count
                    log.info("read the GPU code of %s %s (%d MB)", wheel.name, wheel.version, count // 10**6)
            except (CoverageError, OSError) as exc:
                unread[wheel.sha256] = _scrub(str(exc))[:300]
                continue
            store(cache, wheel.sha256, code)
            codes[wheel.sha256] = code
    finally:
        if client is not None:
            client.close()
    return record(wheels, codes, unread), fetched


def _client() -> Any:
    import httpx

    from lockgen.resolve import tls

    return httpx.Client(follow_redirects=True, timeout=60, verify=tls.context())


def _scrub(text: str) -> str:
    """``text`` without the login of any URL in it."""
    import re

    return re.sub(r"(\w+://)[^/@\s]+@", r"\1", text)
