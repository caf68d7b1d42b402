"""Core metadata of locked packages, fetched as the index's PEP 658 metadata file (no wheel is
downloaded), cached by the artifact's sha256.

For each ``(name, version)`` of the inventory one artifact is chosen (a wheel with a URL, a pure
``py3-none-any`` one first). Its metadata file is ``<artifact URL>.metadata`` (PEP 658; PyPI
serves it for every wheel). A package that only a layer lock has (layer locks list hashes, not
URLs) is looked up on its index's project page (PEP 691 JSON, else the PEP 503 HTML page) by its
sha256; the page also gives the metadata file's own hash (``core-metadata`` /
``data-core-metadata``), which is then checked. Every URL goes through the run's mirrors. The
file is kept in ``.lockgen/metadata/<artifact sha256>.metadata``: the same artifact never needs
another request, and ``offline`` reads only that cache.
"""

from __future__ import annotations

import hashlib
import html.parser
import json
import logging
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from packaging.metadata import RawMetadata, parse_email
from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.config import WORK
from lockgen.dossier.inventory import Artifact, Locked
from lockgen.plan.mirror import Mirrors

__all__ = ["CACHE", "Fetched", "MetadataCache"]

log = logging.getLogger("lockgen.metadata")

CACHE = f"{WORK}/metadata"
_JSON = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True, kw_only=True)
class Fetched:
    """The core metadata of one package version (``raw``: packaging's parsed fields), or why
    there is none (``missing``: "the index serves no metadata file for it", …)."""

    raw: RawMetadata | None = None
    missing: str | None = None
    url: str | None = None


class MetadataCache:
    """Fetches and caches metadata files for a run (see the module docstring)."""

    def __init__(self, root: Path, mirrors: Mirrors, offline: bool = False, workers: int = 8) -> None:
        self.root, self.mirrors, self.offline, self.workers = root, mirrors, offline, workers
        self.folder = root / CACHE
        self.requests = 0
        self._lock = threading.Lock()
        self._client: Any = None

    def fetch(self, items: Iterable[Locked]) -> dict[tuple[NormalizedName, Version], Fetched]:
        """The metadata of every ``(name, exact version)`` among ``items`` that has a version."""
        by_key: dict[tuple[NormalizedName, Version], list[Locked]] = {}
        for item in items:
            if item.version is not None:
                by_key.setdefault((item.name, item.version), []).append(item)
        known = {a.sha256: a for its in by_key.values() for i in its for a in i.artifacts if a.url and a.sha256}
        jobs = {key: _choose(its, known) for key, its in sorted(by_key.items())}
        import httpx

        from lockgen.index import tls

        with httpx.Client(verify=tls.context(), timeout=30, follow_redirects=True) as client:
            self._client = client
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
        url, expected = self._from_page(key, items)
        if url is None:
            return Fetched(missing=expected or "no download URL for it")
        return self._download(url, expected, _digest_of(url, items))

    def _download(self, url: str, expected: str | None, digest: str) -> Fetched:
        import httpx

        target = f"{url.split('#', 1)[0]}.metadata"
        try:
            with self._lock:
                self.requests += 1
            response = self._client.get(self.mirrors.fetch_url(target))
        except httpx.HTTPError as exc:
            return Fetched(missing=f"{_host(target)} could not be reached ({type(exc).__name__})")
        if response.status_code == 404:
            return Fetched(missing=f"{_host(target)} serves no metadata file for it (PEP 658)")
        if response.status_code != 200:
            return Fetched(missing=f"{_host(target)} answered HTTP {response.status_code} for its metadata file")
        data = response.content
        if expected is not None and hashlib.sha256(data).hexdigest() != expected:
            return Fetched(missing=f"its metadata file from {_host(target)} does not match the index's hash")
        self._store(digest, data)
        return _parsed(data, target)

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

    def _from_page(self, key: tuple[NormalizedName, Version], items: list[Locked]) -> tuple[str | None, str | None]:
        """``(artifact URL, metadata sha256 or None)`` from the project page of the package's
        index (layers: the lock's ``index-url``), by the artifact's sha256."""
        name, _ = key
        wanted = {a.sha256 for i in items for a in i.artifacts if a.sha256}
        indexes = sorted({i.index_url for i in items if i.index_url})
        for index in indexes:
            page = f"{index.rstrip('/')}/{name}/"
            try:
                with self._lock:
                    self.requests += 1
                response = self._client.get(
                    self.mirrors.fetch_url(page), headers={"Accept": f"{_JSON}, text/html;q=0.1"}
                )
            except Exception as exc:  # httpx.HTTPError: try the next index
                log.debug("%s: %s", page, exc)
                continue
            if response.status_code != 200:
                continue
            for file in _files(response.text, response.headers.get("content-type", "")):
                if file.sha256 in wanted:
                    if file.metadata is False:
                        return None, f"{_host(page)} serves no metadata file for it (PEP 658)"
                    joined = self.mirrors.canonical(
                        urljoin(self.mirrors.mirrored(page), file.url)
                    )  # links are relative to the page fetched
                    return joined, file.metadata if isinstance(file.metadata, str) else None
        return None, "not found by its hash on its index's project page"


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


@dataclass(frozen=True)
class _File:
    url: str
    sha256: str | None
    metadata: str | bool | None  # its sha256, True (served, no hash), False (not served), None (unsaid)


def _files(text: str, content_type: str) -> list[_File]:
    """The files of a project page: PEP 691 JSON or PEP 503 HTML (anchors with ``#sha256=``,
    ``data-core-metadata``/``data-dist-info-metadata``)."""
    if "json" in content_type:
        try:
            data = json.loads(text)
        except ValueError:
            return []
        files = []
        for entry in data.get("files", []) if isinstance(data, dict) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
                continue
            meta = entry.get("core-metadata", entry.get("dist-info-metadata"))
            files.append(_File(entry["url"], (entry.get("hashes") or {}).get("sha256"), _meta(meta)))
        return files
    parser = _Anchors()
    parser.feed(text)
    return parser.files


def _meta(value: Any) -> str | bool | None:
    if isinstance(value, dict):
        return value.get("sha256") or True
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.removeprefix("sha256=") if value.startswith("sha256=") else True
    return None


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.files: list[_File] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "a":
            return
        values = dict(attrs)
        href = values.get("href")
        if not href:
            return
        base, _, fragment = href.partition("#")
        digest = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
        meta = values.get("data-core-metadata", values.get("data-dist-info-metadata"))
        served: str | bool | None = None if meta is None else _meta(meta if meta != "true" else True)
        self.files.append(_File(base, digest, served))
