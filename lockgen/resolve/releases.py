"""What an index page says about each release of a package: its ``requires-python``, the tags of
its wheels, whether it has an sdist. The evidence :mod:`lockgen.run.harmonize` weighs to decide
whether a cell is forced off a version (cheap and deterministic: the run's own copy of the page,
no resolution).

Pages come from the run's page cache (:class:`lockgen.index.pageserver.Pages`, the pages uv
read in this run) and are parsed by the one page parser, :func:`lockgen.index.pages.parse`;
file names by ``packaging.utils`` (wheel names, PEP 427; sdist names, PEP 625). Yanked files
are left out (PEP 592: a resolver takes them only when pinned exactly).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from lockgen.index.pagecache import SIMPLE_ACCEPT
from lockgen.index.pages import parse, project_url
from lockgen.index.pageserver import Pages

__all__ = ["Release", "releases", "version_map"]


@dataclass(frozen=True)
class Release:
    """One version of a package as its index page lists it: ``requires_python`` (as stated by
    its files; None: none stated), every tag its wheels carry, and whether it has an sdist."""

    requires_python: str | None = None
    tags: frozenset[Tag] = field(default_factory=frozenset)
    sdist: bool = False


def releases(pages: Pages, index: str, name: str) -> dict[Version, Release]:
    """``{version: Release}`` of package ``name`` (canonical) on the index at ``index`` (the URL
    the page cache fetches: mirrors applied). Empty when the page cannot be read or lists
    nothing; never raises for a bad page (it is evidence, not a requirement)."""
    url = project_url(index, name)
    page = pages.page(url, SIMPLE_ACCEPT, {}, serving=False)
    if page.status != 200:
        return {}
    kind = next((v for k, v in page.headers if k.lower() == "content-type"), "text/html")
    try:
        files, _ = parse(page.body.decode("utf-8", errors="replace"), kind, url)
    except Exception:  # a malformed page gives no evidence
        return {}
    found: dict[Version, tuple[str | None, set[Tag], bool]] = {}
    for file in files:
        if file.yanked is not False:
            continue
        try:
            if file.filename.endswith(".whl"):
                wheel, version, _, tags = parse_wheel_filename(file.filename)
                if wheel != canonicalize_name(name):
                    continue
                requires, have, sdist = found.get(version, (None, set(), False))
                found[version] = (requires or file.requires_python, have | set(tags), sdist)
            else:
                sdist_name, version = parse_sdist_filename(file.filename)
                if sdist_name != canonicalize_name(name):
                    continue
                requires, have, _ = found.get(version, (None, set(), False))
                found[version] = (requires or file.requires_python, have, True)
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
    return {v: Release(r, frozenset(t), s) for v, (r, t, s) in found.items()}


def version_map(found: Mapping[Version, Release]) -> dict[str, Release]:
    """``found`` keyed by the version's text (as locks write it)."""
    return {str(v): r for v, r in found.items()}
