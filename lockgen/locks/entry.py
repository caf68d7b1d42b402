"""One locked requirement (:class:`Entry`) and the lines it is written as; see the requirement
forms in :mod:`lockgen.locks.lock`'s docstring."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations

from packaging.utils import NormalizedName
from packaging.version import Version

__all__ = ["ARCHIVES", "EVERY_SUBSET", "Entry", "is_local"]

#: File names of local archives (a path line that is not a project folder).
ARCHIVES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz")
#: Up to this many extras, a package's lines name every set of them (see :meth:`Entry.extra_sets`).
EVERY_SUBSET = 3


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
        return self._requirement(self.extras)

    def extra_sets(self) -> tuple[tuple[str, ...], ...]:
        """The sets of extras the lock writes a line for, each with the same hashes: the plain
        name, every set of the extras (up to :data:`EVERY_SUBSET` of them; beyond, the plain name
        and all of them): ``fsspec==2025.3.0`` and ``fsspec[http]==2025.3.0``.

        pip 23.2 (what a fresh Python 3.11 or 3.12 venv ships) keys a requirement by its name and
        extras: a package one dependency asks for plainly (``fsspec>=2023``) and another with an
        extra (``fsspec[http]>=2023``) must have a pinned line for both, or pip takes the newest
        version from the index for the one it lacks and stops (``must have their versions pinned
        with ==``, pypa/pip#9644, #9286; C19 is the one-extra case). uv reads the lines as one
        package. A registry package only: a direct reference is pinned by its URL."""
        if not self.extras or self.url is not None or self.editable:
            return (self.extras,)
        if len(self.extras) > EVERY_SUBSET:
            return ((), self.extras)
        return tuple(s for n in range(len(self.extras) + 1) for s in combinations(self.extras, n))

    def _requirement(self, extras: tuple[str, ...]) -> str:
        if self.url is not None and is_local(self.url):
            if self.url.endswith(ARCHIVES):
                return self.url
            line = f"file:{self.url}#egg={self.name}"
            return f"-e {line}" if self.editable else line
        if self.editable:
            return f"-e {self.url}"
        written = f"[{','.join(extras)}]" if extras else ""
        if self.url:
            return f"{self.name}{written} @ {self.url}"
        return f"{self.name}{written}=={self.version}"

    @property
    def label(self) -> str | None:
        """The local version label (``cu130`` of ``2.13.0+cu130``), if any."""
        return self.version.local if self.version is not None else None

    def lines(self) -> Iterator[str]:
        """The entry's lines: one requirement per :meth:`extra_sets`, each with every hash, then
        the ``# via`` annotation."""
        hashes = [f"    --hash={h}" for h in self.hashes]
        for extras in self.extra_sets():
            yield self._requirement(extras) + (" \\" if hashes else "")
            yield from (h + " \\" for h in hashes[:-1])
            yield from hashes[-1:]
        if len(self.via) == 1:
            yield f"    # via {self.via[0]}"
        elif self.via:
            yield "    # via"
            yield from (f"    #   {v}" for v in self.via)
