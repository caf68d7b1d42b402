"""lockgen's local memo of the last full run, so a no-op ``lockgen all`` stays fast.

``.lockgen/stamp.json`` records, for a *key* over everything a run reads (the config file's
bytes, every file in the templates folder, the installed uv package and lockgen's own version),
each cell's :class:`~lockgen.locks.manifest.Row` with its input hash. When the key still matches, the
cells, their input hashes and the manifest are known without validating the config, rendering a
template or importing jinja2: comparing lock headers is enough. Any difference in the key means a
full run. The stamp is never committed and never decides a lock's content.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockgen import __version__
from lockgen.config import WORK
from lockgen.runtime.errors import LockgenError
from lockgen.locks.manifest import Row
from lockgen.runtime import bounded
from lockgen.runtime.keyed import table

if TYPE_CHECKING:
    from lockgen.plan.content import Digests

__all__ = ["STAMP", "Memo", "key", "read", "write"]

STAMP = f"{WORK}/stamp.json"


def _uv_identity() -> str:
    """Size and mtime of the installed uv package's ``__init__.py`` (reinstalling rewrites it)."""
    from importlib.util import find_spec

    spec = find_spec("uv")
    st = os.stat(spec.origin) if spec and spec.origin else None
    return f"{st.st_size}:{st.st_mtime_ns}" if st else "missing"


def key(
    root: Path,
    config_name: str,
    templates: str,
    folders: Sequence[str] = (),
    extra: str = "",
    files: Sequence[str] = (),
    digests: Digests | None = None,
) -> str:
    """sha256 over lockgen's version, the uv package, the config file, the templates folder, the
    content of the project folders sources may read (``local`` wheel folders: each file's sha256,
    hashed again only when its size or times changed, :mod:`lockgen.plan.content`) and the
    content of other project ``files`` the plans read (the project's pyproject.toml, local
    requirements' metadata files; a missing one counts as empty)."""
    from lockgen.plan.content import Digests
    from lockgen.plan.sources import folder_listing

    digests = digests if digests is not None else Digests(root)
    digest = hashlib.sha256()
    for part in (__version__, _uv_identity(), extra, config_name):
        digest.update(part.encode() + b"\0")
    for folder in folders:
        digest.update(json.dumps([folder, folder_listing(root, folder, digests)]).encode())
    for name in files:
        digest.update(name.encode() + b"\0" + _content(root / name, name) + b"\0")
    digest.update(_content(root / config_name, config_name) + b"\0")
    templates_folder = root / templates
    from lockgen.runtime.bounded import confined_problem as template_problem

    for path in sorted(p for p in templates_folder.rglob("*") if p.is_file()) if templates_folder.is_dir() else []:
        rel = path.relative_to(templates_folder).as_posix()
        confined = template_problem(templates_folder, rel) is None  # a link out is not read (the run refuses it)
        digest.update(rel.encode() + b"\0" + (_content(path, rel) if confined else b"refused") + b"\0")
    return digest.hexdigest()


def _content(path: Path, where: str) -> bytes:
    """The bytes of a file the stamp covers, through the one bounded reader: empty when it is
    missing, a marker when it is refused (a FIFO is never waited on, a huge file never read:
    the run's own reader names it)."""
    try:
        return bounded.read_file(path, where)
    except FileNotFoundError:
        return b""
    except (OSError, LockgenError):
        return b"\0refused"


@dataclass(frozen=True)
class Memo:
    """What the stamp remembers: the locks folder, every cell's row, the detect rules."""

    locks: str
    rows: list[Row]
    detect: dict[str, Any] | None


def write(
    root: Path, key_: str, templates: str, memo: Memo, folders: Sequence[str] = (), files: Sequence[str] = ()
) -> None:
    """Record ``memo`` under ``key_`` (written by ``all``/``lock`` only; never by readers)."""
    from lockgen.locks.store import work_folder, write_text

    data = {
        "key": key_, "templates": templates, "locks": memo.locks, "folders": list(folders), "files": list(files),
        "cells": [r.to_dict() for r in memo.rows], "detect": memo.detect,
    }  # fmt: skip
    try:
        work_folder(root)
        write_text(root / STAMP, json.dumps(data, sort_keys=True) + "\n")
    except (OSError, LockgenError):  # a read-only checkout: the stamp is only a speed-up
        pass


def read(root: Path, config_name: str, extra: str = "") -> Memo | None:
    """The memo if the stamp's key matches the project as it is now, else None."""
    data = table(bounded.read_cache(root / STAMP))
    folders, files, cells = (data.get(k, []) for k in ("folders", "files", "cells"))
    detect = data.get("detect")
    if not (
        all(isinstance(data.get(k), str) for k in ("key", "templates", "locks"))
        and all(isinstance(v, list) and all(isinstance(i, str) for i in v) for v in (folders, files))
        and isinstance(cells, list)
        and isinstance(detect, dict | None)
    ):
        return None  # not the stamp this lockgen writes: no memo (the run does the work)
    try:
        if data["key"] != key(root, config_name, data["templates"], folders, extra, files):
            return None
        rows = [_row(row) for row in cells]
    except (OSError, ValueError, TypeError):
        return None
    return Memo(data["locks"], rows, detect)


def _row(data: object) -> Row:
    """A stamp's row as :class:`Row` wrote it; ``TypeError`` for any other shape."""
    if not isinstance(data, dict):
        raise TypeError("a row must be an object")
    row = Row.from_dict(data)  # TypeError for a key Row does not have, or one missing
    texts = (row.name, row.os, row.arch, row.backend, row.python, row.lock)
    optional = (row.skip, row.alias, row.input_hash)
    tables = (row.target, row.requires, row.environment, row.extra)
    if not (
        all(isinstance(v, str) for v in texts)
        and all(isinstance(v, str | None) for v in optional)
        and all(isinstance(t, dict) and all(isinstance(v, str) for v in t.values()) for t in tables)
    ):
        raise TypeError("a row of another shape")
    return row
