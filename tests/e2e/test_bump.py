"""``lockgen bump`` end to end on the fake index: the pin moves, only the cells whose inputs
changed are re-locked, and the change report says what moved (issue 6, item 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli, write_project

CONFIG = """
    index-url = "{index}"
    # alpha moves with releases
    pins = {{ alpha = "1.0" }}   # keep this comment
    [tool.lockgen.matrix]
    os = ["linux", "windows"]
    arch = ["x86_64", "aarch64"]
    backend = ["cpu"]
    python = ["3.12"]
    exclude = [{{ os = "windows", arch = "aarch64" }}]
"""
# Only the linux cells ask for alpha: bumping it changes their inputs, not the windows cell's.
REQUIREMENTS = """\
{% if os == "linux" %}alpha=={{ pins.alpha }}{% endif %}
beta
"""
WINDOWS = "windows-x86_64-cpu-py3.12"


def files(root: Path) -> dict[str, bytes]:
    folder = root / "locks"
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def locked(tmp_path, index) -> Path:
    for name in ("alpha", "beta"):
        index.add(name, "1.0")
    index.publish()
    root = write_project(
        tmp_path / "proj", CONFIG.format(index=index.index_url()), {"requirements.in.j2": REQUIREMENTS}
    )
    assert run_cli("all", "-C", str(root)).code == 0
    for version in ("1.1", "1.2"):
        index.add("alpha", version)
    index.add("beta", "1.1")  # a newer beta must not sneak in: the locked one is preferred
    index.publish()
    return root


def test_bump_relocks_only_the_cells_whose_inputs_changed(locked):
    config = locked / "pyproject.toml"
    text = config.read_text()
    before = files(locked)
    run = run_cli("bump", "alpha==1.1", "-C", str(locked))
    assert run.code == 0, run.err
    assert config.read_text() == text.replace('alpha = "1.0"', 'alpha = "1.1"')  # every other byte kept
    assert "pyproject.toml: tool.lockgen.pins.alpha: 1.0 -> 1.1" in run.err
    assert "alpha 1.0 → 1.1 (2 of 2 cells)" in run.err  # the change report, over the re-locked cells
    assert f"{WINDOWS}: up to date" in run.err
    assert "2 locked, 1 up to date" in run.err
    after = files(locked)
    assert after[f"{WINDOWS}.txt"] == before[f"{WINDOWS}.txt"]
    assert after[f"{WINDOWS}/pylock.toml"] == before[f"{WINDOWS}/pylock.toml"]
    for cell in ("linux-x86_64-cpu-py3.12", "linux-aarch64-cpu-py3.12"):
        lock = after[f"{cell}.txt"].decode()
        assert "alpha==1.1 \\" in lock
        assert "beta==1.0 \\" in lock
    assert run_cli("check", "-C", str(locked)).code == 0


def test_bump_no_lock_only_edits(locked):
    config = locked / "pyproject.toml"
    text = config.read_text()
    before = files(locked)
    run = run_cli("bump", "alpha==1.2", "--no-lock", "-C", str(locked))
    assert run.code == 0, run.err
    assert config.read_text() == text.replace('alpha = "1.0"', 'alpha = "1.2"')
    assert files(locked) == before  # nothing re-locked
    check = run_cli("check", "-C", str(locked))
    assert check.code == 1
    assert "linux-x86_64-cpu-py3.12: stale" in check.out
    assert f"{WINDOWS}: stale" not in check.out


def test_bump_of_a_name_pinned_nowhere(locked):
    before = (locked / "pyproject.toml").read_bytes()
    run = run_cli("bump", "gamma==2.0", "-C", str(locked))
    assert run.code == 2
    assert "gamma" in run.err
    assert "pins" in run.err  # says where pins live
    assert (locked / "pyproject.toml").read_bytes() == before


def everything(root: Path) -> dict[str, bytes]:
    """Every file of the project but lockgen's work folder (config, templates, locks, manifest)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".lockgen" not in p.relative_to(root).parts
    }


def test_a_failed_relock_writes_nothing(locked, monkeypatch):
    """alpha 9.9 is on no index: the linux cells fail, and every byte of the project is as it was:
    config, template, locks, manifest (issue 18, item 3); no undo hint is needed."""
    before = everything(locked)
    monkeypatch.chdir(locked)
    run = run_cli("bump", "alpha==9.9")
    assert run.code == 1
    assert everything(locked) == before
    assert (
        "bump: re-locking failed (see above); nothing written: pyproject.toml and the locks are as they were"
    ) in run.err
    assert "git checkout" not in run.err
    assert not list((locked / ".lockgen").glob("stage-*"))  # the stage is gone
    dry = run_cli("bump", "alpha==9.9", "--dry-run")  # a dry run of it says it would write nothing, not "would write"
    assert dry.code == 1 and everything(locked) == before
    assert "bump --dry-run: re-locking would fail (see above); the bump would write nothing" in dry.err
    assert "would write pyproject.toml" not in dry.err


def test_an_interrupted_relock_writes_nothing(locked, monkeypatch):
    from lockgen.run import lock as pipeline

    before = everything(locked)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "_resolve_all", interrupted)
    run = run_cli("bump", "alpha==1.1", "-C", str(locked))
    assert run.code == 130
    assert everything(locked) == before
    assert not list((locked / ".lockgen").glob("stage-*"))


def test_a_commit_killed_half_way_is_finished_by_the_next_run(locked, monkeypatch):
    """The config, template and locks are one journaled unit: a kill between two renames leaves
    the journal, and the next run finishes every file of it."""
    import os

    from lockgen.locks import store

    rename = os.replace
    calls = []

    def killed_after_one(src, dst):
        if str(src).endswith(".tmp") and ".lockgen" not in str(dst):
            calls.append(dst)
            if len(calls) == 2:
                raise KeyboardInterrupt
        rename(src, dst)

    monkeypatch.setattr(store.os, "replace", killed_after_one)
    assert run_cli("bump", "alpha==1.1", "-C", str(locked)).code == 130
    monkeypatch.setattr(store.os, "replace", rename)
    assert list((locked / ".lockgen" / "journal").glob("bump.json"))
    run = run_cli("all", "-C", str(locked))
    assert run.code == 0, run.err
    assert not list((locked / ".lockgen" / "journal").glob("*.json"))
    assert 'alpha = "1.1"' in (locked / "pyproject.toml").read_text()
    assert "alpha==1.1 \\" in (locked / "locks" / "linux-x86_64-cpu-py3.12.txt").read_text()
    assert run_cli("check", "-C", str(locked)).code == 0


def test_dry_run_touches_no_file_and_says_what_would_change(locked):
    before = everything(locked)
    run = run_cli("bump", "alpha==1.1", "--dry-run", "-C", str(locked))
    assert run.code == 0, run.err
    assert everything(locked) == before
    assert "alpha 1.0 → 1.1 (2 of 2 cells)" in run.err
    assert "bump --dry-run: would write pyproject.toml, locks/linux-" in run.err and "nothing written" in run.err
    run = run_cli("bump", "alpha==1.1", "--dry-run", "--json", "-C", str(locked))
    data = json.loads(run.out)
    assert data["dry_run"] is True and data["written"] == []
    assert data["would_write"][0] == "pyproject.toml" and "locks/linux-x86_64-cpu-py3.12.txt" in data["would_write"]
    assert f"locks/{WINDOWS}.txt" not in data["would_write"]
    assert [(p["place"], p["old"], p["new"], p["state"]) for p in data["pins"]] == [
        ("pyproject.toml: tool.lockgen.pins.alpha", "1.0", "1.1", "moved")
    ]
    assert {c["package"] for c in data["run"]["changes"]} == {"alpha"}
    assert everything(locked) == before


def test_bump_json(locked):
    run = run_cli("bump", "alpha==1.1", "--json", "-C", str(locked))
    assert run.code == 0, run.err
    data = json.loads(run.out)
    assert data["written"][:1] == ["pyproject.toml"] and "locks/linux-x86_64-cpu-py3.12.txt" in data["written"]
    assert data["run"]["exit_code"] == 0


FLOOR = """
    index-url = "{index}"
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
LINUX = "linux-x86_64-cpu-py3.12"


@pytest.fixture
def floored(tmp_path, index) -> Path:
    """numpy asked for as a floor, ``numpy>=1.26``, locked at the newest: 2.4.6."""
    for version in ("1.26.0", "2.1.0", "2.4.6"):
        index.add("numpy", version)
    index.publish()
    root = write_project(
        tmp_path / "proj", FLOOR.format(index=index.index_url()), {"requirements.in.j2": "numpy>=1.26\n"}
    )
    assert run_cli("all", "-C", str(root)).code == 0
    return root


def test_a_floor_the_locks_already_satisfy_is_not_moved_and_bump_says_why(floored):
    """``bump numpy==2.1.0`` on ``numpy>=1.26`` locked at 2.4.6: moving the floor would lock
    nothing else; bump refuses (exit 2), saying what the lock holds and how to lock 2.1.0."""
    template = floored / "templates" / "requirements.in.j2"
    before = files(floored)
    run = run_cli("bump", "numpy==2.1.0", "-C", str(floored))
    assert run.code == 2
    assert (
        "numpy: no pin of it moves: templates/requirements.in.j2:1 'numpy>=1.26' is a range that allows 2.1.0, and its "
        "cells lock 2.4.6, so no lock would change; to lock exactly 2.1.0, write numpy==2.1.0 there (bump then moves it)"
    ) in run.err
    assert "nothing was written" in run.err
    assert template.read_text() == "numpy>=1.26\n" and files(floored) == before
    template.write_text("numpy==2.4.6\n")  # as the refusal says: a pin, which bump moves
    run_cli("all", "-C", str(floored))
    run = run_cli("bump", "numpy==2.1.0", "-C", str(floored))
    assert run.code == 0, run.err
    assert "numpy 2.4.6 → 2.1.0 (downgrade) (1 of 1 cell)" in run.err


def test_a_floor_below_a_newer_version_moves_up_and_the_lock_with_it(floored, index):
    index.add("numpy", "2.5.0")
    index.publish()
    run = run_cli("bump", "numpy==2.5.0", "-C", str(floored))
    assert run.code == 0, run.err
    assert (floored / "templates" / "requirements.in.j2").read_text() == "numpy>=2.5.0\n"
    assert (
        "templates/requirements.in.j2:1: numpy >=1.26 -> >=2.5.0 (a floor: the re-lock takes at least 2.5.0; locked "
        "now 2.4.6)"
    ) in run.err
    assert "numpy 2.4.6 → 2.5.0 (1 of 1 cell)" in run.err
    assert "numpy==2.5.0" in (floored / "locks" / f"{LINUX}.txt").read_text()


def test_a_floor_at_or_above_the_version_is_refused(floored):
    run = run_cli("bump", "numpy==1.26.0", "-C", str(floored))  # the floor itself: the lock holds 2.4.6 still
    assert run.code == 2
    assert "'numpy>=1.26' is a range that allows 1.26.0, and its cells lock 2.4.6, so no lock would change" in run.err
    run = run_cli("bump", "numpy==1.0", "-C", str(floored))
    assert run.code == 2
    assert (
        "templates/requirements.in.j2:1: 'numpy>=1.26' is a floor above 1.0: moving it down would lock nothing lower "
        "(the resolution takes the newest version it allows); to lock 1.0, write numpy==1.0 there by hand"
    ) in run.err
