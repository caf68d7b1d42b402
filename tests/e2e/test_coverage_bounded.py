"""The kernel-coverage step is bounded and visible: an off switch (``--no-coverage``,
``[coverage] read = false``), a budget (``--coverage-budget``, ``[coverage] budget-mb`` /
``budget-seconds``: past it the wheels left are "not measured: budget" and the run goes on),
progress on stderr, and Ctrl-C while it reads still writes the manifest of the locks written
(coverage recorded as incomplete), then exits 130."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockgen.run import lock as lock_module
from lockgen.wheels import reading
from tests.conftest import run_cli, write_project

pytestmark = pytest.mark.uv
CUDA = Path(__file__).parents[1] / "data" / "cuda"
TAG = "cp312-cp312-manylinux_2_28_x86_64"
CELL = "linux-x86_64-cu130-py3.12"


def _project(tmp_path: Path, fake_host, extra: str = "") -> Path:
    pypi = fake_host("pypi")
    files = [
        pypi.wheel("files", "nvidia-cuda-runtime-cu13", "13.0.96", "py3-none-manylinux_2_28_x86_64"),
        pypi.wheel("files", "torch", "2.13.0", TAG, requires=("nvidia-cuda-runtime-cu13",),
                   files={"torch/lib/libtorch_cuda.so": (CUDA / "sm75-sm86.so").read_bytes()}),
        pypi.wheel("files", "torchvision", "0.28.0", TAG, requires=("torch==2.13.0",),
                   files={"torchvision/_C.so": (CUDA / "sm80-ptx90.so").read_bytes()}),
    ]  # fmt: skip
    pypi.index_page("simple", files, upload_time="2026-01-01T00:00:00Z")
    config = f"""
        [tool.lockgen.mirrors]
        "https://pypi.org/simple" = "{pypi.url}/simple"
        "https://files.pythonhosted.org" = "{pypi.url}/files"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cu130"]
        python = ["3.12"]
        {extra}
    """
    write_project(tmp_path, config, {"requirements.in.j2": "torchvision\n"})
    return tmp_path


def _coverage(root: Path) -> dict | None:
    cell = json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]
    assert cell["status"] == "locked"
    return cell.get("coverage")


def test_off_switch_reads_nothing_and_still_writes_the_manifest(tmp_path, fake_host):
    root = _project(tmp_path, fake_host)
    run = run_cli("all", "-C", str(root), "--no-coverage")
    assert run.code == 0, run.err
    assert _coverage(root) is None
    assert not list((root / ".lockgen" / "coverage").glob("*.json"))
    assert "kernel coverage" not in run.err


def test_off_in_the_config_and_a_bad_value_is_named(tmp_path, fake_host):
    root = _project(tmp_path, fake_host, "[tool.lockgen.coverage]\nread = false")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert _coverage(root) is None
    config = (root / "pyproject.toml").read_text().replace("read = false", 'budget-mb = "lots"')
    (root / "pyproject.toml").write_text(config)
    bad = run_cli("all", "-C", str(root), "--force")
    assert bad.code == 2 and "tool.lockgen.coverage.budget-mb: 'lots' is not a positive number" in bad.err


def test_past_the_budget_wheels_are_not_measured_and_the_run_goes_on(tmp_path, fake_host, caplog):
    root = _project(tmp_path, fake_host)
    run = run_cli("all", "-C", str(root), "--coverage-budget", "0")
    assert run.code == 0, run.err
    coverage = _coverage(root)
    assert coverage is not None and coverage["wheels"] == []
    assert {w["reason"] for w in coverage["unread"]} == {reading.BUDGET}
    assert {w["name"] for w in coverage["unread"]} == {"torch", "torchvision"}
    assert "kernel coverage: the budget (0 MB, 1800 s) is spent" in caplog.text
    # the next run (budget back to the default) reads them: an incomplete record is not a no-op
    again = run_cli("all", "-C", str(root))
    assert again.code == 0, again.err
    assert _coverage(root)["unread"] == []


def test_coverage_is_read_beside_its_cell_with_progress_of_files_and_bytes(tmp_path, fake_host):
    root = _project(tmp_path, fake_host)
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    lines = run.err.splitlines()
    read = [i for i, line in enumerate(lines) if line.startswith("lockgen: kernel coverage:")]
    assert len(read) == 2 and "(2 wheels, " in lines[read[-1]] and " MB so far)" in lines[read[-1]], run.err
    # read on the cell's thread as it finished, before the run reports it and writes the manifest
    locked = next(i for i, line in enumerate(lines) if line.startswith(f"lockgen: {CELL}: locked"))
    assert read[-1] < locked, run.err
    assert _coverage(root)["unread"] == []


def test_ctrl_c_while_reading_coverage_still_writes_the_manifest(tmp_path, fake_host, monkeypatch):
    root = _project(tmp_path, fake_host)
    calls = []

    def interrupted(self, wheel):
        calls.append(wheel.name)
        raise KeyboardInterrupt

    monkeypatch.setattr(reading.Reader, "_read", interrupted)
    # Ctrl-C in the manifest step (the last cell's wheels were not read beside it yet)
    monkeypatch.setattr(lock_module._CoverageStep, "beside", lambda *args: None)
    run = run_cli("all", "-C", str(root))
    assert run.code == 130, run.err
    assert "interrupted while reading the GPU wheels' kernel coverage" in run.err
    assert "Traceback" not in run.err
    assert len(calls) == 1  # nothing more is read after Ctrl-C
    coverage = _coverage(root)
    assert coverage is not None and {w["reason"] for w in coverage["unread"]} == {reading.INTERRUPTED}
    assert (root / "locks" / f"{CELL}.txt").is_file()
    monkeypatch.undo()
    done = run_cli("all", "-C", str(root))  # the next run reads what was left
    assert done.code == 0, done.err
    assert _coverage(root)["unread"] == []


def test_with_coverage_off_the_next_run_is_a_no_op_and_check_passes(tmp_path, fake_host):
    root = _project(tmp_path, fake_host, "[tool.lockgen.coverage]\nread = false")
    assert run_cli("all", "-C", str(root)).code == 0
    again = run_cli("all", "-C", str(root))
    assert again.code == 0 and "1 up to date" in again.err, again.err
    check = run_cli("check", "-C", str(root))
    assert check.code == 0, check.out + check.err


def test_a_crash_in_the_coverage_step_still_writes_the_manifest(tmp_path, fake_host, monkeypatch, caplog):
    root = _project(tmp_path, fake_host)

    def broken(self, wheels):
        raise RuntimeError("a reader bug")

    monkeypatch.setattr(reading.Reader, "__call__", broken)
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert (root / "locks" / f"{CELL}.txt").is_file() and _coverage(root) is None
    assert "kernel coverage not read (RuntimeError: a reader bug)" in caplog.text
