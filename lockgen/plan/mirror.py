"""Mirrors: fetch from a mirror, write the canonical URL.

A mirror maps a canonical URL prefix to the prefix lockgen and uv fetch from instead (an
air-gapped or corporate mirror, or the loopback index of the hermetic tests). Every URL lockgen
hands to uv or fetches itself goes through :meth:`Mirrors.fetch_url`; everything it writes
(locks, manifest) goes through :meth:`Mirrors.canonical`, so locks never name a mirror.

Mirrors come from ``[tool.lockgen.mirrors]`` (canonical = mirror), the ``LOCKGEN_MIRRORS``
environment variable and ``--mirror CANONICAL=MIRROR`` (later ones win for the same canonical
prefix). The longest matching prefix applies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lockgen.errors import UsageError

ENV_VAR = "LOCKGEN_MIRRORS"


def parse(pairs: Iterable[str], where: str = "--mirror") -> dict[str, str]:
    """Parse ``CANONICAL=MIRROR`` strings. Raises :class:`UsageError` naming ``where``."""
    result = {}
    for text in pairs:
        canonical, sep, mirror = text.partition("=")
        if not sep or "://" not in canonical or not mirror.strip():
            raise UsageError(f"{where} {text!r}: write CANONICAL=MIRROR, e.g. https://pypi.org/simple=http://mirror/simple")
        result[canonical.strip().rstrip("/")] = mirror.strip().rstrip("/")
    return result


def from_env(value: str | None) -> dict[str, str]:
    """``LOCKGEN_MIRRORS``: pairs separated by whitespace or commas."""
    return parse([p for p in re.split(r"[\s,]+", value or "") if p], ENV_VAR)


@dataclass(frozen=True)
class Mirrors:
    """Canonical prefix -> mirror prefix."""

    table: Mapping[str, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set, compare=False, repr=False)  # canonical prefixes that served

    def __post_init__(self) -> None:  # a trailing slash must not make a prefix miss
        object.__setattr__(self, "table", {k.rstrip("/"): v.rstrip("/") for k, v in self.table.items()})

    def never_used(self) -> list[str]:
        """Canonical prefixes no fetched URL and no text read back went through (after a run:
        a typo would silently bypass an air-gapped mirror)."""
        return [c for c in self.table if c not in self.used]

    def hosts(self) -> set[str]:
        """``scheme://host[:port]`` of every mirror: a URL still on one after :meth:`canonical`
        was served from a mirror path lockgen cannot map back (no ``--mirror`` for its host)."""
        from urllib.parse import urlsplit

        return {f"{urlsplit(m).scheme}://{urlsplit(m).netloc}" for m in self.table.values()}

    def fetch_url(self, url: str) -> str:
        """The URL to fetch ``url`` from (the longest matching canonical prefix replaced)."""
        for canonical in sorted(self.table, key=len, reverse=True):
            if url.startswith(canonical):
                self.used.add(canonical)
                return self.table[canonical] + url[len(canonical) :]
        return url

    def canonical(self, text: str) -> str:
        """``text`` with every mirror prefix turned back into its canonical prefix."""
        for canonical, mirror in sorted(self.table.items(), key=lambda kv: len(kv[1]), reverse=True):
            if mirror in text:
                self.used.add(canonical)
                text = text.replace(mirror, canonical)
        return text

    def merged(self, *more: Mapping[str, str]) -> Mirrors:
        table = dict(self.table)
        for extra in more:
            table.update(extra)
        return Mirrors(table)

    def __bool__(self) -> bool:
        return bool(self.table)
