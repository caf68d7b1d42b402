"""Named sources for a cell: which URLs uv reads, and which packages each may serve.

The default index serves everything not named for another source. A backend ``index`` source is
never given to uv as an index: it would also serve its stale copies of numpy, pillow, setuptools
(the seed's rule; CASES C02/C03). Instead each package it serves gets its per-package page as a
find-links entry (``https://download.pytorch.org/whl/cu130/torch/``). A ``find-links`` source is
one flat page, or a project folder when it holds a matching wheel. A ``urls`` source lists direct
wheel URLs; a cell uses the ones whose wheel tags fit its target (CASES C09).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from lockgen.config import Source
from lockgen.errors import ConfigError
from lockgen.plan.matrix import Cell
from lockgen.plan.target import Target


@dataclass(frozen=True, kw_only=True)
class CellSource:
    """A source as one cell sees it: placeholders filled, local folder chosen."""

    name: str
    kind: str  # index | find-links | urls
    packages: tuple[str, ...]
    urls: tuple[str, ...]  # canonical URLs (or a project-relative folder for a local find-links)

    def find_links(self) -> tuple[str, ...]:
        """What uv gets as ``--find-links`` for this source (nothing for ``urls`` sources)."""
        if self.kind == "index":
            return tuple(f"{self.urls[0].rstrip('/')}/{package}/" for package in self.packages)
        if self.kind == "find-links":
            return self.urls
        return ()

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "packages": list(self.packages), "urls": list(self.urls)}


def placeholders(cell: Cell, target: Target) -> dict[str, str]:
    return {
        "backend": cell.backend,
        "flavor": cell.settings.flavor or cell.backend,
        "python_tag": target.python_tag,
        "os": cell.os,
        "arch": cell.arch,
        "python": cell.python,
        **cell.extra,  # extra matrix axes by their names (issue 9)
    }


def _fill(text: str, values: dict[str, str], source: str) -> str:
    try:
        return text.format_map(values)
    except (KeyError, ValueError, IndexError) as exc:
        raise ConfigError(
            "config", [f"sources.{source}: bad placeholder in {text!r} ({exc}); use {{{', '.join(values)}}}"]
        ) from None


def cell_sources(root: Path, sources: dict[str, Source], cell: Cell, target: Target) -> tuple[CellSource, ...]:
    """The cell's sources (``settings.sources``, in order) with placeholders filled.

    A find-links source with ``local`` uses that project folder when it holds a file matching
    ``local-if`` (the seed's Spark rule: ``wheels/spark/`` when it holds a win_arm64 torch wheel),
    else its URL.
    """
    values = placeholders(cell, target)
    result = []
    for name in cell.settings.sources or ():
        source = sources[name]
        urls = tuple(_fill(u, values, name) for u in source.urls)
        if source.local:
            folder = root / source.local
            pattern = _fill(source.local_if, values, name)
            if folder.is_dir() and any(fnmatch.fnmatch(p.name, pattern) for p in folder.iterdir()):
                urls = (source.local,)
        result.append(CellSource(name=name, kind=source.kind, packages=source.packages, urls=urls))
    seen: dict[str, str] = {}
    for source in result:
        for package in source.packages:
            if package in seen:
                raise ConfigError("config", [
                    f"use: cell {cell.name} uses sources {seen[package]!r} and {source.name!r}, which both serve "
                    f"{package}; a package may have one source per cell"
                ])  # fmt: skip
            seen[package] = source.name
    return tuple(result)


def folder_listing(root: Path, folder: str) -> list[str]:
    """``name:size`` of each file in a project folder (sizes, not times: the same on any machine)."""
    path = root / folder
    return sorted(f"{p.name}:{p.stat().st_size}" for p in path.iterdir() if p.is_file()) if path.is_dir() else []


def local_folder_listing(root: Path, sources: tuple[CellSource, ...]) -> dict[str, list[str]]:
    """The files of each local find-links folder a cell uses (part of its input hash)."""
    return {url: folder_listing(root, url) for s in sources for url in s.urls if "://" not in url}
