"""The GPU code one wheel carries: every shared object in it (``.so``, ``.so.N``, ``.dll``,
``.pyd``), its CUDA fat binaries and clang offload bundles, as sorted code names.

A member is inflated into a temporary file and mapped (``mmap``): a 470 MB ``libtorch_cuda.so``
is never held in memory, and only its sections' headers are parsed. The wheel comes as any
seekable binary file: a local file, or :class:`lockgen.wheels.remote.RangeFile` over HTTP.
"""

from __future__ import annotations

import mmap
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lockgen.runtime.errors import LockgenError
from lockgen.wheels import fatbin, offload
from lockgen.wheels.binaries import CUDA_SECTIONS, BinaryError, gpu_sections, kind

__all__ = ["Code", "CoverageError", "is_shared_object", "scan_binary", "scan_wheel"]

_SHARED = re.compile(r"[^/]+\.(?:so(?:\.\d+)*|dll|pyd)")
_MAX_MEMBER = 8 * 1024**3  # bytes: a larger member is refused, not inflated
_CODE_ORDER = re.compile(r"(?:sm|compute)_(\d+)([af]?)")


class CoverageError(LockgenError):
    """A wheel whose GPU code cannot be read: not a zip, a broken shared object."""


@dataclass(frozen=True)
class Code:
    """GPU code names: ``sass`` (``sm_86``), ``ptx`` (``compute_90``), ``gfx`` (``gfx942``),
    each sorted (by architecture number, then variant) without duplicates."""

    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    gfx: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.sass or self.ptx or self.gfx)

    def union(self, other: Code) -> Code:
        return Code.of((*self.sass, *other.sass), (*self.ptx, *other.ptx), (*self.gfx, *other.gfx))

    @classmethod
    def of(cls, sass: Iterable[str] = (), ptx: Iterable[str] = (), gfx: Iterable[str] = ()) -> Code:
        return cls(tuple(sorted(set(sass), key=_order)), tuple(sorted(set(ptx), key=_order)),
                   tuple(sorted(set(gfx), key=_gfx_order)))  # fmt: skip

    def to_dict(self) -> dict[str, list[str]]:
        return {"sass": list(self.sass), "ptx": list(self.ptx), "gfx": list(self.gfx)}

    @classmethod
    def from_dict(cls, data: Any) -> Code:
        return cls.of(*(data.get(key, []) for key in ("sass", "ptx", "gfx")))


def _order(name: str) -> tuple[int, str]:
    match = _CODE_ORDER.fullmatch(name)
    return (int(match.group(1)), match.group(2)) if match else (10**6, name)


def _gfx_order(name: str) -> tuple[int, str]:
    match = re.match(r"gfx(\d+)", name)
    return (len(match.group(1)), name) if match else (99, name)


def is_shared_object(name: str) -> bool:
    """Whether a wheel member's name is a shared object's (``torch/lib/libc10_cuda.so``,
    ``libfoo.so.12``, ``_C.pyd``, ``cudart64_12.dll``)."""
    return bool(_SHARED.fullmatch(name.rsplit("/", 1)[-1]))


def scan_binary(data: bytes | mmap.mmap) -> Code:
    """The GPU code of one ELF or PE file (union over its containers and bundles; ``Code()`` for
    a file without any). Raises :class:`CoverageError` for a broken section or header."""
    sass: list[str] = []
    ptx: list[str] = []
    gfx: list[str] = []
    try:
        for section in gpu_sections(data):
            end = section.offset + section.size
            if section.name in CUDA_SECTIONS:
                for entry in fatbin.entries(data, section.offset, end):
                    (sass if entry.kind == "sass" else ptx).append(entry.name)
            else:
                gfx += offload.targets(data, section.offset, end)
    except (BinaryError, fatbin.FatbinError, offload.OffloadError) as exc:
        raise CoverageError(str(exc)) from None
    return Code.of(sass, ptx, gfx)


def scan_wheel(file: IO[bytes], work: Path | None = None) -> Code:
    """The GPU code of every shared object in the wheel ``file`` (seekable, binary). Members that
    do not start like ELF or PE are skipped after their first bytes. ``work``: the folder for the
    temporary copy of a member (default: the system's). Raises :class:`CoverageError` naming the
    member (a CRC mismatch too: ``zipfile`` checks each member it reads to its end)."""
    code = Code()
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CoverageError(f"not a wheel (zip): {exc}") from None
    with archive:
        for info in archive.infolist():
            if info.is_dir() or not is_shared_object(info.filename):
                continue
            if info.file_size > _MAX_MEMBER:
                raise CoverageError(f"{info.filename}: {info.file_size} bytes, larger than lockgen reads")
            try:
                code = code.union(_scan_member(archive, info, work))
            except CoverageError as exc:
                raise CoverageError(f"{info.filename}: {exc}") from None
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                raise CoverageError(f"{info.filename}: cannot read it from the wheel ({exc})") from None
    return code


def _scan_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, work: Path | None) -> Code:
    with archive.open(info) as member:
        head = member.read(4)
        if kind(head) is None or info.file_size < 64:
            return Code()
        with tempfile.TemporaryFile(dir=work) as copy:
            copy.write(head)
            shutil.copyfileobj(member, copy, 8 * 1024 * 1024)
            copy.flush()
            with mmap.mmap(copy.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                return scan_binary(mapped)
