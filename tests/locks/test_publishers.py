"""Publisher identities (PEP 740): read from an index's provenance objects when a cell is locked,
recorded in its pylock.toml (PEP 751 attestation-identities) and the manifest, compared by
``lockgen diff``, verified by ``check --online --attestations``."""

from __future__ import annotations

import json
import shutil

import pytest
from packaging.pylock import Pylock

from lockgen.locks import pylockfile
from lockgen.locks.diff import Kind, diff, group
from lockgen.locks.diffformat import render_text
from lockgen.locks.lockset import LockSet
from lockgen.locks.publishers import Identity, changes, of_package, with_identities
from lockgen.plan.mirror import Mirrors
from lockgen.resolve.provenance import Provenance, identities_of
from tests.conftest import run_cli, run_ok
from tests.support.rotworld import (
    CELLS,
    GITHUB,
    RECORDED,
    RECORDED_FILE,
    RotHost,
    json_pages,
    locked_world,
    provenance_object,
)

GITLAB = {"kind": "GitLab", "repository": "example/beta", "workflow_filepath": ".gitlab-ci.yml"}


def _pylock(tables=None) -> Pylock:
    package = {"name": "alpha", "version": "1.0", "wheels": [
        {"name": "alpha-1.0-py3-none-any.whl", "url": "https://files.example/alpha-1.0-py3-none-any.whl",
         "hashes": {"sha256": "00" * 32}}]}  # fmt: skip
    if tables is not None:
        package["attestation-identities"] = tables
    return Pylock.from_dict({"lock-version": "1.0", "created-by": "lockgen", "packages": [package]})


def test_an_identity_is_the_publishers_string_fields_sorted():
    identity = Identity.from_mapping(
        {**GITHUB, "claims": {"sha": "abc"}, "environment": None} | {"environment": "pypi"}
    )
    assert identity is not None
    assert identity.to_dict() == GITHUB
    assert identity.describe() == "GitHub example/alpha workflow=release.yml environment=pypi"
    assert Identity.from_mapping({"repository": "x"}) is None  # PEP 751: kind is required


def test_identities_round_trip_through_pylock_toml_and_packaging():
    ids = [Identity.from_mapping(GITLAB), Identity.from_mapping(GITHUB)]
    package = with_identities(_pylock().packages[0], [i for i in ids if i])
    text = pylockfile.dumps(Pylock(lock_version=_pylock().lock_version, created_by="lockgen", packages=[package]))
    assert 'attestation-identities = [{kind = "GitHub", environment = "pypi"' in text
    again = pylockfile.loads(text, "pylock.toml")  # packaging.pylock validates it (kind required)
    assert of_package(again.packages[0]) == tuple(sorted(i for i in ids if i))


def test_identities_of_a_provenance_object():
    assert identities_of(json.loads(RECORDED.read_text())) == (
        Identity("Google", (("email", "919436158236-compute@developer.gserviceaccount.com"),)),
    )
    assert identities_of({"attestation_bundles": [{"attestations": []}]}) == ()
    assert identities_of({}) == ()


def test_a_changed_or_vanished_publisher_is_a_change_a_new_one_is_not():
    before = _pylock([GITHUB])
    assert changes(before, _pylock([GITHUB])) == []
    assert changes(before, _pylock([{**GITHUB, "workflow": "publish.yml"}])) == [
        ("alpha", "GitHub example/alpha workflow=release.yml environment=pypi",
         "GitHub example/alpha workflow=publish.yml environment=pypi"),
    ]  # fmt: skip
    assert changes(before, _pylock()) == [("alpha", "GitHub example/alpha workflow=release.yml environment=pypi", "")]
    assert changes(_pylock(), before) == []  # a first attestation is no change of publisher


# -- the provenance step, against a fake integrity endpoint ----------------------------------------


@pytest.fixture
def pypi(tmp_path):
    host = RotHost(tmp_path / "pypi")
    from tests.support.rotworld import publish

    publish(host)
    yield host
    host.stop()


def _mirrors(pypi) -> Mirrors:
    return Mirrors(
        {"https://pypi.org/simple": f"{pypi.url}/pypi/simple", "https://files.pythonhosted.org": f"{pypi.url}/files"}
    )


def _package(pypi, name: str):
    path = next(e.path for e in pypi.sources["pypi"] if e.path.name.startswith(f"{name}-"))
    import hashlib

    return _pylock().packages[0].__class__(
        name=name, version=_pylock().packages[0].version,
        wheels=[_pylock().packages[0].wheels[0].__class__(
            name=path.name, url=f"https://files.pythonhosted.org/{path.name}",
            hashes={"sha256": hashlib.sha256(path.read_bytes()).hexdigest()})],
    )  # fmt: skip


@pytest.mark.uv
def test_publishers_come_from_the_pages_provenance_urls_and_are_cached_by_sha256(pypi, tmp_path):
    json_pages(pypi, publishers={"alpha-1.0-py3-none-any.whl": GITHUB})
    service = Provenance(tmp_path, _mirrors(pypi))
    assert service.package(_package(pypi, "alpha"), ["https://pypi.org/simple"]) == (Identity.from_mapping(GITHUB),)
    assert service.package(_package(pypi, "beta"), ["https://pypi.org/simple"]) == ()
    assert any("/integrity/alpha/1.0/alpha-1.0-py3-none-any.whl/provenance" in line for line in pypi.log)
    service.close()
    pypi.log.clear()
    again = Provenance(tmp_path, _mirrors(pypi))  # another run: every verdict is in .lockgen/provenance/
    assert again.package(_package(pypi, "alpha"), ["https://pypi.org/simple"]) == (Identity.from_mapping(GITHUB),)
    assert again.package(_package(pypi, "beta"), ["https://pypi.org/simple"]) == ()
    assert pypi.log == []
    again.close()


@pytest.mark.uv
def test_an_index_that_serves_no_provenance_is_asked_once_per_run(pypi, tmp_path):
    json_pages(pypi, api_version="1.1")  # no provenance keys, an older API: a mirror, a plain index
    service = Provenance(tmp_path, _mirrors(pypi))
    for name in ("alpha", "beta", "gamma"):
        assert service.package(_package(pypi, name), ["https://pypi.org/simple"]) == ()
    assert [line for line in pypi.log if "/simple/" in line] == ["GET /pypi/simple/alpha/"]  # the probe, once
    assert not (tmp_path / ".lockgen" / "provenance").exists()  # nothing cached: it may serve them one day
    service.close()


def test_lockgen_all_records_publishers_in_pylock_and_manifest_and_diff_flags_changes(pypi, tmp_path, monkeypatch):
    json_pages(pypi, publishers={"alpha-1.0-py3-none-any.whl": GITHUB, "beta-2.0-py3-none-any.whl": GITLAB})
    world = locked_world(tmp_path / "proj", pypi, monkeypatch)
    for cell in CELLS:
        text = (world.root / f"locks/{cell}/pylock.toml").read_text()
        assert 'attestation-identities = [{kind = "GitHub", environment = "pypi", repository = "example/alpha"' in text
    manifest = json.loads((world.root / "locks/manifest.json").read_text())
    assert manifest["cells"][CELLS[0]]["publishers"] == {"alpha": [GITHUB], "beta": [GITLAB]}
    assert run_ok("check").code == 0
    old = tmp_path / "old"
    shutil.copytree(world.root / "locks", old)
    # alpha is now published by another workflow, beta without attestations: re-lock
    json_pages(pypi, publishers={"alpha-1.0-py3-none-any.whl": {**GITHUB, "workflow": "publish.yml"}})
    shutil.rmtree(world.root / ".lockgen" / "provenance")
    run_ok("all", "--force")
    groups = group(diff(LockSet.from_folder(old), LockSet.from_folder(world.root / "locks")))
    flagged = [(g.package, g.kind, g.cells, g.flagged) for g in groups if g.kind is Kind.PUBLISHER]
    assert flagged == [("alpha", Kind.PUBLISHER, CELLS, True), ("beta", Kind.PUBLISHER, CELLS, True)]
    text = render_text(groups)
    assert "publisher GitHub example/alpha workflow=release.yml environment=pypi → GitHub example/alpha" in text
    assert "beta publisher GitLab example/beta workflow_filepath=.gitlab-ci.yml is gone (no attestation now)" in text
    shown = run_cli("diff", str(old), "locks")
    assert shown.code == 0 and "alpha publisher GitHub" in shown.out


# -- verification (the attestations extra) ----------------------------------------------------------


def test_the_recorded_provenance_verifies_offline_for_its_file_only():
    pytest.importorskip("pypi_attestations")
    from lockgen.rot.attest import verify

    data = json.loads(RECORDED.read_text())
    name, digest = RECORDED_FILE
    assert verify(name, digest, data) == []  # Sigstore: certificate chain, log entry, identity, subject
    wrong = verify(name, "0" * 64, data)
    assert len(wrong) == 1 and "does not verify" in wrong[0] and "digest" in wrong[0]
    other = provenance_object({"kind": "Google", "email": "someone-else@example.org"})
    assert "does not verify" in verify(name, digest, other)[0]  # the certificate is not that identity's
    assert verify(name, digest, {"attestation_bundles": "x"})[0].startswith("not a PEP 740 provenance object")


def test_check_online_attestations_reports_what_does_not_verify(pypi, tmp_path, monkeypatch):
    pytest.importorskip("pypi_attestations")
    json_pages(pypi, publishers={"alpha-1.0-py3-none-any.whl": GITHUB})
    locked_world(tmp_path / "proj", pypi, monkeypatch)
    done = run_cli("check", "--online", "--attestations", "--json")
    assert done.code == 1, done.err
    report = json.loads(done.out)
    (finding,) = [f for f in report["findings"] if f["kind"] == "attestation"]
    assert finding["package"] == "alpha" and "does not verify" in finding["detail"]
    assert finding["where"] == list(CELLS)
    assert report["attestations"] == 1  # one provenance object, checked once for both cells
    json_pages(pypi)  # the index serves no provenance for alpha any more
    done = run_cli("check", "--online", "--attestations")
    assert done.code == 1
    assert (
        "the lock records GitHub example/alpha workflow=release.yml environment=pypi; the index serves no provenance"
        in done.out
    )


def test_attestations_only_with_online(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lockgen.toml").write_text(
        '[matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n'
    )
    done = cli("check", "--attestations")
    assert done.code == 2 and "--attestations goes with --online" in done.err
