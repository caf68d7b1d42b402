"""Commands that read a project have no side effects (issue 11, item 4).

``lockgen check``, ``matrix``, ``detect`` and ``diff`` run on a locked project (over a fake index,
git-tracked) and afterwards every file and folder under the project, ``.lockgen/`` and ``.git/``
included, is as it was: the same bytes, the same modification time, nothing added or removed.
Three states of the project: just locked, a fresh clone (no ``.lockgen/`` work folder, as in CI),
and stale (a template edited since the lock run, so no memo can answer).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import assert_locked, run_cli, run_ok, write_project

CELLS = ("linux-x86_64-cpu-py3.12", "windows-x86_64-cpu-py3.12")


@pytest.fixture(scope="module")
def locked_once(shared_fake_host, tmp_path_factory) -> Path:
    """A two-cell project with ``[detect]`` rules over a fake index, locked once for the module."""
    index = shared_fake_host("index")
    index.add("app", "1.0", requires=("helper",))
    index.add("helper", "1.0")
    index.publish()
    config = f"""
        index-url = "{index.index_url()}"
        [tool.lockgen.matrix]
        os = ["linux", "windows"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
        [tool.lockgen.detect]
        no-gpu = {{ linux = "cpu", windows = "cpu" }}
    """
    root = write_project(tmp_path_factory.mktemp("readonly") / "proj", config, {"requirements.in.j2": "app\n"})
    run_ok("all", "-C", str(root))
    assert_locked(root, CELLS)
    assert (root / ".lockgen" / "stamp.json").is_file()  # the lock run left its memo: readers may use it
    return root


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent)}
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"]
    subprocess.run(["git", *identity, *args], cwd=root, env=env, check=True, capture_output=True)


def _just_locked(root: Path) -> None:
    """The project as the lock run left it."""


def _fresh_clone(root: Path) -> None:
    """A clone in CI: no work folder, no memo."""
    shutil.rmtree(root / ".lockgen")


def _stale(root: Path) -> None:
    """A template edited and committed after the lock run: the memo no longer matches."""
    (root / "templates" / "requirements.in.j2").write_text("app\nhelper\n")
    _git(root, "commit", "-q", "-am", "add helper")


STATES: dict[str, Callable[[Path], None]] = {"locked": _just_locked, "fresh-clone": _fresh_clone, "stale": _stale}

#: (command line, the exit code in a locked or fresh project, in a stale one)
COMMANDS = {
    "check": (("check",), 0, 1),
    "check-json": (("check", "--json"), 0, 1),
    "matrix-json": (("matrix", "--json"), 0, 0),
    "detect": (("detect", "--cpu", "--os", "linux", "--arch", "x86_64", "--gpu", "none", "--python", "3.12"), 0, 0),
    "diff": (("diff",), 0, 0),
    "diff-json": (("diff", "HEAD", "--format", "json"), 0, 0),
}


def snapshot(root: Path) -> dict[str, tuple[str, int, bytes | None]]:
    """Every path under ``root`` (folders too): its kind, modification time (ns) and bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        kind = "dir" if path.is_dir() and not path.is_symlink() else "file"
        found[path.relative_to(root).as_posix()] = (
            kind,
            stat.st_mtime_ns,
            path.read_bytes() if kind == "file" else None,
        )
    return found


@pytest.mark.parametrize("state", list(STATES), ids=list(STATES))
@pytest.mark.parametrize("command", list(COMMANDS), ids=list(COMMANDS))
def test_a_reader_changes_nothing(locked_once, tmp_path, state, command):
    root = Path(shutil.copytree(locked_once, tmp_path / "proj", symlinks=True))
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "locked")
    STATES[state](root)
    before = snapshot(root)
    argv, code, stale_code = COMMANDS[command]
    run = run_cli(*argv, "-C", str(root))
    assert run.code == (stale_code if state == "stale" else code), run.err
    after = snapshot(root)
    added, removed = sorted(after.keys() - before.keys()), sorted(before.keys() - after.keys())
    changed = sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
    assert (added, removed, changed) == ([], [], []), f"lockgen {' '.join(argv)} changed the project"
