"""Local inputs recorded by content: the sha256 of project files, hashed only when they may have changed.

Every local input a lock depends on (the wheels of a local find-links folder or a source's
``local`` folder, a local project's metadata files, a local archive) counts by its bytes (issue
16, item 2): a wheel rebuilt at the same size is a changed input. Hashing a folder of GPU wheels
(gigabytes) on every ``check`` or no-op ``all`` would cost seconds, so :class:`Digests` keeps
each file's sha256 in ``.lockgen/digests.json`` with a *hint*: the file's size, modification
and change times (ns), inode and device. The hint decides only *when* to hash: a file whose
hint is unchanged is not read again; any change of it, or a file modified within
:data:`RACY_SECONDS` of when it was hashed (a write in the same clock tick could leave every
field as it was, the "racy git" case), is hashed again. What is recorded is always the digest.

The cache is lockgen's own work file: never committed, written only by ``all``/``lock``
(:meth:`Digests.save`); ``check`` and the no-op path read it and hash what it does not vouch for.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

from lockgen.config import WORK
from lockgen.runtime import bounded
from lockgen.runtime.keyed import table

__all__ = ["CACHE", "RACY_SECONDS", "Digests"]

#: Where the digests live, under the project root (lockgen's work folder, see lockgen.config.WORK).
CACHE = f"{WORK}/digests.json"
#: A file modified this close to its hashing is hashed again next time (file system clocks tick coarsely).
RACY_SECONDS = 2.0
_CHUNK = 1 << 20


def _hint(stat: os.stat_result) -> list[int]:
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]


class Digests:
    """sha256 of files under ``root`` by project-relative path (thread-safe); see the module
    docstring. ``Digests(root)`` reads the cache; a missing or unreadable one is empty."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._known: dict[str, tuple[list[int], str]] = {}
        self._changed = False
        self.hashed = 0  # files read in this process (tests and benchmarks look)
        for path, entry in table(bounded.read_cache(root / CACHE)).items():  # an entry of another shape is none
            hint, digest = entry if isinstance(entry, list) and len(entry) == 2 else (None, None)
            if isinstance(digest, str) and isinstance(hint, list) and all(type(v) is int for v in hint):
                self._known[path] = (hint, digest)

    def sha256(self, path: str) -> str:
        """The hex sha256 of the file at the project-relative ``path``. Raises ``OSError`` when
        it cannot be read."""
        full = self.root / path
        stat = full.stat()
        hint = _hint(stat)
        with self._lock:
            known = self._known.get(path)
        if known is not None and known[0] == hint:
            return known[1]
        digest = hashlib.sha256()
        with open(full, "rb") as fh:
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                digest.update(chunk)
        value = digest.hexdigest()
        with self._lock:
            self.hashed += 1
            racy = time.time() - stat.st_mtime < RACY_SECONDS
            if racy:
                self._known.pop(path, None)
            else:
                self._known[path] = (hint, value)
            self._changed = True
        return value

    def save(self) -> None:
        """Write the cache when this process hashed something (``all``/``lock`` only; a
        read-only checkout just goes without it)."""
        with self._lock:
            if not self._changed:
                return
            data = {path: [hint, digest] for path, (hint, digest) in sorted(self._known.items())}
            self._changed = False
        target = self.root / CACHE
        if bounded.linked_problem(
            self.root, WORK, 1
        ):  # never written through a link (every command's entry refuses it)
            return
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            temporary.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
            os.replace(temporary, target)
        except OSError:
            pass
