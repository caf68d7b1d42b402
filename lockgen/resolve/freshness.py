"""Reuse within a run: index pages one online resolution refreshed, read offline by the others.

Every ``uv pip compile`` revalidates each index page it reads, so a loop over N cells fetches the
same pages N times. Per group of cells that share their sources (index URL, find-links,
``exclude-newer``) and os, a *seed* cell resolves online first; the other cells of the group then
try ``--offline`` against the pages the seeds just refreshed. An offline result is kept only if
every package it locked had its page refreshed online earlier in this run (file metadata is
immutable, so the cache holds exactly what the network would give); otherwise the cell is
resolved online as usual. ``--online`` turns this off.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from lockgen.plan.plan import Plan

ONLINE, OFFLINE = "online", "offline"


def _sources(plan: Plan) -> tuple:
    indexes = tuple(url for source in plan.sources if source.kind == "index" for url in source.urls)
    # the prerelease settings too: uv offline skips a version whose metadata is not cached (a
    # pre-release another cell's resolution never looked at) instead of failing (issue 9)
    prereleases = (plan.prerelease, tuple(sorted(plan.prerelease_package.items())))
    return (plan.index_url, plan.find_links, plan.exclude_newer, indexes, prereleases)


class Freshness:
    """Which packages' index pages an online resolution refreshed in this run, per source group.

    Thread-safe. :meth:`order` puts one seed per (sources, os) first; :meth:`wait` blocks a
    non-seed cell until its seed has finished, so it can reuse what the seed fetched.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fresh: dict[tuple, set[str]] = {}
        self._seeds: dict[tuple, tuple[str, threading.Event]] = {}
        self._cold: set[tuple] = set()  # groups whose cache lacked what an offline try needed

    def order(self, plans: Sequence[Plan]) -> list[Plan]:
        """``plans`` with the seeds first (first plan of each (sources, os), in order)."""
        seeds, rest = [], []
        for plan in plans:
            key = (_sources(plan), plan.cell.os)
            if key not in self._seeds:
                self._seeds[key] = (plan.cell.name, threading.Event())
                seeds.append(plan)
            else:
                rest.append(plan)
        return seeds + rest

    def is_seed(self, plan: Plan) -> bool:
        return self._seeds.get((_sources(plan), plan.cell.os), ("",))[0] == plan.cell.name

    def wait(self, plan: Plan) -> None:
        """Block until this plan's seed finished (seeds are scheduled before the others)."""
        entry = self._seeds.get((_sources(plan), plan.cell.os))
        if entry and entry[0] != plan.cell.name:
            entry[1].wait()

    def seed_done(self, plan: Plan) -> None:
        entry = self._seeds.get((_sources(plan), plan.cell.os))
        if entry and entry[0] == plan.cell.name:
            entry[1].set()

    def record(self, plan: Plan, names: set[str]) -> None:
        with self._lock:
            self._fresh.setdefault(_sources(plan), set()).update(names)

    def mark_cold(self, plan: Plan) -> None:
        """An offline try failed for want of cached data (a cold cache): later cells of the group
        go online straight away instead of trying."""
        with self._lock:
            self._cold.add((_sources(plan), plan.cell.os))

    def worth_trying(self, plan: Plan) -> bool:
        with self._lock:
            return (_sources(plan), plan.cell.os) not in self._cold

    def covers(self, plan: Plan, names: set[str]) -> bool:
        with self._lock:
            return bool(names) and names <= self._fresh.get(_sources(plan), set())
