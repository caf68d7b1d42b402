"""``lockgen.select``, part 1, the facts: the parsers on recorded nvidia-smi / rocminfo / sysctl
outputs (tests/data/detect, CASES C12-C16, C20, C21), ``gather`` through the runner seam, and the
pretend flags. The rules, the cell and the CLI are in tests/select/test_select.py."""

from __future__ import annotations

import sys

import pytest

from lockgen import cellselect as select
from lockgen.cellselect import (
    gather,
)
from tests.support.select_samples import (
    BANNER,
    LIST,
    NO_SYSFS,
    QUERY,
    QUERY_NO_CAP,
    ROCMINFO,
    fake_run,
    nvidia,
    nvidia_outputs,
    ok,
    text,
)

# ---- parsers on recorded outputs ----------------------------------------------------------


@pytest.mark.parametrize(
    ("sample", "cuda"),
    [
        ("banner-cuda-13.0.txt", "13.0"),
        ("banner-umd-13.0.txt", "13.0"),  # C13: newer drivers, Windows
        ("q-deprecated-note-13.0.txt", "13.0"),  # C13: -q with a bracketed note
        ("banner-mig-12.8.txt", "12.8"),  # MIG devices table
        ("banner-two-gpus-12.6.txt", "12.6"),
        ("banner-cuda-na.txt", None),
        ("no-devices.txt", None),
    ],
    ids=["cuda-version", "C13-umd", "C13-q-note", "mig", "two-gpus", "n/a", "no-devices"],
)
def test_cuda_version_from_the_banner(sample: str, cuda: str | None) -> None:
    assert select.parse_cuda_version(text(f"nvidia-smi/{sample}")) == cuda


@pytest.mark.parametrize(
    ("sample", "code", "seen"),
    [
        ("no-devices.txt", 6, "No devices were found"),
        ("no-driver.txt", 9, "couldn't communicate with the NVIDIA driver"),
        ("nvml-mismatch.txt", 18, "Failed to initialize NVML: Driver/library version mismatch"),
        ("nvml-unknown-error.txt", 255, "Failed to initialize NVML: Unknown Error"),
    ],
    ids=["C20-no-devices-exit6", "C20-no-driver-exit9", "C20-nvml-mismatch", "C20-nvml-unknown"],
)
def test_c20_nvidia_smi_without_a_usable_gpu(sample: str, code: int, seen: str) -> None:
    note = select.nvidia_smi_failure(code, text(f"nvidia-smi/{sample}"), "")
    assert note is not None and seen in note and "no usable NVIDIA GPU" in note
    assert select.nvidia_smi_failure(code, "", text(f"nvidia-smi/{sample}")) == note  # stderr alike
    assert select.nvidia_smi_failure(0, text("nvidia-smi/banner-cuda-13.0.txt"), "") is None
    assert select.nvidia_smi_failure(select.NOT_FOUND, "", "") == "nvidia-smi: not found"


@pytest.mark.parametrize(
    ("sample", "caps", "reported"),
    [
        ("query-two-gpus.csv", [8.6, 12.0], [True, True]),  # C12
        ("query-gpu-and-npu.csv", [8.9, None], [True, True]),  # C14: [N/A] is unknown, not an error
        ("query-unknown-error.csv", [None], [False]),  # nvidia-smi could not report it
        ("query-gh200.csv", [9.0], [True]),
        ("query-a100.csv", [8.0], [True]),
    ],
    ids=["C12-two-gpus", "C14-n/a", "unknown-error", "gh200", "a100"],
)
def test_gpu_query_rows(sample: str, caps: list[float | None], reported: list[bool]) -> None:
    gpus = select.parse_gpu_query(text(f"nvidia-smi/{sample}"))
    assert [g.compute_capability for g in gpus] == caps
    assert [g.capability_reported for g in gpus] == reported


def test_query_without_the_rejected_field_has_unreported_capability() -> None:
    assert select.rejected_query_field(text("nvidia-smi/query-rejected-compute-cap.txt")) == "compute_cap"
    (gpu,) = select.parse_gpu_query(text("nvidia-smi/query-without-compute-cap.csv"), select.QUERY_FIELDS[:3])
    assert (gpu.name, gpu.compute_capability, gpu.capability_reported) == ("GRID A100D-40C", None, False)


def test_mig_lines_are_not_gpus() -> None:
    assert select.parse_gpu_list(text("nvidia-smi/list-mig.txt")) == ["NVIDIA A100-SXM4-80GB"]


@pytest.mark.parametrize(
    ("sample", "code", "agents", "failed"),
    [
        ("gfx1100.txt", 0, ("gfx1100",), False),
        ("gfx1100-twice.txt", 0, ("gfx1100",), False),  # C21: listed twice = one GPU
        ("cpu-only.txt", 0, (), False),  # C21: only a CPU agent
        ("not-loaded.txt", 1, (), True),  # C21: ROCk module is NOT loaded
    ],
    ids=["gfx1100", "C21-twice", "C21-cpu-only", "C21-not-loaded"],
)
def test_rocminfo(sample: str, code: int, agents: tuple[str, ...], failed: bool) -> None:
    output = text(f"rocminfo/{sample}")
    assert (select.rocminfo_failure(code, output, "") is not None) == failed
    assert select.parse_rocminfo(output) == agents


@pytest.mark.parametrize(
    ("machine", "env", "expected"),
    [
        ("AMD64", {"PROCESSOR_ARCHITEW6432": "ARM64"}, ("aarch64", "x86_64")),
        (
            "AMD64",
            {"PROCESSOR_IDENTIFIER": "ARMv8 (64-bit) Family 8 Model 1 Revision 201, Qualcomm"},
            ("aarch64", "x86_64"),
        ),
        (
            "ARM64",
            {"PROCESSOR_IDENTIFIER": "ARMv8 (64-bit) Family 8 Model 1 Revision 201, Qualcomm"},
            ("aarch64", "aarch64"),
        ),
        (
            "AMD64",
            {"PROCESSOR_IDENTIFIER": "Intel64 Family 6 Model 183 Stepping 1, GenuineIntel"},
            ("x86_64", "x86_64"),
        ),
        ("x86_64", {}, ("x86_64", "x86_64")),
    ],
    ids=["C15-architew6432", "C15-identifier", "native-arm64", "intel", "linux"],
)
def test_c15_host_and_interpreter_arch(machine: str, env: dict[str, str], expected: tuple[str, str]) -> None:
    assert select.arches(machine, env) == expected


@pytest.mark.parametrize(
    ("left", "right", "order"),
    [("13", "13.0", 0), ("12.10", "12.9", 1), ("12.4", "12.6", -1), ("13.0.1", "13", 1)],
    ids=["13==13.0", "12.10>12.9", "12.4<12.6", "13.0.1>13"],
)
def test_versions_compare_numerically(left: str, right: str, order: int) -> None:
    a, b = select.version_key(left), select.version_key(right)
    assert (a > b) - (a < b) == order


# ---- gather: programs through the runner seam -----------------------------------------------


def test_gather_nvidia_two_gpus_c12() -> None:
    facts = gather(
        {}, fake_run(nvidia_outputs("banner-two-gpus-12.6.txt", "query-two-gpus.csv")), system="linux", machine="x86_64"
    )
    assert facts.nvidia and facts.cuda == "12.6" and [g.compute_capability for g in facts.gpus] == [8.6, 12.0]
    assert facts.amd_agents == () and "rocminfo: not found" in facts.notes


@pytest.mark.parametrize(
    "sample", ["no-devices.txt", "no-driver.txt", "nvml-mismatch.txt"], ids=["exit6", "exit9", "nvml"]
)
def test_gather_c20_no_usable_nvidia_gpu(sample: str) -> None:
    code = {"no-devices.txt": 6, "no-driver.txt": 9, "nvml-mismatch.txt": 18}[sample]
    run = fake_run({BANNER: (code, text(f"nvidia-smi/{sample}"), ""), QUERY: (code, text(f"nvidia-smi/{sample}"), "")})
    facts = gather({}, run, system="linux", machine="x86_64")
    assert not facts.nvidia and facts.gpus == () and facts.cuda is None
    assert any("no usable NVIDIA GPU" in note for note in facts.notes)


def test_gather_retries_a_rejected_query_field() -> None:
    rejected = (2, text("nvidia-smi/query-rejected-compute-cap.txt"), "")
    run = fake_run({BANNER: ok("nvidia-smi/banner-old-driver-12.6.txt"), QUERY: rejected,
                    QUERY_NO_CAP: ok("nvidia-smi/query-without-compute-cap.csv")})  # fmt: skip
    facts = gather({}, run, system="linux", machine="x86_64")
    assert facts.nvidia and [(g.name, g.capability_reported) for g in facts.gpus] == [("GRID A100D-40C", False)]
    assert any("query field compute_cap was rejected" in note for note in facts.notes)


@pytest.mark.parametrize(
    ("query", "listed", "names"),
    [((255, "", "Unknown Error"), ok("nvidia-smi/list-mig.txt"), ["NVIDIA A100-SXM4-80GB"]),
     ((0, "garbage\n", ""), (select.NOT_FOUND, "", ""), ["NVIDIA GPU"])],
    ids=["query-fails-mig-list", "query-garbage-no-list"],
)  # fmt: skip
def test_gather_never_an_empty_gpu_list(
    query: tuple[int, str, str], listed: tuple[int, str, str], names: list[str]
) -> None:
    run = fake_run({BANNER: ok("nvidia-smi/banner-mig-12.8.txt"), QUERY: query, LIST: listed})
    facts = gather({}, run, system="linux", machine="x86_64")
    assert facts.nvidia and facts.cuda == "12.8"
    assert [(g.name, g.capability_reported) for g in facts.gpus] == [(name, False) for name in names]


def test_gather_mig_query_counts_one_gpu() -> None:
    facts = gather(
        {}, fake_run(nvidia_outputs("banner-mig-12.8.txt", "query-a100.csv")), system="linux", machine="x86_64"
    )
    assert len(facts.gpus) == 1 and facts.gpus[0].compute_capability == 8.0


@pytest.mark.parametrize(
    ("sample", "code", "agents"),
    [("gfx1100-twice.txt", 0, ("gfx1100",)), ("cpu-only.txt", 0, ()), ("not-loaded.txt", 1, ())],
    ids=["C21-twice", "C21-cpu-only", "C21-not-loaded"],
)
def test_gather_amd(sample: str, code: int, agents: tuple[str, ...]) -> None:
    facts = gather({}, fake_run({ROCMINFO: (code, text(f"rocminfo/{sample}"), "")}), system="linux", machine="x86_64")
    assert facts.amd_agents == agents and not facts.nvidia


def test_gather_survives_timeouts_and_missing_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A timeout is not an answer: the facts are unknown (issue 19), never "no GPU"."""
    timeout = (select.TIMED_OUT, "", "nvidia-smi: timed out after 30 s")
    facts = gather({}, fake_run({BANNER: timeout, ROCMINFO: timeout}), system="linux", machine="x86_64", sysfs=NO_SYSFS)
    assert not facts.nvidia and not facts.amd_agents
    assert facts.unknown == ("nvidia-smi: timed out after 30 s", "rocminfo: timed out after 30 s")
    assert select.run_program(["lockgen-no-such-program-here"])[0] == select.NOT_FOUND
    monkeypatch.setattr(select, "TIMEOUT", 0.2)
    assert select.run_program([sys.executable, "-c", "import time; time.sleep(5)"])[0] == select.TIMED_OUT


@pytest.mark.parametrize(
    "outputs",
    [
        {BANNER: (9, text("nvidia-smi/no-driver.txt"), ""), ROCMINFO: (1, text("rocminfo/not-loaded.txt"), "")},
        {BANNER: ok("nvidia-smi/banner-cuda-na.txt"), QUERY: (2, text("nvidia-smi/query-rejected-compute-cap.txt"), ""),
         QUERY_NO_CAP: (0, "garbage\n", ""), ROCMINFO: ok("rocminfo/cpu-only.txt")},
        {BANNER: (255, "", "Segmentation fault"), ROCMINFO: (1, "", "hsa api call failure")},
    ],
    ids=["no-driver-no-rock", "degraded-query", "crashes"],
)  # fmt: skip
def test_every_note_names_its_source(outputs: dict[tuple[str, ...], tuple[int, str, str]]) -> None:
    facts = gather({}, fake_run(outputs), system="linux", machine="x86_64", sysfs=NO_SYSFS)
    lines = (*facts.notes, *facts.unknown)
    assert lines and all(line.startswith(("nvidia-smi: ", "rocminfo: ", "pci: ")) for line in lines)


@pytest.mark.parametrize(
    ("machine", "sysctl", "expected"),
    [
        ("x86_64", {"sysctl.proc_translated": "1\n", "hw.optional.arm64": "1\n"}, ("aarch64", "x86_64", True)),
        ("x86_64", {"hw.optional.arm64": "1\n"}, ("aarch64", "x86_64", True)),
        ("arm64", {}, ("aarch64", "aarch64", False)),
        ("x86_64", {"sysctl.proc_translated": "0\n", "hw.optional.arm64": "0\n"}, ("x86_64", "x86_64", False)),
    ],
    ids=["rosetta-translated", "rosetta-arm64-hw", "native-arm64", "intel-mac"],
)
def test_gather_macos(machine: str, sysctl: dict[str, str], expected: tuple[str, str, bool]) -> None:
    run = fake_run({("sysctl", "-n", key): (0, value, "") for key, value in sysctl.items()})
    facts = gather({}, run, system="darwin", machine=machine)
    assert (facts.arch, facts.interpreter, facts.rosetta) == expected
    assert facts.apple_silicon == (expected[0] == "aarch64") and not facts.nvidia


def test_gather_windows_arm_x64_python_c15() -> None:
    env = {"PROCESSOR_ARCHITEW6432": "ARM64"}
    facts = gather(
        env, fake_run(nvidia_outputs("banner-umd-13.0.txt", "query-4090.csv")), system="win32", machine="AMD64"
    )
    assert (facts.os, facts.arch, facts.interpreter, facts.cuda) == ("windows", "aarch64", "x86_64", "13.0")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"os": "macos", "arch": "aarch64"}, ("macos", "aarch64", "aarch64", False, True, False)),
        ({"os": "macos", "arch": "aarch64", "interpreter": "x86_64"}, ("macos", "aarch64", "x86_64", False, True, True)),
        ({"os": "windows", "arch": "aarch64", "interpreter": "x86_64", "cuda": "13.4"},
         ("windows", "aarch64", "x86_64", True, False, False)),
        ({"arch": "aarch64"}, ("linux", "aarch64", "aarch64", False, False, False)),  # drops the probed GPU
        ({"gpu": "nvidia"}, ("linux", "x86_64", "x86_64", True, False, False)),  # keeps the probed CUDA
    ],
    ids=["mac", "mac-rosetta", "win-arm-cuda", "arch-sets-both", "gpu-nvidia"],
)  # fmt: skip
def test_pretend(flags: dict[str, str], expected: tuple[str, str, str, bool, bool, bool]) -> None:
    probed = nvidia("12.8")
    facts = select.pretend(probed, **flags)
    assert (facts.os, facts.arch, facts.interpreter, facts.nvidia, facts.apple_silicon, facts.rosetta) == expected
    assert facts.notes[-1].startswith("pretended: --")
    if flags == {"gpu": "nvidia"}:
        assert facts.cuda == "12.8" and facts.gpus == probed.gpus
    with pytest.raises(select.InputError, match="--cuda '13,0'"):
        select.pretend(probed, cuda="13,0")
