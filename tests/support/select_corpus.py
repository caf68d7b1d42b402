"""A corpus of recorded machines (issue 19) and the cell or refusal each gets from a matrix with
several CUDA builds (cu126, cu128, cu130 with their torch wheels' real arch lists), ROCm 6.4,
Apple and CPU cells. Each machine is its probes' outputs: nvidia-smi (banner and query, files of
tests/data/detect/nvidia-smi or inline), rocminfo, lspci or Windows' video controllers, the
amdgpu KFD topology, macOS sysctl flags.

Three manifests (``MANIFESTS``): ``default`` (above), ``windows-rocm`` (the same with a Windows
ROCm cell: AMD GPUs on Windows by their PCI device IDs) and ``layers``: cu130 and cu128 cells
whose GPU extensions sit in an optional layer (flash-attn, Ampere and newer) and a no-deps layer
(sageattention), as in examples/ai-toolkit, with torchao's wheel in main linked against CUDA 12's
runtime (it cannot load in the CUDA 13 cell). A machine's ``layers_skipped`` are the optional
layers it gets its cell without."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.support.select_samples import BANNER, DATA, QUERY, QUERY_NO_CAP, ROCMINFO

LSPCI = ("lspci", "-vmm", "-nn", "-k")
CIM = ("powershell", "-NoProfile", "-NonInteractive", "-Command",
       "Get-CimInstance Win32_VideoController | Select-Object Name,PNPDeviceID,ConfigManagerErrorCode,DriverVersion "
       "| ConvertTo-Json -Compress")  # fmt: skip

# the torch wheels' code (cu126 and cu128 as PyTorch's release builds list it; cu130 as lockgen
# read torch 2.13.0 from PyPI for this repository's manifest)
CU126 = {"sass": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"], "ptx": ["compute_90"]}
CU128 = {"sass": ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"], "ptx": ["compute_120"]}
CU130 = {"sass": ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_103f", "sm_120",
                  "sm_120a", "sm_121a"], "ptx": []}  # fmt: skip
ROCM64 = {"gfx": ["gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1200", "gfx1201"]}


def _coverage(code: dict[str, list[str]], sha: str) -> dict[str, Any]:
    wheel = {"name": "torch", "version": "2.13.0", "sha256": sha * 64, "sass": [], "ptx": [], "gfx": [], "linked": [],
             **code}  # fmt: skip
    return {"wheels": [wheel], "unread": [], "runtimes": [], "layers": []}


def _cell(os_: str, arch: str, backend: str, code: dict[str, list[str]] | None = None) -> tuple[str, dict[str, Any]]:
    name = f"{os_}-{arch}-{backend}-py3.12"
    entry: dict[str, Any] = {"os": os_, "arch": arch, "backend": backend, "python": "3.12", "status": "locked",
                             "lock": f"locks/{name}.txt", "requires": {},
                             "layers": [{"name": "main", "kind": "main", "lock": f"locks/{name}.txt"}]}  # fmt: skip
    if code is not None:
        entry["coverage"] = _coverage(code, backend[-1] if backend[-1].isdigit() else "a")
    return name, entry


RULES: dict[str, Any] = {
    "apple": "mps",
    "amd": "rocm6.4",
    "no-gpu": "cpu",
    "no-gpu-refuse": "No supported GPU detected. Pass --cpu to install the CPU build.",
    "nvidia-too-old": "The NVIDIA driver only supports CUDA {cuda}; update the driver.",
    "nvidia": [
        {"min-cuda": "13.0", "backend": "cu130"},
        {"min-cuda": "12.8", "backend": "cu128"},
        {"min-cuda": "12.6", "backend": "cu126"},
    ],
}
MANIFEST: dict[str, Any] = {
    "format": 4,
    "generator": "lockgen",
    "detect": RULES,
    "cells": dict([
        _cell("linux", "x86_64", "cu126", CU126), _cell("linux", "x86_64", "cu128", CU128),
        _cell("linux", "x86_64", "cu130", CU130), _cell("linux", "x86_64", "rocm6.4", ROCM64),
        _cell("linux", "x86_64", "cpu"), _cell("linux", "aarch64", "cu130", CU130),
        _cell("windows", "x86_64", "cu128", CU128), _cell("windows", "x86_64", "cpu"),
        _cell("macos", "aarch64", "mps"),
    ]),
}  # fmt: skip


def smi(name: str) -> tuple[int, str, str]:
    return 0, (DATA / "nvidia-smi" / name).read_text(), ""


def file(folder: str, name: str) -> tuple[int, str, str]:
    return 0, (DATA / folder / name).read_text(), ""


def query(*rows: str) -> tuple[int, str, str]:
    """nvidia-smi --query-gpu output: ``"NAME, MEMORY MiB, DRIVER, CAP"`` rows."""
    return 0, "".join(row + "\n" for row in rows), ""


RTX5090 = "NVIDIA GeForce RTX 5090, 32607 MiB, 580.65.06, 12.0"
GTX1080 = "NVIDIA GeForce GTX 1080, 8192 MiB, 580.65.06, 6.1"
NOT_FOUND = (127, "", "not found")


@dataclass
class Machine:
    """``outputs``: argv -> (code, stdout, stderr) (anything else is "not found"); ``kfd``:
    gfx_target_version per KFD node; ``expect``: the cell, or ``refused: TEXT`` (exit 2 with
    TEXT in stderr)."""

    name: str
    expect: str
    outputs: dict[tuple[str, ...], tuple[int, str, str]] = field(default_factory=dict)
    system: str = "linux"
    machine: str = "x86_64"
    flags: tuple[str, ...] = ()
    kfd: tuple[int, ...] = ()
    manifest: str = "default"
    layers_skipped: tuple[str, ...] = ()


def nvidia(banner: str, *rows: str, **more: tuple[int, str, str]) -> dict[tuple[str, ...], tuple[int, str, str]]:
    outputs = {BANNER: smi(banner), QUERY: query(*rows)}
    return outputs | {tuple(k.split("|")): v for k, v in more.items()}


MACHINES = [
    # consumer cards, old and new
    Machine("rtx4090-driver-13.0", "linux-x86_64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA GeForce RTX 4090, 24564 MiB, 580.65.06, 8.9")),
    Machine("rtx5090-driver-13.0", "linux-x86_64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", RTX5090)),
    Machine("rtx5090-driver-12.8", "linux-x86_64-cu128-py3.12", nvidia("banner-12.8-npu.txt", RTX5090)),
    Machine("gtx1080-driver-12.8-skips-cu128", "linux-x86_64-cu126-py3.12", nvidia("banner-12.8-npu.txt", GTX1080)),
    Machine("gtx1080-driver-13.0-gets-cu126", "linux-x86_64-cu126-py3.12", nvidia("banner-cuda-13.0.txt", GTX1080)),
    Machine("gtx1080-driver-12.4-too-old", "refused: only supports CUDA 12.4", nvidia("banner-12.4.txt", GTX1080)),
    Machine("gtx970-maxwell-driver-12.8", "linux-x86_64-cu126-py3.12", nvidia("banner-12.8-npu.txt", "NVIDIA GeForce GTX 970, 4096 MiB, 570.1, 5.2")),
    Machine("rtx2080-turing-driver-13.0", "linux-x86_64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA GeForce RTX 2080, 8192 MiB, 580.65.06, 7.5")),
    Machine("rtx3090-and-5090-c12", "linux-x86_64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA GeForce RTX 3090, 24576 MiB, 580.65.06, 8.6", RTX5090)),
    Machine("rtx5090-and-gtx1080-mixed-ptx", "linux-x86_64-cu126-py3.12", nvidia("banner-cuda-13.0.txt", RTX5090, GTX1080)),
    Machine("kepler-k80-refused", "refused: no cell the detect rules allow has code for every GPU",
            nvidia("banner-cuda-13.0.txt", "Tesla K80, 11441 MiB, 580.65.06, 3.7")),
    # data-centre cards
    Machine("v100-driver-12.8", "linux-x86_64-cu126-py3.12", nvidia("banner-12.8-npu.txt", "Tesla V100-SXM2-32GB, 32768 MiB, 570.1, 7.0")),
    Machine("a100-driver-12.6", "linux-x86_64-cu126-py3.12", nvidia("banner-old-driver-12.6.txt", "NVIDIA A100-SXM4-80GB, 81920 MiB, 560.35.03, 8.0")),
    Machine("h100-driver-13.0", "linux-x86_64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA H100 80GB HBM3, 81559 MiB, 580.65.06, 9.0")),
    Machine("b200-driver-13.0", "linux-x86_64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA B200, 183359 MiB, 580.65.06, 10.0")),
    Machine("mig-a100-driver-12.8", "linux-x86_64-cu128-py3.12", nvidia("banner-mig-12.8.txt", "NVIDIA A100-SXM4-40GB, 40960 MiB, 570.1, 8.0")),
    Machine("gh200-aarch64-driver-13.0", "linux-aarch64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA GH200 480GB, 97871 MiB, 580.65.06, 9.0"), machine="aarch64"),
    Machine("gh200-aarch64-driver-12.8-no-cell", "refused: no cell for linux aarch64 cu128",
            nvidia("banner-gh200-12.8.txt", "NVIDIA GH200 480GB, 97871 MiB, 570.1, 9.0"), machine="aarch64"),
    Machine("dgx-spark-gb10-12.1", "linux-aarch64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA GB10, [N/A], 580.65.06, 12.1"), machine="aarch64"),
    Machine("gpu-and-npu-c14", "linux-x86_64-cu128-py3.12", {BANNER: smi("banner-12.8-npu.txt"), QUERY: smi("query-gpu-and-npu.csv")}),
    Machine("old-driver-no-compute-cap", "refused: cannot check that cell",
            {BANNER: smi("banner-old-driver-12.6.txt"), QUERY: (2, (DATA / "nvidia-smi" / "query-rejected-compute-cap.txt").read_text(), ""),
             QUERY_NO_CAP: smi("query-without-compute-cap.csv")}),
    # unknown is not none
    Machine("nvidia-smi-hangs", "refused: nvidia-smi: timed out", {BANNER: (124, "", "timed out")}, flags=("--cpu",)),
    Machine("nvidia-smi-segfaults", "refused: nvidia-smi: killed by signal 11", {BANNER: (-11, "", "")}, flags=("--cpu",)),
    Machine("nvidia-smi-prints-garbage", "refused: its output is not nvidia-smi's", {BANNER: (0, "\x00\x01garbage", "")}, flags=("--cpu",)),
    Machine("nvidia-smi-hangs-cell-named", "linux-x86_64-cpu-py3.12", {BANNER: (124, "", "timed out")},
            flags=("--cell", "linux-x86_64-cpu-py3.12")),
    Machine("rocminfo-hangs", "refused: rocminfo: timed out", {ROCMINFO: (124, "", "")}, flags=("--cpu",)),
    # driverless cards on the PCI bus
    Machine("rtx4090-nouveau", "refused: the nouveau driver cannot run CUDA", {LSPCI: file("lspci", "rtx4090-nouveau.txt")}, flags=("--cpu",)),
    Machine("a100-no-driver", "refused: install (or repair) the NVIDIA driver", {LSPCI: file("lspci", "a100-no-driver.txt")}, flags=("--cpu",)),
    Machine("driver-not-talking-rtx3060", "refused: its driver does not work",
            {BANNER: (9, (DATA / "nvidia-smi" / "no-driver.txt").read_text(), ""), LSPCI: file("lspci", "rtx3060-nvidia.txt")}, flags=("--cpu",)),
    Machine("nvml-mismatch-rtx3060", "refused: Driver/library version mismatch",
            {BANNER: (18, (DATA / "nvidia-smi" / "nvml-mismatch.txt").read_text(), ""), LSPCI: file("lspci", "rtx3060-nvidia.txt")}),
    Machine("radeon-without-driver", "refused: an AMD GPU is on the PCI bus without a driver", {LSPCI: file("lspci", "radeon-no-driver.txt")}, flags=("--cpu",)),
    Machine("intel-laptop-cpu", "linux-x86_64-cpu-py3.12", {LSPCI: file("lspci", "intel-only.txt")}, flags=("--cpu",)),
    Machine("intel-laptop-refused", "refused: No supported GPU detected", {LSPCI: file("lspci", "intel-only.txt")}),
    Machine("no-gpu-no-pci", "linux-x86_64-cpu-py3.12", flags=("--cpu",)),
    # AMD by gfx target
    Machine("rx7900xtx-rocminfo", "linux-x86_64-rocm6.4-py3.12", {ROCMINFO: file("rocminfo", "gfx1100.txt")}),
    Machine("mi300x-kfd-no-rocminfo", "linux-x86_64-rocm6.4-py3.12", kfd=(0, 90402, 90402)),
    Machine("rx9070xt-kfd", "linux-x86_64-rocm6.4-py3.12", kfd=(0, 120001)),
    Machine("ryzen-780m-apu-only", "refused: No supported GPU detected", {LSPCI: file("lspci", "ryzen-apu-amdgpu.txt")}, kfd=(0, 110003)),
    Machine("ryzen-780m-apu-only-cpu", "linux-x86_64-cpu-py3.12", {LSPCI: file("lspci", "ryzen-apu-amdgpu.txt")}, kfd=(0, 110003), flags=("--cpu",)),
    Machine("rx7900xtx-and-raphael-igpu", "linux-x86_64-rocm6.4-py3.12", kfd=(0, 110000, 100306)),
    Machine("rx6600-unsupported", "refused: No supported GPU detected", kfd=(0, 100302)),
    Machine("rx7900xtx-and-rx6600-every-gpu-counts", "refused: the AMD GPU gfx1032 is not supported by rocm6.4", kfd=(0, 110000, 100302)),
    # Apple, Windows
    Machine("apple-m2", "macos-aarch64-mps-py3.12", system="darwin", machine="arm64"),
    Machine("apple-rosetta-python", "macos-aarch64-mps-py3.12",
            {("sysctl", "-n", "sysctl.proc_translated"): (0, "1\n", "")}, system="darwin", machine="x86_64"),
    Machine("windows-rtx4070", "windows-x86_64-cu128-py3.12",
            nvidia("banner-umd-13.0.txt", "NVIDIA GeForce RTX 4070, 12282 MiB, 580.88, 8.9") | {CIM: file("cim", "rtx4070.json")}, system="win32", machine="AMD64"),
    Machine("windows-nvidia-basic-display-adapter", "refused: its driver does not work",
            {CIM: file("cim", "nvidia-basic-display.json")}, system="win32", machine="AMD64", flags=("--cpu",)),
    Machine("windows-intel-cpu", "windows-x86_64-cpu-py3.12", {CIM: file("cim", "intel-only.json")}, system="win32", machine="AMD64", flags=("--cpu",)),
    Machine("windows-snapdragon-no-cell", "refused: the manifest has no cell for windows aarch64 cpu",
            {CIM: file("cim", "snapdragon.json")}, system="win32", machine="ARM64", flags=("--cpu",)),
]  # fmt: skip


# ---- Windows AMD GPUs, by PCI device ID (AMD's device table) -------------------------------------

WINDOWS_ROCM: dict[str, Any] = {
    **MANIFEST,
    "cells": {**MANIFEST["cells"], **dict([_cell("windows", "x86_64", "rocm6.4", ROCM64)])},
}


def cim(name: str) -> dict[tuple[str, ...], tuple[int, str, str]]:
    return {CIM: file("cim", name)}


WINDOWS_AMD = [
    Machine("windows-rx7900xtx-and-raphael-igpu", "windows-x86_64-rocm6.4-py3.12", cim("rx7900xtx.json"), system="win32",
            machine="AMD64", manifest="windows-rocm"),
    Machine("windows-radeon-unknown-device", "refused: cannot tell which gfx target the AMD GPU AMD Radeon RX 9999 XT [1002:7fff] rev c0 has",
            cim("radeon-unknown-device.json"), system="win32", machine="AMD64", flags=("--cpu",), manifest="windows-rocm"),
    Machine("windows-ryzen-780m-apu-only", "refused: No supported GPU detected", cim("ryzen-780m-apu.json"), system="win32",
            machine="AMD64", manifest="windows-rocm"),
    Machine("windows-ryzen-780m-apu-only-cpu", "windows-x86_64-cpu-py3.12", cim("ryzen-780m-apu.json"), system="win32",
            machine="AMD64", flags=("--cpu",), manifest="windows-rocm"),
    Machine("windows-rx6600-gfx1032-unsupported", "refused: not supported by rocm6.4", cim("rx6600.json"), system="win32",
            machine="AMD64", manifest="windows-rocm"),
    Machine("windows-radeon-basic-display-adapter", "refused: install AMD's Adrenalin or PRO driver",
            cim("radeon-basic-display.json"), system="win32", machine="AMD64", flags=("--cpu",), manifest="windows-rocm"),
    # no Windows ROCm cell: the AMD GPU has no build to use, unknown target or not
    Machine("windows-rx7900xtx-no-rocm-cell", "refused: No supported GPU detected", cim("rx7900xtx.json"), system="win32",
            machine="AMD64"),
    Machine("windows-radeon-unknown-no-rocm-cell-cpu", "windows-x86_64-cpu-py3.12", cim("radeon-unknown-device.json"),
            system="win32", machine="AMD64", flags=("--cpu",)),
]  # fmt: skip


# ---- GPU extensions in layers ---------------------------------------------------------------------


def _wheel(name: str, version: str, sha: str, sass: list[str], ptx: tuple[str, ...] = (),
           needs: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    code = {"sass": sass, "ptx": list(ptx), "gfx": []}
    return {"name": name, "version": version, "sha256": sha * 64, **code, "linked": [{"needs": list(needs), **code}]}


def _layered(backend: str, torch: dict[str, list[str]], runtime: str, flash: list[str],
             sage: list[str]) -> tuple[str, dict[str, Any]]:  # fmt: skip
    name, entry = _cell("linux", "x86_64", backend, torch)
    folder = f"locks/{name}"
    entry["layers"] += [{"name": "optional-flash-attn", "kind": "optional", "lock": f"{folder}/optional-flash-attn.txt"},
                        {"name": "no-deps", "kind": "no-deps", "lock": f"{folder}/no-deps.txt"}]  # fmt: skip
    coverage = entry["coverage"]
    torch = coverage["wheels"][0]
    torch["linked"] = [{"needs": [runtime], "sass": torch["sass"], "ptx": torch["ptx"], "gfx": []}]
    coverage["runtimes"] = [runtime]
    if backend == "cu130":  # PyPI's torchao 0.10.0: a CUDA 12 build, its code cannot load next to CUDA 13
        coverage["wheels"].append(_wheel("torchao", "0.10.0", "c", ["sm_80", "sm_86"], needs=("libcudart.so.12",)))
    coverage["layers"] = [
        {"name": "optional-flash-attn", "kind": "optional", "sha256": "d" * 64,
         "wheels": [_wheel("flash-attn", "2.8.3", "e", flash, needs=(runtime,))], "unread": []},
        {"name": "no-deps", "kind": "no-deps", "sha256": "f" * 64,
         "wheels": [_wheel("sageattention", "2.2.0", "1", sage)], "unread": []},
    ]  # fmt: skip
    return name, entry


LAYERS: dict[str, Any] = {
    "format": 4,
    "generator": "lockgen",
    "detect": {"no-gpu": "cpu", "nvidia": [{"min-cuda": "13.0", "backend": "cu130"}, {"min-cuda": "12.8", "backend": "cu128"}]},
    "cells": dict([
        _layered("cu130", CU130, "libcudart.so.13", ["sm_80", "sm_90", "sm_100", "sm_120"],
                 ["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"]),
        _layered("cu128", CU128, "libcudart.so.12", ["sm_80", "sm_90"],
                 ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]),
        _cell("linux", "x86_64", "cpu"),
    ]),
}  # fmt: skip
RTX2080 = "NVIDIA GeForce RTX 2080, 8192 MiB, 580.65.06, 7.5"
B200 = "NVIDIA B200, 183359 MiB, 580.65.06, 10.0"
FLASH = ("optional-flash-attn",)

IN_LAYERS = [
    Machine("layers-rtx4090-every-layer", "linux-x86_64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA GeForce RTX 4090, 24564 MiB, 580.65.06, 8.9"), manifest="layers"),
    Machine("layers-h100-torchao-cannot-load", "linux-x86_64-cu130-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA H100 80GB HBM3, 81559 MiB, 580.65.06, 9.0"), manifest="layers"),
    Machine("layers-rtx2080-no-deps-passes-cu130-over", "linux-x86_64-cu128-py3.12", nvidia("banner-cuda-13.0.txt", RTX2080), manifest="layers", layers_skipped=FLASH),
    Machine("layers-b200-no-deps-passes-cu130-over", "linux-x86_64-cu128-py3.12", nvidia("banner-cuda-13.0.txt", B200), manifest="layers", layers_skipped=FLASH),
    Machine("layers-rtx3090-and-2080-every-gpu-counts", "linux-x86_64-cu128-py3.12", nvidia("banner-cuda-13.0.txt", "NVIDIA GeForce RTX 3090, 24576 MiB, 580.65.06, 8.6", RTX2080), manifest="layers", layers_skipped=FLASH),
    Machine("layers-rtx5090-driver-12.8-without-flash-attn", "linux-x86_64-cu128-py3.12", nvidia("banner-12.8-npu.txt", RTX5090), manifest="layers", layers_skipped=FLASH),
    Machine("layers-rtx4090-driver-12.8-every-layer", "linux-x86_64-cu128-py3.12", nvidia("banner-12.8-npu.txt", "NVIDIA GeForce RTX 4090, 24564 MiB, 570.1, 8.9"), manifest="layers"),
    Machine("layers-gtx1080-refused-by-torch", "refused: no cell the detect rules allow has code for every GPU", nvidia("banner-cuda-13.0.txt", GTX1080), manifest="layers"),
    Machine("layers-v100-refused-naming-torch-and-no-deps", "refused: the no-deps layer no-deps: GPU 0 Tesla V100-SXM2-32GB (compute capability 7.0): sageattention 2.2.0 has sm_75", nvidia("banner-12.8-npu.txt", "Tesla V100-SXM2-32GB, 32768 MiB, 570.1, 7.0"), manifest="layers"),
]  # fmt: skip

MACHINES += WINDOWS_AMD + IN_LAYERS
MANIFESTS: dict[str, dict[str, Any]] = {"default": MANIFEST, "windows-rocm": WINDOWS_ROCM, "layers": LAYERS}
