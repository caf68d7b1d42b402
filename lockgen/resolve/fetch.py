"""Direct wheel URLs: pick the ones that fit a target, check them, pin them by sha256.

Choosing is pure (:func:`fitting`: wheel tags from the file name, via
``packaging.utils.parse_wheel_filename``, against the target's supported tags; CASES C09;
:func:`best`: the newest fitting version a specifier allows). :func:`sha256_of` downloads a kept
URL once with the one client (:mod:`lockgen.index.client`: mirrors, logins, bounds) and caches its
hash by canonical URL in ``.lockgen/downloads.json``, so later runs need no download; ``refresh``
(``--force``, ``--upgrade``) downloads again, so a file replaced under the same URL does not keep
its old hash (issue 8).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from lockgen.config import WORK
from lockgen.index.client import Client, HostError
from lockgen.index.files import Kind, artifact, filename_of
from lockgen.plan.mirror import Mirrors
from lockgen.plan.target import Target
from lockgen.runtime import bounded
from lockgen.runtime.credentials import realm
from lockgen.runtime.errors import LockgenError
from lockgen.runtime.keyed import table

__all__ = ["LOGIN_HINT", "FetchError", "best", "fitting", "sha256_of", "version_of"]

_CACHE = f"{WORK}/downloads.json"
_lock = threading.Lock()
#: Bytes a downloaded file may have (the largest CUDA wheels are ~4 GB).
MAX_DOWNLOAD = 16 * 1024**3

#: How to give a login, for "unauthorized" messages.
LOGIN_HINT = (
    "give a login as user:password@ or ${ENV_VAR} in the URL (its source, index-url or --mirror), "
    "or in a netrc file (~/.netrc, or the file NETRC names)"
)


class FetchError(LockgenError):
    """A wheel URL could not be downloaded. ``transient``: it may work another time (network,
    HTTP 5xx/429, or a refused login: HTTP 401/403, ``unauthorized``); else the server said it
    is not there."""

    exit_code = 1

    def __init__(self, message: str, transient: bool = True, unauthorized: bool = False):
        super().__init__(message)
        self.transient = transient or unauthorized
        self.unauthorized = unauthorized


def fitting(urls: Iterable[str], target: Target, name: str | None = None) -> tuple[list[str], list[str]]:
    """Split wheel URLs into ``(kept, notes)``: kept URLs have a tag the target supports (and the
    project ``name`` when given); each skipped URL gets a note saying why."""
    supported = target.supported_tags()
    kept, notes = [], []
    for url in urls:
        filename = filename_of(url)
        parsed = artifact(filename)
        if parsed is None or parsed.kind is not Kind.WHEEL:
            notes.append(f"{filename}: not a wheel file name")
            continue
        if name is not None and parsed.name != name:
            continue
        if parsed.tags & supported:
            kept.append(url)
        else:
            shown = ", ".join(sorted(str(t) for t in parsed.tags))
            notes.append(f"{filename}: tags {shown} do not fit {target.platform} {target.python_tag}")
    return kept, notes


def version_of(url: str) -> Version:
    """The version in a wheel URL's file name."""
    return parse_wheel_filename(filename_of(url))[1]


def best(kept: list[str], specifiers: Iterable[SpecifierSet] = ()) -> str | None:
    """The URL to pin among fitting ``kept`` ones: the newest version every specifier allows
    (the newest of all when none does: uv then names the conflict); the first listed among
    equals. None when ``kept`` is empty."""
    specs = list(specifiers)
    allowed = [u for u in kept if all(s.contains(version_of(u), prereleases=True) for s in specs)] or kept
    return max(allowed, key=version_of) if allowed else None


def sha256_of(
    root: Path, url: str, mirrors: Mirrors, refresh: bool = False, stop: threading.Event | None = None
) -> str:
    """Hex sha256 of the file at ``url`` (a canonical public URL, fetched from its mirror with
    the realm's login, else a netrc entry), cached by ``url``; ``refresh`` ignores the cache.

    Raises :class:`FetchError` naming the URL (never a login) when it cannot be downloaded;
    HTTP 401/403 is ``unauthorized``, saying which host refused and how to give a login.
    Raises :class:`~lockgen.runtime.errors.Interrupted` when ``stop`` is set during the download (Ctrl-C:
    a large wheel is not read to its end first).
    """
    cache_path = root / _CACHE
    with _lock:
        cache = _read(cache_path)
        if url in cache and not refresh:
            return cache[url]
    digest = hashlib.sha256()
    try:
        with Client(mirrors, timeout=60, max_body=MAX_DOWNLOAD, stop=stop) as client:
            reply = client.download(url, digest.update)
    except HostError as exc:
        raise FetchError(f"{url}: cannot download it ({exc.detail})") from None
    if reply.status in (401, 403):
        host = realm(mirrors.mirrored(url))
        raise FetchError(
            f"unauthorized: {host} answered HTTP {reply.status} for {url}; {LOGIN_HINT}", unauthorized=True
        ) from None
    if not reply.ok:
        raise FetchError(f"{url}: HTTP {reply.status}", transient=reply.status >= 500 or reply.status == 429)
    value = digest.hexdigest()
    with _lock:
        cache = _read(cache_path)
        cache[url] = value
        from lockgen.locks.store import work_folder, write_text

        work_folder(root)  # refused (exit 2) when it, or the cache in it, is a link
        write_text(cache_path, json.dumps(cache, indent=1, sort_keys=True) + "\n", _CACHE)
    return value


def _read(path: Path) -> dict[str, str]:
    """The download cache ``{url: hex sha256}`` (:func:`lockgen.runtime.bounded.read_cache`: a
    FIFO, a huge or deep file reads as none); an entry that is not a string reads as absent,
    never as a digest (``{"url": 5}`` is not the sha256 ``"5"``)."""
    return {k: v for k, v in table(bounded.read_cache(path)).items() if isinstance(v, str)}
