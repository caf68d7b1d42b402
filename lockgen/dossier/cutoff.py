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

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    NormalizedName,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from lockgen.plan.plan import Plan
from lockgen.resolve.simplepages import PageReader, project_url

__all__ = ["Late", "cutoff_of", "late"]


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
    times = [f.upload_time for f in page.files if f.upload_time is not None and _version(f.filename) == version]
    if not times or min(times) < cutoff[0]:
        return None
    return Late(uploaded=min(times), cutoff=cutoff[0], setting=cutoff[1])


def _version(filename: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
