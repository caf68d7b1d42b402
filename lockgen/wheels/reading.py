"""Reading GPU wheels for one coverage run: each from the cache by sha256
(``.lockgen/coverage/<sha256>.json``: a wheel is read once), else from the wheel itself: a local
one whole (its sha256 checked), a remote one by HTTP range requests through the mirrors, a layer's
``name==version`` artifact first found by its sha256 on the layer's pages
(:mod:`lockgen.wheels.pages`; a page without hashes: the fitting wheels downloaded whole and
hashed). A wheel that cannot be read (offline, HTTP errors, a broken file, not on its pages) is
``unread`` with the reason: the selector then says the cell's coverage is partial.

A run's reading has a :class:`Budget` (bytes downloaded, seconds spent: ``[coverage]``,
``--coverage-budget``, ``--coverage-seconds``): once spent, every wheel not yet read is ``unread``
as "not measured: budget", and the run goes on. A stop (Ctrl-C) makes the wheels left
"not measured: interrupted" the same way, so the manifest is still written. ``progress`` hears of
each wheel read (files done and to do, bytes downloaded).

What is read of a wheel: its zip central directory and each shared object's compressed bytes,
over HTTP range requests (:mod:`.remote`). A deflated member can only be inflated from its
start, and an ELF object's section headers sit at its end, so a member with GPU code is inflated
whole (to a temporary file, never into memory); members that are not ELF or PE are left after
their first bytes, and a wheel is read once per sha256 in the cache's lifetime.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lockgen.index.client import Client, Reply
from lockgen.index.pages import PageReader
from lockgen.plan.mirror import Mirrors
from lockgen.runtime.errors import Interrupted
from lockgen.wheels.cells import CACHE, main_record
from lockgen.wheels.coverage import Code, CoverageError
from lockgen.wheels.model import GpuWheel, Read
from lockgen.wheels.pages import Pages
from lockgen.wheels.remote import cached, read_local, read_remote, read_verified, store

__all__ = ["BUDGET", "INTERRUPTED", "Budget", "Reader", "refresh"]

#: The reason recorded for a wheel left unread because the budget was spent.
BUDGET = "not measured: budget"
#: The reason recorded for a wheel left unread because the run was stopped (Ctrl-C).
INTERRUPTED = "not measured: interrupted"


class Budget:
    """At most ``max_bytes`` downloaded and ``seconds`` spent (None: no bound), counted from
    its creation; ``used``: bytes so far. Thread-safe enough for one reader."""

    def __init__(self, max_bytes: int | None = None, seconds: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.max_bytes, self.clock = max_bytes, clock
        self.deadline = clock() + seconds if seconds is not None else None
        self.used = 0

    def spent(self) -> bool:
        over_bytes = self.max_bytes is not None and self.used >= self.max_bytes
        return over_bytes or (self.deadline is not None and self.clock() >= self.deadline)


class _Metered(Client):
    """The one client (:class:`lockgen.index.client.Client`), its requests counted against a
    :class:`Budget` and refused once it is spent or the run is stopped (raising
    :class:`CoverageError` with :data:`BUDGET` or :data:`INTERRUPTED`): a 4 GB wheel is cut between
    two range requests, not read to its end."""

    def __init__(self, reader: Reader, mirrors: Mirrors, stop: threading.Event | None) -> None:
        super().__init__(mirrors, timeout=60, stop=stop)
        self.reader = reader

    def request(self, method: str, url: str, headers: Mapping[str, str] | None = None, *,
                max_body: int | None = None, sink: Callable[[bytes], None] | None = None,
                json: Any = None, body: bool = True) -> Reply:  # fmt: skip
        if self.reader.stopped():
            raise CoverageError(INTERRUPTED)
        if self.reader.budget.spent():
            raise CoverageError(BUDGET)
        reply = super().request(method, url, headers, max_body=max_body, sink=sink, json=json, body=body)
        self.reader.budget.used += len(reply.body)
        return reply


log = logging.getLogger("lockgen.coverage")


class Reader:
    """Reads GPU wheels (see the module docstring) through ``mirrors`` (the URL to fetch a
    canonical one from; pages' URLs canonical again); ``fetched`` counts the bytes downloaded.
    Use it as a context manager (it closes its clients)."""

    def __init__(self, root: Path, mirrors: Mirrors | None = None, stop: threading.Event | None = None,
                 offline: bool = False, budget: Budget | None = None,
                 progress: Callable[[int, int, str], None] | None = None) -> None:  # fmt: skip
        self.root, self.mirrors, self.stop, self.offline = root, mirrors or Mirrors(), stop, offline
        self.budget = budget or Budget()
        self.progress = progress  # (wheels read so far, bytes downloaded, the wheel) after each wheel read
        self.interrupt = False  # set on Ctrl-C: every wheel left is "not measured: interrupted"
        self.cache = root / CACHE
        self.fetched = 0
        self._client = _Metered(self, self.mirrors, stop)
        self._reader = PageReader(self.mirrors, client=self._client)
        self._pages = Pages(self._reader, root)
        self._downloads: dict[str, tuple[str, Code]] = {}  # URL -> (sha256, code): a page without hashes
        # the cells' threads share one reader: a wheel two cells lock is read once, and one that
        # could not be read is not tried again in the same run
        self._guard = threading.Lock()
        self._reading: dict[str, threading.Lock] = {}
        self._unread: dict[str, str] = {}
        self._skipped: set[str] = set()
        self._done = 0

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def client(self) -> Client:
        return self._client

    def stopped(self) -> bool:
        return self.interrupt or (self.stop is not None and self.stop.is_set())

    def __call__(self, wheels: Sequence[GpuWheel]) -> Read:
        """Read ``wheels`` (:class:`Read`: codes, unread, skipped). Raises :class:`Interrupted`."""
        from lockgen.locks.store import work_folder

        work_folder(self.root, CACHE, depth=0)  # also the folder of the members' temporary copies; never a link
        codes: dict[str, Code] = {}
        unread: dict[str, str] = {}
        skipped: set[str] = set()
        for wheel in wheels:
            if self.stop is not None and self.stop.is_set() and not self.interrupt:
                raise Interrupted("interrupted while reading the GPU wheels")
            with self._guard:
                lock = self._reading.setdefault(wheel.sha256, threading.Lock())
            with lock:  # another cell's thread may be reading it: wait, then take its result
                hit = cached(self.cache, wheel.sha256)
                if hit is not None:
                    codes[wheel.sha256] = hit
                elif wheel.sha256 in self._unread:
                    unread[wheel.sha256] = self._unread[wheel.sha256]
                elif wheel.sha256 in self._skipped:
                    skipped.add(wheel.sha256)
                elif self.stopped() or self.budget.spent():
                    unread[wheel.sha256] = INTERRUPTED if self.stopped() else BUDGET
                else:
                    code = self._one(wheel, unread)
                    if code is None and wheel.sha256 not in unread:
                        skipped.add(wheel.sha256)
                        self._skipped.add(wheel.sha256)
                    elif code is not None:
                        codes[wheel.sha256] = code
        return Read(codes, unread, frozenset(skipped))

    def _one(self, wheel: GpuWheel, unread: dict[str, str]) -> Code | None:
        """Read one wheel not in the cache: its code (stored in the cache), or None with the
        reason in ``unread`` (a budget or a stop: not remembered, a later run reads it)."""
        try:
            code = self._read(wheel)
        except (CoverageError, OSError) as exc:
            said = _scrub(str(exc))[:300]
            if BUDGET in said or INTERRUPTED in said:
                unread[wheel.sha256] = INTERRUPTED if self.stopped() else BUDGET
            else:
                unread[wheel.sha256] = self._unread[wheel.sha256] = said
            return None
        finally:
            with self._guard:
                self._done += 1
                done = self._done
            if self.progress is not None:
                self.progress(done, self.budget.used, f"{wheel.name} {wheel.version}")
        if code is not None:
            store(self.cache, wheel.sha256, code)
        return code

    def _read(self, wheel: GpuWheel) -> Code | None:
        """The code of ``wheel``; None for an artifact that turned out not to be a platform wheel."""
        if wheel.path is not None:
            return read_local(self.root / wheel.path, wheel.sha256, self.cache.parent)
        if self.offline:
            raise CoverageError("offline")
        if wheel.url is not None:
            return self._remote(wheel, wheel.url, wheel.size)
        if not (wheel.find_links or wheel.index):
            raise CoverageError("the lock gives no URL")
        found = self._pages.locate(wheel.name, wheel.version, wheel.sha256, wheel.find_links, wheel.index, wheel.fits)
        if found.exact is not None:
            if not found.exact.platform:
                return None
            if found.exact.path is not None:
                return read_local(self.root / found.exact.path, wheel.sha256, self.cache.parent)
            return self._remote(wheel, found.exact.url or "", found.exact.size)
        for candidate in found.candidates:  # listed without hashes: download, hash, compare
            url = candidate.url or ""
            if url not in self._downloads:
                sha256, code, count = read_verified(self.client(), url, self.cache.parent)
                self.fetched += count
                self.budget.used += count  # a whole download (streamed): counted when done
                self._downloads[url] = (sha256, code)
                store(self.cache, sha256, code)  # by its own sha256: another locked hash may be it
            sha256, code = self._downloads[url]
            if sha256 == wheel.sha256:
                return code
        if found.other:
            return None  # the pages list a pure wheel or an sdist of it, listed without its hash
        where = ", ".join(found.places) or "no pages"
        raise CoverageError(f"no file of {wheel.name} {wheel.version} with this sha256 on {where}"
                            + (f" ({'; '.join(found.problems)})" if found.problems else ""))  # fmt: skip

    def _remote(self, wheel: GpuWheel, url: str, size: int | None) -> Code:
        code, count = read_remote(self.client(), url, size, self.cache.parent)
        self.fetched += count
        log.info("read the GPU code of %s %s (%d MB)", wheel.name, wheel.version, count // 10**6)
        return code


def refresh(root: Path, wheels: Sequence[GpuWheel], mirrors: Mirrors | None = None,
            stop: threading.Event | None = None, offline: bool = False) -> tuple[dict[str, Any], int]:  # fmt: skip
    """(the main part of a ``coverage`` record, bytes downloaded) of ``wheels``, read by a
    :class:`Reader` (the cell's lock is not consulted: ``runtimes`` come from the wheels)."""
    with Reader(root, mirrors, stop=stop, offline=offline) as reader:
        record = main_record(wheels, reader(wheels), None, ("torch",))
    return record, reader.fetched


def _scrub(text: str) -> str:
    """``text`` without the login of any URL in it."""
    return re.sub(r"(\w+://)[^/@\s]+@", r"\1", text)
