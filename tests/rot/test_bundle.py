"""``lockgen bundle CELL… -o DIR``: every locked file of the cells in one folder, stored once by
sha256 and verified against the locks, with rewritten locks, the manifest of those cells, the
selector and an install script; it installs with no network (``lockgen install --from DIR``, the
pinned uv and pip 23.2.1 by the manifest's commands, ``install.sh``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockgen.locks.lock import Lock
from lockgen.resolve.uv import uv_binary
from tests.conftest import lock_files, run_cli, run_ok
from tests.support.rotworld import CELLS, RotHost, locked_world, publish

ALPHA, BETA, GAMMA = "alpha-1.0-py3-none-any.whl", "beta-2.0-py3-none-any.whl", "gamma-3.0-py3-none-any.whl"
CELL = CELLS[0]  # linux-x86_64-cpu-py3.11: the interpreter the tests install with


@pytest.fixture
def pypi(tmp_path):
    host = RotHost(tmp_path / "pypi")
    publish(host)
    yield host
    host.stop()


@pytest.fixture
def world(pypi, tmp_path, monkeypatch):
    return locked_world(tmp_path / "proj", pypi, monkeypatch)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_bundle_stores_each_file_once_and_points_its_locks_at_them(world, tmp_path):
    before = lock_files(world.root)
    out = tmp_path / "bundle"
    done = run_ok("bundle", *CELLS, "-o", str(out))
    assert "bundled 2 cells" in done.err and "3 files (3 downloaded, 0 reused)" in done.err
    files = _files(out)
    stored = sorted(p for p in files if p.startswith("files/"))
    assert sorted(p.rsplit("/", 1)[1] for p in stored) == sorted([ALPHA, BETA, GAMMA])  # shared by both cells: once
    for path in stored:
        import hashlib

        assert path.split("/")[1] == hashlib.sha256(files[path]).hexdigest()  # content-addressed
    assert {"bundle.json", "cellselect.py", "install.sh", "locks/manifest.json", "index/alpha/index.html"} <= set(files)
    main = Lock.parse(files[f"locks/{CELL}.txt"].decode(), "main")
    assert main.header.index_url == "index" and main.header.find_links == ()
    assert "--index-url index locks/linux-x86_64-cpu-py3.11.txt" in files[f"locks/{CELL}.txt"].decode()
    page = files["index/alpha/index.html"].decode()
    assert 'href="../../files/' in page and f"/{ALPHA}#sha256=" in page
    pylock = files[f"locks/{CELL}/pylock.toml"].decode()
    assert 'path = "../../files/' in pylock and "https://" not in pylock
    manifest = json.loads(files["locks/manifest.json"])
    assert sorted(manifest["cells"]) == list(CELLS) and "detect" not in manifest
    layers = manifest["cells"][CELL]["layers"]
    assert [layer["name"] for layer in layers] == ["main", "optional-gamma"]
    assert layers[1]["commands"]["pip"] == [
        "pip", "install", "--require-hashes", "--index-url", "index", "-r", f"locks/{CELL}/optional-gamma.txt",
    ]  # fmt: skip
    text = "\n".join(v.decode(errors="replace") for k, v in files.items() if not k.startswith("files/"))
    assert str(tmp_path) not in text and "127.0.0.1" not in text  # no machine path, no mirror
    assert lock_files(world.root) == before  # the project's locks are not touched
    (out / "select.py").write_bytes(files["cellselect.py"])  # the selector's old name, as an earlier lockgen wrote it
    again = run_ok("bundle", *CELLS, "-o", str(out))
    assert "3 files (0 downloaded, 3 reused)" in again.err
    assert _files(out) == files  # the same locks give the same bundle, byte for byte (and no select.py)


def test_a_file_that_changed_since_it_was_locked_is_not_bundled(world, tmp_path):
    path = world.file(BETA)
    path.write_bytes(path.read_bytes() + b"\0")
    done = run_cli("bundle", CELL, "-o", str(tmp_path / "bundle"))
    assert done.code == 1
    assert f"{CELL}: beta 2.0: https://files.pythonhosted.org/{BETA} has sha256 " in done.err
    assert "the lock has" in done.err
    assert not list((tmp_path / "bundle").rglob(BETA))


def test_a_bundle_goes_only_into_a_new_or_empty_folder_or_a_bundle(world, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    done = run_cli("bundle", CELL, "-o", str(tmp_path / "busy"))
    assert done.code == 2 and "is not a lockgen bundle" in done.err
    done = run_cli("bundle", "linux-x86_64-cpu-py3.9", "-o", str(tmp_path / "b"))
    assert done.code == 2


def test_a_smaller_bundle_in_the_same_folder_drops_the_files_it_no_longer_needs(world, tmp_path, monkeypatch):
    out = tmp_path / "bundle"
    run_ok("bundle", *CELLS, "-o", str(out))
    run_ok("bundle", CELL, "-o", str(out))
    assert sorted(json.loads((out / "locks" / "manifest.json").read_text())["cells"]) == [CELL]
    assert len(list((out / "files").glob("*/*"))) == 3  # the cells share every file here


def test_the_bundles_script_stops_with_the_selectors_refusal(world, tmp_path):
    """``install.sh`` with no cell asks ``select.py``; when it refuses (here: the manifest has no
    ``[detect]`` rules; on a user's machine: no GPU they support), the script stops with its exit
    code and message, not with "no cell  in this bundle" for an empty name, and makes no venv."""
    out = tmp_path / "bundle"
    run_ok("bundle", CELL, "-o", str(out))
    env = {**os.environ, "PYTHON": sys.executable, "VENV": str(tmp_path / "venv")}
    for args in ([], ["--cpu"], ["--no-such-option"]):
        run = subprocess.run(["sh", str(out / "install.sh"), *args], capture_output=True, text=True, env=env)
        assert run.returncode == 2, (args, run.stdout + run.stderr)
        assert "no cell" not in run.stderr and run.stderr.strip(), (args, run.stderr)
        assert not (tmp_path / "venv").exists()


def test_install_from_a_bundle_is_refused_for_a_folder_that_is_not_one(tmp_path, cli):
    done = cli("install", "--from", str(tmp_path), "x")
    assert done.code == 2 and "is not a lockgen bundle" in done.err


# -- installing with no network (slow: venvs, both installers) -------------------------------------

#: Every host blocked for the installers: proxies at a closed port (the fake hosts are stopped too).
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "ALL_PROXY": "http://127.0.0.1:9",
           "NO_PROXY": "", "no_proxy": "", "UV_OFFLINE": "1"}  # fmt: skip


def _python311() -> str:
    found = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
    candidates = (
        sorted(Path(found.stdout.strip(), "versions").glob("3.11.*/bin/python3")) if found.returncode == 0 else []
    )
    if not candidates and sys.version_info[:2] == (3, 11):
        return sys.executable
    if not candidates:
        pytest.skip("needs a CPython 3.11")
    return str(candidates[-1])


def _installed(venv: Path) -> dict[str, str]:
    code = "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True)
    return {k.lower(): v for k, v in json.loads(done.stdout).items() if k.lower() not in ("pip", "setuptools", "wheel")}


@pytest.mark.slow
def test_a_bundle_installs_with_no_network_with_uv_and_pip(world, pypi, tmp_path, monkeypatch):
    out = tmp_path / "bundle"
    run_ok("bundle", CELL, "-o", str(out))
    pypi.stop()  # and every proxy points at a closed port
    for key, value in OFFLINE.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    wanted = {"alpha": "1.0", "beta": "2.0", "gamma": "3.0"}
    python = _python311()
    # lockgen install --from, with the pinned uv and with a fresh venv's pip (23.2.1 on CPython 3.11.7)
    done = run_cli("install", "--from", str(out), CELL, "--venv", str(tmp_path / "uv-venv"))
    assert done.code == 0, done.err + done.out
    assert _installed(tmp_path / "uv-venv") == wanted
    subprocess.run([python, "-m", "venv", str(tmp_path / "pip-venv")], check=True)
    done = run_cli("install", "--from", str(out), CELL, "--venv", str(tmp_path / "pip-venv"), "--installer", "pip")
    assert done.code == 0, done.err + done.out
    assert _installed(tmp_path / "pip-venv") == wanted
    # the manifest's commands, run by hand from the bundle (docs/locks-over-time.md)
    env = {**os.environ, **OFFLINE, "PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1"}
    subprocess.run([python, "-m", "venv", str(tmp_path / "by-hand")], check=True)
    pip = [str(tmp_path / "by-hand" / "bin" / "python"), "-I", "-m", "pip", "--isolated", "--disable-pip-version-check"]
    manifest = json.loads((out / "locks" / "manifest.json").read_text())
    for layer in manifest["cells"][CELL]["layers"]:
        subprocess.run([*pip, *layer["commands"]["pip"][1:]], cwd=out, env=env, check=True, capture_output=True)
    assert _installed(tmp_path / "by-hand") == wanted
    subprocess.run([uv_binary(), "venv", "-q", "--python", python, str(tmp_path / "uv-hand")], env=env, check=True)
    uv_env = {**env, "VIRTUAL_ENV": str(tmp_path / "uv-hand")}
    for layer in manifest["cells"][CELL]["layers"]:
        subprocess.run(
            [uv_binary(), *layer["commands"]["uv"][1:]], cwd=out, env=uv_env, check=True, capture_output=True
        )
    assert _installed(tmp_path / "uv-hand") == wanted
    # the cell's pylock.toml (PEP 751) installs from the bundle too
    subprocess.run([uv_binary(), "venv", "-q", "--python", python, str(tmp_path / "pylock")], env=env, check=True)
    subprocess.run([uv_binary(), "pip", "sync", f"locks/{CELL}/pylock.toml"], cwd=out, check=True, capture_output=True,
                   env={**env, "VIRTUAL_ENV": str(tmp_path / "pylock")})  # fmt: skip
    assert _installed(tmp_path / "pylock") == {"alpha": "1.0", "beta": "2.0"}  # main only: layers have no pylock
    # and the bundle's own script, with pip
    run = subprocess.run(["sh", str(out / "install.sh"), CELL], cwd=tmp_path, capture_output=True, text=True,
                         env={**env, "PYTHON": python, "VENV": "script-venv"})  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert _installed(tmp_path / "script-venv") == wanted


@pytest.mark.slow
def test_a_bundle_installs_with_ensurepips_pip_and_its_script_runs_beside_a_select_py(
    world, pypi, tmp_path, monkeypatch
):
    """A bundle of an earlier lockgen held ``select.py`` (the selector), which hid the stdlib ``select`` from the
    ``ensurepip`` lockgen ran in the bundle for a lockgen without pip (pipx, ``uv tool``): "no pip
    in it and ensurepip failed: … module 'select' has no attribute 'select'". Every Python runs
    isolated now (``-I``), lockgen's and the script's, so a folder's own ``select.py`` or
    ``json.py`` (here: the one the script runs in) hides nothing."""
    from lockgen.install import venv as venv_module

    out = tmp_path / "bundle"
    run_ok("bundle", CELL, "-o", str(out))
    pypi.stop()
    for key, value in OFFLINE.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(venv_module, "lockgen_has_pip", lambda: False)
    monkeypatch.chdir(tmp_path)
    wanted = {"alpha": "1.0", "beta": "2.0", "gamma": "3.0"}
    done = run_cli("install", "--from", str(out), CELL, "--venv", str(tmp_path / "pip-venv"), "--installer", "pip")
    assert done.code == 0, done.err + done.out
    assert _installed(tmp_path / "pip-venv") == wanted
    work = tmp_path / "work"
    work.mkdir()
    for name in ("select", "json"):
        (work / f"{name}.py").write_text(f"raise SystemExit('{name}.py of the working folder was imported')\n")
    env = {**os.environ, **OFFLINE, "PIP_CONFIG_FILE": os.devnull, "PYTHON": _python311(), "VENV": "script-venv"}
    run = subprocess.run(["sh", str(out / "install.sh"), CELL], cwd=work, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert _installed(work / "script-venv") == wanted
