"""Step 7b of a cell's resolution: who published each locked file (PEP 740), where the index says.

A PEP 740 index lists, per file on its project page, the URL of the file's *provenance* object
(PEP 691 JSON ``files[].provenance``, HTML ``data-provenance``; on PyPI the integrity API,
``/integrity/<project>/<version>/<filename>/provenance``). That object holds attestation bundles,
each with the Trusted Publisher that produced it. :class:`Provenance` records those publishers
as each main package's ``attestation-identities`` (:mod:`lockgen.locks.publishers`).

What it costs, so that ``lockgen all`` is not slower for indexes and files that serve none:

* **once per index and run, a probe**: the first project page read from an index (the cell's
  ``index-url`` and its ``index`` sources; find-links pages never carry provenance) says whether
  it serves provenance at all (:attr:`~lockgen.index.pages.Page.serves_provenance`). One
  that does not (a mirror, download.pytorch.org, the tests' fake hosts) is asked nothing more.
* **per file, once ever**: the verdict for a file (its publishers, or none) is kept in
  ``.lockgen/provenance/<sha256>.json``; provenance is uploaded with the file and never changes,
  so a file already seen costs nothing, and a re-lock of unchanged packages makes no request.
* otherwise one project page per package (shared by the run's cells) and one request per file
  whose page names a provenance object.

A page or provenance object that cannot be read leaves that file without identities (logged with
``-v``) and is asked again next run: provenance is a record, never a reason to fail a cell.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.pylock import Package, Pylock

from lockgen.config import WORK
from lockgen.index.client import HostError
from lockgen.index.pages import PageReader, project_url
from lockgen.locks import publishers, pylockfile
from lockgen.locks.jsonfile import load_json
from lockgen.locks.publishers import Identity
from lockgen.plan.mirror import Mirrors
from lockgen.runtime import bounded
from lockgen.runtime.errors import InputError
from lockgen.runtime.keyed import dig

__all__ = ["CACHE", "INTEGRITY_ACCEPT", "Provenance", "identities_of"]

log = logging.getLogger("lockgen.provenance")

CACHE = f"{WORK}/provenance"
#: What PyPI's integrity API serves (docs.pypi.org/api/integrity).
INTEGRITY_ACCEPT = "application/vnd.pypi.integrity.v1+json, application/json;q=0.5"


def identities_of(provenance: Mapping[str, Any]) -> tuple[Identity, ...]:
    """The publishers of a PEP 740 provenance object (``{"version": 1, "attestation_bundles":
    [{"publisher": {...}, "attestations": [...]}]}``), sorted, each once; () for an object
    without bundles or publishers."""
    found = set()
    bundles = provenance.get("attestation_bundles")
    for bundle in bundles if isinstance(bundles, list) else []:
        publisher = bundle.get("publisher") if isinstance(bundle, Mapping) else None
        identity = Identity.from_mapping(publisher) if isinstance(publisher, Mapping) else None
        if identity is not None:
            found.add(identity)
    return tuple(sorted(found))


class Provenance:
    """The publisher lookups of one run, shared by its cells (see the module docstring)."""

    def __init__(self, root: Path, mirrors: Mirrors, reader: PageReader | None = None) -> None:
        from lockgen.locks.store import refuse_linked_work

        refuse_linked_work(root, CACHE, depth=0)  # the cache is never written through a link (exit 2)
        self.folder = root / CACHE
        self.mirrors = mirrors
        self.reader = reader or PageReader(mirrors)
        self.requests = 0  # provenance objects fetched (pages: ``reader.requests``)
        self._serves: dict[str, bool] = {}  # index -> whether it serves provenance (probed)
        self._lock = threading.Lock()

    def close(self) -> None:
        self.reader.close()

    def attach(self, pylock: Pylock, indexes: Sequence[str]) -> Pylock:
        """``pylock`` with each registry package's publishers recorded (files of the ``indexes``,
        the cell's ``index-url`` first; packages of other sources are left as they are)."""
        packages = []
        for package in pylock.packages:
            found = self.package(package, indexes) if pylockfile.registry(package) else ()
            packages.append(publishers.with_identities(package, found) if found else package)
        return replace(pylock, packages=packages)

    def package(self, package: Package, indexes: Sequence[str]) -> tuple[Identity, ...]:
        """The publishers of ``package``'s locked files (from the cache, else its index page)."""
        files = [(pylockfile.file_name(a), a.hashes["sha256"]) for _, a in pylockfile.artifacts(package)
                 if getattr(a, "url", None) and a.hashes.get("sha256")]  # fmt: skip
        found: set[Identity] = set()
        todo = []
        for name, digest in files:
            cached = self._cached(digest)
            if cached is None:
                todo.append((name, digest))
            else:
                found.update(cached)
        for index in dict.fromkeys(i for i in indexes if i):
            if not todo:
                break
            todo = self._from_index(index, package, todo, found)
        return tuple(sorted(found))

    def _from_index(
        self, index: str, package: Package, todo: list[tuple[str, str]], found: set[Identity]
    ) -> list[tuple[str, str]]:
        """Look ``todo`` files up on ``index``'s page of ``package``; the files it does not list."""
        with self._lock:
            serves = self._serves.get(index)
        if serves is False:
            return todo
        page = self.reader.page(project_url(index, package.name))
        if page.error is not None:
            log.debug("provenance: %s %s", page.url, page.error)
            return todo
        if serves is None:
            serves = page.serves_provenance
            with self._lock:
                self._serves[index] = serves
            log.debug("provenance: %s %s", index, "serves provenance" if serves else "serves none: not asked again")
        if not serves:
            return todo
        left = []
        for name, digest in todo:
            listed = page.by_sha256(digest)
            if listed is None:
                left.append((name, digest))  # another source's file
                continue
            if listed.provenance is None:
                self._store(digest, ())
                continue
            ids = self._fetch(listed.provenance, name)
            if ids is not None:
                self._store(digest, ids)
                found.update(ids)
        return left

    def _fetch(self, url: str, name: str) -> tuple[Identity, ...] | None:
        """The publishers in the provenance object at ``url`` (``()``: the index has none for the
        file, HTTP 404); None when it could not be read (asked again next run)."""
        with self._lock:
            self.requests += 1
        try:
            reply = self.reader.client().get(url, headers={"Accept": INTEGRITY_ACCEPT})
        except HostError as exc:
            log.debug("provenance of %s: cannot be read (%s)", name, exc.detail)
            return None
        if reply.status == 404:
            return ()
        if reply.status != 200:
            log.debug("provenance of %s: HTTP %s", name, reply.status)
            return None
        try:  # bounded: depth and numbers (an answer from a host)
            data = load_json(reply.body, f"the provenance of {name}", "a provenance object", ours=False)
        except InputError as exc:
            log.debug("provenance of %s: %s", name, exc)
            return None
        return identities_of(data) if isinstance(data, Mapping) else ()

    def _cached(self, digest: str) -> tuple[Identity, ...] | None:
        tables = dig(bounded.read_cache(self.folder / f"{digest}.json"), "identities")
        if not isinstance(tables, list):  # no verdict kept (or not one lockgen wrote): asked again
            return None
        found = [Identity.from_mapping(t) for t in tables if isinstance(t, Mapping)]
        return tuple(sorted(i for i in found if i is not None))

    def _store(self, digest: str, ids: Iterable[Identity]) -> None:
        """Keep the verdict for the file ``digest`` (atomically; a cache that cannot be written
        only costs a request next time)."""
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            return  # not a sha256: never a file name
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f".{digest}.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps({"identities": [i.to_dict() for i in ids]}, sort_keys=True) + "\n")
            tmp.replace(self.folder / f"{digest}.json")
        except OSError as exc:
            log.debug("provenance cache not written: %s", exc)
