"""Index and find-links pages as data: what a page says about each file it lists.

:func:`parse` is lockgen's one parser of pages (pure): PEP 691 JSON (``files[]`` with
``hashes``, ``size``, ``upload-time`` of PEP 700, ``yanked`` of PEP 592, ``requires-python``,
``core-metadata`` of PEP 714 (``dist-info-metadata`` of PEP 658 as the fallback), ``provenance`` of
PEP 740) or HTML (PEP 503 project pages and flat find-links pages alike: anchors with
``#sha256=``, ``data-yanked``, ``data-requires-python``, ``data-core-metadata`` /
``data-dist-info-metadata``, ``data-provenance``), and the project's status marker of PEP 792
(``project-status`` in JSON, ``<meta name="pypi:project-status">`` in HTML; :func:`status_of`
reads it alone from a raw page, for the page cache). :class:`PageReader` fetches pages with the one
client (:class:`lockgen.index.client.Client`: mirrors, logins, bounds, deadline), each URL once
per reader, and gives every URL back canonical: links are resolved against the page as fetched,
then mapped back.

Readers: resolution (provenance, failure messages), the dossier (metadata, cutoffs, fixes),
coverage, and the readers of committed locks (:mod:`lockgen.rot`).
"""

from __future__ import annotations

import dataclasses
import datetime
import html.parser
import json
import re
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from urllib.parse import urljoin

from lockgen.index.client import Client, HostError
from lockgen.index.files import Artifact, artifact, filename_of
from lockgen.locks.jsonfile import load_json
from lockgen.plan.mirror import Mirrors
from lockgen.runtime.errors import InputError
from lockgen.runtime.keyed import dig, listed, table

__all__ = [
    "JSON_ACCEPT",
    "Page",
    "PageFile",
    "PageReader",
    "Status",
    "parse",
    "parse_page",
    "project_url",
    "status_of",
    "timestamp",
]

#: PEP 691 JSON first, HTML as a fallback (what uv asks an index for).
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"


@dataclass(frozen=True, kw_only=True)
class PageFile:
    """One file a page lists. ``url``: absolute (canonical once read by :class:`PageReader`),
    without its fragment; ``sha256``: the hash the page states (None: it states none); ``yanked``:
    False, or the reason ("" when none is given); ``provenance``: the URL of its PEP 740
    provenance object (None: the page names none); ``core_metadata``: whether the index serves
    the file's metadata as ``<url>.metadata`` (PEP 658/714): its sha256, True (served, no hash),
    False (said not served) or None (the page does not say); ``requires_python``: as stated."""

    filename: str
    url: str
    sha256: str | None = None
    size: int | None = None
    upload_time: datetime.datetime | None = None
    yanked: str | bool = False
    provenance: str | None = None
    core_metadata: str | bool | None = None
    requires_python: str | None = None

    @property
    def artifact(self) -> Artifact | None:
        """The file name parsed (None: neither a wheel's nor an sdist's)."""
        return artifact(self.filename)


@dataclass(frozen=True)
class Status:
    """A project's status marker (PEP 792): ``status`` is ``active``, ``archived``,
    ``quarantined`` or ``deprecated`` (another word is kept as given: the index's own), ``reason``
    the index's free text ("" when it gives none)."""

    status: str = "active"
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class Page:
    """A fetched page: its canonical ``url``, the ``files`` it lists, its PEP 691 ``api_version``
    (None for HTML), the project's PEP 792 ``status`` (active when the page names none) and
    ``error`` (why it could not be read: ``HTTP 404``, a connection error; then ``files`` is
    empty)."""

    url: str
    files: tuple[PageFile, ...] = ()
    api_version: str | None = None
    status: Status = Status()
    error: str | None = None

    def by_sha256(self, digest: str) -> PageFile | None:
        return next((f for f in self.files if f.sha256 == digest), None)

    def by_name(self, filename: str) -> list[PageFile]:
        return [f for f in self.files if f.filename == filename]

    @property
    def serves_provenance(self) -> bool:
        """Whether the page is of an index that serves PEP 740 provenance: a file names one, or
        its PEP 691 ``api-version`` is 1.3 or later (where the ``provenance`` key arrived)."""
        if any(f.provenance for f in self.files):
            return True
        try:
            major, minor = (int(part) for part in (self.api_version or "0.0").split(".")[:2])
        except ValueError:
            return False
        return (major, minor) >= (1, 3)


def project_url(index: str, name: str) -> str:
    """``<index>/<name>/``: a PEP 503 project page (``name`` normalized by the caller)."""
    return f"{index.rstrip('/')}/{name}/"


def parse(text: str, content_type: str, base: str) -> tuple[tuple[PageFile, ...], str | None]:
    """``(files, api_version)`` of a page's ``text`` served as ``content_type`` from ``base``
    (links are made absolute against it). JSON that is not a PEP 691 page, or HTML without
    anchors, lists no files."""
    files, version, _ = parse_page(text, content_type, base)
    return files, version


def parse_page(text: str, content_type: str, base: str) -> tuple[tuple[PageFile, ...], str | None, Status]:
    """``(files, api_version, status)``: :func:`parse` and the project's PEP 792 status."""
    if "json" in content_type:
        try:  # bounded: a page nested 100,000 deep is no page, not a RecursionError
            data = load_json(text, base, "a PEP 691 page", ours=False)
        except InputError:
            return (), None, Status()
        if not isinstance(data, dict):
            return (), None, Status()
        version = dig(data, "meta", "api-version")
        files = [f for f in (_json_file(entry, base) for entry in listed(data.get("files"))) if f is not None]
        marker = table(data.get("project-status"))
        status = _status(marker.get("status"), marker.get("reason"))
        return tuple(files), version if isinstance(version, str) else None, status
    anchors = _Anchors(base)
    anchors.feed(text)
    return tuple(anchors.files), None, _meta_status(anchors.meta)


#: Where a PEP 691 page states its status: the ``project-status`` key and its flat object.
_JSON_STATUS = re.compile(rb'"project-status"\s*:\s*(\{[^{}]{0,2000}\})')
#: How much of an HTML page is read for its ``<meta>`` tags (they come before the anchors).
_HTML_HEAD = 16384


def status_of(body: bytes, content_type: str) -> Status:
    """The PEP 792 status a page's raw ``body`` states, without parsing its file list (an ML
    stack's pages are ~50 MB of JSON): JSON: the ``project-status`` object (``status``,
    ``reason``), read with ``json`` once found; HTML: the ``pypi:project-status`` and
    ``pypi:project-status-reason`` meta tags of the page's head. Active when it states none."""
    if "json" in content_type:
        found = _JSON_STATUS.search(body)
        if found is None:
            return Status()
        try:
            marker = json.loads(found[1])
        except ValueError:
            return Status()
        return _status(marker.get("status"), marker.get("reason")) if isinstance(marker, dict) else Status()
    head = body[:_HTML_HEAD].decode("utf-8", "replace")
    cut_at = head.find("<a ")
    anchors = _Anchors("")
    anchors.feed(head if cut_at < 0 else head[:cut_at])
    return _meta_status(anchors.meta)


def _meta_status(meta: Mapping[str, str]) -> Status:
    return _status(meta.get("pypi:project-status"), meta.get("pypi:project-status-reason"))


def _status(status: object, reason: object) -> Status:
    """A :class:`Status` from a page's untrusted values: a word of at most 40 characters, a reason
    cut to one line of 300; anything else reads as active."""
    if not isinstance(status, str) or not status.strip() or len(status) > 40:
        return Status()
    text = " ".join(reason.split())[:300] if isinstance(reason, str) else ""
    return Status(status.strip().lower(), text)


def _json_file(entry: object, base: str) -> PageFile | None:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("url"), str):
        return None
    url = _joined(base, entry["url"]).partition("#")[0]
    hashes = entry.get("hashes")
    sha = hashes.get("sha256") if isinstance(hashes, Mapping) else None
    size = entry.get("size")
    yanked = entry.get("yanked", False)
    provenance = entry.get("provenance")
    requires = entry.get("requires-python")
    return PageFile(
        filename=name if isinstance(name := entry.get("filename"), str) and name else filename_of(url),
        url=url,
        sha256=sha.lower() if isinstance(sha, str) else None,
        size=size if isinstance(size, int) and not isinstance(size, bool) else None,
        upload_time=timestamp(entry.get("upload-time")),
        yanked=yanked if isinstance(yanked, (str, bool)) else bool(yanked),
        provenance=urljoin(base, provenance) if isinstance(provenance, str) and provenance else None,
        core_metadata=_metadata(entry.get("core-metadata", entry.get("dist-info-metadata"))),
        requires_python=requires.strip() if isinstance(requires, str) and requires.strip() else None,
    )


def _joined(base: str, link: str) -> str:
    """``link`` made absolute against ``base``; an absolute one as is (``urljoin`` costs ~12 µs
    a link: 1.4 s for the pages of this repository's own matrix)."""
    return link if link.startswith(("https://", "http://")) else urljoin(base, link)


def _metadata(value: object) -> str | bool | None:
    """A ``core-metadata`` value (PEP 714; PEP 658's ``dist-info-metadata``): a hashes mapping
    or ``sha256=<hex>`` gives the hash; ``true``/other text: served; ``false``: not served."""
    if isinstance(value, Mapping):
        sha = value.get("sha256")
        return sha.lower() if isinstance(sha, str) and sha else True
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value.lower() == "false":
            return False
        return value.removeprefix("sha256=").lower() if value.startswith("sha256=") else True
    return None


def timestamp(value: object) -> datetime.datetime | None:
    """An RFC 3339 time as a page states it (PEP 700 ``upload-time``; ``Z`` or an offset; a time
    without one is UTC); None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


class _Anchors(html.parser.HTMLParser):
    def __init__(self, base: str) -> None:
        super().__init__()
        self.base = base
        self.files: list[PageFile] = []
        self.meta: dict[str, str] = {}  # <meta name=… content=…> of the page (PEP 792's status)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "meta":
            name, content = values.get("name"), values.get("content")
            if name and content is not None:
                self.meta.setdefault(name.lower(), content)
            return
        if tag != "a":
            return
        href = values.get("href")
        if not href:
            return
        url, _, fragment = _joined(self.base, href).partition("#")
        digest = fragment.removeprefix("sha256=").lower() if fragment.startswith("sha256=") else None
        yanked = values.get("data-yanked")
        provenance = values.get("data-provenance")
        metadata = values.get("data-core-metadata", values.get("data-dist-info-metadata"))
        requires = values.get("data-requires-python")  # HTMLParser unescapes &gt;=
        self.files.append(
            PageFile(
                filename=filename_of(url),
                url=url,
                sha256=digest,
                yanked=False if yanked is None else yanked,
                provenance=urljoin(self.base, provenance) if provenance else None,
                core_metadata=None if metadata is None else _metadata(metadata or True),
                requires_python=requires.strip() if requires and requires.strip() else None,
            )
        )


class PageReader:
    """Fetches pages (see the module docstring) with ``client`` (a new one when None:
    ``timeout`` seconds per request); each URL once (a second caller waits for the first)."""

    def __init__(self, mirrors: Mirrors, timeout: float = 30.0, client: Client | None = None) -> None:
        self.mirrors = mirrors
        self._own = client is None
        self.http = client if client is not None else Client(mirrors, timeout=timeout)
        self.requests = 0  # pages asked for
        self._lock = threading.Lock()
        self._pages: dict[str, Future[Page]] = {}

    def client(self) -> Client:
        """The client pages are read with (for the callers' other requests to the same hosts)."""
        return self.http

    def close(self) -> None:
        if self._own:
            self.http.close()

    def __enter__(self) -> PageReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def page(self, url: str, accept: str = JSON_ACCEPT) -> Page:
        """The page at the canonical ``url`` (fetched once per reader)."""
        with self._lock:
            future = self._pages.get(url)
            mine = future is None
            if future is None:
                future = self._pages[url] = Future()
        if not mine:
            return future.result()
        try:
            page = self._fetch(url, accept)
        except BaseException as exc:
            future.set_exception(exc)
            raise
        future.set_result(page)
        return page

    def _fetch(self, url: str, accept: str) -> Page:
        with self._lock:
            self.requests += 1
        try:
            reply = self.http.get(url, headers={"Accept": accept})
        except HostError as exc:
            return Page(url=url, error=f"cannot be read ({exc.detail})")
        if reply.status != 200:
            return Page(url=url, error=f"HTTP {reply.status}")
        files, version, status = parse_page(reply.text, reply.content_type, reply.fetched)
        canonical = tuple(
            dataclasses.replace(
                f,
                url=self.mirrors.canonical(f.url),
                provenance=self.mirrors.canonical(f.provenance) if f.provenance else None,
            )
            for f in files
        )
        return Page(url=url, files=canonical, api_version=version, status=status)
