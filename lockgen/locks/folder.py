"""The locks folder as lockgen finds it: whether a lock is what lockgen wrote, which files are left over.

Read-only, from the files alone (the lock model reads them): :func:`edited` tells a main lock and
the files it lists (its ``pylock.toml``, its layers) from hand-edited or mixed ones, and
:func:`orphans` finds the locks of cells the matrix no longer resolves. ``lockgen check`` reports
both; ``lockgen all`` and ``lockgen merge`` remove orphans; the no-op path needs neither.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from lockgen.runtime.bounded import read_file
from lockgen.runtime.errors import InputError, LockFormatError
from lockgen.locks.lock import LayerKind, Lock, decode, intact, text_sha256
from lockgen.locks.paths import confine_file, refs_problem

__all__ = ["edited", "orphan_cells", "orphans"]


def edited(root: Path, path: str, main: Lock) -> str | None:
    """Why the main lock at ``path`` or one of its layer files is not what lockgen wrote (None: it
    is). The files the main lock names are read only where lockgen writes them
    (:func:`lockgen.locks.paths.refs_problem`), inside the locks folder after symlinks; any other
    file in the cell's folder is named."""
    locks = posixpath.dirname(path)

    def text_of(rel: str) -> str | None:
        try:
            return decode(read_file(confine_file(root, locks, rel, LockFormatError), rel), rel)
        except (OSError, LockFormatError, InputError):
            return None

    text = text_of(path)
    if text is None or not intact(text):
        return f"{path} was changed by hand (its content-sha256 does not match)"
    problem = refs_problem(main.header, path)
    if problem:
        return f"{path}: {problem}"
    listed = set()
    ref_pylock = main.header.pylock
    if ref_pylock is not None:
        listed.add(ref_pylock.path)
        pylock_text = text_of(ref_pylock.path)
        if pylock_text is None:
            return f"{ref_pylock.path} is missing"
        if text_sha256(pylock_text) != ref_pylock.sha256:
            return f"{ref_pylock.path} is not the pylock.toml {path} lists (edited, or from another run)"
    for ref in main.header.layers:
        listed.add(ref.path)
        layer_text = text_of(ref.path)
        if layer_text is None:
            return f"{ref.path} is missing"
        if text_sha256(layer_text) != ref.sha256 or not intact(layer_text):
            return f"{ref.path} is not the layer {path} lists (edited, or from another run)"
    folder = root / path.removesuffix(".txt")
    for extra in sorted(folder.iterdir()) if folder.is_dir() and not folder.is_symlink() else []:
        rel = extra.relative_to(root).as_posix()
        if rel in listed or _TEMPORARY.fullmatch(extra.name):
            continue
        if extra.is_file() and not extra.is_symlink() and _is_layer(extra):
            return f"{rel} is a layer lock {path} does not list"
        return f"{rel} is not a file lockgen writes for this cell ({path} does not list it); remove it"
    return None


#: A temporary a killed run left (``.<name>.<8 hex>.tmp``): the next run removes it.
_TEMPORARY = re.compile(r"\..+\.[0-9a-f]{8}\.tmp")


def _is_layer(path: Path) -> bool:
    if path.is_symlink():  # lockgen writes none: not one of its locks
        return False
    try:
        lock = Lock.read(path)
    except LockFormatError:
        return False
    return lock is not None and lock.header.kind is not LayerKind.MAIN


def orphans(root: Path, locks: str, keep: set[str]) -> list[str]:
    """Project-relative lockgen main locks (and cell folders) in the ``locks`` folder whose cell
    is not in ``keep`` (removed from the matrix, or now skipped or an alias): main locks first,
    then folders, each sorted. :func:`orphan_cells` groups them by cell."""
    return [path for _, path in _orphans(root, locks, keep)]


def orphan_cells(root: Path, locks: str, keep: set[str]) -> dict[str, list[str]]:
    """``{cell: [its orphan paths]}`` (see :func:`orphans`), cells sorted; a folder's path ends
    with ``/``: ``{"linux-x86_64-cpu-py3.10": ["locks/linux-x86_64-cpu-py3.10.txt",
    "locks/linux-x86_64-cpu-py3.10/"]}``."""
    grouped: dict[str, list[str]] = {}
    for cell, path in _orphans(root, locks, keep):
        grouped.setdefault(cell, []).append(path if path.endswith(".txt") else f"{path}/")
    return dict(sorted(grouped.items()))


def _orphans(root: Path, locks: str, keep: set[str]) -> list[tuple[str, str]]:
    folder = root / locks
    if not folder.is_dir():
        return []
    found = [(p.stem, p) for p in sorted(folder.glob("*.txt")) if p.stem not in keep and _is_main(p)]
    found += [(p.name, p) for p in sorted(folder.iterdir()) if p.is_dir() and p.name not in keep and _holds_locks(p)]
    return [(cell, f"{locks}/{p.name}") for cell, p in found]


def _is_main(path: Path) -> bool:
    if path.is_symlink():
        return False
    try:
        lock = Lock.read(path)
    except LockFormatError:
        return False
    return lock is not None and lock.header.kind is LayerKind.MAIN


def _holds_locks(folder: Path) -> bool:
    return (folder / "pylock.toml").is_file() or any(_is_layer(p) for p in folder.glob("*.txt"))
