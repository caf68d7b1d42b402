"""Direct wheel URLs: pick the ones that fit a target, check them, pin them by sha256.

Choosing is pure (:func:`fitting`: wheel tags from the file name, via
``packaging.utils.parse_wheel_filename``, against the target's supported tags; CASES C09).
:func:`sha256_of` downloads a kept URL once with httpx (through the mirrors) and caches its hash
by URL in ``.lockgen/downloads.json``, so later runs need no download.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from lockgen.config import WORK
from lockgen.errors import LockgenError
from lockgen.plan.mirror import Mirrors
from lockgen.plan.target import Target

_CACHE = f"{WORK}/downloads.json"
_lock = threading.Lock()


class FetchError(LockgenError):
    """A wheel URL could not be downloaded; ``transient`` unless the server said it is not there."""

    exit_code = 1

    def __init__(self, message: str, transient: bool = True):
        super().__init__(message)
        self.transient = transient


def wheel_name(url: str) -> str:
    """The file name a URL points at, ``%2B`` decoded."""
    return unquote(PurePosixPath(urlsplit(url).path).name)


def fitting(urls: Iterable[str], target: Target, name: str | None = None) -> tuple[list[str], list[str]]:
    """Split wheel URLs into ``(kept, notes)``: kept URLs have a tag the target supports (and the
    project ``name`` when given); each skipped URL gets a note saying why."""
    supported = target.supported_tags()
    kept, notes = [], []
    for url in urls:
        filename = wheel_name(url)
        try:
            project, _, _, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename as exc:
            notes.append(f"{filename}: not a wheel file name ({exc})")
            continue
        if name is not None and project != name:
            continue
        if tags & supported:
            kept.append(url)
        else:
            shown = ", ".join(sorted(str(t) for t in tags))
            notes.append(f"{filename}: tags {shown} do not fit {target.platform} {target.python_tag}")
    return kept, notes


def sha256_of(root: Path, url: str, mirrors: Mirrors) -> str:
    """Hex sha256 of the file at ``url`` (fetched from its mirror), cached by canonical URL.

    Raises :class:`FetchError` naming the URL when it cannot be downloaded.
    """
    cache_path = root / _CACHE
    with _lock:
        cache = _read(cache_path)
        if url in cache:
            return cache[url]
    import httpx

    digest = hashlib.sha256()
    fetch = mirrors.fetch_url(url)
    try:
        with httpx.stream("GET", fetch, follow_redirects=True, timeout=60) as response:
            response.raise_for_status()
            for chunk in response.iter_bytes():
                digest.update(chunk)
    except httpx.HTTPStatusError as exc:
        status = exc.response.status_code
        raise FetchError(f"{url}: HTTP {status}", transient=status >= 500 or status == 429) from None
    except httpx.HTTPError as exc:
        raise FetchError(f"{url}: cannot download it ({type(exc).__name__}: {exc})") from None
    value = digest.hexdigest()
    with _lock:
        cache = _read(cache_path)
        cache[url] = value
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n")
    return value


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
