"""Fake package hosts on loopback, shaped like the real ones (PyPI, download.pytorch.org, a flat
find-links host, GitHub release assets). One :class:`FakeHost` is one server (one "host"): pages
and files live at the same paths as on the real host, so absolute-path links work, and the tests
point lockgen at them with ``--mirror https://real.host=http://127.0.0.1:PORT``.
"""

from __future__ import annotations

import hashlib
import html
import http.server
import json
import threading
from functools import partial
from pathlib import Path
from urllib.parse import quote

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

from tests.fakeindex import make_wheel


class FakeHost:
    """A static file server for ``root`` on 127.0.0.1 with helpers to publish wheels and pages."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        handler = partial(Handler, directory=str(root))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wheel(self, folder: str, name: str, version: str, tag: str = "py3-none-any", requires=()) -> Path:
        """Build a wheel into ``<root>/<folder>``."""
        return make_wheel(self.root / folder.strip("/"), name, version, tag, tuple(requires))

    def _href(self, path: Path, style: str) -> str:
        rel = path.relative_to(self.root).as_posix()
        name = quote(path.name)  # '+' -> %2B, as real hosts serve local labels
        if style == "absolute":
            return "/" + rel.rsplit("/", 1)[0] + "/" + name if "/" in rel else "/" + name
        return name

    def index_page(self, folder: str, files: list[Path], *, upload_time: str | None = None, hashed: bool = True) -> None:
        """PEP 503 pages ``<folder>/<project>/`` (HTML) for ``files``, with absolute-path links
        (``/whl/cu130/torch-2.13.0%2Bcu130-….whl``, as download.pytorch.org serves them); with
        ``upload_time``, also PEP 691 JSON carrying it (PEP 700), as PyPI serves."""
        by_project: dict[str, list[Path]] = {}
        for path in files:
            name = parse_wheel_filename(path.name)[0] if path.suffix == ".whl" else parse_sdist_filename(path.name)[0]
            by_project.setdefault(canonicalize_name(name), []).append(path)
        for project, paths in by_project.items():
            page = self.root / folder.strip("/") / project
            page.mkdir(parents=True, exist_ok=True)
            anchors, entries = [], []
            for path in paths:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                href = self._href(path, "absolute") + (f"#sha256={digest}" if hashed else "")
                anchors.append(f'<a href="{html.escape(href)}">{html.escape(path.name)}</a><br/>')
                entry = {"filename": path.name, "url": self._href(path, "absolute"), "hashes": {"sha256": digest} if hashed else {}}
                if upload_time:
                    entry["upload-time"] = upload_time
                entries.append(entry)
            (page / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")
            if upload_time:
                doc = {"meta": {"api-version": "1.1"}, "name": project, "files": entries, "versions": []}
                (page / "index.json").write_text(json.dumps(doc))

    def flat_page(self, folder: str, files: list[Path], *, hashed: bool = False, style: str = "relative") -> str:
        """A flat find-links page ``<folder>/index.html`` linking ``files`` (relative links by
        default, ``%2B``-encoded; ``style="upper"`` gives the files a mixed-case project name, as
        some hosts do). Returns its URL."""
        page = self.root / folder.strip("/")
        page.mkdir(parents=True, exist_ok=True)
        anchors = []
        for path in files:
            if style == "upper":  # the file itself carries a mixed-case project name
                project = path.name.split("-")[0]
                path = path.rename(path.with_name(path.name.replace(project, project.capitalize(), 1)))
            href = self._href(path, "relative") if path.parent == page else self._href(path, "absolute")
            if hashed:
                href += "#sha256=" + hashlib.sha256(path.read_bytes()).hexdigest()
            anchors.append(f'<a href="{html.escape(href)}">{html.escape(path.name)}</a>')
        (page / "index.html").write_text("<html><body>\n" + "<br/>\n".join(anchors) + "\n</body></html>\n")
        return f"{self.url}/{folder.strip('/')}/"


class Handler(http.server.SimpleHTTPRequestHandler):
    """Static files; PEP 691 JSON when asked for and present; never "304 Not Modified"."""

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir() and "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", ""):
            doc = path / "index.json"
            if doc.is_file() and self.path.endswith("/"):
                body = doc.read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                import io

                return io.BytesIO(body)
        return super().send_head()

    protocol_version = "HTTP/1.1"  # keep-alive, as real index servers

    def do_GET(self):
        del self.headers["If-Modified-Since"]
        super().do_GET()

    def end_headers(self):
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args):  # noqa: A002
        pass


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

    def __init__(self, root: Path, login: tuple[str, str]):  # no super().__init__: one server, auth from the start
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(BasicAuthHandler, directory=str(root)))
        self._server.login = login  # type: ignore[attr-defined]
        self._server.refused = 0  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def refused(self) -> int:
        return self._server.refused  # type: ignore[attr-defined]
