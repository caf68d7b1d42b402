"""Write errors that name the file: an ``OSError`` while writing becomes a
:class:`~lockgen.errors.WriteError` naming the path and what to do (a read-only folder, a full
disk, missing permissions), printed as one ``error:`` line instead of a traceback.

Usage, around any write (``atomic_write``, the manifest, the stamp, rendered inputs)::

    with writing("locks/manifest.json"):
        atomic_write(root / "locks/manifest.json", text)
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager

from lockgen.errors import WriteError

__all__ = ["write_error", "writing"]

#: errno -> what the user can do about it.
_HINTS = {
    errno.EROFS: "the file system is read-only; run lockgen in a writable copy of the project",
    errno.EACCES: "no permission to write there; fix the folder's permissions or owner, then run again",
    errno.EPERM: "no permission to write there; fix the folder's permissions or owner, then run again",
    errno.ENOSPC: "the disk is full; free some space, then run again",
    errno.EDQUOT: "the disk quota is used up; free some space, then run again",
    errno.ENOENT: "its folder does not exist (was it removed while lockgen ran?); run again",
    errno.ENOTDIR: "a file stands where a folder of that path should be; move it away",
    errno.EISDIR: "a folder stands where the file should be; move it away",
    errno.ENAMETOOLONG: "the path is too long; move the project to a shorter path",
    errno.EFBIG: "the file is larger than this process may write (a file-size limit: `ulimit -f`); raise the limit, then run again",
}


def write_error(path: str | os.PathLike[str], exc: OSError) -> WriteError:
    """The user error for ``exc``, raised while writing ``path`` (shown as given: pass the
    project-relative path). The system's message is kept; the hint depends on ``exc.errno``."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    hint = _HINTS.get(exc.errno or 0, "check that the folder exists and can be written, then run again")
    return WriteError(os.fspath(path), reason, hint)


@contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn an ``OSError`` raised inside the block into :func:`write_error` for ``path``."""
    try:
        yield
    except OSError as exc:
        raise write_error(path, exc) from exc
