"""A cell's ``pylock.toml`` names the machines it is for (PEP 751 ``requires-python`` and
``environments``), so an installer refuses it in a venv of another Python minor or platform
instead of installing wheels for another target: with the real uv (``uv pip sync``)."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.markers import Marker

from lockgen.install.venv import base_env
from lockgen.locks import pylockfile
from lockgen.plan.target import Target
from lockgen.resolve import uv

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
OTHER = "3.13" if HOST == "3.12" else "3.12"


@pytest.mark.parametrize(
    ("target", "machine"),
    [
        (Target(platform="x86_64-manylinux_2_28", python="3.11"), ("linux", "x86_64")),
        (Target(platform="aarch64-manylinux_2_28", python="3.12"), ("linux", "aarch64")),
        (Target(platform="aarch64-apple-darwin", python="3.12", macos="14.0"), ("darwin", "arm64")),
        (Target(platform="x86_64-apple-darwin", python="3.12", macos="14.0"), ("darwin", "x86_64")),
        (Target(platform="x86_64-pc-windows-msvc", python="3.13"), ("win32", "AMD64")),
        (Target(platform="aarch64-pc-windows-msvc", python="3.13"), ("win32", "ARM64")),
    ],
    ids=["linux-x86_64", "linux-aarch64", "macos-arm64", "macos-x86_64", "windows-amd64", "windows-arm64"],
)
def test_the_environment_marker_spells_each_platform_as_python_does(target, machine):
    marker = pylockfile.target_environment(target)
    env = {"sys_platform": machine[0], "platform_machine": machine[1], "python_version": target.python,
           "implementation_name": "cpython"}  # fmt: skip
    assert marker.evaluate(env)
    assert not marker.evaluate({**env, "python_version": "3.10"})
    assert not marker.evaluate({**env, "implementation_name": "pypy"})
    other = {"x86_64": "aarch64", "aarch64": "x86_64", "arm64": "x86_64", "AMD64": "ARM64", "ARM64": "AMD64"}
    assert not marker.evaluate({**env, "platform_machine": other[machine[1]]})


def sync(venv: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    env = {**base_env(dict(os.environ)), "VIRTUAL_ENV": str(venv)}
    return subprocess.run([uv.uv_binary(), "pip", "sync", "--preview-features", "pylock", "pylock.toml"],
                          cwd=folder, env=env, capture_output=True, text=True, check=False)  # fmt: skip


@pytest.mark.skipif(sys.platform != "linux" or platform.machine() != "x86_64", reason="a linux x86_64 venv")
def test_uv_installs_the_pylock_only_into_a_venv_of_its_target(index, tmp_path):
    url = index.add("alpha", "1.0")
    index.publish()
    wheel = next((index.root / "files").glob("alpha-1.0-*.whl"))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    uvs = pylockfile.loads(
        f'lock-version = "1.0"\nrequires-python = ">={HOST}"\ncreated-by = "uv"\n\n[[packages]]\nname = "alpha"\n'
        f'version = "1.0"\nwheels = [{{ url = "{url}", hashes = {{ sha256 = "{digest}" }} }}]\n',
        "uv's pylock",
    )
    venv = tmp_path / "venv"
    subprocess.run([uv.uv_binary(), "venv", "-q", "--no-config", "--python", sys.executable, str(venv)],
                   check=True, env=base_env(dict(os.environ)))  # fmt: skip
    for target, refusal in (
        (Target(platform="x86_64-manylinux_2_28", python=OTHER), "incompatible with the `pylock.toml`'s Python requirement: `=="),
        (Target(platform="x86_64-pc-windows-msvc", python=HOST), "The target environment is not supported by the lockfile"),
        (Target(platform="aarch64-manylinux_2_28", python=HOST), "The target environment is not supported by the lockfile"),
        (Target(platform="x86_64-manylinux_2_28", python=HOST), None),
    ):  # fmt: skip
        text = pylockfile.dumps(pylockfile.for_target(replace(uvs, created_by="lockgen"), target))
        written = pylockfile.loads(text, "lockgen's pylock")  # valid PEP 751, as packaging reads it
        assert written.requires_python is not None and str(written.requires_python) == f"=={target.python}.*"
        assert written.environments == [Marker(str(pylockfile.target_environment(target)))]
        (tmp_path / "pylock.toml").write_text(text)
        done = sync(venv, tmp_path)
        if refusal is None:
            assert done.returncode == 0, done.stderr
            assert "+ alpha==1.0" in done.stderr
        else:
            assert done.returncode != 0 and refusal in done.stderr, done.stderr
