"""The one reader of bytes lockgen did not just write, within bounds (docs/untrusted-input.md).

* files (:func:`read_file`, :func:`read_text`, :func:`read_in`): at most a size, read without
  reading more (a 3 GiB sparse ``manifest.json`` is refused unread, not a ``MemoryError``), never
  a FIFO or a device (which would block or never end: ``/dev/zero``), never through a symlink out
  of its folder (:func:`confined_problem`);
* (HTTP bodies are bounded where they arrive, by the one client: :mod:`lockgen.index.client`);
* zip archives (:class:`Archive`, :func:`open_archive`): the archive a regular file; at most
  :data:`MAX_MEMBERS` members, each named by a relative path without ``..``, each at most a size
  *as declared and as read*, with a compression ratio of at most :data:`MAX_RATIO` (a 1 MB zip bomb
  is refused from its central directory, before a byte is inflated), and at most
  :data:`MAX_TOTAL` bytes inflated over the whole archive.

Every reader of a manifest, a shard, a bundle's files, a lock, a template, an OSV export or answer
comes here; JSON is then read by :func:`lockgen.locks.jsonfile.load_json` (depth, digits).
Refusals are :class:`InputError` records (exit 2) naming the file or member and the bound; callers
that report a failed step instead (``audit``: exit 1) catch them and say so.
"""

from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from lockgen.runtime.errors import InputError, Problem

__all__ = [
    "MAX_BYTES", "MAX_MEMBERS", "MAX_RATIO", "MAX_TOTAL", "Archive", "BadArchive", "NotRegular", "Outside",
    "TooLarge", "confined_problem", "linked_problem", "open_archive", "read_cache", "read_file", "read_in", "read_text",
]  # fmt: skip

#: Larger than any manifest, lock or shard file lockgen writes (the seed's 12 cells: 60 KiB).
MAX_BYTES = 64 * 1024 * 1024


class TooLarge(InputError):
    """A file over the size limit, refused before it was read."""


class NotRegular(InputError):
    """A path that is not a regular file (a FIFO, a device, a folder), refused unread."""


class Outside(InputError):
    """A path that leads out of the folder it must stay in (a symlink out, a loop), refused unread."""


class BadArchive(InputError):
    """A zip archive that is not one, or holds a member beyond the bounds (a bomb, a path out)."""


#: Members of one archive read at most (OSV's ``PyPI/all.zip``: about 17,000 records).
MAX_MEMBERS = 500_000
#: Inflated bytes per compressed byte a member may have at most (JSON records: 5-20; a zip bomb: 1,000+).
MAX_RATIO = 200
#: Inflated bytes read from one archive at most, over all its members.
MAX_TOTAL = 4 * 1024 * 1024 * 1024


def _mib(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"


def read_file(path: Path, where: str, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (``where`` names it in errors), at most ``limit``:
    opened without blocking, checked with ``fstat`` (a regular file, its size), then at most
    ``limit + 1`` bytes read (a file that grows meanwhile is refused too). Raises
    :class:`TooLarge` or :class:`NotRegular` (exit 2), and ``OSError`` as ``open`` does
    (``FileNotFoundError`` for a missing file)."""
    fd = _open_regular(path, where)
    try:
        info = os.fstat(fd)
        if info.st_size > limit:
            raise TooLarge(Problem(file=where, message=f"{info.st_size} bytes: larger than any file lockgen writes "
                                                        f"({limit // (1024 * 1024)} MiB); refused unread"))  # fmt: skip
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise TooLarge(
                Problem(file=where, message=f"larger than any file lockgen writes ({limit // (1024 * 1024)} MiB)")
            )
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_regular(path: Path, where: str) -> int:
    """A descriptor of the regular file ``path``, opened without blocking (a FIFO does not wait
    for a writer). Raises :class:`NotRegular`, ``OSError`` as ``open`` does."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegular(
            Problem(file=where, message="not a regular file (a FIFO, a device or a folder); refused unread")
        )
    return fd


def read_text(path: Path, where: str, limit: int = MAX_BYTES) -> str:
    """:func:`read_file` decoded as UTF-8 (a byte-order mark dropped). Raises :class:`InputError`
    naming the byte offset of the first byte that is not UTF-8, and what :func:`read_file` raises."""
    data = read_file(path, where, limit)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise InputError(Problem(file=where, message=f"not UTF-8 text (byte offset {exc.start})")) from None


def read_cache(path: Path, limit: int = MAX_BYTES) -> Any:
    """The JSON of a cache file in lockgen's work folder (a speed-up: the hash cache, the no-op
    stamp, the coverage and provenance caches), or None when it is missing or anything about it is
    wrong: not a regular file, over ``limit``, not UTF-8, not JSON, nested past the interpreter's
    recursion limit. lockgen wrote it, but anyone may have changed ``.lockgen/``; its callers check
    the shape of what it gives."""
    try:
        return json.loads(read_file(path, str(path), limit).decode("utf-8"))
    except (OSError, InputError, ValueError, RecursionError):
        return None


def read_in(folder: Path, rel: str, where: str | None = None, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the file ``rel`` inside ``folder``, read only if it stays inside after
    symlinks (:func:`confined_problem`). Raises :class:`Outside`, and what :func:`read_file`
    raises (``FileNotFoundError`` for a missing file)."""
    shown = where or rel
    problem = confined_problem(folder, rel)
    if problem is not None:
        raise Outside(Problem(file=shown, message=f"{problem}; refused unread"))
    return read_file(folder / rel, shown, limit)


class Archive:
    """A zip archive read within bounds (see the module docstring). :meth:`members` lists the
    file members (checked: names, count, declared sizes, ratios); :meth:`read` inflates one,
    stopping at its declared size. Use as a context manager."""

    def __init__(self, handle: BinaryIO, where: str, limit: int, total: int) -> None:
        self.where, self.limit, self.total, self.inflated = where, limit, total, 0
        try:
            self._zip = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            handle.close()
            raise BadArchive(Problem(file=where, message=f"not a zip archive ({exc})")) from None
        self._handle = handle

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._zip.close()
        self._handle.close()

    def _refuse(self, member: str, message: str) -> BadArchive:
        return BadArchive(Problem(file=f"{self.where}: {member}", message=f"{message}; the archive was not read"))

    def members(self) -> list[zipfile.ZipInfo]:
        """The archive's file members, in its order. Raises :class:`BadArchive` for more than
        :data:`MAX_MEMBERS`, a name that is absolute, has ``..``, a backslash or a NUL, a member
        declared larger than the limit or inflating more than :data:`MAX_RATIO` times its
        compressed size (a zip bomb, from the central directory alone)."""
        infos = self._zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise BadArchive(Problem(file=self.where, message=f"{len(infos)} members, more than {MAX_MEMBERS}"))
        found = []
        for info in infos:
            name = info.filename
            parts = PurePosixPath(name).parts
            if not name or "\\" in name or "\0" in name or name.startswith("/") or ".." in parts or ":" in parts[0]:
                raise self._refuse(repr(name), "a member name that is not a relative path inside the archive")
            if info.is_dir():
                continue
            if info.file_size > self.limit:
                raise self._refuse(name, f"declared {info.file_size} bytes, more than {_mib(self.limit)}")
            if info.file_size > MAX_RATIO * max(info.compress_size, 1) and info.file_size > 64 * 1024:
                raise self._refuse(
                    name,
                    f"inflates {info.compress_size} bytes to {info.file_size} "
                    f"(more than {MAX_RATIO} times: a zip bomb)",
                )
            found.append(info)
        return found

    def read(self, info: zipfile.ZipInfo) -> bytes:
        """The inflated bytes of ``info`` (one of :meth:`members`), at most its declared size
        (``zipfile`` stops there and checks the CRC) and at most the archive's total. Raises
        :class:`BadArchive` for a member that is broken or inflates to other than it declares."""
        if self.inflated + info.file_size > self.total:
            raise self._refuse(info.filename, f"more than {_mib(self.total)} inflated over the archive")
        try:
            with self._zip.open(info) as member:
                data = member.read(info.file_size + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
            raise self._refuse(info.filename, f"cannot be read ({exc})") from None
        if len(data) != info.file_size:
            raise self._refuse(info.filename, f"inflates to {len(data)} bytes, not the {info.file_size} it declares")
        self.inflated += len(data)
        return data


def open_archive(path: Path, where: str, limit: int = MAX_BYTES, total: int = MAX_TOTAL) -> Archive:
    """The zip archive at ``path`` (a regular file: a FIFO or ``/dev/zero`` is refused unread) as
    an :class:`Archive` whose members are at most ``limit`` bytes each and ``total`` together.
    Raises :class:`NotRegular`, :class:`BadArchive`, ``OSError`` as ``open`` does."""
    fd = _open_regular(path, where)
    return Archive(os.fdopen(fd, "rb"), where, limit, total)


def linked_problem(root: Path, rel: str, depth: int = 0) -> str | None:
    """The first ``root``-relative path (``/``-separated) on the way to the folder ``root/rel``
    that is a symbolic link or not a folder, or an entry inside it down to ``depth`` levels
    (``0``: none, ``-1``: every level) that is a symbolic link; None when there is none. A
    missing component ends the walk (nothing below it exists; its writer makes it). For a folder
    lockgen writes and deletes in (its work folder, ``lockgen.locks.store.linked_work``): a link
    on the way would take the writes, and an ``rmtree``, elsewhere. Raises ``ValueError`` for
    an empty, ``.`` or ``..`` component."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{rel!r} is not a plain relative folder")
    for i in range(1, len(parts) + 1):
        shown = "/".join(parts[:i])
        try:
            st = os.lstat(root / shown)
        except FileNotFoundError:
            return None
        except OSError:
            return shown
        if not stat.S_ISDIR(st.st_mode):
            return shown
    return _linked_inside(root, rel, depth)


def _linked_inside(root: Path, rel: str, depth: int) -> str | None:
    if depth == 0:
        return None
    try:
        with os.scandir(root / rel) as found:
            entries = sorted(found, key=lambda e: e.name)
    except OSError:
        return None
    for entry in entries:
        if entry.is_symlink():
            return f"{rel}/{entry.name}"
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            below = _linked_inside(root, f"{rel}/{entry.name}", depth - 1)
            if below:
                return below
    return None


def confined_problem(folder: Path, name: str) -> str | None:
    """Why the file ``name`` (relative to ``folder``, e.g. a template) may not be read (None: it
    may, or it does not exist: its reader says "not found"): it resolves outside the folder
    after symlinks, or it is not a regular file (a FIFO or ``/dev/zero`` would block or never end)."""
    path = folder / name
    try:
        real = path.resolve()
        inside = real.is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return "a symlink that leads nowhere (a loop)"
    if not path.exists() and not path.is_symlink():
        return None
    if not inside:
        lexical = os.path.normpath(os.path.join(os.path.abspath(folder), name))
        if not Path(lexical).is_relative_to(os.path.abspath(folder)):  # '..' or an absolute name, no link
            return f"a path leading outside the folder {folder.name}/"
        return f"a symlink leading outside the folder {folder.name}/"
    if not real.is_file():
        return "not a regular file (a FIFO, a device or a folder)"
    return None
