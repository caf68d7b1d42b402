"""A wheel's GPU code read over HTTP without downloading the wheel, cached by sha256.

:class:`RangeFile` is a seekable file over HTTP range requests (``Range: bytes=A-B``, RFC 9110
section 14), read ahead in windows of 16 MiB: ``zipfile`` reads the end-of-central-directory
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
from typing import Any

from lockgen.runtime import bounded
from lockgen.wheels.coverage import Code, CoverageError, scan_wheel

__all__ = ["READER", "RangeFile", "cached", "read_local", "read_remote", "read_verified", "store"]

#: Version of the reading: a cache entry of another version is read again (3: the code grouped
#: by the GPU runtimes its objects are linked against, ``linked``, and the ones shipped, ``bundles``).
READER = 3
_WINDOW = 16 * 1024 * 1024


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of ``url`` (``size`` bytes) through ``client`` (httpx)."""

    def __init__(self, client: Any, url: str, size: int) -> None:
        super().__init__()
        self.client, self.url, self.size = client, url, size
        self.pos = 0
        self.fetched = 0  # bytes received, for the reports and the tests
        self._start, self._data = 0, b""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = {io.SEEK_SET: offset, io.SEEK_CUR: self.pos + offset, io.SEEK_END: self.size + offset}[whence]
        return self.pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self.pos >= self.size or not len(view):
            return 0
        if not self._start <= self.pos < self._start + len(self._data):
            self._fill(self.pos, max(len(view), _WINDOW))
        offset = self.pos - self._start
        chunk = self._data[offset : offset + len(view)]
        view[: len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)

    def _fill(self, start: int, length: int) -> None:
        import httpx

        end = min(self.size, start + length) - 1
        try:
            response = self.client.get(self.url, headers={"Range": f"bytes={start}-{end}"})
            response.raise_for_status()
        except httpx.HTTPError as exc:
            raise CoverageError(f"cannot read the wheel ({type(exc).__name__}: {exc})") from None
        data = response.content
        if response.status_code == 200:  # no range support: the whole file
            if len(data) != self.size:
                raise CoverageError(f"the server sent {len(data)} bytes; the lock says the wheel has {self.size}")
            self._start, self._data = 0, data
        else:
            self._start, self._data = start, data
        self.fetched += len(data)
        if not self._start <= start < self._start + len(self._data):
            raise CoverageError(f"the server did not send bytes {start}-{end} of the wheel")


def _remote_size(client: Any, url: str) -> int:
    import httpx

    try:
        response = client.head(url)
        response.raise_for_status()
        return int(response.headers["content-length"])
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        raise CoverageError(f"cannot tell the wheel's size ({type(exc).__name__}: {exc})") from None


def cached(cache: Path, sha256: str) -> Code | None:
    """The cached code of the wheel ``sha256`` (``<cache>/<sha256>.json``), or None."""
    data = bounded.read_cache(cache / f"{sha256}.json")
    if not isinstance(data, dict) or data.get("reader") != READER or data.get("sha256") != sha256:
        return None
    return Code.from_dict(data)


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


def read_remote(client: Any, url: str, size: int | None, work: Path | None = None,
                progress: Callable[[int], None] | None = None) -> tuple[Code, int]:  # fmt: skip
    """(the code, bytes fetched) of the wheel at ``url`` whose lock records ``size`` bytes (None:
    the index gave none; then a HEAD request's ``Content-Length``), read with range requests
    (:class:`RangeFile`). Raises :class:`CoverageError`."""
    if size is None:
        size = _remote_size(client, url)
    raw = RangeFile(client, url, size)
    with io.BufferedReader(raw, buffer_size=1 << 20) as file:
        code = scan_wheel(file, work)
    if progress is not None:
        progress(raw.fetched)
    return code, raw.fetched


_MAX_WHEEL = 8 * 1024**3  # bytes of a whole download (a page without hashes): larger is refused


def read_verified(client: Any, url: str, work: Path | None = None) -> tuple[str, Code, int]:
    """(sha256, code, bytes fetched) of the wheel at ``url`` downloaded whole: a page that lists
    it without a hash (a find-links page) cannot say which locked artifact it is until it is
    hashed. Raises :class:`CoverageError` for HTTP errors, a file over 8 GiB and a broken wheel."""
    import httpx

    digest = hashlib.sha256()
    fetched = 0
    with tempfile.TemporaryFile(dir=work) as copy:
        try:
            with client.stream("GET", url) as response:
                response.raise_for_status()
                for block in response.iter_bytes(1 << 20):
                    fetched += len(block)
                    if fetched > _MAX_WHEEL:
                        raise CoverageError(f"the wheel is larger than {_MAX_WHEEL // 1024**3} GiB")
                    digest.update(block)
                    copy.write(block)
        except httpx.HTTPError as exc:
            raise CoverageError(f"cannot download the wheel ({type(exc).__name__}: {exc})") from None
        sha256 = digest.hexdigest()
        copy.seek(0)
        return sha256, scan_wheel(copy, work), fetched
