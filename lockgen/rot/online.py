"""``lockgen check --online [CELL…]``: is every locked file still served as it was locked?

Every file of every selected cell (main lock and layers, :mod:`lockgen.rot.locate`) is checked
once per distinct URL (a wheel twelve cells share is asked for once), through the mirrors, with
the realm's login or a netrc entry (never shown), by ``HEAD`` (a ranged ``GET`` of one byte
where a server refuses ``HEAD``: 405, 501, or 403 as the signed storage URLs GitHub's release
assets redirect to answer it), at most ``jobs`` requests at a time and within ``timeout``
seconds in all. What is compared, and what each finding (:class:`Kind`) means:

* ``deleted``: HTTP 404 or 410, or an HTML page served where the file was;
* ``moved``: a permanent redirect (301, 308) to another place. Temporary ones (302, 303, 307:
  CDNs, signed download URLs) are followed and are no finding;
* ``size-changed``: the size the server gives (``Content-Length``, ``Content-Range``) is not the
  size the lock recorded;
* ``hash-changed``: the page an installer reads states another sha256 for the file, or the
  server states one in a header (``Repr-Digest``/``Digest`` ``sha-256``, ``x-amz-checksum-sha256``,
  ``X-Checksum-Sha256``);
* ``unlisted``: no page an installer reads (the index's project page, the find-links pages)
  lists the file any more: pip and uv would not find it even if its URL still serves it;
* ``refused`` (401, 403: a login is missing) and ``unreachable`` (connection errors, 5xx and 429
  after two retries, the time budget spent): the file could not be checked;
* ``attestation`` (with ``attestations``): the file's PEP 740 provenance does not verify
  (:mod:`lockgen.rot.attest`), names another publisher than the lock records, or is gone;
* ``yanked`` (PEP 592): a note, not a failure: an ``==`` pin still installs a yanked file.

Every finding but ``yanked`` makes the exit code 1. Findings name the package, version and URL
and the cells (and layers) that lock the file.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from lockgen.index.client import Client, Failure, HostError, Reply
from lockgen.index.pages import PageFile, PageReader
from lockgen.locks.lockset import LockSet
from lockgen.plan.mirror import Mirrors
from lockgen.rot.findings import _ORDER, Finding, Kind
from lockgen.rot.locate import Located, LockedFile, locate
from lockgen.runtime.words import counted

__all__ = ["Finding", "Kind", "OnlineReport", "check_online"]

log = logging.getLogger("lockgen.online")

#: Requests at once, and the seconds one request may take.
JOBS = 16
REQUEST_TIMEOUT = 20.0
#: Seconds the whole check may take by default.
TIMEOUT = 600.0
_RETRIES = (0.5, 1.5)  # seconds before each retry of a transient failure


@dataclass
class OnlineReport:
    """The outcome: ``findings`` (sorted: failures first, by kind, package, URL), how many
    ``cells``, ``files`` (locked hashes), ``urls`` (distinct, checked) and ``pages`` were read."""

    cells: tuple[str, ...] = ()
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    urls: int = 0
    pages: int = 0
    attestations: int = 0  # provenance objects verified (with ``attestations``)

    @property
    def exit_code(self) -> int:
        return 1 if any(f.kind.fails for f in self.findings) else 0

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.exit_code == 0, "cells": list(self.cells), "files": self.files, "urls": self.urls,
            "pages": self.pages, "attestations": self.attestations, "findings": [f.to_dict() for f in self.findings],
        }  # fmt: skip

    def lines(self) -> list[str]:
        """The text report: one block per finding, then a summary line."""
        out = []
        for f in self.findings:
            out.append(f"{f.kind}: {f.package} {f.version} {f.url}".rstrip())
            out.append(f"  {f.detail}")
            out.append(f"  locked in {_cells(f.where)}")
        failing = sum(f.kind.fails for f in self.findings)
        summary = (
            f"checked {counted(self.files, 'locked file')} ({counted(self.urls, 'URL')}, {counted(self.pages, 'page')}) "
            f"of {counted(len(self.cells), 'cell')}"
            + (f", {counted(self.attestations, 'attestation')}" if self.attestations else "")
        )
        out.append(
            f"{summary}: {failing} problem{'s' if failing != 1 else ''}"
            if failing
            else f"{summary}: all served as locked"
        )
        return out


def _cells(where: Sequence[str]) -> str:
    shown = ", ".join(where[:6])
    return f"{len(where)} cells: {shown}, …" if len(where) > 6 else shown


def check_online(
    lockset: LockSet,
    cells: Sequence[str],
    mirrors: Mirrors,
    *,
    jobs: int = JOBS,
    timeout: float = TIMEOUT,
    attestations: bool = False,
    reader: PageReader | None = None,
) -> OnlineReport:
    """Check the files of ``cells`` of ``lockset`` (see the module docstring). Raises
    :class:`~lockgen.runtime.errors.UsageError` when ``attestations`` is asked and the verifier is not
    installed (``pip install 'lockgen[attestations]'``)."""
    if attestations:
        from lockgen.rot import attest

        attest.require()
    deadline = time.monotonic() + timeout
    own = reader is None
    reader = reader or PageReader(mirrors, client=Client(mirrors, timeout=REQUEST_TIMEOUT, deadline=timeout))
    try:
        located = locate(lockset, cells, reader, jobs)
        files = [f for f in located.files if f.url is not None]
        wanted = sorted({p for f in files for p in f.pages})
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(reader.page, wanted))
        checker = _Checker(mirrors, reader, deadline)
        by_url = located.urls()
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = dict(zip(by_url, pool.map(lambda u: checker.url(u, by_url[u]), by_url)))
        findings = [f for url, found in results.items() for f in found]
        findings += _page_findings(files, reader)
        findings += _unlocated(located)
        report = OnlineReport(
            cells=tuple(cells), files=len({(f.cell, f.layer, f.sha256) for f in located.files}) + len(located.unlocated),
            urls=len(by_url), pages=reader.requests,
        )  # fmt: skip
        if attestations:
            from lockgen.rot import attest

            found, report.attestations = attest.check(files, reader, mirrors, deadline)
            findings += found
        report.findings = _merged(findings)
        return report
    finally:
        if own:
            reader.client().close()


def _merged(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (kind, package, version, url, detail), its places joined."""
    merged: dict[tuple[Kind, str, str, str, str], set[str]] = {}
    for f in findings:
        merged.setdefault((f.kind, f.package, f.version, f.url, f.detail), set()).update(f.where)
    out = [
        Finding(kind=k, package=p, version=v, url=u, detail=d, where=tuple(sorted(w)))
        for (k, p, v, u, d), w in merged.items()
    ]
    return sorted(out, key=lambda f: (not f.kind.fails, _ORDER[f.kind], f.package, f.version, f.url))


def _finding(kind: Kind, items: Sequence[LockedFile], detail: str, url: str | None = None) -> Finding:
    first = items[0]
    return Finding(
        kind=kind, package=first.package, version=first.version, url=first.url or "" if url is None else url,
        detail=detail, where=tuple(sorted({i.where for i in items})),
    )  # fmt: skip


def _unlocated(located: Located) -> list[Finding]:
    return [
        Finding(kind=Kind.HASH if u.others else Kind.UNREACHABLE if u.unread else Kind.UNLISTED,
                package=u.package, version=u.version, url="",
                detail=u.reason,
                where=(u.cell if u.layer == "main" else f"{u.cell} [{u.layer}]",))
        for u in located.unlocated
    ]  # fmt: skip


def _page_findings(files: Sequence[LockedFile], reader: PageReader) -> list[Finding]:
    """What the pages an installer reads say of each locked file: listed with another hash
    (``hash-changed``), not listed (``unlisted``: only when every page could be read), yanked."""
    out = []
    for item in files:
        if not item.pages:
            continue  # a direct URL: no page lists it
        pages = [reader.page(url) for url in item.pages]
        listed: list[PageFile] = [f for p in pages for f in p.by_name(item.filename)]
        if any(f.sha256 == item.sha256 for f in listed):
            yanked = next((f.yanked for f in listed if f.sha256 == item.sha256 and f.yanked is not False), None)
            if yanked is not None:
                why = f": {yanked}" if isinstance(yanked, str) and yanked else ""
                out.append(
                    _finding(Kind.YANKED, [item], f"the index marks it yanked{why} (an == pin still installs it)")
                )
            continue
        stated = sorted({f.sha256 for f in listed if f.sha256})
        if stated:
            detail = f"the page states sha256 {stated[0]}; the lock has {item.sha256}"
            out.append(_finding(Kind.HASH, [item], detail))
        elif not listed and all(p.error is None for p in pages):
            out.append(_finding(Kind.UNLISTED, [item], f"no page an installer reads lists it: {', '.join(item.pages)}"))
        elif not listed:  # a page that could not be read says nothing: never a clean result
            why = "; ".join(f"{p.url} {p.error}" for p in pages if p.error is not None)
            out.append(_finding(Kind.UNREACHABLE, [item], f"its page could not be read: {why}"))
    return out


class _Checker:
    """Asks hosts about URLs (see the module docstring), within a deadline."""

    def __init__(self, mirrors: Mirrors, reader: PageReader, deadline: float) -> None:
        self.mirrors, self.reader, self.deadline = mirrors, reader, deadline
        self.requests = 0  # requests for files (pages: the reader counts them)
        self._lock = threading.Lock()

    def url(self, url: str, items: Sequence[LockedFile]) -> list[Finding]:
        """The findings for one URL (``items``: every record that locks it)."""
        try:
            seen = self._ask(url)
        except _Unchecked as exc:
            return [_finding(exc.kind, items, exc.reason)]
        out = []
        if seen.moved is not None:
            out.append(_finding(Kind.MOVED, items, f"it redirects permanently (HTTP {seen.status}) to {seen.moved}"))
            return out
        if seen.html and items[0].filename.endswith((".whl", ".tar.gz", ".zip")):
            out.append(_finding(Kind.DELETED, items, "the host serves an HTML page where the file was"))
            return out
        sizes = {i.size for i in items if i.size is not None}
        if seen.size is not None and sizes and seen.size not in sizes:
            out.append(_finding(Kind.SIZE, items, f"the host serves {seen.size} bytes; the lock has {min(sizes)}"))
        hashes = {i.sha256 for i in items}
        if seen.sha256 is not None and seen.sha256 not in hashes:
            out.append(_finding(Kind.HASH, items, f"the host states sha256 {seen.sha256}; the lock has {min(hashes)}"))
        return out

    def _ask(self, url: str) -> _Seen:
        """What the host says of ``url`` (temporary redirects followed by the client); raise
        :class:`_Unchecked` when it cannot be checked (deleted, refused, unreachable, out of time)."""
        reply = self._request(url)
        moved = next(((status, to) for status, to in reply.hops if status in (301, 308)), None)
        if moved is not None:
            return _Seen(status=moved[0], moved=moved[1])
        status = reply.status
        if status in (404, 410):
            raise _Unchecked(Kind.DELETED, f"HTTP {status} from {_host(reply.url)}")
        if status in (401, 403):
            raise _Unchecked(
                Kind.REFUSED,
                f"HTTP {status} from {_host(reply.url)} (to HEAD and to a ranged GET): give a login (in the URL's "
                "mirror as https://user:${TOKEN}@host, or in ~/.netrc), or the file is gone (some hosts answer 403)",
            )
        if status >= 400:
            raise _Unchecked(Kind.UNREACHABLE, f"HTTP {status} from {_host(reply.url)}")
        return _Seen(
            status=status, size=_size(reply.headers, status), sha256=_header_sha256(reply.headers),
            html=reply.content_type.startswith("text/html"),
        )  # fmt: skip

    def _request(self, url: str) -> Reply:
        """``HEAD url`` (a one-byte ranged ``GET`` where ``HEAD`` is refused: the client),
        retried on transient failures within the deadline."""
        client = self.reader.client()
        for attempt in range(len(_RETRIES) + 1):
            try:
                with self._lock:
                    self.requests += 1
                reply = client.head(url)
            except HostError as exc:
                if exc.kind is Failure.DEADLINE or attempt == len(_RETRIES):
                    raise _Unchecked(Kind.UNREACHABLE, f"not checked: {exc}") from None
                self._pause(attempt)
                continue
            if (reply.status >= 500 or reply.status == 429) and attempt < len(_RETRIES):
                self._pause(attempt)
                continue
            return reply
        raise _Unchecked(Kind.UNREACHABLE, f"{_host(url)} could not be reached")

    def _pause(self, attempt: int) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _Unchecked(Kind.UNREACHABLE, "not checked: the time budget (--timeout) was spent")
        time.sleep(min(_RETRIES[attempt], left))


@dataclass(frozen=True, kw_only=True)
class _Seen:
    status: int
    size: int | None = None
    sha256: str | None = None
    moved: str | None = None
    html: bool = False


class _Unchecked(Exception):
    def __init__(self, kind: Kind, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


def _size(headers: Mapping[str, str], status: int) -> int | None:
    """The file's size: ``Content-Range: bytes 0-0/SIZE`` of a ranged answer, else
    ``Content-Length`` of a whole one."""
    if status == 206:
        total = headers.get("content-range", "").rpartition("/")[2]
        return int(total) if total.isdigit() else None
    length = headers.get("content-length", "")
    return int(length) if length.isdigit() else None


def _header_sha256(headers: Mapping[str, str]) -> str | None:
    """A sha256 the server states for the file, hex: RFC 9530 ``Repr-Digest: sha-256=:<b64>:``
    (and the older ``Digest: SHA-256=<b64>``), S3's ``x-amz-checksum-sha256`` (base64),
    Artifactory's ``X-Checksum-Sha256`` (hex); None when it states none."""
    for name in ("repr-digest", "digest"):
        for part in headers.get(name, "").split(","):
            algorithm, _, value = part.strip().partition("=")
            if algorithm.lower() == "sha-256" and value:
                return _b64_hex(value.strip(":"))
    amz = headers.get("x-amz-checksum-sha256")
    if amz:
        return _b64_hex(amz)
    hexed = headers.get("x-checksum-sha256", "").strip().lower()
    return hexed if len(hexed) == 64 else None


def _b64_hex(value: str) -> str | None:
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        return None
    return raw.hex() if len(raw) == 32 else None
