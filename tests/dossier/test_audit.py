"""``lockgen audit`` (issue 22, item 1): every package of every cell against OSV records, from a
fake OSV API on loopback (through a mirror) or an export on disk; findings grouped by advisory
across cells, labelled versions, withdrawn records, layer-only packages, ignores that expire."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.osv import Advisory, Affected, Event, Range, Severity, merged_ids, parse
from tests.conftest import run_cli
from tests.support import dossier_world
from tests.support.dossier_world import NEW, OLD
from tests.support.fakeosv import FakeOsv, record, write_export

IGNORES = """
[tool.lockgen.audit]
osv = "https://api.osv.dev"
[[tool.lockgen.audit.ignore]]
id = "CVE-2026-22195"
reason = "we never render untrusted templates"
until = 2020-01-31
[[tool.lockgen.audit.ignore]]
id = "GHSA-q9r4-x2m3-8h7v"
reason = "xmlattr is not used"
until = "2999-12-31"
"""


@pytest.fixture(scope="module")
def world(shared_fake_host, tmp_path_factory):
    pypi = shared_fake_host("pypi")
    dossier_world.publish(pypi)
    w = dossier_world.write(tmp_path_factory.mktemp("audit") / "p", pypi, IGNORES)
    with FakeOsv(dossier_world.records()) as server:  # [audit] osv is set: the lock-time gate asks it
        run = run_cli("all", "-C", str(w.root), *w.mirror_args(), "--mirror", f"https://api.osv.dev={server.url}")
    assert run.code == 0, run.err
    return w


@pytest.fixture
def osv():
    with FakeOsv(dossier_world.records(), page_size=1) as server:
        yield server


def audit(world, osv, *args: str):
    return run_cli("audit", "-C", str(world.root), "--mirror", f"https://api.osv.dev={osv.url}", *args)


def test_findings_are_grouped_by_advisory_across_cells_and_judged_by_public_version(world, osv):
    run = audit(world, osv)
    assert run.code == 1, run.err
    out = run.out
    assert "against https://api.osv.dev" in out  # the canonical URL; fetched from the mirror
    # aliases merged (GHSA + PYSEC), one of two cells, the smallest fix
    assert (
        "GHSA-h5c8-rqwp-cp95 in jinja2 3.1.4: 1 of 2 cells; fixed in 3.1.5 [medium 4.2] (CVE-2026-22195, PYSEC-2026-11)"
        in out
    )
    assert "PYSEC-2026-11 in" not in out
    # the labelled build is judged as 10.0.0 and shown as it is locked
    assert "GHSA-44wm-f244-xhp3 in pillow 10.0.0: 2 of 2 cells; fixed in 10.0.1 [high]" in out
    assert "10.0.0+build1: linux-x86_64-cpu-py3.11, linux-x86_64-cpu-py3.12" in out
    # only in the optional layer; no fix published; CVSS 4.0 scored
    assert "GHSA-7f3x-c4wq-5x2p in extra-lib 1.0: 2 of 2 cells; no fixed version published [critical 9.3]" in out
    assert "layer optional-extra-lib: linux-x86_64-cpu-py3.11, linux-x86_64-cpu-py3.12" in out
    # withdrawn: said, not counted
    assert "withdrawn, not counted: GHSA-9w8r-397f-prfh in numpy 2.0.0" in out
    assert "GHSA-9w8r-397f-prfh in numpy 2.0.0:" not in out


def test_each_package_version_is_asked_once_for_the_whole_matrix(world, osv):
    audit(world, osv)
    asked = [(q["package"]["name"], q["version"], q.get("page_token")) for q in osv.queries]
    first_pages = [(n, v) for n, v, token in asked if token is None]
    assert len(first_pages) == len(set(first_pages))  # once per (package, version), 2 cells or not
    assert ("jinja2", "3.1.4") in first_pages and ("jinja2", "3.1.6") in first_pages
    assert ("pillow", "10.0.0") in first_pages  # the public version, never "10.0.0+build1"
    assert ("extra-lib", "1.0") in first_pages
    assert any(token for _, _, token in asked)  # page_size=1: the two jinja2 records took two pages
    assert len(osv.fetched) == len(set(osv.fetched))  # each record fetched once


def test_an_expired_ignore_stops_applying_and_says_so(world, osv):
    run = audit(world, osv)
    assert "ignore CVE-2026-22195 (tool.lockgen.audit.ignore[0]) expired on 2020-01-31: it no longer applies" in run.out
    assert "GHSA-h5c8-rqwp-cp95 in jinja2 3.1.4" in run.out  # reported again
    # the live one hides its finding, with its reason and date
    assert "ignored until 2999-12-31: GHSA-q9r4-x2m3-8h7v in jinja2 3.1.6: 1 of 2 cells" in run.out
    assert "! GHSA-q9r4" not in run.out


@pytest.mark.parametrize(("threshold", "code"), [("any", 1), ("high", 1), ("critical", 1), ("none", 0)])
def test_fail_on_threshold(world, osv, threshold, code):
    assert audit(world, osv, "--fail-on", threshold).code == code


def test_fail_on_only_counts_findings_at_or_above_it(world, osv):
    run = audit(world, osv, NEW, "--fail-on", "critical", "--format", "json")
    data = json.loads(run.out)
    assert {f["id"]: f["fails"] for f in data["findings"]} == {
        "GHSA-7f3x-c4wq-5x2p": True, "GHSA-44wm-f244-xhp3": False, "GHSA-h5c8-rqwp-cp95": False,
    }  # fmt: skip
    assert run.code == 1


def test_json_names_every_location_with_its_exact_build(world, osv):
    data = json.loads(audit(world, osv, "--format", "json").out)
    pillow = next(f for f in data["findings"] if f["package"] == "pillow")
    assert pillow["version"] == "10.0.0" and pillow["builds"] == {"10.0.0+build1": list(dossier_world.CELLS)}
    assert {(loc["cell"], loc["layer"], loc["version"]) for loc in pillow["locations"]} == {
        (OLD, "main", "10.0.0+build1"), (NEW, "main", "10.0.0+build1"),
    }  # fmt: skip
    layer = next(f for f in data["findings"] if f["package"] == "extra-lib")
    assert {loc["lock"] for loc in layer["locations"]} == {
        f"locks/{c}/optional-extra-lib.txt" for c in dossier_world.CELLS
    }
    assert data["expired_ignores"][0]["findings"] == ["GHSA-h5c8-rqwp-cp95"]
    assert data["withdrawn"][0]["id"] == "GHSA-9w8r-397f-prfh"


def test_sarif_points_at_the_lock_line(world, osv):
    run = audit(world, osv, "--format", "sarif")
    log = json.loads(run.out)
    assert log["version"] == "2.1.0"
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["GHSA-7f3x-c4wq-5x2p"]["properties"]["security-severity"] == "9.3"
    assert rules["GHSA-44wm-f244-xhp3"]["properties"]["security-severity"] == "8.0"  # HIGH, no CVSS
    for result in log["runs"][0]["results"]:
        location = result["locations"][0]["physicalLocation"]
        lock = (world.root / location["artifactLocation"]["uri"]).read_text().splitlines()
        package = result["message"]["text"].split()[0]
        assert lock[location["region"]["startLine"] - 1].startswith(f"{package}==")
        assert result["ruleId"] in rules and result["level"] in ("error", "warning")


def test_every_format_points_at_the_line_of_the_file_as_read(world, osv, tmp_path):
    """Lines come from the lock's own text (issue 22): a lock with an extras line and no plain
    line (an older writer's; today's adds the plain line for pip 23.2.1), a plain+extras pair,
    hashes over several lines and comments, before the packages with advisories."""
    import shutil

    root = tmp_path / "p"
    shutil.copytree(world.root, root)
    path = root / "locks" / f"{NEW}.txt"
    head, _, body = path.read_text().partition("\n\n")
    extra = (
        "# a reviewer's comment\n"
        "aaa-cuda[cublas,cudart]==1.0 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n    # via x\n"
        "aab-pair==1.0 \\\n    --hash=sha256:cc\n# a comment inside the pair\n"
        "aab-pair[http]==1.0 \\\n    --hash=sha256:cc\n    # via\n    #   x\n    #   y\n"
    )
    path.write_text(f"{head}\n\n{extra}{body}")
    lines = path.read_text().splitlines()
    mirror = ("--mirror", f"https://api.osv.dev={osv.url}")
    sarif = json.loads(run_cli("audit", "-C", str(root), *mirror, "--format", "sarif").out)
    found = 0
    for result in sarif["runs"][0]["results"]:
        location = result["locations"][0]["physicalLocation"]
        if location["artifactLocation"]["uri"] == f"locks/{NEW}.txt":
            package = result["message"]["text"].split()[0]
            assert lines[location["region"]["startLine"] - 1].startswith(f"{package}=="), result["message"]
            found += 1
    assert found >= 2  # jinja2 and pillow
    data = json.loads(run_cli("audit", "-C", str(root), *mirror, "--format", "json").out)
    for finding in data["findings"]:
        for loc in finding["locations"]:
            if loc["lock"] == f"locks/{NEW}.txt":
                assert lines[loc["line"] - 1].startswith(f"{finding['package']}=="), loc


def test_markdown_is_a_table_for_a_pull_request(world, osv):
    out = audit(world, osv, "--format", "markdown").out
    assert out.startswith("## Vulnerability audit")
    assert "| ⚠️ critical 9.3 | [GHSA-7f3x-c4wq-5x2p](https://github.com/advisories/GHSA-7f3x-c4wq-5x2p)" in out
    assert "| jinja2 3.1.4 | 1 of 2<br>linux-x86_64-cpu-py3.12 | 3.1.5 |" in out


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_an_export_on_disk_gives_the_same_findings_as_the_api(world, osv, tmp_path, kind):
    export = write_export(dossier_world.records(), tmp_path / ("osv" if kind == "folder" else "PyPI/all.zip"))
    offline = run_cli("audit", "-C", str(world.root), "--osv", str(export), "--format", "json")
    online = audit(world, osv, "--format", "json")
    strip = lambda data: {k: v for k, v in json.loads(data).items() if k != "source"}  # noqa: E731
    assert strip(offline.out) == strip(online.out)
    assert offline.code == online.code == 1


def test_only_the_named_cells(world, osv):
    run = audit(world, osv, OLD, "--format", "json")
    data = json.loads(run.out)
    assert data["cells"] == [OLD]
    assert "GHSA-h5c8-rqwp-cp95" not in {f["id"] for f in data["findings"]}  # 3.1.4 is the 3.12 cell's


def test_an_unknown_cell_or_an_unreachable_api_is_an_error(world):
    run = run_cli("audit", "-C", str(world.root), "linux-x86_64-cpu-py3.1")
    assert run.code == 2 and "no lock for cell linux-x86_64-cpu-py3.1" in run.err and "did you mean" in run.err
    run = run_cli("audit", "-C", str(world.root), "--osv", "http://127.0.0.1:9")
    assert run.code == 1 and "cannot reach the OSV API" in run.err and "--osv PATH" in run.err
    run = run_cli("audit", "-C", str(world.root), "--osv", "no/such/export")
    assert run.code == 1 and "OSV export no/such/export: no such folder or file" in run.err


# ----------------------------------------------------------------------------- pure: the record model


def _advisory(*events: tuple[str, str], versions: tuple[str, ...] = ()) -> Advisory:
    ranges = (Range(type="ECOSYSTEM", events=tuple(Event(kind=k, version=v) for k, v in events)),)
    return Advisory(id="X", affected=(Affected(name=canonicalize_name("p"), ranges=ranges, versions=versions),))


@pytest.mark.parametrize(
    ("events", "version", "affected"),
    [
        ((("introduced", "0"), ("fixed", "1.2")), "1.1.9", True),
        ((("introduced", "0"), ("fixed", "1.2")), "1.2", False),
        ((("introduced", "1.0"), ("fixed", "1.2")), "0.9", False),
        ((("introduced", "1.0"), ("last_affected", "1.2")), "1.2", True),
        ((("introduced", "1.0"), ("last_affected", "1.2")), "1.2.1", False),
        ((("introduced", "1.0"), ("fixed", "1.2"), ("introduced", "2.0"), ("fixed", "2.1")), "1.5", False),
        ((("introduced", "1.0"), ("fixed", "1.2"), ("introduced", "2.0"), ("fixed", "2.1")), "2.0.5", True),
        ((("introduced", "0"),), "99", True),
        ((("introduced", "0"), ("fixed", "1.2")), "1.2rc1", True),  # PEP 440: a pre-release is older
    ],
    ids=["below-fix", "at-fix", "before-introduced", "last-affected", "after-last", "gap", "second", "open", "pre"],
)
def test_range_events(events, version, affected):
    assert _advisory(*events).affects(canonicalize_name("p"), Version(version)) is affected


def test_versions_list_and_git_ranges_and_fixes():
    listed = _advisory(versions=("1.0", "1.1"))
    assert listed.affects(canonicalize_name("p"), Version("1.0.0")) and not listed.affects(
        canonicalize_name("p"), Version("1.2")
    )
    git = Advisory(
        id="G",
        affected=(
            Affected(
                name=canonicalize_name("p"),
                ranges=(Range(type="GIT", events=(Event(kind="introduced", version="0"),)),),
            ),
        ),
    )
    assert not git.affects(canonicalize_name("p"), Version("1.0"))
    two = _advisory(("introduced", "0"), ("fixed", "1.2"), ("introduced", "2.0"), ("fixed", "2.1"))
    assert two.fixed_after(canonicalize_name("p"), Version("1.1")) == [Version("1.2"), Version("2.1")]


def test_severity_from_cvss_vectors_and_github_words():
    v31 = parse(record("A", "p", ["1"], cvss="CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"))
    assert v31.score() == Decimal("9.8") and v31.level() is Severity.CRITICAL
    word = parse(record("B", "p", ["1"], rating="MODERATE"))
    assert word.score() is None and word.level() is Severity.MEDIUM
    assert parse(record("C", "p", ["1"])).level() is Severity.UNKNOWN
    bad = parse(record("D", "p", ["1"], cvss="CVSS:3.1/AV:bogus", rating="LOW"))
    assert bad.level() is Severity.LOW


def test_aliases_merge_records_of_one_vulnerability():
    a = parse(record("GHSA-1", "p", ["1"], aliases=("CVE-1",)))
    b = parse(record("PYSEC-1", "p", ["1"], aliases=("CVE-1",)))
    c = parse(record("GHSA-2", "p", ["1"]))
    assert [[x.id for x in g] for g in merged_ids([c, b, a])] == [["GHSA-1", "PYSEC-1"], ["GHSA-2"]]


def test_records_are_untrusted_input():
    from lockgen.osv import BadRecord

    with pytest.raises(BadRecord, match="id"):
        parse({"affected": []})
    with pytest.raises(BadRecord, match="affected"):
        parse({"id": "X", "affected": "everything"})
    other = parse({"id": "X", "affected": [{"package": {"ecosystem": "npm", "name": "left-pad"}}]})
    assert other.affected == ()


def test_ignore_entries_need_a_reason_and_a_date(tmp_path):
    from lockgen.config import load_config
    from lockgen.runtime.errors import ConfigError

    (tmp_path / "lockgen.toml").write_text(
        '[matrix]\nos=["linux"]\narch=["x86_64"]\nbackend=["cpu"]\npython=["3.12"]\n'
        '[audit]\nfail-on = "severe"\n[[audit.ignore]]\nid = "GHSA-1"\n[[audit.ignore]]\nid = "GHSA-2"\nreason = "r"\nuntil = "soon"\n'
    )
    with pytest.raises(ConfigError) as exc:
        load_config(tmp_path / "lockgen.toml")
    assert exc.value.messages == [
        "audit.fail-on: 'severe' is not one of any, low, medium, high, critical, none",
        "audit.ignore[0]: needs reason, until (an ignore says why, and until when it applies)",
        "audit.ignore[1].until: 'soon' is not a date; write it as 2026-12-31",
    ]


def test_today_decides_expiry():
    from lockgen.config.model import AuditIgnore
    from lockgen.dossier.audit import audit as run_audit
    from lockgen.dossier.inventory import Inventory
    from lockgen.locks.lockset import LockSet

    empty = Inventory(locks=LockSet(origin="x"), cells=(), packages=())

    class Nothing:
        where = "nothing"

        def advisories(self, keys):
            return {}

    entry = AuditIgnore(id="X", reason="r", until="2026-05-01", key="audit.ignore[0]")
    assert run_audit(empty, Nothing(), [entry], today=datetime.date(2026, 5, 1)).unused == (entry,)
    assert run_audit(empty, Nothing(), [entry], today=datetime.date(2026, 5, 2)).expired == ((entry, ()),)


def test_the_cli_names_the_formats_and_thresholds_the_core_has():
    from lockgen.commands import audit
    from lockgen.config.model import SEVERITIES
    from lockgen.dossier.auditformat import FORMATS

    assert tuple(FORMATS) == audit.FORMATS and audit.FAIL_ON == SEVERITIES


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "markdown"])
def test_a_login_in_the_osv_url_is_sent_never_shown(world, osv, fmt):
    """``--osv https://user:token@host`` (issue 15's rule for every URL lockgen prints): the
    report names the API without the login, in every format, and so does a failure to reach it."""
    host = osv.url.split("://", 1)[1]
    run = run_cli("audit", "-C", str(world.root), "--osv", f"http://bob:s3cr3t@{host}", "--format", fmt)
    assert run.code == 1, run.err
    assert "s3cr3t" not in run.out + run.err and "bob:" not in run.out + run.err
    if fmt in ("text", "json"):  # the formats that name the source
        assert f"http://{host}" in run.out
    down = run_cli("audit", "-C", str(world.root), "--osv", "http://bob:s3cr3t@127.0.0.1:9", "--format", fmt)
    assert down.code == 1 and "http://127.0.0.1:9/v1/querybatch: cannot reach" in down.err, down.err
    assert "s3cr3t" not in down.out + down.err


def test_a_folder_export_is_walked_once_per_audit_and_read_in_any_depth(tmp_path, monkeypatch):
    """Issue 24 (item 4): the folder's identity and its records come from one walk (it was two
    walks and a pathlib ``rglob``: 2.4 s at 20,000 records); nested folders are read, other
    files are not, and the index it caches answers the next run."""
    import os as _os

    from lockgen import osv as osv_module

    folder = tmp_path / "osv"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "GHSA-1.json").write_text(json.dumps(_bench_record("GHSA-1", "alpha", "1.0")))
    (folder / "PYSEC-2.json").write_text(json.dumps(_bench_record("PYSEC-2", "beta", "2.0")))
    (folder / "README.txt").write_text("not a record")
    walks = []
    real = _os.scandir
    monkeypatch.setattr(osv_module.os, "scandir", lambda p: walks.append(p) or real(p))
    export = osv_module.Export(folder, "osv", cache=tmp_path / "cache")
    keys = [(canonicalize_name("alpha"), Version("1.0")), (canonicalize_name("beta"), Version("2.0"))]
    found = export.advisories(keys)
    assert sorted(a.id for v in found.values() for a in v) == ["GHSA-1", "PYSEC-2"]
    assert len([w for w in walks if str(w).startswith(str(folder))]) == 3  # the folder, its two sub-folders: once
    again = osv_module.Export(folder, "osv", cache=tmp_path / "cache").advisories(keys)
    assert {k: [a.id for a in v] for k, v in again.items()} == {k: [a.id for a in v] for k, v in found.items()}


def _bench_record(ident: str, name: str, version: str) -> dict[str, object]:
    return {
        "id": ident,
        "modified": "2026-10-01T00:00:00Z",
        "affected": [{"package": {"ecosystem": "PyPI", "name": name}, "versions": [version]}],
    }
