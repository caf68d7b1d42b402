"""The vendored selector on every CPython it promises (3.8 to 3.13, issue 19 item 1): the file
copied as ``cellselect.py`` (and under its old name, ``select.py``) and run as a script, against the committed manifest and with fake
``nvidia-smi``/``rocminfo`` programs that print the recorded samples. An interpreter that is not
installed (pyenv's ``versions/3.X.*``) is skipped, saying which."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.select_samples import DATA, MODULE

pytestmark = pytest.mark.slow
REPO = Path(__file__).parents[2]
VERSIONS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]


def interpreter(version: str) -> Path | None:
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    if shutil.which("pyenv"):
        done = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
        root = done.stdout.strip() or root
    found = sorted(Path(root, "versions").glob(f"{version}.*/bin/python3"))
    return found[-1] if found else None


def fake_programs(folder: Path, banner: str, query: str, rocminfo: str | None) -> dict[str, str]:
    """A PATH with ``nvidia-smi`` (banner, or the query with --query-gpu) and ``rocminfo``."""
    folder.mkdir()
    (folder / "nvidia-smi").write_text(
        f'#!/bin/sh\ncase "$1" in --query-gpu*) cat "{DATA / "nvidia-smi" / query}";; '
        f'*) cat "{DATA / "nvidia-smi" / banner}";; esac\n'
    )
    if rocminfo:
        (folder / "rocminfo").write_text(f'#!/bin/sh\ncat "{DATA / "rocminfo" / rocminfo}"\n')
    for program in folder.iterdir():
        program.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}/usr/bin:/bin", "HOME": str(folder)}


@pytest.mark.parametrize("name", ["cellselect.py", "select.py"])
@pytest.mark.parametrize("version", VERSIONS)
def test_the_vendored_copy_runs(version: str, tmp_path: Path, name: str) -> None:
    python = interpreter(version)
    if python is None:
        pytest.skip(f"CPython {version} is not installed here (pyenv versions/{version}.*)")
    if sys.platform != "linux":
        pytest.skip("the fake nvidia-smi is a shell script")
    shutil.copy(MODULE, tmp_path / name)
    manifest = REPO / "locks" / "manifest.json"
    query = DATA / "nvidia-smi" / "query-4090.csv"

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(python), name, "--manifest", str(manifest), *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip

    pretended = run(
        "--os", "linux", "--arch", "x86_64", "--cuda", "13.0", "--gpu-query", str(query), "--python", "3.12", "--json"
    )
    assert pretended.returncode == 0, pretended.stderr
    data = json.loads(pretended.stdout)
    assert data["cell"] == "linux-x86_64-cu130-py3.12" and any("torch sm_89" in line for line in data["coverage"])
    env = fake_programs(tmp_path / "bin", "banner-cuda-13.0.txt", "query-4090.csv", "cpu-only.txt")
    probed = run("--python", "3.12", "--json", env=env)  # subprocess imports select: the copy must not shadow it
    assert "Traceback" not in probed.stderr
    if os.uname().machine == "x86_64":
        assert probed.returncode == 0 and json.loads(probed.stdout)["cell"] == "linux-x86_64-cu130-py3.12", (
            probed.stderr
        )
    old = fake_programs(tmp_path / "old", "banner-12.4.txt", "query-4090.csv", None)
    refused = run("--python", "3.12", "--cpu", env=old)
    assert refused.returncode == 2 and refused.stderr.startswith("error: The NVIDIA driver only supports CUDA 12.4")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": 4, "cells": ' + "[" * 3000 + "]" * 3000 + "}")
    hostile = subprocess.run([str(python), name, "--manifest", str(bad), "--cpu"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert hostile.returncode == 2 and "nested deeper than" in hostile.stderr and "Traceback" not in hostile.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_the_vendored_copy_confines_lock_paths_and_scans_linearly(version: str, tmp_path: Path) -> None:
    """On every CPython it promises: lock paths where the manifest format puts them, beside the
    manifest, after symlinks; a 1 MB unterminated string refused at once (the generous timeout
    only stops a hang; the old quadratic scan needed hours for 1 MB)."""
    python = interpreter(version)
    if python is None:
        pytest.skip(f"CPython {version} is not installed here (pyenv versions/{version}.*)")
    shutil.copy(MODULE, tmp_path / "select.py")
    locks = tmp_path / "proj" / "locks"
    locks.mkdir(parents=True)
    (tmp_path / "passwd").write_text("root:x:0:0\n")
    good = json.loads((REPO / "locks" / "manifest.json").read_text())
    cell = "linux-x86_64-cu130-py3.12"

    def run(data: object | str) -> subprocess.CompletedProcess[str]:
        (locks / "manifest.json").write_text(data if isinstance(data, str) else json.dumps(data))
        return subprocess.run(
            [str(python), "select.py", "--manifest", str(locks / "manifest.json"), "--os", "linux", "--arch", "x86_64",
             "--cuda", "13.0", "--python", "3.12"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    assert run(good).returncode == 0
    hostile = json.loads(json.dumps(good))
    layers = hostile["cells"][cell]["layers"]
    layers += [{**layers[0], "name": "optional-x", "kind": "optional", "lock": f"locks/{cell}/optional-x.txt"}] * 2
    done = run(hostile)
    assert done.returncode == 2 and "is named by another layer too" in done.stderr, done.stderr
    (locks / f"{cell}.txt").symlink_to(tmp_path / "passwd")
    done = run(good)
    assert done.returncode == 2 and "resolves outside the locks folder" in done.stderr and "root:x" not in done.stdout
    (locks / f"{cell}.txt").unlink()
    done = run('{"format": 4, "cells": "' + '\\"' * 500_000)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
