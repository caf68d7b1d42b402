"""The manifest describes the locks, not the last run (issue 16, item 5): a cell whose intact
lock is current stays installable after a failed re-resolve; ``failed`` is for cells with no valid
lock; ``check`` verifies every manifest entry against its lock."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import run_cli
from tests.faulthost import FaultHost
from tests.test_trust import CELL, ONE, files, manifest, project, publish

pytestmark = pytest.mark.uv

TWO = ONE.replace('["3.12"]', '["3.12", "3.13"]')


def test_a_failed_forced_run_over_current_locks_leaves_them_installable(tmp_path):
    host = FaultHost(tmp_path / "pypi")
    try:
        index = publish(host, "alpha==1.0")
        root = project(tmp_path / "p", index, "alpha\n", matrix=TWO)
        assert run_cli("all", "-C", str(root)).code == 0
        before = files(root)
        shutil.copytree(root / "locks", tmp_path / "committed")
    finally:
        host.stop()  # a network blip: the index is gone for the forced run
    run = run_cli("all", "--force", "-C", str(root))
    assert run.code == 1  # the run says what failed
    assert "error: all 2 cells: " in run.err and "is unreachable" in run.err
    assert "failed to re-resolve, but their locks are current and intact" in run.err
    assert files(root) == before  # the manifest included: both cells are still locked
    assert {e["status"] for e in manifest(root).values()} == {"locked"}
    assert run_cli("check", "-C", str(root)).code == 0
    diff = run_cli("diff", str(tmp_path / "committed"), str(root / "locks"), "--exit-code", "-C", str(root))
    assert diff.code == 0, diff.out + diff.err


def test_a_stale_lock_whose_re_resolve_failed_is_failed(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0")
    root = project(tmp_path / "p", index, "alpha\n")
    assert run_cli("all", "-C", str(root)).code == 0
    (root / "templates" / "requirements.in.j2").write_text("alpha\nnot-there\n")
    assert run_cli("all", "-C", str(root)).code == 1
    assert manifest(root)[CELL]["status"] == "failed"
    assert run_cli("check", "-C", str(root)).code == 1


def test_check_refuses_a_manifest_that_says_failed_over_a_current_lock(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0")
    root = project(tmp_path / "p", index, "alpha\n", matrix=TWO)
    assert run_cli("all", "-C", str(root)).code == 0
    path = root / "locks" / "manifest.json"
    data = json.loads(path.read_text())
    data["cells"][CELL].update(status="failed", reason="a network blip")
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    check = run_cli("check", "-C", str(root))
    assert check.code == 1
    assert f"locks/manifest.json records {CELL} as failed, but its lock is current and intact" in check.out + check.err
    assert run_cli("all", "-C", str(root)).code == 0  # not a no-op: the manifest is rewritten
    assert manifest(root)[CELL]["status"] == "locked"
    assert run_cli("check", "-C", str(root)).code == 0
