"""The uv settings a local project requirement brings with it: ``[tool.uv.sources]`` and
``[[tool.uv.index]]`` of its ``pyproject.toml``.

When uv builds a local project (``-e .``, ``./sub`` in a template) it reads that project's
``[tool.uv.sources]`` and the ``[[tool.uv.index]]`` entries they name, and takes the packages they
name from there, whatever lockgen's config says (uv's ``--no-sources`` would also switch off the
index pins lockgen itself writes as such a table). A lock must not bring in a host the config does
not name, so :func:`brought` lists what a cell's local projects would bring, and the cell refuses
them with the reason (:mod:`lockgen.resolve.pipeline`). Pure but for reading the files (bounded).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lockgen.runtime import keyed
from lockgen.runtime.credentials import redact

__all__ = ["brought"]


def brought(root: Path, folders: Iterable[str]) -> list[str]:
    """``["sub/pyproject.toml: [tool.uv.sources] alpha = index 'other' (http://…)", …]``: each
    entry of the ``[tool.uv.sources]`` of the local projects ``folders`` (project-relative) that
    sends a package elsewhere than lockgen's sources (an index, a URL, a git repository, a path;
    ``workspace = true`` is not), with the URL of an index it names. A project without a
    ``pyproject.toml``, or whose TOML cannot be read, brings nothing (uv cannot read it either).
    The tables are read leniently (:func:`~lockgen.runtime.keyed.dig`): a value of another type
    than uv's (``index = "x"``, ``sources = 3``, an index ``name`` that is no string) reads as
    absent; a source whose ``index`` is no string is still listed, without a URL."""
    from lockgen.config.load import parse_toml
    from lockgen.runtime.bounded import read_file

    found = []
    for folder in sorted(set(folders)):
        rel = "pyproject.toml" if folder in ("", ".") else f"{folder.rstrip('/')}/pyproject.toml"
        try:
            doc = parse_toml(read_file(root / rel, rel).decode("utf-8-sig"))
        except Exception:  # OSError, a TOML or size error: nothing uv reads either
            continue
        uv = keyed.dig(doc, "tool", "uv")
        indexes = {
            name: keyed.dig(i, "url")
            for i in keyed.listed(keyed.dig(uv, "index"))
            if isinstance(name := keyed.dig(i, "name"), str) and name
        }
        for name, value in sorted(keyed.table(keyed.dig(uv, "sources")).items()):
            for entry in value if isinstance(value, list) else [value]:
                said = _said(entry, indexes)
                if said:
                    found.append(f"{rel}: [tool.uv.sources] {name} = {said}")
    return found


def _said(entry: Any, indexes: dict[str, Any]) -> str:
    if not isinstance(entry, dict):
        return ""
    if "index" in entry:
        url = indexes.get(entry["index"]) if isinstance(entry["index"], str) else None
        return f"index {entry['index']!r}" + (f" ({redact(str(url))})" if url else "")
    for key in ("url", "git", "path"):
        if key in entry:
            return f"{key} {redact(str(entry[key]))!r}"
    return ""
