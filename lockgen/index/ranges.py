"""A remote file read by byte ranges, and a wheel's ``METADATA`` read that way.

:class:`RangeFile` is a read-only, seekable file over HTTP range requests (``Range: bytes=A-B``,
RFC 9110 section 14) through the one :class:`~lockgen.index.client.Client`, read ahead in
windows (``window`` bytes): ``zipfile`` reads the end-of-central-directory record and the central
directory, then the members it is asked for, and nothing else. A server that answers a range
request with the whole file (HTTP 200) is read from the start (bounded by the file's size), and
one whose size differs from the expected one is refused. Coverage reads GPU code this way
(:mod:`lockgen.wheels.remote`), and :func:`wheel_metadata` reads a wheel's core metadata when the
index serves no PEP 658 metadata file (the licenses and the SBOM; pip's ``--use-feature=fast-deps``
and uv read wheels the same way).

Errors: :class:`RangeError` (the host answered, but not with the bytes asked for) and
:class:`~lockgen.index.client.HostError` (no usable answer).
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from lockgen.index.client import Client, Failure, HostError
from lockgen.runtime.errors import LockgenError

__all__ = ["METADATA_WINDOW", "RangeError", "RangeFile", "size_of", "wheel_metadata"]

#: Bytes read ahead per request when only a wheel's metadata is wanted (its central directory
#: and one small member); coverage reads in larger windows.
METADATA_WINDOW = 256 * 1024
#: Bytes a ``METADATA`` member may have once inflated (the largest on PyPI are ~1 MB of README).
MAX_METADATA = 8 * 1024 * 1024


class RangeError(LockgenError):
    """The host did not send the bytes asked for (a size that differs, an HTTP error)."""

    exit_code = 1


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of ``url`` (canonical; ``size`` bytes) through ``client``."""

    def __init__(self, client: Client, url: str, size: int, window: int = METADATA_WINDOW) -> None:
        super().__init__()
        self.client, self.url, self.size, self.window = client, url, size, window
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
            self._fill(self.pos, max(len(view), self.window))
        offset = self.pos - self._start
        chunk = self._data[offset : offset + len(view)]
        view[: len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)

    def _fill(self, start: int, length: int) -> None:
        end = min(self.size, start + length) - 1
        reply = self.client.request("GET", self.url, {"Range": f"bytes={start}-{end}"}, max_body=max(self.size, 1))
        if reply.status == 200:  # no range support: the whole file
            if len(reply.body) != self.size:
                raise RangeError(f"{self.url}: the server sent {len(reply.body)} bytes; expected {self.size}")
            self._start, self._data = 0, reply.body
        elif reply.status == 206:
            self._start, self._data = start, reply.body
        else:
            raise RangeError(f"{self.url}: HTTP {reply.status} for bytes {start}-{end}")
        self.fetched += len(reply.body)
        if not self._start <= start < self._start + len(self._data):
            raise RangeError(f"{self.url}: the server did not send bytes {start}-{end}")


def size_of(client: Client, url: str) -> int:
    """The size of the file at ``url``: ``Content-Length`` of a ``HEAD`` answer, or the total of
    a ranged ``GET``'s ``Content-Range`` where ``HEAD`` is refused. Raises :class:`RangeError`."""
    reply = client.head(url)
    total = reply.headers.get("content-range", "").rpartition("/")[2]
    length = total if reply.status == 206 else reply.headers.get("content-length", "")
    if reply.status >= 400 or not length.isdigit():
        raise RangeError(f"{url}: cannot tell its size (HTTP {reply.status})")
    return int(length)


def wheel_metadata(client: Client, url: str, size: int | None = None) -> tuple[bytes, int]:
    """``(METADATA bytes, bytes fetched)`` of the wheel at ``url`` (``size`` when the lock or
    the page gives it, else asked): the zip's central directory, then the one member
    ``<name>-<version>.dist-info/METADATA`` (the binary distribution format). Raises
    :class:`RangeError` (not a wheel, no such member, a member over :data:`MAX_METADATA`) and
    :class:`~lockgen.index.client.HostError`."""
    if size is None:
        size = size_of(client, url)
    raw = RangeFile(client, url, size)
    try:
        with zipfile.ZipFile(io.BufferedReader(raw, buffer_size=64 * 1024)) as archive:
            members = [
                i
                for i in archive.infolist()
                if i.filename.count("/") == 1 and i.filename.endswith(".dist-info/METADATA")
            ]
            if len(members) != 1:
                raise RangeError(f"{url}: {len(members)} .dist-info/METADATA members (one expected)")
            if members[0].file_size > MAX_METADATA:
                raise RangeError(f"{url}: its METADATA has {members[0].file_size} bytes, over {MAX_METADATA}")
            with archive.open(members[0]) as member:
                data = member.read(MAX_METADATA + 1)
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise RangeError(f"{url}: not a readable wheel ({exc})") from None
    if len(data) > MAX_METADATA:
        raise HostError(Failure.TOO_LARGE, url, f"its METADATA is over {MAX_METADATA} bytes")
    return data, raw.fetched
