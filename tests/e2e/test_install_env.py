"""``lockgen install`` keeps what the user's machine would add out of the install: pip's config
files and ``PIP_*`` variables, a venv that sees the system's site-packages, a mirror that maps
nothing; it refuses a cell for another host arch and a manifest of a newer format, selects by an
existing venv's Python minor and shows in ``--dry-run`` the environment its commands run with."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lockgen.install.checks import host_problems
from lockgen.install.steps import restore_sources
from lockgen.install.venv import Venv, base_env, pip_network_options
from lockgen.resolve import uv
from tests.conftest import run_cli, write_project
from tests.e2e.test_install import cell_entry
from tests.support.fakehost import FakeHost

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
OTHER = "3.13" if HOST == "3.12" else "3.12"  # a minor this machine need not have
CELL, OTHER_CELL = f"linux-x86_64-cpu-py{HOST}", f"linux-x86_64-cpu-py{OTHER}"
PYPI, FILES = "https://pypi.example", "https://files.example"
_HERE = pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() != "x86_64", reason="installs the linux x86_64 cells"
)


def linux_x86_64(test):
    """A test that locks and installs the linux x86_64 cells with the real uv (and pip)."""
    return pytest.mark.uv(_HERE(test))


@pytest.fixture(scope="module")
def world(tmp_path_factory, uv_cache):
    """A project of two cells (this minor and another), locked through mirrors of ``PYPI`` and
    ``FILES`` (the host of the wheels its pages link to)."""
    index = FakeHost(tmp_path_factory.mktemp("index"))
    index.add("alpha", "1.0", requires=("beta",))
    index.add("beta", "1.0")
    for version in ("0.27.1", "0.29.2"):
        index.add("typer", version)
    index.publish()
    config = f"""
        index-url = "{PYPI}/simple"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["{HOST}", "{OTHER}"]
        [tool.lockgen.detect]
        no-gpu = "cpu"
    """
    root = write_project(
        tmp_path_factory.mktemp("env") / "proj", config, {"requirements.in.j2": "alpha\ntyper==0.27.1\n"}
    )
    mirror = ["--mirror", f"{PYPI}={index.url}/pypi", "--mirror", f"{FILES}={index.url}"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("UV_CACHE_DIR", str(uv_cache))
        run = run_cli("all", "-C", str(root), *mirror)
    assert run.code == 0, run.err
    yield root, mirror
    index.stop()


def make_venv(path: Path, *extra: str) -> Path:
    subprocess.run([uv.uv_binary(), "venv", "-q", "--no-config", *extra, "--python", sys.executable, str(path)],
                   check=True, env=base_env(dict(os.environ)))  # fmt: skip
    return path


@pytest.mark.slow
@linux_x86_64
@pytest.mark.parametrize(
    "setting",
    ["config-constraint", "config-sources", "variables"],
)
def test_pip_reads_no_config_file_and_no_pip_variable(world, tmp_path, monkeypatch, setting):
    """A pip.conf (``PIP_CONFIG_FILE``) with a constraint that contradicts the lock, or with an
    index that does not exist and no-binary; the same as ``PIP_*`` variables: pip installs
    exactly the lock all the same (without the fix each of these fails)."""
    root, mirror = world
    (tmp_path / "c.txt").write_text("typer==0.29.2\n")
    conf = tmp_path / "pip.conf"
    if setting == "config-constraint":
        conf.write_text(f"[global]\nconstraint = {tmp_path / 'c.txt'}\n")
        monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    elif setting == "config-sources":
        conf.write_text("[global]\nextra-index-url = http://127.0.0.1:9/simple\nno-binary = :all:\n")
        monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    else:
        monkeypatch.setenv("PIP_CONSTRAINT", str(tmp_path / "c.txt"))
        monkeypatch.setenv("PIP_NO_BINARY", ":all:")
        monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nowhere"))
    venv = tmp_path / "venv"
    run = run_cli("install", CELL, "-C", str(root), "--venv", str(venv), "--installer", "pip", *mirror)
    assert run.code == 0, run.err
    found = {name: versions[0] for name, versions in Venv(venv).distributions(root).items()}
    assert {k: v for k, v in found.items() if k != "pip"} == {"alpha": "1.0", "beta": "1.0", "typer": "0.27.1"}


@pytest.mark.slow
@linux_x86_64
def test_a_venv_that_sees_the_system_site_packages_is_refused(world, tmp_path):
    root, mirror = world
    venv = make_venv(tmp_path / "venv", "--system-site-packages")
    before = sorted(p.relative_to(venv) for p in venv.rglob("*"))
    run = run_cli("install", CELL, "-C", str(root), "--venv", str(venv), *mirror)
    assert run.code == 2
    assert "sees the system's site-packages (pyvenv.cfg: include-system-site-packages = true)" in run.err
    assert sorted(p.relative_to(venv) for p in venv.rglob("*")) == before


@pytest.mark.slow
@linux_x86_64
def test_dry_run_shows_the_environment_and_pips_uninstall_step(world, tmp_path):
    root, mirror = world
    venv = make_venv(tmp_path / "venv")
    run = run_cli("install", CELL, "-C", str(root), "--venv", str(venv), "--installer", "pip", "--dry-run", *mirror)
    assert run.code == 0, run.err
    assert f"would run with: VIRTUAL_ENV={venv} PIP_CONFIG_FILE={os.devnull}; pip runs with --isolated" in run.out
    assert "would then uninstall (pip cannot sync) every distribution main does not list" in run.out
    uv_run = run_cli("install", CELL, "-C", str(root), "--venv", str(venv), "--dry-run", *mirror)
    assert f"would run with: VIRTUAL_ENV={venv} UV_NO_CONFIG=1 UV_PYTHON_DOWNLOADS=never;" in uv_run.out


@pytest.mark.slow
@linux_x86_64
@pytest.mark.parametrize(
    ("prefix", "warned"),
    [(f"{PYPI}/simpl", True), ("https://pypi.exampl", True), (f"{PYPI}/simple", False)],
    ids=["segment-typo", "host-typo", "used"],
)
def test_a_mirror_that_maps_nothing_is_warned_about(world, tmp_path, prefix, warned):
    root, mirror = world
    args = ["install", CELL, "-C", str(root), "--venv", str(tmp_path / "v"), "--dry-run", *mirror]
    run = run_cli(*args, "--mirror", f"{prefix}=http://127.0.0.1:9/x")
    assert run.code == 0, run.err
    assert (f"mirror for {prefix} matched no URL of cell {CELL}'s install commands" in run.err) is warned


def fake_venv(path: Path, minor: str) -> Path:
    """A venv of CPython ``minor`` as ``python -m venv`` lays it out (``bin/python`` a link to the
    installed interpreter, ``home`` its folder; lockgen runs no file of a venv, only the Python it
    links to), without pip; skipped when that minor is not installed (pyenv ``versions/X.Y.*``)."""
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found = sorted(Path(root, "versions").glob(f"{minor}.*/bin/python{minor}"))
    if not found:
        pytest.skip(f"CPython {minor} is not installed here (pyenv versions/{minor}.*)")
    (path / "bin").mkdir(parents=True)
    (path / "lib" / f"python{minor}" / "site-packages").mkdir(parents=True)
    (path / "pyvenv.cfg").write_text(f"home = {found[-1].parent}\nversion = {minor}.1\n")
    (path / "bin" / "python").symlink_to(found[-1])
    return path


@pytest.mark.slow
@linux_x86_64
def test_detect_for_an_existing_venv_selects_by_its_python(world, tmp_path, monkeypatch):
    root, mirror = world
    bin_ = tmp_path / "bin"  # no GPU (C20)
    bin_.mkdir()
    (bin_ / "nvidia-smi").write_text("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    (bin_ / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    venv = fake_venv(tmp_path / "venv", OTHER)
    run = run_cli("install", "--detect", "--cpu", "-C", str(root), "--venv", str(venv), "--dry-run", *mirror)
    assert run.code == 0, run.err
    assert f"cell {OTHER_CELL} (detected):" in run.out
    assert f"Python {OTHER}: the interpreter of the venv {venv}" in run.out


@pytest.mark.slow
@linux_x86_64
def test_a_cell_for_another_host_arch_is_refused(world, tmp_path):
    root, mirror = world
    copy = tmp_path / "proj"
    subprocess.run(["cp", "-r", str(root), str(copy)], check=True)
    path = copy / "locks" / "manifest.json"
    manifest = json.loads(path.read_text())
    arm = f"linux-aarch64-cpu-py{HOST}"  # the same lock files, at the arm cell's paths (where lockgen writes them)
    manifest["cells"][arm] = {**json.loads(json.dumps(manifest["cells"][CELL]).replace(CELL, arm)), "arch": "aarch64"}
    shutil.copyfile(copy / "locks" / f"{CELL}.txt", copy / "locks" / f"{arm}.txt")
    shutil.copytree(copy / "locks" / CELL, copy / "locks" / arm)
    path.write_text(json.dumps(manifest))
    run = run_cli("install", f"linux-aarch64-cpu-py{HOST}", "-C", str(copy), "--venv", str(tmp_path / "v"), *mirror)
    assert run.code == 2
    assert "the cell is for aarch64 machines; this machine is x86_64" in run.err


@pytest.mark.parametrize(
    ("fmt", "message"),
    [(5, "was written by a newer lockgen (this one reads format 4); use a newer lockgen"),
     (3, "is older than this lockgen reads (4); run `lockgen all`"), ("2", 'not a lockgen manifest (no integer "format")')],
    ids=["newer", "older", "not-an-integer"],
)  # fmt: skip
def test_a_manifest_of_another_format_says_what_to_do(tmp_path, fmt, message):
    config = f"""
        index-url = "{PYPI}/simple"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["{HOST}"]
    """
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "alpha\n"})
    (root / "locks").mkdir()
    (root / "locks" / "manifest.json").write_text(json.dumps({"format": fmt, "cells": {}}))
    run = run_cli("install", CELL, "-C", str(root))
    assert run.code == 2
    assert message in run.err


WINDOWS_ALIAS = {"os": "windows", "arch": "aarch64", "status": "alias", "requires": {"interpreter": "x86_64"}}


@pytest.mark.parametrize(
    ("entry", "os_name", "arch", "problem"),
    [
        ({"os": "linux", "arch": "aarch64", "status": "locked"}, "linux", "x86_64", "for aarch64 machines; this machine is x86_64"),
        ({"os": "linux", "arch": "x86_64", "status": "locked"}, "linux", "x86_64", None),
        (WINDOWS_ALIAS, "windows", "x86_64", None),  # the x64 stack: an x86_64 PC runs it
        (WINDOWS_ALIAS, "windows", "aarch64", None),
        ({"os": "windows", "arch": "x86_64", "status": "locked"}, "windows", "aarch64", "for x86_64 machines"),
        ({**WINDOWS_ALIAS, "os": "linux", "requires": {"interpreter": "x86_64"}}, "linux", "x86_64", None),
        ({"os": "linux", "arch": "x86_64", "status": "alias", "requires": {"interpreter": "x86_64"}}, "linux", "aarch64",
         "for x86_64 machines"),  # no x86_64 emulation on linux arm64
    ],
    ids=["other-arch", "same-arch", "alias-x64-pc", "alias-arm-pc", "windows-arm-x64-cell", "linux-alias", "linux-no-emulation"],
)  # fmt: skip
def test_host_arch(entry, os_name, arch, problem):
    problems = host_problems(cell_entry(entry), os_name, "2.39", None, arch=arch)
    assert (problem in problems[0]) if problem else problems == []


def test_a_rollback_reinstalls_from_main_index_and_every_earlier_find_links():
    main = ("https://i/simple", ("https://a/",))
    layer = ("https://i/simple", ("https://a/", "wheels/b"))
    assert restore_sources([main, layer]) == ["--index-url", "https://i/simple", "--find-links", "https://a/",
                                              "--find-links", "wheels/b"]  # fmt: skip


def test_the_install_environment_has_no_pip_or_uv_settings():
    env = base_env({"PIP_INDEX_URL": "x", "PIP_NO_BINARY": ":all:", "PIP_CERT": "c", "UV_INDEX_URL": "x",
                    "UV_CACHE_DIR": "/c", "PYTHONPATH": "/p", "HOME": "/h"})  # fmt: skip
    assert env == {"UV_CACHE_DIR": "/c", "HOME": "/h", "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1",
                   "UV_NO_CONFIG": "1", "PIP_CONFIG_FILE": os.devnull, "COLUMNS": "10000"}  # fmt: skip


@pytest.mark.parametrize(
    ("environ", "options"),
    [
        ({}, []),
        ({"PIP_CERT": "/etc/corp-ca.pem", "PIP_INDEX_URL": "x"}, ["--cert", "/etc/corp-ca.pem"]),
        (
            {"PIP_PROXY": "http://proxy:3128", "PIP_DEFAULT_TIMEOUT": "60", "PIP_TIMEOUT": "30", "PIP_RETRIES": "2"},
            ["--proxy", "http://proxy:3128", "--timeout", "30", "--retries", "2"],
        ),
        ({"PIP_CERT": ""}, []),
    ],
    ids=["none", "company-ca", "proxy-timeout-retries", "empty-ignored"],
)
def test_pips_network_settings_survive_isolated_mode(environ, options):
    """``--isolated`` drops every ``PIP_*`` variable; the network ones (a company CA, a proxy)
    come back as options, nothing that could change what is installed does (a fresh-eyes review)."""
    assert pip_network_options(environ) == options


def test_pyvenv_cfg_says_whether_the_venv_sees_the_system(tmp_path):
    for text, sees in (("include-system-site-packages = true\n", True), ("Include-System-Site-Packages=False", False),
                       ("home = /usr/bin\n", False)):  # fmt: skip
        (tmp_path / "pyvenv.cfg").write_text(textwrap.dedent(text))
        assert Venv(tmp_path).system_site_packages() is sees
