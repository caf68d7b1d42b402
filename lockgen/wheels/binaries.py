"""Where the GPU code is in a shared object: the sections of an ELF file (``pyelftools``) or a PE
DLL (``pefile``), as (offset, size) in the file, so the readers work on an mmap of it unchanged.

Section names: ``.nv_fatbin`` (nvcc, ELF), ``.nv_fatb`` (nvcc on Windows: PE section names have 8
characters), ``.hip_fatbin`` (hipcc/clang, ELF) and ``.hip_fat`` (PE).

:func:`needed` lists the shared libraries a file is linked against: the ELF dynamic section's
``DT_NEEDED`` entries, a PE file's import directory (DLL names). Of those, :func:`gpu_runtime`
keeps the GPU runtimes whose major is in the name (``libcudart.so.12``, ``cudart64_12.dll``,
``libamdhip64.so.6``, ``amdhip64_6.dll``): code linked against CUDA 12's runtime cannot load where
only CUDA 13's is installed (docs/select.md, "Code that cannot load").
"""

from __future__ import annotations

import io
import mmap
import re
from dataclasses import dataclass
from typing import IO, cast

from lockgen.runtime.errors import LockgenError

__all__ = ["CUDA_SECTIONS", "ROCM_SECTIONS", "BinaryError", "Section", "gpu_runtime", "gpu_sections", "kind", "needed"]

CUDA_SECTIONS = (".nv_fatbin", ".nv_fatb")
ROCM_SECTIONS = (".hip_fatbin", ".hip_fat")
#: GPU runtime libraries by file name, with the major version in the name (a file in a wheel may
#: carry the full version: ``libcudart.so.12.4.127``): group 1 is the soname's stem.
_RUNTIME = re.compile(
    r"((?:libcudart|libamdhip64)\.so\.\d{1,3})(?:\.\d{1,6}){0,3}|((?:cudart64|amdhip64)_\d{1,4}\.dll)"
)


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


def gpu_runtime(name: str) -> str | None:
    """The GPU runtime library a file name is (``libcudart.so.12.4.127`` -> ``libcudart.so.12``,
    ``CUDART64_12.DLL`` -> ``cudart64_12.dll``), or None for any other name."""
    match = _RUNTIME.fullmatch(name.lower())
    return None if match is None else match.group(1) or match.group(2)


def needed(data: bytes | mmap.mmap) -> list[str]:
    """The shared libraries the ELF or PE file ``data`` is linked against, in file order (``[]``
    for another kind of file or a file without a dynamic section or imports). Raises
    :class:`BinaryError` for headers that cannot be read."""
    found = kind(bytes(data[:4]))
    if found == "elf":
        return _elf_needed(data)
    if found == "pe":
        return _pe_imports(data)
    return []


def _elf_needed(data: bytes | mmap.mmap) -> list[str]:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(cast("IO[bytes]", io.BytesIO(data) if isinstance(data, bytes) else data))
        return [
            str(tag.needed)  # type: ignore[attr-defined]  # pyelftools sets it on DT_NEEDED tags
            for section in elf.iter_sections()
            if isinstance(section, DynamicSection)
            for tag in section.iter_tags()
            if tag.entry.d_tag == "DT_NEEDED"
        ][:4096]
    except Exception as exc:  # pyelftools' ELFError, construct and value errors for broken headers
        raise BinaryError(f"not a readable ELF file ({type(exc).__name__}: {exc})") from None


def _pe_imports(data: bytes | mmap.mmap) -> list[str]:
    import pefile

    try:
        pe = pefile.PE(data=data, fast_load=True)
        pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"]])
        entries = getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])
        return [entry.dll.decode("ascii", "replace") for entry in entries[:4096] if entry.dll]
    except Exception as exc:  # pefile's PEFormatError, struct and value errors for broken headers
        raise BinaryError(f"not a readable PE file ({type(exc).__name__}: {exc})") from None


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
