"""A cell's ``pylock.toml`` as an install format: its optional layers are PEP 751 extras (their
packages marked ``'<layer>' in extras``; a layer's replacement of a main version marked so that
the last selected layer wins, as installing the ``.txt`` layers in order gives), the no-deps
layer is always installed, and an installer that has never heard of lockgen installs the cell
with or without its optional parts, hashes checked: the pinned uv (``uv pip sync pylock.toml
--extra …``) and pip 26.3 (``pip install -r 'pylock.toml[…]'``); ``lockgen install --format
pylock`` uses it too.

pip 26.3 comes from this test run's own environment (the ``test`` extra pins ``pip>=26.3``),
repacked into a wheelhouse and installed into a fresh venv offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.pylock import Pylock

from lockgen.config import parse_toml
from lockgen.locks import pylockfile
from lockgen.runtime.uvbin import pinned_uv_binary
from tests.conftest import run_ok, write_project
from tests.e2e.test_c18_c19_installers import clean_env

pytestmark = [pytest.mark.uv]

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{PYTHON}"
CONFIG = """
    index-url = "{index}"
    optional = ["accel", "swapper"]
    replace = ["dep"]
    no-deps = ["plugin"]
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["{python}"]
"""
DEFAULT = {"app": "1.0", "dep": "1.0", "plugin": "1.0"}
EVERYTHING = {**DEFAULT, "dep": "2.0", "accel": "1.0", "helper": "1.0", "swapper": "1.0"}


def world(index) -> None:
    """app needs dep (the template pins 1.0 for main); the optional swapper needs dep 2.0 (replace allows it); accel
    brings helper; plugin (no-deps) names a dependency no index has."""
    index.add("app", "1.0", requires=("dep>=1",))
    index.add("dep", "1.0")
    index.add("dep", "2.0")
    index.add("accel", "1.0", requires=("helper",))
    index.add("helper", "1.0")
    index.add("swapper", "1.0", requires=("dep==2.0",))
    index.add("plugin", "1.0", requires=("ghost",))
    index.publish()


@pytest.fixture(scope="module")
def locked(shared_fake_host, tmp_path_factory) -> Path:
    index = shared_fake_host("pylock")
    world(index)
    root = tmp_path_factory.mktemp("pylock") / "p"
    write_project(
        root, CONFIG.format(index=index.index_url(), python=PYTHON), {"requirements.in.j2": "app\ndep==1.0\n"}
    )
    run_ok("all", "-C", str(root))
    return root


def pylock_of(root: Path) -> Path:
    return root / "locks" / CELL / "pylock.toml"


def test_the_layers_are_extras_with_their_markers(locked):
    path = pylock_of(locked)
    text = path.read_text()
    pylock = pylockfile.loads(text, str(path))
    assert Pylock.from_dict(parse_toml(text)) == pylock  # packaging validates it
    assert list(pylock.extras) == ["accel", "swapper"]
    markers = {(p.name, str(p.version)): str(p.marker) if p.marker else None for p in pylock.packages}
    assert markers == {
        ("app", "1.0"): None, ("plugin", "1.0"): None,  # main and the no-deps layer: always
        ("dep", "1.0"): '"swapper" not in extras', ("dep", "2.0"): '"swapper" in extras',
        ("accel", "1.0"): '"accel" in extras', ("helper", "1.0"): '"accel" in extras',
        ("swapper", "1.0"): '"swapper" in extras',
    }  # fmt: skip
    assert "ghost" not in text
    for extras, wanted in [((), DEFAULT), (("accel", "swapper"), EVERYTHING)]:
        env = {**default_environment(), "extras": frozenset(extras), "dependency_groups": frozenset()}
        chosen = {
            p.name: str(p.version) for p in pylock.packages if p.marker is None or p.marker.evaluate(env, "lock_file")
        }
        assert chosen == wanted


def test_the_main_view_of_the_pylock_is_what_installs_without_extras(locked):
    """uv's preferences and the other readers of main see each package once, at main's version."""
    pylock = pylockfile.main_only(pylockfile.loads(pylock_of(locked).read_text(), "pylock"))
    assert {p.name: str(p.version) for p in pylock.packages} == DEFAULT


def test_a_cell_without_layers_keeps_its_pylock_as_it_was():
    """No layers: the writer returns main's pylock unchanged (no ``extras`` key), so the committed
    locks' pylocks stay byte-identical."""
    main = Pylock.from_dict({"lock-version": "1.0", "created-by": "lockgen", "packages": []})
    assert pylockfile.with_layers(main, []) is main
    assert "extras" not in pylockfile.dumps(main)


def venv(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    subprocess.run(
        [pinned_uv_binary(), "venv", "-q", "--python", sys.executable, str(folder)], check=True, env=clean_env()
    )
    return folder


def installed(folder: Path) -> dict[str, str]:
    site = next(folder.glob("lib/python*/site-packages"))
    found = {}
    for info in site.glob("*.dist-info"):
        name, version = info.name.removesuffix(".dist-info").rsplit("-", 1)
        found[name.lower().replace("_", "-")] = version
    return {k: v for k, v in found.items() if k not in ("pip", "setuptools", "wheel")}


@pytest.mark.slow
def test_uv_installs_the_cell_with_and_without_its_optional_parts(locked, tmp_path):
    uv = pinned_uv_binary()
    target = venv(tmp_path, "uv")
    python = str(target / "bin" / "python")
    sync = [uv, "pip", "sync", "--python", python, str(pylock_of(locked))]
    subprocess.run(sync, check=True, env=clean_env(), capture_output=True)
    assert installed(target) == DEFAULT
    subprocess.run([*sync, "--extra", "accel", "--extra", "swapper"], check=True, env=clean_env(), capture_output=True)
    assert installed(target) == EVERYTHING
    subprocess.run([*sync, "--extra", "accel"], check=True, env=clean_env(), capture_output=True)
    assert installed(target) == {**DEFAULT, "accel": "1.0", "helper": "1.0"}
    # hashes are checked: a pylock whose hash of app's wheel is wrong installs nothing
    text = pylock_of(locked).read_text()
    app = next(p for p in pylockfile.loads(text, "pylock").packages if p.name == "app")
    digest = app.wheels[0].hashes["sha256"]
    bad = tmp_path / "bad" / "pylock.toml"
    bad.parent.mkdir()
    bad.write_text(text.replace(digest, "0" * 64))
    other = venv(tmp_path, "bad-venv")
    done = subprocess.run(
        [uv, "pip", "sync", "--python", str(other / "bin" / "python"), "--no-cache", str(bad)],
        env=clean_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode != 0 and "hash" in done.stderr.lower(), done.stderr
    assert installed(other) == {}


@pytest.fixture(scope="module")
def pip_26(tmp_path_factory) -> Path:
    """A wheelhouse holding this run's pip (26.3 or newer), repacked."""
    from importlib import metadata

    from packaging.version import Version

    from tests.support.wheelhouse import repack

    dist = metadata.distribution("pip")
    if Version(dist.version) < Version("26.3"):
        pytest.skip(f"needs pip 26.3 or newer in the test environment (the test extra), found {dist.version}")
    house = tmp_path_factory.mktemp("pip-house")
    repack(dist, house)
    return house


@pytest.mark.slow
def test_pip_installs_the_cell_with_and_without_its_optional_parts(locked, tmp_path, pip_26):
    target = tmp_path / "pip"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, env=clean_env())
    python = str(target / "bin" / "python")
    env = {**clean_env(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(
        [pinned_uv_binary(), "pip", "install", "-q", "--python", python, "--no-index", "--find-links", str(pip_26), "pip"],
        check=True, env=env,
    )  # fmt: skip
    # pip reads a pylock as a requirements source and would resolve the dependencies of each
    # package again (plugin's, which the no-deps layer leaves out): --no-deps installs the lock
    pip = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    lock = str(pylock_of(locked))
    done = subprocess.run([*pip, "-r", lock], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert installed(target) == DEFAULT
    done = subprocess.run([*pip, "-r", f"{lock}[accel,swapper]"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert installed(target) == EVERYTHING
    # hashes are checked
    text = pylock_of(locked).read_text()
    accel = next(p for p in pylockfile.loads(text, "pylock").packages if p.name == "app")
    bad = tmp_path / "bad" / "pylock.toml"
    bad.parent.mkdir()
    bad.write_text(text.replace(accel.wheels[0].hashes["sha256"], "0" * 64))
    other = tmp_path / "other"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other)], check=True, env=clean_env())
    subprocess.run(
        [pinned_uv_binary(), "pip", "install", "-q", "--python", str(other / "bin" / "python"), "--no-index",
         "--find-links", str(pip_26), "pip"],
        check=True, env=env,
    )  # fmt: skip
    done = subprocess.run(
        [str(other / "bin" / "python"), *pip[1:], "--no-cache-dir", "-r", str(bad)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "hash" in done.stderr.lower(), done.stderr
