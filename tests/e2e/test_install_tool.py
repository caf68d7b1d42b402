"""lockgen installs as a tool (issue 20, item 1): ``python -m build`` makes a wheel and an sdist
that ``twine check`` accepts; the wheel installs into a fresh venv with plain pip and runs (it
locks a cell with the pinned uv it brought), with ``uv tool install`` and with ``pipx``; pip
installs it from a ``git+file://`` URL at the release tag the README names.

Hermetic: the build backend and lockgen's dependencies come from a wheelhouse repacked from this
test run's own environment (tests/support/wheelhouse.py), through ``--no-index --find-links``; no pip or
uv configuration of the machine is read.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from lockgen import __version__
from lockgen.runtime.uvbin import pinned_uv_binary
from tests.support.wheelhouse import lockgen_wheelhouse, offline_env, source_copy

pytestmark = [pytest.mark.slow, pytest.mark.uv, pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]

REPO = Path(__file__).resolve().parents[2]
BIN = "Scripts" if sys.platform == "win32" else "bin"
UV_VERSION = metadata.version("uv")


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    """Subprocess environment: pip finds packages only in the wheelhouse, reads no config."""
    house = lockgen_wheelhouse(tmp_path_factory.mktemp("wheelhouse"))
    return offline_env(house, Path(os.environ.get("UV_CACHE_DIR") or tmp_path_factory.mktemp("uv-cache")))


def run(argv: list[str | Path], env: dict[str, str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        list(map(str, argv)), env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return source_copy(REPO, tmp_path_factory.mktemp("source") / "lockgen")


@pytest.fixture(scope="module")
def dist(source, env, tmp_path_factory) -> dict[str, Path]:
    """``python -m build`` (sdist, then the wheel from the sdist, in isolated build envs)."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, source], env)
    wheel, sdist = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert [p.name for p in wheel] == [f"lockgen-{__version__}-py3-none-any.whl"]
    assert [p.name for p in sdist] == [f"lockgen-{__version__}.tar.gz"]
    return {"wheel": wheel[0], "sdist": sdist[0]}


def check_version(exe: Path, env: dict[str, str]) -> None:
    """``lockgen --version`` names lockgen's version and the pinned uv's."""
    assert run([exe, "--version"], env).strip() == f"lockgen {__version__} (uv {UV_VERSION})"


def test_twine_accepts_the_wheel_and_the_sdist(dist, env):
    out = run([sys.executable, "-m", "twine", "check", "--strict", dist["wheel"], dist["sdist"]], env)
    assert out.count("PASSED") == 2, out


def test_the_wheel_installs_with_pip_into_a_fresh_venv_and_locks_a_cell(dist, env, tmp_path, fake_host):
    """The pip a fresh venv ships, from the wheel's path; then the installed lockgen locks a cell
    against a fake index with the uv binary its own dependency brought (not this run's)."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], env)
    run([venv / BIN / "python", "-m", "pip", "install", dist["wheel"]], env)
    lockgen = venv / BIN / "lockgen"
    check_version(lockgen, env)
    found = run(
        [venv / BIN / "python", "-c", "import lockgen.runtime.uvbin as u; print(u.pinned_uv_binary())"], env, tmp_path
    )
    assert Path(found.strip()).is_relative_to(venv)
    index = fake_host("pypi")
    index.add("alpha", "1.0")
    index.publish()
    project = tmp_path / "project"
    (project / "templates").mkdir(parents=True)
    (project / "templates" / "requirements.in.j2").write_text("alpha\n")
    (project / "lockgen.toml").write_text(
        f'index-url = "{index.index_url("pypi")}"\n'
        '[matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n'
    )
    run([lockgen, "all"], env, cwd=project)
    assert "alpha==1.0" in (project / "locks" / "linux-x86_64-cpu-py3.12.txt").read_text()
    run([lockgen, "check"], env, cwd=project)


def test_uv_tool_install(dist, env, tmp_path):
    tools = {**env, "UV_TOOL_DIR": str(tmp_path / "tools"), "UV_TOOL_BIN_DIR": str(tmp_path / "bin")}
    argv = [pinned_uv_binary(), "tool", "install", "--no-index", "--find-links", env["WHEELHOUSE"], dist["wheel"]]
    run([*argv, "--python", sys.executable], tools)
    check_version(tmp_path / "bin" / "lockgen", tools)


def test_pipx_install(dist, env, tmp_path):
    """pipx (its default backend, uv, as pipx picks when uv is installed). pipx's pip backend
    first upgrades pipx's shared pip from the index (pip >= 26.1), which a hermetic run cannot."""
    pipx = {**env, "PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "bin"),
            "PIPX_MAN_DIR": str(tmp_path / "man"), "USE_EMOJI": "0"}  # fmt: skip
    argv = [sys.executable, "-m", "pipx", "install", "--backend", "uv", "--python", sys.executable]
    run([*argv, "--pip-args", f"--no-index --find-links {env['WHEELHOUSE']}", dist["wheel"]], pipx)
    check_version(tmp_path / "bin" / "lockgen", pipx)


def test_pip_installs_from_a_git_url_at_the_release_tag(source, env, tmp_path):
    """What the README's ``pip install 'lockgen @ git+https://…@vX'`` does, from a local
    repository: the tag is ``v`` + the package version, and pip builds it from the checkout."""
    readme = (REPO / "README.md").read_text()
    assert f"@v{__version__}" in readme, "the README's install commands name another tag than this version's"
    repo = tmp_path / "repo"
    shutil.copytree(source, repo)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"]
    run([*git, "init", "-q"], env, cwd=repo)
    run([*git, "add", "."], env, cwd=repo)
    run([*git, "commit", "-qm", "release"], env, cwd=repo)
    run([*git, "tag", f"v{__version__}"], env, cwd=repo)
    run([*git, "commit", "-q", "--allow-empty", "-m", "after the release"], env, cwd=repo)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], env)
    # pip 23.2's packaging refuses a PEP 508 URL without a host (`lockgen @ git+file:///…`): the
    # README's https form has one; here pip's own VCS form names the same tag
    url = f"git+{repo.as_uri()}@v{__version__}"
    out = run([venv / BIN / "python", "-m", "pip", "install", url], env)
    assert re.search(r"Successfully installed .*lockgen-" + re.escape(__version__), out), out
    check_version(venv / BIN / "lockgen", env)
