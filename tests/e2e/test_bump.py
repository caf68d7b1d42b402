"""``lockgen bump`` end to end on the fake index: the pin moves, only the cells whose inputs
changed are re-locked, and the change report says what moved (issue 6, item 8)."""

from __future__ import annotations

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


def test_a_failed_relock_keeps_the_edit_and_says_how_to_undo_it(locked, monkeypatch):
    """alpha 9.9 is on no index: the linux cells fail, the config keeps the new pin, and bump
    names the file and the git command that undoes the edit."""
    config = locked / "pyproject.toml"
    text = config.read_text()
    monkeypatch.chdir(locked)
    run = run_cli("bump", "alpha==9.9")
    assert run.code == 1
    assert config.read_text() == text.replace('alpha = "1.0"', 'alpha = "9.9"')  # kept
    assert (
        "lockgen bump: the pin edits are kept in pyproject.toml although re-locking did not succeed; fix what is "
        "reported above and run `lockgen all`, or undo the edits: git checkout -- pyproject.toml"
    ) in run.err
    assert "git checkout" not in run_cli("bump", "alpha==1.0").err  # a successful re-lock says nothing of it
