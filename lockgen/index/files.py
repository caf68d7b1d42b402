"""One typed value per artifact file name, parsed once with ``packaging``.

:func:`artifact` reads a wheel name with ``packaging.utils.parse_wheel_filename`` (PEP 427 /
the binary distribution format) and an sdist name with ``parse_sdist_filename`` (PEP 625, and
the older ``.zip`` / ``.tar.gz`` forms packaging accepts); anything else is None. A URL's last
path segment (``%2B`` decoded) is its file name (:func:`filename_of`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from packaging.tags import Tag
from packaging.utils import (
    BuildTag,
    InvalidSdistFilename,
    InvalidWheelFilename,
    NormalizedName,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

__all__ = ["Artifact", "Kind", "artifact", "filename_of"]


class Kind(str, enum.Enum):
    WHEEL = "wheel"
    SDIST = "sdist"


@dataclass(frozen=True)
class Artifact:
    """A distribution file's name, parsed: project ``name`` (normalized), ``version``, ``kind``,
    and for a wheel its ``build`` tag and ``tags`` (empty for an sdist)."""

    filename: str
    name: NormalizedName
    version: Version
    kind: Kind
    build: BuildTag = ()
    tags: frozenset[Tag] = frozenset()

    @property
    def pure(self) -> bool:
        """A wheel that installs anywhere (``py3-none-any``-like: no ABI, any platform)."""
        return self.kind is Kind.WHEEL and all(t.abi == "none" and t.platform == "any" for t in self.tags)

    def fits(self, supported: frozenset[Tag]) -> bool:
        """Whether a target with ``supported`` tags can install it (an sdist always can)."""
        return self.kind is Kind.SDIST or bool(self.tags & supported)


def artifact(filename: str) -> Artifact | None:
    """The parsed ``filename`` (a wheel's or an sdist's); None for any other name."""
    try:
        if filename.endswith(".whl"):
            name, version, build, tags = parse_wheel_filename(filename)
            return Artifact(filename, name, version, Kind.WHEEL, build, tags)
        name, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return Artifact(filename, name, version, Kind.SDIST)


def filename_of(url: str) -> str:
    """The file name a URL points at (its last path segment, ``%2B`` decoded)."""
    return unquote(PurePosixPath(urlsplit(url).path).name)
