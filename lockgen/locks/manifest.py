"""Stage 8: ``locks/manifest.json``, the index of every lock.

The manifest is a pure function of the matrix and the lock files on disk, so it can be rebuilt at
any time and the same locks always give the same bytes: per cell the lock path, the lock's sha256,
its input hash and uv version (both from the lock's header) and its target; skipped cells with
their reason. Keys are sorted; the file ends with a newline.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lockgen.locks.lock import LOCK_FORMAT, file_sha256, read_header

MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True, kw_only=True)
class Row:
    """What the manifest (and the no-op fast path) needs of a cell."""

    name: str
    os: str
    arch: str
    backend: str
    python: str
    lock: str  # project-relative lock path
    skip: str | None
    target: dict  # platform, python, [macos], backend, os, arch
    input_hash: str | None = None  # None for skipped cells
    alias: str | None = None  # the cell whose lock this one reuses
    alias_lock: str | None = None
    interpreter: str | None = None  # interpreter arch an install must use, when not the cell's

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def manifest_path(locks: str) -> str:
    """Project-relative path of the manifest: ``<locks>/manifest.json``."""
    return f"{locks}/{MANIFEST_NAME}"


def build(root: Path, rows: Sequence[Row]) -> dict:
    """The manifest as a dict, from every cell of the matrix and the locks present on disk.

    Cells without a lock file (never locked, or failed the first time) are left out.
    """
    entries = {}
    for row in rows:
        if row.skip:
            entries[row.name] = {"skipped": row.skip, "target": row.target}
            continue
        lock = row.alias_lock or row.lock
        header = read_header(root / lock)
        if not header:
            continue
        digest = file_sha256(root / lock)
        entry = {
            "lock": lock,
            "sha256": digest,
            "input_hash": header.get("input-hash"),
            "uv": header.get("uv"),
            "target": row.target,
            "layers": [{"name": "main", "lock": lock, "sha256": digest, "flags": []}]
            + [_layer(root, line) for line in header.get("layer", [])],
        }
        if header.get("unavailable"):
            entry["unavailable"] = [_unavailable(line) for line in header["unavailable"]]
        if header.get("skipped-url"):
            entry["skipped_urls"] = header["skipped-url"]
        if header.get("no-upload-time"):
            entry["no_upload_time"] = header["no-upload-time"]
        if row.alias:
            entry["alias_of"] = row.alias
        if row.interpreter:
            entry["interpreter"] = row.interpreter
        entries[row.name] = entry
    return {"format": LOCK_FORMAT, "generator": "lockgen", "cells": entries}


def _layer(root: Path, line: str) -> dict:
    """A ``# layer: <name> <path> <flag>`` header line as a manifest layer entry."""
    name, path, flag = line.split()
    try:
        digest = file_sha256(root / path)
    except OSError:
        digest = None
    return {"name": name, "lock": path, "sha256": digest, "flags": [flag]}


def _unavailable(line: str) -> dict:
    requirement, _, reason = line.partition(": ")
    return {"requirement": requirement, "reason": reason}


def dumps(manifest: dict) -> str:
    """Stable bytes: sorted keys, two-space indent, trailing newline."""
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
