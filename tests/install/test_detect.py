"""``lockgen detect``: the seed's hardware rules of ``examples/ai-toolkit`` through the same
selector installers vendor (canned nvidia-smi/rocminfo outputs are in tests/select/test_select.py)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.support.aitoolkit_world import EXAMPLE

LINUX = ("--os", "linux", "--arch", "x86_64")


def detect(*args: str):
    return run_cli("detect", "-C", str(EXAMPLE), "--python", "3.12", "--json", *args)


def cell_of(*args: str) -> str:
    run = detect(*args)
    assert run.code == 0, run.err
    return json.loads(run.out)["cell"]


def query(tmp_path, *caps: str) -> str:
    path = tmp_path / "query.csv"
    path.write_text("".join(f"NVIDIA GPU {i}, 24564 MiB, 580.65, {cap}\n" for i, cap in enumerate(caps)))
    return str(path)


@pytest.mark.parametrize(
    ("cuda", "caps", "cell"),
    [
        ("13.0", ("8.6",), "linux-x86_64-cu130-py3.12"),
        ("12.8", ("8.6",), "linux-x86_64-cu126-py3.12"),
        ("13", ("8.6",), "linux-x86_64-cu130-py3.12"),  # 13 == 13.0
        ("13.0", ("12.0",), "linux-x86_64-cu130-py3.12"),  # Blackwell on a 13.0 driver is fine
        ("12.8", ("[N/A]",), "linux-x86_64-cu126-py3.12"),  # C14: unknown capability is not a refusal
    ],
    ids=["cu130", "cu126", "short-version", "blackwell-new-driver", "c14-na-capability"],
)
def test_seed_rules_for_cuda_flavors(tmp_path, cuda, caps, cell):
    assert cell_of(*LINUX, "--cuda", cuda, "--gpu-query", query(tmp_path, *caps)) == cell


def test_c12_any_blackwell_gpu_on_an_old_driver_is_refused(tmp_path):
    run = detect(*LINUX, "--cuda", "12.8", "--gpu-query", query(tmp_path, "8.6", "12.0"))
    assert run.code == 2 and "Blackwell GPU detected but the NVIDIA driver only supports CUDA 12.8" in run.err


def test_c16_old_driver_is_refused_not_a_cpu_fallback(tmp_path):
    run = detect(*LINUX, "--gpu", "nvidia", "--cuda", "12.4", "--gpu-query", query(tmp_path, "8.9"))
    assert run.code == 2 and run.err.startswith("error: NVIDIA driver only supports CUDA 12.4")
    assert "Traceback" not in run.err


def test_c15_x64_python_on_a_windows_arm_host():
    found = json.loads(detect("--os", "windows", "--arch", "aarch64", "--interpreter", "x86_64", "--cuda", "13.0").out)
    assert found["cell"] == "windows-aarch64-cu130-py3.12"
    assert found["lock"] == "locks/windows-x86_64-cu130-py3.12.txt"  # the x64 stack under emulation
    native = detect("--os", "windows", "--arch", "aarch64", "--interpreter", "aarch64", "--cuda", "13.0")
    assert "install with an x86_64 interpreter" in native.out
    assert cell_of("--os", "windows", "--arch", "aarch64", "--cuda", "13.4") == "windows-aarch64-cu134-py3.12"


@pytest.mark.parametrize(
    ("args", "cell"),
    [
        (("--os", "macos", "--arch", "aarch64"), "macos-aarch64-mps-py3.12"),
        ((*LINUX, "--gpu", "amd"), "linux-x86_64-rocm7.1-py3.12"),
        ((*LINUX, "--gpu", "none", "--cpu"), "linux-x86_64-cpu-py3.12"),
    ],
    ids=["apple", "amd", "cpu"],
)
def test_other_machines(args, cell):
    assert cell_of(*args) == cell


def test_no_gpu_without_cpu_is_refused():
    run = detect(*LINUX, "--gpu", "none")
    assert run.code == 2 and "Pass --cpu to install anyway" in run.err


def test_python_from_the_matrix_and_bad_input(tmp_path):
    mac = run_cli("detect", "-C", str(EXAMPLE), "--os", "macos", "--arch", "aarch64", "--json")
    assert json.loads(mac.out)["cell"] == "macos-aarch64-mps-py3.12"  # the matrix has one Python
    bad = detect(*LINUX, "--cuda", "abc")
    assert bad.code == 2 and "abc" in bad.err and "Traceback" not in bad.err
    (tmp_path / "lockgen.toml").write_text(
        '[matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n'
    )
    none = run_cli("detect", "-C", str(tmp_path), "--cpu")
    assert none.code == 2 and "lockgen.toml: no detect rules; add a [detect] table" in none.err
    (tmp_path / "lockgen.toml").rename(tmp_path / "pyproject.toml")
    text = (tmp_path / "pyproject.toml").read_text().replace("[matrix]", "[tool.lockgen.matrix]")
    (tmp_path / "pyproject.toml").write_text(text)
    none = run_cli("detect", "-C", str(tmp_path), "--cpu")
    assert none.code == 2 and "pyproject.toml: no detect rules; add a [tool.lockgen.detect] table" in none.err


def test_the_repos_own_matrix_has_detect_rules():
    """Issue 7: `lockgen detect --cpu` on this (GPU-less) machine names a default-matrix cell."""
    run = run_cli("detect", "--cpu", "--json", "--os", "linux", "--arch", "x86_64", "--gpu", "none", "--python", "3.12")
    assert run.code == 0, run.err
    assert json.loads(run.out)["cell"] == "linux-x86_64-cu130-py3.12"


def test_detect_takes_a_cell_by_hand_and_pretended_amd_gfx():
    """Issue 19: ``--cell`` is the way past facts that cannot be known; ``--gfx`` pretends AMD GPUs."""
    run = detect(*LINUX, "--cell", "linux-x86_64-cu126-py3.12")
    assert run.code == 0 and json.loads(run.out)["coverage"] == ["not checked (--cell)"]
    assert cell_of(*LINUX, "--gfx", "gfx1100") == "linux-x86_64-rocm7.1-py3.12"
    apu = detect(*LINUX, "--gfx", "gfx1103")
    assert apu.code == 2 and "the integrated GPU gfx1103 not supported by rocm7.1" in apu.err
