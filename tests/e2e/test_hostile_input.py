"""The one reader of untrusted bytes, by mechanism (docs/untrusted-input.md, "The one reader"):
every command that reads bytes lockgen did not write, each with every hostile shape of its input,
must end in a named refusal (exit 1 or 2, the file named, no traceback, no secret shown) and not
hang: a FIFO is not waited on, ``/dev/zero`` is not read to its end, a sparse 3 GiB file and a zip
bomb are refused unread.

Sites (the file a hostile shape replaces) and the command that reads it:

* ``audit --osv FOLDER``: one record file of the export folder;
* ``audit --osv ZIP``: the zip itself, or one of its members;
* ``audit`` against the OSV API: an answer (huge, deep, odd, paging without end);
* ``install --from BUNDLE``: the bundle's ``bundle.json`` and its ``locks/manifest.json``;
* ``merge SHARD``: the shard's ``manifest.json``;
* ``check`` and ``install --dry-run``: the project's ``locks/manifest.json`` and main lock;
* ``init FILE``: a requirement file.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lockgen import osv as osv_module
from tests.conftest import Run, run_cli, run_ok
from tests.support import dossier_world
from tests.support.dossier_world import OLD
from tests.support.fakehost import _Server
from tests.support.fakeosv import FakeOsv, write_export

pytestmark = pytest.mark.uv  # the world is locked with the real uv

SECRET = "hunter2-do-not-show"
#: Seconds a hostile case may take before it counts as hung (a real run takes well under one).
HUNG = 60.0


@dataclass
class World:
    root: Path  # the locked project (copied for each case)
    mirrors: list[str]
    bundle: Path
    shard: Path  # the locks folder of `all --shard 1/2`
    base: Path = field(default_factory=Path)


@pytest.fixture(scope="module")
def world(shared_fake_host, tmp_path_factory) -> World:
    pypi = shared_fake_host("pypi")
    dossier_world.publish(pypi)
    base = tmp_path_factory.mktemp("hostile")
    w = dossier_world.write(base / "p", pypi)
    mirrors = w.mirror_args()
    run_ok("all", "-C", str(w.root), *mirrors)
    run_ok("bundle", OLD, "-o", str(base / "bundle"), "-C", str(w.root), *mirrors)
    shard = base / "shard"
    shutil.copytree(w.root, shard)
    run_ok("all", "--shard", "1/2", "-C", str(shard), *mirrors)
    return World(w.root, mirrors, base / "bundle", shard / "locks", base)


# ------------------------------------------------------------------------------ hostile shapes


def _huge(path: Path) -> None:
    path.unlink(missing_ok=True)
    with path.open("wb") as fh:
        fh.truncate(3 * 1024**3)  # sparse: nothing is written


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)  # no writer: a blocking open would wait for ever


def _dev_zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


def _outside(path: Path) -> None:
    """A symlink to a file outside the folder holding a secret (valid content where it is JSON)."""
    secret = path.parent.parent / f"outside-{path.name}"
    secret.write_text(json.dumps({"id": SECRET, "cells": {}, "token": SECRET}))
    path.unlink(missing_ok=True)
    path.symlink_to(secret)


def _deep(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.write_text("[" * 200_000 + "]" * 200_000)


def _odd(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.write_text('{"id": 7, "affected": {"package": []}, "cells": [1, {"x": null}], "format": "🙂"}')


def _binary(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.write_bytes(b"\xff\xfe\x00garbage\x00" * 64)


SHAPES: dict[str, Callable[[Path], None]] = {
    "huge": _huge, "fifo": _fifo, "dev-zero": _dev_zero, "symlink-out": _outside, "deep-json": _deep,
    "odd-record": _odd, "not-text": _binary,
}  # fmt: skip


def _zip_bomb(path: Path) -> None:
    """A zip whose one member inflates 1,000 times (OSV's layout: one record a member); 32 MiB
    here, refused by its ratio before a byte is inflated, as a 4 GiB one is (the field's 1 MB
    export read to 4.1 GiB)."""
    path.unlink(missing_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("GHSA-bomb.json", b" " * (32 << 20))


def _zip_member(shape: Callable[[Path], None]) -> Callable[[Path], None]:
    """The zip export with one member holding what ``shape`` writes into a file."""

    def plant(path: Path) -> None:
        scratch = path.parent / "member.json"
        shape(scratch)
        with zipfile.ZipFile(path, "a") as archive:
            archive.write(scratch, "GHSA-odd.json")
        scratch.unlink()

    return plant


# ------------------------------------------------------------------------------ sites


@dataclass
class Case:
    target: Callable[[Path, Path], Path]  # (project copy, case folder) -> the file to replace
    argv: Callable[[Path, Path, World], list[str]]  # (project copy, case folder, world) -> argv
    shapes: tuple[str, ...]
    named: str  # what the refusal names (a file name)
    mirrors: bool = True  # the command takes the world's --mirror options (a bundle does not)


def _export(tmp: Path) -> Path:
    return write_export(dossier_world.records(), tmp / "osv")


def _export_zip(tmp: Path) -> Path:
    return write_export(dossier_world.records(), tmp / "all.zip")


JSON = ("huge", "fifo", "dev-zero", "symlink-out", "deep-json", "odd-record", "not-text")
TEXT = ("huge", "fifo", "dev-zero", "symlink-out", "not-text")

SITES: dict[str, Case] = {
    "audit-folder-record": Case(
        lambda root, tmp: _export(tmp) / "GHSA-h5c8-rqwp-cp95.json",
        lambda root, tmp, w: ["audit", "-C", str(root), "--osv", str(tmp / "osv")],
        ("huge", "fifo", "dev-zero", "symlink-out"), "GHSA-h5c8-rqwp-cp95.json",
    ),
    "audit-zip": Case(
        lambda root, tmp: _export_zip(tmp),
        lambda root, tmp, w: ["audit", "-C", str(root), "--osv", str(tmp / "all.zip")],
        ("huge", "fifo", "dev-zero", "not-text", "zip-bomb"), "all.zip",
    ),
    "bundle-json": Case(
        lambda root, tmp: _copy(tmp, "bundle") / "bundle.json",
        lambda root, tmp, w: ["install", "--from", str(tmp / "bundle"), OLD, "--venv", str(tmp / "venv"), "--dry-run"],
        JSON, "bundle.json", mirrors=False,
    ),
    "bundle-manifest": Case(
        lambda root, tmp: _copy(tmp, "bundle") / "locks" / "manifest.json",
        lambda root, tmp, w: ["install", "--from", str(tmp / "bundle"), OLD, "--venv", str(tmp / "venv"), "--dry-run"],
        JSON, "manifest.json", mirrors=False,
    ),
    "merge-shard-manifest": Case(
        lambda root, tmp: _copy(tmp, "shard") / "manifest.json",
        lambda root, tmp, w: ["merge", str(tmp / "shard"), "-C", str(root)],
        JSON, "manifest.json", mirrors=False,
    ),
    "check-manifest": Case(
        lambda root, tmp: root / "locks" / "manifest.json",
        lambda root, tmp, w: ["check", "-C", str(root)],
        JSON, "manifest.json",
    ),
    "check-lock": Case(
        lambda root, tmp: root / "locks" / f"{OLD}.txt",
        lambda root, tmp, w: ["check", "-C", str(root)],
        TEXT, f"{OLD}.txt",
    ),
    "install-manifest": Case(
        lambda root, tmp: root / "locks" / "manifest.json",
        lambda root, tmp, w: ["install", OLD, "-C", str(root), "--venv", str(tmp / "venv"), "--dry-run"],
        JSON, "manifest.json",
    ),
    "init-requirements": Case(
        lambda root, tmp: _requirements(tmp),
        lambda root, tmp, w: ["init", "requirements.txt", "-C", str(tmp / "app"), "--dry-run", "--python", "3.12"],
        TEXT, "requirements.txt", mirrors=False,
    ),
}  # fmt: skip

_WORLD: list[World] = []


def _copy(tmp: Path, what: str) -> Path:
    world = _WORLD[0]
    shutil.copytree(world.bundle if what == "bundle" else world.shard, tmp / what, symlinks=True)
    return tmp / what


def _requirements(tmp: Path) -> Path:
    app = tmp / "app"
    app.mkdir()
    (app / "requirements.txt").write_text("jinja2==3.1.4\n")
    return app / "requirements.txt"


def _run(argv: list[str]) -> Run:
    """``run_cli(argv)`` in a thread; a run that does not end within :data:`HUNG` fails the test
    (the thread is left behind, blocked: the hang is the defect)."""
    done: list[Run] = []
    worker = threading.Thread(target=lambda: done.append(run_cli(*argv)), daemon=True)
    worker.start()
    worker.join(HUNG)
    assert done, f"lockgen {' '.join(argv)} hung (more than {HUNG} s)"
    return done[0]


CASES = [(site, shape) for site, case in SITES.items() for shape in case.shapes]


@pytest.mark.parametrize(("site", "shape"), CASES, ids=[f"{s}-{h}" for s, h in CASES])
def test_every_reader_refuses_every_hostile_shape_by_name(world, tmp_path, site, shape):
    _WORLD[:] = [world]
    case = SITES[site]
    root = tmp_path / "p"
    shutil.copytree(world.root, root, symlinks=True)
    target = case.target(root, tmp_path)
    (_zip_bomb if shape == "zip-bomb" else SHAPES[shape])(target)
    run = _run([*case.argv(root, tmp_path, world), *(world.mirrors if case.mirrors else [])])
    assert run.code in (1, 2), (run.code, run.err)
    assert "Traceback" not in run.err and "Traceback" not in run.out
    assert SECRET not in run.err + run.out
    assert case.named in run.err + run.out, (run.out, run.err)


# ------------------------------------------------------------------------------ the OSV API


def _hostile_api(kind: str) -> tuple[_Server, threading.Thread, str]:
    """An OSV API on loopback answering every request with ``kind``: ``huge`` (an endless body),
    ``deep`` (nested arrays), ``odd`` (ids of a record of an odd shape), ``vulns`` (``"vulns": true``), ``pages`` (a next page
    for ever)."""
    records = {r["id"]: r for r in dossier_world.records()}

    class Handler(http.server.SimpleHTTPRequestHandler):  # takes the server's directory= (unused)
        protocol_version = "HTTP/1.1"

        def _send(self, body: bytes, length: bool = True) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if length:
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b" " * (1 << 20)
            try:
                for _ in range(4096):  # 4 GiB if nobody stops reading
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            queries = body["queries"]
            if kind == "huge":
                self._send(b"", length=False)
            elif kind == "deep":
                self._send(b"[" * 100_000 + b"]" * 100_000)
            elif kind == "vulns":  # a type-confused answer: no array of advisories
                self._send(json.dumps({"results": [{"vulns": True} for _ in queries]}).encode())
            elif kind == "pages":
                self._send(json.dumps({"results": [{"next_page_token": "again"} for _ in queries]}).encode())
            else:  # odd: every query names the odd record
                self._send(json.dumps({"results": [{"vulns": [{"id": "ODD-1"}]} for _ in queries]}).encode())

        def do_GET(self) -> None:
            if kind == "odd":
                self._send(json.dumps({"id": "ODD-1", "affected": [{"package": {"ecosystem": "PyPI", "name": "jinja2"},
                                        "ranges": [{"type": "ECOSYSTEM", "events": "all"}]}]}).encode())  # fmt: skip
            else:
                self._send(json.dumps(records.get(self.path.rsplit("/", 1)[-1], {})).encode())

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = _Server(Path("."), Handler)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    return server, thread, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def small_answers(monkeypatch):
    """An answer bound of 4 MiB (the real one is 32 MiB: the same code path, less to send)."""
    monkeypatch.setattr(osv_module, "MAX_ANSWER", 4 * 1024 * 1024)


@pytest.mark.parametrize(
    ("kind", "named"),
    [("huge", "its answer is over the bound of 4194304 bytes; the audit did not complete"), ("deep", "nested deeper than"), ("pages", "pages without end"),
     ("odd", "ODD-1: not an OSV record"), ("vulns", "results[0].vulns: must be an array, not bool")],
)  # fmt: skip
def test_a_hostile_osv_api_fails_the_audit_by_name_never_clean(world, small_answers, kind, named):
    server, thread, url = _hostile_api(kind)
    try:
        run = _run(["audit", "-C", str(world.root), "--mirror", f"https://api.osv.dev={url}"])
    finally:
        server.stop(thread)
    assert run.code == 1, (run.code, run.err)
    assert named in run.err and "https://api.osv.dev" in run.err
    assert "Traceback" not in run.err
    assert "no known vulnerabilities" not in run.out.lower()


def test_one_odd_record_in_an_export_is_a_named_skip_and_the_rest_is_read(world, tmp_path, caplog):
    export = write_export(dossier_world.records(), tmp_path / "osv")
    (export / "ODD-1.json").write_text('{"id": "ODD-1", "affected": [{"package": {"ecosystem": "PyPI", '
                                       '"name": "jinja2"}, "ranges": 5}]}')  # fmt: skip
    (export / "DEEP-1.json").write_text('{"name": "jinja2", "x": ' + "[" * 5000 + "]" * 5000 + "}")
    run = _run(["audit", "-C", str(world.root), "--osv", str(export), "--format", "json"])
    assert run.code == 1 and "Traceback" not in run.err
    said = caplog.text
    assert "ODD-1.json in osv: not an OSV record (ranges: must be an array); skipped" in said
    assert "DEEP-1.json in osv: not an OSV record: nested deeper than 32 levels; skipped" in said
    assert "GHSA-h5c8-rqwp-cp95" in {f["id"] for f in json.loads(run.out)["findings"]}


def test_the_fake_osv_still_audits_clean_paths(world):
    """The good path through the bounded reader (the paging of the fake API: one id a page)."""
    with FakeOsv(dossier_world.records(), page_size=1) as server:
        run = _run(["audit", "-C", str(world.root), "--mirror", f"https://api.osv.dev={server.url}"])
    assert run.code == 1 and "GHSA-h5c8-rqwp-cp95" in run.out


@pytest.fixture(autouse=True)
def _no_leftover_world() -> Iterator[None]:
    yield
    _WORLD.clear()
