"""No command prints or stores a credential (issue 15, item 1): every lockgen command runs with
``-v`` on a project whose every URL field carries a login (inline, ``${VAR}``, netrc, a mirror's
own), and its stdout, stderr and every file it leaves (locks, manifest, ``.lockgen/`` with the
install copies, the venv's install record) are searched for every planted secret. The install
commands really authenticate: the hosts refuse any request without the login."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_credentials import FLAT_PASSWORD, NETRC_PASSWORD, SECRETS, WRONG, leaks, project, run, world

pytestmark = [
    pytest.mark.uv,
    pytest.mark.skipif(sys.platform != "linux", reason="installs the linux cell into this machine"),
]
__all__ = ["world"]  # the fixture, imported for the tests below
ALL_SECRETS = (*SECRETS.values(), FLAT_PASSWORD, NETRC_PASSWORD, WRONG)
CELL = "linux-x86_64-cpu-py3.12"


def _everywhere(root: Path, venv: Path | None, *outputs: str) -> list[str]:
    """:func:`tests.test_credentials.leaks` plus the venv's own files lockgen writes."""
    found = leaks(root, *outputs, secrets=ALL_SECRETS)
    if venv is not None and venv.is_dir():
        for path in [venv / "lockgen-install.json", venv / "lockgen-install.lock"]:
            if path.is_file():
                found += [f"{path.name}: {s}" for s in ALL_SECRETS if s in path.read_text(errors="replace")]
    return found


def _python312_folder() -> str | None:
    """The folder of a CPython 3.12 (the cell's Python), for PATH: pyenv's shims on PATH hide
    it from uv's discovery, its versions folder does not."""
    found = sorted(Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")).glob("versions/3.12*/bin/python3.12"))
    folder = str(found[-1].parent) if found else (str(Path(shutil.which("python3.12") or "").parent) or None)
    return folder if folder and Path(folder, "python3.12").exists() else None


@pytest.mark.slow
def test_no_command_shows_or_stores_a_secret(tmp_path, world):
    folder = _python312_folder()
    if folder is None:
        pytest.skip("no CPython 3.12 here (the cell's Python)")
    path = {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}
    root = project(tmp_path / "p", world)
    (root / "lockgen.toml").write_text((root / "lockgen.toml").read_text() + '\n[detect]\nno-gpu = "cpu"\n')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    done = run(root, world, "all")
    assert done.returncode == 0, done.stderr
    assert _everywhere(root, None, done.stdout, done.stderr) == []
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "locks"], check=True
    )
    venv = tmp_path / "venv"
    shard = tmp_path / "shard"
    shutil.copytree(root, shard, ignore=shutil.ignore_patterns(".lockgen", ".git"))
    assert run(shard, world, "all", "--shard", "1/1", "--force").returncode == 0
    commands = [
        ("lock", CELL, "--force"),
        ("matrix", "--json"),
        ("check",),
        ("detect", "--os", "linux", "--arch", "x86_64", "--gpu", "none", "--cpu", "--python", "3.12"),
        ("diff", "HEAD"),
        ("diff", str(shard / "locks"), "locks"),
        ("bump", "torch==2.7.0", "--no-lock"),
        ("merge", str(shard / "locks")),
        ("install", CELL, "--venv", str(venv), "--dry-run"),
        ("install", CELL, "--venv", str(venv)),
        ("install", CELL, "--venv", str(venv)),  # up to date
        ("install", CELL, "--venv", str(venv), "--installer", "pip", "--reinstall"),
    ]
    for args in commands:
        done = run(root, world, *args, **path)
        assert done.returncode in (0, 1), f"lockgen {' '.join(args)}: {done.stderr}"
        assert _everywhere(root, venv, done.stdout, done.stderr) == [], f"lockgen {' '.join(args)}"
    assert "run in" in done.stderr  # -v showed the installers' command lines ...
    assert "verified:" in done.stdout  # ... and they authenticated

    # a refused login: the installer's error, repeated by lockgen, holds no secret either
    refused = run(root, world, "install", CELL, "--venv", str(tmp_path / "v2"), GH_TOKEN=WRONG, **path)
    assert refused.returncode == 1, refused.stderr
    assert _everywhere(root, tmp_path / "v2", refused.stdout, refused.stderr) == [], [
        line for line in refused.stderr.splitlines() if WRONG in line
    ]
    bad = run(root, world, "install", CELL, "--venv", str(tmp_path / "v3"), "--index-url", f"http://u:{WRONG}@")
    assert bad.returncode == 2
    assert _everywhere(root, None, bad.stdout, bad.stderr) == []
