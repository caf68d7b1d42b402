"""Fake package hosts on loopback, shaped like the real ones, for hermetic tests.

One :class:`FakeHost` is one server (one "host": PyPI, download.pytorch.org, a flat find-links
host, GitHub release assets): a folder served on an ephemeral ``127.0.0.1`` port from the moment
it is made until :meth:`FakeHost.stop`. The real uv resolves against it. It offers two ways in:

* **pages at the real host's paths** (so absolute-path links work; the tests point lockgen at them
  with ``--mirror https://real.host=http://127.0.0.1:PORT``): :meth:`~FakeHost.wheel` and
  :meth:`~FakeHost.sdist` put files anywhere under the root; :meth:`~FakeHost.index_page` writes
  PEP 503 project pages (and PEP 691 JSON with PEP 700 upload times when asked, as PyPI serves);
  :meth:`~FakeHost.flat_page` writes a flat find-links page (relative or absolute-path links,
  ``%2B``-encoded local labels, mixed-case project names); every file has a direct URL
  (:meth:`~FakeHost.file_url`).
* **an index described as data** (pip-tools' ``FakeRepository`` style): :meth:`~FakeHost.add`
  wheels to named sources, then :meth:`~FakeHost.publish` writes ``<source>/simple/<project>/``
  (PEP 503, relative links), ``<source>/`` (a flat page) and keeps the wheels in ``files/``;
  :meth:`~FakeHost.index_url` and :meth:`~FakeHost.flat_url` name them.

Anchors carry ``#sha256=`` unless asked not to, and ``data-requires-python`` when the wheel was
made with ``requires_python``. The server never answers "304 Not Modified" and sends
``Cache-Control: no-cache`` (a rebuilt file under the same name must reach uv), keeps connections
alive as real index servers do, and stops at once: no poll interval to wait out, and the
keep-alive connections still open are closed.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import http.server
import io
import json
import os
import selectors
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

from tests.support.wheels import make_sdist, make_wheel

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True)
class _Entry:
    """A wheel :meth:`FakeHost.add` put in a source."""

    path: Path
    hashed: bool


class FakeHost:
    """A folder ``root`` served on 127.0.0.1 (``url``) until :meth:`stop`; also a context manager."""

    def __init__(self, root: Path, handler: type[http.server.SimpleHTTPRequestHandler] | None = None):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._server = _Server(root, handler or Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve, name=f"fakehost {self.url}", daemon=True)
        self._thread.start()
        #: source name -> wheels added to it (see :meth:`add`); clear a list to rebuild a source.
        self.sources: dict[str, list[_Entry]] = {}
        self._requires_python: dict[Path, str] = {}

    def __enter__(self) -> FakeHost:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving, at once; idempotent."""
        self._server.stop(self._thread)

    # -- files and pages at the real host's paths ------------------------------------------------

    def wheel(
        self,
        folder: str,
        name: str,
        version: str,
        tag: str = "py3-none-any",
        requires=(),
        requires_python: str | None = None,
        metadata: tuple[str, ...] = (),
        files: dict[str, bytes] | None = None,
        **shape: Any,
    ) -> Path:
        """Build a wheel into ``<root>/<folder>`` (see :func:`tests.support.wheels.make_wheel`;
        ``shape``: its keyword-only shapes of real wheels, ``scripts``, ``bytecode``, ``duplicated``)."""
        path = make_wheel(
            self._folder(folder), name, version, tag, tuple(requires), requires_python, metadata, files, **shape
        )
        if requires_python:
            self._requires_python[path] = requires_python
        return path

    def sdist(self, folder: str, name: str, version: str) -> Path:
        """Build a source distribution into ``<root>/<folder>`` (see :func:`tests.support.wheels.make_sdist`)."""
        return make_sdist(self._folder(folder), name, version)

    def file_url(self, path: Path) -> str:
        """The direct URL of a file under the root (``+`` as ``%2B``, as real hosts serve)."""
        return self.url + self._absolute(path)

    def index_page(
        self,
        folder: str,
        files: list[Path],
        *,
        upload_time: str | Mapping[str, str] | None = None,
        hashed: bool = True,
        links: str = "absolute",
    ) -> str:
        """PEP 503 project pages ``<folder>/<project>/`` for ``files``; returns the index URL.

        ``links="absolute"``: absolute-path links (``/whl/cu130/torch-2.13.0%2Bcu130-….whl``, as
        download.pytorch.org serves them); ``"relative"``: paths relative to the page
        (``../../files/…``). With ``upload_time``, also PEP 691 JSON carrying it (PEP 700), as PyPI
        serves; uv asks for JSON first. ``upload_time`` may map file names to their own times.
        """
        self._project_pages(folder, [(path, hashed) for path in files], upload_time, links)
        return f"{self.url}/{folder.strip('/')}"

    def flat_page(
        self, folder: str, files: list[Path], *, hashed: bool = False, links: str = "auto", mixed_case: bool = False
    ) -> str:
        """A flat find-links page ``<folder>/index.html`` linking ``files``; returns its URL.

        ``links="auto"``: the bare (``%2B``-encoded) file name for files in ``folder``, an
        absolute path for the others (as GitHub's ``expanded_assets`` pages link release
        assets); ``"relative"``: paths relative to the page; ``"absolute"``: absolute paths.
        ``mixed_case`` renames each file to a capitalised project name (``Natten-…``), as some
        hosts publish them.
        """
        page = self._folder(folder)
        anchors = []
        for path in files:
            if mixed_case:
                project = path.name.split("-")[0]
                path = path.rename(path.with_name(path.name.replace(project, project.capitalize(), 1)))
            anchors.append(self._anchor(path, self._href(path, page, links), hashed))
        (page / "index.html").write_text("<html><body>\n" + "<br/>\n".join(anchors) + "\n</body></html>\n")
        return f"{self.url}/{folder.strip('/')}/" if folder.strip("/") else f"{self.url}/"

    # -- an index described as data ----------------------------------------------------------------

    def add(
        self,
        name: str,
        version: str,
        tag: str = "py3-none-any",
        requires: tuple[str, ...] = (),
        requires_python: str | None = None,
        source: str = "pypi",
        hashed: bool = True,
        metadata: tuple[str, ...] = (),
        files: dict[str, bytes] | None = None,
        **shape: Any,
    ) -> str:
        """Add a wheel (kept in ``files/``) to ``source``; returns its direct URL. Call
        :meth:`publish` after adding. ``metadata``: more core metadata lines for its METADATA;
        ``files`` and ``shape``: as for :meth:`wheel`."""
        path = self.wheel("files", name, version, tag, requires, requires_python, metadata, files, **shape)
        self.sources.setdefault(source, []).append(_Entry(path, hashed))
        return self.file_url(path)

    def publish(self) -> None:
        """(Re)write every source's index and flat page from the wheels added so far."""
        for source, entries in self.sources.items():
            files = [(e.path, e.hashed) for e in entries]
            projects = self._project_pages(f"{source}/simple", files, None, "relative")
            root_links = "\n".join(f'<a href="{p}/">{p}</a>' for p in sorted(projects))
            (self.root / source / "simple" / "index.html").write_text(f"<html><body>{root_links}</body></html>\n")
            page = self.root / source
            anchors = "\n".join(self._anchor(path, self._href(path, page, "relative"), h) for path, h in files)
            (page / "index.html").write_text(f"<html><body>\n{anchors}\n</body></html>\n")

    def metadata_files(self) -> list[Path]:
        """Serve each wheel's core metadata beside it as ``<wheel>.metadata`` (PEP 658, as PyPI
        does), taken from the wheel's own ``METADATA``; returns the files written."""
        import zipfile

        written = []
        for wheel in sorted(self.root.rglob("*.whl")):
            with zipfile.ZipFile(wheel) as zf:
                name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
                target = wheel.with_name(wheel.name + ".metadata")
                target.write_bytes(zf.read(name))
                written.append(target)
        return written

    def index_url(self, source: str = "pypi") -> str:
        """The PEP 503 index URL of a :meth:`publish`-ed ``source``."""
        return f"{self.url}/{source}/simple"

    def flat_url(self, source: str) -> str:
        """The flat find-links page of a :meth:`publish`-ed ``source``, listing all its wheels."""
        return f"{self.url}/{source}/"

    # -- pages ------------------------------------------------------------------------------------

    def _folder(self, folder: str) -> Path:
        path = self.root / folder.strip("/")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _absolute(self, path: Path) -> str:
        return "/" + quote(path.relative_to(self.root).as_posix())

    def _href(self, path: Path, page: Path, links: str) -> str:
        if links == "absolute" or (links == "auto" and path.parent != page):
            return self._absolute(path)
        if links in ("auto", "relative"):
            return quote(Path(os.path.relpath(path, page)).as_posix())
        raise ValueError(f"links={links!r}: use 'auto', 'relative' or 'absolute'")

    def _anchor(self, path: Path, href: str, hashed: bool) -> str:
        if hashed:
            href += "#sha256=" + hashlib.sha256(path.read_bytes()).hexdigest()
        requires_python = self._requires_python.get(path)
        attrs = f' data-requires-python="{html.escape(requires_python)}"' if requires_python else ""
        return f'<a href="{html.escape(href)}"{attrs}>{html.escape(path.name)}</a>'

    def _project_pages(
        self, folder: str, files: list[tuple[Path, bool]], upload_time: str | Mapping[str, str] | None, links: str
    ) -> list[str]:
        """Write ``<folder>/<project>/index.html`` (and ``index.json`` with ``upload_time``) for
        every project in ``files``; returns the projects."""
        by_project: dict[str, list[tuple[Path, bool]]] = {}
        for path, hashed in files:
            parse = parse_wheel_filename if path.suffix == ".whl" else parse_sdist_filename
            by_project.setdefault(canonicalize_name(parse(path.name)[0]), []).append((path, hashed))
        for project, items in by_project.items():
            page = self._folder(f"{folder}/{project}")
            anchors = [self._anchor(path, self._href(path, page, links), hashed) + "<br/>" for path, hashed in items]
            (page / "index.html").write_text(
                "<!DOCTYPE html><html><body>\n" + "\n".join(anchors) + "\n</body></html>\n"
            )
            if upload_time:
                entries = []
                for path, hashed in items:
                    time = upload_time if isinstance(upload_time, str) else upload_time[path.name]
                    entry = {"filename": path.name, "url": self._href(path, page, links), "upload-time": time}
                    entry["hashes"] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()} if hashed else {}
                    if path in self._requires_python:
                        entry["requires-python"] = self._requires_python[path]
                    entries.append(entry)
                doc = {"meta": {"api-version": "1.1"}, "name": project, "files": entries, "versions": []}
                (page / "index.json").write_text(json.dumps(doc))
        return list(by_project)


# -- the server ------------------------------------------------------------------------------------


class Handler(http.server.SimpleHTTPRequestHandler):
    """Static files; PEP 691 JSON when asked for and present; never "304 Not Modified"."""

    protocol_version = "HTTP/1.1"  # keep-alive, as real index servers
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms ACK waits

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir() and JSON_TYPE in self.headers.get("Accept", "") and self.path.endswith("/"):
            doc = path / "index.json"
            if doc.is_file():
                body = doc.read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", JSON_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                return io.BytesIO(body)
        return super().send_head()

    def do_GET(self):
        del self.headers["If-Modified-Since"]
        super().do_GET()

    def end_headers(self):
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    """A threading HTTP server whose loop waits on its socket *and* a wake-up socket, so
    :meth:`stop` returns at once (``serve_forever`` polls its stop flag every 0.5 s, and
    ``shutdown()`` waits for that poll)."""

    daemon_threads = True  # a handler thread never keeps the test process alive
    request_queue_size = 128  # uv opens many connections at once

    def __init__(self, root: Path, handler: type[http.server.SimpleHTTPRequestHandler]):
        super().__init__(("127.0.0.1", 0), partial(handler, directory=str(root)))
        self._wake_r, self._wake_w = socket.socketpair()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False

    def serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                ready = selector.select()
                if any(key.fileobj is self._wake_r for key, _ in ready):
                    return
                self._handle_request_noblock()

    def handle_error(self, request, client_address):
        pass  # uv hanging up on a request is no test output (socketserver prints a traceback)

    def process_request(self, request, client_address):
        with self._lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def stop(self, thread: threading.Thread) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._wake_w.send(b"\0")
        thread.join()
        self.server_close()
        with self._lock:
            still_open, self._open = self._open, set()
        for connection in still_open:  # idle keep-alive connections: their handlers see EOF and end
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._wake_r.close()
        self._wake_w.close()


class BasicAuthHandler(Handler):
    """:class:`Handler` that answers HTTP 401 unless the request carries the server's Basic
    login (``self.server.login``: ``(user, password)``)."""

    def send_head(self):
        import base64

        user, password = self.server.login  # type: ignore[attr-defined]
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        if self.headers.get("Authorization") != expected:
            self.server.refused += 1  # type: ignore[attr-defined]
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="fake"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return super().send_head()


class AuthHost(FakeHost):
    """A :class:`FakeHost` that requires a Basic login (``login = (user, password)``);
    ``refused`` counts the requests it answered with 401."""

    def __init__(self, root: Path, login: tuple[str, str]):
        super().__init__(root, BasicAuthHandler)
        self._server.login = login  # type: ignore[attr-defined]
        self._server.refused = 0  # type: ignore[attr-defined]

    @property
    def refused(self) -> int:
        return self._server.refused  # type: ignore[attr-defined]
