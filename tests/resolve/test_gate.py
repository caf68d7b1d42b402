"""The lock-time gate: a malicious-package entry (OSV ``MAL-`` records) or a quarantined project
(PEP 792) refuses the lock; archived and deprecated projects warn; ``[audit] ignore`` entries
exempt until their date. Unit tests on the page parser and the gate, then ``lockgen all`` against
a fake index and a fake OSV API with the real uv."""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

import pytest
from packaging.pylock import Package, PackageWheel
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen import osv
from lockgen.config.model import AuditIgnore
from lockgen.index.pages import Status, parse_page, status_of
from lockgen.resolve.gate import Gate, is_malicious
from tests.conftest import one_cell, run_cli
from tests.support.fakeosv import FakeOsv, record

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{HOST}"
INDEX = "https://pypi.example/simple"


# -- the page's status marker (PEP 792) ------------------------------------------------------------


def test_json_pages_carry_the_project_status_and_its_reason():
    doc = {
        "meta": {"api-version": "1.4"},
        "name": "evil",
        "files": [],
        "project-status": {"status": "quarantined", "reason": "malware\nfound"},
    }
    _, version, status = parse_page(json.dumps(doc), "application/vnd.pypi.simple.v1+json", INDEX)
    assert version == "1.4" and status == Status("quarantined", "malware found")


def test_html_pages_carry_it_in_meta_tags():
    page = '<html><head><meta name="pypi:project-status" content="Archived"><meta name="pypi:project-status-reason" content="moved"></head><body><a href="a-1.0.tar.gz">a</a></body></html>'
    assert parse_page(page, "text/html", INDEX)[2] == Status("archived", "moved")
    assert status_of(page.encode(), "text/html") == Status("archived", "moved")


def test_the_page_cache_reads_the_status_without_parsing_the_file_list():
    files = [{"filename": f"torch-{i}.whl", "url": f"t{i}.whl", "hashes": {}} for i in range(3)]
    doc = {
        "meta": {"api-version": "1.4"},
        "files": files,
        "project-status": {"status": "deprecated", "reason": "use new"},
    }
    assert status_of(json.dumps(doc).encode(), "application/vnd.pypi.simple.v1+json") == Status("deprecated", "use new")
    doc.pop("project-status")
    assert status_of(json.dumps(doc).encode(), "application/vnd.pypi.simple.v1+json") == Status()
    assert status_of(b'{"project-status": {"status": [1]}}', "application/json") == Status()


@pytest.mark.parametrize(
    "marker",
    [None, "not an object", {"status": 3}, {"status": ""}, {"status": "x" * 41}, {"reason": "no status"}],
    ids=["none", "string", "number", "empty", "too-long", "reason-only"],
)
def test_a_page_without_a_readable_marker_is_active(marker):
    doc = {"meta": {"api-version": "1.4"}, "files": [], **({"project-status": marker} if marker is not None else {})}
    assert parse_page(json.dumps(doc), "application/vnd.pypi.simple.v1+json", INDEX)[2] == Status()


# -- the gate, on its own --------------------------------------------------------------------------


def package(name: str, version: str) -> Package:
    wheel = PackageWheel(
        name=f"{name}-{version}-py3-none-any.whl", url=f"https://files.example/{name}.whl", hashes={"sha256": "0" * 64}
    )
    return Package(name=canonicalize_name(name), version=Version(version), wheels=[wheel])


class Records:
    where = "test"

    def __init__(self, *records: dict) -> None:
        self.records = [osv.parse(r) for r in records]
        self.asked: list = []

    def advisories(self, keys):
        self.asked += keys
        return {
            k: [r for r in self.records if r.entries(k[0])] for k in keys if any(r.entries(k[0]) for r in self.records)
        }


def pages(statuses: dict[str, Status]):
    def status(url: str) -> Status:
        return statuses.get(url.rstrip("/").rsplit("/", 1)[-1], Status())

    return status


MAL = record("MAL-2026-1234", "evil", ["1.0"], summary="Malicious code in evil (PyPI)")
CVE = record("GHSA-aaaa-bbbb-cccc", "plain", ["1.0"], fixed="1.1")


def ignore(ident: str, until: str = "2999-12-31", packages: tuple[str, ...] = ()) -> AuditIgnore:
    return AuditIgnore(id=ident, reason="reviewed", until=until, packages=packages, key="tool.lockgen.audit.ignore[0]")


def test_only_malicious_entries_refuse_and_labels_are_judged_by_the_public_version():
    gate = Gate(Records(MAL, CVE), None)
    (found,) = gate.check([package("evil", "1.0+build1"), package("plain", "1.0")], [INDEX])
    assert (found.name, found.version, found.kind, found.refuse) == ("evil", "1.0+build1", "malicious", True)
    assert "MAL-2026-1234 (Malicious code in evil (PyPI))" in found.line()
    assert is_malicious(osv.parse(record("GHSA-x", "a", ["1"], aliases=("MAL-2026-9",))))


def test_each_version_is_asked_once_per_run_across_cells():
    source = osv.Cached(Records(MAL))
    gate = Gate(source, None)
    gate.check([package("evil", "1.0"), package("plain", "1.0")], [INDEX])
    gate.check([package("evil", "1.0"), package("other", "2.0")], [INDEX])
    assert sorted(source.source.asked) == sorted(
        [(n, Version(v)) for n, v in [("evil", "1.0"), ("plain", "1.0"), ("other", "2.0")]]
    )  # type: ignore[attr-defined]


def test_statuses_quarantined_refuses_archived_and_deprecated_warn():
    gate = Gate(
        None,
        pages(
            {
                "evil": Status("quarantined", "malware"),
                "old": Status("archived"),
                "gone": Status("deprecated", "use new"),
            }
        ),
    )
    found = gate.check([package(n, "1.0") for n in ("evil", "old", "gone", "fine")], [INDEX])
    assert [(f.name, f.kind, f.refuse) for f in found] == [
        ("evil", "quarantined", True),
        ("gone", "deprecated", False),
        ("old", "archived", False),
    ]


def test_exemptions_name_an_id_or_alias_or_a_status_and_expire():
    today = datetime.date(2026, 12, 6)
    findings = Gate(Records(MAL), None, [ignore("mal-2026-1234")], today).check([package("evil", "1.0")], [INDEX])
    assert (
        findings[0].ignored is not None
        and "exempted by tool.lockgen.audit.ignore[0] until 2999-12-31" in findings[0].line()
    )
    expired = Gate(Records(MAL), None, [ignore("MAL-2026-1234", until="2026-12-05")], today).check(
        [package("evil", "1.0")], [INDEX]
    )
    assert expired[0].ignored is None
    other_package = Gate(
        None, pages({"evil": Status("quarantined")}), [ignore("quarantined", packages=("good",))], today
    )
    assert other_package.check([package("evil", "1.0")], [INDEX])[0].ignored is None


def test_a_source_that_cannot_be_read_is_never_a_pass():
    class Down:
        where = "down"

        def advisories(self, keys):
            raise osv.AuditFailed("OSV API https://api.osv.dev: cannot be reached")

    with pytest.raises(osv.AuditFailed):
        Gate(Down(), None).check([package("evil", "1.0")], [INDEX])


# -- lockgen all, end to end -----------------------------------------------------------------------


@pytest.fixture
def world(index):
    index.add("app", "1.0", requires=("evil", "old"))
    index.add("evil", "1.0")
    index.add("old", "1.0")
    index.add("extra", "1.0")
    index.publish()
    return index


def status(world, name: str, value: str, reason: str = "") -> None:
    """Mark ``name``'s project page on the fake index with a PEP 792 status (HTML meta tags)."""
    page = Path(world.root) / "pypi" / "simple" / name / "index.html"
    head = f'<head><meta name="pypi:project-status" content="{value}"><meta name="pypi:project-status-reason" content="{reason}"></head>'
    page.write_text(page.read_text().replace("<html>", "<html>" + head, 1))


def project(root: Path, world, extra: str = "") -> Path:
    return one_cell(root, world.index_url(), "app==1.0\n", python=HOST, extra=extra)


@pytest.mark.uv
def test_a_malicious_release_is_refused_naming_the_record_and_how_to_exempt_it(tmp_path, world):
    with FakeOsv([MAL]) as api:
        root = project(tmp_path / "p", world, '[tool.lockgen.audit]\nosv = "https://api.osv.dev"')
        run = run_cli("all", "-C", str(root), "--mirror", f"https://api.osv.dev={api.url}")
        assert run.code == 1
        assert "evil 1.0: a malicious-package entry: MAL-2026-1234" in run.err
        assert "[audit] ignore" in run.err and "Traceback" not in run.err
        assert not (root / "locks" / f"{CELL}.txt").exists()
        ok = project(tmp_path / "q", world, '[tool.lockgen.audit]\nosv = "https://api.osv.dev"\n'
                     '[[tool.lockgen.audit.ignore]]\nid = "MAL-2026-1234"\nreason = "a test fixture"\nuntil = 2999-12-31')  # fmt: skip
        run = run_cli("all", "-C", str(ok), "--mirror", f"https://api.osv.dev={api.url}")
        assert run.code == 0, run.err
        assert "exempted by" in run.err


@pytest.mark.uv
def test_statuses_from_the_index_page_refuse_or_warn_without_any_osv_source(tmp_path, world):
    status(world, "old", "archived", "no longer maintained")
    root = project(tmp_path / "p", world)
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert "old 1.0: project status archived (PEP 792): no longer maintained" in run.err
    status(world, "evil", "quarantined", "malware")
    run = run_cli("all", "-C", str(project(tmp_path / "q", world)))
    assert run.code == 1 and "evil 1.0: project status quarantined (PEP 792): malware" in run.err
    forced = run_cli("all", "--force", "-C", str(root))  # p's lock, written before, holds evil 1.0
    said = forced.out + forced.err
    assert forced.code == 1 and "installable as before" not in said
    assert "the lock-time gate refused what a re-resolution would lock" in said and "run lockgen audit" in said


@pytest.mark.uv
def test_an_optional_layer_with_a_refused_package_is_unavailable_and_the_cell_locks(tmp_path, world):
    status(world, "extra", "quarantined", "malware")
    root = one_cell(tmp_path / "p", world.index_url(), "old==1.0\n", python=HOST, extra='optional = ["extra==1.0"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    (gap,) = json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]["unavailable"]
    assert gap["requirement"] == "extra==1.0" and "the lock-time gate refuses it" in gap["reason"]
