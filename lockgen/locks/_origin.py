"""Where a locked package comes from and which version it is, for :mod:`lockgen.locks.diff`.

Pure functions of the lock model (:class:`~lockgen.locks.lock.Entry`, its lock's header) and the
cell's ``pylock.toml`` package, if any:

* :func:`version`: the entry's pin; for a direct URL, the pylock's version or the version in
  the file name (``packaging.utils`` parses it);
* :func:`sources`: the places it came from, as ``host/folder`` strings without scheme or
  credentials: the pylock's ``index`` and the folders of its artifacts' URLs (content-addressed
  storage such as PyPI's ``/packages/4e/3c/<blake2b>/`` collapsed to ``/packages``); a direct
  URL's folder; or, without a pylock (layers), the lock's ``index-url`` and ``find-links``;
* :func:`vcs`: ``(repository, commit)`` of a ``git+…@<commit>`` entry;
* :func:`files`: ``{file name: sha256}`` of the pylock's artifacts (to say which file's hash
  changed).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit

from packaging.pylock import Package
from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

from lockgen.locks.lock import Entry, Header
from lockgen.locks.pylockfile import artifacts, file_name

__all__ = ["exact", "files", "place", "sources", "unversioned", "vcs", "version"]

VCS_SCHEMES = ("git+", "hg+", "svn+", "bzr+")
_DIGEST = re.compile(r"^[0-9a-fA-F]{32,}$")
_SHORT_HEX = re.compile(r"^[0-9a-fA-F]{1,4}$")


def version(entry: Entry, package: Package | None) -> Version | None:
    """The version locked for ``entry``: its ``==`` pin, else (a direct URL) the pylock package's
    version, else the version in the URL's wheel or sdist file name; None when none says."""
    if entry.version is not None:
        return entry.version
    if package is not None and package.version is not None:
        return package.version
    if entry.url is None or entry.url.startswith(VCS_SCHEMES) or entry.editable:
        return None
    name = unquote(posixpath.basename(urlsplit(entry.url).path))
    try:
        if name.endswith(".whl"):
            return parse_wheel_filename(name)[1]
        return parse_sdist_filename(name)[1]
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None


def vcs(entry: Entry) -> tuple[str, str] | None:
    """``(repository, commit)`` of a VCS entry (``git+https://host/repo@<commit>``): repository
    without credentials or fragment, commit "" when none is named; None for any other entry."""
    if entry.url is None or not entry.url.startswith(VCS_SCHEMES):
        return None
    parts = urlsplit(entry.url)
    path, at, commit = parts.path.rpartition("@")
    if not at:
        path, commit = parts.path, ""
    return f"{parts.scheme}://{_host(parts.hostname, parts.port)}{path}", commit


def sources(entry: Entry, header: Header, package: Package | None) -> frozenset[str]:
    """Where ``entry`` of the lock with ``header`` comes from (see the module docstring).
    ``package`` is its pylock package, or None to judge by the lock alone."""
    if entry.url is not None:
        repo = vcs(entry)
        if repo is not None:
            return frozenset({repo[0]})
        return frozenset({folder(entry.url)})
    found: set[str] = set()
    if package is not None:
        if package.index:
            found.add(place(package.index))
        for _, artifact in artifacts(package):
            where = artifact.url or artifact.path
            if where:
                found.add(folder(where))
        if found:
            return frozenset(found)
    if header.index_url:
        found.add(place(header.index_url))
    found.update(place(link) for link in header.find_links)
    return frozenset(found)


def exact(entry: Entry, package: Package | None) -> bool:
    """Whether :func:`sources` of ``entry`` names where its files are (a direct URL, or a pylock
    package with an index or artifact URLs), not only the pages its lock's header lists."""
    if entry.url is not None:
        return True
    if package is None:
        return False
    return bool(package.index) or any(a.url or a.path for _, a in artifacts(package))


def unversioned(places: Iterable[str], version: Version | None) -> frozenset[str]:
    """:func:`sources` strings with each path segment that names ``version`` (its public part:
    ``v2.6.3``, ``2.6.3``, ``flash-attn-2.6.3``) written ``{version}``, and a segment that is its
    local label (pytorch's ``/whl/cu130`` of ``+cu130``) ``{label}``: what must stay the same
    when a version moves (a release folder named after the version moves with it; any other
    change of place is a change of source, on one host or not: issue 16, two repositories of one
    Artifactory host are two sources)."""
    if version is None:
        return frozenset(places)
    named = re.compile(rf"(?<![0-9.]){re.escape(version.public)}(?![0-9]|\.[0-9])")  # 2.6.3, not 12.6.3 or 2.6.30
    found = set()
    for place in places:
        head, sep, path = place.partition("/")
        segments = [_unversioned(s, named, version.local) for s in path.split("/")] if sep else []
        found.add("/".join([head, *segments]))
    return frozenset(found)


def _unversioned(segment: str, named: re.Pattern[str], label: str | None) -> str:
    if named.search(segment):
        return "{version}"
    return "{label}" if label and segment == label else segment


def files(package: Package | None) -> Mapping[str, str]:
    """``{file name: sha256}`` of a pylock package's artifacts (empty without one)."""
    if package is None:
        return {}
    return {file_name(a): str(a.hashes.get("sha256", "")) for _, a in artifacts(package)}


def place(url: str) -> str:
    """A URL or path as a short, credential-free place: ``pypi.org/simple``,
    ``download.pytorch.org/whl/cu130``, ``file:/srv/wheels``, ``../wheels``."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.hostname:
        return f"{_host(parts.hostname, parts.port)}{parts.path}".rstrip("/")
    if parts.scheme == "file":
        return f"file:{unquote(parts.path)}".rstrip("/")
    if parts.scheme and parts.hostname:  # another scheme: keep it, drop credentials
        return f"{parts.scheme}://{_host(parts.hostname, parts.port)}{parts.path}".rstrip("/")
    return url.rstrip("/") or "."


def folder(url: str) -> str:
    """:func:`place` of the folder holding the file at ``url``, content-addressed storage
    segments (a long hex digest and the short hex folders before it) cut off."""
    parts = urlsplit(url)
    segments = posixpath.dirname(parts.path).split("/")
    cut = next((i for i, s in enumerate(segments) if _DIGEST.match(s)), None)
    if cut is not None:
        segments = segments[:cut]
        while segments and _SHORT_HEX.match(segments[-1]):
            segments.pop()
    return place(parts._replace(path="/".join(segments), query="", fragment="").geturl() or ".")


def _host(hostname: str | None, port: int | None) -> str:
    return f"{hostname or ''}{f':{port}' if port else ''}"
