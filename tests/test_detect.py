"""``lockgen detect``: canned nvidia-smi outputs (CASES C12-C16) and the seed's driver rules,
with the rules of ``examples/ai-toolkit``."""

from __future__ import annotations

import json

import pytest

from lockgen.detect import Gpu, Machine, Refused, arches, parse_cuda_version, parse_gpu_query
from lockgen.pipeline import Project, detect
from tests.aitoolkit_world import EXAMPLE
from tests.conftest import run_cli

BANNER = """
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.65.06              Driver Version: 580.65.06      CUDA Version: 13.0     |
|-----------------------------------------+------------------------+----------------------+
"""
BANNER_UMD = "| NVIDIA-SMI 616.12   Driver Version: 616.12   CUDA UMD Version: 13.0   |"
QUERY_Q = """
Driver Version                            : 580.65.06
CUDA Version                              : 13.0 [deprecated field, see CUDA UMD Version]
"""


@pytest.fixture(scope="module")
def project():
    return Project.load(EXAMPLE)


def nvidia(cuda, caps=(8.6,), os_="linux", arch="x86_64", interpreter=None):
    gpus = tuple(Gpu("GPU", "24576 MiB", "x", c) for c in caps)
    return Machine(os=os_, arch=arch, interpreter=interpreter or arch, gpu="nvidia", cuda=cuda, gpus=gpus)


def test_c12_every_gpu_is_considered():
    gpus = parse_gpu_query("NVIDIA GeForce RTX 3090, 24576 MiB, 575.51, 8.6\nNVIDIA GeForce RTX 5090, 32607 MiB, 575.51, 12.0\n")
    assert [g.compute_capability for g in gpus] == [8.6, 12.0]


@pytest.mark.parametrize("text", [BANNER, BANNER_UMD, QUERY_Q], ids=["banner", "banner-umd", "query-q"])
def test_c13_renamed_banner_fields_give_the_same_cuda_version(text):
    assert parse_cuda_version(text) == "13.0"


def test_c14_unknown_compute_capability_is_not_an_error(project):
    (gpu,) = parse_gpu_query("NVIDIA N1X NPU, [N/A], 616.12, [N/A]\n")
    assert gpu.compute_capability is None
    machine = Machine(os="linux", arch="x86_64", interpreter="x86_64", gpu="nvidia", cuda="12.8", gpus=(gpu,))
    assert detect(project, machine, "3.12")["cell"] == "linux-x86_64-cu126-py3.12"


#: (platform.machine(), environment) -> (the machine's arch, the interpreter's)
ARCHES = {
    "wow64-variable": ("AMD64", {"PROCESSOR_ARCHITEW6432": "ARM64"}, ("aarch64", "x86_64")),
    "processor-identifier": ("AMD64", {"PROCESSOR_IDENTIFIER": "ARMv8 (64-bit) Family 8 Model 1 Revision 201, Qualcomm"}, ("aarch64", "x86_64")),
    "native-x86_64": ("x86_64", {}, ("x86_64", "x86_64")),
}


@pytest.mark.parametrize(("machine", "env", "expected"), ARCHES.values(), ids=ARCHES)
def test_c15_arches_of_the_host_and_the_interpreter(machine, env, expected):
    assert arches(machine, env) == expected


def test_c15_x64_python_on_a_windows_arm_host(project):
    found = detect(project, nvidia("13.0", os_="windows", arch="aarch64", interpreter="x86_64"), "3.12")
    assert found["cell"] == "windows-aarch64-cu130-py3.12"
    assert found["lock"] == "locks/windows-x86_64-cu130-py3.12.txt"  # the x64 stack under emulation
    assert found["interpreter"] == "x86_64" and "reuses windows-x86_64-cu130-py3.12" in found["reason"]
    native = detect(project, nvidia("13.0", os_="windows", arch="aarch64", interpreter="aarch64"), "3.12")
    assert "install with an x86_64 interpreter (this one is aarch64)" in native["reason"]
    spark = detect(project, nvidia("13.4", os_="windows", arch="aarch64", interpreter="aarch64"), "3.12")
    assert spark["cell"] == "windows-aarch64-cu134-py3.12"


def test_c16_old_driver_is_refused_not_a_cpu_fallback(project, tmp_path):
    with pytest.raises(Refused, match="only supports CUDA 12.4, which is too old"):
        detect(project, nvidia("12.4", caps=(8.9,)), "3.12")
    query = tmp_path / "query.csv"
    query.write_text("NVIDIA GeForce RTX 4090, 24564 MiB, 550.54, 8.9\n")
    run = run_cli("detect", "-C", str(EXAMPLE), "--os", "linux", "--arch", "x86_64", "--gpu", "nvidia",
                  "--cuda", "12.4", "--gpu-query", str(query), "--python", "3.12")  # fmt: skip
    assert run.code == 2 and run.err.startswith("error: NVIDIA driver only supports CUDA 12.4")


#: id -> (the driver's CUDA version, compute capabilities, the cell the seed's rules pick)
CUDA_FLAVORS = {
    "cuda-13.0": ("13.0", (8.6,), "linux-x86_64-cu130-py3.12"),
    "cuda-12.8": ("12.8", (8.6,), "linux-x86_64-cu126-py3.12"),
    "cuda-unknown": (None, (8.6,), "linux-x86_64-cu130-py3.12"),  # unknown: assume current
    "blackwell-cuda-13.0": ("13.0", (12.0,), "linux-x86_64-cu130-py3.12"),
}


@pytest.mark.parametrize(("cuda", "caps", "cell"), CUDA_FLAVORS.values(), ids=CUDA_FLAVORS)
def test_seed_rules_for_cuda_flavors(project, cuda, caps, cell):
    assert detect(project, nvidia(cuda, caps), "3.12")["cell"] == cell


def test_blackwell_needs_a_newer_driver(project):
    with pytest.raises(Refused, match="Blackwell GPU detected but the NVIDIA driver only supports CUDA 12.8"):
        detect(project, nvidia("12.8", caps=(8.6, 12.0)), "3.12")  # any GPU >= 12.0 counts (C12)


#: id -> (a machine without an NVIDIA GPU, the cell the seed's rules pick)
OTHER_MACHINES = {
    "apple": (Machine(os="macos", arch="aarch64", interpreter="aarch64", gpu="apple"), "macos-aarch64-mps-py3.12"),
    "amd": (Machine(os="linux", arch="x86_64", interpreter="x86_64", gpu="amd"), "linux-x86_64-rocm7.1-py3.12"),
}


@pytest.mark.parametrize(("machine", "cell"), OTHER_MACHINES.values(), ids=OTHER_MACHINES)
def test_other_machines(project, machine, cell):
    assert detect(project, machine, "3.12")["cell"] == cell


def test_no_gpu_needs_cpu_to_be_asked_for(project):
    plain = Machine(os="linux", arch="x86_64", interpreter="x86_64")
    with pytest.raises(Refused, match="Pass --cpu to install anyway"):
        detect(project, plain, "3.12")
    assert detect(project, plain, "3.12", allow_cpu=True)["cell"] == "linux-x86_64-cpu-py3.12"


def test_detect_cli_json():
    run = run_cli("detect", "--json", "-C", str(EXAMPLE), "--os", "macos", "--arch", "aarch64", "--gpu", "apple", "--python", "3.12")
    assert run.code == 0, run.err
    assert json.loads(run.out)["lock"] == "locks/macos-aarch64-mps-py3.12.txt"


def test_pretended_facts_are_read_like_real_ones(tmp_path):
    base = ["detect", "-C", str(EXAMPLE), "--os", "linux", "--arch", "x86_64"]
    assert json_cell(run_cli(*base, "--cuda", "13", "--json")) == "linux-x86_64-cu130-py3.12"  # 13 == 13.0; implies nvidia
    bad = run_cli(*base, "--cuda", "abc")
    assert bad.code == 2 and "--cuda 'abc'" in bad.err and "Traceback" not in bad.err
    mac = run_cli("detect", "-C", str(EXAMPLE), "--os", "macos", "--arch", "aarch64", "--json")  # Python from the matrix
    assert json_cell(mac) == "macos-aarch64-mps-py3.12"
    (tmp_path / "lockgen.toml").write_text('[matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n')
    none = run_cli("detect", "-C", str(tmp_path), "--cpu")
    assert none.code == 2 and "no detect rules; add a [detect] table" in none.err


def json_cell(run) -> str:
    assert run.code == 0, run.err
    return json.loads(run.out)["cell"]
