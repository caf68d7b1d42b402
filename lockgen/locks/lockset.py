"""A set of locks as committed: every cell's main lock, its layer locks and its ``pylock.toml``.

The readers of what the pipeline wrote (``lockgen diff``, the change report of a run) compare
two sets of locks. A :class:`LockSet` is read from a folder on disk (the project's ``locks/``,
or any folder holding a copy of one, such as a CI shard artifact) with :meth:`LockSet.from_folder`,
or from a git revision with :meth:`LockSet.from_git` (``git ls-tree`` and one ``git cat-file
--batch`` process: no checkout, no temporary copy).

Layout read (``<locks>`` is the project's locks folder, ``locks`` by default)::

    <locks>/<cell>.txt                 main lock (header kind ``main``); other kinds are ignored
    <locks>/<cell>/pylock.toml         its PEP 751 lock, if present
    <locks>/<cell>/<layer>.txt         the layer locks the main lock's ``layer`` fields name
    <locks>/manifest.json              read only for cells listed without a lock (``status``)

A file that cannot be read (not a lock lockgen can parse, not UTF-8, a layer file the main lock
lists but that is missing) becomes an :class:`Unreadable` record, never an exception. Text is
parsed only by :mod:`lockgen.locks.lock` and :mod:`lockgen.locks.pylockfile`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import posixpath
import re
import subprocess
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.pylock import Pylock

from lockgen.runtime.errors import LockFormatError, UsageError
from lockgen.locks import pylockfile
from lockgen.runtime.bounded import read_file
from lockgen.locks.lock import LayerKind, Lock, decode, older_lock
from lockgen.locks.paths import folder_problem, refs_problem, resolved_inside

__all__ = ["CellLocks", "CellStatus", "LockSet", "Unreadable", "is_git_repository"]

MANIFEST = "manifest.json"
_LINE = re.compile(r"^:(\d+:)?\s*")  # the ":12: " after a file name in a message
MAIN = "main"
PYLOCK = "pylock"

#: ``read(rel)``: the bytes of the file at ``rel`` (relative to the locks folder), or None
#: when it does not exist. May raise :class:`OSError`.
Reader = Callable[[str], "bytes | None"]


@dataclass(frozen=True, kw_only=True)
class CellLocks:
    """One cell's locks. ``layers`` maps a layer name (``optional-flash-attn``, ``no-deps``,
    ``unhashed``) to its lock, in the order the main lock lists them; ``pylock`` is None when the
    cell has no readable ``pylock.toml``. Every header's ``path`` is project-relative
    (``locks/<cell>.txt``), whichever copy it was read from."""

    name: str
    main: Lock
    layers: Mapping[str, Lock] = field(default_factory=dict)
    pylock: Pylock | None = None


@dataclass(frozen=True, kw_only=True)
class CellStatus:
    """A cell the manifest lists without a lock of its own: ``status`` is ``skipped``, ``alias``,
    ``failed`` (or whatever the manifest says), ``reason`` why (for an alias: the cell it reuses)."""

    status: str
    reason: str = ""

    def text(self) -> str:
        """``failed: no wheel for …`` (``status: reason``), or just the status."""
        return f"{self.status}: {self.reason}" if self.reason else self.status

    def short(self) -> str:
        """:meth:`text` with the reason cut to its first sentence (a change report repeats it
        in ``cell added (was failed: …)``; the whole reason is in the manifest)."""
        from lockgen.runtime.words import first_sentence

        return f"{self.status}: {first_sentence(self.reason)}" if self.reason else self.status


@dataclass(frozen=True, kw_only=True)
class Unreadable:
    """A file of the set that could not be read. ``file``: where it was read (``HEAD:locks/a.txt``,
    ``/tmp/shard/a.txt``); ``cell``: the cell it belongs to (None for the manifest); ``layer``:
    ``main``, a layer name or ``pylock``; ``message``: why, naming the file (and line); ``sha256``:
    of its bytes ("" when missing), so an unchanged unreadable file is no change."""

    file: str
    cell: str | None
    layer: str
    message: str
    sha256: str = ""

    @property
    def reason(self) -> str:
        """``message`` without the file and line it starts with (the same in every cell)."""
        rest = self.message.removeprefix(self.file)
        return _LINE.sub("", rest) if rest != self.message else self.message


@dataclass(frozen=True, kw_only=True)
class LockSet:
    """The locks of a project at one point: ``cells`` by name (each with a readable main lock),
    ``statuses`` of cells the manifest lists without a lock, ``problems`` (files that could not be
    read) and ``origin`` (a folder or ``git:REV``, for messages)."""

    origin: str
    cells: Mapping[str, CellLocks] = field(default_factory=dict)
    statuses: Mapping[str, CellStatus] = field(default_factory=dict)
    problems: tuple[Unreadable, ...] = ()

    def cell_names(self) -> frozenset[str]:
        """Every cell that has a main lock here, readable or not."""
        broken = {p.cell for p in self.problems if p.cell is not None and p.layer == MAIN}
        return frozenset(self.cells) | broken

    def only(self, cells: Collection[str]) -> LockSet:
        """The same set restricted to ``cells`` (problems not tied to a cell are dropped)."""
        keep = set(cells)
        return LockSet(
            origin=self.origin,
            cells={k: v for k, v in self.cells.items() if k in keep},
            statuses={k: v for k, v in self.statuses.items() if k in keep},
            problems=tuple(p for p in self.problems if p.cell in keep),
        )

    @classmethod
    def from_folder(
        cls, folder: Path, locks: str = "locks", label: str | None = None, *, pylocks: bool = True
    ) -> LockSet:
        """Read the locks folder ``folder`` (the project's, or a copy of it anywhere). ``locks``
        is the project-relative name of the locks folder (layer paths in headers start with it);
        ``label`` names the folder in messages (default: ``folder`` itself). A folder that does
        not exist is an empty set. ``pylocks=False`` leaves every ``pylock.toml`` unread (a
        reader of names and versions only: parsing them is most of the time)."""
        try:
            names = sorted(p.name for p in folder.iterdir() if p.is_file())
        except OSError:
            names = []

        def read(rel: str) -> bytes | None:
            if folder_problem(rel) or not resolved_inside(folder / rel, folder):
                raise OSError(f"{rel!r} leads outside the locks folder; refused")
            try:
                return read_file(folder / rel, f"{label if label is not None else folder}/{rel}")
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return None

        shown = label if label is not None else str(folder)
        builder = _Builder(locks=_clean(locks), read=read, show=lambda rel: f"{shown}/{rel}", pylocks=pylocks)
        return builder.build(shown, names)

    @classmethod
    def from_git(cls, root: Path, rev: str, locks: str = "locks") -> LockSet:
        """Read ``<locks>`` as of git revision ``rev`` of the repository holding ``root`` (the
        project folder; ``locks`` is relative to it). Raises :class:`UsageError` when ``root``
        is not in a git repository or ``rev`` is not a commit there."""
        commit = resolve_revision(root, rev)
        folder = _clean(locks)
        prefix = _git(root, "rev-parse", "--show-prefix").decode().strip()
        listing = _git(root, "ls-tree", "-r", "-z", "--full-name", commit, "--", folder)
        base = f"{prefix}{folder}/"
        wanted: dict[str, str] = {}  # rel -> blob id
        for item in listing.decode("utf-8", "surrogateescape").split("\0"):
            meta, _, path = item.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob" and path.startswith(base) and _interesting(path):
                wanted[path[len(base) :]] = parts[2]
        blobs = _cat_blobs(root, list(dict.fromkeys(wanted.values())))
        files = {rel: blobs[oid] for rel, oid in wanted.items() if oid in blobs}
        names = sorted(rel for rel in files if "/" not in rel)
        show = f"{rev}:{prefix}{folder}"
        return _Builder(locks=folder, read=files.get, show=lambda rel: f"{show}/{rel}").build(f"git:{rev}", names)


def _clean(locks: str) -> str:
    return posixpath.normpath(locks.replace("\\", "/")).strip("/")


def _interesting(path: str) -> bool:
    return path.endswith((".txt", ".toml", f"/{MANIFEST}"))


@dataclass
class _Builder:
    """Builds a :class:`LockSet` from ``read`` (bytes of a path relative to the locks folder)."""

    locks: str
    read: Reader
    show: Callable[[str], str]
    pylocks: bool = True
    problems: list[Unreadable] = field(default_factory=list)

    def build(self, origin: str, names: Sequence[str]) -> LockSet:
        cells: dict[str, CellLocks] = {}
        for name in names:
            if name.endswith(".txt"):
                cell = name.removesuffix(".txt")
                main = self.lock(name, cell, MAIN)
                if main is not None and main.header.kind is LayerKind.MAIN:
                    cells[cell] = self.cell(cell, main)
        files = {name.removesuffix(".txt") for name in names if name.endswith(".txt")}
        statuses = {k: v for k, v in self.statuses().items() if k not in files and v.status != "locked"}
        return LockSet(origin=origin, cells=cells, statuses=statuses, problems=tuple(self.problems))

    def cell(self, name: str, main: Lock) -> CellLocks:
        layers: dict[str, Lock] = {}
        problem = refs_problem(main.header, f"{self.locks}/{name}.txt")
        if problem:  # a main lock naming files elsewhere: none of them is read
            self.problem(self.show(f"{name}.txt"), name, MAIN, f"{self.show(f'{name}.txt')}: {problem}")
            return CellLocks(name=name, main=main, layers={}, pylock=None)
        for ref in main.header.layers:
            rel = (
                ref.path[len(self.locks) + 1 :]
                if ref.path.startswith(f"{self.locks}/")
                else f"{name}/{posixpath.basename(ref.path)}"
            )
            lock = self.lock(rel, name, ref.name, listed_by=main.header.path)
            if lock is not None:
                layers[ref.name] = lock
        pylock = self.pylock(f"{name}/{pylockfile.PYLOCK_NAME}", name) if self.pylocks else None
        return CellLocks(name=name, main=main, layers=layers, pylock=pylock)

    def text(self, rel: str, cell: str | None, layer: str, listed_by: str | None = None) -> str | None:
        """The file's text; None (and a problem recorded) when it cannot be had."""
        where = self.show(rel)
        try:
            data = self.read(rel)
        except OSError as exc:
            self.problem(where, cell, layer, f"{where}: cannot read it ({exc.strerror or exc})")
            return None
        if data is None:
            if listed_by is not None:
                self.problem(where, cell, layer, f"{where}: missing, but {listed_by} lists it as layer {layer}")
            return None
        try:
            return decode(data, where)
        except LockFormatError as exc:
            self.problem(where, cell, layer, str(exc), data)
            return None

    def lock(self, rel: str, cell: str, layer: str, listed_by: str | None = None) -> Lock | None:
        text = self.text(rel, cell, layer, listed_by)
        if text is None:
            return None
        try:
            lock = Lock.parse(text, self.show(rel))
        except LockFormatError as exc:
            message = str(exc)
            if (
                older_lock(text) and "older lockgen" not in message
            ):  # lockgen wrote it: another layout, not a broken file
                message = (
                    f"{self.show(rel)}: written by an older lockgen, in a lock format this one does not read "
                    f"({message.removeprefix(self.show(rel)).lstrip(':0123456789 ')}); re-lock it with lockgen all"
                )
            self.problem(self.show(rel), cell, layer, message, text.encode())
            return None
        header = dataclasses.replace(lock.header, path=f"{self.locks}/{rel}")
        return dataclasses.replace(lock, header=header)

    def pylock(self, rel: str, cell: str) -> Pylock | None:
        text = self.text(rel, cell, PYLOCK)
        if text is None:
            return None
        try:
            return pylockfile.loads(text, self.show(rel))
        except LockFormatError as exc:
            self.problem(self.show(rel), cell, PYLOCK, str(exc), text.encode())
            return None

    def statuses(self) -> dict[str, CellStatus]:
        """``cells.<name>.status`` (and ``reason``) of the manifest, if there is one."""
        text = self.text(MANIFEST, None, MANIFEST)
        if text is None:
            return {}
        from lockgen.locks.jsonfile import load_json
        from lockgen.runtime.errors import InputError

        where = self.show(MANIFEST)
        try:
            data = load_json(text, where, "a manifest")
        except InputError as exc:
            why = exc.problems[0].message if exc.problems else str(exc)
            self.problem(where, None, MANIFEST, f"{where}: not a manifest lockgen can read ({why})", text.encode())
            return {}
        cells = data.get("cells", {}) if isinstance(data, dict) else None
        if not isinstance(cells, dict):
            said = f"cells: must be an object, not {type(cells).__name__}" if isinstance(data, dict) else (
                f"must be an object, not {type(data).__name__}"
            )
            fix = "restore it (git checkout) or run lockgen all to write it again"
            self.problem(where, None, MANIFEST, f"{where}: not a manifest lockgen can read ({said}); {fix}", text.encode())
            return {}
        return {str(name): _status(entry) for name, entry in cells.items() if isinstance(entry, dict)}

    def problem(self, file: str, cell: str | None, layer: str, message: str, data: bytes | None = None) -> None:
        digest = hashlib.sha256(data).hexdigest() if data is not None else ""
        self.problems.append(Unreadable(file=file, cell=cell, layer=layer, message=message, sha256=digest))


def _status(entry: Mapping[str, object]) -> CellStatus:
    """A manifest entry's status: ``status``/``reason``; older manifests said ``skipped: why`` and
    ``alias_of: cell`` instead. Values of another type read as absent (the manifest's own
    reader, :mod:`lockgen.locks.manifestfile`, refuses them where they matter: ``install``)."""
    status, reason, alias, skipped = (entry.get(key) for key in ("status", "reason", "alias_of", "skipped"))
    alias = alias if isinstance(alias, str) else None
    if isinstance(status, str):
        said = reason if isinstance(reason, str) and reason else (f"alias of {alias}" if alias else "")
        return CellStatus(status=status, reason=said)
    if skipped:
        return CellStatus(status="skipped", reason=skipped if isinstance(skipped, str) else "")
    if alias:
        return CellStatus(status="alias", reason=f"alias of {alias}")
    return CellStatus(status="locked")


# --------------------------------------------------------------------------- git, in one place


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """stdout of ``git -C root ARGS``. Raises :class:`UsageError` when git is not installed or
    fails (its message included)."""
    argv = ["git", "-C", str(root), *args]
    env = {**os.environ, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=False)
    except OSError as exc:
        raise UsageError(f"cannot run git ({exc.strerror or exc}); pass two folders of locks instead") from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        raise UsageError(f"git {' '.join(args[:1])} failed in {root}: {why}")
    return done.stdout


def is_git_repository(root: Path) -> bool:
    """Whether ``root`` is inside a git work tree (False too when git is not installed)."""
    try:
        return _git(root, "rev-parse", "--is-inside-work-tree").strip() == b"true"
    except UsageError:
        return False


def resolve_revision(root: Path, rev: str) -> str:
    """The commit id ``rev`` names in the repository of ``root``. Raises :class:`UsageError`
    naming ``rev`` when it names no commit (or ``root`` is not in a repository)."""
    if not is_git_repository(root):
        raise UsageError(f"{root} is not in a git repository; pass two folders of locks to compare instead")
    if not rev or rev.startswith("-"):
        raise UsageError(f"{rev!r} is not a git revision")
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()
    except UsageError:
        raise UsageError(f"no git revision {rev!r} in {root} (and no folder of that name)") from None


def _cat_blobs(root: Path, oids: list[str]) -> dict[str, bytes]:
    """The contents of blobs ``oids``, read by one ``git cat-file --batch`` process."""
    if not oids:
        return {}
    out = _git(root, "cat-file", "--batch", stdin="".join(f"{oid}\n" for oid in oids).encode())
    blobs: dict[str, bytes] = {}
    pos = 0
    for oid in oids:
        end = out.index(b"\n", pos)
        meta = out[pos:end].split()
        if len(meta) != 3:  # "<oid> missing"
            pos = end + 1
            continue
        size = int(meta[2])
        blobs[oid] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return blobs
