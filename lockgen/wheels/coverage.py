"""The GPU code one wheel carries: every shared object in it (``.so``, ``.so.N``, ``.dll``,
``.pyd``), its CUDA fat binaries and clang offload bundles, as sorted code names; grouped by the
GPU runtime libraries the objects are linked against and the wheel does not ship itself
(``linked``: ``libcudart.so.12``), next to the ones it ships (``bundles``).

A member is inflated into a temporary file and mapped (``mmap``): a 470 MB ``libtorch_cuda.so``
is never held in memory, and only its sections' headers are parsed. The wheel comes as any
seekable binary file: a local file, or :class:`lockgen.index.ranges.RangeFile` over HTTP.
"""

from __future__ import annotations

import mmap
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from lockgen.runtime.errors import LockgenError
from lockgen.wheels import fatbin, offload
from lockgen.wheels.binaries import CUDA_SECTIONS, BinaryError, gpu_runtime, gpu_sections, kind, needed

__all__ = ["Code", "CoverageError", "Linked", "is_shared_object", "scan_binary", "scan_wheel"]

_SHARED = re.compile(r"[^/]+\.(?:so(?:\.\d+)*|dll|pyd)")
_MAX_MEMBER = 8 * 1024**3  # bytes: a larger member is refused, not inflated
_CODE_ORDER = re.compile(r"(?:sm|compute)_(\d+)([af]?)")


class CoverageError(LockgenError):
    """A wheel whose GPU code cannot be read: not a zip, a broken shared object."""


@dataclass(frozen=True)
class Linked:
    """The GPU code of a wheel's shared objects that are linked against the same GPU runtime
    libraries (``needs``: :func:`lockgen.wheels.binaries.gpu_runtime` names the wheel does not
    ship, sorted; empty for objects linked against none). bitsandbytes ships one library per
    CUDA runtime and loads the one of torch's: only that group's code runs."""

    needs: tuple[str, ...]
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    gfx: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, list[str]]:
        return {"needs": list(self.needs), "sass": list(self.sass), "ptx": list(self.ptx), "gfx": list(self.gfx)}


@dataclass(frozen=True)
class Code:
    """GPU code names: ``sass`` (``sm_86``), ``ptx`` (``compute_90``), ``gfx`` (``gfx942``),
    each sorted (by architecture number, then variant) without duplicates: all the wheel
    carries; ``linked``: the same code grouped by the GPU runtimes its objects are linked
    against (:class:`Linked`, sorted by ``needs``); ``bundles``: the GPU runtime libraries the
    wheel ships itself (``cudart64_13.dll`` in torch's Windows wheel), sorted."""

    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    gfx: tuple[str, ...] = ()
    linked: tuple[Linked, ...] = ()
    bundles: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.sass or self.ptx or self.gfx)

    def union(self, other: Code) -> Code:
        return Code.of((*self.sass, *other.sass), (*self.ptx, *other.ptx), (*self.gfx, *other.gfx),
                       (*self.linked, *other.linked), (*self.bundles, *other.bundles))  # fmt: skip

    @classmethod
    def of(cls, sass: Iterable[str] = (), ptx: Iterable[str] = (), gfx: Iterable[str] = (),
           linked: Iterable[Linked] = (), bundles: Iterable[str] = ()) -> Code:  # fmt: skip
        groups: dict[tuple[str, ...], list[Linked]] = {}
        for group in linked:
            groups.setdefault(tuple(sorted(set(group.needs))), []).append(group)
        merged = tuple(
            Linked(
                needs,
                *_sorted(
                    [c for g in items for c in g.sass],
                    [c for g in items for c in g.ptx],
                    [c for g in items for c in g.gfx],
                ),
            )
            for needs, items in sorted(groups.items())
        )
        return cls(*_sorted(sass, ptx, gfx), merged, tuple(sorted(set(bundles))))

    def shipped(self) -> Code:
        """This code with each group's ``needs`` less what the wheel ``bundles`` (a wheel that
        ships its own ``libcudart.so.12`` loads anywhere)."""
        groups = [replace(g, needs=tuple(n for n in g.needs if n not in self.bundles)) for g in self.linked]
        return Code.of(self.sass, self.ptx, self.gfx, groups, self.bundles)

    def to_dict(self) -> dict[str, Any]:
        """Every field (the cache's form; the manifest's wheel records leave ``bundles`` out)."""
        return {"sass": list(self.sass), "ptx": list(self.ptx), "gfx": list(self.gfx),
                "linked": [g.to_dict() for g in self.linked], "bundles": list(self.bundles)}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Any) -> Code:
        """The code of a record :meth:`to_dict` wrote (the wheel-code cache) or a manifest's wheel
        record: each list key missing reads as empty. Both are read back from files anyone may
        change, so any other shape (``"sass": 5``, a group that is not an object, a name that is
        not a string) raises ``ValueError``, which the readers take as no record."""
        if not isinstance(data, Mapping):
            raise ValueError("a code record must be an object")
        groups = []
        for group in _array(data.get("linked", []), "linked"):
            if not isinstance(group, Mapping):
                raise ValueError("linked: each group must be an object")
            groups.append(Linked(*(_code_names(group, key) for key in ("needs", "sass", "ptx", "gfx"))))
        sass, ptx, gfx, bundles = (_code_names(data, key) for key in ("sass", "ptx", "gfx", "bundles"))
        return cls.of(sass, ptx, gfx, groups, bundles)


def _array(value: object, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{key}: must be an array")
    return value


def _code_names(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """``data[key]`` as code or library names (missing: none); ``ValueError`` for another shape."""
    value = _array(data.get(key, []), key)
    if not all(isinstance(name, str) for name in value):
        raise ValueError(f"{key}: must be an array of strings")
    return tuple(value)


def _sorted(
    sass: Iterable[str], ptx: Iterable[str], gfx: Iterable[str]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    return (
        tuple(sorted(set(sass), key=_order)),
        tuple(sorted(set(ptx), key=_order)),
        tuple(sorted(set(gfx), key=_gfx_order)),
    )


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
    a file without any), with the GPU runtimes it is linked against when it has code. Raises
    :class:`CoverageError` for a broken section or header."""
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
        runtimes = [r for r in map(gpu_runtime, needed(data)) if r] if sass or ptx or gfx else []
    except (BinaryError, fatbin.FatbinError, offload.OffloadError) as exc:
        raise CoverageError(str(exc)) from None
    group = [Linked(tuple(runtimes), tuple(sass), tuple(ptx), tuple(gfx))] if sass or ptx or gfx else []
    return Code.of(sass, ptx, gfx, group)


def scan_wheel(file: IO[bytes], work: Path | None = None) -> Code:
    """The GPU code of every shared object in the wheel ``file`` (seekable, binary), the groups'
    ``needs`` less the GPU runtimes the wheel ships (``bundles``: members named ``libcudart.so.N…``,
    ``cudart64_N.dll``, …). Members that do not start like ELF or PE are skipped after their
    first bytes. ``work``: the folder for the
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
            shipped = gpu_runtime(info.filename.rsplit("/", 1)[-1])
            if shipped:
                code = code.union(Code.of(bundles=[shipped]))
            if info.file_size > _MAX_MEMBER:
                raise CoverageError(f"{info.filename}: {info.file_size} bytes, larger than lockgen reads")
            try:
                code = code.union(_scan_member(archive, info, work))
            except CoverageError as exc:
                raise CoverageError(f"{info.filename}: {exc}") from None
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                raise CoverageError(f"{info.filename}: cannot read it from the wheel ({exc})") from None
    return code.shipped()


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
