"""Reading GPU wheels for one coverage run: each from the cache by sha256
(``.lockgen/coverage/<sha256>.json``: a wheel is read once), else from the wheel itself: a local
one whole (its sha256 checked), a remote one by HTTP range requests through the mirrors, a layer's
``name==version`` artifact first found by its sha256 on the layer's pages
(:mod:`lockgen.wheels.pages`; a page without hashes: the fitting wheels downloaded whole and
hashed). A wheel that cannot be read (offline, HTTP errors, a broken file, not on its pages) is
``unread`` with the reason: the selector then says the cell's coverage is partial.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lockgen.index.client import Client
from lockgen.index.pages import PageReader
from lockgen.plan.mirror import Mirrors
from lockgen.runtime.errors import Interrupted
from lockgen.wheels.cells import CACHE, main_record
from lockgen.wheels.coverage import Code, CoverageError
from lockgen.wheels.model import GpuWheel, Read
from lockgen.wheels.pages import Pages
from lockgen.wheels.remote import cached, read_local, read_remote, read_verified, store

__all__ = ["Reader", "refresh"]

log = logging.getLogger("lockgen.coverage")


class Reader:
    """Reads GPU wheels (see the module docstring) through ``mirrors`` (the URL to fetch a
    canonical one from; pages' URLs canonical again); ``fetched`` counts the bytes downloaded.
    Use it as a context manager (it closes its clients)."""

    def __init__(self, root: Path, mirrors: Mirrors | None = None, stop: threading.Event | None = None,
                 offline: bool = False) -> None:  # fmt: skip
        self.root, self.mirrors, self.stop, self.offline = root, mirrors or Mirrors(), stop, offline
        self.cache = root / CACHE
        self.fetched = 0
        self._client = Client(self.mirrors, timeout=60, stop=stop)
        self._reader = PageReader(self.mirrors, client=self._client)
        self._pages = Pages(self._reader, root)
        self._downloads: dict[str, tuple[str, Code]] = {}  # URL -> (sha256, code): a page without hashes

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def client(self) -> Client:
        return self._client

    def __call__(self, wheels: Sequence[GpuWheel]) -> Read:
        """Read ``wheels`` (:class:`Read`: codes, unread, skipped). Raises :class:`Interrupted`."""
        self.cache.mkdir(parents=True, exist_ok=True)  # also the folder of the members' temporary copies
        codes: dict[str, Code] = {}
        unread: dict[str, str] = {}
        skipped: set[str] = set()
        for wheel in wheels:
            if self.stop is not None and self.stop.is_set():
                raise Interrupted("interrupted while reading the GPU wheels")
            hit = cached(self.cache, wheel.sha256)
            if hit is not None:
                codes[wheel.sha256] = hit
                continue
            try:
                code = self._read(wheel)
            except (CoverageError, OSError) as exc:
                unread[wheel.sha256] = _scrub(str(exc))[:300]
                continue
            if code is None:
                skipped.add(wheel.sha256)
                continue
            store(self.cache, wheel.sha256, code)
            codes[wheel.sha256] = code
        return Read(codes, unread, frozenset(skipped))

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
