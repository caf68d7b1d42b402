"""The loopback HTTP side of :mod:`lockgen.index.pagecache`: one threaded server per upstream origin.

A request whose ``Accept`` asks for the simple API or HTML (and no byte range) is a page: it is
answered from the run's copy (``304`` when uv's ``If-None-Match`` names it). Any other request is
a file read: ``304`` when the run's pages list the file's sha256 and uv already holds it, else
passed through to the upstream, streamed, with that sha256 as its ``ETag``.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Protocol

from lockgen.runtime import trace

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

#: The status of a page whose upstream could not be reached: uv's connection is reset, so uv
#: reports the network failure it would have met itself (lockgen tells outages apart).
UNREACHABLE = 0

__all__ = ["UNREACHABLE", "Page", "Pages", "Server", "serve", "stop_all"]


@dataclass
class Page:
    """A page as the run serves it (``etag`` empty: not cacheable, e.g. a 404)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    etag: str


class Pages(Protocol):
    """What a server answers from: the run's pages and reads (:class:`lockgen.index.pagecache.PageCache`)."""

    def page(self, url: str, accept: str, headers: Mapping[str, str], serving: bool = True) -> Page: ...
    def read(self, method: str, url: str, headers: Mapping[str, str]) -> Page: ...
    def file_etag(self, url: str) -> str | None: ...
    def client(self, origin: str) -> httpx.Client: ...
    def local(self, url: str) -> str: ...
    def count(self, name: str) -> None: ...


#: Upstream headers a passed-through answer keeps (validators are replaced when the run knows
#: the file's hash).
_KEPT = (
    "content-type",
    "content-length",
    "content-range",
    "accept-ranges",
    "etag",
    "last-modified",
    "cache-control",
    "expires",
)
_VALIDATORS = ("etag", "last-modified", "cache-control", "expires")
_TROUBLE = (401, 403, 407)


class Server:
    """A running loopback server for one origin."""

    def __init__(self, httpd: ThreadingHTTPServer) -> None:
        self._httpd = httpd
        self.port: int = httpd.server_address[1]  # AF_INET: (host, port)
        # a short poll: shutdown() waits for the loop to notice (0.5 s by default, per server)
        threading.Thread(target=httpd.serve_forever, args=(0.02,), name=f"pages :{self.port}", daemon=True).start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def stop_all(servers: list[Server]) -> None:
    """Stop ``servers`` at once: each waits up to one poll for its loop, so stopping them one
    after another cost a run 25 ms per origin (a tenth of a small test's time)."""
    if len(servers) == 1:
        servers[0].stop()
        return
    threads = [threading.Thread(target=server.stop, name="stop pages") for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # uv opens up to 50 connections at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        """uv hangs up on requests it no longer needs (a failed or stopped resolution): that is
        no user's business, so a failed request is logged (``-v``), never printed as a traceback
        (socketserver's default writes one to stderr)."""
        log.debug("page cache: request from %s failed", client_address, exc_info=True)


def serve(cache: Pages, origin: str, ports: list[int]) -> Server | None:
    """A :class:`Server` for ``origin`` on the first free port of ``ports`` (None: none free)."""

    class Handler(_Handler):
        upstream = origin
        pages = cache

    for port in ports:
        try:
            return Server(_HTTPServer(("127.0.0.1", port), Handler))
        except OSError:
            continue
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK, 40 ms per answer (500 small pages: 22 s; without: 0.4 s)
    disable_nagle_algorithm = True
    upstream = ""
    pages: Pages

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        accept = self.headers.get("Accept", "")
        with trace.span("serve", method="GET"):
            if "Range" not in self.headers and ("html" in accept or "vnd.pypi.simple" in accept):
                self._page(accept)
            else:
                self._file("GET")

    def do_HEAD(self) -> None:
        with trace.span("serve", method="HEAD"):
            self._file("HEAD")

    def _forwarded(self) -> dict[str, str]:
        """The request headers passed upstream, names lower-cased: uv sends ``Range``
        capitalised, and a byte-range read is told apart (and shared) by ``range``."""
        names = ("accept", "user-agent", "authorization", "range")
        return {k.lower(): v for k, v in self.headers.items() if k.lower() in names}

    def _page(self, accept: str) -> None:
        page = self.pages.page(self.upstream + self.path, accept, self._forwarded())
        if page.status == UNREACHABLE:
            self._reset()
            return
        if page.etag and page.etag in self.headers.get("If-None-Match", ""):
            self.pages.count("not_modified")
            self._head(304, [("ETag", page.etag), ("Cache-Control", "no-cache")], 0)
            return
        self.pages.count("full")
        headers = list(page.headers)
        if page.etag:
            headers += [("ETag", page.etag), ("Cache-Control", "no-cache")]
        self._head(page.status, headers, len(page.body))
        self._write(page.body)

    def _file(self, method: str) -> None:
        """A file read: answered from the run's hashes, else streamed from upstream (``HEAD``
        without streaming: httpx's pool stalls on streamed ``HEAD`` responses)."""
        import httpx

        url = self.upstream + self.path
        etag = self.pages.file_etag(url)
        if etag and etag in self.headers.get("If-None-Match", ""):
            self.pages.count("files_not_modified")
            self._head(304, [("ETag", etag), ("Cache-Control", "no-cache")], 0)
            return
        self.pages.count("passed")
        headers = {**self._forwarded(), "accept-encoding": "identity"}
        if method == "HEAD" or "range" in headers:
            read = self.pages.read(method, url, headers)
            if read.status == UNREACHABLE:
                self.pages.count("trouble")
                self._reset()
                return
            kept = self._kept(url, read.status, read.headers, etag)
            self._head(read.status, kept, None if method == "HEAD" else len(read.body), head=method == "HEAD")
            if method != "HEAD":
                self._write(read.body)
            return
        try:
            with (
                trace.span("upstream file", url=url),
                self.pages.client(self.upstream).stream("GET", url, headers=headers) as response,
            ):
                length = response.headers.get("content-length")
                kept = self._kept(url, response.status_code, list(response.headers.items()), etag)
                self._head(response.status_code, kept, int(length) if length else None)
                for chunk in response.iter_raw():
                    if not self._write(chunk):
                        break
                if length is None:
                    self.close_connection = True
        except httpx.HTTPError:
            self.pages.count("trouble")
            self._reset()

    def _kept(self, url: str, status: int, upstream: list[tuple[str, str]], etag: str | None) -> list[tuple[str, str]]:
        """The upstream headers uv gets: the ones a cache or a range read needs, with this run's
        ``ETag`` instead of the upstream's validators when the file's content is known."""
        if status >= 500 or status in _TROUBLE:
            self.pages.count("trouble")
        replace = bool(etag) and status in (200, 206)
        kept = [(k, v) for k, v in upstream if k.lower() in _KEPT and not (replace and k.lower() in _VALIDATORS)]
        if replace and etag:
            kept += [("ETag", etag), ("Cache-Control", "no-cache")]
        for key, value in upstream:
            if key.lower() == "location":
                from urllib.parse import urljoin

                kept.append(("Location", self.pages.local(urljoin(url, value))))
        return kept

    def _head(self, status: int, headers: list[tuple[str, str]], length: int | None, head: bool = False) -> None:
        """Status and headers; ``length`` None: the upstream gave none (a ``HEAD`` answer keeps
        the upstream's ``Content-Length``; a body without one ends with the connection)."""
        try:
            self.send_response(status)
            for key, value in headers:
                if key.lower() != "content-length" or head:
                    self.send_header(key, value)
            if length is not None:
                self.send_header("Content-Length", str(length))
            elif not head:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
        except OSError:
            self.close_connection = True

    def _reset(self) -> None:
        """End the connection with a reset and no answer: the upstream could not be reached, and
        uv must see a network failure, as it would have without the cache."""
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            return True
        except OSError:  # uv went away (a cancelled request, a stopped run)
            self.close_connection = True
            return False
