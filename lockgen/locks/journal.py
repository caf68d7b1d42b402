"""The one way lockgen writes a project: a journaled unit, all of it or none of it.

Every writing command (``all``, ``lock``, ``bump``, ``audit --fix``, ``merge``, ``bundle``,
``init``) writes its files (templates, config, locks, manifest, a bundle's files) as one or more
units through :class:`Journal`, modelled on git's lock files and atomic renames:

1. **prepare**: the unit's record ``.lockgen/journal/<name>.json`` is written (through a
   temporary and a rename) saying ``prepared`` and naming every temporary it will make;
2. **stage**: each new file is written (and fsynced) as a temporary inside the unit's folder
   ``.lockgen/journal/<name>.d/`` (beside its target only when the target lies on another file
   system, a config symlinked out of the project: a rename cannot cross file systems);
3. **commit**: the record is rewritten saying ``committed``: the point of no return;
4. **apply**: each temporary is renamed over its target and each removed file deleted;
5. **done**: the record and the unit's folder are deleted.

A run killed before step 3 leaves a ``prepared`` record: :func:`recover` rolls it back (every
temporary it names is deleted; no target was touched). Killed after it: :func:`recover` finishes
the renames. Either way no temporary survives and the project is all-old or all-new.
:func:`settle` runs :func:`recover` at every command's entry (``lockgen.cli``), before anything
reads the project, unless a live run holds the project's run lock (then its records are in
flight, not left behind).

Before step 1 the unit is refused as a whole, naming the file (exit 2), when a target is
read-only (no owner write bit: a file the user protected is never replaced, as git refuses to
write through a read-only index), a folder stands where a file goes, or a target's folder inside
the unit's root is reached through a symbolic link (``bundle -o DIR`` whose ``files/`` links
elsewhere must not delete or write there).

:data:`fault` is the fault-injection seam of the tests: called with each step's name
(``prepare``, ``stage``, ``commit``, ``apply``, ``done``) before the step; the environment
variable ``LOCKGEN_TEST_KILL_AT=N`` SIGKILLs the process at the N-th step of the process instead
(the slow tier's real kills).
"""

from __future__ import annotations

import errno
import itertools
import json
import logging
import os
import re
import secrets
import shutil
import signal
import stat
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lockgen.config import WORK
from lockgen.locks.jsonfile import load_json
from lockgen.locks.store import holds as store_holds
from lockgen.runtime.bounded import read_file
from lockgen.runtime.errors import LockgenError
from lockgen.runtime.writing import write_error

__all__ = [
    "JOURNALS", "KILL_ENV", "FileExists", "Journal", "ReadOnlyFile", "clean_temporaries", "files_under", "pending",
    "recover", "refuse_read_only", "remove_cell", "replace_files", "settle", "settle_project",
]  # fmt: skip

log = logging.getLogger("lockgen")

#: Where the records and the units' folders live, project-relative.
JOURNALS = f"{WORK}/journal"
#: The environment variable of the slow tier's real kills (see the module docstring).
KILL_ENV = "LOCKGEN_TEST_KILL_AT"
TMP_SUFFIX = ".tmp"
#: The largest record :func:`recover` reads (a record of a bundle of 10,000 files: about 1 MiB).
MAX_RECORD = 16 * 1024 * 1024
_BESIDE = re.compile(r"\..+\.[0-9a-f]{8}" + re.escape(TMP_SUFFIX))  # a temporary beside its target
_INSIDE = re.compile(r"[0-9]+" + re.escape(TMP_SUFFIX))  # a temporary in a unit's folder

#: The tests' fault-injection seam: called with each step's name before the step.
fault: Callable[[str], None] | None = None
_steps = itertools.count(1)
_steps_lock = threading.Lock()


class FileExists(LockgenError):
    """A file a unit creates exists already (exit 2)."""


class ReadOnlyFile(LockgenError):
    """A file of a unit is read-only, or reached through a symlink the unit may not follow (exit 2)."""


def _step(name: str) -> None:
    if fault is not None:
        fault(name)
    at = os.environ.get(KILL_ENV)
    if at:
        with _steps_lock:
            count = next(_steps)
        if str(count) == at.strip():
            os.kill(os.getpid(), signal.SIGKILL)


@dataclass
class Journal:
    """One unit of writes under ``root`` (the project, a stage, a bundle folder), named ``name``
    (a cell, ``bump``, ``merge``, ``manifest``, ``bundle``, ``init``; plain names only).

    Stage the unit with :meth:`write`, :meth:`add` (a file already written into
    :meth:`scratch`) and :meth:`remove`, then :meth:`commit` it; :meth:`discard` drops what was
    staged. Paths are ``root``-relative with ``/``, or absolute for a file outside ``root`` (a
    config symlinked out of the project, written where the link points). Hold the root's run lock
    (:class:`lockgen.locks.store.ProjectLock`) while committing."""

    root: Path
    name: str
    keep_mode: bool = False
    _files: dict[str, tuple[Path | str | bytes, int | None]] = field(default_factory=dict)
    _new: set[str] = field(default_factory=set)
    _gone: list[str] = field(default_factory=list)
    _made: list[Path] = field(default_factory=list)
    _via: dict[str, str] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        """The unit's folder of temporaries, ``<root>/.lockgen/journal/<name>.d``."""
        return self.root / JOURNALS / f"{self.name}.d"

    @property
    def record(self) -> Path:
        return self.root / JOURNALS / f"{self.name}.json"

    def write(
        self, path: str, data: str | bytes, mode: int | None = None, new: bool = False, via: str | None = None
    ) -> None:
        """Stage ``data`` (text is written as UTF-8) for ``path``; ``mode``: its permission bits
        (default: the replaced file's with ``keep_mode``, else 0644); ``new``: the file must not
        exist (``init``): the commit refuses otherwise, writing nothing. ``via``: for an absolute
        ``path`` (outside ``root``), the ``root``-relative symlink that leads to it; the record
        names it, and :func:`recover` replays the rename only while that link still leads there."""
        self._files[path] = (data, mode)
        if new:
            self._new.add(path)
        if via is not None:
            self._via[path] = via

    def scratch(self) -> Path:
        """A new empty path in the unit's folder to write a large file into (a bundle's wheel),
        then :meth:`add` it. Removed by :meth:`discard` or a rollback. Raises
        :class:`~lockgen.locks.store.LinkedWork` as :meth:`commit`."""
        _refuse_linked(self.root)
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"scratch-{secrets.token_hex(8)}{TMP_SUFFIX}"
        self._made.append(path)
        return path

    def add(self, path: str, scratch: Path, mode: int | None = None) -> None:
        """Stage the file ``scratch`` (from :meth:`scratch`) for ``path``."""
        self._files[path] = (scratch, mode)

    def remove(self, path: str) -> None:
        """Stage the removal of ``path`` (a missing file is no change)."""
        self._gone.append(path)

    def discard(self) -> None:
        """Drop what was staged; nothing once the unit is committed and not yet applied (Ctrl-C
        between two renames: :func:`recover` finishes it)."""
        if self.record.exists():
            return
        for path in self._made:
            path.unlink(missing_ok=True)
        self._made.clear()
        self._files.clear()
        self._new.clear()
        self._gone.clear()
        _remove_folder(self.folder)

    def commit(self) -> bool:
        """Apply the unit (see the module docstring); returns whether anything changed. Raises
        :class:`ReadOnlyFile` (exit 2) or a :class:`~lockgen.runtime.errors.WriteError` naming the
        file before anything is replaced; then the project is as it was. Raises
        :class:`~lockgen.locks.store.LinkedWork` (exit 2) before anything is written when the
        journal's folder, or a record or unit folder in it, is a symbolic link: the record and the
        temporaries are never written through one."""
        _refuse_linked(self.root)
        try:
            return self._commit()
        finally:
            for path in self._made:
                path.unlink(missing_ok=True)
            self._made.clear()

    def _commit(self) -> bool:
        root = self.root
        for path in sorted(self._new):
            if os.path.lexists(root / path):
                raise FileExists(f"{path}: exists already; lockgen writes nothing over it; nothing was written")
        changes = {
            p: v for p, v in self._files.items() if isinstance(v[0], Path) or not store_holds(root / p, v[0], self.keep_mode)
        }
        gone = [p for p in dict.fromkeys(self._gone) if p not in changes and os.path.lexists(root / p)]
        if not changes and not gone:
            _remove_folder(self.folder)
            return False
        probed: set[Path] = set()
        for path in [*changes, *gone]:
            _refuse(root, path, path in changes)
            _probe(root, path, probed)
        same_fs = _device(root / JOURNALS)
        staged: list[tuple[str, ...]] = []
        for i, path in enumerate(changes):
            target = root / path
            if same_fs is None or _device(target.parent) in (None, same_fs):
                tmp = f"{JOURNALS}/{self.name}.d/{i}{TMP_SUFFIX}"
            else:  # another file system: a rename from the journal's folder cannot reach it
                tmp = str(target.with_name(f".{target.name}.{secrets.token_hex(4)}{TMP_SUFFIX}"))
            staged.append((tmp, path, self._via[path]) if path in self._via else (tmp, path))
        _step("prepare")
        self._record("prepared", staged, gone)
        try:
            for (tmp, path, *_), (data, mode) in zip(staged, changes.values()):
                _step("stage")
                self._stage(root / tmp, root / path, data, mode)
        except OSError as exc:
            self._rollback(staged)
            raise write_error(path, exc) from None
        except BaseException:
            self._rollback(staged)
            raise
        _step("commit")
        self._record("committed", staged, gone)
        done: list[str] = []
        try:
            _apply(root, staged, gone, done)
        except OSError as exc:  # a rename refused after the probes (a file made immutable meanwhile)
            if not done:  # nothing replaced yet: the unit is rolled back
                self._rollback(staged)
            raise write_error(exc.filename or self.name, exc) from None
        _step("done")
        self.record.unlink(missing_ok=True)
        _remove_folder(self.folder)
        return True

    def _record(self, state: str, staged: list[tuple[str, ...]], gone: list[str]) -> None:
        from lockgen.locks.store import write_text

        rel = f"{JOURNALS}/{self.name}.json"
        text = json.dumps({"state": state, "replace": staged, "remove": gone}, indent=1) + "\n"
        try:
            write_text(self.record, text, rel)
        except LockgenError:
            if state == "prepared":
                _remove_folder(self.folder)
            raise

    def _stage(self, tmp: Path, target: Path, data: Path | str | bytes, mode: int | None) -> None:
        tmp.parent.mkdir(parents=True, exist_ok=True)
        if mode is None:
            mode = 0o644
            if self.keep_mode:
                try:
                    mode = target.stat().st_mode & 0o7777
                except FileNotFoundError:
                    pass
        if isinstance(data, Path):
            os.replace(data, tmp)
        else:
            with open(tmp, "wb") as fh:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)

    def _rollback(self, staged: list[tuple[str, ...]]) -> None:
        for tmp, *_ in staged:
            (self.root / tmp).unlink(missing_ok=True)
        self.record.unlink(missing_ok=True)
        _remove_folder(self.folder)


def _device(path: Path) -> int | None:
    for folder in (path, *path.parents):
        try:
            return folder.stat().st_dev
        except OSError:
            continue
    return None


def _refuse(root: Path, path: str, replaced: bool) -> None:
    """Raise when ``path`` may not be written (see the module docstring)."""
    target = root / path
    if not os.path.isabs(path):
        folder = root
        for part in path.split("/")[:-1]:
            folder = folder / part
            if folder.is_symlink():
                raise ReadOnlyFile(
                    f"{path}: its folder {folder.relative_to(root).as_posix()} is a symbolic link; lockgen does not "
                    "write or delete through one: replace the link with a folder, then run again"
                )
    if replaced and target.is_dir() and not target.is_symlink():
        raise write_error(path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path))
    try:
        st = target.lstat()
    except OSError:
        return
    if not target.is_symlink() and not st.st_mode & 0o200:
        raise ReadOnlyFile(
            f"{path}: the file is read-only; lockgen never replaces a file you protected: make it writable "
            f"(chmod u+w {path}) if it should change, then run again; nothing was written"
        )


def _probe(root: Path, path: str, probed: set[Path]) -> None:
    """Raise a :class:`~lockgen.runtime.errors.WriteError` naming ``path`` when it could not be
    replaced: the file opens for writing (not truncated: an immutable file, ``chattr +i``, refuses),
    and a file can be made in its folder (the nearest existing one; once per folder)."""
    target = root / path
    try:
        if target.is_file() and not target.is_symlink():
            os.close(os.open(target, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0)))
        folder = target.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if folder not in probed:
            probe = folder / f".lockgen-probe.{secrets.token_hex(4)}{TMP_SUFFIX}"
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            probe.unlink()
            probed.add(folder)
    except OSError as exc:
        raise write_error(path, exc) from None


def _apply(root: Path, staged: list[tuple[str, ...]], gone: list[str], done: list[str] | None = None) -> None:
    done = [] if done is None else done
    for tmp, path, *_ in staged:
        _step("apply")
        if (root / tmp).exists():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / tmp, root / path)
            done.append(path)
    for path in gone:
        _step("apply")
        target = root / path
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        done.append(path)
        folder = target.parent
        if folder != root and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _remove_folder(folder: Path) -> None:
    """Remove a unit's folder (the journal folder itself stays: cells write their units at once);
    a symbolic link (or a file) in its place is removed itself, never what it leads to."""
    if folder.is_symlink() or (os.path.lexists(folder) and not folder.is_dir()):
        folder.unlink(missing_ok=True)
    else:
        shutil.rmtree(folder, ignore_errors=True)


def _refuse_linked(root: Path, depth: int = 1) -> None:
    """Raise :class:`~lockgen.locks.store.LinkedWork` (exit 2) naming the path when the
    journal's folder ``root/.lockgen/journal`` is reached through a symbolic link or a file (or,
    ``depth`` 1, holds one: a record or a unit's folder that is a link), before anything is read,
    written or deleted there (docs/untrusted-input.md, "the work folder")."""
    from lockgen.locks.store import refuse_linked_work

    refuse_linked_work(root, JOURNALS, depth)


def refuse_read_only(root: Path, files: Iterable[str], cells: Iterable[str] = ()) -> None:
    """Raise :class:`ReadOnlyFile` (exit 2) naming the first of ``files`` (``root``-relative), of
    the ``cells``' locks (``<cell>.txt``) and of the files in their folders that is read-only:
    for a run that would replace it, before it resolves anything."""
    paths = [*files]
    for cell in cells:
        paths.append(f"{cell}.txt")
        folder = root / cell
        if folder.is_dir() and not folder.is_symlink():
            paths += [p.relative_to(root).as_posix() for p in sorted(folder.iterdir()) if p.is_file()]
    for path in paths:  # a folder where a file goes is the write's own error, reported per file
        _refuse(root, path, False)


def replace_files(
    root: Path,
    name: str,
    files: Mapping[str, str],
    remove: Iterable[str] = (),
    keep_mode: bool = False,
    links: Mapping[str, str] | None = None,
) -> bool:
    """One unit: replace the ``root``-relative ``files`` (path -> text) and delete ``remove``
    (a cell's files; ``bump``'s config, templates and locks; ``merge``'s locks and manifest).
    ``links``: for each absolute path of ``files``, the project-relative symlink leading to it
    (a config symlinked out of the project). Returns whether anything changed; raises as
    :meth:`Journal.commit`."""
    unit = Journal(root, name, keep_mode=keep_mode)
    for path, text in files.items():
        unit.write(path, text, via=(links or {}).get(path))
    for path in remove:
        unit.remove(path)
    return unit.commit()


def remove_cell(root: Path, cell: str, paths: Iterable[str]) -> None:
    """Delete a cell's ``paths`` (files, and folders ending in ``/`` with every file under them)
    as one unit named after the cell: a full run removes locks of cells the matrix drops."""
    replace_files(root, cell, {}, files_under(root, paths))


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
        files += [f.relative_to(root).as_posix() for f in found if not f.name.endswith(TMP_SUFFIX)]
    return files


def pending(root: Path) -> list[str]:
    """The names of the units a run left under ``root`` (records and unit folders), sorted."""
    folder = root / JOURNALS
    if not folder.is_dir():
        return []
    names = {p.name[: -len(".json")] for p in folder.glob("*.json")} | {p.name[:-2] for p in folder.glob("*.d")}
    if not names and any(folder.iterdir()):  # a record's own temporary: killed while writing it
        names.add("(a record being written)")
    return sorted(names)


def recover(root: Path) -> list[str]:
    """Finish (``committed``) or roll back (``prepared``) every unit a killed run left under
    ``root``; returns their names. Call holding the run lock. A record is read as data and
    confined: each entry renames a temporary of its unit's folder (or one beside its target, as
    lockgen names them) over a file inside ``root`` (absolute only for a file outside it that
    the unit wrote through a symlink), and removes only files inside ``root``; a record that says
    anything else is not replayed (it is removed, with a warning). Then every temporary a killed
    run left is removed (:func:`clean_temporaries`).

    The journal's folder itself is never followed: a symbolic link (or a file) there, or on the
    way to it, raises :class:`~lockgen.locks.store.LinkedWork` (exit 2) before anything is read or
    deleted. A record or unit folder in it that is a link is removed itself, never what it leads
    to (a record is read only as a regular file: :func:`~lockgen.runtime.bounded.read_file`)."""
    _refuse_linked(root, depth=0)
    folder = root / JOURNALS
    done = []
    for record in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        name = record.name[: -len(".json")]
        try:
            data = load_json(read_file(record, f"{JOURNALS}/{record.name}", MAX_RECORD), f"{JOURNALS}/{record.name}")
            state, staged, gone = _record(data)
            problem = _record_problem(root, name, staged, gone)
            if problem:
                raise ValueError(problem)
            if state == "committed":
                _apply(root, staged, gone)
                log.warning("finished writing %s, which a killed run had left half-written", name)
            else:
                for tmp, *_ in staged:
                    (root / tmp).unlink(missing_ok=True)
                log.warning("rolled back %s, which a killed run had left unfinished: its files are as they were", name)
        except LockgenError as exc:  # refused unread (a FIFO, a device, huge) or not JSON: not replayed
            log.warning(
                "could not finish %s left by a killed run (%s); run lockgen all to write it again", record.name, exc
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            log.warning(
                "could not finish %s left by a killed run (%s); run lockgen all to write it again", record.name, exc
            )
        record.unlink(missing_ok=True)
        _remove_folder(folder / f"{name}.d")
        done.append(name)
    for left in sorted(folder.glob("*.d")) if folder.is_dir() else []:  # killed before its record
        _remove_folder(left)
        done.append(left.name[:-2])
    return done


def _record(data: object) -> tuple[str, list[tuple[str, ...]], list[str]]:
    """``(state, replace entries, removals)`` of a record as :class:`Journal` writes it
    (``{"state": …, "replace": [[temporary, target], …], "remove": [path, …]}``; no ``state``: a
    record of an older lockgen, written at its commit). Raises ``ValueError`` naming the key for
    any other shape: a string is not an array of paths, a table is not a list of entries."""
    if not isinstance(data, dict):
        raise ValueError(f"not a journal record (a JSON {type(data).__name__}, not an object)")
    state, replace, remove = data.get("state", "committed"), data.get("replace"), data.get("remove")
    if state not in ("prepared", "committed"):
        raise ValueError("state: must be prepared or committed")
    if not isinstance(replace, list) or not isinstance(remove, list):
        raise ValueError(f"{'replace' if not isinstance(replace, list) else 'remove'}: must be an array")
    return state, [_entry(entry) for entry in replace], [_text(path) for path in remove]


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a path, got {type(value).__name__}")
    return value


def _entry(value: object) -> tuple[str, ...]:
    """One ``replace`` entry of a record: ``[temporary, target]`` or ``[temporary, target, link]``."""
    if not isinstance(value, list) or len(value) not in (2, 3):
        raise TypeError("an entry of replace is not [temporary, target] or [temporary, target, link]")
    return tuple(_text(part) for part in value)


def _record_problem(root: Path, name: str, staged: list[tuple[str, ...]], gone: list[str]) -> str | None:
    """Why a record's entries are not ones :class:`Journal` writes (None: they are). A record
    is read like any input from elsewhere (a fork may commit ``.lockgen/``): every target lies
    inside the project after symlinks, except one outside it named together with the project's
    symlink that still leads there (a config symlinked out); every temporary is a regular file
    (no symlink) in the unit's folder inside the project, or beside its target."""
    from lockgen.locks.paths import folder_problem, resolved_inside

    for path in gone:
        if folder_problem(path) or not resolved_inside(root / path, root):
            return f"it removes {path!r}, not a file inside the project"
    for tmp, path, *via in staged:
        if os.path.isabs(path):
            link = via[0] if via else None
            if (
                link is None
                or folder_problem(link)
                or not os.path.islink(root / link)
                or os.path.realpath(root / link) != os.path.normpath(path)
            ):
                return f"it names {path!r}, outside the project, and no symlink of the project leads there"
        elif folder_problem(path) or not resolved_inside(root / path, root):
            return f"it names {path!r}, not a file inside the project"
        if os.path.islink(root / tmp):
            return f"its temporary {tmp!r} is a symlink"
        tmp_parent, _, tmp_name = tmp.rpartition("/")
        inside = (
            tmp_parent == f"{JOURNALS}/{name}.d" and _INSIDE.fullmatch(tmp_name) and resolved_inside(root / tmp, root)
        )
        parent, _, base = path.rpartition("/")
        beside = (
            tmp_parent == parent
            and re.fullmatch(re.escape(f".{base}.") + r"[0-9a-f]{8}" + re.escape(TMP_SUFFIX), tmp_name)
            and (os.path.isabs(tmp) or (not folder_problem(tmp) and resolved_inside(root / tmp, root)))
        )
        if not inside and not beside:
            return f"it renames {tmp!r}, which is not a temporary of {path!r}"
    return None


def clean_temporaries(root: Path, locks: str) -> list[str]:
    """Delete the temporaries a killed run left: ``.<name>.<8 hex>.tmp`` in the locks folder and
    its cell folders, in the work folder and the journal folder (a record's own, the stamp's),
    and the scratch copies of the locks a killed ``bump`` or ``--dry-run`` left
    (``.lockgen/stage-*``). Returns their project-relative paths. Call holding the run lock."""
    found = []
    places = [(root / locks, True), (root / WORK, False), (root / JOURNALS, False)]
    home = root.resolve()
    for folder, deep in places:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob(f".*{TMP_SUFFIX}") if deep else folder.glob(f".*{TMP_SUFFIX}")):
            if not path.resolve().is_relative_to(home):  # a folder linked out of the project: not ours to delete
                continue
            if _BESIDE.fullmatch(path.name) and path.is_file():
                path.unlink(missing_ok=True)
                found.append(path.relative_to(root).as_posix())
    for stage in sorted((root / WORK).glob("stage-*")) if (root / WORK).is_dir() else []:
        shutil.rmtree(stage, ignore_errors=True)
        found.append(stage.relative_to(root).as_posix())
    return found


def settle(root: Path, locks: str | None = None) -> list[str]:
    """At a command's entry, before anything reads the project at ``root``: finish or roll back
    what a killed run left (:func:`recover`) and remove its temporaries
    (:func:`clean_temporaries`), holding the run lock. Touches nothing (and takes no lock) when
    nothing was left; leaves everything when another run holds the lock (its units are in
    flight). Returns the units settled. Raises :class:`~lockgen.locks.store.LinkedWork` (exit 2)
    naming the path when the work folder, an entry directly in it (the journal's folder, the run
    lock, a cell's work folder, a cache) or the way to the journal's folder is a symbolic link:
    every command refuses before anything is read, written or deleted through it."""
    from lockgen.locks.store import Busy, ProjectLock

    _refuse_linked(root, depth=0)  # before anything is read or deleted through a link
    work = root / WORK
    if not pending(root) and not (work.is_dir() and any(work.glob("stage-*"))):
        return []

    try:
        with ProjectLock(root, wait=False):
            done = recover(root)
            clean_temporaries(root, locks or "locks")
            return done
    except Busy:
        return []


def settle_project(start: Path, config: str | None) -> list[str]:
    """:func:`settle` for the project of ``start`` and ``-C``/``--config`` (nothing when there is
    none: the command says so itself)."""
    from lockgen.config import find_config

    try:
        root = find_config(start, config).parent
    except LockgenError:  # no config (yet: an init stopped before writing it): the folder named
        folder = (start / config) if config else start
        return settle(folder) if folder.is_dir() else []
    return settle(root)
