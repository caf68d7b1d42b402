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

import json
import logging
import os
import secrets
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from lockgen.config import WORK
from lockgen.runtime.errors import LockgenError
from lockgen.locks.lock import normalized
from lockgen.runtime.writing import write_error

__all__ = ["Busy", "ProjectLock", "clean_temporaries", "recover", "remove_cell", "replace_files", "write_text"]

log = logging.getLogger("lockgen")

RUN_LOCK = f"{WORK}/run.lock"
JOURNALS = f"{WORK}/journal"
_TMP_SUFFIX = ".tmp"


class Busy(LockgenError):
    """Another lockgen run holds the project (exit 2; ``--wait`` waits for it instead)."""


@contextmanager
def ProjectLock(root: Path, wait: bool = False, poll: float = 0.2) -> Iterator[None]:  # noqa: N802 - reads like a class
    """Hold the project's run lock for the ``with`` block.

    Raises :class:`Busy` naming the holder's pid when another run holds it and ``wait`` is
    false; with ``wait`` logs once and blocks until it is free. The lock is an OS file lock
    (``fcntl.flock``; ``msvcrt.locking`` on Windows), so a killed run releases it.
    """
    path = root / RUN_LOCK
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+")  # noqa: SIM115 - held for the whole block
    except OSError as exc:
        raise write_error(RUN_LOCK, exc) from None
    try:
        said = False
        while not _try_lock(fh):
            if not wait:
                raise Busy(
                    f"another lockgen run is working on this project ({_holder(path)}); "
                    "wait for it to finish, or pass --wait to queue behind it"
                )
            if not said:
                log.warning("waiting for another lockgen run on this project (%s)", _holder(path))
                said = True
            time.sleep(poll)
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}\n")
        fh.flush()
        yield
    finally:
        fh.close()  # closing releases the lock


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


def remove_cell(root: Path, cell: str, paths: Iterable[str]) -> None:
    """Delete a cell's project-relative ``paths`` (files, and folders ending in ``/`` with every
    file under them) as one unit, journaled under the cell's name like :func:`replace_files`:
    a full run and ``lockgen merge`` remove locks of cells the matrix no longer resolves so."""
    files: list[str] = []
    for path in paths:
        target = root / path.rstrip("/")
        found = [target] if target.is_file() else [p for p in sorted(target.rglob("*")) if p.is_file()]
        files += [f.relative_to(root).as_posix() for f in found]
    replace_files(root, cell, {}, files)


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


def _apply(root: Path, staged: list[tuple[str, str]] | list[list[str]], gone: list[str]) -> None:
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
    Call while holding the :class:`ProjectLock`."""
    folder = root / JOURNALS
    done = []
    for journal in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(journal.read_text(encoding="utf-8"))
            _apply(root, [tuple(pair) for pair in data["replace"]], list(data["remove"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("could not finish %s left by a killed run (%s); re-lock that cell", journal.name, exc)
        journal.unlink(missing_ok=True)
        done.append(journal.stem)
    return done


def clean_temporaries(root: Path, locks: str) -> list[str]:
    """Delete ``.<name>.<random>.tmp`` files a killed run left in the locks folder (and its cell
    folders); returns their project-relative paths. Call after :func:`recover`, holding the lock."""
    folder = root / locks
    found = []
    for path in sorted(folder.rglob(f".*{_TMP_SUFFIX}")) if folder.is_dir() else []:
        path.unlink(missing_ok=True)
        found.append(path.relative_to(root).as_posix())
    return found
