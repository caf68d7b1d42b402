"""Stage 6: resolve one cell with uv and write its lock.

Every ``uv pip compile`` revalidates each index page it reads, so a loop over N cells fetches
the same pages N times. Within one run lockgen avoids that: per group of cells that share their
sources (index URL, find-links, ``exclude-newer``) and os, a *seed* cell resolves online first;
the other cells of the group then try ``uv pip compile --offline`` against the pages the seeds
just refreshed. An offline result is kept only if every package it locked had its page refreshed
online earlier in this run (file metadata is immutable, so the cache holds exactly what the
network would give); otherwise the cell is resolved online as usual. ``--online`` turns this off.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

from lockgen import uv
from lockgen.errors import CellFailed
from lockgen.lockfile import atomic_write, lock_text, locked_versions
from lockgen.plan import Plan

ONLINE, OFFLINE = "online", "offline"


def _sources(plan: Plan) -> tuple:
    return (plan.index_url, plan.find_links, plan.exclude_newer)


class Freshness:
    """Which packages' index pages an online resolution refreshed in this run, per source group.

    Thread-safe. :meth:`order` puts one seed per (sources, os) first; :meth:`wait` blocks a
    non-seed cell until its seed has finished, so it can reuse what the seed fetched.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fresh: dict[tuple, set[str]] = {}
        self._seeds: dict[tuple, tuple[str, threading.Event]] = {}

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

    def covers(self, plan: Plan, names: set[str]) -> bool:
        with self._lock:
            return bool(names) and names <= self._fresh.get(_sources(plan), set())


def resolve_cell(root: Path, plan: Plan, options: uv.Options = uv.Options(), fresh: Freshness | None = None) -> tuple[bool, str]:
    """Write the plan's rendered inputs, run uv, and replace the lock.

    Returns (whether the lock's bytes changed, ``"online"`` or ``"offline"``). The existing lock
    is handed to uv as its output file, so uv prefers its pins (as pip-compile does) and a changed
    input moves only what it must. Raises :class:`CellFailed` with uv's explanation when the cell
    cannot be resolved; the existing lock is then left untouched.
    """
    for role, (_, text) in plan.rendered.files.items():
        atomic_write(root / plan.input_path(role), text)
    output = f"{plan.work}/resolved.txt"
    env = uv.compile_env(os.environ, plan)
    mode = ONLINE
    try:
        if fresh is not None and not fresh.is_seed(plan):
            fresh.wait(plan)
            _seed_output(root, plan, output)
            result = uv.run(uv.compile_argv(plan, output, options, offline=True), env, str(root))
            if result.returncode == 0:
                body = (root / output).read_text(encoding="utf-8")
                if fresh.covers(plan, set(locked_versions(body))):
                    return atomic_write(root / plan.lock, lock_text(plan, body)), OFFLINE
        _seed_output(root, plan, output)
        result = uv.run(uv.compile_argv(plan, output, options), env, str(root))
        if result.returncode != 0:
            raise CellFailed(f"cell {plan.cell.name}: uv could not resolve it:\n{uv.explain(result.stderr)}")
        body = (root / output).read_text(encoding="utf-8")
        if fresh is not None:
            fresh.record(plan, set(locked_versions(body)))
        return atomic_write(root / plan.lock, lock_text(plan, body)), mode
    finally:
        if fresh is not None:
            fresh.seed_done(plan)


def _seed_output(root: Path, plan: Plan, output: str) -> None:
    """Put the existing lock where uv writes, so uv reads its pins as preferences."""
    (root / output).parent.mkdir(parents=True, exist_ok=True)
    if (root / plan.lock).is_file():
        shutil.copyfile(root / plan.lock, root / output)
    else:
        (root / output).unlink(missing_ok=True)
