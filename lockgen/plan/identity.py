"""Source identity: which configured place a locked package came from (issue 16, item 1).

A place is judged by its canonical URL *prefix*, after mirror mapping, never by its host:
Artifactory, Nexus, GitLab and CodeArtifact serve many repositories from one host, so the default
index ``https://art.corp/api/pypi/pypi/simple`` and a backend index
``https://art.corp/api/pypi/pytorch-cu130/simple`` are two sources that share a host. Which index
(or find-links page) served a package is what uv says in its ``# from <index URL>`` annotation
(``uv pip compile --emit-index-annotation``, read by the lock model into ``Entry.index``); a file
URL alone does not say it (PyPI's files live on another host than its index, pytorch's shared
files beside its per-flavour folders).

Pure functions of strings: :func:`normalized` spells a URL prefix one way (scheme and host
lower-case, default port and trailing slash dropped), :func:`same` and :func:`under` compare such
prefixes at path-segment boundaries, :func:`project_path` turns uv's ``file://`` annotation of a
local folder into the project-relative folder the config names.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["normalized", "project_path", "same", "under"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalized(url: str) -> str:
    """``url`` spelled one way: scheme and host lower-case, no login, no default port, no
    trailing slash; a project-relative folder (``./wheels/``) as a normalized relative path.
    Query and fragment are kept."""
    if "://" not in url:
        return posixpath.normpath(url.rstrip("/") or ".")
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port if parts.port and parts.port != _DEFAULT_PORTS.get(parts.scheme.lower()) else None
    netloc = host + (f":{port}" if port else "")
    path = parts.path.rstrip("/")
    rest = (f"?{parts.query}" if parts.query else "") + (f"#{parts.fragment}" if parts.fragment else "")
    return f"{parts.scheme.lower()}://{netloc}{path}{rest}"


def same(a: str, b: str) -> bool:
    """Whether two URL prefixes (or project folders) name the same place (:func:`normalized`)."""
    return normalized(a) == normalized(b)


def under(url: str, prefix: str) -> bool:
    """Whether ``url`` is ``prefix`` or lies below it at a path-segment boundary
    (``…/whl/cu130/torch-….whl`` is under ``…/whl/cu130``; ``…/whl/cu1300/…`` is not; a
    ``%2B`` in either is read as ``+``)."""
    a, b = unquote(normalized(url)), unquote(normalized(prefix))
    return a == b or (a.startswith(b) and a[len(b)] in "/?#")


def project_path(url: str, root: Path) -> str:
    """``url`` as the config names it: a ``file://`` URL of a folder inside the project ``root``
    as its project-relative POSIX path (``wheels/spark``); any other URL unchanged."""
    if not url.startswith("file://"):
        return url
    path = Path(unquote(urlsplit(url).path))
    try:
        return path.resolve().relative_to(root.resolve()).as_posix() or "."
    except (ValueError, OSError):
        return url
