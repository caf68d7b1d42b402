"""What ``lockgen check --online`` finds: a :class:`Kind` of problem with a locked file, and a
:class:`Finding` naming the package, the URL and where it is locked (see :mod:`lockgen.rot.online`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Finding", "Kind"]


class Kind(str, enum.Enum):
    """What is wrong with a locked file (see the module docstring)."""

    DELETED = "deleted"
    MOVED = "moved"
    SIZE = "size-changed"
    HASH = "hash-changed"
    UNLISTED = "unlisted"
    ATTESTATION = "attestation"
    REFUSED = "refused"
    UNREACHABLE = "unreachable"
    YANKED = "yanked"

    def __str__(self) -> str:
        return self.value

    @property
    def fails(self) -> bool:
        return self is not Kind.YANKED


_ORDER = {kind: i for i, kind in enumerate(Kind)}


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One problem of one URL (or locked hash): ``kind``, the package and version, the ``url``
    ("" for a hash no page lists), what was seen (``detail``), and where it is locked
    (``where``: ``cell`` or ``cell [layer]``, sorted)."""

    kind: Kind
    package: str
    version: str
    url: str
    detail: str
    where: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": str(self.kind), "package": self.package, "version": self.version, "url": self.url,
            "detail": self.detail, "where": list(self.where), "fails": self.kind.fails,
        }  # fmt: skip
