"""``lockgen audit``: the known vulnerabilities of every locked package of every cell, grouped.

The inventory (:mod:`.inventory`: main locks and layers) gives every distinct ``(name, public
version)`` of the matrix; the source (:mod:`.osv`) is asked once for all of them. A version with a
local label is judged by its public version (``torch 2.13.0+cu130`` as ``2.13.0``: what PyPI and
OSV name) and reported with each cell's exact build. Records that alias each other (a PYSEC
record and its GHSA) are one finding. A finding is one advisory in one package version, with the
cells and layers that lock it: ``GHSA-… in jinja2 3.1.4: 9 of 12 cells; fixed in 3.1.5``.

The ignore list (``[audit] ignore``) needs a reason and an ``until`` date; an entry past its
date no longer applies and the report says so. ``fail-on`` (or ``--fail-on``) sets the lowest
severity that makes the exit code 1; an advisory without a severity counts at every threshold
but ``none``.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.config.model import SEVERITIES, AuditIgnore
from lockgen.dossier.inventory import Inventory, Locked
from lockgen.osv import Advisory, Severity, Source, merged_ids

__all__ = ["AuditReport", "Finding", "Hit", "Withdrawn", "audit", "fails"]


@dataclass(frozen=True, kw_only=True)
class Hit:
    """Where a finding's package is locked: cell, layer (``main`` or a layer's name), lock file
    and line, and the exact version there (``2.13.0+cu130``)."""

    cell: str
    layer: str
    lock: str
    line: int
    version: Version


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One advisory (``advisory``: the record named first; ``ids``: its id and every alias of the
    records merged into it) in ``package`` at public ``version``, locked at ``hits``. ``fixed``:
    the versions the records say fix it, lowest first (empty: no fix published). ``ignored``:
    the ignore entry that applies, if any."""

    advisory: Advisory
    ids: tuple[str, ...]
    package: NormalizedName
    version: Version
    hits: tuple[Hit, ...]
    fixed: tuple[Version, ...]
    severity: Severity
    score: Decimal | None = None
    ignored: AuditIgnore | None = None

    @property
    def id(self) -> str:
        return self.advisory.id

    @property
    def cells(self) -> tuple[str, ...]:
        return tuple(sorted({h.cell for h in self.hits}))

    @property
    def aliases(self) -> tuple[str, ...]:
        return tuple(i for i in self.ids if i != self.id)

    @property
    def builds(self) -> dict[str, list[str]]:
        """Exact version -> the cells that lock it (``2.13.0+cu130`` -> six linux cells)."""
        found: dict[str, set[str]] = {}
        for hit in self.hits:
            found.setdefault(str(hit.version), set()).add(hit.cell)
        return {version: sorted(cells) for version, cells in sorted(found.items())}

    @property
    def layers(self) -> list[str]:
        """The layers it is locked in, ``main`` first."""
        names = {h.layer for h in self.hits}
        return sorted(names, key=lambda n: (n != "main", n))


@dataclass(frozen=True, kw_only=True)
class Withdrawn:
    """A withdrawn record that names a locked version: not counted, but said."""

    id: str
    package: NormalizedName
    version: Version
    withdrawn: str


@dataclass(frozen=True, kw_only=True)
class AuditReport:
    """What :func:`audit` found. ``findings``: those no live ignore covers (sorted by severity,
    worst first, then id); ``ignored``: covered by an ignore entry; ``expired``: ignore entries
    past their date, each with the findings it would have covered; ``unused``: live entries that
    matched nothing; ``skipped``: locked packages no advisory can be about (folders, VCS)."""

    source: str
    cells: tuple[str, ...]
    queried: int
    fail_on: str
    today: str
    findings: tuple[Finding, ...] = ()
    ignored: tuple[Finding, ...] = ()
    expired: tuple[tuple[AuditIgnore, tuple[Finding, ...]], ...] = ()
    unused: tuple[AuditIgnore, ...] = ()
    withdrawn: tuple[Withdrawn, ...] = ()
    skipped: tuple[Locked, ...] = field(default_factory=tuple)

    @property
    def failing(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if fails(f.severity, self.fail_on))

    @property
    def exit_code(self) -> int:
        """1 when a finding is at or above ``fail_on``; else 0."""
        return 1 if self.failing else 0


def fails(severity: Severity, threshold: str) -> bool:
    """Whether a finding of ``severity`` fails at ``threshold`` (one of :data:`SEVERITIES`)."""
    if threshold == "none":
        return False
    if threshold == "any" or severity is Severity.UNKNOWN:
        return True
    return severity >= Severity[threshold.upper()]


def audit(
    inventory: Inventory,
    source: Source,
    ignores: Sequence[AuditIgnore] = (),
    fail_on: str = "any",
    today: datetime.date | None = None,
) -> AuditReport:
    """Audit ``inventory`` against ``source``: one question per ``(name, public version)`` for the
    whole matrix. ``today`` decides which ignores have expired (default: the local date).
    Raises :class:`~lockgen.osv.AuditFailed` when the source cannot be read."""
    if fail_on not in SEVERITIES:
        raise ValueError(f"fail_on {fail_on!r}")
    day = today or datetime.date.today()
    keys = inventory.keys()
    answers = source.advisories(keys)
    where: dict[tuple[NormalizedName, Version], list[Locked]] = {}
    for item in inventory.packages:
        if item.registry and item.public is not None:
            where.setdefault((item.name, item.public), []).append(item)
    findings: list[Finding] = []
    withdrawn: list[Withdrawn] = []
    for key in keys:
        records = answers.get(key, [])
        live = [r for r in records if r.withdrawn is None]
        withdrawn += [Withdrawn(id=r.id, package=key[0], version=key[1], withdrawn=str(r.withdrawn))
                      for r in records if r.withdrawn is not None]  # fmt: skip
        for group in merged_ids(live):
            findings.append(_finding(key, group, where.get(key, [])))
    live_ignores = [i for i in ignores if datetime.date.fromisoformat(i.until) >= day]
    expired = [i for i in ignores if i not in live_ignores]
    open_, ignored = [], []
    for finding in findings:
        entry = next((i for i in live_ignores if _covers(i, finding)), None)
        if entry is None:
            open_.append(finding)
        else:
            ignored.append(_with_ignore(finding, entry))
    order = _order
    return AuditReport(
        source=source.where, cells=inventory.cells, queried=len(keys), fail_on=fail_on, today=day.isoformat(),
        findings=tuple(sorted(open_, key=order)), ignored=tuple(sorted(ignored, key=order)),
        expired=tuple((i, tuple(f for f in findings if _covers(i, f))) for i in expired),
        unused=tuple(i for i in live_ignores if not any(_covers(i, f) for f in findings)),
        withdrawn=tuple(sorted(withdrawn, key=lambda w: (w.id, w.package, w.version))),
        skipped=tuple(p for p in inventory.packages if not p.registry),
    )  # fmt: skip


def _order(finding: Finding) -> tuple[int, str, str, Version]:
    rank = 0 if finding.severity is Severity.UNKNOWN else 5 - int(finding.severity)
    return (rank, finding.id, finding.package, finding.version)


def _finding(key: tuple[NormalizedName, Version], group: list[Advisory], items: list[Locked]) -> Finding:
    name, version = key
    primary = sorted(group, key=_preference)[0]
    ids = tuple(dict.fromkeys([primary.id, *sorted({i for a in group for i in (a.id, *a.aliases)} - {primary.id})]))
    levels = [a.level() for a in group]
    known = [level for level in levels if level is not Severity.UNKNOWN]
    scores = [s for s in (a.score() for a in group) if s is not None]
    hits = tuple(
        sorted(
            (Hit(cell=i.cell, layer=i.layer, lock=i.lock, line=i.line, version=i.version) for i in items if i.version),
            key=lambda h: (h.cell, h.layer != "main", h.layer),
        )
    )
    return Finding(
        advisory=primary, ids=ids, package=name, version=version, hits=hits,
        fixed=tuple(sorted({v for a in group for v in a.fixed_after(name, version)})),
        severity=max(known) if known else Severity.UNKNOWN, score=max(scores) if scores else None,
    )  # fmt: skip


def _preference(advisory: Advisory) -> tuple[int, str]:
    """Which id names a merged finding: GitHub's (it carries a severity), then PyPI's, then any."""
    prefix = advisory.id.split("-", 1)[0]
    return ({"GHSA": 0, "PYSEC": 1}.get(prefix, 2), advisory.id)


def _covers(entry: AuditIgnore, finding: Finding) -> bool:
    ids = {i.upper() for i in finding.ids}
    return entry.id.upper() in ids and (not entry.packages or finding.package in entry.packages)


def _with_ignore(finding: Finding, entry: AuditIgnore) -> Finding:
    from dataclasses import replace

    return replace(finding, ignored=entry)
