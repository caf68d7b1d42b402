"""CASES C17: a checkout with CRLF line endings (Windows, ``core.autocrlf=true``), made by real git.

Right: ``lockgen check`` there says up to date (line endings are not a change); ``lockgen all``
there rewrites nothing it need not, and what it writes, committed, passes ``check`` in an LF
checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli, write_project

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

CONFIG = """
    index-url = "{index}"
    pins = {{ alpha = "{alpha}" }}
    optional = ["extra"]
    [tool.lockgen.matrix]
    os = ["linux", "windows"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_SYSTEM=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"]
    run = subprocess.run(["git", *ident, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return run.stdout


def locked_files(root: Path) -> dict[str, bytes]:
    folder = root / "locks"
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def origin(tmp_path, index) -> Path:
    """A locked project (two cells, an optional layer) committed to a git repository with LF."""
    for name in ("alpha", "beta", "extra"):
        index.add(name, "1.0")
    index.publish()
    config = CONFIG.format(index=index.index_url(), alpha="1.0")
    root = write_project(tmp_path / "origin", config, {"requirements.in.j2": "alpha=={{ pins.alpha }}\nbeta\n"})
    assert run_cli("all", "-C", str(root)).code == 0
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "locked")
    return root


def clone(origin: Path, where: Path, autocrlf: bool) -> Path:
    git(origin.parent, "-c", f"core.autocrlf={'true' if autocrlf else 'false'}", "clone", "-q", str(origin), str(where))
    if autocrlf:
        git(where, "config", "core.autocrlf", "true")
    return where


def test_a_crlf_checkout_is_up_to_date_and_a_run_there_rewrites_nothing(tmp_path, origin):
    crlf = clone(origin, tmp_path / "windows", autocrlf=True)
    before = locked_files(crlf)
    assert len(before) == 2 * 3 + 2  # per cell: lock, pylock.toml, layer; the manifest, differences.json
    assert all(b"\r\n" in data for data in before.values())  # git converted every file
    run = run_cli("check", "-C", str(crlf))
    assert run.code == 0, run.out
    assert "all locks are up to date" in run.out
    for args in (("all",), ("all", "--force")):  # the no-op path, then a full re-resolution
        run = run_cli(*args, "-C", str(crlf))
        assert run.code == 0, run.err
        assert locked_files(crlf) == before, args  # nothing rewritten, not even to LF
    assert git(crlf, "status", "--porcelain", "--", "locks") == ""


def test_a_run_on_a_crlf_checkout_keeps_lf_checkouts_up_to_date(tmp_path, origin, index):
    crlf = clone(origin, tmp_path / "windows", autocrlf=True)
    index.add("alpha", "1.1")
    index.publish()
    config = crlf / "pyproject.toml"
    config.write_bytes(config.read_bytes().replace(b'alpha = "1.0"', b'alpha = "1.1"'))
    run = run_cli("all", "-C", str(crlf))
    assert run.code == 0, run.err
    assert "alpha 1.0 → 1.1" in run.err
    assert run_cli("check", "-C", str(crlf)).code == 0  # a mix of CRLF (untouched) and LF (written) files
    git(crlf, "commit", "-qam", "bump alpha")  # autocrlf: the commit stores LF
    git(crlf, "push", "-q", "origin", "HEAD:refs/heads/bumped")
    lf = clone(origin, tmp_path / "linux", autocrlf=False)
    git(lf, "checkout", "-q", "bumped")
    assert not any(b"\r\n" in data for data in locked_files(lf).values())
    run = run_cli("check", "-C", str(lf))
    assert run.code == 0, run.out
    run = run_cli("all", "-C", str(lf))  # and the LF checkout has nothing to re-lock
    assert run.code == 0, run.err
    assert git(lf, "status", "--porcelain") == ""
