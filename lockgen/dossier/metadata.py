"""Core metadata of locked packages, fetched as the index's PEP 658 metadata file, else read
from the wheel itself by range requests (no wheel is downloaded), cached by the artifact's sha256.

For each ``(name, version)`` of the inventory one artifact is chosen (a wheel with a URL, a pure
``py3-none-any`` one first). Its metadata file is ``<artifact URL>.metadata`` (PEP 658; PyPI
serves it for every wheel). A package that only a layer lock has (layer locks list hashes, not
URLs) is looked up on its index's project page (PEP 691 JSON, else the PEP 503 HTML page) by its
sha256; the page also gives the metadata file's own hash (``core-metadata`` /
``data-core-metadata``), which is then checked. Pages are read and parsed by
:mod:`lockgen.index.pages`; every request goes through the one client (mirrors, logins, bounds).

An index that serves no metadata file (HTTP 404 for ``<url>.metadata``, or a page that says
``core-metadata: false``: a private index, a caching proxy) costs no download either: the wheel's
``*.dist-info/METADATA`` is read with range requests (the zip's central directory, then that one
member; :func:`lockgen.index.ranges.wheel_metadata`), as pip's and uv's lazy wheels do. An sdist
has no such member: it stays unknown.

The metadata is kept in ``.lockgen/metadata/<artifact sha256>.metadata``: the same artifact never
needs another request, and ``offline`` reads only that cache.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from packaging.metadata import RawMetadata, parse_email
from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.config import WORK
from lockgen.dossier.inventory import Artifact, Locked
from lockgen.index.client import Client, HostError
from lockgen.index.pages import PageReader, project_url
from lockgen.index.ranges import MAX_METADATA, RangeError, wheel_metadata
from lockgen.plan.mirror import Mirrors

__all__ = ["CACHE", "Fetched", "MetadataCache"]

log = logging.getLogger("lockgen.metadata")

CACHE = f"{WORK}/metadata"


@dataclass(frozen=True, kw_only=True)
class Fetched:
    """The core metadata of one package version (``raw``: packaging's parsed fields), or why
    there is none (``missing``: "the index serves no metadata file for it", …)."""

    raw: RawMetadata | None = None
    missing: str | None = None
    url: str | None = None


class MetadataCache:
    """Fetches and caches metadata files for a run (see the module docstring); a context manager
    (it closes its client)."""

    def __init__(self, root: Path, mirrors: Mirrors, offline: bool = False, workers: int = 8) -> None:
        self.root, self.mirrors, self.offline, self.workers = root, mirrors, offline, workers
        from lockgen.locks.store import refuse_linked_work

        refuse_linked_work(root, CACHE, depth=0)  # the cache is never written through a link (exit 2)
        self.folder = root / CACHE
        self.ranged = 0  # metadata read from wheels by range requests
        self._lock = threading.Lock()
        self._client = Client(mirrors, timeout=30, max_body=MAX_METADATA)
        self._reader = PageReader(mirrors, client=self._client)

    def __enter__(self) -> MetadataCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    @property
    def requests(self) -> int:
        """Requests made (metadata files, pages, ranges)."""
        return self._client.requests

    def fetch(self, items: Iterable[Locked]) -> dict[tuple[NormalizedName, Version], Fetched]:
        """The metadata of every ``(name, exact version)`` among ``items`` that has a version."""
        by_key: dict[tuple[NormalizedName, Version], list[Locked]] = {}
        for item in items:
            if item.version is not None:
                by_key.setdefault((item.name, item.version), []).append(item)
        known = {a.sha256: a for its in by_key.values() for i in its for a in i.artifacts if a.url and a.sha256}
        jobs = {key: _choose(its, known) for key, its in sorted(by_key.items())}
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            results = list(pool.map(lambda kv: (kv[0], self._one(kv[0], kv[1], by_key[kv[0]])), jobs.items()))
        return dict(results)

    def _one(self, key: tuple[NormalizedName, Version], artifact: Artifact | None, items: list[Locked]) -> Fetched:
        hashes = [artifact.sha256] if artifact is not None and artifact.sha256 else []
        hashes += [a.sha256 for i in items for a in i.artifacts if a.sha256 and a.sha256 not in hashes]
        for digest in hashes:
            cached = self._cached(digest)
            if cached is not None:
                return _parsed(cached, None)
        if self.offline:
            return Fetched(missing="not in the metadata cache (--offline)")
        if not hashes:
            return Fetched(missing="the lock has no hash for it")
        if artifact is not None and artifact.url:
            # the chosen file first, then the package version's other files: a partial mirror
            # (a caching proxy) may serve the metadata of some files only (at most 4 tries)
            tries = [artifact, *_others(items, artifact)][:4]
            result = Fetched(missing="no download URL for it")
            for candidate in tries:
                if candidate.url is None:
                    continue
                result = self._download(candidate.url, None, candidate.sha256 or hashes[0])
                if result.raw is not None or "serves no metadata file" not in (result.missing or ""):
                    return result
            return result
        found, expected, size = self._from_page(key, items)
        if found is None:
            return Fetched(missing=expected if isinstance(expected, str) else "no download URL for it")
        digest = _digest_of(found, items)
        if expected is False:  # the page says the index serves no metadata file: read the wheel
            return self._ranged(found, digest, size, f"{_host(found)} serves no metadata file for it (PEP 658)")
        return self._download(found, expected if isinstance(expected, str) else None, digest, size)

    def _download(self, url: str, expected: str | None, digest: str, size: int | None = None) -> Fetched:
        target = f"{url.split('#', 1)[0]}.metadata"
        try:
            reply = self._client.get(target)
        except HostError as exc:
            return Fetched(missing=f"its metadata file could not be read ({exc})")
        if reply.status == 404:
            return self._ranged(url, digest, size, f"{_host(target)} serves no metadata file for it (PEP 658)")
        if reply.status != 200:
            return Fetched(missing=f"{_host(target)} answered HTTP {reply.status} for its metadata file")
        if expected is not None and hashlib.sha256(reply.body).hexdigest() != expected:
            return Fetched(missing=f"its metadata file from {_host(target)} does not match the index's hash")
        self._store(digest, reply.body)
        return _parsed(reply.body, target)

    def _ranged(self, url: str, digest: str, size: int | None, why: str) -> Fetched:
        """The metadata read from the wheel at ``url`` by range requests (the index serves no
        metadata file: ``why``, said when the wheel cannot be read either)."""
        if not urlsplit(url).path.endswith(".whl"):
            return Fetched(missing=why)
        try:
            data, _ = wheel_metadata(self._client, url, size)
        except (HostError, RangeError) as exc:
            return Fetched(missing=f"{why}, and its wheel could not be read ({exc})")
        with self._lock:
            self.ranged += 1
        self._store(digest, data)
        return _parsed(data, url)

    def _cached(self, digest: str) -> bytes | None:
        try:
            return (self.folder / f"{digest}.metadata").read_bytes()
        except OSError:
            return None

    def _store(self, digest: str, data: bytes) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{digest}.{threading.get_ident()}.tmp"
            tmp.write_bytes(data)
            tmp.replace(self.folder / f"{digest}.metadata")
        except OSError as exc:  # a cache that cannot be written only costs a request next time
            log.debug("metadata cache not written: %s", exc)

    def _from_page(
        self, key: tuple[NormalizedName, Version], items: list[Locked]
    ) -> tuple[str | None, str | bool | None, int | None]:
        """``(artifact URL, what the page says of its metadata file, size)`` from the project
        page of the package's index (layers: the lock's ``index-url``), by the artifact's sha256;
        without a URL, the second item says why."""
        name, _ = key
        wanted = {a.sha256 for i in items for a in i.artifacts if a.sha256}
        for index in sorted({i.index_url for i in items if i.index_url}):
            page = self._reader.page(project_url(index, name))
            listed = [f for f in page.files if f.sha256 in wanted]
            listed.sort(key=lambda f: (not f.filename.endswith(".whl"), "none-any" not in f.filename, f.filename))
            if listed:
                return listed[0].url, listed[0].core_metadata, listed[0].size
        return None, "not found by its hash on its index's project page", None


def _others(items: list[Locked], first: Artifact) -> list[Artifact]:
    """The package version's other files with a URL and a hash, wheels first, each once."""
    seen = {first.sha256}
    out = []
    for artifact in sorted((a for i in items for a in i.artifacts), key=lambda a: (a.kind != "wheel", a.name)):
        if artifact.url and artifact.sha256 and artifact.sha256 not in seen:
            seen.add(artifact.sha256)
            out.append(artifact)
    return out


def _digest_of(url: str, items: list[Locked]) -> str:
    return next((a.sha256 for i in items for a in i.artifacts if a.sha256), hashlib.sha256(url.encode()).hexdigest())


def _choose(items: list[Locked], known: Mapping[str, Artifact]) -> Artifact | None:
    """The artifact whose metadata stands for the package version: a wheel with a URL (pure
    Python first), else any artifact with a URL, else one known by hash from another lock."""
    artifacts = [a for i in items for a in i.artifacts]
    with_url = [a for a in artifacts if a.url]
    wheels = sorted((a for a in with_url if a.kind == "wheel"), key=lambda a: ("none-any" not in a.name, a.name))
    if wheels:
        return wheels[0]
    if with_url:
        return sorted(with_url, key=lambda a: a.name)[0]
    for artifact in artifacts:
        if artifact.sha256 is not None and artifact.sha256 in known:
            return known[artifact.sha256]
    return None


def _parsed(data: bytes, url: str | None) -> Fetched:
    raw, _ = parse_email(data)
    return Fetched(raw=raw, url=url)


def _host(url: str) -> str:
    return urlsplit(url).netloc or url
