"""The lock-time gate: a resolution that would lock a known-malicious release or a quarantined
project fails its cell before anything is written; an archived or deprecated project is a warning.

Two kinds of evidence, each where it is served:

* **Malicious-package entries** (OSV records with an ``MAL-`` id or alias: the OpenSSF
  malicious-packages database as OSV carries it), asked of the project's ``[audit] osv`` source
  (the OSV API or an export: :mod:`lockgen.osv`, handed in by the run as a :class:`Source`) for
  every ``(name, public version)`` the cell would install, main and layers; each pair is asked
  once per run (the run's source caches), whatever the number of cells.
  Without an ``[audit] osv`` source this half is off (nothing is sent anywhere by default).
* **Project status markers** (PEP 792): the index page of each registry package, read through the
  run's pages (the page cache when the run has one: uv fetched the same pages), says ``active``,
  ``archived``, ``quarantined`` or ``deprecated``. Quarantined refuses (the index itself says the
  project is unsafe); archived and deprecated warn. An index that serves no marker (most mirrors
  today) says nothing: the project counts as active.

Exemptions are ``[audit] ignore`` entries, with the reason and the ``until`` date audit's ignores
have: an entry's ``id`` names a ``MAL-`` record (or an alias) or a status (``quarantined``,
``archived``, ``deprecated``; with ``packages``). Past ``until`` the entry no longer applies and
the gate refuses again, as ``lockgen audit`` does.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from packaging.pylock import Package
from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.config.model import AuditIgnore
from lockgen.index.pages import Status, project_url
from lockgen.locks import pylockfile

__all__ = [
    "REFUSED_STATUSES",
    "STATUSES",
    "WARNED_STATUSES",
    "Advisory",
    "Finding",
    "Gate",
    "Key",
    "Source",
    "is_malicious",
]

log = logging.getLogger("lockgen.gate")

#: PEP 792's statuses that stop a lock, and those that only warn (``active`` is neither).
REFUSED_STATUSES = frozenset({"quarantined"})
WARNED_STATUSES = frozenset({"archived", "deprecated"})
STATUSES = REFUSED_STATUSES | WARNED_STATUSES


Key = tuple[NormalizedName, Version]


class Advisory(Protocol):
    """What the gate reads of an advisory record (:class:`lockgen.osv.Advisory` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...
    @property
    def summary(self) -> str: ...
    def affects(self, name: NormalizedName, version: Version) -> bool: ...


class Source(Protocol):
    """Where advisories come from (:class:`lockgen.osv.Source`): per ``(name, public version)``,
    the records that name it. Raises a :class:`~lockgen.runtime.errors.LockgenError` when it
    cannot be read."""

    def advisories(self, keys: Sequence[Key]) -> Mapping[Key, Sequence[Advisory]]: ...


def is_malicious(advisory: Advisory) -> bool:
    """Whether an OSV record is a malicious-package entry: its id or an alias starts ``MAL-``."""
    return any(ident.upper().startswith("MAL-") for ident in (advisory.id, *advisory.aliases))


@dataclass(frozen=True)
class Finding:
    """What the gate says of one package of a cell. ``kind``: ``malicious`` or a PEP 792 status;
    ``detail``: the record ids (and summary) or the index's reason; ``refuse``: whether the cell
    fails (else a warning); ``ids``: what an ``[audit] ignore`` entry may name to exempt it (the
    records' ids and aliases, or the status word); ``ignored``: the entry that exempts it, if any."""

    name: NormalizedName
    version: str
    kind: str
    detail: str
    refuse: bool
    ids: tuple[str, ...] = ()
    ignored: AuditIgnore | None = None

    def line(self) -> str:
        what = "a malicious-package entry" if self.kind == "malicious" else f"project status {self.kind} (PEP 792)"
        text = (
            f"{self.name} {self.version}: {what}: {self.detail}"
            if self.detail
            else f"{self.name} {self.version}: {what}"
        )
        if self.ignored is not None:
            text += f" (exempted by {self.ignored.key} until {self.ignored.until}: {self.ignored.reason})"
        return text


class Gate:
    """The gate of one run, shared by its cells (thread-safe). ``source``: the ``[audit] osv``
    source (None: no malware check); ``status``: the PEP 792 status of an index page by canonical
    URL (None: no status check); ``ignores``: the ``[audit] ignore`` entries; ``today``: the run's date, which
    decides which ignores have expired."""

    def __init__(
        self,
        source: Source | None,
        status: Callable[[str], Status] | None,
        ignores: Sequence[AuditIgnore] = (),
        today: datetime.date | None = None,
    ) -> None:
        self.source, self.status = source, status
        day = today or datetime.date.today()
        self.ignores = tuple(i for i in ignores if datetime.date.fromisoformat(i.until) >= day)
        self._lock = threading.Lock()  # one OSV query at a time: a later cell asks only what is new

    def check(self, packages: Iterable[Package], indexes: Sequence[str]) -> list[Finding]:
        """The findings for ``packages`` (a cell's main and layer packages), worst first: refusals
        (not exempted) before warnings. ``indexes``: the cell's indexes, its ``index-url`` first,
        for packages whose pylock entry names none. Raises the source's
        :class:`~lockgen.runtime.errors.LockgenError` when it cannot be read (a gate that could not
        look is never a pass)."""
        registry = {(p.name, str(p.version)): p for p in packages if pylockfile.registry(p)}
        found = [*self._malware(registry), *self._statuses(registry.values(), indexes)]
        found = [self._exempted(f) for f in found]
        return sorted(found, key=lambda f: (not (f.refuse and f.ignored is None), f.name, f.kind))

    def _malware(self, registry: dict[tuple[NormalizedName, str], Package]) -> list[Finding]:
        if self.source is None or not registry:
            return []
        keys = {(name, Version(version).public): (name, version) for name, version in registry}
        asked: list[Key] = [(name, Version(public)) for name, public in keys]
        with self._lock:
            answer = self.source.advisories(asked)
        found = []
        for (name, public), records in sorted(answer.items()):
            bad = [r for r in records if is_malicious(r) and r.affects(name, public)]
            if bad:
                version = keys[(name, str(public))][1]
                detail = "; ".join(f"{r.id}{f' ({r.summary})' if r.summary else ''}" for r in bad)
                ids = tuple(dict.fromkeys(i for r in bad for i in (r.id, *r.aliases)))
                found.append(Finding(name, version, "malicious", detail, refuse=True, ids=ids))
        return found

    def _statuses(self, packages: Iterable[Package], indexes: Sequence[str]) -> list[Finding]:
        if self.status is None:
            return []
        found = []
        for package in packages:
            index = package.index or next((i for i in indexes if i), None)
            if not index:
                continue
            marker = self.status(project_url(index, package.name))
            if marker.status in STATUSES:
                refuse = marker.status in REFUSED_STATUSES
                found.append(
                    Finding(package.name, str(package.version), marker.status, marker.reason, refuse, (marker.status,))
                )
        return found

    def _exempted(self, finding: Finding) -> Finding:
        for entry in self.ignores:
            if entry.packages and finding.name not in entry.packages:
                continue
            if entry.id.casefold() in {i.casefold() for i in finding.ids}:
                return replace(finding, ignored=entry)
        return finding
