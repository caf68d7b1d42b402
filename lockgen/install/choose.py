"""Which cell ``lockgen install`` installs, and whether this machine may have it: the manifest
read and its format checked, the cell named or chosen by :mod:`lockgen.select` (for an existing
venv, by that venv's Python minor), its layer files checked against the manifest's sha256, and the
machine checked against the cell (OS, host arch, glibc, macOS). Everything here refuses before
anything is installed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from lockgen import select
from lockgen.errors import InstallRefused, LockFormatError, UsageError
from lockgen.install.checks import Layer, glibc, host_problems, macos
from lockgen.install.venv import Interpreter
from lockgen.locks.lock import LayerKind, Lock, text_sha256
from lockgen.locks.manifest import MANIFEST_FORMAT, manifest_path
from lockgen.project import Project

__all__ = ["choose", "load_layers", "read_manifest", "refuse_host"]


def read_manifest(project: Project) -> dict[str, Any]:
    """The project's ``locks/manifest.json``. Raises :class:`UsageError` when there is none and
    :class:`InstallRefused` for a file this lockgen cannot read: not JSON, not a lockgen
    manifest, an older format (``lockgen all`` rewrites it) or a newer one (a newer lockgen
    reads it; docs/manifest.md: readers refuse any format they do not know)."""
    where = manifest_path(project.config.locks)
    try:
        data = json.loads((project.root / where).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{where}: no manifest; run `lockgen all` first") from None
    except (OSError, ValueError) as exc:
        raise InstallRefused(f"{where}: not a readable manifest ({exc})") from None
    fmt = data.get("format") if isinstance(data, dict) else None
    if isinstance(fmt, bool) or not isinstance(fmt, int):
        raise InstallRefused(f'{where}: not a lockgen manifest (no integer "format")')
    if fmt > MANIFEST_FORMAT:
        raise InstallRefused(
            f"{where}: manifest format {fmt} was written by a newer lockgen (this one reads format "
            f"{MANIFEST_FORMAT}); use a newer lockgen to install it"
        )
    if fmt < MANIFEST_FORMAT:
        raise InstallRefused(
            f"{where}: manifest format {fmt} is older than this lockgen reads ({MANIFEST_FORMAT}); "
            "run `lockgen all` to rewrite it"
        )
    if not isinstance(data.get("cells"), dict):
        raise InstallRefused(f'{where}: not a format {MANIFEST_FORMAT} manifest (no "cells" object)')
    manifest: dict[str, Any] = data
    return manifest


def choose(
    manifest: Mapping[str, Any],
    cell: str | None,
    detect: bool,
    python: str | None,
    cpu: bool,
    present: tuple[Path, Interpreter] | None = None,
    axes: Mapping[str, str] | None = None,
) -> tuple[str, Mapping[str, Any], list[str], dict[str, str]]:
    """``(name, manifest entry, lines to say, layers to leave out)`` of the cell to install:
    ``cell``, or the one the selector picks for this machine (``detect``). The layers left out
    (name -> why) are the optional layers whose GPU wheels have no code for a GPU of this machine
    (docs/select.md): only with ``detect``; a named cell installs every layer. The selector's
    Python is ``python``, else the interpreter of the existing venv (``present``: its path and
    interpreter), else its own rule.
    ``axes``: extra-axis values for the selector (``--axis``). Raises :class:`UsageError` for a
    bad request and :class:`InstallRefused` for a cell that cannot be installed (refused by the
    rules, failed, skipped, missing)."""
    cells: Mapping[str, Any] = manifest["cells"]
    if cell and detect:
        raise UsageError("give a CELL or --detect, not both")
    left_out: dict[str, str] = {}
    if detect:
        name, said, left_out = _detect(manifest, python, cpu, present, axes or {})
    elif cell:
        if cell not in cells:
            raise UsageError(f"no cell {cell!r} in the manifest; `lockgen matrix` lists the cells")
        name, said = cell, [f"cell {cell}"]
    else:
        raise UsageError("name the CELL to install, or pass --detect to pick this machine's")
    entry = cells[name]
    if python and cell and select.version_key(python)[:2] != select.version_key(str(entry["python"]))[:2]:
        raise InstallRefused(f"cell {name} is for Python {entry['python']}, not {python}")
    if entry.get("status") not in ("locked", "alias"):
        raise InstallRefused(f"cell {name} is {entry.get('status')}: {entry.get('reason') or 'it has no lock'}")
    return name, entry, said, left_out


def _detect(
    manifest: Mapping[str, Any],
    python: str | None,
    cpu: bool,
    present: tuple[Path, Interpreter] | None,
    axes: Mapping[str, str],
) -> tuple[str, list[str], dict[str, str]]:
    """The selector's choice on this machine; an existing venv's interpreter stands in for the
    running one (its Python minor and its arch)."""
    facts = select.gather()
    wanted = python
    if present is not None:
        facts = replace(facts, interpreter=present[1].arch)
        wanted = python or present[1].minor
    try:
        selection = select.select_cell(facts, manifest, wanted, cpu, axes=axes)
    except select.Refused as exc:
        raise InstallRefused("\n".join([exc.message, *(f"note: {n}" for n in exc.notes)])) from None
    except select.SelectError as exc:
        raise InstallRefused(str(exc)) from None
    reasons = selection.reasons
    if present is not None and not python:
        mine = f"Python {wanted} (--python)"
        reasons = [f"Python {wanted}: the interpreter of the venv {present[0]}" if r == mine else r for r in reasons]
    said = [f"cell {selection.cell} (detected):" + "".join(f"\n  {r}" for r in reasons)]
    return selection.cell, said, {layer["name"]: layer["reason"] for layer in selection.skipped_layers}


def load_layers(root: Path, name: str, entry: Mapping[str, Any]) -> list[Layer]:
    """The entry's layers in install order, each file checked against the manifest's sha256.
    Raises :class:`InstallRefused` for a missing, edited or unreadable file."""
    layers = []
    for data in entry.get("layers") or []:
        path = str(data["lock"])
        try:
            text = (root / path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InstallRefused(
                f"{path}: cannot read it ({exc.strerror}); the cell {name} is not installable from this checkout"
            ) from None
        if text_sha256(text) != data.get("sha256"):
            raise InstallRefused(
                f"{path}: its sha256 is not the manifest's (edited, or from another revision); run `lockgen check`"
            )
        try:
            layers.append(Layer(data, Lock.parse(text, path)))
        except LockFormatError as exc:
            raise InstallRefused(str(exc)) from None
    if not layers or layers[0].kind is not LayerKind.MAIN:
        raise InstallRefused(f"cell {name}: the manifest lists no main layer")
    return layers


def refuse_host(name: str, entry: Mapping[str, Any], facts: select.Facts) -> None:
    """Raise :class:`InstallRefused` when this machine (``facts``: its OS and host arch) cannot
    run the cell's locks: :func:`~lockgen.install.checks.host_problems` with its glibc/macOS."""
    problems = host_problems(entry, facts.os, glibc(), macos(), arch=facts.arch)
    if problems:
        raise InstallRefused(f"cell {name} does not fit this machine:\n" + "\n".join(f"  - {p}" for p in problems))
