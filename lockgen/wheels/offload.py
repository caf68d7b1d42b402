"""Clang offload bundles: the AMD GPU targets of a ``.hip_fatbin`` section (ELF) or ``.hip_fat`` (PE).

Formats from clang's documentation (``clang/docs/ClangOffloadBundler.rst``) and its
``OffloadBundler.h`` (little-endian):

* a bundle: the 24-byte magic ``__CLANG_OFFLOAD_BUNDLE__``, ``u64`` number of entries, then per
  entry ``u64`` offset (from the bundle's start), ``u64`` size, ``u64`` length of the bundle
  entry ID, and the ID: ``<kind>-<triple>-<target id>``, e.g.
  ``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`` (the host entry is ``host-x86_64-unknown-linux-gnu-``);
* a compressed bundle: ``CCOB``, ``u16`` version, ``u16`` method, then for version 1 ``u32``
  uncompressed size; for version 2 ``u32`` total size and ``u32`` uncompressed size; for version 3
  ``u64`` and ``u64``; an 8-byte hash; then the bundle compressed with zlib or zstd (told apart by
  the stream's own magic).

A section holds one bundle per translation unit, padded; each is found by its magic.
"""

from __future__ import annotations

import mmap
import struct
import zlib

from lockgen.runtime.errors import LockgenError

__all__ = ["BUNDLE", "COMPRESSED", "OffloadError", "targets"]

BUNDLE = b"__CLANG_OFFLOAD_BUNDLE__"
COMPRESSED = b"CCOB"
_ZSTD = b"\x28\xb5\x2f\xfd"
_HEADER_BYTES = 1 << 20  # of a compressed bundle, only the start (its entry table) is decompressed
_GPU_KINDS = ("hip", "hipv4", "openmp", "hip-v4")


class OffloadError(LockgenError):
    """An offload bundle that cannot be read (truncated, an unknown compression)."""


def targets(data: bytes | mmap.mmap, start: int = 0, end: int | None = None) -> list[str]:
    """The AMD GPU target IDs of every bundle in ``data[start:end]`` (a section of a bytes or
    mmap buffer: nothing is copied): ``gfx942``, ``gfx90a:xnack-``, ``gfx11-generic``, in order,
    duplicates kept; host entries and other triples are skipped. Raises :class:`OffloadError`
    naming the offset of a bundle that cannot be read."""
    end = len(data) if end is None else end
    found: list[str] = []
    pos = start
    while True:
        hits = [p for p in (data.find(BUNDLE, pos, end), data.find(COMPRESSED, pos, end)) if p >= 0]
        if not hits:
            return found
        pos = min(hits)
        ids, stop = _bundle(data, pos, end) if data[pos : pos + 4] == BUNDLE[:4] else _compressed(data, pos, end)
        found += ids
        pos = max(stop, pos + 4)


def _bundle(data: bytes | mmap.mmap, start: int, limit: int) -> tuple[list[str], int]:
    """(GPU target IDs, end offset) of the plain bundle at ``start``."""
    try:
        (count,) = struct.unpack_from("<Q", data, start + 24)
        if count > 4096:
            raise OffloadError(f"offset {start}: an offload bundle of {count} entries")
        pos, end, ids = start + 32, start + 32, []
        for _ in range(count):
            if pos + 24 > limit:
                raise struct.error("past the end")
            offset, size, length = struct.unpack_from("<QQQ", data, pos)
            if length > 4096:
                raise OffloadError(f"offset {pos}: a bundle entry ID of {length} bytes")
            entry_id = bytes(data[pos + 24 : pos + 24 + length]).decode("ascii", "replace")
            pos += 24 + length
            end = max(end, pos, start + offset + size)
            kind, _, rest = entry_id.partition("-")
            triple, _, target = rest.partition("--")
            if kind in _GPU_KINDS and triple.startswith("amdgcn-amd-amdhsa") and target:
                ids.append(target)
    except struct.error:
        raise OffloadError(f"offset {start}: a truncated offload bundle") from None
    return ids, end


def _compressed(raw: bytes | mmap.mmap, start: int, limit: int) -> tuple[list[str], int]:
    try:
        version, _method = struct.unpack_from("<HH", raw, start + 4)
        if version == 1:
            (header, total) = 16, None
        elif version == 2:
            (total,) = struct.unpack_from("<I", raw, start + 8)
            header = 24
        elif version == 3:
            (total,) = struct.unpack_from("<Q", raw, start + 8)
            header = 32
        else:
            raise OffloadError(f"offset {start}: a compressed offload bundle of version {version}")
    except struct.error:
        raise OffloadError(f"offset {start}: a truncated compressed offload bundle") from None
    end = min(start + total, limit) if total else limit
    payload = bytes(raw[start + header : min(end, start + header + _HEADER_BYTES * 8)])
    head = _decompress(payload, start)
    if not head.startswith(BUNDLE):
        raise OffloadError(f"offset {start}: a compressed offload bundle that holds no bundle")
    ids, _ = _bundle(head, 0, len(head))
    return ids, end if total else start + header


def _decompress(payload: bytes, start: int) -> bytes:
    """The first :data:`_HEADER_BYTES` of a compressed bundle's payload (zlib: stdlib; zstd:
    the ``zstandard`` package)."""
    if payload.startswith(_ZSTD):
        import io

        import zstandard

        try:
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(payload)) as reader:
                return reader.read(_HEADER_BYTES)
        except zstandard.ZstdError as exc:
            raise OffloadError(f"offset {start}: a zstd offload bundle that does not decompress ({exc})") from None
    try:
        return zlib.decompressobj().decompress(payload, _HEADER_BYTES)
    except zlib.error as exc:
        raise OffloadError(f"offset {start}: a compressed offload bundle that does not decompress ({exc})") from None
