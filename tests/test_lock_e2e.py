"""End to end: the real uv resolves projects against the fake index on loopback."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lockgen.resolve import uv
from tests.conftest import assert_locked, forbid_processes, run_cli, run_ok, write_project

REQUIREMENTS = """\
app
{% if os == "macos" %}macos14only{% endif %}
winonly; sys_platform == "win32"
linuxonly; sys_platform == "linux"
special
"""


#: The cells of :func:`project`.
CELLS = [
    f"{p}-cpu-py{v}"
    for p in ("linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-aarch64")
    for v in ("3.10", "3.13")
]


@pytest.fixture(scope="module")
def packages(shared_fake_host):
    """The fake PyPI, shared by the module (tests that change an index use ``index``): pure
    wheels, per-platform wheels, a macOS-14-only wheel, a flat page."""
    index = shared_fake_host("index")
    index.add("app", "1.0", requires=('helper; python_version >= "3.12"', 'colorama; sys_platform == "win32"'))
    for name in ("helper", "colorama", "winonly", "linuxonly"):
        index.add(name, "1.0")
    index.add("macos14only", "1.0", tag="py3-none-macosx_14_0_arm64")
    index.add("special", "1.0", source="flat")  # only on a find-links page
    publish(index, "alpha", "beta")
    return index


def project(root: Path, index, requirements=REQUIREMENTS, extra="") -> Path:
    config = f"""
        index-url = "{index.index_url()}"
        find-links = {{ special = "{index.flat_url("flat")}" }}
        {extra}
        [tool.lockgen.matrix]
        os = ["linux", "windows", "macos"]
        arch = ["x86_64", "aarch64"]
        backend = ["cpu"]
        python = ["3.10", "3.13"]
        exclude = [{{ os = "windows", arch = "aarch64" }}, {{ os = "macos", arch = "x86_64" }}]
    """
    return write_project(root, config, {"requirements.in.j2": requirements})


def publish(index, *names: str, version: str = "1.0") -> None:
    """Add pure wheels of ``names`` at ``version`` to the fake index and publish its pages."""
    for name in names:
        index.add(name, version)
    index.publish()


def one_cell(root: Path, index, requirements: str, python: str = "3.12", extra: str = "") -> Path:
    """A project with the single cell linux-x86_64-cpu-py<python> over the fake index."""
    config = f"""
        index-url = "{index.index_url()}"
        {extra}
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["{python}"]
    """
    return write_project(root, config, {"requirements.in.j2": requirements})


@pytest.fixture(scope="module")
def locked_once(packages, tmp_path_factory) -> Path:
    """:func:`project` over ``packages``, locked once for the module (read it; to change it,
    take :func:`locked_project`)."""
    root = project(tmp_path_factory.mktemp("locked") / "proj", packages)
    run_ok("all", "-C", str(root))
    assert_locked(root, CELLS)
    return root


@pytest.fixture
def locked_project(locked_once, tmp_path) -> Path:
    """A copy of the locked project (its locks and work folder) for this test to change."""
    return Path(shutil.copytree(locked_once, tmp_path / "proj"))


def locks(root: Path) -> dict[str, bytes]:
    """Every file under ``locks/``, by path relative to it."""
    folder = root / "locks"
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def main_locks(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "locks").iterdir() if p.is_file())


def pins(text: str) -> set[str]:
    return {line.split(" ")[0] for line in text.splitlines() if "==" in line and not line.startswith("#")}


#: C05: markers are judged against the target, never against this linux host; C06: each lock is
#: right for its target Python (the host is 3.11; no interpreter download); a wheel that exists
#: only for macOS 14 resolves with the default target. (cell, pins it has, pins it must not have)
FITS = [
    ("windows-x86_64-cpu-py3.13", {"winonly==1.0", "colorama==1.0"}, {"linuxonly==1.0"}),
    ("linux-x86_64-cpu-py3.13", {"linuxonly==1.0", "helper==1.0"}, {"winonly==1.0", "colorama==1.0"}),
    ("macos-aarch64-cpu-py3.13", {"macos14only==1.0"}, set()),
    ("linux-x86_64-cpu-py3.10", set(), {"helper==1.0"}),
]


@pytest.mark.parametrize(("cell", "present", "absent"), FITS, ids=[f[0] for f in FITS])
def test_each_lock_fits_its_target(locked_once, cell, present, absent):
    locked = pins((locked_once / "locks" / f"{cell}.txt").read_text())
    assert present <= locked
    assert not absent & locked


def test_lock_all(locked_once, packages):
    root = locked_once
    files = locks(root)
    assert len(files) == 8 * 2 + 1  # 8 cells (lock + pylock.toml) and the manifest
    text = {name: data.decode() for name, data in files.items()}

    lock = text["linux-aarch64-cpu-py3.10.txt"]
    assert lock.startswith("# This file is generated by lockgen")
    assert "# Regenerate: lockgen lock linux-aarch64-cpu-py3.10\n" in lock
    assert "# target: aarch64-manylinux_2_28, Python 3.10, backend cpu\n" in lock
    assert f"# uv: {uv.uv_version()}\n" in lock
    assert "# input-hash: sha256:" in lock
    assert f"# index-url: {packages.index_url()}\n" in lock  # a header field, not an option line (C18, issue 7)
    assert f"# find-links: {packages.flat_url('flat')}\n" in lock
    assert (
        f"--index-url {packages.index_url()} --find-links {packages.flat_url('flat')} -r locks/linux-aarch64-cpu-py3.10.txt"
        in lock
    )
    assert "\n--" not in lock
    assert "--hash=sha256:" in lock
    assert "# via templates/requirements.in.j2" in lock and ".lockgen" not in lock
    for name, body in text.items():  # nothing machine-specific
        for bad in (str(root.parent), str(Path.home()), sys.executable, "/tmp/"):
            assert bad not in body, (name, bad)

    manifest = json.loads(text["manifest.json"])
    entry = manifest["cells"]["macos-aarch64-cpu-py3.13"]
    assert entry["lock"] == "locks/macos-aarch64-cpu-py3.13.txt"
    assert entry["target"] == {"platform": "aarch64-apple-darwin", "python": "3.13", "macos": "14.0"}
    assert (entry["os"], entry["arch"], entry["backend"], entry["python"], entry["status"]) == (
        "macos",
        "aarch64",
        "cpu",
        "3.13",
        "locked",
    )
    assert entry["requires"] == {"python": "3.13", "interpreter": "aarch64", "macos": "14.0"}
    assert entry["environment"] == {"MACOSX_DEPLOYMENT_TARGET": "14.0"}
    assert entry["uv"] == uv.uv_version() and entry["input_hash"].startswith("sha256:")
    assert entry["sha256"] == hashlib.sha256(files["macos-aarch64-cpu-py3.13.txt"]).hexdigest()
    assert text["manifest.json"] == json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def test_noop_rerun_spawns_no_uv(locked_project, monkeypatch):
    root = locked_project
    before = locks(root)
    forbid_processes(monkeypatch)
    run = run_ok("all", "-C", str(root))
    assert "8 up to date" in run.err
    assert locks(root) == before


def test_byte_identical_locks_c11(tmp_path, packages, locked_once, monkeypatch):
    """C11: fresh vs warm cache, another cache folder, another working directory, another
    project folder, with and without existing locks: the same bytes."""
    root = project(tmp_path / "proj", packages)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "fresh-cache"))
    run_ok("all", "-C", str(root))
    first = locks(root)
    assert first == locks(locked_once)  # the session's cache, another folder
    run_ok("all", "--force", "-C", str(root))  # warm cache, existing locks
    assert locks(root) == first
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "other-cache"))
    shutil.rmtree(root / "locks")
    shutil.rmtree(root / ".lockgen")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    run_ok("all", "-C", "../proj")  # no locks, other cwd, relative -C
    assert locks(root) == first


def test_failing_cell_keeps_its_lock_and_others_finish(locked_project):
    root = locked_project
    before = locks(root)
    broken = REQUIREMENTS + 'beta\n{% if os == "windows" %}does-not-exist==9.9{% endif %}\n'
    (root / "templates" / "requirements.in.j2").write_text(broken)
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "windows-x86_64-cpu-py3.10: failed" in run.err
    # the same uv error in both windows cells is printed once, naming both (C28)
    assert "error: cells windows-x86_64-cpu-py3.10, windows-x86_64-cpu-py3.13: uv could not resolve it" in run.err
    assert "does-not-exist" in run.err  # uv's explanation is shown
    after = locks(root)
    for name in before:
        if name.startswith("windows"):
            assert after[name] == before[name]  # old lock untouched
        elif name.endswith(".txt"):
            assert after[name] != before[name] and b"beta==1.0" in after[name]
    assert not [p for p in (root / "locks").iterdir() if p.name.startswith(".")]  # no temp files left


def test_macos_minimum_is_a_setting(tmp_path, packages):
    root = project(tmp_path / "proj", packages, extra='macos = "13.0"')
    run = run_cli("lock", "macos-aarch64-cpu-py3.13", "-C", str(root))
    assert run.code == 1
    assert "macos14only" in run.err


def test_pin_bump_changes_only_what_it_must(tmp_path, index):
    publish(index, "alpha", "beta")
    root = one_cell(tmp_path / "proj", index, "alpha=={{ pins.alpha }}\nbeta\n", extra='pins = { alpha = "1.0" }')
    run_ok("all", "-C", str(root))
    for name in ("alpha", "beta"):  # newer releases appear upstream
        index.add(name, "1.1")
    index.publish()
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('alpha = "1.0"', 'alpha = "1.1"'))
    run_ok("all", "-C", str(root))
    lock = (root / "locks" / "linux-x86_64-cpu-py3.12.txt").read_text()
    assert {"alpha==1.1", "beta==1.0"} <= pins(lock)  # beta kept its locked version
    run_ok("all", "--upgrade-package", "beta", "-C", str(root))
    assert "beta==1.1" in pins((root / "locks" / "linux-x86_64-cpu-py3.12.txt").read_text())


def test_installers_accept_the_lock(tmp_path, index):
    index.add("alpha", "1.0", requires=("beta",))
    index.add("beta", "1.0")
    index.publish()
    host = f"{sys.version_info.major}.{sys.version_info.minor}"
    root = one_cell(tmp_path / "proj", index, "alpha\n", python=host)
    run_ok("all", "-C", str(root))
    (layer,) = json.loads((root / "locks" / "manifest.json").read_text())["cells"][f"linux-x86_64-cpu-py{host}"][
        "layers"
    ]
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "UV_PYTHON_DOWNLOADS": "never"}
    env = {k: v for k, v in env.items() if not k.startswith("PIP_") or k == "PIP_CONFIG_FILE"}
    pip_args = layer["commands"]["pip"][1:]  # the recorded command, run from the project root
    pip = subprocess.run(
        [sys.executable, "-m", "pip", *pip_args, "--isolated", "--target", str(tmp_path / "pip-target"), "--no-cache-dir"],
        capture_output=True, text=True, env=env, cwd=root,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    assert (tmp_path / "pip-target" / "beta").is_dir()
    venv = tmp_path / "venv"
    subprocess.run(
        [uv.uv_binary(), "venv", str(venv), "--python", sys.executable, "--no-config"],
        check=True,
        env=env,
        capture_output=True,
    )
    sync = subprocess.run(
        [uv.uv_binary(), *layer["commands"]["uv"][1:], "--python", str(venv), "--no-config"],
        capture_output=True, text=True, env=env, cwd=root,
    )  # fmt: skip
    assert sync.returncode == 0, sync.stderr


def test_lock_selected_cells_only(tmp_path, packages):
    root = project(tmp_path / "proj", packages)
    run_ok("lock", "linux-x86_64-cpu-py3.10", "-C", str(root))
    assert main_locks(root) == ["linux-x86_64-cpu-py3.10.txt", "manifest.json"]
    run_ok("all", "--only", "os=windows", "-C", str(root))
    assert main_locks(root) == [
        "linux-x86_64-cpu-py3.10.txt", "manifest.json", "windows-x86_64-cpu-py3.10.txt", "windows-x86_64-cpu-py3.13.txt",
    ]  # fmt: skip


def test_check_reports_stale_locks_and_edited_files(tmp_path, packages, locked_project):
    fresh = project(tmp_path / "fresh", packages)
    assert run_cli("check", "-C", str(fresh)).code == 1  # nothing locked yet
    root = locked_project
    run_ok("check", "-C", str(root))
    lock = root / "locks" / "linux-x86_64-cpu-py3.13.txt"
    lock.write_text(lock.read_text() + "# hand edit\n")
    run = run_cli("check", "-C", str(root))
    assert run.code == 1 and "manifest.json does not match the locks" in run.out
    (root / "templates" / "requirements.in.j2").write_text(REQUIREMENTS + "beta\n")
    run = run_cli("check", "-C", str(root))
    assert run.code == 1 and "linux-x86_64-cpu-py3.13: stale" in run.out


def test_skipped_cells_are_listed_not_resolved(tmp_path, packages):
    root = project(tmp_path / "proj", packages, extra="")
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text()
        + textwrap.dedent("""
        [[tool.lockgen.rules]]
        match = { os = "windows" }
        skip = "no windows build of app yet"
    """)
    )
    run = run_ok("all", "-C", str(root))
    assert "windows-x86_64-cpu-py3.10: skipped: no windows build of app yet" in run.err
    assert not (root / "locks" / "windows-x86_64-cpu-py3.10.txt").exists()
    manifest = json.loads((root / "locks" / "manifest.json").read_text())
    entry = manifest["cells"]["windows-x86_64-cpu-py3.10"]
    assert entry["status"] == "skipped" and entry["reason"] == "no windows build of app yet"


def test_hand_edited_lock_is_noticed_and_relocked(locked_project):
    root = locked_project
    lock = root / "locks" / "linux-x86_64-cpu-py3.13.txt"
    original = lock.read_text()
    lock.write_text(original.replace("alpha", "alpha").replace("app==1.0", "app==0.9"))
    run = run_cli("check", "-C", str(root))
    assert run.code == 1 and "linux-x86_64-cpu-py3.13: edited" in run.out
    run_ok("all", "-C", str(root))
    assert lock.read_text() == original


def test_locks_of_removed_cells_are_reported_then_removed(locked_project):
    root = locked_project
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('python = ["3.10", "3.13"]', 'python = ["3.13"]'))
    run = run_cli("check", "-C", str(root))
    assert run.code == 1 and "linux-x86_64-cpu-py3.10: orphan" in run.out
    rows = [
        row for row in json.loads(run_cli("check", "--json", "-C", str(root)).out)["cells"] if row["state"] == "orphan"
    ]
    assert len(rows) == len({row["cell"] for row in rows}) == 4  # the four cells of Python 3.10, once each
    assert [row for row in rows if row["cell"] == "linux-x86_64-cpu-py3.10"] == [
        {
            "cell": "linux-x86_64-cpu-py3.10", "state": "orphan", "reasons": [
                "its cell is not resolved by the matrix any more",
                "lock files left: locks/linux-x86_64-cpu-py3.10.txt, locks/linux-x86_64-cpu-py3.10/; `lockgen all` removes them",
            ],
        }
    ]  # fmt: skip  # one row per cell, not one for the lock and one for its folder
    run = run_cli("all", "-C", str(root))
    assert run.code == 0 and "linux-x86_64-cpu-py3.10: removed" in run.err
    assert not (root / "locks" / "linux-x86_64-cpu-py3.10.txt").exists()
    run_ok("check", "-C", str(root))


def test_hashes_come_from_the_artifacts_not_from_the_old_lock(tmp_path, index):
    """uv copies hashes of kept versions from the existing lock; lockgen rewrites them."""
    index.add("alpha", "1.0")
    index.publish()
    root = one_cell(tmp_path / "proj", index, "alpha\n")
    run_ok("all", "-C", str(root))
    lock = root / "locks" / "linux-x86_64-cpu-py3.12.txt"
    old = lock.read_text()
    index.sources["pypi"].clear()  # the same file name, rebuilt with other bytes
    new_wheel = index.add("alpha", "1.0", requires=("beta; python_version < '3'",))
    index.publish()
    digest = hashlib.sha256((index.root / "files" / new_wheel.rsplit("/", 1)[1]).read_bytes()).hexdigest()
    assert digest not in old
    run_ok("all", "--force", "-C", str(root))
    assert f"--hash=sha256:{digest}" in lock.read_text()


def test_an_edited_pin_is_not_kept_as_a_preference(tmp_path, index):
    for version in ("1.0", "1.1"):
        index.add("alpha", version)
    index.publish()
    root = one_cell(tmp_path / "proj", index, "alpha\n")
    run_ok("all", "-C", str(root))
    lock = root / "locks" / "linux-x86_64-cpu-py3.12.txt"
    resolved = lock.read_text()
    assert "alpha==1.1" in resolved
    lock.write_text(resolved.replace("alpha==1.1", "alpha==1.0"))
    assert run_cli("check", "-C", str(root)).code == 1
    run = run_cli("all", "-C", str(root))
    assert run.code == 0 and "edited by hand" in run.err
    assert lock.read_text() == resolved


def test_a_stray_layer_lock_is_noticed_and_removed(tmp_path, index):
    publish(index, "alpha", "beta")
    root = one_cell(tmp_path / "proj", index, "alpha\n", extra='optional = ["beta"]')
    run_ok("all", "-C", str(root))
    folder = root / "locks" / "linux-x86_64-cpu-py3.12"
    layer = folder / "optional-beta.txt"
    assert "beta==1.0" in layer.read_text()
    (folder / "optional-old.txt").write_text(layer.read_text())  # e.g. left from an older config
    run = run_cli("check", "-C", str(root))
    assert run.code == 1 and "linux-x86_64-cpu-py3.12: edited" in run.out
    run_ok("all", "-C", str(root))
    assert sorted(p.name for p in folder.iterdir()) == ["optional-beta.txt", "pylock.toml"]
    run_ok("check", "-C", str(root))
