"""Which cell ``lockgen install`` installs, and whether this machine may have it: the manifest
read into typed values (:mod:`lockgen.locks.manifestfile`: every field checked, every path
confined), the cell named or chosen by :mod:`lockgen.cellselect` (for an existing venv, by that venv's
Python minor), its layer files read once, confined to the locks folder, checked against the
manifest's sha256 and parsed, their headers and recorded commands checked against the manifest's
fields, and the machine checked against the cell (OS, host arch, glibc, macOS). Everything here
refuses before anything is installed or written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from lockgen import cellselect
from lockgen.install.checks import Layer, glibc, host_problems, macos
from lockgen.install.venv import Interpreter
from lockgen.locks import manifestfile
from lockgen.locks.lock import LayerKind, Lock, decode, text_sha256
from lockgen.locks.manifest import manifest_path
from lockgen.locks.manifestfile import CellEntry, LayerEntry, Manifest
from lockgen.locks.paths import confine
from lockgen.runtime.bounded import read_file
from lockgen.runtime.errors import InputError, InstallRefused, LockFormatError, Problem, UsageError
from lockgen.runtime.words import did_you_mean

__all__ = ["choose", "direct_problem", "load_layers", "read_manifest", "refuse_host"]


def read_manifest(root: Path, locks: str) -> Manifest:
    """``<locks>/manifest.json`` of the project (or bundle) at ``root`` as typed values. Raises
    :class:`UsageError` when there is none, :class:`~lockgen.runtime.errors.InputError` (exit 2) naming
    the file and every bad field, or its format when it is another than this lockgen's
    (docs/manifest.md: readers refuse any format they do not know)."""
    where = manifest_path(locks)
    try:
        data = read_file(confine(root, locks, where, "manifest", where), where)
    except FileNotFoundError:
        raise UsageError(f"{where}: no manifest; run `lockgen all` first") from None
    except OSError as exc:
        raise InstallRefused(f"{where}: cannot read it ({exc.strerror or exc})") from None
    return manifestfile.load(data, where, locks)


def choose(
    manifest: Manifest,
    cell: str | None,
    detect: bool,
    python: str | None,
    cpu: bool,
    present: tuple[Path, Interpreter] | None = None,
    axes: Mapping[str, str] | None = None,
) -> tuple[CellEntry, list[str], dict[str, str]]:
    """``(manifest entry, lines to say, layers to leave out)`` of the cell to install: ``cell``,
    or the one the selector picks for this machine (``detect``). The layers left out (name ->
    why) are the optional layers whose GPU wheels have no code for a GPU of this machine
    (docs/select.md): only with ``detect``; a named cell installs every layer. The selector's
    Python is ``python``, else the interpreter of the existing venv (``present``: its path and
    interpreter), else its own rule.
    ``axes``: extra-axis values for the selector (``--axis``). Raises :class:`UsageError` for a
    bad request and :class:`InstallRefused` for a cell that cannot be installed (refused by the
    rules, failed, skipped, missing)."""
    if cell and detect:
        raise UsageError("give a CELL or --detect, not both")
    left_out: dict[str, str] = {}
    if detect:
        name, said, left_out = _detect(manifest, python, cpu, present, axes or {})
    elif cell:
        if cell not in manifest.cells:
            raise UsageError(
                f"no cell {cell!r} in the manifest{did_you_mean(cell, manifest.cells)}; `lockgen matrix` lists the cells"
            )
        name, said = cell, [f"cell {cell}"]
    else:
        raise UsageError("name the CELL to install, or pass --detect to pick this machine's")
    entry = manifest.cells.get(name)
    if entry is None:  # the selector named a cell the manifest lacks
        raise InstallRefused(f"the selector chose cell {name!r}, which the manifest does not list")
    if python and cell and cellselect.version_key(python)[:2] != cellselect.version_key(entry.python)[:2]:
        raise InstallRefused(f"cell {name} is for Python {entry.python}, not {python}")
    if not entry.installable:
        raise InstallRefused(f"cell {name} is {entry.status}: {entry.reason or 'it has no lock'}")
    return entry, said, left_out


def _detect(
    manifest: Manifest,
    python: str | None,
    cpu: bool,
    present: tuple[Path, Interpreter] | None,
    axes: Mapping[str, str],
) -> tuple[str, list[str], dict[str, str]]:
    """The selector's choice on this machine; an existing venv's interpreter stands in for the
    running one (its Python minor and its arch)."""
    facts = cellselect.gather()
    wanted = python
    if present is not None:
        facts = replace(facts, interpreter=present[1].arch)
        wanted = python or present[1].minor
    try:
        selection = cellselect.select_cell(facts, manifest.data, wanted, cpu, axes=axes)
    except cellselect.Refused as exc:
        raise InstallRefused("\n".join([exc.message, *(f"note: {n}" for n in exc.notes)])) from None
    except cellselect.SelectError as exc:
        raise InstallRefused(str(exc)) from None
    reasons = selection.reasons
    if present is not None and not python:
        mine = f"Python {wanted} (--python)"
        reasons = [f"Python {wanted}: the interpreter of the venv {present[0]}" if r == mine else r for r in reasons]
    said = [f"cell {selection.cell} (detected):" + "".join(f"\n  {r}" for r in reasons)]
    return selection.cell, said, {layer["name"]: layer["reason"] for layer in selection.skipped_layers}


def load_layers(
    root: Path, locks: str, entry: CellEntry, where: str = "locks/manifest.json", bundle: bool = False
) -> list[Layer]:
    """The entry's layers in install order, each file read once (confined to ``locks`` after
    symlinks), checked against the manifest's sha256 and parsed with the lock model; its header
    must be the layer's (kind, path, index URL, find-links) and the recorded commands what
    lockgen builds from those fields. Raises :class:`InstallRefused` for a missing, edited or
    unreadable file and :class:`~lockgen.runtime.errors.InputError` naming the manifest field that
    disagrees. Every local path a lock line names must resolve inside ``root`` (after symlinks);
    a ``bundle`` installs only its own files: no URL at all (:func:`direct_problem`)."""
    layers = []
    for i, data in enumerate(entry.layers):
        field = f"cells.{entry.name}.layers[{i}]"
        path = confine(root, locks, data.lock, f"{field}.lock", where)
        try:
            raw = read_file(path, data.lock)
        except OSError as exc:
            raise InstallRefused(
                f"{data.lock}: cannot read it ({exc.strerror or exc}); the cell {entry.name} is not installable from "
                "this checkout"
            ) from None
        try:
            text = decode(raw, data.lock)
        except LockFormatError as exc:
            raise InstallRefused(str(exc)) from None
        if text_sha256(text) != data.sha256:
            raise InstallRefused(
                f"{data.lock}: its sha256 is not the manifest's (edited, or from another revision); run `lockgen check`"
            )
        try:
            lock = Lock.parse(text, data.lock)
        except LockFormatError as exc:
            raise InstallRefused(str(exc)) from None
        lines = lock.entry_lines()
        for item in lock.entries:
            problem = direct_problem(root, item.url, bundle) if item.url is not None else None
            if problem:
                raise InstallRefused(
                    f"{data.lock}:{lines.get(item.name, 1)}: {item.name}: {problem}; nothing was installed"
                )
        sources = _sources(data, lock, field, where)
        for source in [s for s in (sources[0], *sources[1]) if s is not None] if bundle else ():
            relative = source if source.startswith(".") else f"./{source}"
            if ":" in source or source.startswith("/") or direct_problem(root, relative, True):
                raise InstallRefused(
                    f"{data.lock}: its index or find-links {source!r} is not a folder of the bundle: a bundle installs "
                    "only its own files; nothing was installed"
                )
        layers.append(Layer(data, lock, text, sources))
    if not layers or layers[0].kind is not LayerKind.MAIN:
        raise InstallRefused(f"cell {entry.name}: the manifest lists no main layer")
    return layers


def direct_problem(root: Path, url: str, bundle: bool) -> str | None:
    """Why the direct reference ``url`` of a lock line may not be installed from ``root`` (None:
    it may): a local path must be project-relative (``./…``, no ``..``) and resolve inside
    ``root`` after symlinks (a committed ``sub -> /home/u`` is refused like ``../../x``); an
    absolute path is refused. In a ``bundle`` (``install --from``: nothing is fetched, the docs
    promise) every line must name a file inside the bundle: any URL (``http``, ``file://``,
    ``git+``) is refused too."""
    from lockgen.locks.lock import is_local
    from lockgen.locks.paths import resolved_inside

    where = "the bundle" if bundle else "the project"
    if is_local(url):
        if any(part == ".." for part in url.split("/")) or "\\" in url:
            return f"the path {url!r} leads out of {where}"
        if not resolved_inside(root / url, root):
            return f"the path {url!r} leads out of {where} (a symlink)"
        return None
    if "://" not in url:
        return f"the path {url!r} is not relative to {where}'s root"
    if bundle:
        return f"the URL {url!r}: a bundle installs only its own files, it fetches nothing"
    return None


def _sources(data: LayerEntry, lock: Lock, field: str, where: str) -> tuple[str | None, tuple[str, ...]]:
    """``(index URL, find-links)`` the layer installs from: the manifest's fields, which must be
    its lock header's (a manifest without them, from before they were written: the header's),
    and the recorded commands must be what they give. Raises :class:`InputError`."""
    header = lock.header
    problems = []
    if header.kind is not data.kind:
        problems.append(
            Problem(file=where, key=f"{field}.kind", message=f"{data.kind}, but {data.lock} is a {header.kind} lock")
        )
    index_url = data.index_url if data.index_url is not None else header.index_url
    find_links = data.find_links if data.find_links is not None else header.find_links
    if (index_url, tuple(find_links)) != (header.index_url, header.find_links):
        problems.append(Problem(
            file=where, key=f"{field}.index_url",
            message=f"the layer's sources are not the ones its lock {data.lock} names (index-url, find-links)",
        ))  # fmt: skip
    built = data.built(index_url, find_links)
    for installer, argv in sorted(data.commands.items()):
        if list(argv) != built[installer]:
            problems.append(Problem(
                file=where, key=f"{field}.commands.{installer}",
                message="the recorded command is not the one the layer's fields give (kind, lock, index_url, find_links); "
                "lockgen never runs a recorded command",
                hint="restore the manifest (git checkout) or run `lockgen all`",
            ))  # fmt: skip
    if problems:
        raise InputError(*problems)
    return index_url, tuple(find_links)


def refuse_host(entry: CellEntry, facts: cellselect.Facts) -> None:
    """Raise :class:`InstallRefused` when this machine (``facts``: its OS and host arch) cannot
    run the cell's locks: :func:`~lockgen.install.checks.host_problems` with its glibc/macOS."""
    problems = host_problems(entry, facts.os, glibc(), macos(), arch=facts.arch)
    if problems:
        raise InstallRefused(
            f"cell {entry.name} does not fit this machine:\n" + "\n".join(f"  - {p}" for p in problems)
        )
