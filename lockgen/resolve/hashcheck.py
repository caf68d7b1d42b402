"""Check the sha256 a resolution took from a page against the file it names (issue 8, item 5).

uv copies each artifact's hash from the page that lists it (``#sha256=…`` or PEP 691 JSON) and
checks nothing while compiling: a wrong hash goes into the lock and every install fails. Which
hashes lockgen checks, and why those (the rule of :func:`origin`):

* **files in a local find-links folder**: always; reading the file is all it costs.
* **files listed on a find-links page** (a ``find-links`` source, or the ``find-links`` setting):
  downloaded (through the mirrors) and hashed when they are at most :data:`LIMIT` bytes (the
  size the pylock gives, or the download is stopped past it). A find-links page is a hand-written
  list of links: nothing computed its hashes from the files.
* **direct wheel URLs**: :mod:`lockgen.resolve.fetch` downloads them and computes the hash.
* **files from an index** (the default index, a backend ``index`` source): not downloaded (the
  default matrix alone would fetch gigabytes). An index computes hashes when a file is uploaded;
  lockgen records that it took them unchecked: the sources go into the main lock's
  ``unverified-hashes`` header field and the manifest's ``unverified_hashes``.

A find-links file above the limit is recorded the same way. A hash that does not match its file
fails the cell, naming the package, the file, both hashes and what to fix. A file's verified hash
is kept by URL in ``.lockgen/verified.json`` (not with ``--force``/``--upgrade``: then every
file is fetched again once per run), so later runs download nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import posixpath
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.pylock import Package, Pylock
from packaging.utils import NormalizedName

from lockgen.config import WORK
from lockgen.index.client import Client, Failure, HostError
from lockgen.locks.pylockfile import artifacts
from lockgen.plan import identity
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.runtime import bounded
from lockgen.runtime.errors import LockgenError
from lockgen.runtime.keyed import table

__all__ = ["DEFAULT_INDEX", "LIMIT", "Checked", "Verified", "check", "origin"]

log = logging.getLogger("lockgen")

#: Find-links files up to this many bytes are downloaded and hashed (64 MiB: every wheel of a
#: pure-Python package and most extensions; not torch, flash-attn or tensorrt).
LIMIT = 64 * 1024 * 1024
#: The name the manifest uses for the cell's ``index-url``.
DEFAULT_INDEX = "default index"
_CACHE = f"{WORK}/verified.json"


@dataclass(frozen=True)
class Origin:
    """Where an artifact's hash came from: ``kind`` is ``local``, ``direct``, ``find-links`` or
    ``index``; ``name`` the source (or ``find-links`` key, or :data:`DEFAULT_INDEX`)."""

    kind: str
    name: str
    page: str = ""  # what listed it, for messages

    @property
    def listed_by(self) -> str:
        return self.page or (
            f"the find-links page of {self.name!r}" if self.kind == "find-links" else "its local folder"
        )


def origin(plan: Plan, package: Package, where: str, index: str | None = None) -> Origin:
    """Where the artifact of ``package`` at ``where`` (canonical URL, or a path relative to the
    cell's pylock) was listed. A package named for a source came from it (verify checks that);
    any other from the page uv names (``index``: its ``# from`` annotation, canonical): a page of
    the ``find-links`` setting, else the default index. When uv named none and the cell has
    find-links pages, one of them may have listed it: it is checked as theirs (never judged by
    host: a find-links page and the default index may share one, issue 16)."""
    if "://" not in where:
        return Origin("local", "local folder")
    source = plan.inputs.served_by.get(package.name)
    if package.archive is not None or (source is not None and source.kind == "urls"):
        return Origin("direct", source.name if source else "direct URL")
    if source is not None:
        return Origin("index" if source.kind == "index" else "find-links", source.name)
    pages = sorted(plan.cell.settings.find_links.items())
    if index is not None:
        key = next((k for k, links in pages if any(identity.same(index, link) for link in links)), None)
        return Origin("find-links", key) if key is not None else Origin("index", DEFAULT_INDEX)
    remote = [key for key, links in pages if any("://" in link for link in links)]
    if remote:
        page = f"the page listing it (the default index or find-links {', '.join(map(repr, remote))})"
        return Origin("find-links", remote[0], page)
    return Origin("index", DEFAULT_INDEX)


@dataclass
class Verified:
    """Hashes lockgen computed from the files themselves, by canonical URL, shared by a run's
    cells (thread-safe) and kept in ``.lockgen/verified.json`` between runs. ``fresh``: ignore
    what earlier runs computed (``--force``/``--upgrade``)."""

    root: Path | None = None
    fresh: bool = False
    _known: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.root is not None and not self.fresh:
            data = table(bounded.read_cache(self.root / _CACHE))
            self._known = {k: v for k, v in data.items() if isinstance(v, str)}  # another value is no hash

    def get(self, url: str) -> str | None:
        with self._lock:
            return self._known.get(url)

    def put(self, url: str, digest: str) -> None:
        with self._lock:
            self._known[url] = digest
            if self.root is None:
                return
            from lockgen.locks.store import linked_work, write_text

            path = self.root / _CACHE
            if linked_work(self.root):  # never written through a link (the run's entry refuses it)
                return
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_text(path, json.dumps(self._known, indent=1, sort_keys=True) + "\n", _CACHE)
            except (OSError, LockgenError) as exc:  # a cache: the run goes on without it
                log.debug("cannot write %s: %s", path, exc)


@dataclass(frozen=True)
class Checked:
    """The outcome for one resolution: ``problems`` (a hash that does not match its file: the
    cell fails) and ``unverified`` (names of the sources whose hashes were taken unchecked)."""

    problems: tuple[str, ...] = ()
    unverified: frozenset[str] = frozenset()


def check(
    plan: Plan,
    pylock: Pylock,
    root: Path,
    mirrors: Mirrors,
    verified: Verified,
    stop: threading.Event | None = None,
    indexes: Mapping[NormalizedName, str] | None = None,
) -> Checked:
    """Verify what is cheap to verify of ``pylock``'s artifacts (see the module docstring).
    ``pylock`` holds canonical URLs and paths relative to the cell's committed pylock folder;
    ``indexes`` the page uv took each package from (:func:`origin`).
    Raises :class:`~lockgen.runtime.errors.Interrupted` when ``stop`` is set during a download (Ctrl-C)."""
    folder = root / plan.lock.removesuffix(".txt")
    problems: list[str] = []
    unverified: set[str] = set()
    for package in sorted(pylock.packages, key=lambda p: p.name):
        for kind, artifact in artifacts(package):
            expected = artifact.hashes.get("sha256") if artifact.hashes else None
            where = str(artifact.url or artifact.path or "")
            if not expected or not where:
                continue  # verify reports a missing hash
            source = origin(plan, package, where, (indexes or {}).get(package.name))
            if source.kind == "direct":
                continue
            if source.kind == "index":
                unverified.add(source.name)
                continue
            if source.kind == "find-links" and artifact.size is not None and artifact.size > LIMIT:
                unverified.add(source.name)
                continue
            actual = (
                _local(folder, where) if source.kind == "local" else _remote(where, expected, mirrors, verified, stop)
            )
            if actual is None:
                unverified.add(source.name)
            elif actual != expected:
                problems.append(_mismatch(package, kind, where, expected, actual, source))
    return Checked(problems=tuple(problems), unverified=frozenset(unverified))


def _mismatch(package: Package, kind: str, where: str, expected: str, actual: str, source: Origin) -> str:
    return (
        f"{package.name} {package.version}: {kind} {where}: {source.listed_by} gives sha256 {expected}, but the file has "
        f"sha256 {actual}; an install with --require-hashes would refuse it. Fix the page's #sha256 (or drop it: "
        "lockgen then hashes the file), or replace the file"
    )


def _local(folder: Path, where: str) -> str | None:
    """sha256 of a local file, ``where`` relative to the pylock's folder (None: unreadable)."""
    path = Path(posixpath.normpath((folder / where).as_posix()))
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _remote(url: str, expected: str, mirrors: Mirrors, verified: Verified, stop: threading.Event | None) -> str | None:
    """sha256 of the file at ``url`` (downloaded from its mirror, unless an earlier download
    gave ``expected``); None when it is larger than :data:`LIMIT` or cannot be downloaded (then
    it stays unverified: uv has just read it)."""
    if verified.get(url) == expected:
        return expected
    digest = hashlib.sha256()
    try:
        with Client(mirrors, timeout=60, max_body=LIMIT, stop=stop) as client:
            reply = client.download(url, digest.update)
    except HostError as exc:
        if exc.kind is Failure.TOO_LARGE:
            return None
        log.warning("could not download %s to check its hash (%s); it stays unverified", url, exc.detail)
        return None
    if not reply.ok:
        log.warning("could not download %s to check its hash (HTTP %s); it stays unverified", url, reply.status)
        return None
    value = digest.hexdigest()
    verified.put(url, value)
    return value


def merge(*names: Iterable[str]) -> tuple[str, ...]:
    """Sorted unique source names, for the ``unverified-hashes`` field."""
    return tuple(sorted({n for group in names for n in group}))
