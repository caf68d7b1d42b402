"""Pick this machine's lock from ``locks/manifest.json``: a portable, stdlib-only cell selector.

Installers vendor this one file (copy it as ``cellselect.py``, or as ``select.py``, its old
name, and run it; or import a copy) or run it with a bare Python: CPython 3.8 to 3.13, nothing outside
the standard library, nothing from the rest of lockgen. Parts, kept apart (docs/select.md
describes them for reimplementers):

1. Facts. :func:`gather` runs ``nvidia-smi``, ``rocminfo``, ``lspci``/``powershell`` and
   ``sysctl`` through an injectable runner, reads the PCI bus and the AMD compute driver's
   topology from sysfs, and hands the text to pure parsers (``parse_*``, ``*_failure``) that are
   tested on recorded outputs (CASES C12-C16, C20, C21). A probe that times out, crashes or
   answers garbage makes the facts *unknown* (never "no GPU").
2. Rules. :class:`DetectRules` is the ``[detect]`` table (the seed's ``_cuda_flavor`` and
   ``build_spec`` as data, plus extra-axis routing and coverage narrowing); lockgen writes it
   into the manifest under ``"detect"``. :func:`backend_candidates` applies it to the facts.
3. Coverage. Each GPU cell's manifest entry lists the GPU code its locked wheels carry (CUDA
   SASS/PTX, ROCm gfx), read by lockgen from the wheels; :func:`coverage_gaps` says which GPUs
   of the machine a cell cannot run on.
4. The cell. :func:`select_cell` picks (os, host arch, backend, python, extra axes) from the
   manifest's cells: the first the rules allow whose code covers every GPU.

CLI: ``python cellselect.py --manifest locks/manifest.json [--json] [--cpu] [--cell NAME]
[--axis NAME=VALUE] [--python X.Y]`` plus pretend flags; exit 0 with the choice, 2 for a
refusal or bad input (never a traceback).
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and os.path.basename(__file__) == "select.py":  # pragma: no cover
    # A copy vendored under the old name and run as ``python select.py``: its folder is first on
    # sys.path, where the name hides the stdlib ``select`` that subprocess (and, on some versions,
    # argparse's imports) load; drop that entry before importing anything else (os and sys do
    # not import select). Under its own name, cellselect.py, nothing is hidden.
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    if "select" in sys.modules and getattr(sys.modules["select"], "__file__", None) == os.path.abspath(__file__):
        del sys.modules["select"]

import argparse
import contextlib
import fnmatch
import json
import math
import platform
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

__all__ = [
    "AMD_APUS",
    "AMD_GFX_DEVICES",
    "AMD_REVISION_GFX",
    "ARCHES",
    "DEFAULT_NO_GPU",
    "DEFAULT_REFUSE",
    "DEFAULT_TOO_OLD",
    "GENERIC_GFX",
    "GPU_KINDS",
    "MANIFEST_FORMAT",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "NOT_FOUND",
    "NOT_RUNNABLE",
    "OSES",
    "QUERY_EXAMPLE",
    "QUERY_FIELDS",
    "ROCM_GFX",
    "TIMED_OUT",
    "TIMEOUT",
    "AxisRule",
    "Candidate",
    "Coverage",
    "DetectRules",
    "Facts",
    "Gpu",
    "InputError",
    "LayerCoverage",
    "LinkedCode",
    "NoCell",
    "NvidiaRule",
    "PciDevice",
    "Problems",
    "QueryError",
    "Refused",
    "RulesError",
    "Runner",
    "SelectError",
    "Selection",
    "WheelCode",
    "amd_from_pci",
    "amd_gfx",
    "arches",
    "backend_candidates",
    "bounded_problem",
    "build_parser",
    "check_cuda",
    "choose_backend",
    "code_covers",
    "coverage_gaps",
    "gather",
    "gfx_covers",
    "gfx_from_target_version",
    "load_manifest",
    "loads_bounded",
    "mac_arches",
    "main",
    "manifest_rules",
    "normalize_arch",
    "nvidia_smi_failure",
    "nvidia_smi_unknown",
    "parse_cuda_version",
    "parse_gpu_list",
    "parse_gpu_query",
    "parse_kfd_properties",
    "parse_lspci",
    "parse_rocminfo",
    "parse_sysctl_flag",
    "parse_video_controllers",
    "pretend",
    "probe_amd",
    "probe_nvidia",
    "read_gpu_query",
    "read_kfd",
    "read_sysfs_pci",
    "rejected_query_field",
    "rocm_targets",
    "rocminfo_failure",
    "rocminfo_unknown",
    "rules_problems",
    "run_cli",
    "run_program",
    "select_cell",
    "version_key",
]  # fmt: skip

MANIFEST_FORMAT = 4  # the manifest format this selector reads
OSES = ("linux", "windows", "macos")
ARCHES = ("x86_64", "aarch64")
GPU_KINDS = ("nvidia", "amd", "apple", "none")
QUERY_FIELDS = ("name", "memory.total", "driver_version", "compute_cap")
QUERY_EXAMPLE = "NVIDIA GeForce RTX 4090, 24564 MiB, 550.54.14, 8.9"
TIMEOUT = 30.0  # seconds per probed program
# runner return codes: a missing program, a program that exists but cannot run, a timeout
NOT_FOUND, NOT_RUNNABLE, TIMED_OUT = 127, 126, 124
MAX_DEPTH = 32  # nesting levels of the manifest (lockgen writes 6)
MAX_DIGITS = 18  # digits of an integer in the manifest (lockgen writes one: "format")
MAX_BYTES = 64 * 1024 * 1024  # a manifest or --gpu-query file larger than this is refused
SYSFS = "/sys"  # where gather() reads the PCI bus and the amdgpu topology (tests point it elsewhere)

DEFAULT_TOO_OLD = "NVIDIA driver only supports CUDA {cuda}, which is too old; update the NVIDIA driver"
DEFAULT_NO_GPU = "no supported GPU detected; pass --cpu to use the CPU cell anyway"
DEFAULT_REFUSE = "this GPU is not supported with driver CUDA {cuda}; update the NVIDIA driver"

if TYPE_CHECKING:
    Runner = Callable[[Sequence[str]], tuple[int, str, str]]  # argv -> (returncode, stdout, stderr)
    Problems = list[tuple[str, str]]
else:  # the same names at run time, unsubscripted: Python 3.8 cannot subscript list or Callable
    Runner = Callable
    Problems = list

# ---- data: AMD targets (docs/select.md, "AMD by gfx target") ---------------------------------

#: gfx targets each ROCm release supports on Linux, from ROCm's "System requirements (Linux)"
#: support matrix (rocm.docs.amd.com, install-on-linux/reference/system-requirements) for that
#: release. A backend label ``rocmX.Y`` uses the entry of X.Y (or of the newest release before
#: it); the wheels' own code objects (coverage) narrow it further.
ROCM_GFX: dict[str, tuple[str, ...]] = {
    "5.7": ("gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx1030", "gfx1100"),
    "6.0": ("gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx1030", "gfx1100"),
    "6.1": ("gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx1030", "gfx1100", "gfx1101"),
    "6.2": ("gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx1030", "gfx1100", "gfx1101"),
    "6.3": ("gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101"),
    "6.4": ("gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1200", "gfx1201"),
    "7.0": ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1200", "gfx1201"),
    "7.1": ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1151", "gfx1200",
            "gfx1201"),
}  # fmt: skip
#: Integrated GPUs (APUs), from the "dGPU/APU" column of LLVM's AMDGPUUsage processor table:
#: without ROCm support they are "no supported GPU"; next to a supported GPU they are ignored.
AMD_APUS = frozenset({
    "gfx801", "gfx810", "gfx902", "gfx909", "gfx90c", "gfx1013", "gfx1033", "gfx1035", "gfx1036", "gfx1037",
    "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
})  # fmt: skip
#: Generic targets (LLVM AMDGPUUsage, "Generic processors"; TheRock builds its gfx*X families
#: from them): a code object for the generic target runs on each of these processors.
GENERIC_GFX: dict[str, tuple[str, ...]] = {
    "gfx9-generic": ("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"),
    "gfx9-4-generic": ("gfx940", "gfx941", "gfx942", "gfx950"),
    "gfx10-1-generic": ("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    "gfx10-3-generic": ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
    "gfx11-generic": ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"),
    "gfx12-generic": ("gfx1200", "gfx1201"),
}

#: AMD GPUs by PCI device ID (hex), per gfx target, for Windows, where there is no rocminfo and no
#: KFD topology: Windows names a GPU ``PCI\\VEN_1002&DEV_744C&…&REV_C8``. From AMD's Developer
#: Tools device table (GPUOpen-Tools/device_info, ``DeviceInfo.cpp`` v0.44, MIT licence: the
#: ``kCardInfo`` rows whose name is a gfx target, gfx8 and older left out: no ROCm build has them).
AMD_GFX_DEVICES: dict[str, str] = {
    "gfx804": "694c 694e 694f 6980 6981 6984 6985 6986 6987 6995 6997 699f",
    "gfx900": "6860 6861 6862 6863 6864 6867 6868 6869 686a 686b 686c 686d 686e 687f",
    "gfx902": "15d8 15d9 15dd",
    "gfx904": "69a0 69a1 69a2 69a3 69af",
    "gfx906": "66a0 66a1 66a2 66a3 66a4 66a7 66af",
    "gfx90a": "740c 740f",
    "gfx90c": "15e7 1636 1638 164c",
    "gfx942": "74a1 74a9",
    "gfx950": "75a0 75a1",
    "gfx1010": "7310 7312 7318 7319 731a 731b 731e 731f",
    "gfx1011": "7360 7362",
    "gfx1012": "7340 7341 7343 7347 734f",
    "gfx1030": "73a0 73a1 73a2 73a3 73a5 73ab 73ae 73af 73bf",
    "gfx1031": "73c0 73c1 73c3 73ce 73df",
    "gfx1032": "73e0 73e1 73e3 73ef 73ff",
    "gfx1033": "163f",
    "gfx1034": "7420 7421 7422 7423 743f",
    "gfx1035": "164d 1681",
    "gfx1036": "13c0 1506 164e",
    "gfx1100": "73a8 7448 7449 744a 744b 744c 745e",
    "gfx1101": "73c4 73c5 73c8 7460 7461 7470 7478 747e",
    "gfx1102": "73f0 7480 7481 7483 7487 7489 748b 7499",
    "gfx1103": "15bf 15c8 1900 1901",
    "gfx1150": "150e",
    "gfx1151": "1586",
    "gfx1152": "1114",
    "gfx1153": "1902",
    "gfx1200": "7590",
    "gfx1201": "7550 7551",
}
#: Device IDs whose target depends on the revision (the same table: 73FF rev DF is an RX 6750 GRE
#: 10GB, gfx1031; its other revisions are RX 6600 cards, gfx1032).
AMD_REVISION_GFX: dict[str, str] = {"73ff:df": "gfx1031"}
_AMD_DEVICE_GFX = {device: gfx for gfx, devices in AMD_GFX_DEVICES.items() for device in devices.split()}


class SelectError(Exception):
    """Anything the CLI reports as ``error: …`` with exit code 2 (never a traceback)."""


class InputError(SelectError):
    """Bad input: an unreadable or invalid manifest, ``--gpu-query`` file, ``--cuda`` or ``--python``."""


class QueryError(InputError):
    """``nvidia-smi --query-gpu`` text that does not have the expected columns."""


class RulesError(InputError):
    """Invalid detect rules; ``problems`` lists every (key path, message), e.g.
    ``("detect.nvidia[1].min-cuda", "…")``."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        super().__init__("\n".join(f"{path}: {message}" for path, message in problems))


class Refused(SelectError):
    """The rules refuse this machine; ``message`` is the configured text, ``notes`` what was seen."""

    def __init__(self, message: str, notes: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.notes = tuple(notes)


class NoCell(SelectError):
    """A backend was chosen but the manifest has no usable cell for it (none, failed, skipped,
    or not for the requested Python)."""


# ---- facts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gpu:
    """One NVIDIA GPU (a row of ``nvidia-smi --query-gpu``).

    ``compute_capability`` is None when unknown. ``capability_reported`` says why: True with None
    means nvidia-smi printed ``[N/A]`` (a device without one, like the NPU of ARM hybrids, C14);
    False means nvidia-smi could not report it (an old driver rejected the ``compute_cap`` field,
    the query failed, or it printed another bracketed error such as ``[Unknown Error]``).
    ``memory``: ``"24576 MiB"`` as nvidia-smi prints it (or empty).
    """

    name: str
    memory: str = ""
    driver: str = ""
    compute_capability: float | None = None
    capability_reported: bool = True

    @property
    def capability(self) -> tuple[int, int] | None:
        """``(major, minor)`` of the compute capability (``(12, 0)`` for 12.0), or None."""
        if self.compute_capability is None:
            return None
        major, _, minor = repr(self.compute_capability).partition(".")
        return int(major), int(minor or 0)

    @property
    def memory_mib(self) -> int | None:
        """The memory in MiB (``"24576 MiB"`` -> 24576), or None when not reported."""
        match = re.fullmatch(r"(\d{1,9}) MiB", self.memory.strip())
        return int(match.group(1)) if match else None

    def describe(self) -> str:
        """``"NAME (compute capability 8.6)"``, ``[N/A]`` or ``not reported``."""
        if self.compute_capability is not None:
            return f"{self.name} (compute capability {self.compute_capability})"
        return f"{self.name} (compute capability {'[N/A]' if self.capability_reported else 'not reported'})"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "memory": self.memory, "driver": self.driver,
                "compute_capability": self.compute_capability, "capability_reported": self.capability_reported}  # fmt: skip


@dataclass(frozen=True)
class PciDevice:
    """A display controller (or an NVIDIA/AMD processing accelerator) on the PCI bus.

    ``vendor``: ``nvidia`` (0x10de), ``amd`` (0x1002), ``intel`` (0x8086) or the hex id;
    ``device``: the hex device id; ``driver``: the kernel driver bound to it (``nvidia``,
    ``nouveau``, ``amdgpu``; Windows: ``ok`` or the device's error code), None when none is.
    """

    slot: str
    vendor: str
    device: str
    driver: str | None = None
    name: str = ""
    revision: str = ""  # the hex revision ID (Windows' REV_xx), "" when not read

    def describe(self) -> str:
        """``NVIDIA GeForce RTX 4090 [10de:2684] at 0000:01:00.0 (driver nouveau)``."""
        ids = {name: hexid for hexid, name in _VENDORS.items()}
        label = f"{_VENDOR_NAMES.get(self.vendor, self.vendor)} {self.name}".strip()
        driver = f"driver {self.driver}" if self.driver else "no driver"
        return f"{label} [{ids.get(self.vendor, self.vendor)}:{self.device}] at {self.slot} ({driver})"

    def to_dict(self) -> dict[str, Any]:
        return {"slot": self.slot, "vendor": self.vendor, "device": self.device, "driver": self.driver,
                "name": self.name, "revision": self.revision}  # fmt: skip


@dataclass(frozen=True)
class Facts:
    """What was seen on this machine (or pretended).

    ``os``: linux | windows | macos; ``arch``: the host's arch and ``interpreter``: the running
    Python's (x86_64 | aarch64; they differ under Windows-on-ARM emulation, C15, and Rosetta);
    ``nvidia``: a usable NVIDIA GPU (``gpus`` lists them, ``cuda`` is the driver's CUDA version or
    None; an empty ``gpus`` only comes from pretending ``--cuda`` without ``--gpu-query``);
    ``amd_agents``: distinct gfx names of the AMD GPUs (rocminfo, else the amdgpu driver's KFD
    topology; on Windows the video controllers' PCI device IDs by :data:`AMD_GFX_DEVICES`);
    ``amd_unknown``: AMD GPUs whose gfx target is not known (a Windows device ID the table lacks),
    one description each; ``apple_silicon``; ``rosetta``: an x86_64 Python translated on an arm64 Mac;
    ``pci``: the GPUs on the PCI bus (sysfs, ``lspci``, Windows' video controllers), None when it
    could not be read; ``unknown``: the probes whose answer cannot be trusted (timed out, crashed,
    garbage), one line each: then nothing about the GPUs is known; ``notes``: what the probes
    saw, one line each.
    """

    os: str
    arch: str
    interpreter: str
    gpus: tuple[Gpu, ...] = ()
    cuda: str | None = None
    nvidia: bool = False
    amd_agents: tuple[str, ...] = ()
    apple_silicon: bool = False
    rosetta: bool = False
    pci: tuple[PciDevice, ...] | None = None
    unknown: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    amd_unknown: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The raw facts as JSON-ready data (``gpus`` and ``pci`` as lists of objects)."""
        return {"os": self.os, "arch": self.arch, "interpreter": self.interpreter,
                "gpus": [gpu.to_dict() for gpu in self.gpus], "cuda": self.cuda, "nvidia": self.nvidia,
                "amd_agents": list(self.amd_agents), "amd_unknown": list(self.amd_unknown),
                "apple_silicon": self.apple_silicon, "rosetta": self.rosetta,
                "pci": None if self.pci is None else [d.to_dict() for d in self.pci],
                "unknown": list(self.unknown), "notes": list(self.notes)}  # fmt: skip


# ---- pure parsers: text in, data out --------------------------------------------------------

_CUDA = re.compile(r"CUDA(?: UMD)? Version\s*:\s*(\d+(?:\.\d+)*)")
_NO_NVIDIA = (  # nvidia-smi messages meaning "no usable NVIDIA GPU" (C20)
    "No devices were found",  # exit 6
    "couldn't communicate with the NVIDIA driver",  # exit 9
    "Failed to initialize NVML",  # e.g. "Driver/library version mismatch", "Unknown Error"
    "NVML Shared Library Not Found",
    "Unable to determine the device handle",  # a GPU that fell off the bus
)
_REJECTED = re.compile(r'Field "([^"]+)" is not a valid field to query')
_LISTED = re.compile(r"GPU \d+: (.+?)(?: \(UUID: [^)]*\))?")
_GFX = re.compile(r"^\s*Name:\s+(gfx[0-9a-z]+)\s*$", re.MULTILINE)
_BRACKET = r"\[[^\]]*\]"  # nvidia-smi's [N/A], [Not Supported], [Unknown Error]
_COLUMN = {
    "name": re.compile(r"[^\[\]]*[A-Za-z][^\[\]]*|" + _BRACKET),
    "memory.total": re.compile(r"\d{1,9} MiB|" + _BRACKET),
    "driver_version": re.compile(r"\d{3,6}(?:\.\d{1,6}){1,3}|" + _BRACKET),
    "compute_cap": re.compile(r"\d{1,2}\.\d|" + _BRACKET),
}
_ARCH = {"amd64": "x86_64", "x86_64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
_VERSION = re.compile(r"\d{1,4}(?:\.\d{1,4}){0,3}")
_VENDORS = {"10de": "nvidia", "1002": "amd", "8086": "intel"}
_VENDOR_NAMES = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}


def parse_cuda_version(text: str) -> str | None:
    """The driver's CUDA version from ``nvidia-smi`` or ``nvidia-smi -q`` output, or None.

    Reads ``CUDA Version: 13.0``, ``CUDA UMD Version: 13.0`` (newer drivers, Windows) and the
    ``-q`` form ``CUDA Version : 13.0 [deprecated …]`` alike (C13); MIG tables do not matter.
    """
    match = _CUDA.search(text)
    return match.group(1) if match and _VERSION.fullmatch(match.group(1)) else None


def nvidia_smi_failure(returncode: int, stdout: str, stderr: str) -> str | None:
    """A note when ``nvidia-smi`` says there is no usable NVIDIA GPU, else None (C20).

    "No devices were found" (exit 6), "couldn't communicate with the NVIDIA driver" (exit 9),
    NVML initialisation errors, and a missing program mean no usable GPU: the no-GPU rule
    applies (unless the PCI bus shows an NVIDIA GPU: then its driver is broken). Any other
    failure is not an answer: see :func:`nvidia_smi_unknown`.
    """
    text = f"{stdout}\n{stderr}"
    for needle in _NO_NVIDIA:
        if needle.lower() in text.lower():
            line = next(line for line in text.splitlines() if needle.lower() in line.lower())
            return f"nvidia-smi: {line.strip()[:200]} (exit {returncode}): no usable NVIDIA GPU"
    if returncode == NOT_FOUND:
        return "nvidia-smi: not found"
    return None


def nvidia_smi_unknown(returncode: int, stdout: str, stderr: str) -> str | None:
    """A note when ``nvidia-smi``'s answer cannot be trusted, else None: it timed out, was
    killed by a signal, could not run, failed with an exit code and text that say nothing
    known (:func:`nvidia_smi_failure`), or printed something that is not nvidia-smi's banner
    (no ``NVIDIA-SMI`` and no ``Driver Version``). Unknown is not "no GPU" (issue 19)."""
    if nvidia_smi_failure(returncode, stdout, stderr) is not None:
        return None
    return _unknown("nvidia-smi", returncode, f"{stdout}\n{stderr}", ("NVIDIA-SMI", "Driver Version"))


def _unknown(program: str, returncode: int, text: str, looks_like: Sequence[str]) -> str | None:
    if returncode == TIMED_OUT:
        return f"{program}: timed out after {TIMEOUT:g} s"
    if returncode < 0:
        return f"{program}: killed by signal {-returncode}"
    if returncode == NOT_RUNNABLE:
        return f"{program}: cannot run it ({_first_line(text) or 'not executable'})"
    if returncode != 0:
        return f"{program}: failed with exit {returncode}: {_first_line(text) or 'no output'}"
    if not any(marker.lower() in text.lower() for marker in looks_like):
        return f"{program}: its output is not {program}'s ({_first_line(text) or 'empty'})"
    return None


def rejected_query_field(text: str) -> str | None:
    """The field an old driver rejects: ``Field "compute_cap" is not a valid field to query.``"""
    match = _REJECTED.search(text)
    return match.group(1) if match else None


def parse_gpu_query(text: str, fields: Sequence[str] = QUERY_FIELDS) -> list[Gpu]:
    """GPUs from ``nvidia-smi --query-gpu=<fields> --format=csv,noheader`` output (C12: every row).

    Each non-blank line must have one value per field, each shaped like its field: a name with a
    letter, ``24576 MiB``, a driver like ``575.51`` (major >= 100), a capability like ``8.6``; a
    bracketed value (``[N/A]``) fits any column. A first line naming the fields (a ``noheader``
    omitted, units like ``memory.total [MiB]`` allowed) is skipped. Capability ``[N/A]`` is unknown
    but reported (C14); another bracketed value or a missing ``compute_cap`` field is
    "not reported". Raises :class:`QueryError` ("line N: …") for anything else, so another column
    order is an error, never misread; more than 1,024 rows or a line over 1,000 characters too.
    """
    gpus: list[Gpu] = []
    lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) > 1024:
        raise QueryError(f"{len(lines)} lines; a machine has at most 1,024 GPUs")
    for index, (number, line) in enumerate(lines):
        if len(line) > 1000:
            raise QueryError(f"line {number}: longer than 1,000 characters")
        values = [value.strip() for value in line.split(",")]
        if index == 0 and _is_header(values, fields, number):
            continue
        gpus.append(_query_row(values, fields, number))
    return gpus


def _is_header(values: list[str], fields: Sequence[str], number: int) -> bool:
    names = [re.sub(r"\s*\[[^\]]*\]$", "", value).lower() for value in values]
    if not set(names) & set(_COLUMN):
        return False
    if names != list(fields):
        raise QueryError(f"line {number}: a header with the columns {', '.join(names)}; "
                         f"expected {', '.join(fields)} in this order")  # fmt: skip
    return True


def _query_row(values: list[str], fields: Sequence[str], number: int) -> Gpu:
    if len(values) != len(fields):
        found = f"{len(values)} column{'s' if len(values) != 1 else ''}"
        raise QueryError(f"line {number}: {found}, expected {len(fields)} ({', '.join(fields)})")
    row = dict(zip(fields, values))
    for column, (name, value) in enumerate(row.items(), 1):
        pattern = _COLUMN.get(name)
        if pattern is not None and not pattern.fullmatch(value):
            raise QueryError(f"line {number}: column {column} ({name}) is {value[:80]!r}, which is not a {name} value")
    cap = row.get("compute_cap")
    known = cap is not None and not cap.startswith("[")
    return Gpu(name=row.get("name", "NVIDIA GPU"), memory=row.get("memory.total", ""),
               driver=row.get("driver_version", ""), compute_capability=float(cap) if known and cap else None,
               capability_reported=known or cap == "[N/A]")  # fmt: skip


def parse_gpu_list(text: str) -> list[str]:
    """GPU names from ``nvidia-smi -L`` (``GPU 0: NAME (UUID: …)``); the indented ``MIG …
    Device N:`` lines under a GPU are slices of it, not extra GPUs."""
    return [
        m.group(1)[:200]
        for line in text.splitlines()
        if (m := _LISTED.fullmatch(line.strip())) and not line[:1].isspace()
    ]


def parse_rocminfo(text: str) -> tuple[str, ...]:
    """Distinct GPU agent names (``Name: gfx1100``) from ``rocminfo`` output, in order (C21).

    CPU agents and ISA names (``amdgcn-amd-amdhsa--gfx1100``) do not count; an agent listed twice
    is one entry.
    """
    return tuple(dict.fromkeys(_GFX.findall(text)))


def rocminfo_failure(returncode: int, stdout: str, stderr: str) -> str | None:
    """A note when ``rocminfo`` says there is no AMD GPU, else None: "ROCk module is NOT
    loaded" or a missing program (C21). Other failures are unknown (:func:`rocminfo_unknown`)."""
    text = f"{stdout}\n{stderr}"
    if "rock module is not loaded" in text.lower():
        return f"rocminfo: {_first_line(text, 'NOT loaded')}: no AMD GPU"
    if returncode == NOT_FOUND:
        return "rocminfo: not found"
    return None


def rocminfo_unknown(returncode: int, stdout: str, stderr: str) -> str | None:
    """A note when ``rocminfo``'s answer cannot be trusted (timeout, signal, an unknown
    failure, output without its ``HSA Agents`` table), else None. A permission error (the
    user is not in the ``render`` group) is one: the GPUs may be there."""
    if rocminfo_failure(returncode, stdout, stderr) is not None:
        return None
    note = _unknown("rocminfo", returncode, f"{stdout}\n{stderr}", ("HSA Agents",))
    if note and "permission" in f"{stdout}{stderr}".lower():
        note += " (is this user in the render and video groups?)"
    return note


def parse_lspci(text: str) -> tuple[PciDevice, ...]:
    """GPUs from ``lspci -vmm -nn -k`` (or ``-vmm -n -k``): records of ``Slot:``, ``Class:``,
    ``Vendor:``, ``Device:``, ``Driver:`` lines separated by blank lines; ids are the trailing
    ``[xxxx]`` of a value or the bare hex. Kept: display controllers (class 03xx) and NVIDIA/AMD
    processing accelerators (class 12xx)."""
    devices = []
    for record in re.split(r"\n\s*\n", text.strip()):
        fields = {}
        for line in record.splitlines():
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        ids = {key: _hex_id(fields.get(key, "")) for key in ("class", "vendor", "device")}
        name = re.sub(r"\s*\[[0-9a-fA-F]{4}\]$", "", fields.get("device", ""))
        device = _pci_device(fields.get("slot", "?"), ids["class"], ids["vendor"], ids["device"],
                             fields.get("driver") or None, name if name != ids["device"] else "")  # fmt: skip
        if device is not None:
            devices.append(device)
    return tuple(devices)


def _hex_id(value: str) -> str:
    match = re.search(r"\[([0-9a-fA-F]{4,6})\]$", value) or re.fullmatch(r"(?:0x)?([0-9a-fA-F]{4,6})", value)
    return match.group(1).lower() if match else ""


def _pci_device(
    slot: str, klass: str, vendor: str, device: str, driver: str | None, name: str = ""
) -> PciDevice | None:
    """A :class:`PciDevice` for a GPU-like function (class 03xx, or 12xx of NVIDIA/AMD), else None."""
    klass = re.sub("^0x", "", klass.lower())
    vendor = _VENDORS.get(vendor, vendor)
    if not (klass.startswith("03") or (klass.startswith("12") and vendor in ("nvidia", "amd"))):
        return None
    return PciDevice(slot=slot[:40], vendor=vendor[:10], device=device[:10], driver=(driver or None) and driver[:40],
                     name=name[:120])  # fmt: skip


def parse_video_controllers(text: str) -> tuple[PciDevice, ...]:
    """GPUs from Windows' ``Get-CimInstance Win32_VideoController | Select-Object Name,
    PNPDeviceID, ConfigManagerErrorCode, DriverVersion | ConvertTo-Json`` (one object or a list).

    The vendor comes from ``PNPDeviceID`` (``PCI\\VEN_10DE&DEV_2684&…&REV_A1``, the revision
    too); ``driver`` is the
    ``DriverVersion`` when ``ConfigManagerErrorCode`` is 0 and Windows did not fall back to the
    "Microsoft Basic Display Adapter" (no vendor driver), else None. Raises :class:`InputError`
    for text that is not that JSON."""
    data = loads_bounded(text, "Win32_VideoController")
    items = data if isinstance(data, list) else [data]
    devices = []
    for index, item in enumerate(items[:64]):
        if not isinstance(item, Mapping):
            raise InputError(f"Win32_VideoController[{index}]: not an object")
        pnp = str(item.get("PNPDeviceID") or "")
        match = re.search(r"VEN_([0-9A-Fa-f]{4})&DEV_([0-9A-Fa-f]{4})", pnp)
        if not match:
            continue
        name = str(item.get("Name") or "")[:120]
        working = item.get("ConfigManagerErrorCode") in (0, None) and "basic display" not in name.lower()
        driver = str(item.get("DriverVersion") or "ok")[:40] if working else None
        vendor = _VENDORS.get(match.group(1).lower(), match.group(1).lower())
        revision = re.search(r"REV_([0-9A-Fa-f]{2})", pnp)
        devices.append(PciDevice(slot=pnp[:60], vendor=vendor, device=match.group(2).lower(), driver=driver, name=name,
                                 revision=revision.group(1).lower() if revision else ""))  # fmt: skip
    return tuple(devices)


def parse_kfd_properties(text: str) -> dict[str, int]:
    """A KFD topology node's ``properties`` file (``/sys/class/kfd/kfd/topology/nodes/N/``):
    ``name value`` lines as integers; lines of another shape are skipped."""
    props = {}
    for line in text.splitlines()[:400]:
        match = re.fullmatch(r"\s*([a-z_0-9]{1,64})\s+(\d{1,20})\s*", line)
        if match:
            props[match.group(1)] = int(match.group(2))
    return props


def gfx_from_target_version(version: int) -> str | None:
    """The gfx name of the amdgpu driver's ``gfx_target_version`` (major*10000 + minor*100 +
    stepping, the stepping written in hex: 90010 -> gfx90a, 110001 -> gfx1101); None for 0 (a
    CPU node) or a value out of range."""
    if not 0 < version < 1_000_000:
        return None
    major, rest = divmod(version, 10000)
    minor, stepping = divmod(rest, 100)
    return f"gfx{major}{minor}{stepping:x}" if stepping < 16 and minor < 10 else None


def parse_sysctl_flag(text: str) -> bool | None:
    """``sysctl -n KEY`` output as a flag: "1" True, "0" False, anything else (an error) None."""
    return {"1": True, "0": False}.get(text.strip())


def normalize_arch(machine: str) -> str:
    """``AMD64``/``x64`` -> x86_64, ``ARM64``/``arm64`` -> aarch64; others lower-cased."""
    return _ARCH.get(machine.lower(), machine.lower())


def arches(machine: str, env: Mapping[str, str]) -> tuple[str, str]:
    """(host arch, interpreter arch) from ``platform.machine()`` and, on Windows, the environment.

    An x64 Python on an ARM64 Windows host sees ``AMD64``; the host shows in
    ``PROCESSOR_ARCHITEW6432`` or an ``ARMv8`` ``PROCESSOR_IDENTIFIER`` (C15).
    """
    interpreter = normalize_arch(machine)
    host = env.get("PROCESSOR_ARCHITEW6432") or ("ARM64" if "ARMv8" in env.get("PROCESSOR_IDENTIFIER", "") else "")
    return (normalize_arch(host) if host else interpreter), interpreter


def mac_arches(machine: str, translated: bool | None, arm64: bool | None) -> tuple[str, str, bool]:
    """(host arch, interpreter arch, rosetta) on macOS from ``platform.machine()`` and the flags
    ``sysctl.proc_translated`` / ``hw.optional.arm64`` (None: not readable). An x86_64 Python on
    arm64 hardware runs under Rosetta 2: the host is aarch64."""
    interpreter = normalize_arch(machine)
    if interpreter == "x86_64" and (translated or arm64):
        return "aarch64", interpreter, True
    return interpreter, interpreter, False


def version_key(text: str) -> tuple[int, ...]:
    """A dotted version as numbers without trailing zeros: "13" == "13.0", "12.10" > "12.9"."""
    parts = [int(part) for part in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _first_line(text: str, containing: str = "") -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and containing.lower() in line.lower()]
    return lines[0][:200] if lines else ""


# ---- bounded JSON ----------------------------------------------------------------------------


class _Oversized:
    """A number the manifest may not hold (too many digits, not finite): kept in place so that
    :func:`loads_bounded` can name its key path."""

    def __init__(self, text: str) -> None:
        self.text = text


def _bounded_int(text: str) -> int | _Oversized:
    return _Oversized(text) if len(text.lstrip("-")) > MAX_DIGITS else int(text)


def _bounded_float(text: str) -> float | _Oversized:
    value = float(text) if len(text) <= 64 else math.inf
    return value if math.isfinite(value) else _Oversized(text)


def loads_bounded(text: str, where: str, what: str = "JSON") -> Any:
    """``json.loads`` for input from elsewhere: at most :data:`MAX_DEPTH` levels of nesting,
    integers of at most :data:`MAX_DIGITS` digits, finite numbers only (no ``NaN``/``Infinity``,
    no ``1e999``). Raises :class:`InputError` naming ``where`` and the key path
    (``cells.x.layers[0]``) of the first offending value, or the JSON error's line and column."""
    data, path, problem = bounded_problem(text)
    if problem is not None:
        if path is None:  # a syntax error
            raise InputError(f"{where}: not {what} ({problem[len('not JSON (') :]}")
        raise InputError(f"{where}: {path or '(top level)'}: {problem}")
    return data


def bounded_problem(text: str) -> tuple[Any, str | None, str | None]:
    """``(value, key path, message)`` of ``text`` read as bounded JSON (see :func:`loads_bounded`):
    ``(value, None, None)`` when it is fine; else the value is None and the message says why
    (``nested deeper than …``, ``the number … is out of range``, ``not JSON (…)``), the key path
    where (None for a syntax error; ``""`` for nesting too deep for the parser itself, which
    raises ``RecursionError`` past about a thousand levels on every CPython 3.8-3.13). The
    caller bounds the size (:data:`MAX_BYTES`). For lockgen's own reader of JSON from elsewhere."""
    made: list[_Oversized] = []  # the walk that names a key path runs only when a bound was passed

    def bounded_int(number: str) -> Any:
        value = _bounded_int(number)
        if isinstance(value, _Oversized):
            made.append(value)
        return value

    def bounded_float(number: str) -> Any:
        value = _bounded_float(number)
        if isinstance(value, _Oversized):
            made.append(value)
        return value

    def constant(name: str) -> _Oversized:
        made.append(_Oversized(name))
        return made[-1]

    try:
        data = json.loads(text, parse_int=bounded_int, parse_float=bounded_float, parse_constant=constant)
    except RecursionError:
        return None, "", f"nested deeper than {MAX_DEPTH} levels"
    except ValueError as exc:
        return None, None, f"not JSON ({exc})"
    if not made and not _deeper(data, MAX_DEPTH):  # the common case: no key paths built (5,000-cell manifests)
        return data, None, None
    found = _out_of_bounds(data, "", 0)
    if found is None:
        return data, None, None
    path, value = found
    if value is None:
        return None, path, f"nested deeper than {MAX_DEPTH} levels"
    what = f"{len(value.text)} characters" if len(value.text) > 40 else repr(value.text)
    return None, path, f"the number {what} is out of range (integers up to {MAX_DIGITS} digits, finite numbers only)"


def _deeper(value: Any, room: int) -> bool:
    """Whether parsed JSON ``value`` holds a container nested deeper than ``room`` levels."""
    if isinstance(value, dict):
        return room <= 0 or any(_deeper(v, room - 1) for v in value.values())
    if isinstance(value, list):
        return room <= 0 or any(_deeper(v, room - 1) for v in value)
    return False


def _out_of_bounds(value: Any, path: str, depth: int) -> tuple[str, _Oversized | None] | None:
    """The key path (cut at 300 characters) of the first container nested deeper than
    :data:`MAX_DEPTH` (with None) or number out of range (with it); None when all is within."""
    if isinstance(value, _Oversized):
        return path[:300], value
    if isinstance(value, dict):
        items: Any = ((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    if depth == MAX_DEPTH:
        return path[:300], None
    for child_path, child in items:
        found = _out_of_bounds(child, child_path, depth + 1)
        if found is not None:
            return found
    return None


# ---- running the programs, reading sysfs ------------------------------------------------------

_OUTPUT_LIMIT = 4 * 1024 * 1024  # bytes of a probe's output that are read
_CIM = ("powershell", "-NoProfile", "-NonInteractive", "-Command",
        "Get-CimInstance Win32_VideoController | Select-Object Name,PNPDeviceID,ConfigManagerErrorCode,"
        "DriverVersion | ConvertTo-Json -Compress")  # fmt: skip
LSPCI = ("lspci", "-vmm", "-nn", "-k")


def run_program(argv: Sequence[str]) -> tuple[int, str, str]:
    """Run ``argv`` (no shell, ``TIMEOUT`` seconds): (returncode, stdout, stderr), decoded as UTF-8
    with replacement, each cut at 4 MiB. A missing program gives ``NOT_FOUND`` (127), one that
    cannot be executed ``NOT_RUNNABLE`` (126), a timeout ``TIMED_OUT`` (124), a signal the
    negative signal number."""
    import subprocess  # imported late: see the path repair at the top

    try:
        done = subprocess.run(list(argv), capture_output=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return TIMED_OUT, "", f"{argv[0]}: timed out after {TIMEOUT:g} s"
    except FileNotFoundError as exc:
        return NOT_FOUND, "", f"{argv[0]}: {exc.strerror or exc}"
    except (OSError, ValueError) as exc:  # not executable, a bad argument
        return NOT_RUNNABLE, "", f"{argv[0]}: {exc}"
    decode: Callable[[bytes], str] = lambda data: data[:_OUTPUT_LIMIT].decode("utf-8", "replace")  # noqa: E731
    return done.returncode, decode(done.stdout), decode(done.stderr)


def _read_text(path: str, limit: int = 65536) -> str | None:
    try:
        with open(path, "rb") as file:
            return file.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def read_sysfs_pci(sysfs: str = "/sys") -> tuple[PciDevice, ...] | None:
    """The GPUs of ``<sysfs>/bus/pci/devices/*`` (``class``, ``vendor``, ``device`` files and the
    ``driver`` link's name), or None when that folder cannot be read (no sysfs: not Linux, a
    container without it). At most 256 devices are read."""
    root = os.path.join(sysfs, "bus", "pci", "devices")
    try:
        slots = sorted(os.listdir(root))[:256]
    except OSError:
        return None
    devices = []
    for slot in slots:
        base = os.path.join(root, slot)
        ids = {
            key: _hex_id((_read_text(os.path.join(base, key), 64) or "").strip())
            for key in ("class", "vendor", "device")
        }
        try:
            driver: str | None = os.path.basename(os.readlink(os.path.join(base, "driver")))
        except OSError:
            driver = None
        device = _pci_device(slot, ids["class"], ids["vendor"], ids["device"], driver)
        if device is not None:
            devices.append(device)
    return tuple(devices)


def read_kfd(sysfs: str = "/sys") -> tuple[str, ...] | None:
    """The gfx names of the GPU nodes of the amdgpu driver's compute topology
    (``<sysfs>/class/kfd/kfd/topology/nodes/*/properties``, ``gfx_target_version``: what the ROCm
    runtime itself reads; no ROCm install needed), distinct, in node order; None without it."""
    root = os.path.join(sysfs, "class", "kfd", "kfd", "topology", "nodes")
    try:
        nodes = sorted(os.listdir(root), key=lambda n: (len(n), n))[:256]
    except OSError:
        return None
    names = []
    for node in nodes:
        props = parse_kfd_properties(_read_text(os.path.join(root, node, "properties")) or "")
        gfx = gfx_from_target_version(props.get("gfx_target_version", 0))
        if gfx is not None:
            names.append(gfx)
    return tuple(dict.fromkeys(names))


def amd_gfx(device: str, revision: str = "") -> str | None:
    """The gfx target of an AMD GPU by its PCI device ID and revision (hex, any case), from
    :data:`AMD_GFX_DEVICES` and :data:`AMD_REVISION_GFX`; None when the table does not have it."""
    device, revision = device.lower(), revision.lower()
    return AMD_REVISION_GFX.get(f"{device}:{revision}") or _AMD_DEVICE_GFX.get(device)


def amd_from_pci(devices: Sequence[PciDevice]) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    """(gfx targets, AMD GPUs of unknown target, notes) of the AMD GPUs with a working driver
    among ``devices`` (Windows' video controllers: Windows has no rocminfo and no KFD topology,
    and its HIP runtime ships with the ROCm wheels, so the device ID is what the selector has)."""
    agents: list[str] = []
    unknown: list[str] = []
    notes: list[str] = []
    for device in devices:
        if device.vendor != "amd" or not device.driver:
            continue
        gfx = amd_gfx(device.device, device.revision)
        label = device.name if device.name.upper().startswith("AMD") else f"AMD {device.name or 'GPU'}"
        said = f"{label} [1002:{device.device}]" + (f" rev {device.revision}" if device.revision else "")
        if gfx is None:
            unknown.append(said)
            notes.append(f"pci: {said}: not in AMD's device table, its gfx target is unknown")
        else:
            agents.append(gfx)
            notes.append(f"pci: {said}: {gfx} (AMD's device table)")
    return tuple(dict.fromkeys(agents)), tuple(unknown), notes


def gather(env: Mapping[str, str] | None = None, run: Runner | None = None, *, system: str | None = None,
           machine: str | None = None, probe_gpus: bool = True, sysfs: str | None = None) -> Facts:  # fmt: skip
    """This machine's :class:`Facts`. Never raises for missing programs, failures or timeouts:
    those become notes, or ``unknown`` entries when the answer cannot be trusted.

    ``env`` defaults to ``os.environ``, ``run`` to :func:`run_program`, ``system`` to
    ``sys.platform``, ``machine`` to ``platform.machine()``, ``sysfs`` to ``/sys`` (tests pass
    canned ones). Unless ``probe_gpus`` is False: ``nvidia-smi``; on Linux ``rocminfo`` (else the
    KFD topology) and the PCI bus (sysfs, else ``lspci -vmm -nn -k``); on Windows the video
    controllers (``powershell … Get-CimInstance Win32_VideoController``). On macOS
    ``sysctl -n sysctl.proc_translated`` / ``hw.optional.arm64`` for Rosetta.
    """
    env = os.environ if env is None else env
    run = run_program if run is None else run
    sysfs = SYSFS if sysfs is None else sysfs
    os_name = {"linux": "linux", "win32": "windows", "cygwin": "windows", "darwin": "macos"}.get(
        system or sys.platform, system or sys.platform
    )
    machine = machine or platform.machine()
    if os_name == "macos":
        host, interpreter, rosetta = mac_arches(machine, *_sysctl_flags(machine, run))
        notes = [f"sysctl: this Python is {interpreter} under Rosetta 2 on an arm64 Mac"] if rosetta else []
        return Facts(os=os_name, arch=host, interpreter=interpreter, apple_silicon=host == "aarch64",
                     rosetta=rosetta, notes=tuple(notes))  # fmt: skip
    host, interpreter = arches(machine, env if os_name == "windows" else {})
    facts = Facts(os=os_name, arch=host, interpreter=interpreter)
    if not probe_gpus:
        return facts
    nvidia, cuda, gpus, notes, unknown = probe_nvidia(run)
    agents: tuple[str, ...] = ()
    pci: tuple[PciDevice, ...] | None = None
    if os_name == "linux":
        agents, amd_notes, amd_doubt = probe_amd(run, sysfs)
        notes, unknown = notes + amd_notes, unknown + amd_doubt
        pci, pci_notes = _probe_pci_linux(run, sysfs)
        notes += pci_notes
    amd_unknown: tuple[str, ...] = ()
    if os_name == "windows":
        pci, pci_notes = _probe_pci_windows(run)
        agents, amd_unknown, amd_notes = amd_from_pci(pci or ())
        notes += pci_notes + amd_notes
    return replace(facts, nvidia=nvidia, cuda=cuda, gpus=gpus, amd_agents=agents, pci=pci, notes=tuple(notes),
                   unknown=tuple(unknown), amd_unknown=amd_unknown)  # fmt: skip


def _sysctl_flags(machine: str, run: Runner) -> tuple[bool | None, bool | None]:
    if normalize_arch(machine) != "x86_64":
        return None, None
    flags = []
    for key in ("sysctl.proc_translated", "hw.optional.arm64"):
        code, out, _ = run(["sysctl", "-n", key])
        flags.append(parse_sysctl_flag(out) if code == 0 else None)
    return flags[0], flags[1]


def probe_nvidia(run: Runner) -> tuple[bool, str | None, tuple[Gpu, ...], list[str], list[str]]:
    """(usable, driver CUDA version, GPUs, notes, unknown) from ``nvidia-smi`` and its GPU query.

    A banner that says "no GPU" means no usable GPU (C20); one that cannot be trusted
    (:func:`nvidia_smi_unknown`) goes to ``unknown``. A query that rejects a field is retried
    without it; a query that fails or prints something unexpected falls back to
    ``nvidia-smi -L`` names (or one placeholder GPU), all with capability "not reported", never
    an empty list.
    """
    code, out, err = run(["nvidia-smi"])
    doubt = nvidia_smi_unknown(code, out, err)
    if doubt:
        return False, None, (), [], [doubt]
    failure = nvidia_smi_failure(code, out, err)
    if failure:
        return False, None, (), [failure], []
    cuda = parse_cuda_version(out)
    notes = [] if cuda else ["nvidia-smi: no CUDA version in its banner"]
    gpus, query_notes = _query_gpus(run)
    return True, cuda, gpus, notes + query_notes, []


def _query_gpus(run: Runner) -> tuple[tuple[Gpu, ...], list[str]]:
    fields, notes = list(QUERY_FIELDS), []
    while True:
        code, out, err = run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"])
        rejected = rejected_query_field(f"{out}\n{err}")
        if code == 0 or rejected not in fields or len(fields) == 1:
            break
        fields.remove(rejected)
        notes.append(f"nvidia-smi: the query field {rejected} was rejected (an old driver); queried without it")
    try:
        gpus = tuple(parse_gpu_query(out, fields)) if code == 0 else ()
    except QueryError as exc:
        gpus, notes = (), [*notes, f"nvidia-smi: --query-gpu printed something unexpected ({exc})"]
    if code != 0:
        notes.append(f"nvidia-smi: --query-gpu failed (exit {code}): {_first_line(out + err) or 'no output'}")
    if gpus:
        return gpus, notes
    code, out, _ = run(["nvidia-smi", "-L"])
    names = (parse_gpu_list(out) if code == 0 else [])[:1024] or ["NVIDIA GPU"]
    notes.append(f"nvidia-smi: compute capability not reported for {', '.join(names)}")
    return tuple(Gpu(name, capability_reported=False) for name in names), notes


def probe_amd(run: Runner, sysfs: str | None = None) -> tuple[tuple[str, ...], list[str], list[str]]:
    """(distinct gfx agent names, notes, unknown) from ``rocminfo`` (C21); when it is not
    installed, from the amdgpu driver's KFD topology (:func:`read_kfd`; the ROCm builds of torch
    bring their own runtime, so rocminfo is often missing where ROCm works)."""
    code, out, err = run(["rocminfo"])
    doubt = rocminfo_unknown(code, out, err)
    if doubt:
        return (), [], [doubt]
    failure = rocminfo_failure(code, out, err)
    if failure:
        kfd = read_kfd(SYSFS if sysfs is None else sysfs) if code == NOT_FOUND else None
        if kfd:
            return kfd, [f"{failure}; kfd topology: {', '.join(kfd)}"], []
        return (), [failure], []
    agents = parse_rocminfo(out)[:64]
    return agents, [] if agents else ["rocminfo: no GPU agent (only CPU agents): no AMD GPU"], []


def _probe_pci_linux(run: Runner, sysfs: str) -> tuple[tuple[PciDevice, ...] | None, list[str]]:
    devices = read_sysfs_pci(sysfs)
    if devices is not None:
        return devices, []
    code, out, _ = run(list(LSPCI))
    if code != 0:
        return None, [f"pci: no sysfs and lspci {'not found' if code == NOT_FOUND else f'failed (exit {code})'}"]
    return parse_lspci(out), []


def _probe_pci_windows(run: Runner) -> tuple[tuple[PciDevice, ...] | None, list[str]]:
    code, out, err = run(list(_CIM))
    if code == 0 and not out.strip():  # no video controller at all
        return (), []
    if code != 0:
        return None, [
            f"pci: Get-CimInstance Win32_VideoController failed (exit {code}): {_first_line(err) or 'no output'}"
        ]
    try:
        return parse_video_controllers(out), []
    except InputError as exc:
        return None, [f"pci: {exc}"]


# ---- rules as data ---------------------------------------------------------------------------

_RULES_KEYS = ("apple", "amd", "amd-targets", "axes", "coverage", "no-gpu", "no-gpu-refuse", "nvidia-unknown-cuda",
               "nvidia-too-old", "nvidia")  # fmt: skip
_NVIDIA_KEYS = ("match", "min-cuda", "backend", "refuse-compute-capability", "refuse")
_AXIS_KEYS = ("value", "match", "compute-capability", "gpu-name", "memory", "gfx")
_COVERAGE_KEYS = ("drop", "min-compute-capability")
#: Why ``detect.coverage.optional`` (a list of packages whose missing code never blocks a cell) is
#: gone: it widened what the wheels carry by hand (docs/select.md, "No hand-typed exemptions").
OPTIONAL_REMOVED = ("is not supported: a config may only narrow the wheels' code. A package the app runs without "
                    "belongs in an optional layer (optional = [\"NAME==VERSION\"] in the cell's settings): its kernels then "
                    "decide only whether that layer is installed on a machine; code that cannot load in the cell (linked "
                    "against another CUDA runtime) is not counted anyway")  # fmt: skip
_AXES = {"os": OSES, "arch": ARCHES}
_LABEL = re.compile(r"[a-z0-9][a-z0-9._]{0,63}")
_AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_CODE = re.compile(r"(sm|compute)_(\d{2,3})([af]?)|gfx[0-9a-f]{3,5}(?:-[0-9]+)*(?:-generic)?(?::[a-z]+[+-])*")
_GFX_NAME = re.compile(r"gfx[0-9a-f]{3,5}")


@dataclass(frozen=True)
class NvidiaRule:
    """One ``[[detect.nvidia]]`` rule: ``backend`` when the machine fits ``match`` (axis -> allowed
    values; a missing axis fits anything) and the driver's CUDA reaches ``min_cuda``; refused with
    ``refuse`` when a GPU's compute capability is at or above ``refuse_compute_capability``."""

    backend: str
    min_cuda: str
    match: dict[str, tuple[str, ...]] = field(default_factory=dict)
    refuse_compute_capability: float | None = None
    refuse: str | None = None

    def fits(self, os_name: str, arch: str) -> bool:
        """Whether (os, host arch) fits ``match``."""
        facts = {"os": os_name, "arch": arch}
        return all(facts[axis] in values for axis, values in self.match.items())

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"backend": self.backend, "min-cuda": self.min_cuda}
        if self.match:
            data["match"] = {axis: list(values) for axis, values in sorted(self.match.items())}
        if self.refuse_compute_capability is not None:
            data["refuse-compute-capability"] = self.refuse_compute_capability
        if self.refuse is not None:
            data["refuse"] = self.refuse
        return data


@dataclass(frozen=True)
class AxisRule:
    """One ``[[detect.axes.<axis>]]`` rule: the extra matrix axis takes ``value`` when the machine
    fits ``match`` (os, arch, backend) and every GPU fits the GPU conditions that are given:
    ``capability`` (min, max) inclusive as ``(major, minor)``, ``names`` (case-insensitive glob
    patterns, one must fit each NVIDIA GPU's name), ``memory`` (min, max) MiB, ``gfx`` (AMD gfx
    names). A GPU condition never fits a machine without such a GPU, nor a GPU whose value was
    not reported. Rules are tried in order; the first that fits wins."""

    value: str
    match: dict[str, tuple[str, ...]] = field(default_factory=dict)
    capability: tuple[tuple[int, int] | None, tuple[int, int] | None] | None = None
    names: tuple[str, ...] = ()
    memory: tuple[int | None, int | None] | None = None
    gfx: tuple[str, ...] = ()

    def fits(self, facts: Facts, backend: str) -> bool:
        where = {"os": facts.os, "arch": facts.arch, "backend": backend}
        if not all(where[axis] in values for axis, values in self.match.items()):
            return False
        gpus = [gpu for gpu in facts.gpus if gpu.compute_capability is not None or not gpu.capability_reported]
        if (self.capability or self.names or self.memory) and not gpus:
            return False
        for gpu in gpus:
            if self.capability and not _in_range(gpu.capability, self.capability):
                return False
            if self.names and not any(fnmatch.fnmatchcase(gpu.name.lower(), p.lower()) for p in self.names):
                return False
            if self.memory and not _in_range(gpu.memory_mib, self.memory):
                return False
        return not self.gfx or (bool(facts.amd_agents) and all(agent in self.gfx for agent in facts.amd_agents))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"value": self.value}
        if self.match:
            data["match"] = {axis: list(values) for axis, values in sorted(self.match.items())}
        if self.capability:
            data["compute-capability"] = {key: f"{bound[0]}.{bound[1]}" for key, bound in
                                          zip(("min", "max"), self.capability) if bound is not None}  # fmt: skip
        if self.names:
            data["gpu-name"] = list(self.names)
        if self.memory:
            data["memory"] = {key: bound for key, bound in zip(("min", "max"), self.memory) if bound is not None}
        if self.gfx:
            data["gfx"] = list(self.gfx)
        return data


def _in_range(value: Any, bounds: tuple[Any, Any]) -> bool:
    low, high = bounds
    return value is not None and (low is None or value >= low) and (high is None or value <= high)


@dataclass(frozen=True)
class DetectRules:
    """The ``[detect]`` table: which backend a machine gets (the seed's ``_cuda_flavor`` and
    ``build_spec`` as data). ``no_gpu`` is one backend or one per OS; messages may hold ``{cuda}``.
    ``axes``: extra matrix axis -> its routing rules; ``amd_targets``: gfx names that narrow
    :data:`ROCM_GFX` for the ``amd`` backend; ``drop`` and ``min_capability``: code the
    selector ignores in the wheels' coverage (a config may only narrow what the wheels carry)."""

    nvidia: tuple[NvidiaRule, ...] = ()
    nvidia_unknown_cuda: str | None = None
    nvidia_too_old: str = DEFAULT_TOO_OLD
    apple: str | None = None
    amd: str | None = None
    amd_targets: tuple[str, ...] = ()
    no_gpu: str | dict[str, str] | None = None
    no_gpu_refuse: str = DEFAULT_NO_GPU
    axes: dict[str, tuple[AxisRule, ...]] = field(default_factory=dict)
    drop: tuple[str, ...] = ()
    min_capability: tuple[int, int] | None = None

    @classmethod
    def from_dict(cls, data: Any, path: str = "detect") -> DetectRules:
        """Validate the kebab-case table (as TOML or the manifest's ``"detect"`` holds it).

        Raises :class:`RulesError` with every problem and its key path
        (``detect.nvidia[1].min-cuda``): unknown keys, wrong types, versions that are not
        strings like "12.6", match axes other than os/arch (and backend for axis rules) or
        values outside linux|windows|macos / x86_64|aarch64, ``refuse`` without
        ``refuse-compute-capability``, capabilities outside (0, 100), an axis rule without a
        value, patterns of code that no wheel can carry.
        """
        problems: Problems = []
        if not isinstance(data, Mapping):
            raise RulesError([(path, "must be a table")])
        _unknown_keys(data, _RULES_KEYS, path, problems)
        texts = ("apple", "amd", "nvidia-unknown-cuda", "nvidia-too-old", "no-gpu-refuse")
        text = {key: _text(data, key, path, problems) for key in texts}
        coverage = data.get("coverage", {})
        if not isinstance(coverage, Mapping):
            problems.append(
                (f"{path}.coverage", 'must be a table like { drop = ["sm_50"], min-compute-capability = "7.5" }')
            )
            coverage = {}
        if "optional" in coverage:
            problems.append((f"{path}.coverage.optional", OPTIONAL_REMOVED))
        _unknown_keys({k: v for k, v in coverage.items() if k != "optional"}, _COVERAGE_KEYS, f"{path}.coverage",
                      problems)  # fmt: skip
        rules = cls(nvidia=_nvidia_rules(data.get("nvidia", []), f"{path}.nvidia", problems),
                    nvidia_unknown_cuda=text["nvidia-unknown-cuda"], apple=text["apple"], amd=text["amd"],
                    amd_targets=_names(data.get("amd-targets", []), f"{path}.amd-targets", _GFX_NAME, problems),
                    nvidia_too_old=text["nvidia-too-old"] or DEFAULT_TOO_OLD,
                    no_gpu=_no_gpu(data.get("no-gpu"), f"{path}.no-gpu", problems),
                    no_gpu_refuse=text["no-gpu-refuse"] or DEFAULT_NO_GPU,
                    axes=_axes(data.get("axes", {}), f"{path}.axes", problems),
                    drop=_names(coverage.get("drop", []), f"{path}.coverage.drop", _CODE, problems),
                    min_capability=_cap_pair(coverage.get("min-compute-capability"),
                                             f"{path}.coverage.min-compute-capability", problems))  # fmt: skip
        if problems:
            raise RulesError(problems)
        return rules

    def to_dict(self) -> dict[str, Any]:
        """The normalized table: sorted lists as match values, floats as capabilities, the
        default messages spelled out; ``from_dict(to_dict())`` gives an equal object."""
        data: dict[str, Any] = {}
        for key, value in (("apple", self.apple), ("amd", self.amd), ("nvidia-unknown-cuda", self.nvidia_unknown_cuda)):
            if value is not None:
                data[key] = value
        if self.amd_targets:
            data["amd-targets"] = list(self.amd_targets)
        if self.no_gpu is not None:
            data["no-gpu"] = self.no_gpu if isinstance(self.no_gpu, str) else dict(sorted(self.no_gpu.items()))
        data["no-gpu-refuse"] = self.no_gpu_refuse
        data["nvidia-too-old"] = self.nvidia_too_old
        data["nvidia"] = [rule.to_dict() for rule in self.nvidia]
        if self.axes:
            data["axes"] = {axis: [rule.to_dict() for rule in rules] for axis, rules in sorted(self.axes.items())}
        if self.drop or self.min_capability:
            coverage: dict[str, Any] = {}
            if self.drop:
                coverage["drop"] = list(self.drop)
            if self.min_capability:
                coverage["min-compute-capability"] = "{}.{}".format(*self.min_capability)
            data["coverage"] = coverage
        return data

    def no_gpu_backend(self, os_name: str) -> str | None:
        """The ``no-gpu`` backend for ``os_name`` (one for all, or the per-OS table's entry)."""
        return self.no_gpu if isinstance(self.no_gpu, str) or self.no_gpu is None else self.no_gpu.get(os_name)

    def backends(self) -> list[tuple[str, str, dict[str, tuple[str, ...]]]]:
        """Every backend the rules can hand out: (key path, backend, match) with the match's
        os/arch limits (``{}``: any machine)."""
        found = [(f"nvidia[{i}].backend", rule.backend, rule.match) for i, rule in enumerate(self.nvidia)]
        for key, value in (("apple", self.apple), ("amd", self.amd), ("nvidia-unknown-cuda", self.nvidia_unknown_cuda)):
            if value is not None:
                found.append((key, value, {"os": ("macos",), "arch": ("aarch64",)} if key == "apple" else {}))
        if isinstance(self.no_gpu, str):
            found.append(("no-gpu", self.no_gpu, {}))
        elif self.no_gpu:
            found += [(f"no-gpu.{os_name}", backend, {"os": (os_name,)}) for os_name, backend in self.no_gpu.items()]
        return found


def _unknown_keys(data: Mapping[Any, Any], known: Sequence[str], path: str, problems: Problems) -> None:
    for key in data:
        if key not in known:
            problems.append((f"{path}.{str(key)[:60]}", f"unknown key; expected one of: {', '.join(sorted(known))}"))


def _text(data: Mapping[Any, Any], key: str, path: str, problems: Problems, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 2000:
        what = (
            "missing" if value is None else f"must be a non-empty string (at most 2,000 characters), not {_show(value)}"
        )
        problems.append((f"{path}.{key}", what))
        return None
    return value


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _names(data: Any, path: str, pattern: re.Pattern[str], problems: Problems) -> tuple[str, ...]:
    if not isinstance(data, list) or not all(isinstance(item, str) for item in data) or len(data) > 256:
        problems.append((path, f"must be a list of strings, not {_show(data)}"))
        return ()
    bad = [item for item in data if not pattern.fullmatch(item)]
    if bad:
        problems.append(
            (
                path,
                f"{_show(bad[0])} is not a name like {'gfx1100' if pattern is _GFX_NAME else 'sm_86, compute_90 or gfx1100'}",
            )
        )
    return tuple(dict.fromkeys(data))


def _nvidia_rules(data: Any, path: str, problems: Problems) -> tuple[NvidiaRule, ...]:
    if not isinstance(data, list):
        problems.append((path, "must be a list of tables ([[detect.nvidia]])"))
        return ()
    rules = (_nvidia_rule(item, f"{path}[{index}]", problems) for index, item in enumerate(data[:256]))
    return tuple(rule for rule in rules if rule is not None)


def _nvidia_rule(data: Any, path: str, problems: Problems) -> NvidiaRule | None:
    if not isinstance(data, Mapping):
        problems.append((path, "must be a table"))
        return None
    before = len(problems)
    _unknown_keys(data, _NVIDIA_KEYS, path, problems)
    backend = _label(data, "backend", path, problems)
    min_cuda = _version_text(data.get("min-cuda"), f"{path}.min-cuda", problems)
    match = _match(data.get("match", {}), f"{path}.match", problems)
    capability = _capability(data.get("refuse-compute-capability"), f"{path}.refuse-compute-capability", problems)
    refuse = _text(data, "refuse", path, problems)
    if refuse is not None and capability is None:
        problems.append((f"{path}.refuse", "has no effect without refuse-compute-capability"))
    if len(problems) > before or backend is None or min_cuda is None:
        return None
    return NvidiaRule(backend=backend, min_cuda=min_cuda, match=match,
                      refuse_compute_capability=capability, refuse=refuse)  # fmt: skip


def _label(data: Mapping[Any, Any], key: str, path: str, problems: Problems) -> str | None:
    value = _text(data, key, path, problems, required=True)
    if value is not None and not _LABEL.fullmatch(value):
        problems.append(
            (f"{path}.{key}", f"{_show(value)} is not a label like cu130 (lower-case letters, digits, '.', '_')")
        )
        return None
    return value


def _axes(data: Any, path: str, problems: Problems) -> dict[str, tuple[AxisRule, ...]]:
    if not isinstance(data, Mapping):
        problems.append((path, "must be a table of axis name -> list of rules ([[detect.axes.<axis>]])"))
        return {}
    axes = {}
    for axis, items in data.items():
        where = f"{path}.{str(axis)[:60]}"
        if not isinstance(axis, str) or not _AXIS_NAME.fullmatch(axis) or axis in ("os", "arch", "backend", "python"):
            problems.append((where, "must name an extra matrix axis (not os, arch, backend or python)"))
            continue
        if not isinstance(items, list) or not items:
            problems.append((where, "must be a non-empty list of tables"))
            continue
        rules = [_axis_rule(item, f"{where}[{index}]", problems) for index, item in enumerate(items[:256])]
        axes[axis] = tuple(rule for rule in rules if rule is not None)
    return axes


def _axis_rule(data: Any, path: str, problems: Problems) -> AxisRule | None:
    if not isinstance(data, Mapping):
        problems.append((path, "must be a table"))
        return None
    before = len(problems)
    _unknown_keys(data, _AXIS_KEYS, path, problems)
    value = _label(data, "value", path, problems)
    match = _match(data.get("match", {}), f"{path}.match", problems, backend=True)
    capability = None
    if "compute-capability" in data:
        low, high = _bounds(data["compute-capability"], f"{path}.compute-capability", problems, _cap_pair)
        capability = (low, high)
    memory = None
    if "memory" in data:
        memory = _bounds(data["memory"], f"{path}.memory", problems, _mib)
    names = _names(data.get("gpu-name", []), f"{path}.gpu-name", re.compile(r"[^\x00-\x1f]{1,200}"), problems)
    gfx = _names(data.get("gfx", []), f"{path}.gfx", _GFX_NAME, problems)
    if len(problems) > before or value is None:
        return None
    return AxisRule(value=value, match=match, capability=capability, names=names, memory=memory, gfx=gfx)


def _bounds(data: Any, path: str, problems: Problems, one: Callable[[Any, str, Problems], Any]) -> tuple[Any, Any]:
    if not isinstance(data, Mapping) or not data:
        problems.append((path, 'must be a table like { min = "8.0", max = "9.0" } (either bound may be left out)'))
        return None, None
    _unknown_keys(data, ("min", "max"), path, problems)
    low, high = one(data.get("min"), f"{path}.min", problems), one(data.get("max"), f"{path}.max", problems)
    if low is not None and high is not None and low > high:
        problems.append((path, "min is above max: no machine fits"))
    return low, high


def _cap_pair(value: Any, path: str, problems: Problems) -> tuple[int, int] | None:
    """A compute capability written "8.6" (or a number 8.6) as (major, minor); None if absent."""
    if value is None:
        return None
    text = (
        repr(float(value))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1000
        else value
    )
    if not isinstance(text, str) or not re.fullmatch(r"\d{1,2}\.\d", text):
        problems.append((path, f'must be a compute capability like "8.6", not {_show(value)}'))
        return None
    major, minor = text.split(".")
    return int(major), int(minor)


def _mib(value: Any, path: str, problems: Problems) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10**9:
        problems.append((path, f"must be a whole number of MiB (as nvidia-smi reports memory), not {_show(value)}"))
        return None
    return value


def _version_text(value: Any, path: str, problems: Problems) -> str | None:
    if value is None:
        problems.append((path, 'missing; write the lowest driver CUDA version as a string, like "12.6"'))
    elif not isinstance(value, str):
        problems.append(
            (path, f'must be a string like "12.6", not {_show(value)} (a number loses zeros: 12.10 reads 12.1)')
        )
    elif not _VERSION.fullmatch(value):
        problems.append((path, f'{_show(value)} is not a version like "12.6"'))
    else:
        return value
    return None


def _match(data: Any, path: str, problems: Problems, backend: bool = False) -> dict[str, tuple[str, ...]]:
    if not isinstance(data, Mapping):
        problems.append((path, 'must be a table like { os = "windows", arch = "aarch64" }'))
        return {}
    axes: dict[str, Any] = {**_AXES, "backend": None} if backend else dict(_AXES)
    _unknown_keys(data, tuple(axes), path, problems)
    match = {}
    for axis, allowed in axes.items():
        if axis not in data:
            continue
        values = [data[axis]] if isinstance(data[axis], str) else data[axis]
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            problems.append(
                (f"{path}.{axis}", f"must be a string or a non-empty list of strings, not {_show(data[axis])}")
            )
            continue
        for value in values:
            if (allowed is not None and value not in allowed) or (allowed is None and not _LABEL.fullmatch(value)):
                problems.append(
                    (f"{path}.{axis}", f"{_show(value)} is not one of: {', '.join(allowed or ('a backend label',))}")
                )
        match[axis] = tuple(sorted(set(values)))
    return match


def _capability(value: Any, path: str, problems: Problems) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 100:
        problems.append((path, f"must be a compute capability like 12.0, not {_show(value)}"))
        return None
    return float(value)


def _no_gpu(value: Any, path: str, problems: Problems) -> str | dict[str, str] | None:
    if value is None or (isinstance(value, str) and _LABEL.fullmatch(value)):
        return value
    if not isinstance(value, Mapping):
        problems.append(
            (path, f'must be a backend ("cpu") or a table per os ({{ linux = "cpu" }}), not {_show(value)}')
        )
        return None
    _unknown_keys(value, OSES, path, problems)
    table = {key: backend for key in OSES if (backend := _label(value, key, path, problems) if key in value else None)}
    if not table and not any(key not in OSES for key in value):
        problems.append((path, "the table names no os (linux, windows, macos)"))
    return table


def rules_problems(rules: DetectRules, cells: Sequence[Mapping[str, Any]], path: str = "detect") -> Problems:
    """Problems of ``rules`` against a matrix (issue 19 item 7), each with its key path: a
    backend no cell has for the os/arch the rule can match; an NVIDIA rule no machine can reach
    (an earlier rule with the same backend takes every machine it fits); an axis rule naming an
    axis the matrix has not, a value no cell of the axis has, or coming after a rule that takes
    every machine it fits. ``cells``: objects with ``os``, ``arch``, ``backend`` and optional
    ``axes`` (``{"profile": "legacy"}``), as the manifest's entries have them."""
    problems: Problems = []
    have = {(c.get("os"), c.get("arch"), c.get("backend")) for c in cells}
    for key, backend, match in rules.backends():
        oses, arches_ = match.get("os", OSES), match.get("arch", ARCHES)
        if not any((o, a, backend) in have for o in oses for a in arches_):
            scope = f" for {'/'.join(oses)} {'/'.join(arches_)}" if match else ""
            problems.append((f"{path}.{key}", f"no cell of the matrix has backend {backend!r}{scope}; "
                                              f"the matrix has {', '.join(sorted({str(c[2]) for c in have})) or 'no cells'}"))  # fmt: skip
    for j, later in enumerate(rules.nvidia):
        for i, earlier in enumerate(rules.nvidia[:j]):
            wider = all(
                set(later.match.get(axis, _AXES[axis])) <= set(earlier.match.get(axis, _AXES[axis])) for axis in _AXES
            )
            if (
                wider
                and earlier.backend == later.backend
                and version_key(earlier.min_cuda) <= version_key(later.min_cuda)
            ):
                problems.append((f"{path}.nvidia[{j}]", f"no machine can reach it: detect.nvidia[{i}] gives the same "
                                                        f"backend {later.backend} to every machine it fits"))  # fmt: skip
                break
    for axis, axis_rules in rules.axes.items():
        values = {str((c.get("axes") or {}).get(axis)) for c in cells if axis in (c.get("axes") or {})}
        if not values:
            problems.append((f"{path}.axes.{axis}", f"the matrix has no extra axis {axis!r}"))
            continue
        for index, rule in enumerate(axis_rules):
            where = f"{path}.axes.{axis}[{index}]"
            if rule.value not in values:
                problems.append(
                    (f"{where}.value", f"{rule.value!r} is not a value of the axis {axis}: {', '.join(sorted(values))}")
                )
            catch_all = next((k for k, r in enumerate(axis_rules[:index]) if _takes_all(r, rule)), None)
            if catch_all is not None:
                problems.append(
                    (where, f"no machine can reach it: {path}.axes.{axis}[{catch_all}] takes every machine it fits")
                )
    return problems


def _takes_all(earlier: AxisRule, later: AxisRule) -> bool:
    """Whether every machine that fits ``later`` fits ``earlier`` first (earlier has no GPU
    condition and a match at least as wide)."""
    if earlier.capability or earlier.names or earlier.memory or earlier.gfx:
        return False
    return all(
        set(later.match.get(axis, ())) <= set(values) and axis in later.match for axis, values in earlier.match.items()
    )


# ---- coverage: the GPU code the locked wheels carry -------------------------------------------

_SASS = re.compile(r"sm_(\d{2,3})([af]?)")
_PTX = re.compile(r"compute_(\d{2,3})([af]?)")
_GFX_TARGET = re.compile(r"(gfx[0-9a-f]{3,5}|gfx[0-9]+(?:-[0-9]+)?-generic)((?::[a-z]+[+-])*)")


_RUNTIME_LIB = re.compile(r"(?:libcudart|libamdhip64)\.so\.\d{1,3}|(?:cudart64|amdhip64)_\d{1,4}\.dll")


def _code_key(code: str) -> tuple[int, str]:
    """Code names in NVIDIA's order (``sm_75`` < ``sm_120``), gfx names by length then name."""
    match = re.search(r"_(\d+)", code)
    return (int(match.group(1)), code) if match else (len(code), code)


@dataclass(frozen=True)
class LinkedCode:
    """The code of a wheel's shared objects linked against the same GPU runtime libraries
    (``needs``, which the wheel does not ship: ``libcudart.so.12``; empty: none)."""

    needs: tuple[str, ...]
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    gfx: tuple[str, ...] = ()


@dataclass(frozen=True)
class WheelCode:
    """The GPU code one locked wheel carries, as lockgen read it from the wheel's shared objects:
    ``sass`` (``sm_86``, ``sm_90a``, ``sm_100f``), ``ptx`` (``compute_90``), ``gfx`` (ROCm code
    objects: ``gfx942``, ``gfx90a:xnack-``, ``gfx11-generic``); ``linked``: the same code by the
    GPU runtimes its objects are linked against (empty: not recorded, all of it counts)."""

    name: str
    version: str
    sha256: str
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    gfx: tuple[str, ...] = ()
    linked: tuple[LinkedCode, ...] = ()

    def loadable(self, runtimes: Sequence[str]) -> tuple[WheelCode, list[str]]:
        """(this wheel with only the code that can load where ``runtimes`` are installed, the
        runtimes the rest of its code is linked against and that are missing)."""
        if not self.linked:
            return self, []
        fits = [g for g in self.linked if all(n in runtimes for n in g.needs)]
        missing = sorted({n for g in self.linked for n in g.needs if n not in runtimes})

        def pick(key: str) -> tuple[str, ...]:
            return tuple(sorted({c for g in fits for c in getattr(g, key)}, key=_code_key))

        return replace(self, sass=pick("sass"), ptx=pick("ptx"), gfx=pick("gfx"), linked=tuple(fits)), missing

    def describe(self) -> str:
        code = ", ".join((*self.sass, *self.ptx, *self.gfx)) or "no GPU code"
        return f"{self.name} {self.version} has {code}"


@dataclass(frozen=True)
class LayerCoverage:
    """One layer's part of a ``coverage`` object: its ``name`` and ``kind`` (``optional`` or
    ``no-deps``), its GPU wheels and the ones lockgen could not read."""

    name: str
    kind: str
    wheels: tuple[WheelCode, ...] = ()
    unread: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class Coverage:
    """A cell entry's ``coverage``: the main layer's wheels with GPU code (``wheels``), the GPU
    wheels lockgen could not read (``unread``: (name, version, reason)), the GPU runtime
    libraries the cell installs (``runtimes``) and the optional and no-deps layers' parts."""

    wheels: tuple[WheelCode, ...] = ()
    unread: tuple[tuple[str, str, str], ...] = ()
    runtimes: tuple[str, ...] = ()
    layers: tuple[LayerCoverage, ...] = ()

    def layer(self, name: str) -> LayerCoverage | None:
        return next((layer for layer in self.layers if layer.name == name), None)

    @classmethod
    def from_dict(cls, data: Any, path: str) -> Coverage:
        """Parse a manifest entry's ``coverage`` object; :class:`InputError` naming the key path."""
        if not isinstance(data, Mapping):
            raise InputError(f"{path}: must be an object with wheels, unread, runtimes and layers")
        wheels, unread = _part(data, path)
        runtimes = tuple(_string(v, f"{path}.runtimes") for v in _list(data.get("runtimes", []), f"{path}.runtimes"))
        bad = [name for name in runtimes if not _RUNTIME_LIB.fullmatch(name)]
        if bad:
            raise InputError(f"{path}.runtimes: {bad[0][:40]!r} is not a GPU runtime library name")
        layers = []
        for index, item in enumerate(_list(data.get("layers", []), f"{path}.layers")):
            where = f"{path}.layers[{index}]"
            if not isinstance(item, Mapping):
                raise InputError(f"{where}: must be an object")
            name, kind = _string(item.get("name"), f"{where}.name"), _string(item.get("kind"), f"{where}.kind")
            if kind not in ("optional", "no-deps"):
                raise InputError(f"{where}.kind: {_show(kind)} is not optional or no-deps")
            layers.append(LayerCoverage(name, kind, *_part(item, where)))
        return cls(wheels=wheels, unread=unread, runtimes=runtimes, layers=tuple(layers))


_CODE_PATTERNS = {"sass": _SASS, "ptx": _PTX, "gfx": _GFX_TARGET, "needs": _RUNTIME_LIB}


def _codes(
    item: Mapping[str, Any], where: str, keys: Sequence[str] = ("sass", "ptx", "gfx")
) -> dict[str, tuple[str, ...]]:
    """The code lists ``keys`` of a wheel record (or of one of its ``linked`` groups), checked."""
    lists = {
        key: tuple(_string(v, f"{where}.{key}") for v in _list(item.get(key, []), f"{where}.{key}")) for key in keys
    }
    for key, names in lists.items():
        bad = [code for code in names if not _CODE_PATTERNS[key].fullmatch(code)]
        if bad:
            what = "GPU runtime library" if key == "needs" else f"{key} code"
            raise InputError(f"{where}.{key}: {bad[0][:40]!r} is not a {what} name")
    return lists


def _part(data: Mapping[str, Any], path: str) -> tuple[tuple[WheelCode, ...], tuple[tuple[str, str, str], ...]]:
    """The ``wheels`` and ``unread`` of a coverage object or of one of its layers."""
    wheels = []
    for index, item in enumerate(_list(data.get("wheels", []), f"{path}.wheels")):
        where = f"{path}.wheels[{index}]"
        if not isinstance(item, Mapping):
            raise InputError(f"{where}: must be an object")
        texts = {key: _string(item.get(key), f"{where}.{key}") for key in ("name", "version", "sha256")}
        lists = _codes(item, where)
        groups = []
        for number, group in enumerate(_list(item.get("linked", []), f"{where}.linked")):
            if not isinstance(group, Mapping):
                raise InputError(f"{where}.linked[{number}]: must be an object")
            found = _codes(group, f"{where}.linked[{number}]", ("needs", "sass", "ptx", "gfx"))
            groups.append(LinkedCode(found["needs"], found["sass"], found["ptx"], found["gfx"]))
        wheels.append(WheelCode(name=texts["name"], version=texts["version"], sha256=texts["sha256"], **lists,
                                linked=tuple(groups)))  # fmt: skip
    unread = []
    for index, item in enumerate(_list(data.get("unread", []), f"{path}.unread")):
        where = f"{path}.unread[{index}]"
        if not isinstance(item, Mapping):
            raise InputError(f"{where}: must be an object")
        unread.append(tuple(_string(item.get(key), f"{where}.{key}") for key in ("name", "version", "reason")))
    return tuple(wheels), tuple(unread)  # type: ignore[arg-type]


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list) or len(value) > 4096:
        raise InputError(f"{path}: must be a list")
    return value


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str) or len(value) > 2000:
        raise InputError(f"{path}: must be a string")
    return value


def _arch_number(number: str) -> tuple[int, int]:
    """``86`` -> (8, 6), ``120`` -> (12, 0): NVIDIA writes major * 10 + minor."""
    return divmod(int(number), 10)


def code_covers(sass: Sequence[str], ptx: Sequence[str], capability: tuple[int, int]) -> str | None:
    """The code that runs on a GPU of ``capability`` (major, minor), or None: the closest SASS
    (the highest minor not above the device's), else the newest PTX not above it.

    From NVIDIA's CUDA C++ Programming Guide (binary and PTX compatibility) and its Blackwell
    compatibility guide: SASS ``sm_XY`` runs on X.Z for Z >= Y (same major, minor not above
    the device's); ``sm_XYf`` (family-specific) likewise; ``sm_XYa`` (architecture-specific) only
    on X.Y. PTX ``compute_XY`` is compiled by the driver for any X.Y or newer; ``compute_XYf``
    for the same major at minor >= Y; ``compute_XYa`` only for X.Y.
    """
    fits = []
    for code in sass:
        match = _SASS.fullmatch(code)
        if match:
            major, minor = _arch_number(match.group(1))
            exact = match.group(2) == "a"
            if major == capability[0] and (minor == capability[1] if exact else minor <= capability[1]):
                fits.append(((minor, exact), code))
    if fits:  # the closest cubin, as the CUDA runtime picks it
        return max(fits)[1]
    for code in ptx:
        match = _PTX.fullmatch(code)
        if match:
            arch, kind = _arch_number(match.group(1)), match.group(2)
            if (
                (kind == "" and arch <= capability)
                or (kind == "f" and arch[0] == capability[0] and arch <= capability)
                or (kind == "a" and arch == capability)
            ):
                fits.append(((arch[1] + 10 * arch[0], False), code))
    return max(fits)[1] if fits else None


def gfx_covers(gfx: Sequence[str], agent: str) -> str | None:
    """The first code object target that runs on the AMD ``agent`` (``gfx1100``), or None: the
    same processor (target features such as ``:xnack-`` are not compared: lockgen's reading of a
    bundle keeps them for the record only), or a generic target whose family lists it
    (:data:`GENERIC_GFX`)."""
    for code in gfx:
        match = _GFX_TARGET.fullmatch(code)
        if match and (match.group(1) == agent or agent in GENERIC_GFX.get(match.group(1), ())):
            return code
    return None


def _narrowed(wheel: WheelCode, rules: DetectRules) -> WheelCode:
    """The wheel's code without what the config drops (``detect.coverage``): a config may only
    narrow what the wheels carry."""

    def keep(code: str) -> bool:
        if code in rules.drop or code.split(":")[0] in rules.drop:
            return False
        match = _SASS.fullmatch(code) or _PTX.fullmatch(code)
        return not (match and rules.min_capability and _arch_number(match.group(1)) < rules.min_capability)

    return replace(wheel, sass=tuple(filter(keep, wheel.sass)), ptx=tuple(filter(keep, wheel.ptx)),
                   gfx=tuple(filter(keep, wheel.gfx)))  # fmt: skip


def coverage_gaps(facts: Facts, coverage: Coverage, rules: DetectRules,
                  part: LayerCoverage | None = None) -> tuple[list[str], list[str], list[str]]:  # fmt: skip
    """``(gaps, unknown, covered)`` for a cell's main layer (``part`` None) or one of its layers:
    one line per GPU a wheel has no code for (naming the GPU, its capability or gfx, and the
    wheel's list), per NVIDIA GPU whose capability was not reported (coverage cannot be checked;
    ``[N/A]`` devices are not GPUs, C14), and per GPU covered (with the code each wheel runs).
    Wheels with CUDA code are checked against the NVIDIA GPUs of ``facts``, wheels with ROCm code
    against its AMD ones: every GPU counts (the candidate's facts hold only the GPUs of its kind).
    Code linked against a GPU runtime the cell does not install (``linked`` groups whose
    ``needs`` are not all in ``coverage.runtimes``: ``libcudart.so.12`` in a CUDA 13 cell) cannot
    load there: it is not counted; a wheel none of whose code can load is named in ``covered``."""
    gaps: list[str] = []
    unknown: list[str] = []
    covered: list[str] = []
    wheels = part.wheels if part is not None else coverage.wheels
    counted = []
    for wheel in wheels:
        usable, missing = wheel.loadable(coverage.runtimes)
        if missing and not (usable.sass or usable.ptx or usable.gfx) and (wheel.sass or wheel.ptx or wheel.gfx):
            have = ", ".join(coverage.runtimes) or "no GPU runtime"
            covered.append(f"not counted: {wheel.name} {wheel.version}: its GPU code is linked against "
                           f"{', '.join(missing)}, which this cell does not install ({have}): it cannot load here")  # fmt: skip
        else:
            counted.append(usable)
    # a wheel is a CUDA (ROCm) wheel by what it carries; the config's narrowing only removes code
    cuda = [_narrowed(wheel, rules) for wheel in counted if wheel.sass or wheel.ptx]
    rocm = [_narrowed(wheel, rules) for wheel in counted if wheel.gfx]
    for index, gpu in enumerate(facts.gpus if cuda else ()):
        cap = gpu.capability
        if cap is None:
            if not gpu.capability_reported:
                unknown.append(f"GPU {index} {gpu.describe()}: its kernels cannot be checked")
            continue
        runs = [(wheel, code_covers(wheel.sass, wheel.ptx, cap)) for wheel in cuda]
        gaps += [f"GPU {index} {gpu.describe()}: {w.describe()}" for w, code in runs if code is None]
        if all(code for _, code in runs):
            covered.append(f"GPU {index} {gpu.describe()}: " + ", ".join(f"{w.name} {code}" for w, code in runs))
    for agent in facts.amd_agents if rocm else ():
        found = [(wheel, gfx_covers(wheel.gfx, agent)) for wheel in rocm]
        gaps += [f"AMD GPU {agent}: {w.describe()}" for w, code in found if code is None]
        if all(code for _, code in found):
            covered.append(f"AMD GPU {agent}: " + ", ".join(f"{w.name} {code}" for w, code in found))
    return gaps, unknown, covered


def rocm_targets(rules: DetectRules, backend: str) -> tuple[str, ...] | None:
    """The gfx targets the ROCm release of ``backend`` (``rocm6.4`` -> 6.4) supports by
    :data:`ROCM_GFX` (the newest entry not above it), narrowed by ``amd-targets``; None when
    the label names no ROCm version the table knows (then only the wheels' code decides)."""
    match = re.fullmatch(r"rocm(\d{1,3})\.(\d{1,3})(?:\.\d+)?", backend)
    known = sorted(ROCM_GFX, key=version_key)
    table: tuple[str, ...] | None = None
    if match:
        wanted = (int(match.group(1)), int(match.group(2)))
        older = [v for v in known if version_key(v) <= wanted and version_key(v)[0] == wanted[0]]
        table = ROCM_GFX[older[-1]] if older else None
    if rules.amd_targets:
        return tuple(t for t in rules.amd_targets if table is None or t in table)
    return table


# ---- the decision ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A backend the rules allow for this machine, in the rules' order: ``reasons`` say why;
    ``refusal`` is set when the rule that allows it refuses this machine (a capability limit);
    ``facts`` are the facts its cells are checked with (AMD APUs that do not count removed)."""

    backend: str
    reasons: tuple[str, ...]
    facts: Facts
    refusal: Refused | None = None


def choose_backend(facts: Facts, rules: DetectRules, allow_cpu: bool = False) -> tuple[str, list[str]]:
    """(backend, reasons) of the first of :func:`backend_candidates`; raises :class:`Refused`."""
    first = backend_candidates(facts, rules, allow_cpu)[0]
    if first.refusal is not None:
        raise first.refusal
    return first.backend, list(first.reasons)


def backend_candidates(facts: Facts, rules: DetectRules, allow_cpu: bool = False) -> list[Candidate]:
    """The backends the rules allow for ``facts``, best first; raises :class:`Refused` with the
    configured text or what was not known.

    In order: any unknown probe -> refused, ``--cpu`` or not (unknown is not "none"); Apple
    silicon -> ``apple`` (an x86_64 Python under Rosetta still gets the arm64 cell); an NVIDIA
    GPU on the PCI bus without a working nvidia-smi -> refused with a driver hint; a usable
    NVIDIA GPU -> every NVIDIA rule that fits, in order (see :func:`_nvidia_candidates`); an
    AMD GPU the ``amd`` backend's ROCm supports (:func:`rocm_targets`; unsupported APUs beside
    it are ignored, an unsupported discrete GPU refuses) -> ``amd``; an AMD GPU on the bus
    without a driver -> refused with a driver hint; otherwise the no-GPU rule: with
    ``allow_cpu`` the ``no-gpu`` backend for the machine's os, else refused with
    ``no-gpu-refuse`` (C20, C21); when the rules name no ``no-gpu`` backend for the os, the
    default refusal (which says "pass --cpu") and ``--cpu`` both say to name the cell instead.
    A GPU kind the rules name no backend for counts as no GPU.
    """
    if facts.unknown:
        raise Refused(f"cannot tell which GPUs this machine has: {facts.unknown[0]}",
                      [*facts.unknown[1:], "an unknown answer is not 'no GPU': fix the probe and run again, or name "
                       "the cell to install (cellselect.py --cell NAME; lockgen install NAME)"])  # fmt: skip
    if facts.apple_silicon and rules.apple:
        rosetta = " (this Python is x86_64 under Rosetta 2; the arm64 cell is chosen)" if facts.rosetta else ""
        return [Candidate(rules.apple, (f"Apple silicon{rosetta}: {rules.apple} (detect.apple)",), facts)]
    nvidia_rules = bool(rules.nvidia or rules.nvidia_unknown_cuda)
    _refuse_without_driver(facts, "nvidia", nvidia_rules and not facts.nvidia)
    if facts.nvidia and nvidia_rules:
        return _nvidia_candidates(replace(facts, amd_agents=(), amd_unknown=()), rules)  # the NVIDIA GPUs decide
    notes: list[str] = []
    if facts.amd_unknown and rules.amd:
        seen = ", ".join(facts.amd_unknown[:4])
        refusal = Refused(f"cannot tell which gfx target the AMD GPU {seen} has, so whether {rules.amd} supports it "
                          "is unknown (every GPU counts)",
                          [*_notes(facts, "pci:"), "its PCI device ID is not in AMD's device table (cellselect.py "
                           "AMD_GFX_DEVICES); say its target with --gfx (as hipinfo or AMD's driver reports it, "
                           "like gfx1100), or name the cell to install: cellselect.py --cell NAME"])  # fmt: skip
        return [Candidate(rules.amd, (f"AMD GPU {seen}: {rules.amd} (detect.amd)",), facts, refusal)]
    if facts.amd_agents and rules.amd:
        amd = _amd_candidate(facts, rules, rules.amd)
        if amd is not None:
            return [amd]
        notes.append(_amd_unsupported(facts, rules, rules.amd))
    _refuse_without_driver(facts, "amd", bool(rules.amd) and not facts.amd_agents)
    return [_choose_no_gpu(facts, rules, allow_cpu, notes)]


def _refuse_without_driver(facts: Facts, vendor: str, applies: bool) -> None:
    """A GPU of ``vendor`` on the PCI bus that its compute driver does not show: refused with a
    driver hint (never the CPU cell). An AMD GPU with the amdgpu driver bound but no compute
    agents is an APU or a card without ROCm support: not refused here."""
    seen = [d for d in facts.pci or () if d.vendor == vendor and (vendor == "nvidia" or not d.driver)]
    if not applies or not seen:
        return
    devices = ", ".join(d.describe() for d in seen[:4])
    if vendor == "nvidia":
        why = "; ".join(_notes(facts, "nvidia-smi:")) or "nvidia-smi did not run"
        bound = {d.driver for d in seen}
        hint = ("the nouveau driver cannot run CUDA: install NVIDIA's driver" if "nouveau" in bound else
                "install (or repair) the NVIDIA driver and its nvidia-smi, then run again")  # fmt: skip
        raise Refused(f"an NVIDIA GPU is on the PCI bus but its driver does not work ({why}): {hint}",
                      [f"pci: {devices}", "to install a cell anyway, name it: cellselect.py --cell NAME"])  # fmt: skip
    if facts.os == "windows":
        raise Refused("an AMD GPU is in this machine without AMD's driver (Windows shows it as the Microsoft Basic "
                      "Display Adapter or with a device error): install AMD's Adrenalin or PRO driver, then run again",
                      [f"pci: {devices}", "to install a cell anyway, name it: cellselect.py --cell NAME"])  # fmt: skip
    raise Refused("an AMD GPU is on the PCI bus without a driver (no amdgpu compute agents, no rocminfo): "
                  "install the amdgpu driver (ROCm's amdgpu-dkms, or a kernel that has it), then run again",
                  [f"pci: {devices}", *_notes(facts, "rocminfo:"),
                   "to install a cell anyway, name it: cellselect.py --cell NAME"])  # fmt: skip


def _nvidia_candidates(facts: Facts, rules: DetectRules) -> list[Candidate]:
    """The seed's ``_cuda_flavor``: an unknown CUDA version -> ``nvidia-unknown-cuda``; else every
    rule whose match fits (os, host arch) and whose ``min-cuda`` the driver reaches (numeric
    comparison), in order, each subject to its capability refusal; none -> ``nvidia-too-old``
    (C16), with notes saying what was seen: the GPUs, the driver's CUDA version, each rule's
    minimum."""
    seen = ", ".join(gpu.describe() for gpu in facts.gpus[:16]) or "no GPU list (pretended)"
    reasons = [f"NVIDIA GPU: {seen}", *_notes(facts, "nvidia-smi:")]
    if facts.cuda is None:
        unknown = "driver CUDA version unknown"
        if _notes(facts, "pretended:"):  # --gpu nvidia or --gpu-query without --cuda: nothing ran nvidia-smi
            unknown += " (pretended without --cuda: pass --cuda X.Y with --gpu-query to check the driver)"
        if rules.nvidia_unknown_cuda is None:
            raise Refused("the NVIDIA driver's CUDA version could not be read, and the detect rules name no "
                          "nvidia-unknown-cuda backend", [*reasons, unknown])  # fmt: skip
        backend = rules.nvidia_unknown_cuda
        return [Candidate(backend, (*reasons, f"{unknown}: {backend} (detect.nvidia-unknown-cuda)"), facts)]
    found = []
    for index, rule in enumerate(rules.nvidia):
        if rule.fits(facts.os, facts.arch) and version_key(facts.cuda) >= version_key(rule.min_cuda):
            where = f"detect.nvidia[{index}]"
            why = [*reasons, f"driver CUDA {facts.cuda} >= {rule.min_cuda}: {rule.backend} ({where})"]
            try:
                found.append(Candidate(rule.backend, (*why, *_check_capability(facts, rule, where)), facts))
            except Refused as exc:
                found.append(Candidate(rule.backend, tuple(why), facts, refusal=exc))
    if found:
        return found
    tried = [f"detect.nvidia[{i}] needs driver CUDA >= {rule.min_cuda} for {rule.backend}"
             for i, rule in enumerate(rules.nvidia) if rule.fits(facts.os, facts.arch)]  # fmt: skip
    tried = tried or [f"no detect.nvidia rule matches {facts.os} {facts.arch}"]
    raise Refused(rules.nvidia_too_old.replace("{cuda}", facts.cuda),
                  [*reasons, f"driver CUDA version: {facts.cuda}", *tried])  # fmt: skip


def _check_capability(facts: Facts, rule: NvidiaRule, where: str) -> list[str]:
    """Reasons, or :class:`Refused` when any GPU is at or above the rule's capability limit (C12).

    ``[N/A]`` (reported, C14) is not counted. A capability nvidia-smi could NOT report (old
    driver, failed query) cannot prove the GPU is older: refused with the rule's message and why.
    """
    limit = rule.refuse_compute_capability
    if limit is None or facts.cuda is None:
        return []
    message = (rule.refuse or DEFAULT_REFUSE).replace("{cuda}", facts.cuda)
    newer = [gpu for gpu in facts.gpus if gpu.compute_capability is not None and gpu.compute_capability >= limit]
    if newer:
        raise Refused(message, [f"{gpu.describe()} >= {limit} ({where}.refuse-compute-capability)" for gpu in newer])
    unknown = [gpu.name for gpu in facts.gpus if not gpu.capability_reported]
    if unknown:
        why = (f"the compute capability of {', '.join(unknown)} is unknown: nvidia-smi could not report it, "
               f"so it may be {limit} or newer")  # fmt: skip
        notes = _notes(facts, "nvidia-smi:")
        raise Refused(f"{message} ({why})", [*notes, f"conservative refusal by {where}: {why}"])
    if not facts.gpus:
        return [f"no GPU list: compute capability not checked against {limit} ({where})"]
    skipped = [
        f"{gpu.name}: compute capability [N/A], not counted" for gpu in facts.gpus if gpu.compute_capability is None
    ]
    return [*skipped, f"no GPU at or above compute capability {limit} ({where}.refuse-compute-capability)"]


def _amd_split(facts: Facts, rules: DetectRules, backend: str) -> tuple[list[str], list[str], list[str]]:
    """(supported, unsupported APUs, unsupported discrete GPUs) of the AMD agents for ``backend``."""
    targets = rocm_targets(rules, backend)
    supported = [a for a in facts.amd_agents if targets is None or a in targets or a == _PRETENDED]
    apus = [a for a in facts.amd_agents if a not in supported and a in AMD_APUS]
    discrete = [a for a in facts.amd_agents if a not in supported and a not in AMD_APUS]
    return supported, apus, discrete


def _amd_candidate(facts: Facts, rules: DetectRules, backend: str) -> Candidate | None:
    supported, apus, discrete = _amd_split(facts, rules, backend)
    if not supported:
        return None
    targets = rocm_targets(rules, backend)
    reasons = [f"AMD GPU ({', '.join(supported)}): {backend} (detect.amd)"]
    reasons.append(f"{backend} supports {', '.join(targets)} (ROCm's support matrix)" if targets is not None
                   else f"no ROCm support table for {backend}: the wheels' code objects decide")  # fmt: skip
    if apus:
        reasons.append(f"ignored: the integrated GPU {', '.join(apus)} that {backend} does not support "
                       "(hide it from ROCm with HIP_VISIBLE_DEVICES if torch lists it)")  # fmt: skip
    counted = replace(facts, amd_agents=tuple(supported), gpus=(), nvidia=False)
    if discrete:
        refusal = Refused(f"the AMD GPU {', '.join(discrete)} is not supported by {backend} (every GPU counts)",
                          [f"{backend} supports {', '.join(targets or ())}",
                           "hide it with HIP_VISIBLE_DEVICES, or name a cell: cellselect.py --cell NAME"])  # fmt: skip
        return Candidate(backend, tuple(reasons), counted, refusal=refusal)
    return Candidate(backend, tuple(reasons), counted)


def _amd_unsupported(facts: Facts, rules: DetectRules, backend: str) -> str:
    _, apus, discrete = _amd_split(facts, rules, backend)
    kinds = [f"the integrated GPU {', '.join(apus)}"] * bool(apus) + [f"the GPU {', '.join(discrete)}"] * bool(discrete)
    return f"AMD: {' and '.join(kinds)} not supported by {backend} ({', '.join(rocm_targets(rules, backend) or ())})"


def _choose_no_gpu(facts: Facts, rules: DetectRules, allow_cpu: bool, notes: Sequence[str] = ()) -> Candidate:
    why = "no GPU the detect rules support" + (f" ({'; '.join(facts.notes)})" if facts.notes else "")
    if facts.nvidia or facts.amd_agents or facts.amd_unknown or facts.apple_silicon:
        kinds = [kind for kind, seen in (("NVIDIA", facts.nvidia), ("AMD", facts.amd_agents or facts.amd_unknown),
                                          ("Apple silicon", facts.apple_silicon)) if seen]  # fmt: skip
        why = f"{' and '.join(kinds)} found, but the detect rules name no backend for it"
    seen = [*notes, why]
    if notes:
        seen = [*notes, "no supported GPU"]
    backend = rules.no_gpu_backend(facts.os)
    if not allow_cpu and (backend is not None or rules.no_gpu_refuse != DEFAULT_NO_GPU):
        raise Refused(rules.no_gpu_refuse, seen)
    if backend is None:  # --cpu cannot help: say what can (the default message would send the user to --cpu)
        flag = "--cpu: " if allow_cpu else "no supported GPU detected, and "
        raise Refused(f"{flag}the detect rules name no no-gpu (CPU) backend for {facts.os}: name the cell to "
                      "install (cellselect.py --cell NAME; lockgen install NAME; lockgen matrix lists them)", seen)  # fmt: skip
    return Candidate(backend, (*seen, f"--cpu: {backend} (detect.no-gpu)"), facts)


def _notes(facts: Facts, source: str) -> list[str]:
    """The notes of one source: every note starts with ``nvidia-smi:``, ``rocminfo:``, ``pci:``,
    ``sysctl:`` or ``pretended:``."""
    return [note for note in facts.notes if note.startswith(source)]


def check_cuda(cuda: str) -> str:
    """``cuda`` if it is a version like 13.0; else :class:`InputError` (for ``--cuda``)."""
    if not _VERSION.fullmatch(cuda.strip()):
        raise InputError(f"--cuda {cuda[:40]!r}: write the driver's CUDA version like 13.0")
    return cuda.strip()


def pretend(facts: Facts, *, os: str | None = None, arch: str | None = None, interpreter: str | None = None,
            gpu: str | None = None, cuda: str | None = None, gpu_query: str | None = None,
            gfx: str | None = None) -> Facts:  # fmt: skip
    """``facts`` with command-line facts in place of probed ones (``lockgen detect``'s pretend).

    ``cuda``/``gpu_query`` (query text) imply ``gpu="nvidia"``, ``gfx`` (``gfx1100,gfx1036``)
    ``gpu="amd"``; a pretended os/arch without ``gpu`` drops the probed GPU (Apple silicon for
    macOS aarch64); ``arch`` without ``interpreter`` sets both. Pretended GPU facts are known:
    ``unknown`` and ``pci`` are cleared. Raises :class:`InputError` for a bad ``cuda``, ``gfx``
    or ``gpu``, for ``cuda``/``gpu_query`` with another ``gpu`` than nvidia (a contradiction),
    and :class:`QueryError` for query text without GPU rows in the expected columns.
    """
    cuda = check_cuda(cuda) if cuda is not None else None
    agents = tuple(dict.fromkeys(g.strip() for g in gfx.split(","))) if gfx is not None else None
    if agents is not None and not all(_GFX_NAME.fullmatch(agent) for agent in agents):
        raise InputError(f"--gfx {gfx[:60]!r}: write gfx targets like gfx1100 (comma-separated)")  # type: ignore[index]
    if gpu not in (None, "nvidia") and (cuda is not None or gpu_query is not None):
        flag = "--cuda" if cuda is not None else "--gpu-query"
        raise InputError(f"--gpu {gpu} with {flag}: {flag} describes an NVIDIA GPU; drop one of them")
    if agents is not None and (gpu not in (None, "amd") or cuda is not None or gpu_query is not None):
        raise InputError("--gfx describes AMD GPUs: drop --gpu/--cuda/--gpu-query, or --gfx")
    gpus = tuple(parse_gpu_query(gpu_query)) if gpu_query is not None else None
    if gpus == ():
        raise QueryError("no GPU rows")
    given = {"os": os, "arch": arch, "interpreter": interpreter, "gpu": gpu, "cuda": cuda, "gfx": gfx}
    said = " ".join(f"--{key} {value}" for key, value in given.items() if value) + (" --gpu-query" if gpus else "")
    if gpu is None and (cuda is not None or gpus is not None):
        gpu = "nvidia"
    if gpu is None and agents is not None:
        gpu = "amd"
    new = replace(
        facts, os=os or facts.os, arch=arch or facts.arch, interpreter=interpreter or arch or facts.interpreter
    )
    if gpu is None and (os or arch):
        gpu = "apple" if (new.os, new.arch) == ("macos", "aarch64") else "none"
    if gpu is not None:
        new = replace(_pretend_gpu(new, gpu, cuda, gpus, agents), unknown=(), pci=None)
    rosetta = (new.os, new.arch, new.interpreter) == ("macos", "aarch64", "x86_64")
    return replace(new, rosetta=rosetta, notes=(*new.notes, f"pretended: {said}") if said else new.notes)


_PRETENDED = "pretended"  # the AMD agent of --gpu amd without --gfx: its target is not checked


def _pretend_gpu(facts: Facts, gpu: str, cuda: str | None, gpus: tuple[Gpu, ...] | None,
                 agents: tuple[str, ...] | None = None) -> Facts:  # fmt: skip
    if gpu not in GPU_KINDS:
        raise InputError(f"--gpu {gpu[:40]!r}: expected one of {', '.join(GPU_KINDS)}")
    if gpu == "nvidia":
        return replace(facts, nvidia=True, amd_agents=(), amd_unknown=(), apple_silicon=False,
                       cuda=cuda if cuda is not None else facts.cuda if facts.nvidia else None,
                       gpus=gpus if gpus is not None else facts.gpus if facts.nvidia else ())  # fmt: skip
    amd: tuple[str, ...] = (agents or facts.amd_agents or (_PRETENDED,)) if gpu == "amd" else ()
    return replace(facts, nvidia=False, cuda=None, gpus=(), amd_agents=amd, amd_unknown=(),
                   apple_silicon=gpu == "apple")  # fmt: skip


# ---- the cell --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """The chosen cell. ``lock``: project-relative main lock path; ``layers``: the manifest
    entry's layer objects (``name``, ``kind`` main|optional|no-deps|unhashed, ``lock``, …) to
    install on this machine, in install order; ``skipped_layers``: the optional layers left out
    because their wheels have no code for a GPU of the machine (``name``, ``kind``, ``lock``,
    ``reason``); ``interpreter``: the arch the install's Python must have; ``axes``: the cell's
    extra axis values; ``coverage``: the kernel-coverage decision, one line per GPU (or why it
    was not checked); ``skipped``: the cells passed over and why; ``facts``: the raw facts."""

    cell: str
    os: str
    arch: str
    backend: str
    python: str
    lock: str
    layers: list[dict[str, Any]]
    interpreter: str
    reasons: list[str]
    facts: dict[str, Any]
    axes: dict[str, str] = field(default_factory=dict)
    coverage: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    skipped_layers: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field (``--json`` prints it)."""
        return {"cell": self.cell, "os": self.os, "arch": self.arch, "backend": self.backend,
                "python": self.python, "axes": self.axes, "lock": self.lock, "layers": self.layers,
                "interpreter": self.interpreter, "reasons": self.reasons, "coverage": self.coverage,
                "skipped": self.skipped, "skipped_layers": self.skipped_layers, "facts": self.facts}  # fmt: skip


def manifest_rules(manifest: Mapping[str, Any]) -> DetectRules:
    """The manifest's detect rules, after checking its ``format`` is :data:`MANIFEST_FORMAT`.

    Raises :class:`InputError` (an unknown format, no ``"detect"``) or :class:`RulesError`.
    """
    _check_format(manifest)
    if manifest.get("detect") is None:
        raise InputError(
            "the manifest has no detect rules; add a [tool.lockgen.detect] table to pyproject.toml ([detect] in a "
            "lockgen.toml), then run lockgen all; or name the cell: --cell NAME"
        )
    return DetectRules.from_dict(manifest["detect"], "detect")


def _check_format(manifest: Mapping[str, Any]) -> None:
    """:class:`InputError` unless the manifest's ``format`` is :data:`MANIFEST_FORMAT`."""
    fmt = manifest.get("format")
    if isinstance(fmt, bool) or not isinstance(fmt, int):
        raise InputError(f'no integer "format" (expected {MANIFEST_FORMAT}); is this a lockgen manifest?')
    if fmt != MANIFEST_FORMAT:
        fix = "rewrite it with a newer lockgen (lockgen all)" if fmt < MANIFEST_FORMAT else "use a newer cellselect.py"
        raise InputError(
            f"manifest format {fmt} is not supported (this selector reads format {MANIFEST_FORMAT}); {fix}"
        )


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")


def _cells(manifest: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    cells = manifest.get("cells")
    if not isinstance(cells, Mapping):
        raise InputError('"cells" must be an object of cell name -> object')
    for name, entry in cells.items():
        if not isinstance(entry, Mapping):
            raise InputError(f"cells.{str(name)[:80]}: must be an object")
        for key in ("os", "arch", "backend", "python"):
            if not isinstance(entry.get(key), str):
                raise InputError(f"cells.{str(name)[:80]}.{key}: must be a string")
        if entry.get("axes") is not None and not (
            isinstance(entry["axes"], Mapping) and all(isinstance(v, str) for v in entry["axes"].values())
        ):
            raise InputError(f"cells.{str(name)[:80]}.axes: must be an object of axis -> value")
    return dict(cells)


def select_cell(facts: Facts, manifest: Mapping[str, Any], python: str | None = None, allow_cpu: bool = False, *,
                cell: str | None = None, axes: Mapping[str, str] | None = None,
                manifest_dir: str | None = None) -> Selection:  # fmt: skip
    """The manifest's cell for this machine: (os, host arch, backend by the rules, python, the
    extra axes), the first the rules allow whose wheels have code for every GPU.

    ``python``: given (X.Y), else the only one the matrix has for that (os, arch, backend), else
    the running interpreter's. ``axes``: explicit extra-axis values (``--axis``), else the
    ``detect.axes`` rules, else the one cell whose coverage fits. ``cell``: the cell named by
    hand (``--cell``): the rules (none are needed), the coverage and unknown facts do not apply;
    its os and arch must still be this machine's. ``manifest_dir``: the folder the manifest was read from: lock
    paths must resolve inside it (after symlinks). Raises :class:`Refused` (the rules, unknown
    facts, no code for a GPU), :class:`NoCell` (no such cell, another Python, status
    failed/skipped), :class:`InputError`/:class:`RulesError` (a bad manifest: key path named).
    """
    if cell is not None:  # a cell named by hand needs no detect rules
        _check_format(manifest)
        return _named_cell(facts, _cells(manifest), cell, manifest_dir)
    rules = manifest_rules(manifest)
    cells = _cells(manifest)
    axes = dict(axes or {})
    facts = _amd_used(facts, cells, rules)
    candidates = backend_candidates(facts, rules, allow_cpu)
    skipped: list[str] = []
    gaps_seen: list[str] = []
    first_error: SelectError | None = None
    for candidate in candidates:
        if candidate.refusal is not None:
            if skipped:
                raise Refused(candidate.refusal.message, [*candidate.refusal.notes, *skipped])
            raise candidate.refusal
        try:
            found, why = _find_cells(cells, candidate, python, rules, axes)
        except NoCell as exc:
            first_error = first_error or exc
            skipped.append(f"{candidate.backend}: {exc}")
            continue
        chosen = []
        for name, entry in found:
            checked = _entry_coverage(candidate.facts, name, entry, rules)
            if checked.unknown:
                raise Refused(f"cannot check that cell {name} has code for every GPU: {checked.unknown[0]}",
                              [*checked.unknown[1:], "the compute capability was not reported (see the nvidia-smi notes); "
                               "name the cell to install it anyway: cellselect.py --cell NAME", *_notes(facts, "nvidia-smi:")])  # fmt: skip
            if checked.gaps:
                gaps_seen += [f"cell {name}: {gap}" for gap in checked.gaps]
                skipped.append(f"cell {name}: no code for {checked.gaps[0]}")
                continue
            chosen.append((name, entry, checked))
        if len(chosen) > 1:
            raise InputError(_ambiguous([name for name, _, _ in chosen], cells, candidate.backend))
        if chosen:
            name, entry, checked = chosen[0]
            return _selection(facts, name, entry, [*candidate.reasons, why], checked, skipped, manifest_dir)
    if gaps_seen:
        raise Refused(f"no cell the detect rules allow has code for every GPU of this machine: {gaps_seen[0]}",
                      [*gaps_seen[1:], *(line for line in skipped if ": no code for " not in line),
                       "a cell built for this GPU is needed (add its architecture to the build), or name a cell: "
                       "cellselect.py --cell NAME"])  # fmt: skip
    raise first_error or NoCell("no cell")


def _amd_used(facts: Facts, cells: Mapping[str, Mapping[str, Any]], rules: DetectRules) -> Facts:
    """``facts`` without their AMD GPUs when the manifest has no cell of the ``amd`` backend for
    this machine's (os, arch) (``amd`` names one backend for every OS; ROCm builds are often
    Linux only): such a GPU has no build to use, so it neither picks a backend nor refuses (an
    unknown gfx target, a missing driver); the no-GPU rule applies, and a note says why."""
    amd_pci = [d for d in facts.pci or () if d.vendor == "amd"]
    if rules.amd is None or not (facts.amd_agents or facts.amd_unknown or amd_pci):
        return facts
    if any((e["os"], e["arch"], e["backend"]) == (facts.os, facts.arch, rules.amd) for e in cells.values()):
        return facts
    note = f"AMD: the manifest has no {rules.amd} cell for {facts.os} {facts.arch}: the AMD GPU is not used"
    pci = None if facts.pci is None else tuple(d for d in facts.pci if d.vendor != "amd")
    return replace(facts, amd_agents=(), amd_unknown=(), pci=pci, notes=(*facts.notes, note))


def _named_cell(facts: Facts, cells: Mapping[str, Mapping[str, Any]], cell: str, manifest_dir: str | None) -> Selection:
    if cell not in cells:
        raise NoCell(f"--cell {cell[:80]!r}: the manifest has no such cell; it has {', '.join(sorted(cells)[:40])}")
    entry = cells[cell]
    if (entry["os"], entry["arch"]) != (facts.os, facts.arch):
        raise NoCell(
            f"--cell {cell}: it is a {entry['os']} {entry['arch']} cell; this machine is {facts.os} {facts.arch}"
        )
    _check_status(cell, entry)
    why = f"--cell {cell}: named by hand (the detect rules and the kernel coverage were not applied)"
    return _selection(facts, cell, entry, [why], None, [], manifest_dir)


def _find_cells(cells: Mapping[str, Mapping[str, Any]], candidate: Candidate, python: str | None,
                rules: DetectRules, axes: Mapping[str, str]) -> tuple[list[tuple[str, Mapping[str, Any]]], str]:  # fmt: skip
    """The cells of (os, arch, backend, python) that the explicit axis values and the axis
    rules leave, in manifest order, with the reason for the Python; :class:`NoCell` for none."""
    facts, backend = candidate.facts, candidate.backend
    where = f"{facts.os} {facts.arch} {backend}"
    found = {name: entry for name, entry in cells.items()
             if (entry["os"], entry["arch"], entry["backend"]) == (facts.os, facts.arch, backend)}  # fmt: skip
    if not found:
        raise NoCell(f"the manifest has no cell for {where}")
    pythons = sorted({entry["python"] for entry in found.values()}, key=_python_key)
    if python is not None:
        python, why = _major_minor(python), "Python {} (--python)"
    elif len(pythons) == 1:
        python, why = pythons[0], "Python {}: the only one the matrix has for " + where
    elif "{}.{}".format(*sys.version_info[:2]) in pythons:
        python, why = "{}.{}".format(*sys.version_info[:2]), "Python {}: the running interpreter's"
    else:  # an installer's system Python (3.8 on Ubuntu 20.04) only runs the selector: the venv gets another
        running = "{}.{}".format(*sys.version_info[:2])
        python = pythons[-1]
        why = (f"Python {{}}: the newest the matrix has for {where} (this selector runs on {running}, which "
               "has no cell; the install needs a Python {} interpreter, or pass --python)")  # fmt: skip
    names = [name for name, entry in found.items() if entry["python"] == python]
    if not names:
        raise NoCell(f"the matrix has no {where} cell for Python {python}; it has {', '.join(pythons)}: pass --python")
    reasons = [why.format(python, python)]
    all_axes = sorted({axis for name in names for axis in (cells[name].get("axes") or {})})
    for axis in axes:
        if axis not in all_axes:
            raise NoCell(f"--axis {axis}: the {where} cells have no extra axis {axis!r}"
                         + (f"; they have {', '.join(all_axes)}" if all_axes else ""))  # fmt: skip
    for axis in all_axes:
        values = sorted({(cells[name].get("axes") or {}).get(axis, "") for name in names})
        if axis in axes:
            value, said = axes[axis], f"{axis} = {axes[axis]} (--axis)"
        else:
            rule = next(((i, r) for i, r in enumerate(rules.axes.get(axis, ())) if r.fits(facts, backend)), None)
            if rule is None or len(values) == 1:
                continue
            value, said = rule[1].value, f"{axis} = {rule[1].value} (detect.axes.{axis}[{rule[0]}])"
        kept = [name for name in names if (cells[name].get("axes") or {}).get(axis) == value]
        if not kept:
            raise NoCell(f"no {where} Python {python} cell has {axis} = {value}; the values are {', '.join(values)}")
        names = kept
        reasons.append(said)
    return [(name, cells[name]) for name in names], "; ".join(reasons)


def _ambiguous(names: Sequence[str], cells: Mapping[str, Mapping[str, Any]], backend: str) -> str:
    axes = sorted({axis for name in names for axis in (cells[name].get("axes") or {})})
    values = {axis: sorted({str((cells[n].get("axes") or {}).get(axis)) for n in names}) for axis in axes}
    first = cells[names[0]]
    text = f"cells {', '.join(names)} are all {first['os']} {first['arch']} {backend} Python {first['python']}"
    if axes:
        text += ("; they differ by " + ", ".join(f"{a} ({', '.join(v)})" for a, v in values.items())
                 + f": pass --axis {axes[0]}=VALUE, or add [[detect.axes.{axes[0]}]] rules")  # fmt: skip
    return text


@dataclass(frozen=True)
class _Checked:
    """A cell's kernel coverage on this machine: ``gaps`` and ``unknown`` of the layers that must
    install (main, no-deps) block the cell; ``covered`` says what runs where; ``skipped_layers``
    are the optional layers without code for a GPU of the machine (installed without them);
    ``unread``: wheels whose code was not read (lines); ``recorded``: the entry has a record."""

    gaps: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    covered: list[str] = field(default_factory=list)
    skipped_layers: list[dict[str, str]] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    recorded: bool = False


def _entry_coverage(facts: Facts, name: str, entry: Mapping[str, Any], rules: DetectRules) -> _Checked:
    """The coverage of the entry's main layer and of each of its layers the record has (a layer
    object whose name the record does not list is not checked)."""
    if entry.get("coverage") is None:
        return _Checked()
    coverage = Coverage.from_dict(entry["coverage"], f"cells.{name}.coverage")
    counted = replace(facts, amd_agents=tuple(a for a in facts.amd_agents if a != _PRETENDED))
    gaps, unknown, covered = coverage_gaps(counted, coverage, rules)
    checked = _Checked(gaps, unknown, covered, recorded=True,
                       unread=[f"{n} {v} ({why})" for n, v, why in coverage.unread])  # fmt: skip
    layers: list[Any] = entry["layers"] if isinstance(entry.get("layers"), list) else []
    for layer in layers:
        part = coverage.layer(str(layer.get("name"))) if isinstance(layer, Mapping) else None
        if part is None:
            continue
        lacks, cannot, runs = coverage_gaps(counted, coverage, rules, part)
        checked.unread.extend(f"{n} {v} ({why}) of the layer {part.name}" for n, v, why in part.unread)
        if part.kind == "optional" and (lacks or cannot):
            reason = (lacks or cannot)[0]
            checked.skipped_layers.append({"name": part.name, "kind": part.kind, "lock": str(layer.get("lock")),
                                           "reason": f"no code for {reason}" if lacks else reason})  # fmt: skip
            continue
        checked.gaps.extend(f"the {part.kind} layer {part.name}: {gap}" for gap in lacks)
        checked.unknown.extend(f"the {part.kind} layer {part.name}: {line}" for line in cannot)
        checked.covered.extend(f"{part.name}: {line}" for line in runs)
    return checked


def _check_status(name: str, entry: Mapping[str, Any]) -> None:
    status = entry.get("status")
    if status in ("failed", "skipped"):
        what = "failed to lock" if status == "failed" else "skipped"
        reason = entry.get("reason")
        raise NoCell(f"cell {name} {what}: {reason[:400] if isinstance(reason, str) and reason else 'no reason given'}")
    if status == "missing":
        raise NoCell(f"cell {name} has no lock yet; run `lockgen all` in the project")
    if status not in ("locked", "alias"):
        raise InputError(f"cells.{name}.status: {_show(status)} is not one of locked, alias, failed, skipped")


def _selection(facts: Facts, name: str, entry: Mapping[str, Any], reasons: list[str], checked: _Checked | None,
               skipped: list[str], manifest_dir: str | None) -> Selection:  # fmt: skip
    _check_status(name, entry)
    if not _PLAIN.fullmatch(name):
        raise InputError(f"cells.{name[:80]!r}: a cell name must be a plain name (letters, digits, '.', '_', '+', '-')")
    lock, layers = _lock_and_layers(name, entry, manifest_dir)
    requires = entry.get("requires") or {}
    pinned = requires.get("interpreter")
    if pinned is not None and pinned not in ARCHES:
        raise InputError(f"cells.{name}.requires.interpreter: {_show(pinned)} is not one of {', '.join(ARCHES)}")
    required = pinned or facts.arch
    alias = entry.get("alias_of")
    if alias is not None and not (isinstance(alias, str) and _PLAIN.fullmatch(alias)):
        raise InputError(f"cells.{name}.alias_of: must be a cell name")
    reasons = [*reasons] + ([f"reuses the lock of {alias}"] if alias else [])
    if required != facts.interpreter:
        rosetta = ": use an arm64 Python, not this one under Rosetta 2" if facts.rosetta else ""
        reasons.append(f"install with an {required} interpreter (this one is {facts.interpreter}){rosetta}")
    elif pinned:
        reasons.append(f"the install must use an {required} interpreter, as this one is")
    skipped_layers: list[dict[str, str]] = []
    if checked is None:
        coverage = ["not checked (--cell)"]
    elif not checked.recorded:
        coverage = ["not recorded in the manifest for this cell (no GPU wheels, or lockgen could not read them)"]
    else:
        coverage = checked.covered or ["no GPU of this machine needs the wheels' code"]
        coverage += [f"not read: {line}" for line in checked.unread]
        skipped_layers = checked.skipped_layers
        dropped = {layer["name"] for layer in skipped_layers}
        layers = [layer for layer in layers if layer["name"] not in dropped]
    reasons += [f"kernels: {line}" for line in coverage]
    reasons += [f"layer not installed on this machine: {layer['name']} ({layer['kind']}): {layer['reason']}"
                for layer in skipped_layers]  # fmt: skip
    return Selection(cell=name, os=facts.os, arch=facts.arch, backend=str(entry["backend"]), python=str(entry["python"]),
                     lock=lock, layers=layers, interpreter=required, reasons=reasons, facts=facts.to_dict(),
                     axes=dict(entry.get("axes") or {}), coverage=coverage, skipped=skipped,
                     skipped_layers=skipped_layers)  # fmt: skip


def _lock_and_layers(name: str, entry: Mapping[str, Any], manifest_dir: str | None) -> tuple[str, list[dict[str, Any]]]:
    """The entry's main lock and layers, their paths confined (issue 15): relative, plain names
    only (no ``..``, no absolute or drive path, no backslash), where the manifest format puts
    them: the main lock ``<folder>/<cell>.txt`` (the aliased cell's for an alias), the first
    layer that same file, every other layer ``<folder>/<cell>/<layer>.txt``, no file named by two
    layers; and (``manifest_dir`` given) ``<folder>`` must be the manifest's own folder, and
    every path must resolve inside it after symlinks."""
    lock, layers = entry.get("lock"), entry.get("layers")
    if not isinstance(lock, str) or not lock:
        raise InputError(f"cells.{name}.lock: must be the project-relative path of the lock")
    if not isinstance(layers, list) or len(layers) > 256:
        raise InputError(f"cells.{name}.layers: must be a list of objects with name, kind, lock")
    alias = entry.get("alias_of")
    owner = alias if isinstance(alias, str) and _PLAIN.fullmatch(alias) else name
    folder = _confined(lock, f"cells.{name}.lock", None, manifest_dir)
    if lock != f"{folder}/{owner}.txt":
        raise InputError(f"cells.{name}.lock: {_show(lock)} is not the cell's lock {folder}/{owner}.txt")
    seen: set[str] = set()
    for index, layer in enumerate(layers):
        if not isinstance(layer, Mapping) or not all(
            isinstance(layer.get(key), str) for key in ("name", "kind", "lock")
        ):
            raise InputError(f"cells.{name}.layers[{index}]: must be an object with the strings name, kind, lock")
        if not _PLAIN.fullmatch(layer["name"]) or ".." in layer["name"]:
            raise InputError(f"cells.{name}.layers[{index}].name: {_show(layer['name'])} is not a plain name")
        where = f"cells.{name}.layers[{index}].lock"
        _confined(layer["lock"], where, folder, manifest_dir)
        expected = lock if index == 0 else f"{folder}/{owner}/{layer['name']}.txt"
        if layer["lock"] != expected:
            raise InputError(f"{where}: {_show(layer['lock'])} is not where the manifest format puts it ({expected})")
        if layer["lock"] in seen:
            raise InputError(f"{where}: {_show(layer['lock'])} is named by another layer too")
        seen.add(layer["lock"])
    if entry.get("requires") is not None and not isinstance(entry["requires"], Mapping):
        raise InputError(f"cells.{name}.requires: must be an object")
    return lock, [dict(layer) for layer in layers]


def _confined(path: str, where: str, folder: str | None, manifest_dir: str | None) -> str:
    """The locks folder of ``path`` (its first components), after checking the path's shape;
    with ``manifest_dir``, that folder must be the manifest's (its last components) and the
    path must resolve inside it after symlinks, whatever the folder is called."""
    parts = path.split("/")
    bad = (len(path) > 1000 or "\\" in path or ":" in path or path.startswith("/") or len(parts) < 2
           or not all(_PLAIN.fullmatch(part) and part not in (".", "..") for part in parts) or not path.endswith(".txt"))  # fmt: skip
    if bad:
        raise InputError(f"{where}: {_show(path)} is not a lock path inside the locks folder "
                         "(relative, plain names, like locks/<cell>.txt)")  # fmt: skip
    if folder is None:
        folder = "/".join(parts[:-1])
    elif not path.startswith(folder + "/"):
        raise InputError(f"{where}: {_show(path)} is outside the cell's locks folder {folder}")
    if manifest_dir is not None:
        given = os.path.abspath(manifest_dir).replace("\\", "/").rstrip("/")
        depth = folder.count("/") + 1
        tail = given.split("/")[-depth:]
        if tail != folder.split("/"):
            raise InputError(f"{where}: {_show(path)} is not in the folder of the manifest ({given})")
        here = os.path.realpath(manifest_dir)
        real = os.path.realpath(os.path.join(here, *parts[depth:]))
        try:
            inside = os.path.commonpath([real, here]) == here and real != here
        except ValueError:  # another drive
            inside = False
        if not inside:
            raise InputError(f"{where}: {_show(path)} resolves outside the locks folder {here} (a symlink?)")
    return folder


def _major_minor(python: str) -> str:
    if not re.fullmatch(r"\d{1,2}\.\d{1,3}(\.\d{1,4})?", python.strip()):
        raise InputError(f"--python {python[:40]!r}: write the Python version like 3.12")
    return ".".join(python.strip().split(".")[:2])


def _python_key(python: str) -> tuple[int, ...]:
    return version_key(python) if _VERSION.fullmatch(python) else (sys.maxsize,)


# ---- command line ----------------------------------------------------------------------------


def _read_limited(path: str, what: str, it: str = "it") -> bytes:
    """At most :data:`MAX_BYTES` of the regular file ``path``: opened without blocking (a FIFO
    named as the manifest would otherwise wait for a writer for ever), checked with ``fstat`` to
    be a regular file (not a FIFO, a device or a folder) before it is read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(f"{what}: cannot read {it} ({exc.strerror or exc})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{what}: not a regular file (a FIFO, a device or a folder); refused unread")
        with os.fdopen(fd, "rb") as file:
            fd = -1  # closed by the file object from here
            data = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{what}: cannot read {it} ({exc.strerror or exc})") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_BYTES:
        raise InputError(f"{what}: larger than {MAX_BYTES // (1024 * 1024)} MiB")
    return data


def load_manifest(path: str) -> dict[str, Any]:
    """The manifest at ``path`` as a dict (:func:`loads_bounded`); :class:`InputError` naming the
    file when it is unreadable, over 64 MiB, not UTF-8 JSON, too deep or holds a number out of range."""
    data = _read_limited(path, path, "the manifest")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a JSON manifest (not UTF-8: {exc.reason} at byte {exc.start})") from None
    manifest = loads_bounded(text, path, "a JSON manifest")
    if not isinstance(manifest, dict):
        raise InputError(f"{path}: not a JSON manifest (expected an object)")
    return manifest


def read_gpu_query(path: str) -> str:
    """A saved ``nvidia-smi --query-gpu`` file's text, checked by :func:`parse_gpu_query` to have
    at least one GPU row; :class:`InputError` naming the file and the expected format."""
    expected = (f"expected the UTF-8 output of nvidia-smi --query-gpu={','.join(QUERY_FIELDS)} --format=csv,noheader: "
                f"one line per GPU with the columns {', '.join(QUERY_FIELDS)}, like {QUERY_EXAMPLE!r}")  # fmt: skip
    data = _read_limited(path, f"--gpu-query {path}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"--gpu-query {path}: not UTF-8 text; {expected}") from None
    try:
        if not parse_gpu_query(text):
            raise QueryError("no GPU rows")
    except QueryError as exc:
        raise InputError(f"--gpu-query {path}: {exc}; {expected}") from None
    return text


def parse_axis(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not _AXIS_NAME.fullmatch(name.strip()) or not _LABEL.fullmatch(value.strip()):
        raise argparse.ArgumentTypeError(f"{text[:60]!r}: write NAME=VALUE, like profile=legacy")
    return name.strip(), value.strip()


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The CLI's arguments (``python -m lockgen.cellselect -h``), added to ``parser`` if given
    (``lockgen detect`` takes the same ones, with the project's manifest)."""
    if parser is None:
        parser = argparse.ArgumentParser(description="Print the lock of the manifest's cell for this machine.")
        parser.add_argument(
            "--manifest", default="locks/manifest.json", help="lockgen's manifest (default: %(default)s)"
        )
    parser.add_argument("--json", action="store_true", help="print the choice as JSON")
    parser.add_argument("--cpu", action="store_true", help="without a supported GPU, use the no-gpu backend")
    parser.add_argument("--python", help="target Python X.Y (default: the matrix's only one, else this one's)")
    parser.add_argument("--cell", metavar="NAME", help="take this cell (the way past facts that cannot be known)")
    parser.add_argument("--axis", metavar="NAME=VALUE", action="append", type=parse_axis, default=[],
                        help="the value of an extra matrix axis (repeat for several axes)")  # fmt: skip
    pretend_ = parser.add_argument_group("pretend other facts (they replace the probed ones)")
    pretend_.add_argument("--os", choices=OSES)
    pretend_.add_argument("--arch", choices=ARCHES, help="host arch (also the interpreter's, unless --interpreter)")
    pretend_.add_argument("--interpreter", choices=ARCHES)
    pretend_.add_argument("--gpu", choices=GPU_KINDS)
    pretend_.add_argument("--cuda", metavar="X.Y", help="the NVIDIA driver's CUDA version (implies --gpu nvidia)")
    pretend_.add_argument("--gpu-query", metavar="FILE", help=f"saved nvidia-smi --query-gpu={','.join(QUERY_FIELDS)} "
                          "--format=csv,noheader output (implies --gpu nvidia)")  # fmt: skip
    pretend_.add_argument(
        "--gfx", metavar="LIST", help="AMD GPUs by gfx target, like gfx1100,gfx1036 (implies --gpu amd)"
    )
    return parser


def main(argv: Sequence[str] | None = None, *, run: Runner | None = None, env: Mapping[str, str] | None = None,
         sysfs: str | None = None) -> int:  # fmt: skip
    """Run the CLI: 0 with the choice on stdout, 2 with ``error: …`` on stderr (refused, no cell,
    bad input, usage), 130 on Ctrl-C; never a traceback. ``run``/``env``/``sysfs`` replace the
    program runner, the environment and the sysfs root (tests)."""
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
        return run_cli(args, run=run, env=env, sysfs=sysfs)
    except KeyboardInterrupt:
        return _emit(130, [], ["error: interrupted"])


def run_cli(
    args: argparse.Namespace,
    *,
    run: Runner | None = None,
    env: Mapping[str, str] | None = None,
    manifest: Mapping[str, Any] | None = None,
    sysfs: str | None = None,
) -> int:
    """Select and print (see :func:`main`); ``manifest`` instead of reading ``args.manifest``.
    Any error is ``error: …`` and exit 2: one this file did not expect says so (a bug to
    report), still without a traceback."""
    out: list[str] = []
    try:
        selection = _select(args, run, env, manifest, sysfs)
    except Refused as exc:
        return _emit(2, out, [f"error: {exc.message}", *(f"note: {note}" for note in exc.notes)])
    except SelectError as exc:
        return _emit(2, out, [f"error: {line}" for line in str(exc).splitlines()])
    except (RecursionError, MemoryError) as exc:
        return _emit(2, out, [f"error: the input is too large or too deeply nested ({type(exc).__name__})"])
    except Exception as exc:  # no traceback on any input (issue 19): say what happened and where to report it
        return _emit(2, out, [f"error: unexpected {type(exc).__name__} in cellselect.py: {str(exc)[:300]} "
                              "(a bug: please report it with the manifest and the command)"])  # fmt: skip
    if args.json:
        out.append(json.dumps(selection.to_dict(), indent=2))
    else:
        out += [f"{selection.cell}: {selection.lock}", *(f"  {reason}" for reason in selection.reasons)]
        out += [f"  passed over: {line}" for line in selection.skipped]
    return _emit(0, out, [])


def _emit(code: int, out: Sequence[str], err: Sequence[str]) -> int:
    """Print ``out`` and ``err`` lines and return ``code``. A reader that stops early
    (``cellselect.py | head -1``) is not an error: no ``BrokenPipeError`` traceback, the same exit
    code (the choice was made), and stdout pointed at the null device so that Python's final
    flush does not fail again (the recipe of the Python docs' ``signal`` page)."""
    try:
        for line in err:
            print(line, file=sys.stderr)
        for line in out:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):  # not a real file (tests capture stdout)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code


def _select(args: argparse.Namespace, run: Runner | None, env: Mapping[str, str] | None,
            given: Mapping[str, Any] | None = None, sysfs: str | None = None) -> Selection:  # fmt: skip
    manifest = given if given is not None else load_manifest(args.manifest)
    query = read_gpu_query(args.gpu_query) if args.gpu_query else None
    gfx = getattr(args, "gfx", None)
    pretended_gpu = args.gpu or args.cuda is not None or query is not None or gfx or args.os or args.arch
    facts = gather(env, run, probe_gpus=not pretended_gpu, sysfs=sysfs)
    facts = pretend(facts, os=args.os, arch=args.arch, interpreter=args.interpreter, gpu=args.gpu,
                    cuda=args.cuda, gpu_query=query, gfx=gfx)  # fmt: skip
    python = _major_minor(args.python) if args.python is not None else None
    axes = dict(getattr(args, "axis", None) or [])
    folder = os.path.dirname(os.path.abspath(args.manifest)) if given is None else None
    try:
        cell = getattr(args, "select_cell", None) or getattr(args, "cell", None)  # lockgen detect: --select-cell
        return select_cell(facts, manifest, python, args.cpu, cell=cell, axes=axes,
                           manifest_dir=folder)  # fmt: skip
    except InputError as exc:  # the manifest's fault: name the file
        where = getattr(args, "manifest", None) or "the project's manifest"
        raise InputError("\n".join(f"{where}: {line}" for line in str(exc).splitlines())) from None


if __name__ == "__main__":
    raise SystemExit(main())
