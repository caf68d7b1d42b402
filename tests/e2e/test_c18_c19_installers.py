"""Locks install with the installers users have (issue 8, item 9): the pip a fresh CPython venv
ships (23.2.1 with Python 3.11, not upgraded) and the pinned uv, each running the install command
the manifest records, from the project root.

* C18: a local wheel folder (``wheels/local``) is a ``find-links`` header field and a
  ``--find-links`` option of the recorded commands, never a line in the lock, which pip and uv
  would read relative to different folders.
* C19: ``pcov==4.1.0`` requires ``cov[toml]>=5.2.1``; the lock keeps the extra on the locked line
  (``cov[toml]==7.3.1``), without which pip 23.2 refuses ``--require-hashes``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockgen.resolve import uv
from tests.conftest import one_cell, run_cli
from tests.support.faulthost import FaultHost, make_wheel

pytestmark = [pytest.mark.uv, pytest.mark.slow]  # these tests lock with the real uv

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{PYTHON}"


def clean_env() -> dict[str, str]:
    """The environment without pip's and uv's settings (this machine configures pip globally)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    cache = {"UV_CACHE_DIR": os.environ["UV_CACHE_DIR"]} if "UV_CACHE_DIR" in os.environ else {}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "UV_PYTHON_DOWNLOADS": "never", **cache}


@pytest.fixture(scope="module")
def fresh_pip(tmp_path_factory) -> Path:
    """``python3 -m venv``'s own pip (23.2.1 for CPython 3.11), never upgraded: its python."""
    if sys.platform != "linux" or sys.version_info[:2] != (3, 11):
        pytest.skip("the pip 23.2 case needs CPython 3.11 on Linux (its ensurepip ships pip 23.2.1)")
    folder = tmp_path_factory.mktemp("pip232")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(folder)], check=True, capture_output=True, env=clean_env())
    python = folder / "bin" / "python"
    version = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True, text=True, check=True).stdout
    assert version.startswith("pip 23.2"), version
    return python


def project(root: Path, index: str, requirements: str, extra: str = "") -> Path:
    return one_cell(root, index, requirements, python=PYTHON, extra=extra)


def commands(root: Path) -> dict[str, list[str]]:
    """The recorded install commands of the cell's main layer."""
    (layer,) = json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]["layers"]
    return layer["commands"]


def pip_install(python: Path, root: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """The manifest's pip command, run from the project root by ``python``'s pip."""
    args = commands(root)["pip"][1:]  # "pip", then its arguments
    argv = [
        str(python),
        "-m",
        "pip",
        *args,
        "--isolated",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--target",
        str(target),
    ]
    return subprocess.run(argv, capture_output=True, text=True, env=clean_env(), cwd=root)


def uv_install(root: Path, venv: Path, which: str = "sync") -> subprocess.CompletedProcess[str]:
    """The manifest's uv command (``uv pip sync``), or the same as ``uv pip install -r``."""
    args = commands(root)["uv"][1:]
    if which == "install":
        args = ["pip", "install", *args[2:-1], "-r", args[-1]]
    env = clean_env()
    subprocess.run(
        [uv.uv_binary(), "venv", str(venv), "--python", sys.executable, "--no-config"],
        check=True,
        capture_output=True,
        env=env,
    )
    return subprocess.run(
        [uv.uv_binary(), *args, "--python", str(venv), "--no-config"], capture_output=True, text=True, env=env, cwd=root
    )


def installed(venv: Path) -> set[str]:
    site = next(venv.glob("lib/python*/site-packages"))
    return {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}


def test_c18_a_local_wheel_folder_installs_from_the_project_root(tmp_path, pypi, fresh_pip):
    pypi.wheel("files", "dep", "1.0")
    index = pypi.index("simple", sorted((pypi.root / "files").glob("*.whl")))
    local = """[tool.lockgen.sources.local]
find-links = "https://wheels.invalid/local/"
local = "wheels/local"
local-if = "localpkg-*.whl"
packages = ["localpkg"]
"""
    root = project(tmp_path / "p", index, "localpkg\n", extra='use = ["local"]\n' + local)
    make_wheel(root / "wheels" / "local", "localpkg", "1.0", requires=("dep",))
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    lock = (root / "locks" / f"{CELL}.txt").read_text()
    assert "# find-links: wheels/local\n" in lock  # a header field,
    assert "\n--find-links" not in lock
    assert "\n-f" not in lock
    assert commands(root)["pip"][-4:] == ["--find-links", "wheels/local", "-r", f"locks/{CELL}.txt"]
    for which in ("sync", "install"):
        venv = tmp_path / f"uv-{which}"
        done = uv_install(root, venv, which)
        assert done.returncode == 0, done.stderr
        assert {"localpkg", "dep"} <= installed(venv)
    done = pip_install(fresh_pip, root, tmp_path / "pip-target")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pip-target" / "localpkg").is_dir()
    assert (tmp_path / "pip-target" / "dep").is_dir()


def c19_index(pypi: FaultHost) -> str:
    """pcov 4.1.0 needs cov[toml]>=5.2.1; cov 7.3.1 (the cell's pin) and a newer 7.4.0, whose
    ``toml`` extra pulls tomlish. pip 23.2 takes an extras requirement met only by a dependency
    to the index, where 7.4.0 is the newest: with the extra stripped from the lock it refuses."""
    pypi.wheel("files", "pcov", "4.1.0", requires=("cov[toml]>=5.2.1",))
    for version in ("7.3.1", "7.4.0"):  # a Provides-Extra line rides along (the factory writes METADATA lines as given)
        pypi.wheel("files", "cov", version, requires=('tomlish; extra == "toml"\nProvides-Extra: toml',))
    pypi.wheel("files", "tomlish", "1.0")
    return pypi.index("simple", sorted((pypi.root / "files").glob("*.whl")))


def test_c19_extras_stay_on_locked_lines_for_pip_23_2(tmp_path, pypi, fresh_pip):
    index = c19_index(pypi)
    root = project(tmp_path / "p", index, "pcov==4.1.0\ncov==7.3.1\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    lock = (root / "locks" / f"{CELL}.txt").read_text()
    assert "\ncov[toml]==7.3.1 \\\n" in lock
    done = pip_install(fresh_pip, root, tmp_path / "pip-target")
    assert done.returncode == 0, done.stderr
    assert {"pcov", "cov", "tomlish"} <= {p.name for p in (tmp_path / "pip-target").iterdir()}
    venv = tmp_path / "uv"
    done = uv_install(root, venv)
    assert done.returncode == 0, done.stderr
    assert {"pcov", "cov", "tomlish"} <= installed(venv)


def test_c19_pip_23_2_refuses_the_lock_without_the_extra(tmp_path, pypi, fresh_pip):
    """The control: the same lock with the extra stripped (what lockgen wrote before) is refused
    by pip 23.2 in --require-hashes mode; the case is real, not a test artefact."""
    index = c19_index(pypi)
    root = project(tmp_path / "p", index, "pcov==4.1.0\ncov==7.3.1\n")
    assert run_cli("all", "-C", str(root)).code == 0
    path = root / "locks" / f"{CELL}.txt"
    path.write_text(path.read_text().replace("cov[toml]==7.3.1", "cov==7.3.1"))
    done = pip_install(fresh_pip, root, tmp_path / "pip-target")
    assert done.returncode != 0
    assert "In --require-hashes mode, all requirements must have their versions pinned with ==" in done.stderr
    assert "cov[toml]>=5.2.1" in done.stderr
