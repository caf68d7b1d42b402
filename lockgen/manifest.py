"""Stage 8: ``locks/manifest.json``, the index of every lock.

The manifest is a pure function of the matrix and the lock files on disk, so it can be rebuilt at
any time and the same locks always give the same bytes: per cell the lock path, the lock's sha256,
its input hash and uv version (both from the lock's header) and its target; skipped cells with
their reason. Keys are sorted; the file ends with a newline.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from lockgen.config import Config
from lockgen.lockfile import file_sha256, read_header
from lockgen.matrix import Cell
from lockgen.plan import LOCK_FORMAT
from lockgen.target import target_for

MANIFEST_NAME = "manifest.json"


def manifest_path(config: Config) -> str:
    """Project-relative path of the manifest: ``<locks>/manifest.json``."""
    return f"{config.locks}/{MANIFEST_NAME}"


def build(config: Config, cells: Sequence[Cell]) -> dict:
    """The manifest as a dict, from every cell of the matrix and the locks present on disk.

    Cells without a lock file (never locked, or failed the first time) are left out.
    """
    entries = {}
    for cell in cells:
        target = {**target_for(cell).to_dict(), "backend": cell.backend, "os": cell.os, "arch": cell.arch}
        if cell.settings.skip:
            entries[cell.name] = {"skipped": cell.settings.skip, "target": target}
            continue
        lock = config.root / cell.lock_path(config)
        header = read_header(lock)
        if not header:
            continue
        entries[cell.name] = {
            "lock": cell.lock_path(config),
            "sha256": file_sha256(lock),
            "input_hash": header.get("input-hash"),
            "uv": header.get("uv"),
            "target": target,
        }
    return {"format": LOCK_FORMAT, "generator": "lockgen", "cells": entries}


def dumps(manifest: dict) -> str:
    """Stable bytes: sorted keys, two-space indent, trailing newline."""
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
