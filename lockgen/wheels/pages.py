"""Where a layer's locked artifact is, by its sha256: a layer lock lists ``name==version`` with the
hash of each file an installer of the cell may pick, and the pages it was resolved from (its
header's ``find-links`` and ``index-url``), not the files' URLs (``lockgen/locks/lock.py``).

:func:`locate` reads those pages through the mirrors: a flat find-links page (PEP 503 anchors,
``#sha256=`` fragments), a local find-links folder (its files, hashed here), and the index's
project page for the name (PEP 691 JSON, else the PEP 503 HTML page). A file listed with the hash
is the artifact. A page without hashes (many find-links pages) lists candidates by name instead:
the wheels of that name and version whose tags fit the cell; their sha256 is only known once they
are downloaded (:func:`lockgen.wheels.remote.read_verified`). Pages are fetched once per
:class:`Pages` (one coverage run); every URL is canonical again after the lookup.
"""

from __future__ import annotations

import hashlib
import html.parser
import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

__all__ = ["Found", "PageFile", "Pages", "page_files"]

log = logging.getLogger("lockgen.coverage")
_JSON = "application/vnd.pypi.simple.v1+json"
_MAX_PAGE = 64 * 1024 * 1024  # bytes of a page that are read


@dataclass(frozen=True)
class PageFile:
    """A file a page or folder lists: ``url`` (canonical) or ``path`` (project-relative), its file
    ``name``, ``sha256`` when the page gives it, ``size`` when known."""

    name: str
    url: str | None = None
    path: str | None = None
    sha256: str | None = None
    size: int | None = None

    def parsed(self) -> tuple[str, Version, frozenset[Tag]] | None:
        """(canonical name, version, tags) of a wheel or an sdist (no tags); None for other files."""
        try:
            if self.name.endswith(".whl"):
                name, version, _, tags = parse_wheel_filename(self.name)
                return str(name), version, tags
            name, version = parse_sdist_filename(self.name)
            return str(name), version, frozenset()
        except (InvalidWheelFilename, InvalidSdistFilename):
            return None

    @property
    def platform(self) -> bool:
        """A wheel with a platform tag (not ``-any``): a file that can carry GPU code."""
        parsed = self.parsed()
        return parsed is not None and any(tag.platform != "any" for tag in parsed[2])


@dataclass(frozen=True)
class Found:
    """What the pages say about one artifact of ``name==version`` with ``sha256``: ``exact``, the
    file listed with that hash; else ``candidates``, the platform wheels of that name and version
    that fit the cell and are listed without a hash (to download and hash); ``other``: the pages
    list a non-platform file of it (a pure wheel or an sdist), so an unmatched hash may be its."""

    exact: PageFile | None = None
    candidates: tuple[PageFile, ...] = ()
    other: bool = False
    places: tuple[str, ...] = ()


def page_files(text: str, content_type: str, base: str) -> list[PageFile]:
    """The files of a page at ``base`` (the URL it was fetched from): PEP 691 JSON (``files``:
    ``filename``, ``url``, ``hashes.sha256``, ``size``) or HTML anchors (a PEP 503 project page or
    a flat find-links page: ``href`` with a ``#sha256=`` fragment, the anchor's text or the
    href's last segment as the file name). Links are joined to ``base``; entries that are not
    files are skipped."""
    if "json" in content_type:
        try:
            data = json.loads(text)
        except ValueError:
            return []
        files = []
        for entry in (data.get("files") or [])[:100_000] if isinstance(data, dict) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
                continue
            hashes: dict[str, Any] = entry["hashes"] if isinstance(entry.get("hashes"), dict) else {}
            url = urljoin(base, entry["url"].split("#", 1)[0])
            name = str(entry["filename"]) if isinstance(entry.get("filename"), str) else _last(url)
            size = entry["size"] if isinstance(entry.get("size"), int) else None
            digest = hashes["sha256"] if isinstance(hashes.get("sha256"), str) else None
            files.append(PageFile(name=name, url=url, sha256=digest, size=size))
        return files
    parser = _Anchors(base)
    parser.feed(text)
    return parser.files


class Pages:
    """The pages of one coverage run, each fetched once: ``client`` (httpx), ``fetch_url`` and
    ``canonical`` (the mirrors: the URL to fetch, and a fetched URL's canonical form), ``root``
    (the project: local find-links folders are relative to it)."""

    def __init__(self, client: Any, fetch_url: Callable[[str], str], canonical: Callable[[str], str],
                 root: Path) -> None:  # fmt: skip
        self.client, self.fetch_url, self.canonical, self.root = client, fetch_url, canonical, root
        self._seen: dict[str, tuple[list[PageFile], str | None]] = {}

    def locate(self, name: str, version: str, sha256: str, find_links: Iterable[str], index: str | None,
               fits: frozenset[Tag]) -> Found:  # fmt: skip
        """Where the artifact ``sha256`` of ``name==version`` is (see the module docstring)."""
        wanted, release = canonicalize_name(name), Version(version)
        places = [*find_links, *([f"{index.rstrip('/')}/{wanted}/"] if index else [])]
        candidates: list[PageFile] = []
        other = False
        for place in places:
            files, _ = self.files(place)
            for file in files:
                parsed = file.parsed()
                if parsed is None or parsed[0] != wanted or parsed[1] != release:
                    continue
                if file.sha256 == sha256:
                    return Found(exact=file, places=tuple(places))
                if not file.platform:
                    other = True
                elif file.sha256 is None and parsed[2] & fits and file not in candidates:
                    candidates.append(file)
        return Found(candidates=tuple(candidates), other=other, places=tuple(places))

    def files(self, place: str) -> tuple[list[PageFile], str | None]:
        """(files, problem) of a page URL or a project-relative folder, fetched once."""
        if place not in self._seen:
            self._seen[place] = self._page(place) if "://" in place else self._folder(place)
        return self._seen[place]

    def _page(self, url: str) -> tuple[list[PageFile], str | None]:
        import httpx

        fetched = self.fetch_url(url)
        try:
            response = self.client.get(fetched, headers={"Accept": f"{_JSON}, text/html;q=0.1"})
        except httpx.HTTPError as exc:
            log.debug("%s: %s", url, exc)
            return [], f"{_host(url)} could not be reached ({type(exc).__name__})"
        if response.status_code != 200:
            return [], f"{_host(url)} answered HTTP {response.status_code}"
        text = response.content[:_MAX_PAGE].decode("utf-8", "replace")
        base = str(response.url)
        files = page_files(text, response.headers.get("content-type", ""), base)
        return [
            PageFile(name=f.name, url=self.canonical(f.url or ""), sha256=f.sha256, size=f.size) for f in files
        ], None

    def _folder(self, folder: str) -> tuple[list[PageFile], str | None]:
        where = self.root / folder
        try:
            names = sorted(os.listdir(where))[:100_000]
        except OSError as exc:
            return [], f"{folder}: cannot list it ({exc.strerror})"
        files = []
        for name in names:
            if not name.endswith(".whl") or not (where / name).is_file():
                continue
            digest = hashlib.sha256()
            with open(where / name, "rb") as file:
                for block in iter(lambda: file.read(1 << 20), b""):
                    digest.update(block)
            files.append(PageFile(name=name, path=f"{folder.rstrip('/')}/{name}", sha256=digest.hexdigest()))
        return files, None


def _last(url: str) -> str:
    return unquote(urlsplit(url).path.rsplit("/", 1)[-1])


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


class _Anchors(html.parser.HTMLParser):
    def __init__(self, base: str) -> None:
        super().__init__()
        self.base = base
        self.files: list[PageFile] = []
        self._href: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href, self._text = dict(attrs).get("href") or None, ""

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text += data[:1000]

    def handle_endtag(self, tag: str) -> None:
        if tag != "a" or self._href is None or len(self.files) >= 100_000:
            return
        link, _, fragment = self._href.partition("#")
        url = urljoin(self.base, link)
        digest = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
        text = self._text.strip()
        name = text if text.endswith((".whl", ".tar.gz", ".zip")) else _last(url)
        self.files.append(PageFile(name=name, url=url, sha256=digest))
        self._href = None
