"""A run-scoped page cache: each index page fetched once per run, validated cheaply by every uv.

``uv pip compile`` revalidates every page and file it has cached; a server that sends no
validators (no ``ETag``, no ``Last-Modified``, no ``Cache-Control``: this workplace's PyPI proxy,
many corporate mirrors) makes every uv process download and parse every page again (~30 MB of
JSON per cell for an ML stack), read the wheel metadata again, and download and *build* again
every sdist it needs metadata from (docs/benchmarks.md). A :class:`PageCache` serves each
upstream origin on a loopback port and is handed to uv through the mirror mechanism
(:class:`ProxiedMirrors`: uv fetches from ``http://127.0.0.1:<port>/…``, lockgen writes the
canonical URL back):

* a page (a ``GET`` asking for the simple API or HTML) is fetched upstream once per run and
  answered with an ``ETag`` (the sha256 of what is served) and ``Cache-Control: no-cache``: uv
  stores it, asks again on its next run with ``If-None-Match`` and gets ``304 Not Modified``, so
  it uses the copy it already parsed. File URLs in it are pointed at the cache too (each file
  origin gets its own loopback port, so relative and absolute links keep working);
* a file the run's pages list with a sha256 gets that hash as its ``ETag``: a later uv run's
  ``If-None-Match`` is answered ``304`` without going upstream (the content is the one the page
  names, fetched in this run), so wheel metadata is not read again and an sdist is not rebuilt;
* everything else is passed through unchanged, streamed.

What uv resolves is what it resolves against the upstream: the pages are the upstream's, fetched
in this run; only URLs are rewritten, and :class:`ProxiedMirrors` rewrites them back.

uv keys its cache by URL, port included: each origin has a stable port (derived from the origin,
with three fallbacks), so the user's uv cache holds at most four copies of an origin's entries,
refreshed in place, never one per run. Loopback only; URLs with credentials are not proxied.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import re
import threading
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from lockgen.index.client import HostError, capped, pool
from lockgen.index.pages import Status, parse, status_of
from lockgen.index.pageserver import UNREACHABLE, Page, Server, serve, stop_all
from lockgen.plan.mirror import Mirrors
from lockgen.runtime import trace

if TYPE_CHECKING:
    import httpx

__all__ = ["PageCache", "ProxiedMirrors", "file_hashes", "origin_of", "port_candidates"]

log = logging.getLogger("lockgen.pages")

#: Ports tried per origin: a stable one derived from the origin, then the next three. Below
#: Linux's ephemeral range (32768-60999), so outgoing connections rarely hold them.
PORT_BASE, PORT_SPAN, PORT_TRIES = 20000, 12000, 4
#: Upstream connections per origin. One client per origin: a pool shared by two hosts stalled
#: ~5 s on a third of the requests here when pages and file reads mixed (docs/benchmarks.md).
MAX_CONNECTIONS = 16
#: The largest file read kept for the run (torch's zip directory is ~1.2 MB).
MAX_READ = 4 << 20
_PAGE_TYPES = ("text/html", "application/vnd.pypi.simple")
#: What uv 0.13 asks an index for (PEP 691: JSON preferred); a prefetch asks the same.
SIMPLE_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
FLAT_ACCEPT = "text/html"
#: Origins of absolute links in a page (JSON ``"url": "…"`` or HTML ``href="…"``).
_LINKED_ORIGIN = re.compile(rb"""(?:"url"\s*:\s*"|href\s*=\s*["'])(https?://[^/"'\s]+)/""")
#: PyPI's file layout: ``/packages/<2 hex>/<2 hex>/<60 hex>/<file>``, the blake2b-256 of the file.
_CONTENT_ADDRESSED = re.compile(r"/packages/([0-9a-f]{2})/([0-9a-f]{2})/([0-9a-f]{60})/[^/]+$")


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an ``http(s)`` URL without credentials; None otherwise
    (local paths, ``file://``, URLs with a user or password)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def port_candidates(origin: str) -> list[int]:
    """The loopback ports an origin is served on, in order of preference (stable across runs,
    so uv's cache keys stay the same)."""
    first = zlib.crc32(origin.encode()) % PORT_SPAN
    return [PORT_BASE + (first + i) % PORT_SPAN for i in range(PORT_TRIES)]


def file_hashes(page_url: str, content_type: str, body: bytes) -> dict[str, str]:
    """``{absolute file URL: sha256}`` of the files a simple-API page lists with a sha256, read
    by the one page parser (:func:`lockgen.index.pages.parse`); unreadable pages give ``{}``."""
    files, _ = parse(body.decode("utf-8", "replace"), content_type, page_url)
    return {f.url: f.sha256 for f in files if f.sha256}


@dataclass
class Stats:
    fetched: int = 0  # pages fetched upstream
    bytes: int = 0  # their size
    full: int = 0  # pages sent to uv whole
    not_modified: int = 0  # pages answered 304
    files_not_modified: int = 0  # files answered 304 from the pages' hashes
    passed: int = 0  # other requests passed through
    shared_reads: int = 0  # file reads answered from this run's earlier read
    trouble: int = 0  # answers that may be the cache's fault: upstream unreachable, 5xx, 401/403/407


class PageCache:
    """Loopback servers for upstream origins (more are added as pages link to them), for one run.

    Use as a context manager (or call :meth:`close`). :meth:`mirrors` wraps the run's mirrors so
    uv goes through it; :meth:`served` says whether a page URL was served in this run. Thread-safe.
    """

    def __init__(self, origins: Iterable[str]) -> None:
        self._lock = threading.Lock()
        self._pages: dict[tuple[str, str], Page] = {}
        self._flights: dict[tuple[str, ...], threading.Lock] = {}
        self._served: set[str] = set()
        self._hashes: dict[str, str] = {}  # upstream file URL -> sha256, from this run's pages
        self._unread: list[tuple[str, str, bytes]] = []  # pages not searched for hashes yet
        self._statuses: dict[str, Status] = {}  # upstream page URL -> its PEP 792 status
        self._reads: dict[tuple[str, str, str], Page] = {}  # small file reads of this run
        self._servers: dict[str, Server] = {}
        self._unroutable: set[str] = set()
        self._clients: dict[str, httpx.Client] = {}
        self.stats = Stats()
        self.routes: dict[str, str] = {}  # upstream origin -> http://127.0.0.1:<port> (grows)
        self._closed = threading.Event()
        for origin in dict.fromkeys(origins):
            self.route(origin)

    def prefetch(self, urls: Iterable[tuple[str, str]]) -> None:
        """Fetch the pages ``(url, accept)`` in the background, :data:`MAX_CONNECTIONS` at once,
        so they are ready when uv asks (uv discovers pages level by level of the dependency
        tree; fetched ahead, the chain of round trips is gone). Pages of origins not served
        here are skipped.

        The fetchers are daemon threads that stop taking pages once the cache is closed: a
        prefetch only fills the run's memory, so an interrupted run exits without waiting for
        one (with a thread pool, the interpreter's exit waited for every fetch in flight, up to
        the 60 s read timeout of a stalled host: a fresh-eyes review measured 60 s after Ctrl-C)."""
        todo = [(u, a) for u, a in dict.fromkeys(urls) if self.proxies(u)]
        work: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
        for item in todo:
            work.put(item)
        for i in range(min(MAX_CONNECTIONS, len(todo))):
            threading.Thread(target=self._prefetch, args=(work,), name=f"prefetch {i}", daemon=True).start()

    def _prefetch(self, work: queue.SimpleQueue[tuple[str, str]]) -> None:
        while not self._closed.is_set():
            try:
                url, accept = work.get_nowait()
            except queue.Empty:
                return
            try:
                self.page(url, accept, {"accept": accept}, False)
            except Exception:  # a prefetch is a guess: uv asks again and meets the problem itself
                log.debug("page cache: prefetch of %s failed", url, exc_info=True)

    def route(self, origin: str) -> str | None:
        """The loopback origin serving ``origin``, started on first use; None when no port is free."""
        with self._lock:
            if origin in self.routes:
                return self.routes[origin]
            if origin in self._unroutable:
                return None
            server = serve(self, origin, port_candidates(origin))
            if server is None:
                self._unroutable.add(origin)
                log.debug("page cache: no free port for %s; uv fetches it directly", origin)
                return None
            self._servers[origin] = server
            self.routes[origin] = f"http://127.0.0.1:{server.port}"
            return self.routes[origin]

    def __enter__(self) -> PageCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the servers and the upstream clients (pages are dropped with the object)."""
        self._closed.set()
        with self._lock:
            servers, clients = list(self._servers.values()), list(self._clients.values())
            self._servers.clear()
            self._clients.clear()
        stop_all(servers)
        for client in clients:
            client.close()
        s = self.stats
        log.debug(
            "page cache: %d pages fetched (%.1f MB), sent whole %d times, not modified %d times; "
            "files not modified %d times; %d requests passed through (%d read before); %d upstream errors",
            s.fetched, s.bytes / 1e6, s.full, s.not_modified, s.files_not_modified, s.passed, s.shared_reads, s.trouble,
        )  # fmt: skip

    def mirrors(self, base: Mirrors) -> Mirrors:
        """``base`` with every proxied origin routed through this cache (see :class:`ProxiedMirrors`)."""
        if not self.routes:
            return base
        return ProxiedMirrors(table=base.table, logins=base.logins, used=base.used, base=base, routes=self.routes)

    def served(self, url: str) -> bool:
        """Whether the page at ``url`` (an upstream URL) was served to uv in this run."""
        with self._lock:
            return url.rstrip("/") in self._served

    def status(self, url: str) -> Status | None:
        """The PEP 792 status of the page at ``url`` (an upstream URL) as fetched in this run;
        None when this run did not fetch it."""
        with self._lock:
            return self._statuses.get(url.rstrip("/"))

    def proxies(self, url: str) -> bool:
        """Whether uv fetches ``url`` (an upstream URL) through this cache."""
        origin = origin_of(url)
        return origin is not None and origin in self.routes

    def client(self, origin: str) -> httpx.Client:
        """The upstream client of ``origin`` (one per origin, see :data:`MAX_CONNECTIONS`).
        Raises ``RuntimeError`` once the cache is closed (a late prefetch opens nothing)."""
        with self._lock:
            if self._closed.is_set():
                raise RuntimeError("the page cache is closed")
            if origin not in self._clients:
                self._clients[origin] = _client()
            return self._clients[origin]

    def file_etag(self, url: str) -> str | None:
        """The ``ETag`` of a file (or of the wheel a ``.metadata`` file belongs to) whose content
        this run knows: PyPI's content-addressed path (``/packages/ab/cd/<blake2b rest>/name``),
        else the sha256 a page of this run lists for it (pages are searched on the first miss
        only: PyPI's ~50 MB of JSON for this matrix need no parsing); None otherwise."""
        wheel = url.removesuffix(".metadata")
        suffix = ".metadata" if wheel != url else ""
        found = _CONTENT_ADDRESSED.search(urlsplit(wheel).path)
        if found:
            return f'"b2-{found[1]}{found[2]}{found[3]}{suffix}"'
        with self._lock:
            if wheel not in self._hashes and self._unread:
                for page_url, content_type, body in self._unread:
                    self._hashes.update(self._upstream(file_hashes(page_url, content_type, body)))
                self._unread.clear()
            sha = self._hashes.get(wheel)
        return f'"{sha}{suffix}"' if sha else None

    def _upstream(self, hashes: dict[str, str]) -> dict[str, str]:
        """``hashes`` keyed by upstream URLs (a page's links point at the loopback servers)."""
        back = {local: origin for origin, local in self.routes.items()}
        fixed = {}
        for url, sha in hashes.items():
            origin = origin_of(url) or ""
            fixed[back[origin] + url[len(origin) :] if origin in back else url] = sha
        return fixed

    def count(self, name: str) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)

    def page(self, url: str, accept: str, headers: Mapping[str, str], serving: bool = True) -> Page:
        """The run's copy of the page at ``url`` for ``accept`` (the simple API or a flat HTML
        page), fetched once (single flight); ``serving``: uv gets it now (else a prefetch)."""
        key = (url, "simple" if "vnd.pypi.simple" in accept else "html")
        with self._lock:
            flight = self._flights.setdefault(key, threading.Lock())
            ready = key in self._pages
        waited = 0.0 if ready or not serving or not trace.enabled() else trace.now()
        with flight:
            with self._lock:
                found = self._pages.get(key)
            if found is None:
                found = self._fetch(url, headers)
                if UNREACHABLE < found.status < 500:
                    with self._lock:
                        self._pages[key] = found
        if waited:  # uv asked for a page the prefetch had not brought yet
            trace.note("page wait", waited, url=url)
        if serving:
            with self._lock:
                if UNREACHABLE < found.status < 500:
                    self._served.add(url.rstrip("/"))
                if found.status == UNREACHABLE or found.status >= 500 or found.status in (401, 403, 407):
                    self.stats.trouble += 1
        return found

    def read(self, method: str, url: str, headers: Mapping[str, str]) -> Page:
        """A small file read (``HEAD``, or a ``GET`` of a byte range: how uv reads wheel metadata
        from a server without PEP 658 files), fetched once per run (single flight): two cells
        resolving at once read the same wheels. ``headers`` are the upstream's."""
        key = (method, url, headers.get("range", ""))
        with self._lock:
            flight = self._flights.setdefault(key, threading.Lock())
        with flight:
            with self._lock:
                found = self._reads.get(key)
                if found is not None:
                    self.stats.shared_reads += 1
            if found is None:
                found = self._read(method, url, headers)
                if UNREACHABLE < found.status < 500 and len(found.body) <= MAX_READ:
                    with self._lock:
                        self._reads[key] = found
        return found

    def _read(self, method: str, url: str, headers: Mapping[str, str]) -> Page:
        import httpx

        try:
            with (
                trace.span("upstream read", method=method, url=url, range=headers.get("range", "")),
                self.client(origin_of(url) or "").stream(method, url, headers=dict(headers)) as response,
            ):
                body = capped(response, url)  # bounded in size and time, as the pages are
        except (httpx.HTTPError, RuntimeError, HostError):
            return Page(UNREACHABLE, [], b"", "")
        return Page(response.status_code, list(response.headers.items()), body, "")

    def _fetch(self, url: str, headers: Mapping[str, str]) -> Page:
        import httpx

        origin = origin_of(url) or ""
        try:
            with (
                trace.span("upstream page", url=url),
                self.client(origin).stream("GET", url, headers=dict(headers)) as response,
            ):
                body = capped(response, url)
        except (httpx.HTTPError, RuntimeError, HostError) as exc:  # RuntimeError: a client closed by close()
            log.debug("page cache: %s: %s: %s", url, type(exc).__name__, exc)
            return Page(UNREACHABLE, [], b"", "")
        kept = [(k, v) for k, v in response.headers.items() if k.lower() == "content-type"]
        if "location" in response.headers:
            kept.append(("location", self.local(urljoin(url, response.headers["location"]))))
        content_type = response.headers.get("content-type", "")
        with self._lock:
            self.stats.fetched += 1
            self.stats.bytes += len(body)
        if response.status_code != 200 or not content_type.startswith(_PAGE_TYPES):
            return Page(response.status_code, kept, body, "")
        linked = {m.decode() for m in _LINKED_ORIGIN.findall(body)}
        body = self._pointed(body, {o for o in linked if origin_of(o) == o})
        status = status_of(body, content_type)
        with self._lock:
            self._unread.append((url, content_type, body))
            self._statuses[url.rstrip("/")] = status
        return Page(200, kept, body, f'"{hashlib.sha256(body).hexdigest()[:40]}"')

    def _pointed(self, body: bytes, origins: set[str]) -> bytes:
        """``body`` with absolute links to ``origins`` pointed at their loopback servers."""
        for origin in sorted(origins):
            local = self.route(origin)
            if local is not None:
                body = body.replace(f"{origin}/".encode(), f"{local}/".encode())
        return body

    def local(self, url: str) -> str:
        """``url`` on its loopback server, if its origin has one."""
        origin = origin_of(url)
        local = self.routes.get(origin or "")
        return local + url[len(origin or "") :] if local else url


def _client() -> httpx.Client:
    """An upstream client: :func:`lockgen.index.client.pool` (HTTP/1.1, the shared TLS
    context, no redirects followed: uv follows them, through the cache), 60 s per request."""
    return pool(60, MAX_CONNECTIONS)


@dataclass(frozen=True)
class ProxiedMirrors(Mirrors):
    """``base`` mirrors with proxied origins on top: uv fetches ``base``'s URL with its origin
    replaced by the cache's loopback origin, and every text read back has each loopback origin
    turned into its upstream one, then ``base``'s mirrors into canonical URLs. ``routes`` is the
    cache's live table (it grows as pages link to new origins). Shares ``used`` with ``base``."""

    base: Mirrors = field(default_factory=Mirrors)
    routes: Mapping[str, str] = field(default_factory=dict)  # upstream origin -> loopback origin

    def fetch_url(self, url: str) -> str:
        fetched = self.base.fetch_url(url)
        origin = origin_of(fetched)
        local = self.routes.get(origin) if origin else None
        return local + fetched[len(origin or "") :] if local else fetched

    def canonical(self, text: str) -> str:
        for origin, local in list(self.routes.items()):
            if local in text:
                text = re.sub(rf"{re.escape(local)}(?![0-9])", origin, text)
        return self.base.canonical(text)

    def hosts(self) -> set[str]:
        return self.base.hosts() | set(self.routes.values())

    def leftover(self, url: str, page: str | None = None) -> bool:
        """A URL on one of the cache's loopback origins always is (nothing canonical lives there)."""
        return origin_of(url) in set(self.routes.values()) or self.base.leftover(url, page)

    def never_used(self) -> list[str]:
        return self.base.never_used()

    def __bool__(self) -> bool:
        return True
