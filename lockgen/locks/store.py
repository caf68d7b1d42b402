"""The locks folder on disk: one run at a time, all files of a cell replaced together, no debris.

* :class:`ProjectLock`: ``lockgen all``/``lock``/``bump``/``merge`` hold an exclusive lock on
  ``.lockgen/run.lock`` for the whole run; a second run refuses (exit 2) or, with ``--wait``,
  waits. So no two runs interleave their writes (issue 8: two concurrent runs wrote a lock with
  two headers).
* :func:`replace_files`: a cell's files (main lock, ``pylock.toml``, layers) are written to
  temporary files beside their targets, a journal naming them is written, then each is renamed
  over its target and the journal removed. A run killed between two renames leaves the journal;
  the next run finishes it (:func:`recover`) before doing anything else. Until then the main lock's
  ``layer`` digests do not match, so ``check`` reports the cell instead of passing it.
  ``lockgen bump`` writes its config, template and lock changes as one such unit (journal
  ``bump``, :mod:`lockgen.locks.stage`), its files keeping their permission bits.
* :func:`clean_temporaries`: temporary files a killed run left (``.<name>.<random>.tmp``) are
  removed by the next run.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import secrets
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from lockgen.config import WORK
from lockgen.runtime.errors import LockgenError
from lockgen.locks.lock import normalized
from lockgen.runtime.writing import write_error

__all__ = [
    "Busy", "FileLock", "ProjectLock", "clean_temporaries", "differs", "files_under", "recover", "remove_cell",
    "replace_files", "work_folder", "write_text",
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
    try:
        work_folder(root)
    except OSError as exc:
        raise write_error(RUN_LOCK, exc) from None

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
    seconds. The holder's pid is written into the file; a killed holder releases the lock."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+")  # noqa: SIM115 - held for the whole block
    except OSError as exc:
        raise write_error(where or path, exc) from None
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


def work_folder(root: Path) -> Path:
    """``root/.lockgen``, made when missing, with the ``.gitignore`` that keeps it out of git:
    every command that writes there (all, lock, bump, merge, install) makes it through here,
    so a fresh checkout never shows the folder to ``git status``."""
    folder = root / WORK
    folder.mkdir(parents=True, exist_ok=True)
    gitignore = folder / ".gitignore"
    if not gitignore.exists():
        write_text(gitignore, _GITIGNORE)
    return folder


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
    try:
        found = path.read_bytes().decode("utf-8")
        return found == text if exact else normalized(found) == text
    except (OSError, UnicodeDecodeError):
        return False


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


def files_under(root: Path, paths: Iterable[str]) -> list[str]:
    """The project-relative files of ``paths`` (files, and folders ending in ``/`` with every
    file under them, temporaries left out), sorted per path; missing ones are skipped."""
    files: list[str] = []
    for path in paths:
        target = root / path.rstrip("/")
        if target.is_file():
            found = [target]
        else:
            found = [p for p in sorted(target.rglob("*")) if p.is_file()] if target.is_dir() else []
        files += [f.relative_to(root).as_posix() for f in found if not f.name.endswith(_TMP_SUFFIX)]
    return files


def differs(root: Path, path: str, text: str) -> bool:
    """Whether the project-relative file ``path`` does not hold ``text`` (line endings aside)."""
    return not _same(root / path, text)


def remove_cell(root: Path, cell: str, paths: Iterable[str]) -> None:
    """Delete a cell's project-relative ``paths`` (files, and folders ending in ``/`` with every
    file under them) as one unit, journaled under the cell's name like :func:`replace_files`:
    a full run removes locks of cells the matrix no longer resolves so."""
    replace_files(root, cell, {}, files_under(root, paths))


def replace_files(
    root: Path, name: str, files: Mapping[str, str], remove: Iterable[str] = (), keep_mode: bool = False
) -> bool:
    """Replace the project-relative ``files`` (path -> text) and delete ``remove`` as one unit
    (see the module docstring); ``name`` names the journal (the cell; ``bump`` for a bump's
    config, templates and locks). With ``keep_mode`` a replaced file keeps its permission bits
    (a config or template a user made). Returns whether anything changed. Raises a user error
    naming the file that could not be written; then nothing of the unit has been replaced."""
    changes = {path: text for path, text in files.items() if not _same(root / path, text, exact=keep_mode)}
    gone = [path for path in remove if (root / path).exists()]
    if not changes and not gone:
        return False
    for path in changes:  # what would fail half way through the renames, refused before any
        if (root / path).is_dir():
            raise write_error(path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path))
    staged: list[tuple[str, str]] = []
    try:
        for path, text in changes.items():
            made = _temporary(root / path, text, keep_mode)
            staged.append((made.relative_to(root).as_posix() if made.is_relative_to(root) else str(made), path))
    except OSError as exc:
        for tmp, _ in staged:
            (root / tmp).unlink(missing_ok=True)
        raise write_error(path, exc) from None
    journal = f"{JOURNALS}/{name}.json"
    try:
        write_text(root / journal, json.dumps({"replace": staged, "remove": gone}, indent=1) + "\n", journal)
    except LockgenError:
        for tmp, _ in staged:
            (root / tmp).unlink(missing_ok=True)
        raise
    journal_path = root / journal
    _apply(root, staged, gone)
    journal_path.unlink()
    return True


def _apply(root: Path, staged: list[tuple[str, str]], gone: list[str]) -> None:
    for tmp, path in staged:
        if (root / tmp).exists():
            os.replace(root / tmp, root / path)
    for path in gone:
        (root / path).unlink(missing_ok=True)
        folder = (root / path).parent
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def recover(root: Path) -> list[str]:
    """Finish every journal a killed run left (see :func:`replace_files`); returns their names.
    Call while holding the :class:`ProjectLock`. A journal is read as data and confined: each
    entry must rename a temporary lockgen names (``.<name>.<8 hex>.tmp``) over the file beside
    it, both project-relative without ``..`` and inside the project after symlinks (absolute only
    for a file ``bump`` wrote through a symlink out of the project), and remove only files inside
    the project; a journal that says anything else is not replayed (and is removed, with a
    warning)."""
    folder = root / JOURNALS
    done = []
    for journal in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(journal.read_bytes().decode("utf-8"))
            staged = [(str(tmp), str(path)) for tmp, path in data["replace"]]
            gone = [str(path) for path in data["remove"]]
            problem = _journal_problem(root, staged, gone)
            if problem:
                raise ValueError(problem)
            _apply(root, staged, gone)
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            log.warning("could not finish %s left by a killed run (%s); re-lock that cell", journal.name, exc)
        journal.unlink(missing_ok=True)
        done.append(journal.stem)
    return done


def _journal_problem(root: Path, staged: list[tuple[str, str]], gone: list[str]) -> str | None:
    """Why a journal's entries are not ones :func:`replace_files` writes (None: they are)."""
    from lockgen.locks.paths import folder_problem, resolved_inside

    for path in gone:
        if folder_problem(path) or not resolved_inside(root / path, root):
            return f"it removes {path!r}, not a file inside the project"
    for tmp, path in staged:
        for one in (tmp, path):  # an absolute path only for a bump's file behind a symlink out of the project
            if not os.path.isabs(one) and (folder_problem(one) or not resolved_inside(root / one, root)):
                return f"it names {one!r}, not a file inside the project"
        parent, _, name = path.rpartition("/")
        tmp_parent, _, tmp_name = tmp.rpartition("/")
        if tmp_parent != parent or not re.fullmatch(
            re.escape(f".{name}.") + r"[0-9a-f]{8}" + re.escape(_TMP_SUFFIX), tmp_name
        ):
            return f"it renames {tmp!r}, which is not a temporary of {path!r}"
    return None


def clean_temporaries(root: Path, locks: str) -> list[str]:
    """Delete the temporary files a killed run left (``.<name>.<8 hex>.tmp``): in the locks
    folder and its cell folders, in the work folder and its journal folder (the journal's own
    temporary, the stamp's). Returns their project-relative paths. Call after :func:`recover`,
    holding the lock."""
    found = []
    pattern = re.compile(r"\..+\.[0-9a-f]{8}" + re.escape(_TMP_SUFFIX))
    places = [(root / locks, True), (root / WORK, False), (root / JOURNALS, False)]
    for folder, deep in places:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob(f".*{_TMP_SUFFIX}") if deep else folder.glob(f".*{_TMP_SUFFIX}")):
            if pattern.fullmatch(path.name) and path.is_file():
                path.unlink(missing_ok=True)
                found.append(path.relative_to(root).as_posix())
    return found
