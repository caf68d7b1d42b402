"""The core of ``lockgen detect``: the manifest the selector chooses this machine's cell from.

The facts, the parsers and the choice live in :mod:`lockgen.cellselect` (stdlib only). Here the
project supplies the manifest: the one its locks give, with the ``[detect]`` rules; a cell that
has no lock yet is still named (detect answers a question about the config).
"""

from __future__ import annotations

from typing import Any

from lockgen.locks import manifest
from lockgen.project import Project
from lockgen.runtime.errors import UsageError

__all__ = ["detect_manifest"]


def detect_manifest(project: Project, named: bool = False) -> dict[str, Any]:
    """The project's manifest as :func:`lockgen.cellselect.select_cell` reads it, built in memory.
    Raises :class:`UsageError` when the config has no detect table (``[tool.lockgen.detect]`` in
    pyproject.toml, ``[detect]`` in lockgen.toml: the message names the one of the file in use),
    unless a cell is ``named`` (``--cell``: the selector needs no rules for it)."""
    rules = project.detect_rules()
    if not rules and not named:
        prefix = project.config.key_prefix
        table = f"[{prefix}.detect]" if prefix else "[detect]"
        raise UsageError(
            f"{project.config.source}: no detect rules; add a {table} table (see the README's Detect section), or name the cell: --cell NAME"
        )
    rows = project.rows()
    data = manifest.build(project.root, rows, rules, strict=False, coverage=project.coverage())
    cells = data["cells"]
    for row in rows:
        entry = cells[row.name]
        if entry.get("status") == "missing" and not row.alias:
            main = {"name": "main", "kind": "main", "lock": row.lock}
            entry.update(status="locked", lock=row.lock, layers=[main])
    for row in rows:
        if row.alias and cells[row.name].get("status") == "missing":
            target = cells[row.alias]
            cells[row.name].update(status="alias", lock=target.get("lock"), layers=target.get("layers", []))
            cells[row.name].pop("reason", None)
    return data
