"""``locks/manifest.json``: the installer contract (format 4, ``docs/manifest.md``,
``docs/manifest.schema.json``).

It is a pure function of the matrix, the detect rules, the lock files on disk and the failures of
the run that wrote it: per cell its axes, status, the Python minor and host it needs, the
environment its target needs at install time, the layers in install order with their flags, exact
install commands and sha256 (of the text with LF line endings, so a CRLF checkout matches, CASES
C17), what optional packages were not available and why. With the ``detect`` rules in it, a
cell can be chosen from the manifest alone (:mod:`lockgen.cellselect`). Keys are sorted; the file ends
with a newline.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lockgen.runtime.errors import LockFormatError
from lockgen.runtime.keyed import dig, table
from lockgen.locks.lock import LayerKind, Lock, decode, parsed_header, text_sha256

__all__ = [
    "MANIFEST_FORMAT", "Row", "build", "coverage_current", "coverage_incomplete", "dumps", "failures", "flags",
    "manifest_path", "read", "recorded_coverage",
]  # fmt: skip

#: Version of the manifest layout (the installer contract); installers refuse a newer major.
MANIFEST_FORMAT = 4
MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True, kw_only=True)
class Row:
    """What the manifest needs of a cell of the matrix (from the config; the no-op fast path
    keeps these in its stamp). ``requires``: python, interpreter and glibc or macos minimum."""

    name: str
    os: str
    arch: str
    backend: str
    python: str
    lock: str  # project-relative main lock path
    skip: str | None = None
    alias: str | None = None  # the cell whose locks this one reuses
    target: Mapping[str, str] = field(default_factory=dict)  # platform, python, [macos]
    requires: Mapping[str, str] = field(default_factory=dict)
    environment: Mapping[str, str] = field(default_factory=dict)
    input_hash: str | None = None  # None for skipped and alias cells
    extra: Mapping[str, str] = field(default_factory=dict)  # the matrix's extra axes (variant = "portable")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Row:
        return cls(**data)


def manifest_path(locks: str) -> str:
    """Project-relative path of the manifest: ``<locks>/manifest.json``."""
    return f"{locks}/{MANIFEST_NAME}"


def build(
    root: Path,
    rows: Sequence[Row],
    detect: Mapping[str, Any] | None = None,
    failed: Mapping[str, str] | None = None,
    *,
    strict: bool = True,
    coverage: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The manifest as a dict, from every cell of the matrix, the locks on disk and ``failed``
    (cell -> reason, from the run). ``coverage``: cell -> the GPU code its locked wheels carry
    (:mod:`lockgen.wheels.cells`), written into locked cells' entries (and their aliases').
    Raises :class:`LockFormatError` when a lock cannot be read (with ``strict=False`` such a
    cell is ``missing``)."""
    failed = failed or {}
    coverage = coverage or {}
    entries: dict[str, dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: bool(r.alias)):  # aliases copy their cell's entry
        entry: dict[str, Any] = {
            "os": row.os, "arch": row.arch, "backend": row.backend, "python": row.python,
            "target": dict(row.target), "requires": dict(row.requires),
        }  # fmt: skip
        if row.extra:  # extra matrix axes (issue 9): the cell's value of each
            entry["axes"] = dict(row.extra)
        if row.environment:
            entry["environment"] = dict(row.environment)
        if row.skip:
            entry.update(status="skipped", reason=row.skip)
        elif row.alias:
            source = entries.get(row.alias, {})
            entry.update({k: v for k, v in source.items() if k in _LOCK_KEYS})
            if source:  # the lock was resolved for its cell's target; only the interpreter is the alias's
                entry["target"] = dict(source["target"])
                entry["requires"] = {
                    **source["requires"],
                    "python": row.python,
                    "interpreter": row.requires.get("interpreter", row.arch),
                }
                if "environment" in source:
                    entry["environment"] = dict(source["environment"])
                else:
                    entry.pop("environment", None)
            entry.update(status="alias" if source.get("status") == "locked" else source.get("status", "missing"))
            entry["alias_of"] = row.alias
            if source.get("status") != "locked":
                entry["reason"] = f"its cell {row.alias} is {source.get('status', 'missing')}"
        else:
            try:
                entry.update(_locked(root, row.lock))
            except LockFormatError:
                if strict:
                    raise
                entry["status"] = "missing"
            if row.name in coverage and entry.get("status") == "locked":
                entry["coverage"] = dict(coverage[row.name])
            if row.name in failed:
                entry.update(status="failed", reason=failed[row.name])
        entries[row.name] = entry
    manifest: dict[str, Any] = {"format": MANIFEST_FORMAT, "generator": "lockgen", "cells": entries}
    if detect:
        manifest["detect"] = dict(detect)
    return manifest


_LOCK_KEYS = (
    "lock", "sha256", "pylock", "input_hash", "uv", "index_url", "find_links", "exclude_newer", "exclude_newer_span", "layers",
    "unavailable", "replaces", "skipped_urls", "no_upload_time", "unverified_hashes", "coverage", "publishers",
)  # fmt: skip


def _locked(root: Path, path: str) -> dict[str, Any]:
    """The lock fields of a cell whose main lock is at ``path`` (``status: missing`` when it has
    none). Raises :class:`LockFormatError` for a lock that cannot be read, a missing layer, or a
    layer or pylock the main lock names at another path than its own folder's
    (:func:`lockgen.locks.paths.refs_problem`: a lock from elsewhere cannot point outside)."""
    from lockgen.locks.paths import refs_problem

    locks = posixpath.dirname(path)
    found = _read(root, path, locks)
    if found is None:
        return {"status": "missing"}
    main, sha = found
    header = main.header
    problem = refs_problem(header, path)
    if problem:
        raise LockFormatError(f"{path}: {problem}; re-lock the cell")
    layers = [_layer(main, path, sha)]
    for ref in header.layers:
        layer = _read(root, ref.path, locks)
        if layer is None:
            raise LockFormatError(f"{path}: its layer {ref.path} is missing; re-lock the cell")
        layers.append(_layer(layer[0], ref.path, layer[1]))
    entry: dict[str, Any] = {
        "status": "locked", "lock": path, "sha256": layers[0]["sha256"], "input_hash": header.input_hash,
        "uv": header.uv, "index_url": header.index_url, "find_links": list(header.find_links), "layers": layers,
    }  # fmt: skip
    pylock = f"{path.removesuffix('.txt')}/pylock.toml"
    data = _bytes(root, pylock, locks)
    if data is not None:
        pylock_text = decode(data, pylock)
        entry["pylock"] = {"path": pylock, "sha256": text_sha256(pylock_text)}
        publishers = _publishers(pylock_text, pylock)
        if publishers:
            entry["publishers"] = publishers
    if header.exclude_newer:
        entry["exclude_newer"] = header.exclude_newer
    if header.exclude_newer_span:
        entry["exclude_newer_span"] = header.exclude_newer_span
    if header.unavailable:
        entry["unavailable"] = [
            {"requirement": u.requirement, "reason": u.reason, "retry": u.retry} for u in header.unavailable
        ]
    if header.replaces:
        entry["replaces"] = [{"package": r.name, "main": r.main, "layer": r.layer, "by": r.by} for r in header.replaces]
    if header.skipped_urls:
        entry["skipped_urls"] = list(header.skipped_urls)
    if header.no_upload_time:
        entry["no_upload_time"] = list(header.no_upload_time)
    if header.unverified_hashes:
        entry["unverified_hashes"] = list(header.unverified_hashes)
    return entry


def _bytes(root: Path, path: str, locks: str) -> bytes | None:
    """The bytes of the project-relative file ``path``, confined to ``locks`` after symlinks;
    None when there is no such file."""
    from lockgen.locks.paths import confine_file

    try:
        from lockgen.runtime.bounded import read_file

        return read_file(confine_file(root, locks, path, LockFormatError), path)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        raise LockFormatError(f"{path}: cannot read it ({exc.strerror})") from None


def _read(root: Path, path: str, locks: str) -> tuple[Lock, str] | None:
    """The lock at the project-relative ``path`` (see :func:`_bytes`) and the sha256 of its text;
    None when there is no such file."""
    data = _bytes(root, path, locks)
    if data is None:
        return None
    text = decode(data, path)
    header = parsed_header(text)  # the state pass parsed this text already: its header is all the manifest reads
    return (Lock(header=header) if header is not None else Lock.parse(text, path)), text_sha256(text)


def _publishers(text: str, where: str) -> dict[str, list[dict[str, str]]]:
    """``{package: [identity, …]}`` of the pylock ``text``'s ``attestation-identities`` (PEP 740
    publishers, :mod:`lockgen.locks.publishers`); parsed only when it records any (most do not,
    and ``check`` rebuilds the manifest of every cell)."""
    if "attestation-identities" not in text:
        return {}
    from lockgen.locks import pylockfile, publishers

    found = publishers.of_pylock(pylockfile.loads(text, where))
    return {name: [i.to_dict() for i in ids] for name, ids in found.items()}


def _layer(lock: Lock, path: str, sha: str) -> dict[str, Any]:
    kind = lock.header.kind
    name = "main" if kind is LayerKind.MAIN else path.rsplit("/", 1)[-1].removesuffix(".txt")
    layer: dict[str, Any] = {
        "name": name,
        "kind": str(kind),
        "lock": path,
        "sha256": sha,
        **flags(kind),
        "find_links": list(lock.header.find_links),
        "commands": lock.header.install_commands(),
    }
    if lock.header.index_url:
        layer["index_url"] = lock.header.index_url
    return layer


def flags(kind: LayerKind) -> dict[str, bool]:
    """A layer's flags, which follow from its ``kind`` (docs/manifest.md, "A layer object");
    a reader refuses a layer whose flags say otherwise."""
    return {
        "sync": kind is LayerKind.MAIN,
        "optional": kind is LayerKind.OPTIONAL,
        "no_deps": kind in (LayerKind.NO_DEPS, LayerKind.UNHASHED),
        "require_hashes": kind is not LayerKind.UNHASHED,
    }


def failures(text: str | None) -> dict[str, str]:
    """``{cell: reason}`` of the cells a manifest records as failed (what :func:`build` was
    given), so ``check`` can rebuild the same manifest without running anything. An entry of
    another shape (a reason that is not a string) records no failure."""
    return {
        name: entry["reason"]
        for name, entry in _cells(text).items()
        if entry.get("status") == "failed" and isinstance(entry.get("reason"), str)
    }


def recorded_coverage(text: str | None) -> dict[str, Any]:
    """``{cell: coverage}`` of the locked cells of a manifest's text (what :func:`build` was
    given), so a run that changed no lock writes the same records again. The manifest is
    committed (a fork may edit it): a record the selector's own parser refuses
    (:meth:`lockgen.cellselect.Coverage.from_dict`: ``"wheels": 5``, a wheel without a string
    ``sha256``) counts as none, so the cell's wheels are read again and the record written anew."""
    from lockgen.cellselect import Coverage, SelectError

    found = {}
    for name, entry in _cells(text).items():
        if entry.get("status") != "locked" or "coverage" not in entry:
            continue
        try:
            Coverage.from_dict(entry["coverage"], f"cells.{name}.coverage")
        except SelectError:
            continue
        found[name] = entry["coverage"]
    return found


def coverage_current(record: Any) -> bool:
    """Whether a cell's recorded ``coverage`` has this lockgen's shape (format 4: ``runtimes``,
    ``layers``, each wheel's ``linked``); an older one, or one of any other shape, is read again
    by ``lockgen all``."""
    if not isinstance(record, Mapping) or not isinstance(record.get("runtimes"), list):
        return False
    layers = record.get("layers")
    if not isinstance(layers, list):
        return False
    for part in [record, *layers]:
        wheels = part.get("wheels", []) if isinstance(part, Mapping) else None
        if not isinstance(wheels, list) or not all(isinstance(w, Mapping) and "linked" in w for w in wheels):
            return False
    return True


def coverage_incomplete(record: Any) -> bool:
    """Whether a recorded ``coverage`` has wheels whose code was not read (main's or a layer's),
    or is not :func:`coverage_current`: the next ``lockgen all`` reads them (not a no-op)."""
    if not coverage_current(record):
        return True
    return bool(record.get("unread")) or any(part.get("unread") for part in record["layers"])


def recorded_pylocks(text: str | None) -> dict[str, str]:
    """``{cell: pylock path}`` of the locked cells of a manifest's text."""
    return {name: path for name, (path, _) in _pylocks(text).items()}


def recorded_pylock_sha(text: str | None, cell: str) -> str | None:
    """The sha256 a manifest's text records for a cell's pylock, or None."""
    return _pylocks(text).get(cell, (None, None))[1]


def _pylocks(text: str | None) -> dict[str, tuple[str, str]]:
    found = {name: table(e.get("pylock")) for name, e in _cells(text).items() if e.get("status") == "locked"}
    return {
        name: (p["path"], p["sha256"])
        for name, p in found.items()
        if isinstance(p.get("path"), str) and isinstance(p.get("sha256"), str)
    }


def _cells(text: str | None) -> dict[str, dict[str, Any]]:
    """The ``cells`` of a committed manifest's text (bounded JSON, :mod:`lockgen.runtime.bounded`),
    read leniently (:mod:`lockgen.runtime.keyed`): only entries that are objects; a manifest, or a
    ``cells``, that is not an object has none. Text that is not JSON counts as no record (the run
    writes the manifest again); JSON beyond the bounds (too deep, a number out of range) raises
    :class:`~lockgen.runtime.errors.InputError` naming the file (exit 2): it was not written by
    lockgen."""
    import hashlib

    from lockgen.locks.jsonfile import NotJson, load_json
    from lockgen.locks.lock import pass_memo

    memo = pass_memo()  # check and the no-op path read the manifest's cells three times: parsed once
    key = ("manifest", hashlib.sha256((text or "").encode("utf-8", "surrogatepass")).digest())
    if memo is not None and key in memo:
        cached: dict[str, dict[str, Any]] = memo[key]
        return cached
    try:
        value = load_json(text or "{}", "locks/manifest.json", "a manifest")
    except NotJson:
        value = {}
    cells = {name: entry for name, entry in table(dig(value, "cells")).items() if isinstance(entry, dict)}
    if memo is not None:
        memo[key] = cells
    return cells


def dumps(manifest: Mapping[str, Any]) -> str:
    """Stable bytes: sorted keys, two-space indent, trailing newline."""
    return json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read(path: Path) -> str | None:
    """The manifest's text (LF line endings), or None when there is none, it cannot be read, or
    it is not a regular file (a folder or a FIFO where the manifest goes: unread; the writer
    names it). Raises :class:`~lockgen.runtime.errors.InputError` (exit 2) for one over the size
    limit, refused unread (:func:`lockgen.runtime.bounded.read_file`)."""
    from lockgen.runtime.bounded import NotRegular, read_file

    try:
        data = read_file(path, f"{path.parent.name}/{path.name}")
    except (OSError, NotRegular):
        return None
    try:
        return data.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return None
