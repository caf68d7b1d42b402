"""OSV advisories: the record model, its affected ranges, and the two sources lockgen reads.

Records follow the OSV schema (https://ossf.github.io/osv-schema/): ``id``, ``aliases``,
``withdrawn``, ``severity`` (CVSS vectors), ``affected[]`` with the package, ``ranges`` of
``introduced``/``fixed``/``last_affected`` events and explicit ``versions``, and
``database_specific.severity`` (GitHub's advisories: LOW, MODERATE, HIGH, CRITICAL). Records are
untrusted input: :func:`parse` reads what it needs into frozen values and raises
:class:`BadRecord` for anything else; unknown keys are ignored (the schema grows).

Sources (one per run; each is asked once for every ``(name, public version)`` of the matrix):

* :class:`Api`: the OSV API: ``POST {url}/v1/querybatch`` with up to 1,000 queries a request
  (following each result's ``next_page_token``), which answers advisory ids only, then
  ``GET {url}/v1/vulns/{id}`` once per id. The URL goes through the run's mirrors.
* :class:`Export`: an OSV export on disk, for air-gapped CI: a folder of ``<ID>.json`` records
  (any depth) or the zip OSV publishes per ecosystem (``PyPI/all.zip``). Only records that name a
  package of the matrix are parsed (a cheap scan of each record's ``"name"`` values first).

Both are read by the one reader of untrusted bytes (:mod:`lockgen.runtime.bounded`): a record at
most :data:`MAX_RECORD` bytes and :func:`lockgen.locks.jsonfile.load_json`'s depth, an export's
files regular and inside its folder (a FIFO, ``/dev/zero`` or a symlink out is refused unread), its
zip members bounded in size, count and compression ratio, an API answer at most
:data:`MAX_ANSWER` bytes and :data:`MAX_PAGES` pages per query. A source that breaks a bound fails
the audit (:class:`AuditFailed`, exit 1): a cut-short read never reads as a clean audit. One
record of an odd shape is a named skip (an export) or a named failure (the API), never a traceback.

Matching (:meth:`Advisory.affects`) is the schema's: for ``ECOSYSTEM`` ranges the events sorted
by version (``introduced: "0"`` first), a version is affected from an ``introduced`` up to the
next ``fixed`` (excluded) or ``last_affected`` (included); a version in ``versions`` is
affected. PyPI versions compare with ``packaging`` (PEP 440). A withdrawn record affects nothing.
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from lockgen.index.client import Client, Failure, HostError
from lockgen.locks.jsonfile import load_json
from lockgen.plan.mirror import Mirrors
from lockgen.runtime import bounded, credentials, keyed
from lockgen.runtime.errors import InputError, LockgenError

__all__ = [
    "Advisory",
    "Affected",
    "Api",
    "AuditFailed",
    "BadRecord",
    "Cached",
    "Event",
    "Export",
    "Range",
    "Severity",
    "Source",
    "open_source",
    "parse",
]  # fmt: skip

log = logging.getLogger("lockgen.osv")

ECOSYSTEM = "PyPI"
#: The OSV API's limit of queries in one ``querybatch`` request.
BATCH = 1000
#: Pages of one query followed at most: a result that keeps paging past it fails the audit
#: (an API that pages forever is a broken source, not a clean one).
MAX_PAGES = 20
#: Bytes of one OSV record at most (the largest PyPI records are about 200 KB).
MAX_RECORD = 16 * 1024 * 1024
#: Bytes one API answer may have (a querybatch of 1,000 packages is well under 1 MB), and the
#: seconds the API may take in all for one audit (a host that trickles ends here).
MAX_ANSWER = 32 * 1024 * 1024
DEADLINE = 120.0


class AuditFailed(LockgenError):
    """The advisory source could not be read (unreachable API, a bad answer, an unreadable
    export). Exit code 1: the audit did not complete; nothing is reported as clean."""

    exit_code = 1


class BadRecord(ValueError):
    """A record that is not OSV as lockgen reads it (the message names the key)."""


class Severity(enum.IntEnum):
    """How bad an advisory is, as ``--fail-on`` compares them. ``UNKNOWN``: the record gives no
    severity; it counts as failing at every threshold but ``none`` (an unscored advisory is not
    known to be harmless)."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4
    UNKNOWN = 5

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def of_score(cls, score: Decimal | float) -> Severity:
        """CVSS qualitative rating (CVSS v3.1/v4.0 specification): 0.1–3.9 low, 4.0–6.9 medium,
        7.0–8.9 high, 9.0–10.0 critical (0.0 "none" is reported as low)."""
        value = float(score)
        return cls.CRITICAL if value >= 9 else cls.HIGH if value >= 7 else cls.MEDIUM if value >= 4 else cls.LOW


#: GitHub's advisory database words (``database_specific.severity``).
_GHSA = {"LOW": Severity.LOW, "MODERATE": Severity.MEDIUM, "MEDIUM": Severity.MEDIUM, "HIGH": Severity.HIGH,
         "CRITICAL": Severity.CRITICAL}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Event:
    """A range event: ``kind`` is ``introduced``, ``fixed``, ``last_affected`` or ``limit``."""

    kind: str
    version: str

    def parsed(self) -> Version | None:
        """The event's version; ``introduced: "0"`` is the lowest version; None when invalid."""
        if self.kind == "introduced" and self.version == "0":
            return Version("0.dev0")
        try:
            return Version(self.version)
        except InvalidVersion:
            return None


@dataclass(frozen=True, kw_only=True)
class Range:
    type: str  # ECOSYSTEM, SEMVER, GIT
    events: tuple[Event, ...]

    def affects(self, version: Version) -> bool:
        """Whether ``version`` is inside the range (the OSV schema's evaluation; GIT ranges name
        commits, not versions: never)."""
        if self.type == "GIT":
            return False
        ordered = sorted(((e.parsed(), i, e) for i, e in enumerate(self.events) if e.parsed() is not None),
                         key=lambda t: (t[0], t[1]))  # fmt: skip
        affected = False
        for at, _, event in ordered:
            assert at is not None
            if event.kind == "introduced" and version >= at:
                affected = True
            elif (event.kind == "fixed" and version >= at) or (event.kind == "last_affected" and version > at):
                affected = False
        return affected

    def fixed_after(self, version: Version) -> list[Version]:
        """The ``fixed`` versions above ``version``, lowest first."""
        found = [e.parsed() for e in self.events if e.kind == "fixed"]
        return sorted(v for v in found if v is not None and v > version)


@dataclass(frozen=True, kw_only=True)
class Affected:
    """One ``affected[]`` entry of a PyPI package (canonical ``name``)."""

    name: NormalizedName
    ranges: tuple[Range, ...] = ()
    versions: tuple[str, ...] = ()

    def affects(self, version: Version) -> bool:
        if any(r.affects(version) for r in self.ranges):
            return True
        for listed in self.versions:
            try:
                if Version(listed) == version:
                    return True
            except InvalidVersion:
                continue
        return False

    def fixed_after(self, version: Version) -> list[Version]:
        """The fixed versions above ``version`` of the ranges that hold it, lowest first."""
        return sorted({v for r in self.ranges if r.affects(version) for v in r.fixed_after(version)})


@dataclass(frozen=True, kw_only=True)
class Advisory:
    """An OSV record, as much as lockgen reads. ``severity``: ``(type, vector or score)`` pairs
    (``("CVSS_V3", "CVSS:3.1/AV:N/…")``); ``rating``: ``database_specific.severity``;
    ``url``: the record's advisory link (else osv.dev's page)."""

    id: str
    modified: str = ""
    aliases: tuple[str, ...] = ()
    summary: str = ""
    details: str = ""
    withdrawn: str | None = None
    severity: tuple[tuple[str, str], ...] = ()
    rating: str | None = None
    affected: tuple[Affected, ...] = ()
    url: str = ""

    def entries(self, name: NormalizedName) -> list[Affected]:
        return [a for a in self.affected if a.name == name]

    def affects(self, name: NormalizedName, version: Version) -> bool:
        """Whether the record, not withdrawn, holds ``name`` at ``version`` (a public version)."""
        return self.withdrawn is None and any(a.affects(version) for a in self.entries(name))

    def fixed_after(self, name: NormalizedName, version: Version) -> list[Version]:
        return sorted({v for a in self.entries(name) for v in a.fixed_after(version)})

    def score(self) -> Decimal | None:
        """The highest CVSS base score of the record's vectors (the ``cvss`` library computes
        v2, v3.x and v4.0); None when it has none that parses."""
        scores = [s for s in (_cvss_score(kind, vector) for kind, vector in self.severity) if s is not None]
        return max(scores) if scores else None

    def level(self) -> Severity:
        """The CVSS rating of :meth:`score`, else GitHub's word, else UNKNOWN."""
        score = self.score()
        if score is not None:
            return Severity.of_score(score)
        return _GHSA.get((self.rating or "").upper(), Severity.UNKNOWN)


def _cvss_score(kind: str, vector: str) -> Decimal | None:
    from cvss import CVSS2, CVSS3, CVSS4  # type: ignore[import-untyped]  # the library ships no type hints
    from cvss.exceptions import CVSSError  # type: ignore[import-untyped]

    try:
        if kind == "CVSS_V4" or vector.startswith("CVSS:4"):
            return Decimal(str(CVSS4(vector).base_score))
        if kind == "CVSS_V3" or vector.startswith("CVSS:3"):
            return Decimal(str(CVSS3(vector).base_score))
        if kind == "CVSS_V2":
            return Decimal(str(CVSS2(vector).base_score))
    except (CVSSError, ValueError, KeyError, IndexError):
        log.debug("CVSS vector %r not read", vector)
    return None


# --------------------------------------------------------------------------- reading records


def parse(data: Any) -> Advisory:
    """An :class:`Advisory` from one decoded OSV record. Only PyPI ``affected`` entries are kept.
    Raises :class:`BadRecord` naming the key when the record is not OSV, for any shape of
    ``data`` (tests/fuzz: any JSON value)."""
    try:
        return _parse(data)
    except BadRecord:
        raise
    except (TypeError, AttributeError, ValueError, KeyError, IndexError, RecursionError) as exc:
        raise BadRecord(f"a record of an odd shape ({type(exc).__name__}: {exc})") from None


def _parse(data: Any) -> Advisory:
    if not isinstance(data, dict):
        raise BadRecord("a record must be a JSON object")
    ident = _text(data, "id", required=True)
    affected = []
    for i, entry in enumerate(_list(data, "affected")):
        package = entry.get("package") if isinstance(entry, dict) else None
        if not isinstance(package, dict):
            continue  # a record may name a git repository only
        if package.get("ecosystem") != ECOSYSTEM or not isinstance(package.get("name"), str):
            continue
        if not isinstance(entry, dict):
            continue
        ranges = []
        for j, item in enumerate(_list(entry, "ranges")):
            if not isinstance(item, dict):
                raise BadRecord(f"affected[{i}].ranges[{j}]: must be an object")
            events = []
            for event in _list(item, "events"):
                if isinstance(event, dict):
                    events += [Event(kind=k, version=str(v)) for k, v in event.items() if isinstance(v, str)]
            kind = item.get("type", "ECOSYSTEM")
            ranges.append(Range(type=kind if isinstance(kind, str) else "", events=tuple(events)))
        versions = tuple(v for v in _list(entry, "versions") if isinstance(v, str))
        affected.append(Affected(name=canonicalize_name(package["name"]), ranges=tuple(ranges), versions=versions))
    severity = tuple(
        (s.get("type", ""), s.get("score", ""))
        for s in _list(data, "severity")
        if isinstance(s, dict) and isinstance(s.get("type", ""), str) and isinstance(s.get("score", ""), str)
    )
    specific = data.get("database_specific")
    rating = specific.get("severity") if isinstance(specific, dict) else None
    refs = [r.get("url") for r in _list(data, "references") if isinstance(r, dict)]
    advisory_url = next(
        (r.get("url") for r in _list(data, "references") if isinstance(r, dict) and r.get("type") == "ADVISORY"), None
    )
    url = (
        (advisory_url if isinstance(advisory_url, str) else None)
        or next((u for u in refs if isinstance(u, str)), None)
        or f"https://osv.dev/vulnerability/{ident}"
    )
    withdrawn = data.get("withdrawn")
    return Advisory(
        id=ident, modified=_text(data, "modified"), summary=_text(data, "summary"), details=_text(data, "details"),
        aliases=tuple(a for a in _list(data, "aliases") if isinstance(a, str)),
        withdrawn=withdrawn if isinstance(withdrawn, str) and withdrawn else None,
        severity=severity, rating=rating if isinstance(rating, str) else None, affected=tuple(affected),
        url=str(url),
    )  # fmt: skip


def _text(data: Mapping[str, Any], key: str, required: bool = False) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise BadRecord(f"{key}: must be a string")
    return value


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRecord(f"{key}: must be an array")
    return value


# --------------------------------------------------------------------------- sources

Key = tuple[NormalizedName, Version]


class Source(Protocol):
    """Where advisories come from. :meth:`advisories` answers, per ``(name, public version)``,
    the records (withdrawn ones included: the report says which) that name the package at that
    version; :attr:`where` says what was read, for reports."""

    where: str

    def advisories(self, keys: Sequence[Key]) -> dict[Key, list[Advisory]]: ...


@dataclass
class Export:
    """An OSV export on disk: a folder of ``*.json`` records or a zip of them. ``cache``: a folder
    for its derived index (which records name which package, and the records read so far), kept
    under the export's identity (path, size and modification time of the zip, or of every file
    of the folder): reading 20,000 records costs about a second, the index a few milliseconds."""

    path: Path
    where: str
    cache: Path | None = None

    def advisories(self, keys: Sequence[Key]) -> dict[Key, list[Advisory]]:
        """Records naming a package of ``keys`` that affect its version (withdrawn ones too).
        Raises :class:`AuditFailed` when the export cannot be read; a record that is not OSV is
        skipped with a warning naming it."""
        names = {name for name, _ in keys}
        by_name: dict[NormalizedName, list[Advisory]] = {}
        for label, raw in self._wanted(names):
            try:
                advisory = parse(load_json(raw, label, "an OSV record", ours=False))
            except (InputError, BadRecord) as exc:
                said = exc.problems[0].message if isinstance(exc, InputError) and exc.problems else None
                reason = said or f"not an OSV record ({exc})"
                log.warning("%s: %s in %s: %s; skipped", self.where, label, self.path.name, reason)
                continue
            for name in {a.name for a in advisory.affected} & names:
                by_name.setdefault(name, []).append(advisory)
        result: dict[Key, list[Advisory]] = {}
        for name, version in keys:
            found = [a for a in by_name.get(name, []) if any(e.affects(version) for e in a.entries(name))]
            if found:
                result[(name, version)] = sorted(found, key=lambda a: a.id)
        return result

    def _wanted(self, names: set[NormalizedName]) -> list[tuple[str, bytes]]:
        """``(member, bytes)`` of the records that name one of ``names``: from the cached index
        and records when they cover them, else by reading the export (and caching what it gives)."""
        cached = self._load()
        if cached is not None:
            known, kept = cached
            members = sorted({m for n in names for m in known.get(n, ())})
            missing = [m for m in members if m not in kept]
            if missing:
                kept.update(self._members(missing))
                self._save(known, kept)
            return [(m, kept[m].encode()) for m in members if m in kept]
        index: dict[str, list[str]] = {}
        records: dict[str, str] = {}
        for label, raw in self._records():
            found = _names(raw)
            for name in found:
                index.setdefault(name, []).append(label)
            if found & names:
                records[label] = raw.decode("utf-8", "replace")
        self._save(index, records)
        return [(m, text.encode()) for m, text in sorted(records.items())]

    def _identity(self) -> str:
        """The export's identity, computed once per :class:`Export` (it stats every file of a
        folder; the load and the save of its index would otherwise walk the folder twice)."""
        known: str | None = getattr(self, "_known_identity", None)
        if known is not None:
            return known
        digest = hashlib.sha256(str(self.path.resolve()).encode())
        if self.path.is_dir():
            for rel, stat in self._files():
                digest.update(f"\0{rel}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
        else:
            stat = self.path.stat()
            digest.update(f"\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
        self._known_identity = digest.hexdigest()[:32]
        return self._known_identity

    def _files(self) -> list[tuple[str, os.stat_result]]:
        """``(posix path relative to the folder, stat)`` of every ``*.json`` record file under the
        export folder, sorted by path; one walk per :class:`Export` (os.scandir: pathlib's
        ``rglob``, ``relative_to`` and sorting of paths cost several times more at 20,000 files)."""
        found: list[tuple[str, os.stat_result]] | None = getattr(self, "_known_files", None)
        if found is not None:
            return found
        found = []
        pending = [""]
        while pending:
            rel = pending.pop()
            with os.scandir(os.path.join(self.path, rel) if rel else self.path) as entries:
                for entry in entries:
                    path = f"{rel}/{entry.name}" if rel else entry.name
                    if entry.is_dir(follow_symlinks=False):  # a linked folder could loop
                        pending.append(path)
                    elif entry.name.endswith(".json"):  # any kind: the reader refuses what is not a file
                        try:
                            found.append((path, entry.stat()))
                        except OSError:  # a symlink to nowhere
                            found.append((path, entry.stat(follow_symlinks=False)))
        found.sort(key=lambda item: item[0])
        self._known_files = found
        return found

    def _cache_file(self) -> Path | None:
        try:
            return self.cache / f"{self._identity()}.json" if self.cache is not None else None
        except OSError:
            return None

    def _load(self) -> tuple[dict[str, list[str]], dict[str, str]] | None:
        """The cached index (lockgen wrote it, but anyone may have changed ``.lockgen/``: it is
        read bounded, and a shape that is not the index counts as none)."""
        file = self._cache_file()
        try:
            data = load_json(bounded.read_file(file, str(file)), str(file)) if file else None
        except (OSError, InputError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("index"), dict):
            return None
        index, records = data["index"], data.get("records")
        if not isinstance(records, dict) or not all(isinstance(v, str) for v in records.values()):
            return None
        if not all(isinstance(v, list) and all(isinstance(m, str) for m in v) for v in index.values()):
            return None
        return index, records

    def _save(self, index: Mapping[str, list[str]], records: Mapping[str, str]) -> None:
        file = self._cache_file()
        if file is None:
            return
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            for old in file.parent.glob("*.json"):  # one export's index at a time
                if old != file:
                    old.unlink(missing_ok=True)
            tmp = file.with_suffix(".tmp")
            tmp.write_text(json.dumps({"index": index, "records": records}), encoding="utf-8")
            tmp.replace(file)
        except OSError as exc:  # a cache that cannot be written only costs time
            log.debug("OSV export index not cached: %s", exc)

    def _members(self, members: Sequence[str]) -> dict[str, str]:
        return dict(self._records_text(set(members)))

    def _records_text(self, members: set[str]) -> Iterator[tuple[str, str]]:
        for label, raw in self._records(members):
            if label in members:
                yield label, raw.decode("utf-8", "replace")

    def _records(self, only: set[str] | None = None) -> Iterator[tuple[str, bytes]]:
        """``(member, bytes)`` of every record of the export (of the members ``only`` names, when
        given: the cached index's), through the bounded reader: each record file regular and
        inside the folder, each zip member within the archive's bounds. Raises
        :class:`AuditFailed` naming the file and the bound (the audit did not complete)."""
        try:
            if self.path.is_dir():
                for rel in sorted(only) if only is not None else [rel for rel, _ in self._files()]:
                    yield rel, bounded.read_in(self.path, rel, f"{self.where}/{rel}", MAX_RECORD)
                return
            with bounded.open_archive(self.path, self.where, MAX_RECORD) as archive:
                for info in archive.members():
                    if info.filename.endswith(".json") and (only is None or info.filename in only):
                        yield info.filename, archive.read(info)
        except InputError as exc:
            raise AuditFailed(
                f"{exc.problems[0].text() if exc.problems else exc}; the OSV export was not read: give a folder "
                "of OSV records or the zip OSV publishes per ecosystem (PyPI/all.zip)"
            ) from None
        except OSError as exc:
            raise AuditFailed(
                f"{self.where}: cannot read the OSV export ({exc.strerror or exc}); "
                "give a folder of OSV records or the zip OSV publishes per ecosystem (PyPI/all.zip)"
            ) from None


_NAME = re.compile(rb'"name"\s*:\s*"([^"\\]{1,200})"')


def _names(raw: bytes) -> set[str]:
    """Every ``"name"`` value in a record's bytes, canonical: the cheap scan instead of parsing
    each record (any ``name`` key counts, so the index can only hold more records than needed)."""
    return {canonicalize_name(m.decode("utf-8", "replace")) for m in _NAME.findall(raw)}


@dataclass
class Api:
    """The OSV API at ``url`` (``https://api.osv.dev``), fetched through ``mirrors``. A login in
    ``url`` (``https://user:token@osv.example``) is sent, never shown: :attr:`where` and every
    message name the URL without it (issue 15's rule for every URL lockgen prints)."""

    url: str
    mirrors: Mirrors
    where: str = ""
    timeout: float = 30.0
    deadline: float = DEADLINE

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        self.where = credentials.redact(self.where) if self.where else credentials.split(self.url)[0]
        self._shown = credentials.split(self.url)[0]
        self._records: dict[str, Advisory] = {}

    def advisories(self, keys: Sequence[Key]) -> dict[Key, list[Advisory]]:
        """One ``querybatch`` per 1,000 keys (and per further page), then each advisory id once.
        Raises :class:`AuditFailed` naming the URL (never a login) when the API cannot be read."""
        with Client(self.mirrors, timeout=self.timeout, deadline=self.deadline, max_body=MAX_ANSWER) as client:
            ids = self._query(client, list(keys))
            wanted = sorted({i for found in ids.values() for i in found} - set(self._records))
            with ThreadPoolExecutor(max_workers=8) as pool:
                for advisory in pool.map(lambda ident: self._vuln(client, ident), wanted):
                    self._records[advisory.id] = advisory
        return {
            key: [self._records[i] for i in sorted(found) if i in self._records] for key, found in ids.items() if found
        }

    def _query(self, client: Any, keys: list[Key]) -> dict[Key, set[str]]:
        found: dict[Key, set[str]] = {key: set() for key in keys}
        pending: list[tuple[Key, str | None]] = [(key, None) for key in keys]
        pages = 0
        while pending and pages < MAX_PAGES:
            pages += 1
            more: list[tuple[Key, str | None]] = []
            for start in range(0, len(pending), BATCH):
                chunk = pending[start : start + BATCH]
                queries = [_query(key, token) for key, token in chunk]
                answer = self._post(client, "/v1/querybatch", {"queries": queries})
                results = keyed.dig(answer, "results")
                if not isinstance(results, list) or len(results) != len(chunk):
                    raise AuditFailed(f"{self.where}/v1/querybatch: answered {len(chunk)} queries with something else")
                for index, ((key, _), result) in enumerate(zip(chunk, results)):
                    found[key].update(self._ids(result, f"results[{index}]"))
                    token = keyed.dig(result, "next_page_token")
                    if isinstance(token, str) and token:
                        more.append((key, token))
            pending = more
        if pending:
            raise AuditFailed(
                f"{self.where}/v1/querybatch: still answering more result pages after {MAX_PAGES} "
                f"(for {', '.join(sorted({f'{n} {v}' for (n, v), _ in pending})[:3])}…); the audit did not "
                "complete: the API pages without end"
            )
        return found

    def _ids(self, result: object, at: str) -> list[str]:
        """The advisory ids of one querybatch result (``{"vulns": [{"id": …}, …]}``; no ``vulns``:
        none). An audit never reads a broken answer as a clean one: a result that is not an
        object, ``vulns`` that is not an array or an entry without a string ``id`` raises
        :class:`AuditFailed` naming its key path."""
        vulns = keyed.dig(result, "vulns")
        problem = None
        if not isinstance(result, dict):
            problem = f"{at}: must be an object, not {type(result).__name__}"
        elif not isinstance(vulns, list | None):
            problem = f"{at}.vulns: must be an array, not {type(vulns).__name__}"
        ids = [keyed.dig(vuln, "id") for vuln in keyed.listed(vulns)]
        bad = next((i for i, ident in enumerate(ids) if not isinstance(ident, str) or not ident), None)
        if problem is None and bad is not None:
            problem = f"{at}.vulns[{bad}]: no advisory id"
        if problem is not None:
            raise AuditFailed(f"{self.where}/v1/querybatch: {problem}; not an OSV answer, the audit did not complete")
        return [str(ident) for ident in ids]

    def _post(self, client: Any, path: str, body: Mapping[str, Any]) -> Any:
        return self._call(client, "POST", path, body)

    def _vuln(self, client: Any, ident: str) -> Advisory:
        from urllib.parse import quote

        data = self._call(client, "GET", f"/v1/vulns/{quote(ident, safe='')}", None)
        try:
            return parse(data)
        except BadRecord as exc:
            raise AuditFailed(f"{self.where}/v1/vulns/{ident}: not an OSV record ({exc})") from None

    def _call(self, client: Client, method: str, path: str, body: Mapping[str, Any] | None) -> Any:
        shown = self._shown + path
        try:
            reply = client.post(self.url + path, body) if body is not None else client.get(self.url + path)
        except HostError as exc:
            if exc.kind is not Failure.UNREACHABLE:  # it answered, but not a usable answer
                raise AuditFailed(f"{shown}: {exc.detail}; the audit did not complete") from None
            raise AuditFailed(
                f"{shown}: cannot reach the OSV API ({exc.detail}); give a mirror (--mirror), or an OSV "
                "export on disk with --osv PATH (see docs/supply-chain.md)"
            ) from None
        if not reply.ok:
            raise AuditFailed(f"{shown}: HTTP {reply.status}; the audit did not complete")
        try:  # bounded: depth and numbers (an answer from a host)
            return load_json(reply.body, shown, "an OSV answer", ours=False)
        except InputError as exc:
            raise AuditFailed(
                f"{exc.problems[0].text() if exc.problems else exc}; the audit did not complete"
            ) from None


def _query(key: Key, token: str | None) -> dict[str, Any]:
    name, version = key
    query: dict[str, Any] = {"package": {"name": name, "ecosystem": ECOSYSTEM}, "version": str(version)}
    if token:
        query["page_token"] = token
    return query


@dataclass
class Cached:
    """A source that asks ``source`` about each key once per run (``lockgen diff`` and
    ``audit --fix`` audit two sets of locks, or candidates, against one source)."""

    source: Source

    def __post_init__(self) -> None:
        self.where = self.source.where
        self._seen: dict[Key, list[Advisory]] = {}

    def advisories(self, keys: Sequence[Key]) -> dict[Key, list[Advisory]]:
        new = [key for key in dict.fromkeys(keys) if key not in self._seen]
        if new:
            answer = self.source.advisories(new)
            self._seen.update({key: answer.get(key, []) for key in new})
        return {key: self._seen[key] for key in keys if self._seen.get(key)}


def open_source(value: str, root: Path, mirrors: Mirrors) -> Source:
    """The source ``value`` names: an ``http(s)://`` URL is the OSV API; anything else a path
    (relative to ``root``) of an export folder or zip, whose index is cached in
    ``root/.lockgen/osv/``. Raises :class:`AuditFailed` when the path does not exist."""
    if value.startswith(("http://", "https://")):
        return Cached(Api(value, mirrors))
    path = Path(value).expanduser()
    path = path if path.is_absolute() else root / path
    if not path.exists():
        raise AuditFailed(f"OSV export {value}: no such folder or file")
    from lockgen.config import WORK

    return Cached(Export(path, value, cache=root / WORK / "osv"))


def merged_ids(advisories: Iterable[Advisory]) -> list[list[Advisory]]:
    """Advisories that are one vulnerability under several ids (a PYSEC record and the GHSA it
    aliases) grouped together: two records are one when either names the other (or both name the
    same alias). Groups in order of their first record's id."""
    items = sorted({a.id: a for a in advisories}.values(), key=lambda a: a.id)
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, advisory in enumerate(items):
        for name in (advisory.id, *advisory.aliases):
            if name in owner:
                parent[find(i)] = find(owner[name])
            else:
                owner[name] = i
    groups: dict[int, list[Advisory]] = {}
    for i, advisory in enumerate(items):
        groups.setdefault(find(i), []).append(advisory)
    return sorted(groups.values(), key=lambda g: g[0].id)
