"""Editable, local-path and VCS requirements (issue 9, item 4; CASES C24): they lock, the lock model
keeps their names, a VCS branch is locked at its commit, and the recorded install commands work
from the project root with pip and uv (they go to the ``unhashed`` layer: no hash exists for them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockgen.locks.lock import Entry, LayerKind, Lock
from lockgen.resolve import uv
from tests.conftest import HOST_PYTHON, locked_versions, one_cell, run_cli
from tests.support.localprojects import git, git_repo, local_project

CELL = f"linux-x86_64-cpu-py{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def index(shared_fake_host):
    """six 1.16.0, idna 3.10 and 3.11, as a PEP 503 index."""
    host = shared_fake_host("index")
    for name, version in [("six", "1.16.0"), ("idna", "3.10"), ("idna", "3.11")]:
        host.add(name, version)
    host.publish()
    return host


def project(root: Path, index, requirements: str, extra: str = "") -> Path:
    """One cell for the running interpreter's Python (the install commands run with it)."""
    return one_cell(root, index.index_url(), requirements, python=HOST_PYTHON, extra=extra)


def lock(root: Path, layer: str | None = None) -> Lock:
    path = f"locks/{CELL}.txt" if layer is None else f"locks/{CELL}/{layer}.txt"
    parsed = Lock.read(root / path, path)
    assert parsed is not None, path
    return parsed


def test_c24_an_editable_local_project_locks_under_its_own_name(tmp_path, index):
    root = project(tmp_path / "p", index, "-e ./sub\nidna\n")
    local_project(root / "sub", "sub-pkg", "0.1.0", requires=("six",))  # folder and package names differ
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    main = lock(root)
    assert set(locked_versions(main.render())) == {"idna", "six"}  # its dependencies: hashed, in main
    unhashed = lock(root, "unhashed")
    assert unhashed.header.kind is LayerKind.UNHASHED
    (entry,) = unhashed.entries
    assert (entry.name, entry.url, entry.editable) == ("sub-pkg", "./sub", True)
    assert "-e file:./sub#egg=sub-pkg\n    # via templates/requirements.in.j2\n" in unhashed.render()
    pylock = (root / "locks" / CELL / "pylock.toml").read_text()
    assert 'name = "sub-pkg"\ndirectory = {path = "../../sub", editable = true}' in pylock
    assert run_cli("check", "-C", str(root)).code == 0


def test_local_paths_lock_relative_to_the_project_root(tmp_path, index):
    root = project(tmp_path / "p", index, "./sub2\nsub3-x @ file:./sub3\n")
    local_project(root / "sub2", "sub2-thing", "1.0")
    local_project(root / "sub3", "sub3-x", "2.0", requires=("idna<3.11",))
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    text = lock(root, "unhashed").render()
    assert "\nfile:./sub2#egg=sub2-thing\n" in text
    assert "\nfile:./sub3#egg=sub3-x\n" in text
    assert str(tmp_path) not in text
    assert str(tmp_path) not in (root / "locks" / CELL / "pylock.toml").read_text()
    assert locked_versions(lock(root).render()) == {"idna": "3.10"}


def test_a_git_branch_is_locked_at_its_commit(tmp_path, index):
    repo = git_repo(tmp_path / "repo", "git-pkg", "0.2.0", requires=("six",))
    commit = git(repo, "rev-parse", "feature")
    root = project(tmp_path / "p", index, f"git-pkg @ git+file://{repo}@feature\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    (entry,) = lock(root, "unhashed").entries
    assert (entry.name, entry.url) == ("git-pkg", f"git+file://{repo}@{commit}")
    assert f"git-pkg @ git+file://{repo}@{commit}\n" in lock(root, "unhashed").render()
    assert "six" in locked_versions(lock(root).render())


def test_a_git_project_that_must_be_built_locks_when_allow_build_names_it(tmp_path, index):
    """Its version is dynamic: uv must build it. Not refused for lacking a sha256 (no hash exists
    for a checkout); without allow-build the error says to add it."""
    repo = git_repo(tmp_path / "repo", "dyn-pkg", "0.3.0", dynamic_version=True)
    requirement = f"dyn-pkg @ git+file://{repo}@feature\n"
    root = project(tmp_path / "p", index, requirement)
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "dyn-pkg: no wheel for" in run.err
    assert 'allow-build = ["dyn-pkg"]' in run.err
    root = project(tmp_path / "q", index, requirement, extra='allow-build = ["dyn-pkg"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    (entry,) = lock(root, "unhashed").entries
    assert entry.url == f"git+file://{repo}@{git(repo, 'rev-parse', 'feature')}"
    assert 'name = "dyn-pkg"\nversion = "0.3.0"' in (root / "locks" / CELL / "pylock.toml").read_text()


def test_a_local_project_outside_the_project_folder_is_refused(tmp_path, index):
    local_project(tmp_path / "elsewhere", "far-pkg", "1.0")
    root = project(tmp_path / "p", index, "-e ../elsewhere\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 2
    assert "the local requirement '../elsewhere' is outside the project folder" in run.err


def test_a_changed_local_project_makes_the_cell_stale(tmp_path, index):
    root = project(tmp_path / "p", index, "-e ./sub\n")
    local_project(root / "sub", "sub-pkg", "0.1.0", requires=("idna<3.11",))
    assert run_cli("all", "-C", str(root)).code == 0
    assert locked_versions(lock(root).render()) == {"idna": "3.10"}
    assert "1 up to date" in run_cli("all", "-C", str(root)).err
    local_project(root / "sub", "sub-pkg", "0.1.0", requires=("idna>=3.11",))
    check = run_cli("check", "-C", str(root))
    assert check.code == 1
    assert "sub/pyproject.toml of the local project requirement sub changed (sha256 " in check.out
    assert run_cli("all", "-C", str(root)).code == 0  # the no-op stamp noticed the change too
    assert locked_versions(lock(root).render()) == {"idna": "3.11"}


@pytest.mark.parametrize(
    ("line", "name", "url", "editable"),
    [
        ("-e file:./sub#egg=sub-pkg", "sub-pkg", "./sub", True),
        ("file:./libs/sub2#egg=Sub2_Thing", "sub2-thing", "./libs/sub2", False),
        ("./wheels/localonly-1.0-py3-none-any.whl", "localonly", "./wheels/localonly-1.0-py3-none-any.whl", False),
        ("-e ./sub", "sub", "./sub", True),  # uv's own output (lockgen rewrites it from the resolution)
        ("git-pkg @ git+https://example.invalid/o/r@0123456789abcdef0123456789abcdef01234567", "git-pkg",
         "git+https://example.invalid/o/r@0123456789abcdef0123456789abcdef01234567", False),
    ],
    ids=["editable", "folder", "archive", "uv-editable", "vcs"],
)  # fmt: skip
def test_the_lock_model_reads_and_writes_each_form(line, name, url, editable):
    text = Lock(header=_header(), entries=(Entry(name="x"),)).render().replace("x==None", line)
    (entry,) = Lock.parse(text, "lock").entries
    assert (entry.name, entry.url, entry.editable) == (name, url, editable)
    if line != "-e ./sub" and "Sub2_" not in line:
        assert entry.requirement == line


def _header():
    from lockgen.locks.lock import Header

    return Header(
        cell="c", kind=LayerKind.UNHASHED, path="locks/c/unhashed.txt", target="t", uv="0", input_hash="sha256:0"
    )


@pytest.mark.slow
def test_the_recorded_install_commands_work_from_the_project_root(tmp_path, index):
    """main with hashes, then the unhashed layer without hashes and without dependencies, with pip
    and with uv, exactly as the manifest records them (index URL aside: the fake index)."""
    repo = git_repo(tmp_path / "repo", "git-pkg", "0.2.0")
    # file://localhost/…: pip 23.2's packaging refuses a PEP 508 URL without a host (a real remote has one)
    root = project(tmp_path / "p", index, f"-e ./sub\n./sub2\ngit-pkg @ git+file://localhost{repo}@feature\nidna\n")
    local_project(root / "sub", "sub-pkg", "0.1.0", requires=("six",))
    local_project(root / "sub2", "sub2-thing", "1.0")
    assert run_cli("all", "-C", str(root)).code == 0
    layers = json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]["layers"]
    assert [(layer["name"], layer["require_hashes"], layer["no_deps"]) for layer in layers] == [
        ("main", True, False), ("unhashed", False, True),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_")) or k == "UV_CACHE_DIR"}
    env.update(PIP_CONFIG_FILE=os.devnull, UV_PYTHON_DOWNLOADS="never", PIP_DISABLE_PIP_VERSION_CHECK="1")
    for tool in ("pip", "uv"):
        venv = tmp_path / f"venv-{tool}"
        subprocess.run(
            [uv.uv_binary(), "venv", str(venv), "--python", sys.executable, "--no-config", "-q"], check=True, env=env
        )
        python = venv / "bin" / "python"
        for layer in layers:
            argv = layer["commands"][tool]
            if tool == "pip":
                argv = [
                    sys.executable,
                    "-m",
                    "pip",
                    "--python",
                    str(python),
                    *argv[1:],
                    "--no-cache-dir",
                    "--no-build-isolation",
                ]
            else:
                argv = [uv.uv_binary(), *argv[1:], "--python", str(python), "--no-config"]
            done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root)
            assert done.returncode == 0, (tool, layer["name"], done.stderr)
        listed = subprocess.run([uv.uv_binary(), "pip", "list", "--python", str(python), "--format", "json"],
                                capture_output=True, text=True, env=env, check=True)  # fmt: skip
        installed = {p["name"]: p["version"] for p in json.loads(listed.stdout)}
        assert {"sub-pkg", "sub2-thing", "git-pkg", "six", "idna"} <= set(installed), (tool, installed)
