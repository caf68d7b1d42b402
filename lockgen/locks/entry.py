"""One locked requirement (:class:`Entry`) and the lines it is written as; see the requirement
forms in :mod:`lockgen.locks.lock`'s docstring."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from packaging.utils import NormalizedName
from packaging.version import Version

__all__ = ["ARCHIVES", "Entry", "is_local"]

#: File names of local archives (a path line that is not a project folder).
ARCHIVES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz")


def is_local(url: str) -> bool:
    """Whether a direct reference is a project-relative path (``./sub``, ``./wheels/x.whl``)."""
    return url == "." or url.startswith(("./", "../"))


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One locked requirement. ``version`` is None only for a direct reference without one (a
    local path). ``url``: a direct reference (wheel URL, ``git+…@<commit>``, or a project-relative
    path ``./sub``: see the module docstring for the line each gives); ``hashes`` are
    ``sha256:<hex>`` strings, sorted; ``via`` names what asked for it (a committed template,
    another package); ``index``: the index or find-links page uv said it took the package from
    (its ``# from`` annotation, canonical; None when uv named none). ``index`` is what the
    resolution knew, not what a lock says: a lock does not write it, and it takes no part in
    comparing entries."""

    name: NormalizedName
    version: Version | None = None
    extras: tuple[str, ...] = ()
    url: str | None = None
    editable: bool = False
    hashes: tuple[str, ...] = ()
    via: tuple[str, ...] = ()
    index: str | None = field(default=None, compare=False)

    @property
    def unhashed(self) -> bool:
        """A direct reference without a hash (a project folder, a VCS checkout): the ``unhashed``
        layer's, never a hashed lock's."""
        return self.editable or (self.url is not None and not self.hashes)

    @property
    def requirement(self) -> str:
        """The requirement as the lock writes it: ``cov[toml]==7.3.1`` (extras kept: pip 23.2
        refuses a hashed lock whose extras were dropped, C19), ``pkg @ URL``,
        ``-e file:./sub#egg=pkg`` (see the module docstring)."""
        if self.url is not None and is_local(self.url):
            if self.url.endswith(ARCHIVES):
                return self.url
            line = f"file:{self.url}#egg={self.name}"
            return f"-e {line}" if self.editable else line
        if self.editable:
            return f"-e {self.url}"
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        if self.url:
            return f"{self.name}{extras} @ {self.url}"
        return f"{self.name}{extras}=={self.version}"

    @property
    def label(self) -> str | None:
        """The local version label (``cu130`` of ``2.13.0+cu130``), if any."""
        return self.version.local if self.version is not None else None

    def lines(self) -> Iterator[str]:
        hashes = [f"    --hash={h}" for h in self.hashes]
        yield self.requirement + (" \\" if hashes else "")
        yield from (h + " \\" for h in hashes[:-1])
        yield from hashes[-1:]
        if len(self.via) == 1:
            yield f"    # via {self.via[0]}"
        elif self.via:
            yield "    # via"
            yield from (f"    #   {v}" for v in self.via)
