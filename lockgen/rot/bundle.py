"""``lockgen bundle CELL… -o DIR``: the locked files of some cells in one folder that installs
them with no network (an air-gapped machine, a build that must work when an index is gone).

Layout (every path inside ``DIR``; nothing outside it is named)::

    bundle.json                      what the bundle holds: its cells and files (sha256 -> path)
    files/<sha256>/<file name>       every locked artifact, once (content-addressed: a wheel the
                                     cells share is stored once), verified against the lock's hash
    index/<project>/index.html       a PEP 503 index of those files (relative links, #sha256=)
    locks/<cell>.txt, locks/<cell>/  the cells' main locks, layers and pylock.toml, rewritten:
                                     index-url ``index`` (the folder above), no find-links, direct
                                     URLs as ``./files/…`` paths, the pylock's artifacts as paths
    locks/manifest.json              the manifest of those cells (and the detect rules)
    cellselect.py                    the selector (docs/select.md): picks the cell for a machine
    install.sh                       ``./install.sh [CELL]``: a venv and pip, offline

A bundle is a locks folder whose index is a local folder, so installing it is the ordinary
install: ``lockgen install --from DIR CELL``, or from ``DIR`` the manifest's commands
(``uv pip sync --require-hashes --index-url index locks/<cell>.txt``; pip: ``pip install
--require-hashes --index-url index -r locks/<cell>.txt``); both pip (23.2 and later) and uv read a
relative folder laid out as a PEP 503 index. Nothing in it is machine-specific (no absolute path,
no time): the same locks give the same bundle, byte for byte.

Making one: each file is downloaded once through the mirrors (the realm's login, else netrc), or
copied from a local find-links folder, and its sha256 checked against the lock before it is kept
(a mismatch fails naming cell, package, URL and both hashes); a file already in ``DIR/files``
with the right hash is not downloaded again. Layer files are found on their pages by hash
(:mod:`lockgen.rot.locate`). Not bundled: VCS checkouts (refused: they need the network) and the
build backends of packages installed from source (an ``allow-build`` sdist, a local project):
those installs still need a build backend on the machine (warned).
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import os
import posixpath
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from packaging.pylock import Pylock

from lockgen.config import WORK
from lockgen.index.client import HostError
from lockgen.index.pages import PageReader
from lockgen.locks import manifest, pylockfile
from lockgen.locks.journal import Journal, pending, recover
from lockgen.locks.lock import FileRef, LayerKind, LayerRef, Lock, text_sha256
from lockgen.locks.lockset import CellLocks, LockSet
from lockgen.project import Project
from lockgen.rot.locate import LockedFile, locate
from lockgen.runtime.errors import LockgenError, UsageError

__all__ = [
    "BUNDLE_FILE",
    "INDEX",
    "BundleError",
    "BundleResult",
    "bundle_command",
    "check_index",
    "is_bundle",
    "refuse_half_written",
]

BUNDLE_FILE = "bundle.json"
BUNDLE_FORMAT = 1
INDEX = "index"
FILES = "files"
LOCKS = "locks"
JOBS = 8
_CHUNK = 1 << 20
#: Bytes one bundled file may have (the largest CUDA wheels are ~4 GB).
MAX_FILE = 16 * 1024**3


class BundleError(LockgenError):
    """A bundle could not be made: a file that could not be had or does not match its lock
    (exit 1; the bundle folder keeps what it had)."""

    exit_code = 1


def is_bundle(folder: Path) -> bool:
    """Whether ``folder`` holds a bundle lockgen wrote (its ``bundle.json``)."""
    from lockgen.locks.jsonfile import load_json
    from lockgen.runtime.bounded import read_file

    try:
        data = load_json(read_file(folder / BUNDLE_FILE, f"{folder}/{BUNDLE_FILE}"), BUNDLE_FILE)
    except (OSError, LockgenError):
        return False
    return isinstance(data, dict) and data.get("generator") == "lockgen"


@dataclass
class BundleResult:
    """What a bundle run did: ``cells`` bundled, ``files`` stored (``downloaded`` of them fetched
    now, the rest reused), their total ``size`` in bytes, and ``warnings``."""

    folder: str
    cells: tuple[str, ...] = ()
    files: int = 0
    downloaded: int = 0
    size: int = 0
    warnings: list[str] = field(default_factory=list)
    exit_code: int = 0

    def lines(self) -> list[str]:
        out = [f"warning: {w}" for w in self.warnings]
        out.append(
            f"bundled {len(self.cells)} cell{'s' if len(self.cells) != 1 else ''} into {self.folder}: {self.files} files "
            f"({self.downloaded} downloaded, {self.files - self.downloaded} reused), {self.size / 1e6:.1f} MB"
        )
        out.append(f"install with no network: lockgen install --from {self.folder} CELL (or {self.folder}/install.sh)")
        return out


def bundle_command(
    project: Project, names: Sequence[str], output: str, *, mirrors: Sequence[str] = (), jobs: int | None = None
) -> BundleResult:
    """Bundle the cells ``names`` (aliases: the cell they reuse) of ``project`` into ``output``
    (see the module docstring). Raises :class:`UsageError` for an unknown cell, a cell without a
    lock or with a VCS requirement, or an ``output`` that is neither new, empty nor a bundle;
    :class:`BundleError` for a file that cannot be had or does not match its hash."""
    from lockgen.rot.cells import chosen_cells

    if not names:
        raise UsageError("name the cells to bundle (lockgen matrix lists them)")
    locks = project.config.locks
    lockset = LockSet.from_folder(project.root / locks, locks, label=locks)
    cells = chosen_cells(project, lockset, names, ())
    missing = [n for n in names if (project.cell(n).settings.alias or n) not in cells]
    if missing:
        raise UsageError(f"no lock to bundle for {', '.join(missing)}; run `lockgen lock {' '.join(missing)}` first")
    folder = Path(output)
    if folder.is_dir() and not folder.is_symlink() and pending(folder):
        with _held(folder):  # a bundle run stopped while writing: finished or rolled back first
            pass
    _refuse_folder(folder)
    result = BundleResult(folder=output, cells=tuple(cells))
    reader = PageReader(project.mirrors(mirrors))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with _held(folder):
            unit = Journal(folder, "bundle")
            try:
                with reader:
                    located = locate(lockset, cells, reader, jobs or JOBS)
                    if located.unlocated:
                        raise BundleError(
                            *(f"{u.cell} [{u.layer}]: {u.package} {u.version}: {u.reason}" for u in located.unlocated)
                        )
                    _refuse_vcs(lockset, cells)
                    stored = _Store(folder, project.root, reader, result, unit)
                    paths = stored.fetch_all(located.files, jobs or JOBS)
                texts = _index(located.files, paths)
                for name in cells:
                    texts.update(_rewritten(lockset.cells[name], locks, paths, project.root, unit, result))
                view = unit.scratch().with_suffix(".view")  # the new locks, for the manifest to read
                for rel, text in texts.items():
                    if rel.startswith(f"{LOCKS}/"):
                        (view / rel).parent.mkdir(parents=True, exist_ok=True)
                        (view / rel).write_text(text, encoding="utf-8", newline="\n")
                rows = _rows(project, cells, names)
                data = manifest.build(view, rows, project.detect_rules())
                texts[f"{LOCKS}/{manifest.MANIFEST_NAME}"] = manifest.dumps(data)
                texts["install.sh"] = install_script(data)
                texts[BUNDLE_FILE] = _bundle_json(cells, paths, located.files)
                _stage(unit, folder, texts, set(paths.values()))
                unit.commit()
            finally:
                unit.discard()
    except OSError as exc:
        raise BundleError(f"{output}: cannot write the bundle ({exc.strerror or exc}: {exc.filename or ''})") from None
    result.files = len(paths)
    return result


@contextmanager
def _held(folder: Path) -> Iterator[None]:
    """The bundle folder's run lock for the block, after finishing or rolling back what a killed
    bundle run left in it (:mod:`lockgen.locks.journal`); lockgen's work folder in the bundle
    is removed afterwards (a bundle holds nothing of the machine that made it)."""
    from lockgen.locks.store import ProjectLock

    try:
        with ProjectLock(folder):
            recover(folder)
            yield
    finally:
        if not pending(folder):  # a unit stopped between two renames stays, for the next run to finish
            shutil.rmtree(folder / WORK, ignore_errors=True)


def _stage(unit: Journal, folder: Path, texts: Mapping[str, str], keep: set[str]) -> None:
    """Stage the bundle's texts, the selector, and the removal of every file of ``index/``,
    ``locks/`` and ``files/`` that the new bundle does not hold (an earlier bundle's), and of the
    selector under its old name, ``select.py``, that an earlier lockgen wrote."""
    from lockgen import cellselect

    for rel, text in texts.items():
        unit.write(rel, text, mode=0o755 if rel == "install.sh" else None)
    unit.write("cellselect.py", Path(cellselect.__file__).read_bytes())
    if (folder / "select.py").is_file():
        unit.remove("select.py")
    for top in (INDEX, LOCKS, FILES):
        base = folder / top
        for path in sorted(base.rglob("*")) if base.is_dir() and not base.is_symlink() else []:
            rel = path.relative_to(folder).as_posix()
            if (path.is_file() or path.is_symlink()) and rel not in texts and rel not in keep:
                unit.remove(rel)


def _refuse_folder(folder: Path) -> None:
    """A new folder, an empty one (but for what a killed bundle run left) or a bundle; nothing in
    it may be a symbolic link: a bundle run never reads, writes or deletes through one."""
    if folder.is_symlink() and not folder.is_dir():
        raise UsageError(f"{folder} is a symbolic link to no folder: give a new or empty folder")
    if not folder.exists():
        return
    if not folder.is_dir() or (any(p.name != WORK for p in folder.iterdir()) and not is_bundle(folder)):
        raise UsageError(f"{folder} exists and is not a lockgen bundle: give a new or empty folder")
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            if path.is_symlink():
                raise UsageError(
                    f"{path} is a symbolic link: a bundle holds none, and lockgen bundle never writes or deletes "
                    "through one; remove it (or give a new folder), then run again"
                )


def _refuse_vcs(lockset: LockSet, cells: Sequence[str]) -> None:
    found = [
        f"{name}: {entry.name} @ {entry.url}"
        for name in cells
        for lock in (lockset.cells[name].main, *lockset.cells[name].layers.values())
        for entry in lock.entries
        if entry.url is not None and "+" in entry.url.split("://", 1)[0]
    ]
    if found:
        raise UsageError(
            "a bundle cannot hold a VCS checkout (it needs the network to install): "
            + "; ".join(found)
            + "; lock a wheel or an archive URL of it instead"
        )


class _Store:
    """``DIR/files/<sha256>/<name>``: each file once, written atomically after its hash held."""

    def __init__(self, folder: Path, root: Path, reader: PageReader, result: BundleResult, unit: Journal) -> None:
        self.folder, self.root, self.reader, self.result, self.unit = folder, root, reader, result, unit
        self._lock = threading.Lock()

    def fetch_all(self, files: Sequence[LockedFile], jobs: int) -> dict[str, str]:
        """``{sha256: bundle-relative path}`` of every distinct file of ``files``."""
        first: dict[str, list[LockedFile]] = {}
        for item in files:
            first.setdefault(item.sha256, []).append(item)
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            done = list(pool.map(self.one, first.values()))
        problems = [p for _, p in done if p]
        if problems:
            raise BundleError(*problems)
        return {digest: path for digest, (path, _) in zip(first, done)}

    def one(self, items: Sequence[LockedFile]) -> tuple[str, str | None]:
        """The file of ``items`` (one sha256) in the store, and a problem (None: it is there)."""
        item = items[0]
        rel = f"{FILES}/{item.sha256}/{_safe(item.filename)}"
        target = self.folder / rel
        if target.is_file() and _sha256(target) == item.sha256:
            self._count(target, downloaded=False)
            return rel, None
        with self._lock:
            tmp = self.unit.scratch()  # inside the journal's folder: a kill leaves nothing behind
        got = self._copy(item, tmp) if item.url is None else self._download(item, tmp)
        if isinstance(got, str) and got != item.sha256:
            return rel, _mismatch(items, got)
        if got is None:
            return rel, f"{_where(items)}: {item.package} {item.version}: {item.filename} has no source to bundle"
        if not isinstance(got, str):
            return rel, got.reason
        self._count(tmp, downloaded=item.url is not None)
        with self._lock:
            self.unit.add(rel, tmp)
        return rel, None

    def _count(self, path: Path, downloaded: bool) -> None:
        with self._lock:
            self.result.size += path.stat().st_size
            self.result.downloaded += downloaded

    def _copy(self, item: LockedFile, tmp: Path) -> str | None:
        if item.path is None:
            return None
        source = (self.root / item.path).resolve()
        if not source.is_relative_to(self.root.resolve()):
            return None  # a path out of the project: never read
        shutil.copyfile(source, tmp)
        return _sha256(tmp)

    def _download(self, item: LockedFile, tmp: Path) -> str | _Failed:
        assert item.url is not None
        digest = hashlib.sha256()

        def sink(chunk: bytes) -> None:
            digest.update(chunk)
            fh.write(chunk)

        try:
            with open(tmp, "wb") as fh:
                reply = self.reader.client().download(item.url, sink, max_body=MAX_FILE)
        except HostError as exc:
            return _Failed(
                f"{item.where}: {item.package} {item.version}: {item.url}: cannot download it ({exc.detail})"
            )
        if reply.status != 200:
            return _Failed(f"{item.where}: {item.package} {item.version}: {item.url}: HTTP {reply.status}")
        return digest.hexdigest()


@dataclass(frozen=True)
class _Failed:
    reason: str


def _safe(name: str) -> str:
    """A file name as stored: its last path part (a name from a page never leaves its folder)."""
    base = posixpath.basename(name.replace("\\", "/"))
    if base in ("", ".", ".."):
        raise BundleError(f"{name!r} is not a file name")
    return base


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _where(items: Sequence[LockedFile]) -> str:
    return ", ".join(sorted({i.where for i in items}))


def _mismatch(items: Sequence[LockedFile], got: str) -> str:
    item = items[0]
    return (
        f"{_where(items)}: {item.package} {item.version}: {item.url or item.path} has sha256 {got}, the lock has "
        f"{item.sha256}: the file changed since it was locked; nothing was kept (see lockgen check --online)"
    )


def _index(files: Sequence[LockedFile], paths: Mapping[str, str]) -> dict[str, str]:
    """``{bundle-relative path: text}`` of ``index/<project>/index.html`` for every bundled
    project (PEP 503; links relative, with ``#sha256=``) and of ``index/index.html``."""
    by_project: dict[str, dict[str, str]] = {}
    for item in files:
        by_project.setdefault(item.package, {})[item.sha256] = paths[item.sha256]
    texts = {}
    for project, stored in sorted(by_project.items()):
        anchors = [
            f'<a href="../../{quote(path)}#sha256={digest}">{html.escape(posixpath.basename(path))}</a><br/>'
            for digest, path in sorted(stored.items(), key=lambda kv: kv[1].rsplit("/", 1)[-1])
        ]
        texts[f"{INDEX}/{project}/index.html"] = (
            "<!DOCTYPE html>\n<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n"
        )
    links = "\n".join(f'<a href="{p}/">{p}</a><br/>' for p in sorted(by_project))
    texts[f"{INDEX}/index.html"] = f"<!DOCTYPE html>\n<html><body>\n{links}\n</body></html>\n"
    return texts


def _bundle_path(locks: str, path: str) -> str:
    """A project-relative lock path (under ``locks``) as the bundle's (under ``locks/``)."""
    return (
        f"{LOCKS}/{path[len(locks) + 1 :]}" if path.startswith(f"{locks}/") else f"{LOCKS}/{posixpath.basename(path)}"
    )


def _rewritten(
    cell: CellLocks, locks: str, paths: Mapping[str, str], root: Path, unit: Journal, result: BundleResult
) -> dict[str, str]:
    """``{bundle-relative path: text}`` of a cell's locks and pylock, pointed at the bundle."""
    texts: dict[str, str] = {}
    refs = []
    for ref in cell.main.header.layers:
        layer = cell.layers[ref.name]
        if layer.header.kind is LayerKind.UNHASHED:
            _copy_projects(layer, root, unit, result)
        rewritten = _lock(layer, locks, paths)
        text = rewritten.render()
        texts[rewritten.header.path] = text
        refs.append(LayerRef(kind=ref.kind, name=ref.name, sha256=text_sha256(text), path=rewritten.header.path))
    main = _lock(cell.main, locks, paths)
    pylock_ref = None
    if cell.pylock is not None:
        pylock_path = pylockfile.pylock_path(main.header.path)
        text = pylockfile.dumps(_pylock(cell.pylock, pylock_path, paths))
        texts[pylock_path] = text
        pylock_ref = FileRef(sha256=text_sha256(text), path=pylock_path)
        if any(p.sdist and not p.wheels for p in cell.pylock.packages):
            built = sorted(p.name for p in cell.pylock.packages if p.sdist and not p.wheels)
            result.warnings.append(
                f"{cell.name}: {', '.join(built)} install from source: the machine needs their build backend "
                "(setuptools, …), which the bundle does not hold"
            )
    header = dataclasses.replace(main.header, layers=tuple(refs), pylock=pylock_ref)
    texts[header.path] = dataclasses.replace(main, header=header).render()
    return texts


def _lock(lock: Lock, locks: str, paths: Mapping[str, str]) -> Lock:
    """``lock`` installing from the bundle: its index the bundle's, no find-links, no unverified
    sources (every file was hashed), a direct URL as the stored file's path."""
    entries = []
    for entry in lock.entries:
        if entry.url is not None and "://" in entry.url and entry.hashes:
            stored = paths.get(entry.hashes[0].removeprefix("sha256:"))
            if stored is not None:
                entry = dataclasses.replace(entry, url=f"./{stored}")
        entries.append(entry)
    header = dataclasses.replace(
        lock.header, path=_bundle_path(locks, lock.header.path), index_url=INDEX, find_links=(), unverified_hashes=(),
    )  # fmt: skip
    return Lock(header=header, entries=tuple(entries))


def _pylock(pylock: Pylock, where: str, paths: Mapping[str, str]) -> Pylock:
    """The pylock at ``where`` (bundle-relative) with every artifact a path to its stored file."""
    base = posixpath.dirname(where)

    def fix(artifact: Any) -> Any:
        stored = paths.get(artifact.hashes.get("sha256", ""))
        if stored is None:
            return artifact
        return dataclasses.replace(
            artifact, url=None, path=posixpath.relpath(stored, base), name=pylockfile.file_name(artifact)
        )

    return pylockfile.map_artifacts(pylock, fix)


def _copy_projects(layer: Lock, root: Path, unit: Journal, result: BundleResult) -> None:
    """Stage copies of the local project folders of an ``unhashed`` layer (``-e ./sub``) in the
    bundle's unit, where its lines find them (relative to the bundle root); a file of an earlier
    copy that the project no longer has is removed. Symbolic links in the project folder are not
    followed (a link out of the project is never read)."""
    for entry in layer.entries:
        if entry.url is None or "://" in entry.url or entry.url.endswith((".whl", ".tar.gz", ".zip")):
            continue
        source = (root / entry.url).resolve()
        if not source.is_dir() or not source.is_relative_to(root.resolve()) or source == root.resolve():
            result.warnings.append(
                f"{layer.header.cell}: {entry.url} is not a project folder inside the project: not bundled"
            )
            continue
        base = posixpath.normpath(entry.url)
        copied = set()
        for dirpath, dirnames, filenames in os.walk(source):
            dirnames[:] = sorted(d for d in dirnames if d not in _NOT_COPIED and not Path(dirpath, d).is_symlink())
            for name in sorted(filenames):
                path = Path(dirpath, name)
                if path.is_symlink() or not path.is_file():
                    continue
                rel = f"{base}/{path.relative_to(source).as_posix()}"
                unit.write(rel, path.read_bytes(), mode=path.stat().st_mode & 0o777)
                copied.add(rel)
        old = unit.root / base
        for path in sorted(old.rglob("*")) if old.is_dir() and not old.is_symlink() else []:
            rel = path.relative_to(unit.root).as_posix()
            if path.is_file() and rel not in copied and not any(p in _NOT_COPIED for p in rel.split("/")):
                unit.remove(rel)
        result.warnings.append(
            f"{layer.header.cell}: {entry.name} is a local project ({entry.url}), copied into the bundle; installing it "
            "builds it, which needs its build backend on the machine"
        )


_NOT_COPIED = (".git", ".venv", WORK, "__pycache__")


def _rows(project: Project, cells: Sequence[str], names: Sequence[str]) -> list[manifest.Row]:
    """The manifest rows of the bundled cells and of the aliases named, lock paths the bundle's."""
    wanted = set(cells) | set(names)
    rows = []
    locks = project.config.locks
    for row in project.rows():
        if row.name in wanted and not row.skip:
            rows.append(dataclasses.replace(row, lock=_bundle_path(locks, row.lock)))
    return rows


def install_script(data: Mapping[str, Any]) -> str:
    """A POSIX shell script that installs one cell of the bundle whose manifest is ``data`` into
    a new venv with the machine's Python and pip, offline: ``./install.sh [CELL | --cpu]`` (no
    cell: the one ``cellselect.py`` picks), ``VENV`` (default ``.venv``), ``PYTHON`` (default
    ``python3``). When ``cellselect.py`` refuses the machine (exit 2 and its message: no GPU its rules
    support, an unknown option), the script stops with its exit code and message, before any venv
    is made. Optional layers that fail are warned about, not rolled back (``lockgen install
    --from`` rolls back)."""
    cases = []
    for name, entry in sorted(data["cells"].items()):
        if entry.get("status") not in ("locked", "alias"):
            continue
        lines = [f"  {name})", f'    want="{entry["python"]}"']
        for layer in entry.get("layers") or []:
            argv = " ".join(_sh(a) for a in layer["commands"]["pip"][1:])
            run = f'"$py" -I -m pip --isolated --disable-pip-version-check --no-input {argv}'
            if layer.get("optional"):
                run += f' || echo "warning: optional layer {layer["name"]} failed; the install goes on without it" >&2'
            lines.append(f'    set -- "$@" {_sh(run)}')
        lines.append("    ;;")
        cases += lines
    return _SCRIPT.replace("CASES", "\n".join(cases))


def _sh(value: str) -> str:
    import shlex

    return shlex.quote(value)


_SCRIPT = """\
#!/bin/sh
# Install one cell of this lockgen bundle into a new virtual environment, with no network.
# Usage: ./install.sh [CELL]   (no CELL: the cell cellselect.py picks for this machine; --cpu as cellselect.py)
# VENV (default .venv) and PYTHON (default python3, of the cell's Python version) may be set.
# Generated by lockgen bundle; `lockgen install --from DIR CELL` does the same with uv or pip.
set -eu
bundle=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
venv=${VENV:-.venv}
case "${1:-}" in
  ""|-*) picked=$("$python" -I "$bundle/cellselect.py" --manifest "$bundle/locks/manifest.json" "$@") || exit $?
         cell=$(printf '%s\n' "$picked" | head -n 1 | cut -d: -f1) ;;
  *) cell=$1 ;;
esac
set --
case "$cell" in
CASES
  *) echo "error: no cell $cell in this bundle (see locks/manifest.json)" >&2; exit 2 ;;
esac
have=$("$python" -I -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$have" != "$want" ]; then
  echo "error: cell $cell is for Python $want; $python is Python $have (set PYTHON)" >&2; exit 2
fi
case "$venv" in /*) ;; *) venv="$PWD/$venv" ;; esac
if [ ! -e "$venv" ]; then "$python" -I -m venv "$venv"; fi
py="$venv/bin/python"
export PIP_CONFIG_FILE=/dev/null
cd "$bundle"
for command in "$@"; do
  py="$py" sh -c "$command" || { echo "error: $command failed" >&2; exit 1; }
done
echo "installed $cell into $venv"
"""


def _bundle_json(cells: Sequence[str], paths: Mapping[str, str], files: Sequence[LockedFile]) -> str:
    """``bundle.json``: format, generator, cells, and every stored file with who locks it."""
    locked: dict[str, set[str]] = {}
    for item in files:
        locked.setdefault(item.sha256, set()).add(item.where)
    data = {
        "format": BUNDLE_FORMAT, "generator": "lockgen", "cells": sorted(cells),
        "files": [{"sha256": d, "path": p, "cells": sorted(locked.get(d, ()))} for d, p in sorted(paths.items(), key=lambda kv: kv[1])],
    }  # fmt: skip
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def refuse_half_written(folder: Path) -> None:
    """Raise :class:`~lockgen.runtime.errors.InstallRefused` when a ``lockgen bundle`` run was
    stopped while writing ``folder`` (its unit is pending: :mod:`lockgen.locks.journal`)."""
    from lockgen.runtime.errors import InstallRefused

    if pending(folder):
        raise InstallRefused(
            f"{folder}: a lockgen bundle run was stopped while writing it; run lockgen bundle again; nothing was installed"
        )


def check_index(folder: Path, locks: Sequence[Lock]) -> None:
    """Before ``lockgen install --from folder`` runs an installer: the bundle is whole (no unit a
    killed ``lockgen bundle`` left) and its index pages are read like its locks: for every
    package the ``locks`` install, ``index/<name>/index.html`` is a regular file inside the bundle
    (no symlink; bounded read), names no ``<base>``, and each of its links is a file under
    ``files/`` of the bundle (relative; no URL, no ``..`` out, no symlink) with a ``#sha256=`` that
    the lock holds for that package and that the file's bytes have. So an installer pointed at the
    bundle's index never reaches the network or a file outside the bundle. Raises
    :class:`~lockgen.runtime.errors.InstallRefused` naming the page and the link."""
    from urllib.parse import unquote, urlsplit

    from lockgen.index.pages import parse
    from lockgen.locks.paths import resolved_inside
    from lockgen.runtime.bounded import read_file
    from lockgen.runtime.errors import InstallRefused

    refuse_half_written(folder)
    base = folder.resolve()
    files_root = base / FILES
    wanted: dict[str, set[str]] = {}
    for lock in locks:
        for entry in lock.entries:
            if entry.url is None:
                wanted.setdefault(entry.name, set()).update(h.removeprefix("sha256:") for h in entry.hashes)
    hashed: dict[Path, str] = {}
    for name, digests in sorted(wanted.items()):
        rel = f"{INDEX}/{name}/index.html"

        def refused(why: str, page: str = rel) -> InstallRefused:
            return InstallRefused(
                f"{folder}/{page}: {why}; a bundle installs only its own files; nothing was installed"
            )

        page = folder / rel
        if any(p.is_symlink() for p in (folder / INDEX, folder / INDEX / name, page)) or not resolved_inside(
            page, base
        ):
            raise refused("a symbolic link")
        try:
            text = read_file(page, rel).decode("utf-8")
        except FileNotFoundError:
            raise refused("missing: the bundle does not hold this package") from None
        except (OSError, UnicodeDecodeError, LockgenError) as exc:
            raise refused(f"cannot be read ({exc})") from None
        if "<base" in text.lower():
            raise refused("it sets a <base> for its links")
        found, _ = parse(text, "text/html", (base / INDEX / name).as_uri() + "/")
        for item in found:
            split = urlsplit(item.url)
            path = Path(unquote(split.path))
            if split.scheme != "file" or split.netloc or not path.is_relative_to(files_root):
                raise refused(f"its link {item.url!r} is not a file under {FILES}/ of the bundle")
            if path.is_symlink() or path.parent.is_symlink() or not resolved_inside(path, files_root):
                raise refused(f"its link {item.filename!r} is a symbolic link")
            if item.sha256 is None or item.sha256 not in digests:
                raise refused(f"its link {item.filename!r} has no sha256 the locks hold for {name}")
            if path not in hashed:
                try:
                    hashed[path] = _sha256(path)
                except OSError as exc:
                    raise refused(f"its file {item.filename!r} cannot be read ({exc.strerror or exc})") from None
            if hashed[path] != item.sha256:
                raise refused(f"its file {item.filename!r} does not have the sha256 its link states (edited?)")
