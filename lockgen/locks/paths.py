"""Paths and names read from files lockgen did not just write, confined before anything uses them.

A manifest, a lock header, a shard's manifest and a journal name files (``locks/<cell>.txt``,
``locks/<cell>/<layer>.txt``) and cells and layers whose names become file names
(``.lockgen/install/<cell>/<layer>.txt``). Any of them may come from a fork, a downloaded release
or a CI runner (issue 15). Every such value passes these checks before it is read or written:

* :func:`name_problem`: a cell or layer name is a *plain name*: letters, digits, ``.``, ``_``,
  ``-``, ``+``, starting with a letter or digit; never ``/``, ``\\``, ``..`` or a drive.
* :func:`path_problem` (pure): a path is project-relative text with ``/`` separators, no empty,
  ``.`` or ``..`` segment, no backslash, no drive or leading ``/``, and under the locks folder
  (``locks/…``).
* :func:`confine` (on disk): the same, then the path resolved after symlinks must still be under
  the locks folder, and the locks folder (resolved) under the project root: a committed symlink
  ``locks/x.txt -> /etc/passwd`` is refused like the path ``../../etc/passwd``.

Each returns or raises a message naming the *field* (``cells.linux-x86_64-cpu-py3.12.layers[1].lock``)
so that the error says which value was refused; :class:`~lockgen.runtime.errors.InputError` is exit 2.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path

from lockgen.runtime.errors import InputError, LockgenError, Problem
from lockgen.locks.lock import Header

__all__ = [
    "NAME", "confine", "confine_file", "confined_problem", "folder_problem", "name_problem", "path_problem", "refs_problem",
    "resolved_inside",
]  # fmt: skip

#: A plain cell or layer name (the manifest schema's cell names are a subset).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")


def name_problem(value: object) -> str | None:
    """Why ``value`` is not a plain name (None: it is one)."""
    if not isinstance(value, str):
        return f"expected a name (a string), got {_kind(value)}"
    if not NAME.fullmatch(value) or ".." in value:
        return f"{value!r} is not a plain name (letters, digits, '.', '_', '-', '+'; no '/', '\\' or '..')"
    return None


def _segments_problem(value: str) -> str | None:
    if not value:
        return "an empty path"
    if "\0" in value or "\\" in value:
        return f"{value!r} holds a backslash or NUL (paths use '/')"
    if value.startswith("/") or re.match(r"[A-Za-z]:", value):
        return f"{value!r} is absolute; paths are relative to the project root"
    if any(part in ("", ".", "..") for part in value.split("/")):
        return f"{value!r} has an empty, '.' or '..' segment"
    return None


def path_problem(value: object, locks: str) -> str | None:
    """Why ``value`` is not a path inside the locks folder ``locks`` (project-relative, e.g.
    ``locks``), by its text alone (None: it is one). See :func:`confine` for the check on disk."""
    if not isinstance(value, str):
        return f"expected a path (a string), got {_kind(value)}"
    problem = _segments_problem(value)
    if problem:
        return problem
    if not value.startswith(f"{locks.rstrip('/')}/"):
        return f"{value!r} is not inside the locks folder {locks}/"
    return None


def folder_problem(value: object) -> str | None:
    """Why ``value`` is not a project-relative folder (a find-links folder; None: it is one)."""
    if not isinstance(value, str):
        return f"expected a path (a string), got {_kind(value)}"
    return _segments_problem(value.rstrip("/"))


#: Folders resolved in a read-only pass (:func:`resolving_once`); None outside one.
_RESOLVED: ContextVar[dict[str, Path] | None] = ContextVar("lockgen_resolved", default=None)


#: In a read-only pass, :func:`resolved_inside`'s answers by (inner, outer): the locks folder is
#: confined for every file under it, and each file of a cell twice (its state, then the manifest).
_INSIDE: ContextVar[dict[tuple[str, str], bool] | None] = ContextVar("lockgen_inside", default=None)


@contextlib.contextmanager
def resolving_once() -> Iterator[None]:
    """Within it, each folder is resolved once (``check`` and the no-op path confine ~5 files a
    cell, each under the same few folders: resolving every one from the root cost ~1 ms a cell).
    Only for a pass that writes nothing: a folder swapped for a symlink meanwhile is not seen.
    Each lock text is parsed once in it too (:func:`lockgen.locks.lock.parsing_once`)."""
    from lockgen.locks.lock import parsing_once

    token = _RESOLVED.set({})
    answered = _INSIDE.set({})
    try:
        with parsing_once():
            yield
    finally:
        _INSIDE.reset(answered)
        _RESOLVED.reset(token)


def _resolved(path: Path) -> Path:
    cache = _RESOLVED.get()
    if cache is None:
        return path.resolve()
    key = str(path)
    found = cache.get(key)
    if found is None:
        found = cache[key] = path.resolve()
    return found


def resolved_inside(inner: Path, outer: Path) -> bool:
    """Whether ``inner`` resolved (symlinks followed; it need not exist) is ``outer`` resolved
    or under it. In a :func:`resolving_once` pass a file that is not a symlink is its folder
    resolved (once) and its name, and each question is answered once."""
    answered = _INSIDE.get()
    if answered is None:
        return _inside(inner, outer)
    key = (str(inner), str(outer))
    found = answered.get(key)
    if found is None:
        found = answered[key] = _inside(inner, outer)
    return found


def _inside(inner: Path, outer: Path) -> bool:
    try:
        if _RESOLVED.get() is not None and inner.name not in ("", ".", "..") and not inner.is_symlink():
            target = _resolved(inner.parent) / inner.name
        else:
            target = inner.resolve()
        target.relative_to(_resolved(outer))
    except (ValueError, OSError, RuntimeError):  # another tree, a loop of symlinks
        return False
    return True


def confined_problem(root: Path, locks: str, value: object) -> str | None:
    """Why ``value`` may not be used as a file of the locks folder (None: it may): it fails
    :func:`path_problem`, the locks folder resolves outside ``root``, or ``root / value``
    resolved after symlinks lies outside the locks folder. Reads no file."""
    problem = path_problem(value, locks)
    if problem is None and not resolved_inside(root / locks, root):
        problem = f"the locks folder {locks}/ leads outside the project (a symlink)"
    if problem is None and not resolved_inside(root / str(value), root / locks):
        problem = f"{value!r} leads outside the locks folder {locks}/ (a symlink)"
    return problem


def confine(root: Path, locks: str, value: object, field: str, file: str | None = None) -> Path:
    """``root / value`` once :func:`confined_problem` has none. Raises
    :class:`~lockgen.runtime.errors.InputError` naming ``file`` and ``field`` otherwise; reads nothing."""
    problem = confined_problem(root, locks, value)
    if problem is not None:
        raise InputError(Problem(file=file, key=field, message=problem))
    return root / str(value)


def confine_file(root: Path, locks: str, value: str, error: Callable[[str], LockgenError]) -> Path:
    """:func:`confine` for a path lockgen's own files name (a layer a main lock lists): raises
    ``error("<value>: <why>")`` (e.g. :class:`~lockgen.runtime.errors.LockFormatError`)."""
    problem = confined_problem(root, locks, value)
    if problem is not None:
        raise error(f"{value}: refused: {problem}")
    return root / value


def refs_problem(header: Header, path: str) -> str | None:
    """Why the main lock at the project-relative ``path`` names another file than lockgen's
    layout gives (None: it names none): each ``layer`` field must name a plain layer name and
    the file ``<path without .txt>/<name>.txt``, its ``pylock`` field
    ``<path without .txt>/pylock.toml``. lockgen writes nothing else, so a lock that says
    otherwise is not one of its own (a hand edit, or a lock made to read other files)."""
    folder = path.removesuffix(".txt")
    for ref in header.layers:
        problem = name_problem(ref.name)
        if problem:
            return f"its layer field names {problem}"
        if ref.path != f"{folder}/{ref.name}.txt":
            return f"its layer {ref.name} is at {ref.path!r}, not {folder}/{ref.name}.txt where lockgen writes it"
    if header.pylock is not None and header.pylock.path != f"{folder}/pylock.toml":
        return f"its pylock field names {header.pylock.path!r}, not {folder}/pylock.toml"
    return None


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__
