"""A local package index for hermetic tests: tiny valid wheels, served on 127.0.0.1.

:func:`make_wheel` builds a real wheel (``METADATA``, ``WHEEL`` with its tags, ``RECORD`` with
hashes). :class:`FakeIndex` keeps wheels in named sources and publishes them as PEP 503 index
pages (``<source>/simple/<project>/``), flat find-links pages (``<source>/``) and direct file URLs
(``files/<wheel>``), served by a threaded HTTP server. The real uv resolves against it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import io
import re
import threading
import zipfile
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from packaging.tags import parse_tag
from packaging.utils import canonicalize_name


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    folder: Path,
    name: str,
    version: str,
    tag: str = "py3-none-any",
    requires: tuple[str, ...] = (),
    requires_python: str | None = None,
) -> Path:
    """Write ``<name>-<version>-<tag>.whl`` into ``folder`` and return its path.

    ``tag`` may be a compressed tag set (``cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64``);
    the ``WHEEL`` file lists every tag it expands to, as real wheels do.
    """
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        metadata.append(f"Requires-Python: {requires_python}")
    extras = sorted({m for r in requires for m in re.findall(r"""extra\s*==\s*['"]([^'"]+)['"]""", r)})
    metadata += [f"Provides-Extra: {e}" for e in extras]  # as real wheels declare the extras their requires use
    metadata += [f"Requires-Dist: {r}" for r in requires]
    wheel = ["Wheel-Version: 1.0", "Generator: lockgen-tests", "Root-Is-Purelib: true"]
    wheel += [f"Tag: {t}" for t in sorted(str(t) for t in parse_tag(tag))]
    files = {
        f"{dist}/__init__.py": f'__version__ = "{version}"\n'.encode(),
        f"{info}/METADATA": ("\n".join(metadata) + "\n").encode(),
        f"{info}/WHEEL": ("\n".join(wheel) + "\n").encode(),
    }
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"{dist}-{version}-{tag}.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in files.items():
            info_ = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            zf.writestr(info_, data)
    folder.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return path


@dataclass
class _Entry:
    path: Path
    project: str
    requires_python: str | None
    hashed: bool


@dataclass
class FakeIndex:
    """Named sources of wheels under ``root``, served on loopback once :meth:`start` ran."""

    root: Path
    sources: dict[str, list[_Entry]] = field(default_factory=dict)
    url: str = ""

    def add(
        self,
        name: str,
        version: str,
        tag: str = "py3-none-any",
        requires: tuple[str, ...] = (),
        requires_python: str | None = None,
        source: str = "pypi",
        hashed: bool = True,
    ) -> str:
        """Add a wheel to ``source``; returns its direct URL. Call :meth:`publish` after adding."""
        path = make_wheel(self.root / "files", name, version, tag, requires, requires_python)
        self.sources.setdefault(source, []).append(_Entry(path, canonicalize_name(name), requires_python, hashed))
        return self.file_url(path.name)

    def file_url(self, filename: str) -> str:
        return f"{self.url}/files/{filename}"

    def index_url(self, source: str = "pypi") -> str:
        """The PEP 503 index URL of ``source``."""
        return f"{self.url}/{source}/simple"

    def flat_url(self, source: str) -> str:
        """A flat find-links page listing every wheel of ``source``."""
        return f"{self.url}/{source}/"

    def _anchor(self, entry: _Entry, href: str) -> str:
        if entry.hashed:
            href += "#sha256=" + hashlib.sha256(entry.path.read_bytes()).hexdigest()
        attrs = f' data-requires-python="{html.escape(entry.requires_python)}"' if entry.requires_python else ""
        return f'<a href="{html.escape(href)}"{attrs}>{html.escape(entry.path.name)}</a><br/>'

    def publish(self) -> None:
        """(Re)write every index and flat page from the wheels added so far."""
        for source, entries in self.sources.items():
            base = self.root / source
            projects: dict[str, list[_Entry]] = {}
            for entry in entries:
                projects.setdefault(entry.project, []).append(entry)
            for project, items in projects.items():
                page = base / "simple" / project / "index.html"
                page.parent.mkdir(parents=True, exist_ok=True)
                links = "\n".join(self._anchor(e, f"../../../files/{e.path.name}") for e in items)
                page.write_text(f"<!DOCTYPE html><html><body>\n{links}\n</body></html>\n")
            root_links = "\n".join(f'<a href="{p}/">{p}</a>' for p in sorted(projects))
            (base / "simple" / "index.html").write_text(f"<html><body>{root_links}</body></html>\n")
            flat = "\n".join(self._anchor(e, f"../files/{e.path.name}") for e in entries)
            (base / "index.html").write_text(f"<html><body>\n{flat}\n</body></html>\n")

    def start(self) -> FakeIndex:
        """Serve ``root`` on an ephemeral 127.0.0.1 port in a daemon thread."""
        self.root.mkdir(parents=True, exist_ok=True)
        from tests.fakehost import Handler

        handler = partial(Handler, directory=str(self.root))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
