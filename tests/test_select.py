"""``lockgen.select``: the portable cell selector, on recorded nvidia-smi / rocminfo / sysctl
outputs (tests/data/detect, CASES C12-C16, C20, C21) and a manifest shaped like the ai-toolkit
example's, whose detect rules are the seed's (see /work/shared/seed/README.md)."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from lockgen import select
from lockgen.select import (
    DetectRules,
    Facts,
    Gpu,
    NoCell,
    Refused,
    RulesError,
    choose_backend,
    gather,
    select_cell,
)

DATA = Path(__file__).parent / "data" / "detect"
MODULE = Path(select.__file__)
LINUX_X86 = sys.platform == "linux" and platform.machine() == "x86_64"
probing_here = pytest.mark.skipif(not LINUX_X86, reason="probes this machine (os, arch) with canned GPU outputs")
EXAMPLE = Path(__file__).parent.parent / "examples" / "ai-toolkit" / "lockgen.toml"
QUERY = ("nvidia-smi", "--query-gpu=name,memory.total,driver_version,compute_cap", "--format=csv,noheader")
QUERY_NO_CAP = ("nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader")
BANNER, LIST, ROCMINFO = ("nvidia-smi",), ("nvidia-smi", "-L"), ("rocminfo",)
BLACKWELL = "Blackwell GPU detected but the NVIDIA driver only supports CUDA {cuda}."
TOO_OLD = "NVIDIA driver only supports CUDA {cuda}, which is too old for the pinned torch build."
NO_GPU = "No supported GPU detected (NVIDIA CUDA, AMD ROCm, or Apple Silicon). Training on CPU is not practical."

# examples/ai-toolkit/lockgen.toml [detect], as lockgen writes it into the manifest
RULES: dict[str, Any] = {
    "apple": "mps",
    "amd": "rocm7.1",
    "no-gpu": "cpu",
    "no-gpu-refuse": NO_GPU + " Pass --cpu to install anyway.",
    "nvidia-unknown-cuda": "cu130",
    "nvidia-too-old": TOO_OLD + " Update your NVIDIA driver, then re-run install.",
    "nvidia": [
        {"match": {"os": "windows", "arch": "aarch64"}, "min-cuda": "13.4", "backend": "cu134"},
        {"min-cuda": "13.0", "backend": "cu130"},
        {"min-cuda": "12.6", "backend": "cu126", "refuse-compute-capability": 12.0,
         "refuse": BLACKWELL + " Blackwell needs the cu130 build: update your driver to 580+ and re-run."},
    ],
}  # fmt: skip


def text(name: str) -> str:
    return (DATA / name).read_text()


def entry(os_: str, arch: str, backend: str, alias_of: str | None = None, **extra: Any) -> tuple[str, dict[str, Any]]:
    name = f"{os_}-{arch}-{backend}-py3.12"
    lock = f"locks/{alias_of or name}.txt"
    layers = [{"name": "main", "kind": "main", "lock": lock, "sha256": "0" * 64}]
    layers += [
        {"name": layer, "kind": kind, "lock": lock.replace(".txt", f"/{layer}.txt")}
        for kind, layer in extra.pop("layers", [])
    ]
    data = {"os": os_, "arch": arch, "backend": backend, "python": "3.12", "status": "alias" if alias_of else "locked",
            "lock": lock, "layers": layers, "requires": {}, **extra}  # fmt: skip
    if alias_of:
        data["alias_of"] = alias_of
    return name, data


def manifest(**changes: Any) -> dict[str, Any]:
    """Cells like the ai-toolkit example's (all Python 3.12) with its detect rules."""
    nvidia = [("optional", "optional-flash-attn")]
    cells = dict([
        entry("linux", "x86_64", "cu126", layers=nvidia), entry("linux", "x86_64", "cu130", layers=nvidia),
        entry("linux", "aarch64", "cu126", layers=nvidia), entry("linux", "aarch64", "cu130", layers=nvidia),
        entry("windows", "x86_64", "cu126"), entry("windows", "x86_64", "cu130"),
        entry("windows", "aarch64", "cu126", "windows-x86_64-cu126-py3.12", requires={"interpreter": "x86_64"}),
        entry("windows", "aarch64", "cu130", "windows-x86_64-cu130-py3.12", requires={"interpreter": "x86_64"}),
        entry("windows", "aarch64", "cu134", requires={"interpreter": "aarch64"},
              layers=[("optional", "optional-flash-attn"), ("no-deps", "no-deps-tensorboard")]),
        entry("macos", "aarch64", "mps"), entry("linux", "x86_64", "rocm7.1"),
        entry("linux", "x86_64", "cpu"), entry("windows", "x86_64", "cpu"),
    ])  # fmt: skip
    return {"format": 2, "generator": "lockgen 0.1.0", "detect": RULES, "cells": cells, **changes}


def nvidia(cuda: str | None, caps: Sequence[float | None] = (8.6,), os_: str = "linux", arch: str = "x86_64",
           interpreter: str | None = None, reported: bool = True) -> Facts:  # fmt: skip
    gpus = tuple(Gpu(f"GPU {i}", "24576 MiB", "580.65.06", c, reported) for i, c in enumerate(caps))
    return Facts(os=os_, arch=arch, interpreter=interpreter or arch, nvidia=True, cuda=cuda, gpus=gpus)


def plain(os_: str = "linux", arch: str = "x86_64", **kw: Any) -> Facts:
    return Facts(os=os_, arch=arch, interpreter=kw.pop("interpreter", arch), **kw)


def fake_run(
    outputs: Mapping[tuple[str, ...], tuple[int, str, str]],
) -> Callable[[Sequence[str]], tuple[int, str, str]]:
    """A runner answering from canned outputs; any other program is "not found"."""

    def run(argv: Sequence[str]) -> tuple[int, str, str]:
        return outputs.get(tuple(argv), (select.NOT_FOUND, "", f"{argv[0]}: not found"))

    return run


def ok(name: str) -> tuple[int, str, str]:
    return 0, text(name), ""


def cli(*args: str, outputs: Mapping[tuple[str, ...], tuple[int, str, str]] | None = None,
        env: Mapping[str, str] | None = None) -> tuple[int, str, str]:  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = select.main(list(args), run=fake_run(outputs or {}), env=env or {})
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def manifest_file(tmp_path: Path) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest()))
    return path


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


def nvidia_outputs(
    banner: str, query: str | None = None, **extra: tuple[int, str, str]
) -> dict[tuple[str, ...], tuple[int, str, str]]:
    outputs = {BANNER: ok(f"nvidia-smi/{banner}")}
    if query:
        outputs[QUERY] = ok(f"nvidia-smi/{query}")
    return outputs | {tuple(k.split()): v for k, v in extra.items()}


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
    timeout = (select.TIMED_OUT, "", "nvidia-smi: timed out after 30 s")
    facts = gather({}, fake_run({BANNER: timeout, ROCMINFO: timeout}), system="linux", machine="x86_64")
    assert not facts.nvidia and not facts.amd_agents and len(facts.notes) == 2
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
    facts = gather({}, fake_run(outputs), system="linux", machine="x86_64")
    assert facts.notes and all(note.startswith(("nvidia-smi: ", "rocminfo: ")) for note in facts.notes)


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


# ---- the seed's branches, from the manifest alone ----------------------------------------


@pytest.mark.parametrize(
    ("facts", "allow_cpu", "cell"),
    [
        (nvidia("13.0"), False, "linux-x86_64-cu130-py3.12"),
        (nvidia("13"), False, "linux-x86_64-cu130-py3.12"),  # 13 == 13.0
        (nvidia("12.8"), False, "linux-x86_64-cu126-py3.12"),
        (nvidia(None), False, "linux-x86_64-cu130-py3.12"),  # unknown: assume current
        (nvidia("13.0", caps=(12.0,)), False, "linux-x86_64-cu130-py3.12"),  # Blackwell with a cu130 driver
        (nvidia("12.8", caps=(8.9, None)), False, "linux-x86_64-cu126-py3.12"),  # C14: [N/A] not counted
        (nvidia("13.0", caps=(None,), reported=False), False, "linux-x86_64-cu130-py3.12"),  # no limit at cu130
        (nvidia("12.8", arch="aarch64", caps=(9.0,)), False, "linux-aarch64-cu126-py3.12"),  # GH200
        (nvidia("13.0", arch="aarch64", caps=(9.0,)), False, "linux-aarch64-cu130-py3.12"),
        (nvidia("12.8", os_="windows"), False, "windows-x86_64-cu126-py3.12"),
        (nvidia("13.0", os_="windows"), False, "windows-x86_64-cu130-py3.12"),
        (nvidia("13.0", os_="windows", arch="aarch64", interpreter="x86_64"), False, "windows-aarch64-cu130-py3.12"),
        (nvidia("12.8", os_="windows", arch="aarch64", interpreter="x86_64"), False, "windows-aarch64-cu126-py3.12"),
        (nvidia("13.4", os_="windows", arch="aarch64"), False, "windows-aarch64-cu134-py3.12"),
        (nvidia("13.4"), False, "linux-x86_64-cu130-py3.12"),  # the Spark rule matches windows aarch64 only
        (plain("macos", "aarch64", apple_silicon=True), False, "macos-aarch64-mps-py3.12"),
        (plain(amd_agents=("gfx1100",)), False, "linux-x86_64-rocm7.1-py3.12"),
        (plain(), True, "linux-x86_64-cpu-py3.12"),
        (plain("windows"), True, "windows-x86_64-cpu-py3.12"),
    ],
    ids=["cu130", "cu130-13", "cu126", "unknown-cuda", "blackwell-cu130", "C14-n/a", "unreported-cu130",
         "gh200-cu126", "gh200-cu130", "win-cu126", "win-cu130", "C15-win-arm-cu130", "C15-win-arm-cu126",
         "spark-cu134", "linux-13.4", "mps", "rocm", "cpu", "win-cpu"],
)  # fmt: skip
def test_seed_branches(facts: Facts, allow_cpu: bool, cell: str) -> None:
    selection = select_cell(facts, manifest(), allow_cpu=allow_cpu)
    assert selection.cell == cell
    assert selection.lock == manifest()["cells"][cell]["lock"]


@pytest.mark.parametrize(
    ("facts", "allow_cpu", "message"),
    [
        (nvidia("12.6", caps=(8.6, 12.0)), False, BLACKWELL.format(cuda="12.6")),  # C12
        (nvidia("12.4", caps=(8.9,)), False, TOO_OLD.format(cuda="12.4")),  # C16: not a cpu fallback
        (nvidia("12.4", caps=(8.9,)), True, TOO_OLD.format(cuda="12.4")),
        (plain(), False, NO_GPU),
        (plain("macos", "x86_64"), False, NO_GPU),  # an Intel Mac has no cell
    ],
    ids=["C12-blackwell", "C16-too-old", "C16-too-old-with-cpu", "no-gpu", "intel-mac"],
)
def test_seed_refusals(facts: Facts, allow_cpu: bool, message: str) -> None:
    with pytest.raises(Refused) as refused:
        select_cell(facts, manifest(), allow_cpu=allow_cpu)
    assert refused.value.message.startswith(message)


def test_unreported_capability_takes_the_conservative_branch() -> None:
    """The query rejected compute_cap: the cu126 rule cannot prove the GPU is older than 12.0."""
    with pytest.raises(Refused) as refused:
        choose_backend(nvidia("12.8", caps=(None,), reported=False), DetectRules.from_dict(RULES))
    assert refused.value.message.startswith(BLACKWELL.format(cuda="12.8"))
    assert "compute capability of GPU 0 is unknown: nvidia-smi could not report it" in refused.value.message
    assert any("conservative refusal by detect.nvidia[2]" in note for note in refused.value.notes)


def test_rejected_field_end_to_end_from_canned_outputs() -> None:
    outputs = {BANNER: ok("nvidia-smi/banner-old-driver-12.6.txt"),
               QUERY: (2, text("nvidia-smi/query-rejected-compute-cap.txt"), ""),
               QUERY_NO_CAP: ok("nvidia-smi/query-without-compute-cap.csv")}  # fmt: skip
    facts = gather({}, fake_run(outputs), system="linux", machine="x86_64")
    with pytest.raises(Refused) as refused:
        select_cell(facts, manifest())
    assert "GRID A100D-40C is unknown" in refused.value.message
    assert any("query field compute_cap was rejected" in note for note in refused.value.notes)


@pytest.mark.parametrize(
    "sample", ["no-devices.txt", "no-driver.txt", "nvml-mismatch.txt"], ids=["exit6", "exit9", "nvml"]
)
def test_c20_no_usable_gpu_never_gets_a_cuda_cell(sample: str) -> None:
    failing = (6, text(f"nvidia-smi/{sample}"), "")
    facts = gather({}, fake_run({BANNER: failing, QUERY: failing}), system="linux", machine="x86_64")
    with pytest.raises(Refused) as refused:
        select_cell(facts, manifest())
    assert refused.value.message == RULES["no-gpu-refuse"]
    assert select_cell(facts, manifest(), allow_cpu=True).backend == "cpu"


@pytest.mark.parametrize(
    ("sample", "code", "backend"),
    [("gfx1100-twice.txt", 0, "rocm7.1"), ("cpu-only.txt", 0, None), ("not-loaded.txt", 1, None)],
    ids=["C21-twice", "C21-cpu-only", "C21-not-loaded"],
)
def test_c21_rocminfo_without_a_gpu_agent_is_no_gpu(sample: str, code: int, backend: str | None) -> None:
    facts = gather({}, fake_run({ROCMINFO: (code, text(f"rocminfo/{sample}"), "")}), system="linux", machine="x86_64")
    if backend:
        assert select_cell(facts, manifest()).backend == backend
    else:
        with pytest.raises(Refused, match="No supported GPU"):
            select_cell(facts, manifest())


def test_c15_interpreter_reasons() -> None:
    emulated = select_cell(nvidia("13.0", os_="windows", arch="aarch64", interpreter="x86_64"), manifest())
    assert emulated.lock == "locks/windows-x86_64-cu130-py3.12.txt" and emulated.interpreter == "x86_64"
    assert "reuses the lock of windows-x86_64-cu130-py3.12" in emulated.reasons
    native = select_cell(nvidia("13.0", os_="windows", arch="aarch64", interpreter="aarch64"), manifest())
    assert "install with an x86_64 interpreter (this one is aarch64)" in native.reasons
    spark = select_cell(nvidia("13.4", os_="windows", arch="aarch64", interpreter="x86_64"), manifest())
    assert spark.cell == "windows-aarch64-cu134-py3.12" and spark.interpreter == "aarch64"
    assert "install with an aarch64 interpreter (this one is x86_64)" in spark.reasons
    assert [layer["kind"] for layer in spark.layers] == ["main", "optional", "no-deps"]


def test_rosetta_picks_the_arm64_cell_and_says_to_use_an_arm64_python() -> None:
    run = fake_run({("sysctl", "-n", "sysctl.proc_translated"): (0, "1\n", "")})
    selection = select_cell(gather({}, run, system="darwin", machine="x86_64"), manifest())
    assert selection.cell == "macos-aarch64-mps-py3.12" and selection.interpreter == "aarch64"
    assert any("Rosetta" in reason and "use an arm64 Python" in reason for reason in selection.reasons)


def test_per_os_no_gpu_table() -> None:
    rules = DetectRules.from_dict(RULES | {"no-gpu": {"linux": "cu130", "windows": "cpu", "macos": "mps"}})
    assert choose_backend(plain(), rules, allow_cpu=True)[0] == "cu130"
    assert choose_backend(plain("windows"), rules, allow_cpu=True)[0] == "cpu"
    assert choose_backend(plain("macos", "x86_64"), rules, allow_cpu=True)[0] == "mps"
    partial = DetectRules.from_dict(RULES | {"no-gpu": {"windows": "cpu"}})
    with pytest.raises(Refused, match="no no-gpu backend for linux"):
        choose_backend(plain(), partial, allow_cpu=True)


# ---- cells, Pythons, manifest checks ------------------------------------------------------


def test_python_choice() -> None:
    data = manifest()
    _, failed = entry("linux", "x86_64", "cu130", python="3.13", status="failed", reason="uv: no solution for torch")
    data["cells"]["linux-x86_64-cu130-py3.13"] = failed | {"python": "3.13"}
    assert select_cell(nvidia("13.0"), data, python="3.12").cell == "linux-x86_64-cu130-py3.12"
    with pytest.raises(NoCell, match="is failed: uv: no solution for torch"):
        select_cell(nvidia("13.0"), data, python="3.13")
    with pytest.raises(NoCell, match=r"it has 3.12, 3.13: pass --python"):
        select_cell(nvidia("13.0"), data, python="3.10")
    assert select_cell(nvidia("12.8"), data).python == "3.12"  # the only one for cu126
    skipped = manifest()
    skipped["cells"]["macos-aarch64-mps-py3.12"] |= {"status": "skipped", "reason": "no torch wheel"}
    with pytest.raises(NoCell, match="is skipped: no torch wheel"):
        select_cell(plain("macos", "aarch64", apple_silicon=True), skipped)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": 3}, "manifest format 3 is not supported"),
        ({"format": 1}, "manifest format 1 is not supported"),
        ({"format": "2"}, 'no integer "format"'),
        ({"detect": None}, "the manifest has no detect rules; add a [detect] table to the lockgen config"),
        ({"cells": []}, '"cells" must be an object'),
    ],
    ids=["format-3", "format-1", "format-string", "no-detect", "cells-list"],
)
def test_bad_manifests(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(select.InputError) as error:
        select_cell(nvidia("13.0"), manifest(**changes))
    assert message in str(error.value)


# ---- rules validation ----------------------------------------------------------------------


def test_rules_problems_have_key_paths() -> None:
    bad = {"apple": 3, "colour": "red", "no-gpu": {"linux": "cpu", "beos": "cpu"},
           "nvidia": [{"min-cuda": "13.0", "backend": "cu130"},
                      {"min-cuda": 12.6, "backend": "cu126", "refuse": "x", "match": {"os": "win", "gpu": "x"}},
                      {"min-cuda": "abc", "refuse-compute-capability": "12"}]}  # fmt: skip
    with pytest.raises(RulesError) as error:
        DetectRules.from_dict(bad)
    paths = sorted(path for path, _ in error.value.problems)
    assert paths == ["detect.apple", "detect.colour", "detect.no-gpu.beos", "detect.nvidia[1].match.gpu", "detect.nvidia[1].match.os",
                     "detect.nvidia[1].min-cuda", "detect.nvidia[1].refuse", "detect.nvidia[2].backend",
                     "detect.nvidia[2].min-cuda", "detect.nvidia[2].refuse-compute-capability"]  # fmt: skip
    assert "a number loses zeros" in dict(error.value.problems)["detect.nvidia[1].min-cuda"]
    with pytest.raises(RulesError, match=r"^tool.lockgen.detect: must be a table"):
        DetectRules.from_dict([], "tool.lockgen.detect")


def test_rules_round_trip_normalized() -> None:
    rules = DetectRules.from_dict(RULES | {"nvidia": [{"match": {"arch": "aarch64", "os": ["windows", "windows"]},
                                                        "min-cuda": "13.4", "backend": "cu134",
                                                        "refuse-compute-capability": 12}]})  # fmt: skip
    data = rules.to_dict()
    assert data["nvidia"] == [{"backend": "cu134", "min-cuda": "13.4", "match": {"arch": ["aarch64"], "os": ["windows"]},
                               "refuse-compute-capability": 12.0}]  # fmt: skip
    assert DetectRules.from_dict(json.loads(json.dumps(data))) == rules
    defaults = DetectRules.from_dict({}).to_dict()
    assert defaults["nvidia-too-old"] == select.DEFAULT_TOO_OLD and defaults["nvidia"] == []


def test_example_detect_table_is_the_test_rules() -> None:
    tomllib = pytest.importorskip("tomllib")
    with EXAMPLE.open("rb") as file:
        example = tomllib.load(file)["detect"]
    assert DetectRules.from_dict(example) == DetectRules.from_dict(RULES)


# ---- CLI ----------------------------------------------------------------------------------


def test_cli_text_and_json(manifest_file: Path) -> None:
    code, out, err = cli("--manifest", str(manifest_file), "--os", "linux", "--arch", "x86_64", "--cuda", "13")
    assert code == 0, err
    assert out.splitlines()[0] == "linux-x86_64-cu130-py3.12: locks/linux-x86_64-cu130-py3.12.txt"
    code, out, _ = cli("--manifest", str(manifest_file), "--json", "--os", "macos", "--arch", "aarch64")
    data = json.loads(out)
    assert (
        code == 0
        and data["cell"] == "macos-aarch64-mps-py3.12"
        and data["lock"] == "locks/macos-aarch64-mps-py3.12.txt"
    )
    assert {"cell", "os", "arch", "backend", "python", "lock", "layers", "reasons", "facts"} <= set(data)
    assert data["facts"]["apple_silicon"] is True


@probing_here
def test_cli_probes_through_the_runner(manifest_file: Path) -> None:
    outputs = nvidia_outputs("banner-two-gpus-12.6.txt", "query-two-gpus.csv")
    code, _, err = cli("--manifest", str(manifest_file), outputs=outputs)
    assert code == 2 and err.startswith("error: " + BLACKWELL.format(cuda="12.6"))
    assert "note: NVIDIA GeForce RTX 5090 (compute capability 12.0) >= 12.0" in err


def test_cli_c16_old_driver_exit_2(manifest_file: Path) -> None:
    code, _, err = cli("--manifest", str(manifest_file), "--os", "linux", "--arch", "x86_64", "--cuda", "12.4",
                       "--gpu-query", str(DATA / "nvidia-smi/query-4090.csv"))  # fmt: skip
    assert code == 2 and err.startswith("error: " + TOO_OLD.format(cuda="12.4"))


@probing_here
def test_cli_c20_refusal_and_cpu(manifest_file: Path) -> None:
    failing = {BANNER: (6, text("nvidia-smi/no-devices.txt"), "")}
    code, _, err = cli("--manifest", str(manifest_file), outputs=failing)
    assert code == 2 and err.startswith("error: " + NO_GPU) and "note: " in err and "No devices were found" in err
    code, out, err = cli("--manifest", str(manifest_file), "--cpu", outputs=failing)
    assert code == 0, err
    assert out.startswith("linux-x86_64-cpu-py3.12: locks/linux-x86_64-cpu-py3.12.txt")


@pytest.mark.parametrize(
    ("sample", "detail"),
    [
        ("garbage.txt", "line 1: 1 column, expected 4"),
        ("other-order.csv", "column 2 (memory.total) is '550.54.14'"),
        ("capability-and-driver-swapped.csv", "column 3 (driver_version) is '8.9'"),
        ("three-columns.csv", "line 1: 3 columns, expected 4"),
        ("header-other-order.csv", "a header with the columns name, driver_version, memory.total, compute_cap"),
        ("empty.csv", "no GPU rows"),
        ("utf16.csv", "not UTF-8 text"),
        ("missing.csv", "cannot read it"),
    ],
    ids=["garbage", "other-order", "swapped", "three-columns", "header-other-order", "empty", "non-utf8", "missing"],
)
def test_cli_bad_gpu_query_files(manifest_file: Path, sample: str, detail: str) -> None:
    path = DATA / "gpu-query" / sample
    code, out, err = cli("--manifest", str(manifest_file), "--gpu-query", str(path))
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"error: --gpu-query {path}: ") and detail in err
    if sample != "missing.csv":
        assert "name, memory.total, driver_version, compute_cap" in err


def test_cli_gpu_query_with_a_header_is_read_right(manifest_file: Path) -> None:
    code, out, err = cli("--manifest", str(manifest_file), "--json", "--os", "linux", "--arch", "x86_64",
                         "--cuda", "12.8", "--gpu-query", str(DATA / "gpu-query/with-header.csv"))  # fmt: skip
    assert code == 0, err
    assert [g["compute_capability"] for g in json.loads(out)["facts"]["gpus"]] == [8.9]


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (["--cuda", "abc"], None, "error: --cuda 'abc': write the driver's CUDA version like 13.0"),
        (["--python", "three"], None, "error: --python 'three'"),
        ([], "{not json", "not a JSON manifest"),
        ([], json.dumps({"format": 2, "cells": {}}), "the manifest has no detect rules; add a [detect] table"),
        ([], json.dumps(manifest(detect={"nvidia": [{"backend": "cu130"}]})), "detect.nvidia[0].min-cuda: missing"),
    ],
    ids=["bad-cuda", "bad-python", "bad-json", "no-detect", "bad-rules"],
)
def test_cli_bad_input_exit_2(
    tmp_path: Path, manifest_file: Path, args: list[str], content: str | None, message: str
) -> None:
    path = manifest_file
    if content is not None:
        path = tmp_path / "other.json"
        path.write_text(content)
    code, _, err = cli("--manifest", str(path), "--os", "linux", "--arch", "x86_64", *args)
    assert code == 2 and message in err and "Traceback" not in err
    code, _, err = cli("--manifest", str(tmp_path / "absent.json"))
    assert code == 2 and "cannot read the manifest" in err


# ---- stdlib only, vendorable ---------------------------------------------------------------


def test_imports_only_the_stdlib() -> None:
    tree = ast.parse(MODULE.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module, "no relative imports"
            names.add(node.module.split(".")[0])
    assert names and names <= set(sys.stdlib_module_names), names - set(sys.stdlib_module_names)


def test_a_copy_runs_on_a_bare_python(tmp_path: Path, manifest_file: Path) -> None:
    vendored = tmp_path / "vendor"
    vendored.mkdir()
    shutil.copy(MODULE, vendored / "lockgen_select.py")
    code = (f"import sys; sys.path.insert(0, {str(vendored)!r}); import lockgen_select as s; "
            f"raise SystemExit(s.main(['--manifest', {str(manifest_file)!r}, '--json', '--os', 'windows', "
            "'--arch', 'aarch64', '--interpreter', 'x86_64', '--cuda', '13.0']))")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], check=False, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["lock"] == "locks/windows-x86_64-cu130-py3.12.txt"


def test_the_copy_runs_as_a_script_named_select_py(tmp_path: Path, manifest_file: Path) -> None:
    """``python select.py``: its folder comes first on sys.path, where the name shadows the stdlib
    ``select`` that subprocess imports; probing (nvidia-smi, rocminfo) must still work."""
    shutil.copy(MODULE, tmp_path / "select.py")
    done = subprocess.run([sys.executable, "-S", "select.py", "--manifest", str(manifest_file), "--cpu", "--json"],
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert "Traceback" not in done.stderr and done.returncode in (0, 2), done.stderr
    bad = subprocess.run([sys.executable, "-I", "-S", str(tmp_path / "select.py"), "--manifest", str(manifest_file),
                          "--os", "linux", "--arch", "x86_64", "--cuda", "12.4"],
                         check=False, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.startswith("error: " + TOO_OLD.format(cuda="12.4"))


def test_runs_as_a_module(manifest_file: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "lockgen.select", "--manifest", str(manifest_file), "--os", "macos",
                           "--arch", "aarch64"], check=False, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith(
        "macos-aarch64-mps-py3.12: locks/macos-aarch64-mps-py3.12.txt"
    )
