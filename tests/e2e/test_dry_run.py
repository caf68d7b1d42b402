"""``lockgen all --dry-run`` and ``lock --dry-run`` (issue 18, item 4): the change report of what would
change, resolved in lockgen's work folder; no file of the project touched; JSON too."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli, run_ok, write_project

CONFIG = """
    index-url = "{index}"
    [tool.lockgen.matrix]
    os = ["linux", "windows"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
LINUX, WINDOWS = "linux-x86_64-cpu-py3.12", "windows-x86_64-cpu-py3.12"


def project_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".lockgen" not in p.relative_to(root).parts
    }


def test_dry_run_resolves_in_the_work_folder_and_writes_nothing(tmp_path, index):
    index.add("alpha", "1.0")
    index.publish()
    root = write_project(tmp_path / "p", CONFIG.format(index=index.index_url()), {"requirements.in.j2": "alpha\n"})
    run_ok("all", "-C", str(root))
    index.add("alpha", "1.1")
    index.publish()
    template = root / "templates" / "requirements.in.j2"
    template.write_text("alpha==1.1\n")  # both cells stale
    before = project_files(root)
    run = run_cli("all", "--dry-run", "-C", str(root))
    assert run.code == 0, run.err
    assert "alpha 1.0 → 1.1 (2 of 2 cells)" in run.err
    assert f"--dry-run: would write locks/{LINUX}.txt" in run.err and "nothing written" in run.err
    assert project_files(root) == before
    assert not list((root / ".lockgen").glob("stage-*"))
    run = run_cli("lock", LINUX, "--dry-run", "--json", "-C", str(root))
    data = json.loads(run.out)
    assert data["dry_run"] is True
    assert f"locks/{LINUX}.txt" in data["would_write"] and f"locks/{WINDOWS}.txt" not in data["would_write"]
    assert [(c["package"], c["old"], c["new"], c["cells"]) for c in data["changes"]] == [
        ("alpha", "1.0", "1.1", [LINUX])
    ]
    assert project_files(root) == before
    assert run_cli("check", "-C", str(root)).code == 1  # still stale: nothing was written


def test_dry_run_of_a_new_project_writes_no_locks_folder(tmp_path, index):
    index.add("alpha", "1.0")
    index.publish()
    root = write_project(tmp_path / "p", CONFIG.format(index=index.index_url()), {"requirements.in.j2": "alpha\n"})
    run = run_cli("all", "--dry-run", "--json", "-C", str(root))
    assert run.code == 0, run.err
    assert not (root / "locks").exists()
    data = json.loads(run.out)
    assert "locks/manifest.json" in data["would_write"] and f"locks/{LINUX}.txt" in data["would_write"]
    assert {(c["kind"], c["count"]) for c in data["changes"]} == {("cell-added", 2)}


def test_a_failed_cell_in_a_dry_run_exits_1_and_writes_nothing(tmp_path, index):
    index.add("alpha", "1.0")
    index.publish()
    root = write_project(tmp_path / "p", CONFIG.format(index=index.index_url()), {"requirements.in.j2": "alpha==9\n"})
    run = run_cli("all", "--dry-run", "-C", str(root))
    assert run.code == 1
    assert not (root / "locks").exists()


def test_dry_run_refuses_a_shard(tmp_path):
    root = write_project(
        tmp_path / "p", CONFIG.format(index="https://example.org/simple"), {"requirements.in.j2": "x\n"}
    )
    run = run_cli("all", "--dry-run", "--shard", "1/2", "-C", str(root))
    assert run.code == 2 and "--dry-run does not take --shard" in run.err
