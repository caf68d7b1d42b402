"""Where the GPU code is in a shared object: the sections of an ELF file (``pyelftools``) or a PE
DLL (``pefile``), as (offset, size) in the file, so the readers work on an mmap of it unchanged.

Section names: ``.nv_fatbin`` (nvcc, ELF), ``.nv_fatb`` (nvcc on Windows: PE section names have 8
characters), ``.hip_fatbin`` (hipcc/clang, ELF) and ``.hip_fat`` (PE).
"""

from __future__ import annotations

import io
import mmap
from dataclasses import dataclass
from typing import IO, cast

from lockgen.runtime.errors import LockgenError

__all__ = ["CUDA_SECTIONS", "ROCM_SECTIONS", "BinaryError", "Section", "gpu_sections", "kind"]

CUDA_SECTIONS = (".nv_fatbin", ".nv_fatb")
ROCM_SECTIONS = (".hip_fatbin", ".hip_fat")


class BinaryError(LockgenError):
    """A file that claims to be ELF or PE but whose headers cannot be read."""


@dataclass(frozen=True)
class Section:
    """A section's ``name`` and its bytes' place in the file: ``offset``, ``size``."""

    name: str
    offset: int
    size: int


def kind(head: bytes) -> str | None:
    """``elf``, ``pe`` or None from a file's first bytes (``\\x7fELF``, ``MZ``)."""
    if head.startswith(b"\x7fELF"):
        return "elf"
    if head.startswith(b"MZ"):
        return "pe"
    return None


def gpu_sections(data: bytes | mmap.mmap) -> list[Section]:
    """The GPU code sections of the ELF or PE file ``data`` (:data:`CUDA_SECTIONS`,
    :data:`ROCM_SECTIONS`); ``[]`` for another kind of file. Raises :class:`BinaryError` for
    headers that point outside the file."""
    found = kind(bytes(data[:4]))
    sections = _elf(data) if found == "elf" else _pe(data) if found == "pe" else []
    wanted = [s for s in sections if s.name in CUDA_SECTIONS + ROCM_SECTIONS and s.size]
    for section in wanted:
        if section.offset < 0 or section.offset + section.size > len(data):
            raise BinaryError(f"section {section.name} runs past the end of the file")
    return wanted


def _elf(data: bytes | mmap.mmap) -> list[Section]:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(cast("IO[bytes]", io.BytesIO(data) if isinstance(data, bytes) else data))
        return [
            Section(section.name, section["sh_offset"], section["sh_size"])
            for section in elf.iter_sections()
            if section["sh_type"] != "SHT_NOBITS"
        ]
    except ELFError as exc:
        raise BinaryError(f"not a readable ELF file ({exc})") from None
    except Exception as exc:  # pyelftools' own construct errors, struct and value errors for broken headers
        raise BinaryError(f"not a readable ELF file ({type(exc).__name__}: {exc})") from None


def _pe(data: bytes | mmap.mmap) -> list[Section]:
    import pefile

    try:
        pe = pefile.PE(data=data, fast_load=True)
        return [
            Section(section.Name.rstrip(b"\0").decode("ascii", "replace"), section.PointerToRawData,
                    min(section.SizeOfRawData, section.Misc_VirtualSize or section.SizeOfRawData))
            for section in pe.sections
        ]  # fmt: skip
    except pefile.PEFormatError as exc:
        raise BinaryError(f"not a readable PE file ({exc})") from None
    except Exception as exc:  # pefile's struct and value errors for broken headers
        raise BinaryError(f"not a readable PE file ({type(exc).__name__}: {exc})") from None
