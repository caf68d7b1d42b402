"""Reading files lockgen did not just write, within bounds: at most a size, read without reading
more (a 3 GiB sparse ``manifest.json`` is refused unread, not a ``MemoryError``), never a FIFO or a
device (which would block or never end), never through a symlink out of its folder
(:func:`confined_problem`). Every reader of a manifest, a shard, a bundle's files, a lock or a
template comes here (docs/untrusted-input.md, "Rules"); JSON is then read by
:func:`lockgen.locks.jsonfile.load_json`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lockgen.runtime.errors import InputError, Problem

__all__ = ["MAX_BYTES", "NotRegular", "TooLarge", "confined_problem", "read_file"]

#: Larger than any manifest, lock or shard file lockgen writes (the seed's 12 cells: 60 KiB).
MAX_BYTES = 64 * 1024 * 1024


class TooLarge(InputError):
    """A file over the size limit, refused before it was read."""


class NotRegular(InputError):
    """A path that is not a regular file (a FIFO, a device, a folder), refused unread."""


def read_file(path: Path, where: str, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (``where`` names it in errors), at most ``limit``:
    opened without blocking, checked with ``fstat`` (a regular file, its size), then at most
    ``limit + 1`` bytes read (a file that grows meanwhile is refused too). Raises
    :class:`TooLarge` or :class:`NotRegular` (exit 2), and ``OSError`` as ``open`` does
    (``FileNotFoundError`` for a missing file)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(
                Problem(file=where, message="not a regular file (a FIFO, a device or a folder); refused unread")
            )
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
        return f"a symlink leading outside the folder {folder.name}/"
    if not real.is_file():
        return "not a regular file (a FIFO, a device or a folder)"
    return None
