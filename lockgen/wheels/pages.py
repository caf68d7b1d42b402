"""Where a layer's locked artifact is, by its sha256: a layer lock lists ``name==version`` with the
hash of each file an installer of the cell may pick, and the pages it was resolved from (its
header's ``find-links`` and ``index-url``), not the files' URLs (``lockgen/locks/lock.py``).

:class:`Pages` reads those pages with :class:`lockgen.index.pages.PageReader` (through the
mirrors, each page once, every URL canonical again): the index's project page for the name and
each find-links page (PEP 691 JSON or PEP 503 / flat HTML), and each local find-links folder (its
wheels, hashed here). A file listed with the hash is the artifact (as :mod:`lockgen.rot.locate`
finds them). A page without hashes (many find-links pages) lists candidates by name instead: the
wheels of that name and version whose tags fit the cell; their sha256 is only known once they
are downloaded (:func:`lockgen.wheels.remote.read_verified`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from lockgen.index.files import Artifact, artifact
from lockgen.index.pages import PageReader, project_url

__all__ = ["Found", "LayerFile", "Pages"]


@dataclass(frozen=True)
class LayerFile:
    """A file a page or folder lists: ``url`` (canonical) or ``path`` (project-relative), its file
    ``name``, ``sha256`` when the page gives it, ``size`` when known."""

    name: str
    url: str | None = None
    path: str | None = None
    sha256: str | None = None
    size: int | None = None

    @property
    def artifact(self) -> Artifact | None:
        """The file name parsed (:func:`lockgen.index.files.artifact`); None for other files."""
        return artifact(self.name)

    @property
    def platform(self) -> bool:
        """A wheel with a platform tag (not ``-any``): a file that can carry GPU code."""
        parsed = self.artifact
        return parsed is not None and any(tag.platform != "any" for tag in parsed.tags)


@dataclass(frozen=True)
class Found:
    """What the pages say about one artifact of ``name==version`` with ``sha256``: ``exact``, the
    file listed with that hash; else ``candidates``, the platform wheels of that name and version
    that fit the cell and are listed without a hash (to download and hash); ``other``: the pages
    list a non-platform file of it (a pure wheel or an sdist), so an unmatched hash may be its;
    ``places``: the pages and folders asked; ``problems``: why some could not be read."""

    exact: LayerFile | None = None
    candidates: tuple[LayerFile, ...] = ()
    other: bool = False
    places: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


class Pages:
    """The pages of one coverage run: ``reader`` fetches them (each once); ``root`` is the project
    (local find-links folders are relative to it; each is listed and hashed once)."""

    def __init__(self, reader: PageReader, root: Path) -> None:
        self.reader, self.root = reader, root
        self._folders: dict[str, tuple[list[LayerFile], str | None]] = {}

    def locate(self, name: str, version: str, sha256: str, find_links: Iterable[str], index: str | None,
               fits: frozenset[Tag]) -> Found:  # fmt: skip
        """Where the artifact ``sha256`` of ``name==version`` is (see the module docstring)."""
        wanted = canonicalize_name(name)
        try:
            release = Version(version)
        except InvalidVersion:
            return Found()
        places = [*([project_url(index, wanted)] if index and "://" in index else []), *find_links]
        candidates: list[LayerFile] = []
        problems: list[str] = []
        other = False
        for place in places:
            files, problem = self.files(place)
            if problem:
                problems.append(problem)
            for file in files:
                parsed = file.artifact
                if parsed is None or parsed.name != wanted or parsed.version != release:
                    continue
                if file.sha256 == sha256:
                    return Found(exact=file, places=tuple(places))
                if not file.platform:
                    other = True
                elif file.sha256 is None and parsed.tags & fits and file not in candidates:
                    candidates.append(file)
        return Found(candidates=tuple(candidates), other=other, places=tuple(places), problems=tuple(problems))

    def files(self, place: str) -> tuple[list[LayerFile], str | None]:
        """(files, problem) of a page URL or a project-relative folder."""
        if "://" in place:
            page = self.reader.page(place)
            files = [LayerFile(name=f.filename, url=f.url, sha256=f.sha256, size=f.size) for f in page.files]
            return files, f"{place}: {page.error}" if page.error else None
        if place not in self._folders:
            self._folders[place] = self._folder(place)
        return self._folders[place]

    def _folder(self, folder: str) -> tuple[list[LayerFile], str | None]:
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
            files.append(LayerFile(name=name, path=f"{folder.rstrip('/')}/{name}", sha256=digest.hexdigest()))
        return files, None
