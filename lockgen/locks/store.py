"""The project's run lock and single-file writes of lockgen's own work files.

* :class:`ProjectLock`: ``lockgen all``/``lock``/``bump``/``merge``/``audit --fix``/``init`` hold
  an exclusive lock on ``.lockgen/run.lock`` for the whole run; a second run refuses (exit 2) or,
  with ``--wait``, waits. So no two runs interleave their writes (two concurrent runs once wrote a
  lock with two headers).
* :func:`write_text`: one file through a temporary and a rename, for lockgen's own work files
  (the no-op stamp, a venv's state) and the journal's records. The project's files (templates,
  config, locks, manifest) are written in units through :mod:`lockgen.locks.journal`.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import secrets
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from lockgen.config import WORK
from lockgen.runtime.errors import LockgenError
from lockgen.locks.lock import normalized
from lockgen.runtime.bounded import linked_problem, read_file
from lockgen.runtime.writing import write_error

__all__ = [
    "Busy", "FileLock", "LinkedWork", "ProjectLock", "differs", "holds", "linked_work", "refuse_linked_work", "work_folder",
    "write_text",
]  # fmt: skip

log = logging.getLogger("lockgen")

RUN_LOCK = f"{WORK}/run.lock"
JOURNALS = f"{WORK}/journal"
_TMP_SUFFIX = ".tmp"


class Busy(LockgenError):
    """Another lockgen run holds the project (exit 2; ``--wait`` waits for it instead)."""


@contextmanager
def ProjectLock(root: Path, wait: bool = False, poll: float = 0.2) -> Iterator[None]:  # noqa: N802 - reads like a class
    """Hold the project's run lock for the ``with`` block (and make lockgen's work folder, with
    its ``.gitignore``: :func:`work_folder`).

    Raises :class:`Busy` naming the holder's pid when another run holds it and ``wait`` is
    false; with ``wait`` logs once and blocks until it is free. The lock is an OS file lock
    (``fcntl.flock``; ``msvcrt.locking`` on Windows), so a killed run releases it.
    """
    work_folder(root)  # refuses a link in it: the run lock among them

    def busy(holder: str) -> Busy:
        return Busy(
            f"another lockgen run is working on this project ({holder}); wait for it to finish, or pass --wait to "
            "queue behind it"
        )

    with FileLock(root / RUN_LOCK, wait, busy, "waiting for another lockgen run on this project", poll, RUN_LOCK):
        yield


@contextmanager
def FileLock(  # noqa: N802 - reads like a class
    path: Path,
    wait: bool,
    busy: Callable[[str], LockgenError],
    waiting: str,
    poll: float = 0.2,
    where: str | None = None,
) -> Iterator[None]:
    """Hold an exclusive OS file lock on ``path`` (created when missing) for the ``with`` block:
    the project's run lock, a venv's install lock. When another process holds it, raises
    ``busy("pid N")`` or, with ``wait``, logs ``waiting`` once and polls every ``poll``
    seconds. The holder's pid is written into the file; a killed holder releases the lock. The
    file is opened with ``O_NOFOLLOW``: a symbolic link there (a checkout's ``.lockgen/run.lock
    -> a file elsewhere``) is refused (:class:`LinkedWork`), never written through."""
    shown = where or str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        fh = os.fdopen(os.open(path, flags, 0o644), "r+")  # held for the whole block
    except OSError as exc:
        if path.is_symlink():  # ELOOP (Linux, macOS) or EMLINK (FreeBSD): the link is never followed
            raise LinkedWork(
                f"{shown}: is a symbolic link; lockgen locks this file and writes its pid into it, and follows no "
                f"link there: remove the link (rm {shown}), then run again; nothing was written"
            ) from None
        raise write_error(shown, exc) from None
    try:
        said = False
        while not _try_lock(fh):
            if not wait:
                raise busy(_holder(path))
            if not said:
                log.warning("%s (%s)", waiting, _holder(path))
                said = True
            time.sleep(poll)
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}\n")
        fh.flush()
        yield
    finally:
        fh.close()  # closing releases the lock


#: What lockgen's work folder's ``.gitignore`` says: nothing in it is ever committed.
_GITIGNORE = "# lockgen's work folder: rendered inputs, caches; never committed\n*\n"


class LinkedWork(LockgenError):
    """lockgen's work folder, or a path lockgen writes, locks or deletes under it, is reached
    through a symbolic link or a component that is not a folder (exit 2): a checkout that commits
    ``.lockgen -> elsewhere``, ``.lockgen/journal -> elsewhere``, ``.lockgen/run.lock -> a file``
    or ``.lockgen/<cell> -> elsewhere`` would have lockgen write, and delete, outside the project."""


def linked_work(root: Path, rel: str = WORK, depth: int = 1) -> str | None:
    """The first project-relative path lockgen may not go through on its way to ``root/rel`` (a
    folder at or under :data:`~lockgen.config.WORK`, ``/``-separated), or None:
    :func:`~lockgen.runtime.bounded.linked_problem` (a component that is a symbolic link or not
    a folder, or an entry inside ``rel`` down to ``depth`` levels, ``-1``: every level, that is a
    symbolic link). The rule :mod:`lockgen.locks.journal` applies to a unit's folders, for the
    work folder: lockgen never makes a link there, so one is input from elsewhere
    (docs/untrusted-input.md). Raises ``ValueError`` for a ``rel`` outside the work folder."""
    if rel.split("/")[0] != WORK:
        raise ValueError(f"{rel!r} is not a folder under {WORK}")
    return linked_problem(root, rel, depth)


def refuse_linked_work(root: Path, rel: str = WORK, depth: int = 1) -> None:
    """Raise :class:`LinkedWork` naming the path when :func:`linked_work` finds one: by default
    ``root/.lockgen`` itself or any entry directly in it (the run lock, the journal's folder, a
    cell's work folder, a cache); ``rel``/``depth`` for a folder lockgen is about to write or
    delete in (a cell's work folder, every level; the journal's folder), checked after those
    entries. A missing one is fine: lockgen makes it."""
    found = linked_work(root, WORK, 1) or (linked_work(root, rel, depth) if rel != WORK else None)
    if found is None:
        return
    if found == WORK:
        raise LinkedWork(
            f"{WORK}: lockgen's work folder is a symbolic link or not a folder; lockgen writes and deletes there, "
            f"so it must be a folder of the project: remove it (rm {WORK}), then run again; nothing was written"
        )
    what = "a symbolic link" if os.path.islink(root / found) else "not a folder"
    raise LinkedWork(
        f"{found}: is {what}; {WORK} is lockgen's work folder, where it writes and deletes, and lockgen follows "
        f"no link in it: remove the link (rm {found}; lockgen makes what it needs again), then run again; "
        "nothing was written"
    )


def work_folder(root: Path, rel: str = WORK, depth: int = 1) -> Path:
    """``root/rel`` (``.lockgen`` or a folder under it), made when missing, after
    :func:`refuse_linked_work` (``rel``, ``depth``), with the ``.gitignore`` that keeps the work
    folder out of git: every command that writes there (all, lock, bump, merge, install) makes
    it through here, so a fresh checkout never shows the folder to ``git status``. Raises
    :class:`LinkedWork`, or a user error naming the folder when it cannot be made."""
    refuse_linked_work(root, rel, depth)
    folder = root / WORK
    try:
        (root / rel).mkdir(parents=True, exist_ok=True)
        gitignore = folder / ".gitignore"
        if not os.path.lexists(gitignore):
            write_text(gitignore, _GITIGNORE)
    except OSError as exc:
        raise write_error(rel, exc) from None
    return root / rel


def _try_lock(fh: IO[str]) -> bool:
    try:
        if sys.platform == "win32":  # pragma: no cover - Windows
            import msvcrt

            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "pid unknown"
    except OSError:
        return "pid unknown"


def write_text(path: Path, text: str, where: str | None = None) -> bool:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file and ``os.replace``; False (and
    nothing written) when the file already holds the same text, whatever its line endings (a
    CRLF checkout, C17). Raises a user error naming the file (as ``where``, the project-relative
    path, when given) when it cannot be written; no temporary file is left then."""
    if _same(path, text):
        return False
    tmp = None
    try:
        tmp = _temporary(path, text)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise write_error(where or path, exc) from None
    return True


def _same(path: Path, text: str, exact: bool = False) -> bool:
    """Whether ``path`` holds ``text`` (up to line endings, unless ``exact``: a user's file keeps
    its own, and an edit that only changed them is still written)."""
    return holds(path, text, exact)


def _temporary(path: Path, text: str, keep_mode: bool = False) -> Path:
    """A temporary file beside ``path`` holding ``text``: mode 0644, or with ``keep_mode`` the
    permission bits of the file it will replace (when there is one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{_TMP_SUFFIX}")
    mode = 0o644
    if keep_mode:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            pass
    try:
        with open(tmp, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def differs(root: Path, path: str, text: str) -> bool:
    """Whether the project-relative file ``path`` does not hold ``text`` (line endings aside)."""
    return not _same(root / path, text)


def holds(path: Path, data: str | bytes, exact: bool) -> bool:
    """Whether ``path`` (a regular file, no symlink) already holds ``data``: bytes exactly; text
    up to line endings (a CRLF checkout, C17), unless ``exact`` (a user's file keeps its own, and
    an edit that only changed them is still written). A FIFO, a device or a file far larger than
    ``data`` holds nothing and is not read (it is replaced)."""
    size = len(data if isinstance(data, bytes) else data.encode("utf-8"))
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > 2 * size + 16:  # a FIFO is never opened, a huge file never read
            return False
        found = read_file(path, str(path), st.st_size)
    except (OSError, LockgenError):
        return False
    if isinstance(data, bytes):
        return found == data
    try:
        text = found.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return text == data if exact else normalized(text) == data
