"""A locked project whose hosts change after it was locked: the world of the rot tests
(``check --online``, ``bundle``, ``check --resolve``, publisher identities).

:class:`RotHost` is a :class:`~tests.fakehost.FakeHost` that logs every request (method and path)
and answers chosen paths with a redirect or a status; :func:`json_pages` gives a published source
PEP 691 JSON project pages (sizes, upload times, ``yanked``, PEP 740 ``provenance`` URLs) beside
its HTML ones, and :func:`provenance_object` makes a provenance object (the shape of PyPI's
integrity API, with a recorded attestation) for a publisher.

:func:`locked_world` writes and locks (real uv) a project with two cells over a fake PyPI
(``https://pypi.org/simple`` and ``https://files.pythonhosted.org`` mirrored to the host, so the
locks hold canonical URLs): ``alpha 1.0`` (needs ``beta``), ``beta 2.0``, and an optional layer
``gamma 3.0``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.conftest import run_ok, write_project
from tests.fakehost import FakeHost, Handler

DATA = Path(__file__).parent / "data" / "provenance"
#: A provenance object as PyPI's integrity API serves it, recorded (pypi-attestations' test asset
#: for gcb_attestation_test-0.0.0.tar.gz, a Google Cloud Build Trusted Publisher).
RECORDED = DATA / "gcb_attestation_test-0.0.0.tar.gz.provenance"
#: The file it attests: its name and sha256 (the statement's subject).
RECORDED_FILE = (
    "gcb_attestation_test-0.0.0.tar.gz",
    "461317362419124b6012e855423a9078d6de8aed3e74fa78cc74d669b23dc6cf",
)
CELLS = ("linux-x86_64-cpu-py3.11", "linux-x86_64-cpu-py3.12")
GITHUB = {"kind": "GitHub", "repository": "example/alpha", "workflow": "release.yml", "environment": "pypi"}


class LoggingHandler(Handler):
    """:class:`Handler` that logs ``METHOD path`` and answers ``server.answers[path]``
    (``(status, location or None)``) instead of the file."""

    def _log(self) -> bool:
        server = self.server
        with server.lock:  # type: ignore[attr-defined]
            server.log.append(f"{self.command} {self.path}")  # type: ignore[attr-defined]
        answer = server.answers.get(self.path.split("?")[0])  # type: ignore[attr-defined]
        if answer is None:
            return False
        status, location = answer
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def do_GET(self):  # noqa: N802 - http.server names its handlers so
        if not self._log():
            super().do_GET()

    def do_HEAD(self):  # noqa: N802 - http.server names its handlers so
        if not self._log():
            super().do_HEAD()


class RotHost(FakeHost):
    """A fake host that logs requests (:attr:`log`) and can answer a path with a status."""

    def __init__(self, root: Path):
        super().__init__(root, LoggingHandler)
        self._server.log = []  # type: ignore[attr-defined]
        self._server.answers = {}  # type: ignore[attr-defined]
        self._server.lock = threading.Lock()  # type: ignore[attr-defined]

    @property
    def log(self) -> list[str]:
        return self._server.log  # type: ignore[attr-defined]

    def answer(self, path: str, status: int, location: str | None = None) -> None:
        self._server.answers[path] = (status, location)  # type: ignore[attr-defined]


def provenance_object(publisher: dict[str, str]) -> dict:
    """A provenance object with ``publisher`` and the recorded attestation (which verifies only
    for the recorded file)."""
    recorded = json.loads(RECORDED.read_text())
    data = copy.deepcopy(recorded)
    data["attestation_bundles"][0]["publisher"] = dict(publisher)
    return data


def json_pages(
    host: FakeHost,
    source: str = "pypi",
    *,
    api_version: str = "1.3",
    publishers: dict[str, dict[str, str]] | None = None,
    yanked: dict[str, str] | None = None,
    upload_time: dict[str, str] | None = None,
) -> None:
    """Write PEP 691 ``index.json`` beside each HTML project page of ``source`` (published):
    sizes, ``upload-time`` (``upload_time[file]``, default 2026-01-01), ``yanked`` (reason by file
    name), and for each file in ``publishers`` a provenance object served at PyPI's integrity path
    ``/integrity/<project>/<version>/<file>/provenance`` (named by the file's ``provenance`` key)."""
    publishers = publishers or {}
    for page in sorted((host.root / source / "simple").iterdir()):
        if not page.is_dir():
            continue
        files = []
        for entry in host.sources.get(source, []):
            path = entry.path
            name, version, _, _ = parse_wheel_filename(path.name)
            if canonicalize_name(name) != page.name:
                continue
            data = path.read_bytes()
            item = {
                "filename": path.name, "url": quote(Path(os.path.relpath(path, page)).as_posix()),
                "hashes": {"sha256": hashlib.sha256(data).hexdigest()}, "size": len(data),
                "upload-time": (upload_time or {}).get(path.name, "2026-01-01T00:00:00Z"),
                "yanked": (yanked or {}).get(path.name, False), "provenance": None,
            }  # fmt: skip
            if path.name in publishers:
                integrity = f"integrity/{page.name}/{version}/{path.name}/provenance"
                target = host.root / integrity
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(json.dumps(provenance_object(publishers[path.name])))
                item["provenance"] = f"/{integrity}"
            files.append(item)
        doc = {"meta": {"api-version": api_version}, "name": page.name, "files": files}
        (page / "index.json").write_text(json.dumps(doc))


@dataclass
class World:
    root: Path
    pypi: RotHost

    def mirror_lines(self) -> str:
        return (
            f'"https://pypi.org/simple" = "{self.pypi.url}/pypi/simple"\n'
            f'"https://files.pythonhosted.org" = "{self.pypi.url}/files"\n'
        )

    def file(self, name: str) -> Path:
        return self.pypi.root / "files" / name

    def url(self, name: str) -> str:
        return f"https://files.pythonhosted.org/{name}"


def publish(pypi: FakeHost) -> None:
    pypi.add("alpha", "1.0", requires=("beta",))
    pypi.add("beta", "2.0")
    pypi.add("gamma", "3.0")
    pypi.publish()


def write(root: Path, pypi: RotHost, cells: int = 2, extra: str = "") -> World:
    """The project (not locked): ``cells`` Pythons from 3.11 up; ``extra``: more config lines."""
    world = World(root, pypi)
    pythons = ", ".join(f'"3.{11 + i}"' for i in range(cells))
    write_project(
        root,
        f"""
        index-url = "https://pypi.org/simple"
        optional = ["gamma==3.0"]
        {extra}
        [tool.lockgen.mirrors]
        {world.mirror_lines()}
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = [{pythons}]
        """,
        {"requirements.in.j2": "alpha==1.0\n"},
    )
    return world


def locked_world(root: Path, pypi: RotHost, monkeypatch, **kwargs) -> World:
    """:func:`write`, then ``lockgen all`` in it (the working directory is the project's)."""
    world = write(root, pypi, **kwargs)
    monkeypatch.chdir(root)
    run_ok("all")
    return world
