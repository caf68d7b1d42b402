"""``lockgen install`` into real venvs from locks of fake sources (tiny wheels on loopback), with
the pinned uv and with pip, through mirrors: versions equal the lock, a broken optional layer is
rolled back with a warning, a wrong Python minor is refused before anything is installed, and a
second run is a no-op. Cells use this interpreter's minor (the only one certain to exist)."""

from __future__ import annotations

import io
import os
import platform
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lockgen.install import host_problems, installed_problems, map_sources, steps
from lockgen.install.checks import SEED
from lockgen.install.venv import Venv, base_env
from lockgen.locks.lock import Entry
from lockgen.locks.manifestfile import CellEntry, Requires
from lockgen.plan.mirror import Mirrors
from lockgen.resolve import uv
from tests.conftest import run_cli, run_ok, write_project
from tests.support.fakehost import FakeHost
from tests.support.localproject import local_project

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
pytestmark = [
    pytest.mark.uv,  # every test here locks or installs with the real uv
    pytest.mark.skipif(
        sys.platform != "linux" or platform.machine() != "x86_64",
        reason="installs the linux x86_64 cells into this machine",
    ),
]
FULL = f"linux-x86_64-cpu-py{HOST}"  # main, optional-epsilon (a wheel URL), optional-gamma (broken), no-deps, unhashed
LITE = f"linux-x86_64-lite-py{HOST}"  # main, optional-zeta (broken; it moves typer, declared)
OTHER = "linux-x86_64-cpu-py3.14"  # a minor this machine lacks
PYPI, FILES = "https://pypi.example", "https://files.example"

REQUIREMENTS = """\
alpha
torch==2.13.0+cpu
typer==0.27.1
{% if backend == "cpu" %}-e ./sub{% endif %}
"""


def corrupt(wheel: Path) -> None:
    """Rewrite ``wheel`` stored (not deflated) with one byte of its module changed: its metadata
    still reads (it locks), its CRC no longer matches (uv and pip fail to install it)."""
    with zipfile.ZipFile(wheel) as zf:
        files = {info.filename: zf.read(info) for info in zf.infolist()}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    data = bytearray(buffer.getvalue())
    data[data.index(b"__version__ =")] = ord("X")
    wheel.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    index = FakeHost(tmp_path_factory.mktemp("index"))
    index.add("alpha", "1.0", requires=("beta",))
    index.add("beta", "1.0")
    index.add("torch", "2.13.0+cpu")
    for version in ("0.27.1", "0.29.2"):
        index.add("typer", version)
    index.add("gamma", "1.0", requires=("delta",))
    index.add("delta", "1.0")
    index.add("zeta", "1.0", requires=("delta", "typer==0.29.2"))
    for broken in ("gamma", "zeta"):
        corrupt(next((index.root / "files").glob(f"{broken}-*.whl")))
    index.add("epsilon", "1.0", source="direct")  # only as a direct URL
    index.publish()
    yield index
    index.stop()


def mirror_args(index: FakeHost) -> list[str]:
    return ["--mirror", f"{PYPI}={index.url}/pypi", "--mirror", f"{FILES}={index.url}"]


@pytest.fixture(scope="module")
def locked(fake, tmp_path_factory):
    """The project, locked once through mirrors (its locks name only the canonical hosts)."""
    config = f"""
        index-url = "{PYPI}/simple"
        [tool.lockgen.sources.direct]
        urls = ["{FILES}/files/epsilon-1.0-py3-none-any.whl"]
        packages = ["epsilon"]
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu", "lite"]
        python = ["{HOST}"]
        include = [{{ os = "linux", arch = "x86_64", backend = "cpu", python = "3.14" }}]
        [[tool.lockgen.rules]]
        match = {{ backend = "cpu" }}
        use = ["direct"]
        optional = ["epsilon", "gamma"]
        no-deps = ["typer>=0.12"]
        [[tool.lockgen.rules]]
        match = {{ backend = "lite" }}
        optional = ["zeta"]
        replace = ["typer"]
        [tool.lockgen.detect]
        no-gpu = "cpu"
    """
    root = write_project(tmp_path_factory.mktemp("install") / "proj", config, {"requirements.in.j2": REQUIREMENTS})
    local_project(root / "sub")
    run = run_cli("all", "-C", str(root), *mirror_args(fake))
    assert run.code == 0, run.err
    return root


def installed(venv: Path) -> dict[str, str]:
    return {name: versions[0] for name, versions in Venv(venv).distributions(venv).items()}


class Recorder:
    """Wraps the runner of lockgen.install.steps: the install commands it started."""

    def __init__(self, monkeypatch):
        self.argvs: list[list[str]] = []
        real = steps.run

        def record(argv, env, cwd):
            self.argvs.append(list(argv))
            return real(argv, env, cwd)

        monkeypatch.setattr(steps, "run", record)


def test_install_with_uv_through_a_mirror_then_a_rerun_is_a_noop(locked, fake, tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    run = run_cli("install", FULL, "-C", str(locked), "--venv", str(venv), *mirror_args(fake))
    assert run.code == 0, run.err
    assert installed(venv) == {
        "alpha": "1.0", "beta": "1.0", "torch": "2.13.0+cpu", "typer": "0.27.1", "epsilon": "1.0", "sub": "0.1.0",
    }  # fmt: skip
    assert "optional layer optional-gamma failed and was rolled back" in run.err
    assert "Bad CRC" in run.err
    assert f"verified: 6 packages in {venv}" in run.out
    assert "main: uv pip sync --require-hashes --index-url https://pypi.example/simple" not in run.out  # the mirror
    assert f"main: uv pip sync --require-hashes --index-url {fake.url}/pypi/simple locks/{FULL}.txt" in run.out
    assert (
        f"optional-epsilon: uv pip install --require-hashes --index-url {fake.url}/pypi/simple -r .lockgen/install/{FULL}/optional-epsilon.txt"
        in run.out
    )
    calls = Recorder(monkeypatch)
    again = run_cli("install", FULL, "-C", str(locked), "--venv", str(venv), *mirror_args(fake))
    assert again.code == 0, again.err
    assert "up to date" in again.out
    assert "nothing to do" in again.out
    assert "optional-gamma: rolled back on the last install" in again.out
    assert calls.argvs == []


@pytest.mark.slow
def test_a_venv_made_by_python_m_venv_keeps_its_seed_packages(locked, fake, tmp_path):
    """``python -m venv`` seeds pip and setuptools; uv's exact sync keeps them, so the check after
    the install must too (a fresh-eyes review: every install into such a venv exited 1)."""
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
    run = run_cli("install", FULL, "-C", str(locked), "--venv", str(venv), *mirror_args(fake))
    assert run.code == 0, run.err
    assert "no layer of the cell lists it" not in run.err
    assert {"pip", "setuptools", "alpha", "beta"} <= set(installed(venv))
    assert f"verified: 6 packages in {venv}" in run.out


@pytest.mark.slow
def test_install_with_pip_through_lockgen_mirrors_rolls_back_a_broken_layer(locked, fake, tmp_path, monkeypatch):
    """pip installs zeta's dependencies (delta, typer 0.29.2 over main's 0.27.1) before zeta
    fails: the rollback removes delta and puts main's typer back, with its hash."""
    monkeypatch.setenv("LOCKGEN_MIRRORS", f"{PYPI}={fake.url}/pypi {FILES}={fake.url}")
    venv = tmp_path / "venv"
    run = run_cli("install", LITE, "-C", str(locked), "--venv", str(venv), "--installer", "pip")
    assert run.code == 0, run.err
    assert installed(venv) == {"alpha": "1.0", "beta": "1.0", "torch": "2.13.0+cpu", "typer": "0.27.1"}
    assert (
        "optional layer optional-zeta failed and was rolled back to the state before it (removed delta; restored typer)"
        in run.err
    )
    assert f"main: pip install --require-hashes --index-url {fake.url}/pypi/simple -r locks/{LITE}.txt" in run.out
    assert "replaces:" not in run.out  # the layer that replaces typer is not installed
    calls = Recorder(monkeypatch)
    assert "up to date" in run_cli("install", LITE, "-C", str(locked), "--venv", str(venv), "--installer", "pip").out
    assert calls.argvs == []


@pytest.mark.slow
def test_a_wrong_python_minor_is_refused_before_anything_is_installed(locked, fake, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run(
        [uv.uv_binary(), "venv", "-q", "--no-config", "--python", sys.executable, str(venv)],
        check=True,
        env=base_env({}),
    )
    before = sorted(p.relative_to(venv) for p in venv.rglob("*"))
    run = run_cli("install", OTHER, "-C", str(locked), "--venv", str(venv), *mirror_args(fake))
    assert run.code == 2
    assert f"the venv {venv} has Python {HOST}, and the cell's locks are for Python 3.14 only" in run.err
    assert "nothing was installed" in run.err
    assert sorted(p.relative_to(venv) for p in venv.rglob("*")) == before


@pytest.mark.slow
def test_no_interpreter_of_the_minor_is_refused_without_creating_a_venv(locked, fake, tmp_path):
    found = subprocess.run(
        [uv.uv_binary(), "python", "find", "--system", "3.14"],
        capture_output=True,
        env=base_env({"PATH": "/usr/bin:/bin"}),
    )
    if found.returncode == 0:
        pytest.skip("this machine has a Python 3.14")
    run = run_cli("install", OTHER, "-C", str(locked), "--venv", str(tmp_path / "new"), *mirror_args(fake))
    assert run.code == 2
    assert "no CPython 3.14 (x86_64) interpreter found" in run.err
    assert not (tmp_path / "new").exists()


def test_dry_run_shows_the_commands_and_changes_nothing(locked, tmp_path):
    run = run_cli(
        "install",
        LITE,
        "-C",
        str(locked),
        "--venv",
        str(tmp_path / "v"),
        "--dry-run",
        "--index-url",
        "http://mirror.invalid/simple",
    )
    assert run.code == 0, run.err
    assert (
        f"would run for main: uv pip sync --require-hashes --index-url http://mirror.invalid/simple locks/{LITE}.txt"
        in run.out
    )
    assert "dry run: nothing was changed" in run.out
    assert not (tmp_path / "v").exists()


def test_a_lock_that_is_not_the_manifests_is_refused(locked, tmp_path):
    layer = locked / "locks" / LITE / "optional-zeta.txt"
    text = layer.read_text()
    try:
        layer.write_text(text.replace("zeta==1.0", "zeta==1.1"))
        run = run_cli("install", LITE, "-C", str(locked), "--venv", str(tmp_path / "v"))
    finally:
        layer.write_text(text)
    assert run.code == 2
    assert f"locks/{LITE}/optional-zeta.txt: its sha256 is not the manifest's" in run.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "name the CELL to install, or pass --detect"),
        (["no-such-cell"], "no cell 'no-such-cell' in the manifest"),
        ([LITE.replace("-lite-", "-lit-")], f"in the manifest (did you mean {LITE}"),
        ([LITE, "--venv", sys.prefix], "is the environment lockgen runs in"),
        ([LITE, "--python", "3.9"], f"cell {LITE} is for Python {HOST}, not 3.9"),
        ([LITE, "--python", "3.x"], "--python 3.x: give a Python version X.Y such as 3.12, or the path of an"),
        ([LITE, "--python", "./no/python3"], "--python ./no/python3: no such file; give the path of a CPython"),
        ([LITE, "--python", __file__], f"--python {__file__}: it does not run as a Python"),
    ],
    ids=[
        "no-cell",
        "unknown-cell",
        "misspelt-cell",
        "lockgens-own-venv",
        "other-python",
        "python-word",
        "python-missing",
        "not-python",
    ],
)
def test_requests_that_are_refused(locked, args, message):
    run = run_cli("install", "-C", str(locked), *args)
    assert run.code == 2
    assert message in run.err


def test_python_path_names_the_interpreter_of_a_new_venv(locked, tmp_path, monkeypatch):
    """``--python PATH`` (as uv's ``--python``): the venv is made from it, not from what uv's
    discovery finds (here: nothing, PATH holds no Python); its minor is the cell's Python."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    run = run_cli("install", LITE, "-C", str(locked), "--venv", str(tmp_path / "v"), "--python", base, "--dry-run")
    assert run.code == 0, run.err
    assert f"would create the venv {tmp_path / 'v'} (cpython {platform.python_version()} x86_64 ({base}))" in run.out
    run = run_cli("install", "--detect", "--cpu", "-C", str(locked), "--venv", str(tmp_path / "v"), "--python", base,
                  "--dry-run")  # fmt: skip
    assert run.code == 0, run.err
    assert f"cell {FULL} (detected)" in run.out


def test_no_interpreter_found_says_why_on_one_line(locked, tmp_path, monkeypatch):
    """A pyenv shim of a version that is not active is first on PATH: uv's discovery stops at
    it; the refusal keeps uv's error and cause, not the shim's advice, and names --python PATH."""
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / f"python{HOST}"
    shim.write_text(
        f"#!/bin/sh\necho 'pyenv: python{HOST}: command not found' >&2\necho \"Note: See 'pyenv help global'\" >&2\n"
        "exit 127\n"
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", str(shims))
    run = run_cli("install", LITE, "-C", str(locked), "--venv", str(tmp_path / "v"), "--dry-run")
    assert run.code == 2
    (line,) = run.err.splitlines()
    assert line.startswith(f"error: no CPython {HOST} (x86_64) interpreter found: ")
    assert str(shim) in line and "127" in line
    assert "pyenv help global" not in line and "command not found" not in line
    assert "(searched: the interpreters on PATH and uv-managed ones" in line
    assert f"pass --python PATH with a CPython {HOST} for x86_64" in line
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize(
    ("output", "said"),
    [
        (
            "error: Failed to inspect Python interpreter from first executable in the search path at `/s/python3.12`\n"
            "  cause: Querying Python at `/s/python3.12` failed with exit status exit status: 127\n\n"
            "         [stderr]\n         pyenv: python3.12: command not found\n\n"
            "         The `python3.12' command exists in these Python versions:\n           3.12.1\n\n"
            "         Note: See 'pyenv help global' for tips on allowing multiple\n"
            "               Python versions to be found at the same time.\n",
            "Failed to inspect Python interpreter from first executable in the search path at `/s/python3.12`; "
            "Querying Python at `/s/python3.12` failed with exit status 127",
        ),
        (
            "error: No interpreter found for cpython-3.14-linux-x86_64-any in managed installations or search path\n",
            "No interpreter found for cpython-3.14-linux-x86_64-any in managed installations or search path",
        ),
        ("", ""),
    ],
    ids=["pyenv-shim", "none", "silent"],
)
def test_discovery_failure_is_uvs_error_and_cause(output, said):
    from lockgen.install.venv import discovery_failure

    assert discovery_failure(output) == said


@pytest.mark.slow
def test_detect_picks_the_cell_from_the_manifest(locked, tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"  # the probes find no GPU (CASES C20, C21)
    bin_.mkdir()
    for program, text, code in (
        ("nvidia-smi", "No devices were found", 6),
        ("rocminfo", "ROCk module is NOT loaded", 1),
    ):
        (bin_ / program).write_text(f"#!/bin/sh\necho '{text}'\nexit {code}\n")
        (bin_ / program).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    args = ["install", "--detect", "-C", str(locked), "--venv", str(tmp_path / "v"), "--dry-run"]
    refused = run_cli(*args)
    assert refused.code == 2
    assert "no supported GPU detected" in refused.err
    run = run_cli(*args, "--cpu")
    assert run.code == 0, run.err
    assert f"cell {FULL} (detected):" in run.out
    assert f"Python {HOST}: the running interpreter's" in run.out
    assert not (tmp_path / "v").exists()


def cell_entry(data: dict) -> CellEntry:
    """A manifest entry from the few fields a test gives (the rest as lockgen writes them)."""
    arch, requires = data.get("arch", "x86_64"), data.get("requires", {})
    return CellEntry(
        name="c", os=data["os"], arch=arch, backend="cpu", python="3.12", status=data.get("status", "locked"),
        requires=Requires(
            python="3.12", interpreter=requires.get("interpreter", arch), glibc=requires.get("glibc"),
            macos=requires.get("macos"),
        ),
    )  # fmt: skip


def _entry(version: str | None, layer: str = "main") -> tuple[str | None, Entry, str]:
    from packaging.utils import canonicalize_name

    return version, Entry(name=canonicalize_name("x")), layer


@pytest.mark.parametrize(
    ("expected", "have", "allowed", "problem"),
    [
        (
            {"torch": _entry("2.13.0+cu130")},
            {"torch": ["2.13.0"]},
            (),
            "torch 2.13.0 is installed; main locks torch==2.13.0+cu130",
        ),
        ({"torch": _entry("2.13.0+cu130")}, {"torch": ["2.13.0+cu130"]}, (), None),
        ({"sub": _entry(None, "unhashed")}, {"sub": ["0.1.0"]}, (), None),
        ({"numpy": _entry("2.3.0")}, {}, (), "numpy is not installed (main locks numpy==2.3.0)"),
        ({}, {"setuptools": ["65.5.0"]}, (), "setuptools 65.5.0 is installed but no layer of the cell lists it"),
        ({}, {"pip": ["23.2.1"]}, ("pip",), None),
        ({"a": _entry("1.0")}, {"a": ["1.0", "2.0"]}, (), "a is installed more than once (1.0, 2.0)"),
        ({}, {"pip": ["23.2.1"], "setuptools": ["65.5.0"]}, SEED, None),
    ],
    ids=["label-missing", "label-equal", "editable", "missing", "extra", "installer-pip", "twice", "seed-packages"],
)
def test_installed_problems(expected, have, allowed, problem):
    problems = installed_problems(expected, have, frozenset(allowed))
    assert problems == ([problem] if problem else [])


@pytest.mark.parametrize(
    ("entry", "os_name", "glibc", "macos", "problem"),
    [
        ({"os": "linux", "requires": {"glibc": "2.28"}}, "linux", "2.36", None, None),
        (
            {"os": "linux", "requires": {"glibc": "2.28"}},
            "linux",
            "2.17",
            None,
            "need glibc 2.28 or newer (manylinux); this system has 2.17",
        ),
        ({"os": "linux", "requires": {"glibc": "2.28"}}, "linux", None, None, "this system has no glibc"),
        (
            {"os": "macos", "requires": {"macos": "14.0"}},
            "macos",
            None,
            "13.6",
            "need macOS 14.0 or newer; this is macOS 13.6",
        ),
        ({"os": "macos", "requires": {"macos": "14.0"}}, "macos", None, "15.1", None),
        ({"os": "windows", "requires": {}}, "linux", "2.36", None, "the cell is for windows; this machine runs linux"),
    ],
    ids=["glibc-new", "glibc-old", "musl", "macos-old", "macos-new", "other-os"],
)
def test_host_problems(entry, os_name, glibc, macos, problem):
    problems = host_problems(cell_entry(entry), os_name, glibc, macos)
    assert (problem in problems[0]) if problem else problems == []


def test_sources_are_mapped_through_mirrors():
    mirrors = Mirrors({"https://pypi.example": "http://m/pypi", "https://dl.example/whl": "http://m/whl"})
    argv = ["pip", "sync", "--index-url", "https://pypi.example/simple", "--find-links", "https://dl.example/whl/cu130/torch/",
            "--find-links", "wheels/spark", "locks/x.txt"]  # fmt: skip
    assert map_sources(argv, mirrors, None) == [
        "pip", "sync", "--index-url", "http://m/pypi/simple", "--find-links", "http://m/whl/cu130/torch/",
        "--find-links", "wheels/spark", "locks/x.txt",
    ]  # fmt: skip
    assert map_sources(argv, mirrors, "http://other/simple")[3] == "http://other/simple"


# ---- the fake-source ai-toolkit example ------------------------------------------------------


@pytest.fixture(scope="module")
def example(tmp_path_factory, shared_fake_host):
    """examples/ai-toolkit for this interpreter's minor, its fake hosts built with this minor's
    wheel tags, and the linux x86_64 cu130 cell locked through the mirrors."""
    from tests.support import aitoolkit_world

    tag = f"cp{HOST.replace('.', '')}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aitoolkit_world, "CP", tag)
        patch.setattr(aitoolkit_world, "SPARK_TAG", f"{tag}-{tag}-win_arm64")
        world = aitoolkit_world.build(shared_fake_host)
    root = tmp_path_factory.mktemp("example") / "ai-toolkit"
    shutil.copytree(aitoolkit_world.EXAMPLE, root)
    config = root / "lockgen.toml"
    config.write_text(config.read_text().replace("3.12", HOST))
    run_ok("lock", f"linux-x86_64-cu130-py{HOST}", "-C", str(root), *world.mirror_args())
    return root, world


@pytest.mark.slow
def test_the_example_installs_and_a_rerun_is_a_noop(example, tmp_path):
    root, world = example
    cell, venv = f"linux-x86_64-cu130-py{HOST}", tmp_path / "venv"
    run = run_cli("install", cell, "-C", str(root), "--venv", str(venv), *world.mirror_args())
    assert run.code == 0, run.err
    have = installed(venv)
    assert (have["torch"], have["torchvision"], have["torchaudio"]) == ("2.13.0+cu130", "0.28.0+cu130", "2.11.0+cu130")
    assert have["flash-attn"] == "2.8.3+cu130torch2.13"
    assert have["natten"] == "0.21.7+torch2130cu130"
    assert "verified:" in run.out
    assert "warning" not in run.err
    again = run_cli("install", cell, "-C", str(root), "--venv", str(venv), *world.mirror_args())
    assert again.code == 0
    assert "up to date" in again.out


# ---- --format pylock: the cell's pylock.toml in one command, the optional layers as extras


def test_dry_run_of_the_pylock_format_shows_one_command(locked, fake, tmp_path):
    run = run_cli(
        "install", FULL, "-C", str(locked), "--venv", str(tmp_path / "v"), "--dry-run", "--format", "pylock",
        *mirror_args(fake),
    )  # fmt: skip
    assert run.code == 0, run.err
    pylock = f".lockgen/install/{FULL}/pylock.toml"  # the URLs through the mirrors
    said = f"would run for main, optional-epsilon, optional-gamma, no-deps: uv pip sync {pylock} --extra epsilon --extra gamma"
    assert said in run.out
    assert "would run for unhashed: uv pip install --no-deps" in run.out
    assert not (tmp_path / "v").exists()


@pytest.mark.slow
def test_a_pip_too_old_for_pylocks_is_refused_before_anything_runs(locked, fake, tmp_path):
    """A venv made by ``python -m venv`` has the pip ``ensurepip`` ships (23.x here), which reads
    a pylock.toml as a requirements file and fails on its first line: refused up front, by name,
    with the ways out, the dry run saying so too; the venv is left as it was."""
    import subprocess
    import sys

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    before = sorted(p.name for p in (venv / "lib").glob("python3*/site-packages/*"))
    args = ("install", FULL, "-C", str(locked), "--venv", str(venv), "--format", "pylock", "--installer", "pip")
    dry = run_cli(*args, "--dry-run", *mirror_args(fake))
    assert dry.code == 0 and "would refuse: pip 23." in dry.out, dry.out + dry.err
    run = run_cli(*args, *mirror_args(fake))
    assert run.code == 2, run.err
    assert "cannot install" in run.err and "pip reads PEP 751 files from 26.3 on" in run.err
    assert "--installer uv or --format txt; nothing was installed" in run.err
    assert "Traceback" not in run.err
    assert sorted(p.name for p in (venv / "lib").glob("python3*/site-packages/*")) == before


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_install_from_the_pylock_through_mirrors(locked, fake, tmp_path, installer):
    """The pylock with both optional layers fails (gamma's wheel is corrupt), so it installs
    again without them and adds them back one at a time (epsilon installs, gamma is left out);
    then the unhashed layer; the venv is checked against the locks as ever."""
    venv = tmp_path / "venv"
    args = ("install", FULL, "-C", str(locked), "--venv", str(venv), "--format", "pylock", "--installer", installer)
    run = run_cli(*args, *mirror_args(fake))
    assert run.code == 0, run.err
    assert "installing again without the optional layers, then adding them one at a time" in run.err
    assert "optional layer optional-gamma failed and was left out" in run.err
    assert "optional-epsilon failed" not in run.err
    assert installed(venv) == {
        "alpha": "1.0", "beta": "1.0", "torch": "2.13.0+cpu", "typer": "0.27.1", "epsilon": "1.0", "sub": "0.1.0",
    }  # fmt: skip
    assert f"verified: 6 packages in {venv}" in run.out
    mirrored = (locked / ".lockgen" / "install" / FULL / "pylock.toml").read_text()
    assert PYPI not in mirrored and FILES not in mirrored and fake.url in mirrored
