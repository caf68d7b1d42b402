"""A package host on loopback that misbehaves on purpose, for the trust tests (issue 8).

:class:`FaultHost` serves a folder on ``127.0.0.1`` like :mod:`tests.support.fakehost`, and can be told to
answer slowly (``delay``: a host that accepts connections and stalls, for Ctrl-C tests), to answer
a path with an HTTP status (500, 404), with garbage, or with a file cut short (``Content-Length``
of the whole file, then the connection closed), to send ``Cache-Control: max-age=…`` (a page uv
may keep without asking again), and to publish pages whose ``#sha256=`` is wrong. It records the
paths it was asked for. The hostile hosts of the client's table test are faults too (:data:`HOSTILE`):
one that accepts and never answers, one that trickles, a huge body with no length, ``HEAD``
refused (``GET`` still served, with ``Range`` answered 206 as CDNs do), a redirect loop, and a
redirect to plain ``http`` of another host. :func:`refusing_url` is an address whose connections
are refused, and :data:`UNRESOLVABLE` a host name no resolver knows (RFC 6761 ``.invalid``).
"""

from __future__ import annotations

import hashlib
import html
import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import quote

from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.support.wheels import make_wheel

#: A host name that never resolves (RFC 6761 reserves ``.invalid``).
UNRESOLVABLE = "http://lockgen-test-host.invalid"


@dataclass(frozen=True)
class Fault:
    """How to answer a path: an HTTP ``status`` (with a short body), a ``body`` instead of the
    file, or the file ``truncate``-d to that many bytes under the whole file's Content-Length."""

    status: int | None = None
    body: bytes | None = None
    truncate: int | None = None
    hang: bool = False  # accept, read the request, never answer
    trickle: float | None = None  # send the headers, then one byte every this many seconds
    huge: int | None = None  # a body of this many bytes, no Content-Length
    head_status: int | None = None  # HEAD answered with this status (GET served as usual)
    redirect: str | None = None  # answer 302 to this location ("{self}": the path asked)


#: The hostile behaviours a host can show, by name (the client's table test drives each).
HOSTILE: dict[str, Fault] = {
    "never answers": Fault(hang=True),
    "trickles": Fault(trickle=0.2),
    "huge body": Fault(huge=256 * 1024 * 1024),
    "HEAD refused": Fault(head_status=403),
    "redirect loop": Fault(redirect="{self}"),
    "https to http": Fault(redirect="http://127.0.0.2:9{self}"),
}


class FaultHost:
    """A folder served on 127.0.0.1 until :meth:`stop`, with faults (see the module docstring)."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.delay = 0.0
        self.faults: dict[str, Fault] = {}  # path prefix -> fault
        self.cache_control = "no-cache"
        self.requests: list[str] = []
        self.authorizations: list[str | None] = []  # the Authorization header of each GET
        self.asked = threading.Event()  # set at the first request
        self.stopping = threading.Event()
        handler = partial(_Handler, self, directory=str(root))
        self._server = _QuietServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def wheel(
        self, folder: str, name: str, version: str, tag: str = "py3-none-any", requires: tuple[str, ...] = ()
    ) -> Path:
        return make_wheel(self.root / folder.strip("/"), name, version, tag, tuple(requires))

    def fault(self, path: str) -> Fault | None:
        return next(
            (f for prefix, f in sorted(self.faults.items(), key=lambda kv: -len(kv[0])) if path.startswith(prefix)),
            None,
        )

    def _anchor(self, path: Path, href: str, digest: str | None) -> str:
        if digest is None:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        href += f"#sha256={digest}" if digest else ""
        return f'<a href="{html.escape(href)}">{html.escape(path.name)}</a><br/>'

    def index(self, folder: str, files: list[Path], wrong_hash: frozenset[str] = frozenset()) -> str:
        """PEP 503 pages ``<folder>/<project>/`` (absolute-path links) for ``files``, each with its
        ``#sha256=`` (all zeros for the file names in ``wrong_hash``); returns the index URL."""
        by_project: dict[str, list[Path]] = {}
        for path in files:
            by_project.setdefault(canonicalize_name(parse_wheel_filename(path.name)[0]), []).append(path)
        for project, paths in by_project.items():
            page = self.root / folder.strip("/") / project
            page.mkdir(parents=True, exist_ok=True)
            anchors = [self._anchor(p, self._absolute(p), "0" * 64 if p.name in wrong_hash else None) for p in paths]
            (page / "index.html").write_text(
                "<!DOCTYPE html><html><body>\n" + "\n".join(anchors) + "\n</body></html>\n"
            )
        return f"{self.url}/{folder.strip('/')}"

    def flat(
        self, folder: str, files: list[Path], wrong_hash: frozenset[str] = frozenset(), hashed: bool = True
    ) -> str:
        """A flat find-links page ``<folder>/`` linking ``files`` by absolute path; returns its URL."""
        page = self.root / folder.strip("/")
        page.mkdir(parents=True, exist_ok=True)
        anchors = [
            self._anchor(p, self._absolute(p), "0" * 64 if p.name in wrong_hash else (None if hashed else ""))
            for p in files
        ]
        (page / "index.html").write_text("<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n")
        return f"{self.url}/{folder.strip('/')}/"

    def _absolute(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        folder, _, _ = rel.rpartition("/")
        return f"/{folder}/{quote(path.name)}" if folder else f"/{quote(path.name)}"


class _QuietServer(http.server.ThreadingHTTPServer):
    """Clients that hang up (uv cancelling a request, a killed run) are no test output."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass


class _Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def __init__(self, host: FaultHost, *args, **kwargs):
        self.host = host
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        self.host.requests.append(self.path)
        self.host.authorizations.append(self.headers.get("Authorization"))
        self.host.asked.set()
        if self.host.delay and self.host.stopping.wait(self.host.delay):
            return
        del self.headers["If-Modified-Since"]
        fault = self.host.fault(self.path)
        if fault is None or fault.head_status is not None:
            if not self._ranged():
                super().do_GET()
        elif fault.hang:
            self.host.stopping.wait()
            self.close_connection = True
        elif fault.trickle is not None:
            self._trickle(fault.trickle)
        elif fault.huge is not None:
            self._huge(fault.huge)
        elif fault.redirect is not None:
            self.send_response(302)
            self.send_header("Location", fault.redirect.replace("{self}", self.path))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif fault.status is not None:
            self._send(fault.status, f"{fault.status} from the fault host\n".encode())
        elif fault.body is not None:
            self._send(200, fault.body)
        else:
            self._truncated(fault.truncate or 0)

    def do_POST(self) -> None:
        """An API (the OSV ``querybatch``): its faults as for GET; without one, 501."""
        self.host.requests.append("POST " + self.path)
        fault = self.host.fault(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if fault is not None and fault.head_status is None:
            self.do_GET()
        else:
            self._send(501, b"no API here\n")

    def do_HEAD(self) -> None:
        self.host.requests.append("HEAD " + self.path)
        fault = self.host.fault(self.path)
        if fault is not None and (fault.head_status or fault.redirect or fault.hang):
            if fault.hang:
                self.host.stopping.wait()
                self.close_connection = True
                return
            self.send_response(fault.head_status or 302)
            if fault.redirect:
                self.send_header("Location", fault.redirect.replace("{self}", self.path))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_HEAD()

    def _ranged(self) -> bool:
        """Answer ``Range: bytes=A-B`` of a file with 206 (as CDNs do); False when not asked."""
        wanted = self.headers.get("Range", "")
        path = Path(self.translate_path(self.path))
        if not wanted.startswith("bytes=") or not path.is_file():
            return False
        data = path.read_bytes()
        first, _, last = wanted.removeprefix("bytes=").partition("-")
        start = int(first)
        end = min(int(last) if last else len(data) - 1, len(data) - 1)
        body = data[start : end + 1]
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True

    def _trickle(self, pause: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        for _ in range(100000):
            if self.host.stopping.wait(pause):
                return
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return

    def _huge(self, size: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        block = b"[" * 65536
        try:
            for _ in range(size // len(block)):
                self.wfile.write(block)
        except OSError:
            pass
        self.close_connection = True

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _truncated(self, size: int) -> None:
        path = Path(self.translate_path(self.path))
        data = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[:size])
        self.wfile.flush()
        self.close_connection = True

    def end_headers(self) -> None:
        self.send_header("Cache-Control", self.host.cache_control)
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def refusing_url() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` where nothing listens: the port is held by a socket that is
    bound but not listening, so every connection is refused at once (and no one else gets it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()
