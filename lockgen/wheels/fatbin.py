"""NVIDIA fat binaries: the GPU code of a ``.nv_fatbin`` section (ELF) or ``.nv_fatb`` (PE).

A section holds one or more containers, one per translation unit, each possibly padded with zeros
to 8 bytes. Layout (little-endian; the ``fatBinaryHeader``/``fatBinData`` structures of the CUDA
toolkits' former ``fatbinary.h``, checked against ``nvcc`` 13.0 output: tests/data/cuda):

* container header, 16 bytes: ``u32 magic = 0xBA55ED50``, ``u16 version = 1``, ``u16 header
  size = 16``, ``u64 size`` of the entries that follow;
* entry, ``header size`` bytes (64, 80 or 112): ``u16 kind`` (1 PTX, 2 ELF cubin = SASS),
  ``u16 version``, ``u32 header size``, ``u64 padded payload size``, ..., at 28 ``u32 arch``
  (``86`` for sm_86), at 40 ``u64 flags``; the payload (possibly compressed) follows the header.
  Flag ``0x100000`` marks architecture-specific code (``sm_90a``), ``0x200000`` family-specific
  code (``sm_100f``), as nvcc 13.0 writes them.

Only headers are read; payloads are skipped by their sizes, never decompressed.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from lockgen.runtime.errors import LockgenError

__all__ = ["MAGIC", "FatbinEntry", "FatbinError", "entries"]

MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQ")
_ARCH_SPECIFIC, _FAMILY_SPECIFIC = 0x100000, 0x200000
_PTX, _CUBINS = 1, (2, 0x10)


class FatbinError(LockgenError):
    """A ``.nv_fatbin`` section that is not a sequence of fat binary containers."""


@dataclass(frozen=True, order=True)
class FatbinEntry:
    """One GPU code entry: ``kind`` ``sass`` or ``ptx``, ``arch`` as NVIDIA numbers it (86, 100,
    120), ``variant`` ``""``, ``"a"`` (architecture-specific) or ``"f"`` (family-specific)."""

    arch: int
    kind: str
    variant: str = ""

    @property
    def name(self) -> str:
        """``sm_86``, ``sm_90a``, ``compute_120``: the name nvcc's ``-gencode`` uses."""
        return f"{'sm' if self.kind == 'sass' else 'compute'}_{self.arch}{self.variant}"


def entries(data: bytes | memoryview | mmap.mmap, start: int = 0, end: int | None = None) -> list[FatbinEntry]:
    """The code entries of the fat binary section ``data[start:end]`` (nothing is copied), in
    order, duplicates kept (one per container).

    Raises :class:`FatbinError` with the byte offset for anything that is not containers and
    zero padding: a wrong magic or version, an entry or container running past its end.
    """
    with memoryview(data) as whole, whole[start : len(whole) if end is None else end] as view:
        return list(_walk(view))  # the views are released even when it raises (an mmap can then close)


def _walk(data: memoryview) -> Iterator[FatbinEntry]:
    pos, size = 0, len(data)
    while pos + 8 <= size:
        if data[pos : pos + 8] == b"\0" * 8:  # alignment between containers
            pos += 8
            continue
        if pos + _CONTAINER.size > size:
            raise FatbinError(f"offset {pos}: a truncated fat binary header")
        magic, version, header, length = _CONTAINER.unpack_from(data, pos)
        if magic != MAGIC or version != 1 or header < _CONTAINER.size:
            raise FatbinError(f"offset {pos}: not a fat binary container (magic {magic:#x}, version {version})")
        end = pos + header + length
        if end > size:
            raise FatbinError(f"offset {pos}: the container's {length} bytes run past the section's end")
        entry = pos + header
        while entry + 64 <= end:
            kind, _, entry_header, padded = _ENTRY.unpack_from(data, entry)
            (arch,) = struct.unpack_from("<I", data, entry + 28)
            (flags,) = struct.unpack_from("<Q", data, entry + 40)
            if entry_header < 64 or entry + entry_header + padded > end:
                raise FatbinError(f"offset {entry}: an entry runs past its container's end")
            variant = "a" if flags & _ARCH_SPECIFIC else "f" if flags & _FAMILY_SPECIFIC else ""
            if (kind == _PTX or kind in _CUBINS) and 10 <= arch < 1000:
                yield FatbinEntry(arch=arch, kind="ptx" if kind == _PTX else "sass", variant=variant)
            entry += entry_header + padded
        pos = end
