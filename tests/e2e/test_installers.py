"""What installers do with a cell's locks (issue 6, items 1 and 2), with the real pinned uv and
the pip a fresh ``python3 -m venv`` ships (23.2.1 on Python 3.11; never upgraded here).

A linux cell resolves for ``x86_64-manylinux_2_28``, but the machines that install its lock are
often newer: one with glibc 2.35 ranks a ``manylinux_2_34`` wheel above the ``manylinux_2_17`` one
the cell resolved with. The lock must let both installers take the file they prefer, with an
index page that carries hashes (they can filter candidates by hash) and with one that does not
(they cannot: they download the best file and check its hash after).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from packaging.pylock import Pylock

from lockgen.locks.lock import Lock
from lockgen.plan.target import Target
from lockgen.resolve import uv
from tests.conftest import run_cli, write_project

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{HOST}"
OLD = "pkg-1.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
NEW = "pkg-1.0-py3-none-manylinux_2_34_x86_64.whl"
WIN = "pkg-1.0-py3-none-win_amd64.whl"


@pytest.fixture(scope="session")
def fresh_pip(tmp_path_factory) -> list[str]:
    """The command of the pip a fresh ``python -m venv`` installs: ensurepip's bundled wheel,
    unpacked and run in place (``python <dir>/pip``: the same pip, without the ~10 s of creating a
    venv here); a fresh venv's pip where the wheel is not bundled (Debian's system Python)."""
    import ensurepip
    import zipfile

    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    if bundled:
        folder = tmp_path_factory.mktemp("bundled-pip")
        with zipfile.ZipFile(bundled[-1]) as wheel:
            wheel.extractall(folder)
        command = [sys.executable, str(folder / "pip")]
        version = subprocess.run([*command, "--version"], check=True, capture_output=True, text=True).stdout
        assert version.startswith(f"pip {ensurepip.version()} "), version
        return command
    venv = tmp_path_factory.mktemp("pip-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    return [str(venv / "bin" / "python"), "-m", "pip"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    return {
        **env,
        "PIP_CONFIG_FILE": os.devnull,
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_CACHE_DIR": str(tmp_path / "install-cache"),
    }


@pytest.fixture(params=[True, False], ids=["hashed-page", "page-without-hashes"])
def locked(request, tmp_path, index) -> Path:
    """One version of ``pkg`` with wheels for manylinux_2_17, manylinux_2_34 and win_amd64 (and a
    pure dependency), locked for the linux cell at the default manylinux_2_28."""
    hashed = request.param
    for tag in (
        "py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64",
        "py3-none-manylinux_2_34_x86_64",
        "py3-none-win_amd64",
    ):
        index.add("pkg", "1.0", tag=tag, requires=("dep",), hashed=hashed)
    index.add("dep", "1.0", hashed=hashed)
    index.publish()
    config = f"""
        index-url = "{index.index_url()}"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["{HOST}"]
    """
    root = write_project(tmp_path / "proj", config, {"requirements.in.j2": "pkg\n"})
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    return root


def _commands(root: Path) -> dict[str, list[str]]:
    (layer,) = json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]["layers"]
    commands: dict[str, list[str]] = layer["commands"]
    return commands


@pytest.mark.slow
def test_the_lock_lists_newer_levels_of_the_arch_only(locked):
    lock = (locked / "locks" / f"{CELL}.txt").read_text()
    pylock = (locked / "locks" / CELL / "pylock.toml").read_text()
    wheels = [
        w["url"].rsplit("/", 1)[1] for p in tomllib.loads(pylock)["packages"] if p["name"] == "pkg" for w in p["wheels"]
    ]
    assert wheels == [OLD, NEW]  # the cell's own wheel first; never the Windows one
    entry = next(e for e in Lock.parse(lock, "lock").entries if e.name == "pkg")
    assert len(entry.hashes) == 2


@pytest.mark.slow
def test_pip_on_a_newer_host_takes_its_wheel(locked, fresh_pip, tmp_path):
    """pip download for a glibc 2.35 host: pip's ``--platform`` takes exact tags (pip 23.2 does not
    widen ``manylinux_2_35`` to older levels), so it gets the tags such a host accepts."""
    command = _commands(locked)["pip"]
    assert command[:2] == ["pip", "install"]
    platforms = [
        arg
        for tag in Target(platform="x86_64-manylinux_2_35", python=HOST).platform_tags()
        for arg in ("--platform", tag)
    ]
    argv = [
        *fresh_pip, "download", *command[2:], "--isolated", "--disable-pip-version-check", "--no-cache-dir", "-d", str(tmp_path / "dl"),
        "--only-binary", ":all:", "--python-version", HOST, *platforms,
    ]  # fmt: skip
    run = subprocess.run(argv, capture_output=True, text=True, env=_env(tmp_path), cwd=locked)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "HASHES" not in run.stderr
    assert sorted(p.name for p in (tmp_path / "dl").iterdir()) == ["dep-1.0-py3-none-any.whl", NEW]


@pytest.mark.slow
def test_uv_on_a_newer_host_takes_its_wheel(locked, tmp_path):
    command = _commands(locked)["uv"]
    assert command[:3] == ["uv", "pip", "sync"]
    assert "--require-hashes" in command
    argv = [
        uv.uv_binary(), *command[1:], "--python-platform", "x86_64-manylinux_2_35", "--python", sys.executable,
        "--target", str(tmp_path / "target"), "--no-config",
    ]  # fmt: skip
    run = subprocess.run(argv, capture_output=True, text=True, env=_env(tmp_path), cwd=locked)
    assert run.returncode == 0, run.stderr
    wheel = (tmp_path / "target" / "pkg-1.0.dist-info" / "WHEEL").read_text()
    assert "Tag: py3-none-manylinux_2_34_x86_64" in wheel


@pytest.mark.slow
def test_uv_pip_sync_installs_the_pylock(locked, tmp_path):
    """Item 2: ``uv pip sync locks/<cell>/pylock.toml`` into a venv of the cell's Python, and the
    file is valid PEP 751 for packaging's own reader."""
    path = locked / "locks" / CELL / "pylock.toml"
    Pylock.from_dict(tomllib.loads(path.read_text())).validate()
    env = _env(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run(
        [uv.uv_binary(), "venv", str(venv), "--python", sys.executable, "--no-config"],
        check=True,
        env=env,
        capture_output=True,
    )
    argv = [
        uv.uv_binary(),
        "pip",
        "sync",
        f"locks/{CELL}/pylock.toml",
        "--python",
        str(venv),
        "--python-platform",
        "x86_64-manylinux_2_28",
        "--no-config",
    ]
    run = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=locked)
    assert run.returncode == 0, run.stderr
    assert "+ dep==1.0" in run.stderr
    assert "+ pkg==1.0" in run.stderr


def test_newer_levels_per_os_and_arch(tmp_path, index):
    """Each cell gets the newer levels of its own OS and arch only (``packaging.tags``): never the
    other arch, musllinux, or Windows wheels; a Windows cell has no levels. Layers too."""
    tags = [
        "manylinux_2_17_x86_64", "manylinux_2_34_x86_64", "manylinux_2_17_aarch64", "manylinux_2_39_aarch64",
        "musllinux_1_2_x86_64", "macosx_14_0_arm64", "macosx_15_0_arm64", "win_amd64",
    ]  # fmt: skip
    for name in ("pkg", "extra"):
        for tag in tags:
            index.add(name, "1.0", tag=f"py3-none-{tag}")
    index.publish()
    config = f"""
        index-url = "{index.index_url()}"
        optional = ["extra"]
        [tool.lockgen.matrix]
        os = ["linux", "macos", "windows"]
        arch = ["x86_64", "aarch64"]
        backend = ["cpu"]
        python = ["3.12"]
        exclude = [{{ os = "macos", arch = "x86_64" }}, {{ os = "windows", arch = "aarch64" }}]
    """
    root = write_project(tmp_path / "proj", config, {"requirements.in.j2": "pkg\n"})
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    expected = {
        "linux-x86_64-cpu-py3.12": ["manylinux_2_17_x86_64", "manylinux_2_34_x86_64"],
        "linux-aarch64-cpu-py3.12": ["manylinux_2_17_aarch64", "manylinux_2_39_aarch64"],
        "macos-aarch64-cpu-py3.12": ["macosx_14_0_arm64", "macosx_15_0_arm64"],
        "windows-x86_64-cpu-py3.12": ["win_amd64"],
    }
    for cell, platforms in expected.items():
        files = [f"pkg-1.0-py3-none-{p}.whl" for p in platforms]
        pylock = tomllib.loads((root / "locks" / cell / "pylock.toml").read_text())
        package = next(p for p in pylock["packages"] if p["name"] == "pkg")  # the layer's extra is there too
        assert [w["url"].rsplit("/", 1)[1] for w in package["wheels"]] == files, cell
        assert len(Lock.parse((root / "locks" / f"{cell}.txt").read_text(), cell).entries[0].hashes) == len(files)
        layer = Lock.parse((root / "locks" / cell / "optional-extra.txt").read_text(), cell)
        assert len(next(e for e in layer.entries if e.name == "extra").hashes) == len(files), cell


REPO_PYLOCKS = sorted((Path(__file__).resolve().parents[2] / "locks").glob("*/pylock.toml"))


@pytest.mark.parametrize("path", REPO_PYLOCKS, ids=lambda p: p.parent.name)
def test_committed_pylocks_are_valid_pep751(path):
    """The repo's committed ``pylock.toml`` files pass packaging's PEP 751 validation."""
    pylock = Pylock.from_dict(tomllib.loads(path.read_text()))
    pylock.validate()
    assert pylock.created_by == "lockgen"
    assert all(p.wheels or p.sdist for p in pylock.packages)
