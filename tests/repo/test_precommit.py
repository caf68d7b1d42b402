"""The pre-commit hooks of ``.pre-commit-hooks.yaml``, run by pre-commit itself: ``pre-commit
try-repo`` of a copy of this repository against a project locked from a fake index. pre-commit
builds the hooks' venv and pip-installs lockgen into it from that copy, offline: pip finds the
build backend and lockgen's dependencies only in a wheelhouse repacked from this test run's own
environment (tests/support/wheelhouse.py).

``lockgen-check`` passes on fresh locks, fails naming the stale cell after a template edit, and
is skipped for a commit that touches none of its files; ``lockgen-lock`` re-locks the stale cell
(and fails, as a hook that changed files does, so the new lock is reviewed and added), after which
``lockgen-check`` passes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import locked_versions, run_ok, write_project
from tests.support.wheelhouse import lockgen_wheelhouse, offline_env, source_copy

REPO = Path(__file__).resolve().parents[2]
HOOKS = REPO / ".pre-commit-hooks.yaml"
CELL = "linux-x86_64-cpu-py3.12"
PROJECT = """\
[tool.lockgen]
index-url = "{index}"

[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.12"]
"""

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    }  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout


def test_the_hooks_are_what_pre_commit_users_expect():
    hooks = {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text())}
    assert set(hooks) == {"lockgen-check", "lockgen-lock"}
    assert hooks["lockgen-check"]["entry"] == "lockgen check" and hooks["lockgen-lock"]["entry"] == "lockgen all"
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["pass_filenames"] is False
        files = re.compile(hook["files"])
        for path in ("lockgen.toml", "pyproject.toml", "templates/requirements.in.j2", f"locks/{CELL}.txt"):
            assert files.search(path), path
        for path in ("README.md", "src/app/templates.py", "docs/locks/x.md"):
            assert not files.search(path), path


@pytest.mark.slow
@pytest.mark.uv
@needs_git
def test_pre_commit_runs_the_hooks_offline_against_a_project(tmp_path, index):
    index.add("alpha", "1.0")
    index.add("beta", "1.0")
    index.publish()
    project = tmp_path / "project"
    write_project(project, "", {"requirements.in.j2": "alpha\n"})
    (project / "pyproject.toml").write_text(PROJECT.format(index=index.index_url()))
    (project / ".gitignore").write_text(".lockgen/\n")
    (project / "README.md").write_text("app\n")
    run_ok("all", "-C", str(project))
    git(project, "init", "-q", "-b", "main")
    git(project, "add", ".")
    git(project, "commit", "-qm", "project and locks")
    hooks = source_copy(REPO, tmp_path / "lockgen")  # what try-repo clones: a git repository
    git(hooks, "init", "-q", "-b", "main")
    git(hooks, "add", ".")
    git(hooks, "commit", "-qm", "lockgen")
    house = lockgen_wheelhouse(tmp_path / "wheelhouse")
    env = {**offline_env(house, tmp_path / "uv-cache"), "PRE_COMMIT_HOME": str(tmp_path / "pre-commit")}
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org", VIRTUALENV_NO_PERIODIC_UPDATE="1",
    )  # fmt: skip

    def pre_commit(hook: str, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), hook, "--color", "never", *args]
        return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, check=False, timeout=600)

    done = pre_commit("lockgen-check", "--all-files")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lockgen check" in done.stdout and "Passed" in done.stdout
    # a commit that touches none of the hook's files: skipped
    (project / "README.md").write_text("app, documented\n")
    git(project, "add", "README.md")
    done = pre_commit("lockgen-check")
    assert done.returncode == 0 and "Skipped" in done.stdout, done.stdout + done.stderr
    # a template edit: the lock is stale, the check fails and names the cell
    (project / "templates" / "requirements.in.j2").write_text("alpha\nbeta\n")
    git(project, "add", ".")
    done = pre_commit("lockgen-check")
    assert done.returncode == 1 and "Failed" in done.stdout and CELL in done.stdout, done.stdout + done.stderr
    # the lock hook re-locks it; pre-commit fails a hook that changed files, for review
    lock = project / "locks" / f"{CELL}.txt"
    done = pre_commit("lockgen-lock")
    assert done.returncode == 1 and "files were modified by this hook" in done.stdout, done.stdout + done.stderr
    assert locked_versions(lock.read_text()) == {"alpha": "1.0", "beta": "1.0"}
    git(project, "add", ".")
    assert pre_commit("lockgen-lock").returncode == 0
    done = pre_commit("lockgen-check")
    assert done.returncode == 0, done.stdout + done.stderr
