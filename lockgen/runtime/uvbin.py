"""The uv binary of the pinned ``uv`` package, never another ``uv`` (issue "Trust": with the
pinned binary missing, lockgen ran whatever ``uv`` the user's PATH had), its version, and the
width uv and pip print at (:data:`WIDE`). Resolving runs it in :mod:`lockgen.resolve.uv`,
installing in :mod:`lockgen.install.venv`.

``uv.find_uv_bin()`` looks in several script folders (the base interpreter's, the user's), so it
may find a uv of another version. :func:`pinned_uv_binary` takes the file that the installed
``uv`` distribution lists in its ``RECORD`` (``../../../bin/uv``) and nothing else.
"""

from __future__ import annotations

import functools
import os
import sys
from importlib import metadata
from pathlib import Path

from lockgen.runtime.errors import UvMissing

__all__ = ["WIDE", "pinned_uv_binary", "uv_version"]

#: uv wraps its messages to ``COLUMNS`` (a user's exported ``COLUMNS=80`` split a URL and its
#: cause over lines, and lockgen read the failure wrongly): lockgen parses them, so uv and pip
#: always get lines as long as the message (resolving and installing).
WIDE = {"COLUMNS": "10000"}


def uv_version() -> str:
    """Version of the pinned ``uv`` package (its binary reports the same), e.g. ``"0.13.9"``: read
    from the package's metadata, so a no-op run starts no process."""
    return metadata.version("uv")


@functools.cache
def pinned_uv_binary() -> str:
    """Absolute path of the binary the installed ``uv`` package put in place (from its RECORD).

    Raises :class:`~lockgen.runtime.errors.UvMissing` when the package is not installed, has no RECORD,
    or its binary is gone or not executable; the message says how to reinstall the pinned version.
    Looked up once per process (uv's finder is not thread-safe; the RECORD does not change).
    """
    exe = "uv.exe" if sys.platform == "win32" else "uv"
    try:
        files = metadata.files("uv")
    except metadata.PackageNotFoundError:
        raise UvMissing(f"the pinned uv package is not installed: reinstall lockgen ({_reinstall()})") from None
    if files is None:
        raise UvMissing(f"the installed uv package lists no files (no RECORD): reinstall it ({_reinstall()})")
    listed = [f for f in files if f.name.lower() == exe]
    for entry in listed:
        path = Path(os.path.normpath(entry.locate()))
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    where = f" (expected at {os.path.normpath(listed[0].locate())})" if listed else ""
    raise UvMissing(f"the pinned uv package's binary is missing{where}: reinstall lockgen ({_reinstall()})")


def _reinstall() -> str:
    """``pip install --force-reinstall uv==X``, X from lockgen's own requirement on uv."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requires = metadata.requires("lockgen") or []
    except metadata.PackageNotFoundError:
        requires = []
    for text in requires:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.name == "uv":
            return f"pip install --force-reinstall 'uv{requirement.specifier}'"
    return "pip install --force-reinstall uv"
