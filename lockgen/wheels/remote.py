"""A wheel's GPU code read over HTTP without downloading the wheel, cached by sha256.

:class:`~lockgen.index.ranges.RangeFile` (range requests through the one client) is read ahead
in windows of 16 MiB: ``zipfile`` reads the end-of-central-directory
record and the central directory (a few hundred KB for torch), then each shared object's local
header and compressed bytes, and nothing else. Members without GPU code are skipped after their
first 4 bytes; for torch that is ~350 MB of a 530 MB wheel, read once per sha256 in a
lifetime of the cache. A server that answers a range request with the whole file (HTTP 200) is
read from the start, and one whose size differs from the lock's is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from lockgen.index.client import Client, Failure, HostError
from lockgen.index.ranges import RangeError, RangeFile, size_of
from lockgen.runtime import bounded
from lockgen.wheels.coverage import Code, CoverageError, scan_wheel

__all__ = ["READER", "cached", "read_local", "read_remote", "read_verified", "store"]

#: Version of the reading: a cache entry of another version is read again (3: the code grouped
#: by the GPU runtimes its objects are linked against, ``linked``, and the ones shipped, ``bundles``).
READER = 3
_WINDOW = 16 * 1024 * 1024


def cached(cache: Path, sha256: str) -> Code | None:
    """The cached code of the wheel ``sha256`` (``<cache>/<sha256>.json``), or None."""
    data = bounded.read_cache(cache / f"{sha256}.json")
    if not isinstance(data, dict) or data.get("reader") != READER or data.get("sha256") != sha256:
        return None
    try:
        return Code.from_dict(data)
    except ValueError:  # a record of another shape: the wheel is read again
        return None


def store(cache: Path, sha256: str, code: Code) -> None:
    """Write the code of the wheel ``sha256`` to the cache (atomically: a temporary file renamed)."""
    cache.mkdir(parents=True, exist_ok=True)
    temporary = cache / f".{sha256}.{os.getpid()}.tmp"
    temporary.write_text(json.dumps({"reader": READER, "sha256": sha256, **code.to_dict()}, indent=1) + "\n")
    os.replace(temporary, cache / f"{sha256}.json")


def read_local(path: Path, sha256: str, work: Path | None = None) -> Code:
    """The code of a local wheel, after checking its sha256 (it is cheap to read here)."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
        if digest.hexdigest() != sha256:
            raise CoverageError(f"{path.name}: its sha256 is not the lock's")
        file.seek(0)
        return scan_wheel(file, work)


def read_remote(client: Client, url: str, size: int | None, work: Path | None = None,
                progress: Callable[[int], None] | None = None) -> tuple[Code, int]:  # fmt: skip
    """(the code, bytes fetched) of the wheel at the canonical ``url`` whose lock records ``size``
    bytes (None: the index gave none; then the host is asked), read with range requests
    (:class:`~lockgen.index.ranges.RangeFile`). Raises :class:`CoverageError`."""
    try:
        if size is None:
            size = size_of(client, url)
        raw = RangeFile(client, url, size, window=_WINDOW)
        with io.BufferedReader(raw, buffer_size=1 << 20) as file:
            code = scan_wheel(file, work)
    except (HostError, RangeError) as exc:
        raise CoverageError(f"cannot read the wheel ({exc})") from None
    if progress is not None:
        progress(raw.fetched)
    return code, raw.fetched


_MAX_WHEEL = 8 * 1024**3  # bytes of a whole download (a page without hashes): larger is refused


def read_verified(client: Client, url: str, work: Path | None = None) -> tuple[str, Code, int]:
    """(sha256, code, bytes fetched) of the wheel at ``url`` downloaded whole: a page that lists
    it without a hash (a find-links page) cannot say which locked artifact it is until it is
    hashed. Raises :class:`CoverageError` for HTTP errors, a file over 8 GiB and a broken wheel."""
    digest = hashlib.sha256()
    with tempfile.TemporaryFile(dir=work) as copy:

        def sink(block: bytes) -> None:
            digest.update(block)
            copy.write(block)

        try:
            reply = client.download(url, sink, max_body=_MAX_WHEEL)
        except HostError as exc:
            if exc.kind is Failure.TOO_LARGE:
                raise CoverageError(f"the wheel is larger than {_MAX_WHEEL // 1024**3} GiB") from None
            raise CoverageError(f"cannot download the wheel ({exc})") from None
        if not reply.ok:
            raise CoverageError(f"cannot download the wheel (HTTP {reply.status})")
        fetched = copy.tell()
        sha256 = digest.hexdigest()
        copy.seek(0)
        return sha256, scan_wheel(copy, work), fetched
