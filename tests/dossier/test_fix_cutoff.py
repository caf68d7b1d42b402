"""``audit --fix`` and the cell's ``exclude-newer`` cutoff (issue 22): a fix uploaded after the
cutoff is not offered (uv would not see it), exemptions respected; a finding counts as fixed only
when the new locks hold a version outside the advisory's range."""

from __future__ import annotations

import datetime
from types import SimpleNamespace

from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.dossier.cutoff import cutoff_of, late
from lockgen.index.pages import Page, PageFile

UTC = datetime.timezone.utc
URLLIB3 = canonicalize_name("urllib3")


class Reader:
    """A page reader whose urllib3 page lists 2.4.0 (April) and 2.5.0 (2025-06-18), as PyPI's
    PEP 691 JSON states them (PEP 700 ``upload-time``)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def page(self, url: str) -> Page:
        self.asked.append(url)
        files = (
            PageFile(filename="urllib3-2.4.0-py3-none-any.whl", url="u1",
                     upload_time=datetime.datetime(2025, 4, 10, tzinfo=UTC)),
            PageFile(filename="urllib3-2.5.0-py3-none-any.whl", url="u2",
                     upload_time=datetime.datetime(2025, 6, 18, 12, tzinfo=UTC)),
            PageFile(filename="urllib3-2.5.0.tar.gz", url="u3", upload_time=datetime.datetime(2025, 6, 18, 13, tzinfo=UTC)),
        )  # fmt: skip
        return Page(url=url, files=files)


def plan(exclude_newer="2025-06-01", package=None, sources=()):
    def source_cutoffs():  # as Plan.source_cutoffs, for timestamps
        return {p: s.exclude_newer or "false" for s in sources for p in s.packages if s.exclude_newer or exclude_newer}

    return SimpleNamespace(
        exclude_newer=exclude_newer, exclude_newer_package=package or {}, sources=sources,
        index_url="https://pypi.org/simple", source_cutoffs=source_cutoffs,
    )  # fmt: skip


def test_a_fix_uploaded_after_the_cutoff_is_blocked_naming_it_and_the_date():
    found = late(Reader(), plan(), URLLIB3, Version("2.5.0"))  # type: ignore[arg-type]
    assert found is not None
    why = found.why("urllib3", Version("2.5.0"))
    assert "urllib3 2.5.0 was uploaded 2025-06-18" in why and "exclude-newer = 2025-06-02T00:00:00Z" in why
    assert late(Reader(), plan(), URLLIB3, Version("2.4.0")) is None  # type: ignore[arg-type]
    assert late(Reader(), plan("2025-07-01"), URLLIB3, Version("2.5.0")) is None  # type: ignore[arg-type]
    # one file of it (the wheel, 12:00) is under a 12:30 cutoff: uv can take it
    assert late(Reader(), plan("2025-06-18T12:30:00Z"), URLLIB3, Version("2.5.0")) is None  # type: ignore[arg-type]


def test_exclude_newer_package_exemptions_and_own_cutoffs_are_respected():
    reader = Reader()
    assert late(reader, plan(package={"urllib3": "false"}), URLLIB3, Version("2.5.0")) is None  # type: ignore[arg-type]
    assert reader.asked == []  # nothing fetched when no cutoff applies
    own = late(Reader(), plan(None, package={"urllib3": "2025-06-10T00:00:00Z"}), URLLIB3, Version("2.5.0"))  # type: ignore[arg-type]
    assert own is not None and own.setting == "exclude-newer-package.urllib3"
    assert late(Reader(), plan(package={"urllib3": "2025-07-01"}), URLLIB3, Version("2.5.0")) is None  # type: ignore[arg-type]
    pinned = SimpleNamespace(name="pinned", packages=(URLLIB3,), exclude_newer=None)
    assert cutoff_of(plan(sources=(pinned,)), URLLIB3) is None  # type: ignore[arg-type]
    own_cutoff = SimpleNamespace(name="mine", packages=(URLLIB3,), exclude_newer="2025-06-10T00:00:00Z")
    by_source = late(Reader(), plan(None, sources=(own_cutoff,)), URLLIB3, Version("2.5.0"))  # type: ignore[arg-type]
    assert by_source is not None and by_source.setting == "sources.mine.exclude-newer"
    assert late(Reader(), plan(None), URLLIB3, Version("2.5.0")) is None  # type: ignore[arg-type]


def test_a_finding_counts_fixed_only_when_the_new_locks_hold_an_unaffected_version():
    from lockgen.dossier.audit import Hit
    from lockgen.dossier.fix import _collateral, _verified
    from lockgen.osv import Advisory, Affected, Event, Range

    advisory = Advisory(
        id="GHSA-x", affected=(Affected(name=URLLIB3, ranges=(Range(type="ECOSYSTEM", events=(Event(kind="introduced", version="0"), Event(kind="fixed", version="2.5.0"))),)),),
    )  # fmt: skip
    finding = SimpleNamespace(
        advisory=advisory,
        package=URLLIB3,
        hits=(Hit(cell="c", layer="main", lock="l", line=1, version=Version("2.4.0")),),
    )

    def inventory(**versions):
        packages = [SimpleNamespace(cell="c", layer="main", name=canonicalize_name(n), version=Version(v),
                                    public=Version(v)) for n, v in versions.items()]  # fmt: skip
        return SimpleNamespace(packages=packages)

    old = inventory(urllib3="2.4.0", requests="2.32.4")
    assert not _verified(finding, inventory(requests="2.31.0"))  # dropped: not a fix
    assert not _verified(finding, inventory(urllib3="2.4.0"))
    assert _verified(finding, inventory(urllib3="2.5.0"))
    assert _collateral(old, inventory(requests="2.31.0")) == [  # type: ignore[arg-type]
        "warning: the re-lock downgraded requests 2.32.4 -> 2.31.0 in c",
        "warning: the re-lock removed urllib3 2.4.0 from c",
    ]
