"""A fake OSV service on loopback, and OSV records in the real format, for hermetic tests.

:func:`record` builds a record as OSV publishes PyPI advisories (GHSA and PYSEC style): ``id``,
``modified``, ``aliases``, ``summary``, ``severity`` with a CVSS vector, ``affected[]`` with the
package, an ``ECOSYSTEM`` range of ``introduced``/``fixed`` (or ``last_affected``) events and the
explicit ``versions`` list OSV computes for PyPI, ``references``, ``database_specific.severity``,
and ``withdrawn`` when asked.

:class:`FakeOsv` serves them like api.osv.dev: ``POST /v1/querybatch`` answers each query with the
ids (and ``modified``) of the records whose ``versions`` list holds the version (as OSV matches
PyPI: not lockgen's range code, so the two are tested against each other), paged by
``page_size`` with ``next_page_token``; ``GET /v1/vulns/<id>`` answers a record. It counts what it
was asked (:attr:`FakeOsv.queries`, :attr:`FakeOsv.fetched`). :func:`write_export` lays the same
records out as a folder or as the per-ecosystem zip.
"""

from __future__ import annotations

import http.server
import json
import threading
import zipfile
from pathlib import Path
from typing import Any

from tests.support.fakehost import _Server


def record(
    ident: str,
    package: str,
    versions: list[str],
    *,
    introduced: str = "0",
    fixed: str | None = None,
    last_affected: str | None = None,
    aliases: tuple[str, ...] = (),
    summary: str = "",
    cvss: str | None = None,
    rating: str | None = None,
    withdrawn: str | None = None,
) -> dict[str, Any]:
    """One OSV record of a PyPI package (see the module docstring)."""
    events: list[dict[str, str]] = [{"introduced": introduced}]
    if fixed:
        events.append({"fixed": fixed})
    if last_affected:
        events.append({"last_affected": last_affected})
    data: dict[str, Any] = {
        "schema_version": "1.6.0",
        "id": ident,
        "modified": "2026-10-01T12:00:00Z",
        "published": "2026-09-01T12:00:00Z",
        "aliases": list(aliases),
        "summary": summary or f"A vulnerability in {package}",
        "details": f"Details of {ident}.",
        "affected": [{
            "package": {"ecosystem": "PyPI", "name": package, "purl": f"pkg:pypi/{package.lower()}"},
            "ranges": [{"type": "ECOSYSTEM", "events": events}],
            "versions": versions,
            "database_specific": {"source": "https://github.com/pypa/advisory-database"},
        }],
        "references": [
            {"type": "ADVISORY", "url": f"https://github.com/advisories/{ident}"},
            {"type": "WEB", "url": f"https://example.org/{package}/security"},
        ],
    }  # fmt: skip
    if cvss:
        data["severity"] = [{"type": "CVSS_V4" if cvss.startswith("CVSS:4") else "CVSS_V3", "score": cvss}]
    if rating:
        data["database_specific"] = {"severity": rating, "cwe_ids": ["CWE-94"], "github_reviewed": True}
    if withdrawn:
        data["withdrawn"] = withdrawn
    return data


def write_export(records: list[dict[str, Any]], path: Path) -> Path:
    """The records as an OSV export: ``<path>/<ID>.json`` files, or a zip when ``path`` ends in
    ``.zip`` (as OSV publishes ``PyPI/all.zip``). Returns ``path``."""
    if path.suffix == ".zip":
        path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for data in records:
                archive.writestr(f"{data['id']}.json", json.dumps(data, indent=2))
        return path
    path.mkdir(parents=True, exist_ok=True)
    for data in records:
        (path / f"{data['id']}.json").write_text(json.dumps(data, indent=2))
    return path


class FakeOsv:
    """The OSV API on 127.0.0.1 (``url``) serving ``records`` until :meth:`stop`."""

    def __init__(self, records: list[dict[str, Any]], page_size: int = 100):
        self.records = {r["id"]: r for r in records}
        self.page_size = page_size
        self.queries: list[dict[str, Any]] = []  # every query of every querybatch, in order
        self.batches = 0
        self.fetched: list[str] = []  # ids asked of /v1/vulns/
        self._lock = threading.Lock()
        server = _Server(Path("."), _handler(self))
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(target=server.serve, name=f"fakeosv {self.url}", daemon=True)
        self._thread.start()

    def __enter__(self) -> FakeOsv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._server.stop(self._thread)

    def matching(self, name: str, version: str) -> list[str]:
        from packaging.utils import canonicalize_name

        found = []
        for ident, data in sorted(self.records.items()):
            for affected in data["affected"]:
                package = affected["package"]
                if canonicalize_name(package["name"]) == canonicalize_name(name) and version in affected["versions"]:
                    found.append(ident)
        return found

    def answer(self, query: dict[str, Any]) -> dict[str, Any]:
        ids = self.matching(query["package"]["name"], query["version"])
        start = int(query.get("page_token") or 0)
        page = ids[start : start + self.page_size]
        result: dict[str, Any] = {}
        if page:
            result["vulns"] = [{"id": i, "modified": self.records[i]["modified"]} for i in page]
        if start + self.page_size < len(ids):
            result["next_page_token"] = str(start + self.page_size)
        return result


def _handler(osv: FakeOsv) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.SimpleHTTPRequestHandler):  # takes the server's directory= (unused)
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            if self.path != "/v1/querybatch" or len(body.get("queries", [])) > 1000:
                self._send(400, {"code": 3, "message": "bad request"})
                return
            with osv._lock:
                osv.batches += 1
                osv.queries += body["queries"]
            self._send(200, {"results": [osv.answer(q) for q in body["queries"]]})

        def do_GET(self) -> None:
            ident = self.path.removeprefix("/v1/vulns/")
            with osv._lock:
                osv.fetched.append(ident)
            if ident in osv.records:
                self._send(200, osv.records[ident])
            else:
                self._send(404, {"code": 5, "message": "Bug not found."})

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler
