"""The values the coverage modules pass around: a locked GPU wheel, a layer of them, what reading
some gave (:mod:`lockgen.wheels.cells`, :mod:`lockgen.wheels.layers`, :mod:`lockgen.wheels.reading`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.tags import Tag

from lockgen.wheels.coverage import Code

__all__ = ["GpuLayer", "GpuWheel", "Read"]


@dataclass(frozen=True)
class GpuWheel:
    """A locked GPU wheel: ``url`` (canonical) or ``path`` (project-relative), ``size`` bytes. A
    layer's ``name==version`` artifact has neither: it is found by its sha256 on ``find_links``
    (URLs or project-relative folders) and ``index`` (:mod:`lockgen.wheels.pages`), among wheels
    whose tags are in ``fits`` when a page gives no hashes."""

    name: str
    version: str
    sha256: str
    url: str | None
    path: str | None
    size: int | None
    find_links: tuple[str, ...] = ()
    index: str | None = None
    fits: frozenset[Tag] = field(default=frozenset(), compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.name, self.version, self.sha256


@dataclass(frozen=True)
class GpuLayer:
    """An optional or no-deps layer of a cell: its ``name`` and ``kind`` as the manifest's layer
    object has them, the ``sha256`` of its lock's text (as the layer object's) and its GPU wheels."""

    name: str
    kind: str
    sha256: str
    wheels: tuple[GpuWheel, ...] = ()


@dataclass(frozen=True)
class Read:
    """What reading some GPU wheels gave: ``codes`` (sha256 -> code), ``unread`` (sha256 -> why)
    and ``skipped`` (sha256 of artifacts that turned out to be pure wheels or sdists)."""

    codes: Mapping[str, Code] = field(default_factory=dict)
    unread: Mapping[str, str] = field(default_factory=dict)
    skipped: frozenset[str] = frozenset()
