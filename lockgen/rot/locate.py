"""Every file a set of locks installs, and where it is served: :class:`LockedFile` records.

A cell installs, per locked hash, one file. Where each one is:

* **main lock**: the cell's ``pylock.toml`` lists every artifact the target may install with its
  canonical URL (or a project-relative ``path`` for a local find-links folder), size and sha256;
* **layers** (layer locks list hashes, not URLs, and have no pylock): looked up by sha256 on the
  pages an install of that layer reads: the project page of its ``index-url`` and each of its
  ``find-links`` pages (:class:`~lockgen.index.pages.PageReader`, through the mirrors);
  a ``name @ URL`` entry names its URL, a local archive its path.

A hash that no page lists is an :class:`Unlocated` record (pip and uv would not find the file
either). ``pages`` of each record are the pages an installer reads for its package: the hash
checks of :mod:`lockgen.rot.online` compare what they state.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from packaging.pylock import Package
from packaging.utils import NormalizedName

from lockgen.index.files import artifact as file_name
from lockgen.index.pages import PageReader, project_url
from lockgen.locks import publishers, pylockfile
from lockgen.locks.lock import Entry, Header, is_local
from lockgen.locks.lockset import MAIN, CellLocks, LockSet
from lockgen.locks.publishers import Identity

__all__ = ["Located", "LockedFile", "Unlocated", "locate", "pages_for"]


@dataclass(frozen=True, kw_only=True)
class LockedFile:
    """One file a cell's layer installs. ``url``: canonical download URL (None for a local file:
    then ``path`` is project-relative); ``size`` in bytes where the pylock or page states it;
    ``pages``: the canonical pages an install of the layer reads for the package (none for a
    direct URL); ``identities``: its package's recorded publishers (main packages)."""

    cell: str
    layer: str
    package: NormalizedName
    version: str
    sha256: str
    filename: str
    url: str | None = None
    path: str | None = None
    size: int | None = None
    pages: tuple[str, ...] = ()
    identities: tuple[Identity, ...] = ()

    @property
    def where(self) -> str:
        """``cell`` or ``cell [layer]``."""
        return self.cell if self.layer == MAIN else f"{self.cell} [{self.layer}]"


@dataclass(frozen=True, kw_only=True)
class Unlocated:
    """A locked hash whose file no page lists (``reason`` says which were asked; ``unread``: a
    page could not be read, so the file may still be listed there)."""

    cell: str
    layer: str
    package: NormalizedName
    version: str
    sha256: str
    reason: str
    others: tuple[str, ...] = ()  # files of the same version the pages list, with other hashes (``name sha256``)
    unread: bool = False


@dataclass(frozen=True)
class Located:
    files: tuple[LockedFile, ...]
    unlocated: tuple[Unlocated, ...]

    def urls(self) -> dict[str, list[LockedFile]]:
        """``{url: the records of it}``, each distinct URL once, in first-seen order."""
        by_url: dict[str, list[LockedFile]] = {}
        for item in self.files:
            if item.url is not None:
                by_url.setdefault(item.url, []).append(item)
        return by_url


def pages_for(header: Header, name: str) -> tuple[str, ...]:
    """The pages an install with ``header``'s sources reads for project ``name``: the index's
    project page, then each find-links page (URLs only: a find-links folder is local)."""
    pages = [project_url(header.index_url, name)] if header.index_url and "://" in header.index_url else []
    return (*pages, *(link for link in header.find_links if "://" in link))


def locate(lockset: LockSet, cells: Sequence[str], reader: PageReader, jobs: int = 8) -> Located:
    """The files of ``cells`` of ``lockset`` (main lock and layers); the pages layer hashes are
    looked up on are fetched ``jobs`` at once."""
    todo: list[tuple[CellLocks, str, Entry, Header]] = []
    files: list[LockedFile] = []
    for name in cells:
        cell = lockset.cells[name]
        pylock = {p.name: p for p in pylockfile.main_only(cell.pylock).packages} if cell.pylock is not None else {}
        for entry in cell.main.entries:
            package = pylock.get(entry.name)
            if package is not None:
                files += _from_pylock(cell, entry, package, cell.main.header)
            else:
                todo.append((cell, MAIN, entry, cell.main.header))
        for layer, lock in cell.layers.items():
            todo += [(cell, layer, entry, lock.header) for entry in lock.entries]
    wanted = sorted(
        {page for _, _, entry, header in todo if _registry(entry) for page in pages_for(header, entry.name)}
    )
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(reader.page, wanted))
    unlocated: list[Unlocated] = []
    for cell, layer, entry, header in todo:
        found, missing = _from_pages(cell.name, layer, entry, header, reader)
        files += found
        unlocated += missing
    return Located(tuple(files), tuple(unlocated))


def _registry(entry: Entry) -> bool:
    return entry.url is None and not entry.editable


def _version(entry: Entry) -> str:
    return str(entry.version) if entry.version is not None else ""


def _from_pylock(cell: CellLocks, entry: Entry, package: Package, header: Header) -> list[LockedFile]:
    """The artifacts of a main package (its pylock entry)."""
    pages = pages_for(header, entry.name) if entry.url is None else ()
    ids = publishers.of_package(package)
    out = []
    for _, artifact in pylockfile.artifacts(package):
        digest = artifact.hashes.get("sha256")
        if not digest:
            continue
        url = getattr(artifact, "url", None)
        path = getattr(artifact, "path", None)
        local = None
        if url is None and path:  # relative to the pylock's folder (PEP 751)
            local = posixpath.normpath(posixpath.join(posixpath.dirname(pylockfile.pylock_path(header.path)), path))
        out.append(
            LockedFile(
                cell=cell.name,
                layer=MAIN,
                package=entry.name,
                version=_version(entry) or str(package.version or ""),
                sha256=digest,
                filename=pylockfile.file_name(artifact),
                url=url,
                path=local,
                size=getattr(artifact, "size", None),
                pages=pages,
                identities=ids,
            )
        )
    return out


def _from_pages(
    cell: str, layer: str, entry: Entry, header: Header, reader: PageReader
) -> tuple[list[LockedFile], list[Unlocated]]:
    """A layer entry's files: its direct URL or local archive, else each hash found on the pages."""
    version = _version(entry)
    digests = [h.removeprefix("sha256:") for h in entry.hashes if h.startswith("sha256:")]
    if entry.url is not None:
        if entry.editable or not digests:
            return [], []  # a project folder or VCS checkout: nothing is downloaded by hash
        name = unquote(posixpath.basename(urlsplit(entry.url).path))
        if "://" in entry.url:
            url, path = entry.url, None
        elif is_local(entry.url):
            url, path = None, posixpath.normpath(entry.url)
        else:
            return [], []
        return [
            LockedFile(
                cell=cell, layer=layer, package=entry.name, version=version, sha256=d, filename=name, url=url, path=path
            )
            for d in digests
        ], []
    pages = pages_for(header, entry.name)
    found, missing = [], []
    for digest in digests:
        listed = next(((p, f) for p in map(reader.page, pages) if (f := p.by_sha256(digest)) is not None), None)
        if listed is None:
            others = tuple(
                f"{f.filename} {f.sha256}"
                for p in map(reader.page, pages)
                for f in p.files
                if f.sha256 and f.sha256 not in digests and _of_version(f.filename, entry)
            )
            reason = f"no page lists a file with sha256 {digest}: {_asked(pages, reader)}"
            if others:
                reason = f"the pages list {entry.name} {version} with other hashes only ({'; '.join(others)}); the lock has {digest}"
            missing.append(
                Unlocated(
                    cell=cell,
                    layer=layer,
                    package=entry.name,
                    version=version,
                    sha256=digest,
                    reason=reason,
                    others=others,
                    unread=any(reader.page(p).error for p in pages),
                )
            )
            continue
        _, file = listed
        found.append(
            LockedFile(
                cell=cell,
                layer=layer,
                package=entry.name,
                version=version,
                sha256=digest,
                filename=file.filename,
                url=file.url,
                size=file.size,
                pages=pages,
            )
        )
    return found, missing


def _of_version(filename: str, entry: Entry) -> bool:
    """Whether ``filename`` is a wheel or sdist of ``entry``'s project and version (packaging
    parses the name)."""
    parsed = file_name(filename)
    return parsed is not None and parsed.name == entry.name and parsed.version == entry.version


def _asked(pages: Iterable[str], reader: PageReader) -> str:
    shown = []
    for url in pages:
        page = reader.page(url)
        shown.append(f"{url} ({page.error})" if page.error else url)
    return ", ".join(shown) or "the layer names no page"
