"""Reuse within a run: pages fetched once (the page cache), offline resolutions where they are fresh.

Two mechanisms, both off with ``--online`` (then every uv run is the plain ``uv pip compile`` a
user would write):

1. Every index page uv reads goes through the run's :class:`~lockgen.index.pagecache.PageCache`:
   fetched upstream once per run, then answered ``304 Not Modified`` to every later uv process,
   which reuses the copy it parsed before. This never costs more than plain uv (one fetch
   instead of one per process) and changes nothing uv sees.
2. A cell may resolve ``--offline`` (~0.1 s instead of ~2.5 s), from uv's cache alone, when the
   cache holds this run's copy of every page its resolution needs: before trying, the pages of
   every package the committed lock names must have been served in this run (and every
   find-links page of the cell); the offline result is kept only if the pages of every package it
   locked were (wheel metadata is immutable: the cache holds what the network would give). No
   cell waits for another: a cell whose pages are not all fresh yet resolves online at once. On
   a cold cache an offline try fails in ~0.1 s (the wheel metadata of another Python or platform
   is not cached); after two failures without a success the run stops trying.

A cell that fails while the page cache reported upstream trouble (5xx, 401/403, unreachable) is
resolved again without it, so the cache can never be the reason a cell fails.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence

from lockgen.index.pagecache import FLAT_ACCEPT, SIMPLE_ACCEPT, PageCache, origin_of
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan

__all__ = ["OFFLINE", "ONLINE", "Freshness", "start"]

log = logging.getLogger("lockgen")

ONLINE, OFFLINE = "online", "offline"
#: Offline failures without a success after which a run stops trying (the cache is cold).
COLD_AFTER = 2


def start(plans: Sequence[Plan], mirrors: Mirrors, locked: Mapping[str, Iterable[str]]) -> Freshness:
    """A :class:`Freshness` with a page cache serving every ``http(s)`` origin the ``plans``
    fetch from (after ``mirrors``), prefetching the index pages of the packages each cell has
    locked (``locked``: cell -> names; a cell without a lock: the names its inputs require) and
    its find-links pages. Close it when the run ends."""
    origins, pages = [], []
    for plan in plans:
        for url in plan.urls():
            fetched = mirrors.mirrored(url)
            origin = origin_of(fetched)
            # an origin that needs a login is left to uv: the cache would have to carry the secret
            if origin is not None and mirrors.logins.login(fetched) is None:
                origins.append(origin)
        index = mirrors.fetch_url(plan.inputs.index_url).rstrip("/")
        names = sorted(locked.get(plan.cell.name) or plan.requirement_names())
        pages += [(f"{index}/{name}/", SIMPLE_ACCEPT) for name in names]
        pages += [(mirrors.fetch_url(link), FLAT_ACCEPT) for link in plan.inputs.main_find_links if not _is_local(link)]
    cache = PageCache(origins)
    cache.prefetch(pages)
    return Freshness(cache, mirrors, locked)


def _is_local(url: str) -> bool:
    return "://" not in url


class Freshness:
    """What a run knows about the freshness of uv's cache: which pages its page cache served.

    ``base`` are the run's mirrors without the page cache; :attr:`mirrors` routes uv through it;
    ``locked``: cell -> the names its committed lock has. Thread-safe.
    """

    def __init__(self, pages: PageCache, base: Mirrors, locked: Mapping[str, Iterable[str]] | None = None) -> None:
        self.pages = pages
        self.base = base
        self.locked = {cell: frozenset(names) for cell, names in (locked or {}).items()}
        self.mirrors = pages.mirrors(base)
        self._lock = threading.Lock()
        self._failed = 0
        self._succeeded = 0

    def close(self) -> None:
        self.pages.close()

    def _fresh(self, plan: Plan, names: Iterable[str]) -> bool:
        """Every page of ``names`` on the cell's index, and every find-links page of its main
        resolution, was served by the page cache in this run."""
        index = self.base.fetch_url(plan.inputs.index_url).rstrip("/")
        if not self.pages.proxies(index):
            return False
        for link in plan.inputs.main_find_links:
            if _is_local(link):
                continue  # uv reads a local folder itself, every time
            url = self.base.fetch_url(link)
            if not self.pages.proxies(url) or not self.pages.served(url):
                return False
        return all(self.pages.served(f"{index}/{name}/") for name in names)

    def worth_trying(self, plan: Plan) -> bool:
        """Try ``--offline`` first? Only when the pages of the packages the cell's committed lock
        names (none: do not try) are this run's, and the cache has not shown itself cold."""
        names = self.locked.get(plan.cell.name, frozenset())
        with self._lock:
            cold = self._failed >= COLD_AFTER and not self._succeeded
        return bool(names) and not cold and self._fresh(plan, names)

    def covers(self, plan: Plan, names: Iterable[str]) -> bool:
        """Keep an offline result that locked ``names``? Only if all their pages are this run's."""
        names = set(names)
        return bool(names) and self._fresh(plan, names)

    def tried(self, succeeded: bool) -> None:
        """Record how an offline try went (a failure: uv lacked cached data, or the result was
        not covered)."""
        with self._lock:
            if succeeded:
                self._succeeded += 1
            else:
                self._failed += 1

    def retry_direct(self) -> bool:
        """Should a failed cell be resolved again without the page cache? Yes when the cache
        answered uv with an upstream error in this run."""
        return self.pages.stats.trouble > 0 and bool(self.pages.routes)
