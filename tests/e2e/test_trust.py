"""Trust (issue 8), end to end against fake hosts and the real uv: failed runs leave no lie,
aliases and skipped cells, backend invariants (C27). Unreachable hosts (C28), fresh pages under
``--force`` and hashes checked against their files are in tests/e2e/test_trust_sources.py."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lockgen.resolve import uv
from tests.conftest import locked_versions, run_cli, write_project
from tests.support.faulthost import FaultHost

pytestmark = pytest.mark.uv  # these tests lock with the real uv

ONE = 'os = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]'
CELL = "linux-x86_64-cpu-py3.12"


def publish(host: FaultHost, *specs: str | tuple[str, str, tuple[str, ...]]) -> str:
    """Wheels ``name==version`` (or ``(name, version, requires)``) on ``host``'s index; its URL."""
    for spec in specs:
        name, version, requires = (*spec.split("=="), ()) if isinstance(spec, str) else spec
        host.wheel("files", name, version, requires=requires)
    return host.index("simple", sorted((host.root / "files").glob("*.whl")))


def project(root: Path, index: str, requirements: str, extra: str = "", matrix: str = ONE) -> Path:
    config = f'index-url = "{index}"\n{extra}\n[tool.lockgen.matrix]\n{matrix}\n'
    return write_project(root, config, {"requirements.in.j2": requirements})


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``locks/`` (manifest included), by path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "locks").rglob("*")) if p.is_file()}


def manifest(root: Path) -> dict:
    return json.loads((root / "locks" / "manifest.json").read_text())["cells"]


def no_uv(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("uv was started")

    monkeypatch.setattr(uv.Runner, "run", refuse)


# ------------------------------------------------------------------ failed runs leave no lie


def test_a_failed_cell_keeps_all_its_old_files(tmp_path, pypi):
    """Main, pylock.toml and every layer are replaced together or not at all: here main would
    change (beta 2.0) but the no-deps layer cannot follow it, so nothing of the cell changes."""
    index = publish(pypi, "alpha==1.0", "beta==1.0", "beta==2.0", "gamma==1.0")
    root = project(tmp_path / "p", index, "alpha\n", extra='optional = ["gamma"]\nno-deps = ["beta==1.0"]')
    assert run_cli("all", "-C", str(root)).code == 0
    before = files(root)
    assert {f"locks/{CELL}/optional-gamma.txt", f"locks/{CELL}/no-deps.txt", f"locks/{CELL}/pylock.toml"} <= set(before)
    (root / "templates" / "requirements.in.j2").write_text("alpha\nbeta==2.0\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "layer no-deps would set beta" in run.err
    after = files(root)
    assert {k: v for k, v in after.items() if not k.endswith("manifest.json")} == {
        k: v for k, v in before.items() if not k.endswith("manifest.json")
    }
    entry = manifest(root)[CELL]
    assert entry["status"] == "failed"
    assert "layer no-deps would set beta" in entry["reason"]
    assert entry["lock"] == f"locks/{CELL}.txt"
    assert len(entry["layers"]) == 3
    assert run_cli("check", "-C", str(root)).code == 1


def test_a_run_whose_only_cell_fails_records_it_in_the_manifest(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0")
    root = project(tmp_path / "p", index, "alpha\ndoes-not-exist\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    entry = manifest(root)[CELL]
    assert entry["status"] == "failed"
    # one line an installer can show: uv's cause, not the announcement of it, and no cell name
    assert entry["reason"].startswith("uv could not resolve it: Because does-not-exist was not found")
    assert CELL not in entry["reason"] and "\n" not in entry["reason"]
    assert not (root / "locks" / f"{CELL}.txt").exists()
    check = run_cli("check", "-C", str(root))
    assert check.code == 1
    assert f"{CELL}: missing" in check.out


@contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``path`` cannot be replaced or removed, even by root (``chattr +i``); skips the test where
    the file system or the user cannot do that."""
    import os

    if os.geteuid() != 0:
        pytest.skip("needs root for chattr +i (a plain chmod does not stop a rename over the file)")
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not supported here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def _manifest_error_case(root: Path) -> None:
    (root / "templates" / "requirements.in.j2").write_text("alpha\nbeta\n")  # every lock, so the manifest, changes
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "error: cannot write" in run.err
    assert "locks/manifest.json" in run.err
    for cell in ("linux-x86_64-cpu-py3.12", "linux-x86_64-cpu-py3.13"):  # every cell's result is still printed
        assert f"\n{cell}  locked" in run.err
        assert "beta==1.0" in (root / "locks" / f"{cell}.txt").read_text()
    assert "Traceback" not in run.err
    assert not list((root / "locks").rglob(".*.tmp"))  # no temporary file left behind


def test_a_manifest_that_cannot_be_written_is_named_and_every_cell_is_reported(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0", "beta==1.0")
    matrix = ONE.replace('["3.12"]', '["3.12", "3.13"]')
    root = project(tmp_path / "p", index, "alpha\n", matrix=matrix)
    assert run_cli("all", "-C", str(root)).code == 0
    path = root / "locks" / "manifest.json"
    with immutable(path):
        _manifest_error_case(root)
    assert run_cli("check", "-C", str(root)).code == 1  # the manifest is behind the locks: check says so
    assert run_cli("all", "-C", str(root)).code == 0
    assert run_cli("check", "-C", str(root)).code == 0


def test_a_folder_where_the_manifest_goes_is_named_and_every_cell_is_reported(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0", "beta==1.0")
    matrix = ONE.replace('["3.12"]', '["3.12", "3.13"]')
    root = project(tmp_path / "p", index, "alpha\n", matrix=matrix)
    assert run_cli("all", "-C", str(root)).code == 0
    path = root / "locks" / "manifest.json"
    path.unlink()
    (path / "stray").mkdir(parents=True)
    _manifest_error_case(root)
    assert "a folder stands where the file should be" in run_cli("all", "-C", str(root)).err


# ------------------------------------------------------------------ aliases and skipped cells

ALIAS_MATRIX = """os = ["windows"]
arch = ["x86_64", "aarch64"]
backend = ["cpu"]
python = ["3.12"]
[[tool.lockgen.rules]]
match = { arch = "aarch64" }
alias = "windows-x86_64-cpu-py3.12"
interpreter = "x86_64"
"""


def test_an_alias_of_a_cell_without_a_lock_is_reported_and_locked_through_its_cell(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0")
    root = project(tmp_path / "p", index, "alpha\n", matrix=ALIAS_MATRIX)
    check = run_cli("check", "-C", str(root))
    assert check.code == 1
    assert "windows-aarch64-cpu-py3.12: missing\n  it reuses windows-x86_64-cpu-py3.12, which has no lock" in check.out
    run = run_cli("lock", "windows-aarch64-cpu-py3.12", "-C", str(root))
    assert run.code == 0, run.err
    assert "windows-x86_64-cpu-py3.12: locked" in run.err  # its cell was locked first
    cells = manifest(root)
    assert cells["windows-aarch64-cpu-py3.12"]["status"] == "alias"
    assert cells["windows-aarch64-cpu-py3.12"]["alias_of"] == "windows-x86_64-cpu-py3.12"
    assert cells["windows-aarch64-cpu-py3.12"]["lock"] == "locks/windows-x86_64-cpu-py3.12.txt"
    assert run_cli("check", "-C", str(root)).code == 0
    again = run_cli("lock", "windows-aarch64-cpu-py3.12", "-C", str(root))  # now the no-op path
    assert again.code == 0
    assert "windows-aarch64-cpu-py3.12: alias" in again.err


def test_a_cell_turned_into_skip_loses_its_old_lock(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0")
    matrix = ONE.replace('["3.12"]', '["3.12", "3.13"]')
    root = project(tmp_path / "p", index, "alpha\n", matrix=matrix)
    assert run_cli("all", "-C", str(root)).code == 0
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '[[tool.lockgen.rules]]\nmatch = { python = "3.13" }\nskip = "not yet"\n'
    )
    check = run_cli("check", "-C", str(root))
    assert check.code == 1
    assert (  # a lock the manifest does not vouch for, and its folder (pylock.toml): one row, the cell's
        "linux-x86_64-cpu-py3.13: orphan\n  its cell is skipped now (not yet)\n  lock files left: "
        "locks/linux-x86_64-cpu-py3.13.txt, locks/linux-x86_64-cpu-py3.13/; `lockgen all` removes them\n"
    ) in check.out
    assert check.out.count("linux-x86_64-cpu-py3.13:") == 1
    run = run_cli("all", "-C", str(root))
    assert run.code == 0
    assert "linux-x86_64-cpu-py3.13: removed" in run.err
    assert not (root / "locks" / "linux-x86_64-cpu-py3.13.txt").exists()
    assert not (root / "locks" / "linux-x86_64-cpu-py3.13").exists()
    assert (
        manifest(root)["linux-x86_64-cpu-py3.13"] | {"status": "skipped"} == manifest(root)["linux-x86_64-cpu-py3.13"]
    )
    assert run_cli("check", "-C", str(root)).code == 0


# ------------------------------------------------------------------ C27: backend invariants

C27_MATRIX = """os = ["linux"]
arch = ["x86_64"]
backend = ["cu128", "cpu", "cu124"]
python = ["3.12"]
[tool.lockgen.sources.pytorch]
index = "https://backend.example/whl/{flavor}"
packages = ["torch"]
[[tool.lockgen.rules]]
match = { backend = "cu124" }
use = ["pytorch"]
pinned = ["torch"]
pins = { torch = "2.6.0" }
"""
C27_REQUIREMENTS = """torch
{% if backend == "cpu" %}gpu-helper{% endif %}
{% if backend == "cu124" %}tensorrt-cu13{% endif %}
"""
C27_ALLOW = """[[tool.lockgen.rules]]
match = { backend = "cu128" }
allow-mix = { torch = "this test locks the default index's CPU torch on purpose" }
[[tool.lockgen.rules]]
match = { backend = "cpu" }
allow-mix = { "nvidia-cublas-cu12" = "gpu-helper loads it only when a GPU is there" }
[[tool.lockgen.rules]]
match = { backend = "cu124" }
allow-mix = { "tensorrt-cu13" = "the TensorRT engine runs in its own process" }
"""


def test_c27_broken_gpu_stacks_fail_naming_the_evidence_unless_the_mix_is_declared(tmp_path, pypi):
    backend = FaultHost(tmp_path / "backend")
    try:
        index = publish(
            pypi, "torch==2.10.0", "nvidia-cublas-cu12==12.8.4.1", "nvidia-cuda-runtime-cu12==12.4.127",
            ("gpu-helper", "1.0", ("nvidia-cublas-cu12",)), "tensorrt-cu13==10.14.1",
        )  # fmt: skip
        torch = backend.wheel("whl/cu124", "torch", "2.6.0+cu124", requires=("nvidia-cuda-runtime-cu12",))
        backend.index("whl/cu124", [torch])
        extra = f'[tool.lockgen.mirrors]\n"https://backend.example" = "{backend.url}"'
        root = project(tmp_path / "p", index, C27_REQUIREMENTS, extra=extra, matrix=C27_MATRIX)
        run = run_cli("all", "-C", str(root))
        assert run.code == 1
        errors = {
            line.split(": ")[1].removeprefix("cell "): line
            for line in run.err.split("\n")
            if line.startswith("error: cell ")
        }
        assert set(errors) == {"linux-x86_64-cu128-py3.12", "linux-x86_64-cpu-py3.12", "linux-x86_64-cu124-py3.12"}
        # a CPU torch in a cu128 cell, CUDA in a cpu cell, CUDA 13 in a CUDA 12.4 cell: each with its evidence
        assert "torch 2.10.0: a cu128 cell must lock a torch build of its backend" in run.err
        assert "it is a CPU build" in run.err
        assert (
            "nvidia-cublas-cu12 12.8.4.1: name (nvidia-*-cu{major}) shows cuda 12, but the cell's backend cpu is cpu"
            in run.err
        )
        assert (
            "tensorrt-cu13 10.14.1: name (*-cu{major}) shows cuda 13, but the cell's backend cu124 is cuda 12.4"
            in run.err
        )
        assert 'allow-mix = { "<package>" = "why" }' in run.err
        assert not list((root / "locks").glob("*.txt"))
        (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + C27_ALLOW)
        run = run_cli("all", "-C", str(root))
        assert run.code == 0, run.err
        assert locked_versions((root / "locks" / "linux-x86_64-cu124-py3.12.txt").read_text())["torch"] == "2.6.0+cu124"
    finally:
        backend.stop()
