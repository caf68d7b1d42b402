"""A run that writes its locks to a scratch copy of the locks folder: ``--dry-run`` and ``lockgen bump``.

:meth:`Stage.create` copies the project's locks folder into ``.lockgen/stage-<random>/<locks>/``
(lockgen's work folder, never committed); the pipeline then writes every lock, layer, pylock and
the manifest there instead of into the project (:func:`lockgen.run.lock.lock` with ``stage``).
Afterwards :meth:`Stage.changes` lists what the run would change in the project; ``--dry-run``
reports it and :meth:`Stage.discard` drops the copy, and ``lockgen bump`` :meth:`Stage.commit`
writes it together with its own edits (config, templates) as one journaled unit
(:func:`lockgen.locks.journal.replace_files`): all of it, or, when a re-lock failed, none of it.
Call every method while holding the project's run lock (:class:`lockgen.locks.store.ProjectLock`).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lockgen.config import WORK
from lockgen.runtime.bounded import read_file
from lockgen.runtime.errors import InputError
from lockgen.locks import journal, store
from lockgen.runtime.writing import write_error

__all__ = ["JOURNAL", "Stage"]

#: The journal name of a staged commit (:func:`lockgen.locks.journal.replace_files`).
JOURNAL = "bump"
_PREFIX = "stage-"


@dataclass(frozen=True)
class Stage:
    """A scratch copy of ``root/<locks>`` at ``out/<locks>``; ``out`` stands in for the project
    root wherever the run writes a lock file."""

    root: Path
    out: Path
    locks: str

    @classmethod
    def create(cls, root: Path, locks: str) -> Stage:
        """Copy the locks folder (bytes, symlinks as links) into a new stage folder, after removing
        the stage folders a killed run left. Raises a user error when the work folder cannot be
        written."""
        work = store.work_folder(root)  # refuses a link in it: a stage-* there is deleted
        try:
            for old in work.glob(f"{_PREFIX}*"):
                shutil.rmtree(old, ignore_errors=True)
            out = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=work))
            source = root / locks
            if source.is_dir():
                shutil.copytree(source, out / locks, symlinks=True, copy_function=_copy)
            else:
                (out / locks).mkdir(parents=True)
        except OSError as exc:
            raise write_error(WORK, exc) from None
        return cls(root=root, out=out, locks=locks)

    def changes(self) -> tuple[dict[str, str], list[str]]:
        """``({project-relative path: text}, [paths removed])``: the files of the locks folder the
        run wrote differently (or anew), and those it removed. A file whose text is the same up to
        line endings is no change (a CRLF checkout, C17)."""
        before, after = _files(self.root / self.locks), _files(self.out / self.locks)
        written: dict[str, str] = {}
        for rel in sorted(after):
            data = after[rel].read_bytes()
            old = before.get(rel)
            if old is not None and store.holds(old, data.decode("utf-8"), exact=False):  # never a FIFO, a device or a huge file
                continue
            written[f"{self.locks}/{rel}"] = data.decode("utf-8")
        removed = [f"{self.locks}/{rel}" for rel in sorted(before.keys() - after.keys())]
        return written, removed

    def commit(self, edits: Mapping[str, str], links: Mapping[str, str] | None = None) -> list[str]:
        """Write ``edits`` (project-relative path -> text: the config, templates) and the run's lock
        changes as one unit; returns the paths written or removed. ``links``: for an absolute
        path of ``edits``, the project's symlink leading to it (:func:`journal.replace_files`).
        Raises a user error naming the file that could not be written; then nothing of the unit
        was replaced."""
        written, removed = self.changes()
        files = {**dict(edits), **written}
        journal.replace_files(self.root, JOURNAL, files, removed, keep_mode=True, links=links)
        return [*files, *removed]

    def discard(self) -> None:
        shutil.rmtree(self.out, ignore_errors=True)


def _files(folder: Path) -> dict[str, Path]:
    """``{relative path: path}`` of the files under ``folder`` (none when it does not exist),
    without temporaries a killed run left."""
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(folder).as_posix(): p
        for p in folder.rglob("*")
        if (p.is_file() or p.is_symlink()) and not (p.name.startswith(".") and p.name.endswith(".tmp"))
    }


def _copy(src: str, dst: str) -> None:
    """Copy one committed file into the stage through the one bounded reader: a FIFO, a device
    or a file larger than any lock is left out (the stage's run writes the cell anew; the
    project's own readers name the file), never waited on or copied whole."""
    try:
        data = read_file(Path(src), src)
    except InputError:
        return
    Path(dst).write_bytes(data)
    shutil.copymode(src, dst)
