"""Whether a fixed version is there for a cell at all: its upload time against the cell's
``exclude-newer`` cutoff, as uv judges it (issue 22, ``audit --fix``).

uv leaves out every file uploaded at or after the cutoff (``--exclude-newer``; a plain date
means the end of that day, taken here as UTC); ``exclude-newer-package`` gives a package its own
cutoff or none (``false``), and a package a source pins to its index is exempt (as
:mod:`lockgen.resolve.uv` passes it). The upload time is the PEP 700 ``upload-time`` the index's
PEP 691 JSON page states for the version's files (the earliest of them).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.index.files import artifact
from lockgen.index.pages import PageReader, project_url
from lockgen.plan.plan import Plan

__all__ = ["Late", "cutoff_of", "late", "yanked"]


@dataclass(frozen=True, kw_only=True)
class Late:
    """``version`` of ``name`` was first uploaded at ``uploaded``, not before the cell's ``cutoff``
    (``setting``: the config key that sets it)."""

    uploaded: datetime.datetime
    cutoff: datetime.datetime
    setting: str

    def why(self, name: str, version: Version) -> str:
        return (
            f"{name} {version} was uploaded {self.uploaded.date().isoformat()}, after the cell's cutoff "
            f"({self.setting} = {self.cutoff.isoformat().replace('+00:00', 'Z')}): uv does not see it; raise "
            f"exclude-newer, or exempt it with exclude-newer-package, to take the fix"
        )


def _moment(value: str) -> datetime.datetime:
    """A cutoff value as uv reads it: an RFC 3339 timestamp, or a date (the end of that day)."""
    if "T" not in value and len(value) == 10:
        return datetime.datetime.fromisoformat(value).replace(tzinfo=datetime.timezone.utc) + datetime.timedelta(days=1)
    moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def cutoff_of(plan: Plan, name: NormalizedName) -> tuple[datetime.datetime, str] | None:
    """The cutoff uv applies to ``name`` in the cell of ``plan`` and the setting that sets it;
    None when none applies. Raises ValueError for a value that is no date or timestamp."""
    own = plan.exclude_newer_package.get(name)
    source = next((s for s in plan.sources if name in s.packages), None)
    if own is None and source is not None:
        own = plan.source_cutoffs().get(name)
        if own is not None and own != "false":
            return _moment(own), f"sources.{source.name}.exclude-newer"
    if own == "false":
        return None
    if own is not None:
        return _moment(own), f"exclude-newer-package.{name}"
    return (_moment(plan.exclude_newer), "exclude-newer") if plan.exclude_newer else None


def late(reader: PageReader, plan: Plan, name: NormalizedName, version: Version) -> Late | None:
    """Why ``version`` of ``name`` is past the cell's cutoff; None when it is not (or no cutoff
    applies, or the index states no upload time: uv is then the judge)."""
    cutoff = cutoff_of(plan, name)
    if cutoff is None or not plan.index_url:
        return None
    page = reader.page(project_url(plan.index_url, name))
    times = [
        f.upload_time
        for f in page.files
        if f.upload_time is not None and getattr(artifact(f.filename), "version", None) == version
    ]
    if not times or min(times) < cutoff[0]:
        return None
    return Late(uploaded=min(times), cutoff=cutoff[0], setting=cutoff[1])


def yanked(reader: PageReader, plan: Plan, name: NormalizedName) -> tuple[set[Version], set[Version], str | None]:
    """``(versions of name the cell's index lists, those of them yanked, why the index could not
    tell)``: a version is yanked when every file of it its page lists is (PEP 592). A fix must not
    move a pin onto one: an exact pin would still select it (PEP 592 lets ``==`` take a yanked
    version). The third value is the page's error (its host down, HTTP 404): then the sets are
    empty and the caller must not take the silence for "none yanked"."""
    if not plan.index_url:
        return set(), set(), None
    page = reader.page(project_url(plan.index_url, name))
    if page.error is not None:
        return set(), set(), f"{page.url}: {page.error}"
    files: dict[Version, list[bool]] = {}
    for f in page.files:
        version = f.artifact.version if f.artifact is not None else None
        if version is not None:
            files.setdefault(version, []).append(f.yanked is not False)
    return set(files), {v for v, flags in files.items() if all(flags)}, None
