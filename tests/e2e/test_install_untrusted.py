"""``lockgen install`` trusts nothing it reads (issue 15): a hostile or broken manifest, lock or
venv is refused (exit 2, naming the file and the field, no traceback) before anything is
installed or written; the commands are lockgen's own; the venv is checked against the locks'
hashes, not only versions; one install per venv; an installer killed by a signal stops the
install; a half-made venv is made again. Installs use the pinned uv and the pip 23.2.1 a fresh
CPython 3.11 venv ships."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from lockgen.install import steps
from lockgen.install.record import STATE_FILE
from lockgen.install.venv import CREATING, LOCK_FILE, Done
from lockgen.locks.store import FileLock
from tests.conftest import run_cli, write_project
from tests.support.fakehost import FakeHost
from tests.support.wheels import make_wheel

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{HOST}"
MAIN = f"locks/{CELL}.txt"
PYPI = "https://pypi.example"
pytestmark = [
    pytest.mark.uv,
    pytest.mark.skipif(
        sys.platform != "linux" or platform.machine() != "x86_64", reason="installs the linux x86_64 cell here"
    ),
]


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    index = FakeHost(tmp_path_factory.mktemp("index"))
    index.add("alpha", "1.0", requires=("beta",))
    index.add("beta", "1.0")
    index.add("gamma", "1.0")
    index.add("typer", "0.27.1")
    index.publish()
    yield index
    index.stop()


@pytest.fixture(scope="module")
def locked(fake, tmp_path_factory):
    """A cell with main (alpha, beta), an optional layer (gamma) and a no-deps layer (typer)."""
    config = f"""
        index-url = "{PYPI}/simple"
        optional = ["gamma"]
        no-deps = ["typer"]
        [tool.lockgen.mirrors]
        "{PYPI}" = "{fake.url}/pypi"
        "https://files.example" = "{fake.url}"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["{HOST}"]
    """
    root = write_project(tmp_path_factory.mktemp("untrusted") / "proj", config, {"requirements.in.j2": "alpha\n"})
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    return root


@pytest.fixture
def project(locked, tmp_path) -> Path:
    """This test's own copy of the locked project."""
    copy = tmp_path / "proj"
    shutil.copytree(locked, copy, ignore=shutil.ignore_patterns(".lockgen"))
    return copy


def edit_manifest(root: Path, change: Callable[[dict], object]) -> None:
    path = root / "locks" / "manifest.json"
    data = json.loads(path.read_text())
    change(data["cells"][CELL])
    path.write_text(json.dumps(data))


def _set(path: str, value: object) -> Callable[[dict], None]:
    """An edit of the cell entry at a dotted ``path`` (``layers.1.lock``)."""

    def change(entry: dict) -> None:
        *parents, last = path.split(".")
        target: object = entry
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]  # type: ignore[index]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value  # type: ignore[index]

    return change


RUN_CODE = ["uv", "run", "--no-project", "--", "python", "-c", "open('PWNED', 'w')"]
HOSTILE = {
    "lock-path-up": (_set("layers.1.lock", "../../x.txt"), "layers[1].lock: '../../x.txt' has an empty, '.' or '..'"),
    "lock-path-absolute": (_set("layers.0.lock", "/etc/passwd"), "layers[0].lock: '/etc/passwd' is absolute"),
    "lock-elsewhere": (_set("layers.1.lock", f"locks/{CELL}/no-deps.txt"), "layers[1].lock: 'locks/"),
    "layer-name": (
        _set("layers.1.name", "../../../../x"),
        "layers[1].name: the layer name '../../../../x' is not a plain name",
    ),
    "sha256-type": (_set("layers.0.sha256", 5), "layers[0].sha256: expected a non-empty string, got a number"),
    "layers-type": (_set("layers", {"a": 1}), "layers: expected a non-empty list of layers, got an object"),
    "kind": (
        _set("layers.1.kind", "script"),
        "layers[1].kind: 'script' is not one of main, optional, no-deps, unhashed",
    ),
    "hashes-off": (
        _set("layers.0.require_hashes", False),
        "layers[0].require_hashes: a main layer has require_hashes true",
    ),
    "recorded-code": (
        _set("layers.0.commands.uv", RUN_CODE),
        "layers[0].commands.uv: the recorded command is not the one",
    ),
    "no-verify-hashes": (
        _set(
            "layers.1.commands.uv",
            ["uv", "pip", "install", "--no-verify-hashes", "-r", f"locks/{CELL}/optional-gamma.txt"],
        ),
        "layers[1].commands.uv: the recorded command is not the one",
    ),
    "recorded-index": (
        _set("layers.0.index_url", "https://evil.example/simple"),
        "layers[0].index_url: the layer's sources are not the ones its lock",
    ),
    "index-url-scheme": (
        _set("index_url", "javascript:alert(1)"),
        "index_url: 'javascript:alert(1)' is not an http, https or file URL",
    ),
    "find-links-up": (
        _set("layers.0.find_links", ["../outside"]),
        "layers[0].find_links[0]: '../outside' has an empty",
    ),
    "environment": (
        _set("environment", {"LD_PRELOAD": "/tmp/evil.so"}),
        "environment.LD_PRELOAD: lockgen sets only MACOSX_DEPLOYMENT_TARGET",
    ),
    "python": (_set("python", "3.x"), f"cells.{CELL}.python: '3.x' is not a Python minor"),
    "requires": (_set("requires", None), f"cells.{CELL}.requires: expected an object, got null"),
    "status": (_set("status", "weird"), f"cells.{CELL}.status: 'weird' is not one of"),
    "alias-of": (_set("alias_of", "nowhere"), f"cells.{CELL}.alias_of: names 'nowhere', which is not a cell"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_manifest_entry_is_refused_before_anything(project, tmp_path, case):
    change, message = HOSTILE[case]
    edit_manifest(project, change)
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(tmp_path / "v"))
    assert run.code == 2, run.err
    assert "locks/manifest.json: " in run.err and message in run.err
    assert "Traceback" not in run.err
    assert not (tmp_path / "v").exists() and not (project / "PWNED").exists()
    assert not (project / ".lockgen").exists()  # nothing written


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "not a manifest lockgen wrote: nested deeper than 32 levels"),
        (
            '{"format": ' + "9" * 5000 + "}",
            "format: not a manifest lockgen wrote: the number 5000 characters is out of range",
        ),
        ('{"format": 4, "cells": []}', "cells: expected an object of cells, got a list"),
        ("\ufeff{}", "not valid JSON"),
        ('{"format": 4, "cells": {"a/b": {}}}', "cells.a/b: the cell name 'a/b' is not a plain name"),
    ],
    ids=["deep-nesting", "huge-integer", "cells-a-list", "byte-order-mark", "cell-name"],
)
def test_a_malformed_manifest_is_named_without_a_traceback(project, tmp_path, text, message):
    (project / "locks" / "manifest.json").write_text(text)
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(tmp_path / "v"))
    assert run.code == 2
    assert message in run.err
    assert "Traceback" not in run.err


def test_a_lock_that_is_a_symlink_out_of_the_locks_folder_is_refused(project, tmp_path):
    outside = tmp_path / "outside.txt"
    shutil.move(project / MAIN, outside)
    (project / MAIN).symlink_to(outside)
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(tmp_path / "v"))
    assert run.code == 2
    assert f"layers[0].lock: '{MAIN}' leads outside the locks folder locks/ (a symlink)" in run.err


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"\xff\xfe", "saved as UTF-16"), (b"caf\xe9", "not UTF-8 text (byte 0xe9")],
    ids=["utf16", "latin1"],
)
def test_a_lock_in_another_encoding_is_refused_before_anything_is_installed(project, tmp_path, data, message):
    layer = project / "locks" / CELL / "no-deps.txt"  # the last layer: main would have been installed before
    layer.write_bytes(data + layer.read_bytes())
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(tmp_path / "v"))
    assert run.code == 2
    assert f"locks/{CELL}/no-deps.txt: {message}" in run.err
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize("url", ["notaurl", "https://", "ftp://host/simple", "http://host:port/simple", "http://h/ x"])
def test_index_url_must_be_a_url(project, tmp_path, url):
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(tmp_path / "v"), "--index-url", url)
    assert run.code == 2
    assert "--index-url: " in run.err and "nothing was installed" in run.err
    assert not (tmp_path / "v").exists()


def test_a_second_install_into_the_venv_is_refused_naming_the_first(project, fake, tmp_path):
    venv = tmp_path / "v"
    venv.mkdir()

    def busy(holder: str) -> Exception:
        return AssertionError(holder)

    with FileLock(venv / LOCK_FILE, False, busy, ""):
        run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv))
    assert run.code == 2
    assert f"another lockgen install is working on the venv {venv} (pid " in run.err
    assert "pass --wait to queue behind it" in run.err
    assert sorted(p.name for p in venv.iterdir()) == [LOCK_FILE]  # nothing made


# -- installs into real venvs ---------------------------------------------------------------------


def installed(venv: Path) -> dict[str, str]:
    from lockgen.install.venv import Venv

    return {name: versions[0] for name, versions in Venv(venv).distributions(venv).items()}


@pytest.mark.slow
def test_with_wait_a_second_install_queues_behind_the_first(project, tmp_path, monkeypatch):
    """The first install (here: the test holding the venv's lock) lets go only once the second
    has waited for it; the second then installs."""
    from lockgen.locks import store

    venv = tmp_path / "v"
    venv.mkdir()
    held, waited = threading.Event(), threading.Event()
    real_sleep = time.sleep

    def polling(seconds: float) -> None:  # the second install polls the lock: it is waiting
        waited.set()
        real_sleep(seconds)

    def hold() -> None:
        with FileLock(venv / LOCK_FILE, False, AssertionError, ""):
            held.set()
            waited.wait(timeout=120)

    monkeypatch.setattr(store, "time", types.SimpleNamespace(sleep=polling))  # the lock's poll, only
    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--wait")
    thread.join()
    assert waited.is_set()
    assert run.code == 0, run.err
    assert installed(venv)["alpha"] == "1.0"


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_foreign_build_at_the_locked_version_is_reinstalled_from_the_locks_hashes(project, tmp_path, installer):
    """uv's sync and pip both keep an installed alpha 1.0 whatever file it came from; lockgen
    traces every distribution to the locks' hashes and reinstalls what it cannot."""
    venv = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)  # its own pip: 23.2.1 on CPython 3.11
    other = make_wheel(tmp_path, "alpha", "1.0", requires=("beta", "extra-dep; python_version < '3'"))
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(other)], check=True)
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", installer)
    assert run.code == 0, run.err
    assert "reinstalling 1 distribution lockgen cannot trace to the locks' hashes" in run.out
    assert "alpha" in run.out.split("reinstalling", 1)[1].split("\n", 1)[0]
    metadata = next(venv.glob("lib/python*/site-packages/alpha-1.0.dist-info")) / "METADATA"
    assert "extra-dep" not in metadata.read_text()  # the locked build now
    assert "4 from archives with the locks' hashes" in run.out
    state = json.loads((venv / STATE_FILE).read_text())
    assert sorted(state["distributions"]) == ["alpha", "beta", "gamma", "typer"]
    again = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", installer)
    assert "up to date" in again.out

    # a file changed after the install: not up to date; pip (which copies files) installs it again
    module = next(venv.glob("lib/python*/site-packages/beta/__init__.py"))
    text = module.read_text()
    module.unlink()  # a new file: uv links its cache's files into venvs, an edit in place would change the cache too
    module.write_text(text + "# changed\n")
    fixed = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", "pip")
    assert fixed.code == 0, fixed.err
    assert "cannot trace to the locks' hashes (installed another way, or changed since): beta" in fixed.out
    assert "# changed" not in module.read_text()


@pytest.mark.slow
def test_an_installer_killed_by_a_signal_stops_the_install(project, tmp_path, monkeypatch):
    """An optional layer whose installer the out-of-memory killer ends is not "rolled back and
    skipped" (exit 0, for good): the install stops with exit 1, records nothing, and the next run
    installs the layer."""
    venv = tmp_path / "v"
    real = steps.run

    def oom(argv, env, cwd):
        if any("optional-gamma" in token for token in argv):
            return Done(-9, "")
        return real(argv, env, cwd)

    monkeypatch.setattr(steps, "run", oom)
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv))
    assert run.code == 1
    assert "was killed by SIGKILL (the kernel's out-of-memory killer sends it, as does kill -9)" in run.err
    assert "rolled back" not in run.err
    assert not (venv / STATE_FILE).exists()
    monkeypatch.setattr(steps, "run", real)
    again = run_cli("install", CELL, "-C", str(project), "--venv", str(venv))
    assert again.code == 0, again.err
    assert installed(venv)["gamma"] == "1.0"


@pytest.mark.slow
def test_an_installer_stopped_by_ctrl_c_exits_130(project, tmp_path, monkeypatch):
    monkeypatch.setattr(steps, "run", lambda argv, env, cwd: Done(-2, ""))
    venv = tmp_path / "v"
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv))
    assert run.code == 130
    assert "was stopped (SIGINT)" in run.err


@pytest.mark.slow
def test_a_bad_index_url_never_leaves_a_sticky_rollback(project, tmp_path):
    """A rolled-back optional layer is retried when the command that failed differs (another
    --index-url, other mirrors), not skipped as "rolled back on the last install"."""
    venv = tmp_path / "v"
    first = run_cli(
        "install", CELL, "-C", str(project), "--venv", str(venv), "--index-url", "http://127.0.0.1:9/simple"
    )
    assert first.code == 1  # main fails: nothing is up to date afterwards
    assert not (venv / STATE_FILE).exists()
    good = run_cli("install", CELL, "-C", str(project), "--venv", str(venv))
    assert good.code == 0, good.err
    assert installed(venv)["gamma"] == "1.0"


@pytest.mark.slow
def test_a_half_made_venv_is_made_again(project, tmp_path):
    venv = tmp_path / "v"
    (venv / "bin").mkdir(parents=True)
    (venv / CREATING).write_text("pid 1: lockgen install is creating this venv\n")
    (venv / "pyvenv.cfg").write_text("home = /nowhere\n")  # written, and then the create was cut short
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv))
    assert run.code == 0, run.err
    assert "left half-made by an interrupted install; making it again" in run.out
    assert not (venv / CREATING).exists()
    assert installed(venv)["alpha"] == "1.0"


@pytest.mark.slow
def test_a_folder_that_is_not_a_venv_is_still_refused(project, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(folder))
    assert run.code == 2
    assert "exists and is not a virtual environment" in run.err
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
