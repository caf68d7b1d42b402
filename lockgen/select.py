"""Pick this machine's lock from ``locks/manifest.json``: a portable, stdlib-only cell selector.

Installers vendor this one file (copy it, e.g. as ``lockgen_select.py``) or run it with a bare
Python: it imports nothing outside the standard library and nothing from the rest of lockgen.
Three parts, kept apart (docs/select.md describes them for reimplementers):

1. Facts. :func:`gather` runs ``nvidia-smi``, ``rocminfo`` and ``sysctl`` through an injectable
   runner and hands their text to pure parsers (``parse_*``, ``*_failure``) that are tested on
   recorded outputs (CASES C12-C16, C20, C21).
2. Rules. :class:`DetectRules` is the ``[detect]`` table (the seed's ``_cuda_flavor`` and
   ``build_spec`` as data); lockgen writes it into the manifest under ``"detect"``.
   :func:`choose_backend` applies it to the facts.
3. The cell. :func:`select_cell` picks (os, host arch, backend, python) from the manifest's cells.

CLI: ``python -m lockgen.select --manifest locks/manifest.json [--json] [--cpu] [--python X.Y]``
plus pretend flags; exit 0 with the choice, 2 for a refusal or bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "ARCHES", "DEFAULT_NO_GPU", "DEFAULT_REFUSE", "DEFAULT_TOO_OLD", "GPU_KINDS", "MANIFEST_FORMAT", "NOT_FOUND",
    "OSES", "QUERY_EXAMPLE", "QUERY_FIELDS", "TIMED_OUT", "TIMEOUT", "DetectRules", "Facts", "Gpu", "InputError",
    "NoCell", "NvidiaRule", "Problems", "QueryError", "Refused", "RulesError", "Runner", "SelectError", "Selection",
    "arches", "build_parser", "check_cuda", "choose_backend", "gather", "load_manifest", "mac_arches", "main",
    "manifest_rules", "normalize_arch", "nvidia_smi_failure", "parse_cuda_version", "parse_gpu_list",
    "parse_gpu_query", "parse_rocminfo", "parse_sysctl_flag", "pretend", "probe_amd", "probe_nvidia",
    "read_gpu_query", "rejected_query_field", "rocminfo_failure", "run_cli", "run_program", "select_cell",
    "version_key",
]  # fmt: skip

MANIFEST_FORMAT = 2  # the manifest format this selector reads
OSES = ("linux", "windows", "macos")
ARCHES = ("x86_64", "aarch64")
GPU_KINDS = ("nvidia", "amd", "apple", "none")
QUERY_FIELDS = ("name", "memory.total", "driver_version", "compute_cap")
QUERY_EXAMPLE = "NVIDIA GeForce RTX 4090, 24564 MiB, 550.54.14, 8.9"
TIMEOUT = 30.0  # seconds per probed program
NOT_FOUND, TIMED_OUT = 127, 124  # runner return codes for a missing program and a timeout

DEFAULT_TOO_OLD = "NVIDIA driver only supports CUDA {cuda}, which is too old; update the NVIDIA driver"
DEFAULT_NO_GPU = "no supported GPU detected; pass --cpu to use the CPU cell anyway"
DEFAULT_REFUSE = "this GPU is not supported with driver CUDA {cuda}; update the NVIDIA driver"

Runner = Callable[[Sequence[str]], tuple[int, str, str]]  # argv -> (returncode, stdout, stderr)


class SelectError(Exception):
    """Anything the CLI reports as ``error: …`` with exit code 2 (never a traceback)."""


class InputError(SelectError):
    """Bad input: an unreadable or invalid manifest, ``--gpu-query`` file, ``--cuda`` or ``--python``."""


class QueryError(InputError):
    """``nvidia-smi --query-gpu`` text that does not have the expected columns."""


class RulesError(InputError):
    """Invalid detect rules; ``problems`` lists every (key path, message), e.g.
    ``("detect.nvidia[1].min-cuda", "…")``."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
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
    """

    name: str
    memory: str = ""
    driver: str = ""
    compute_capability: float | None = None
    capability_reported: bool = True

    def describe(self) -> str:
        """``"NAME (compute capability 8.6)"``, ``[N/A]`` or ``not reported``."""
        if self.compute_capability is not None:
            return f"{self.name} (compute capability {self.compute_capability})"
        return f"{self.name} (compute capability {'[N/A]' if self.capability_reported else 'not reported'})"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "memory": self.memory, "driver": self.driver,
                "compute_capability": self.compute_capability, "capability_reported": self.capability_reported}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What was seen on this machine (or pretended).

    ``os``: linux | windows | macos; ``arch``: the host's arch and ``interpreter``: the running
    Python's (x86_64 | aarch64; they differ under Windows-on-ARM emulation, C15, and Rosetta);
    ``nvidia``: a usable NVIDIA GPU (``gpus`` lists them, ``cuda`` is the driver's CUDA version or
    None; an empty ``gpus`` only comes from pretending ``--cuda`` without ``--gpu-query``);
    ``amd_agents``: distinct gfx names from rocminfo; ``apple_silicon``; ``rosetta``: an x86_64
    Python translated on an arm64 Mac; ``notes``: what the probes saw, one line each.
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
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The raw facts as JSON-ready data (``gpus`` as a list of objects)."""
        return {"os": self.os, "arch": self.arch, "interpreter": self.interpreter,
                "gpus": [gpu.to_dict() for gpu in self.gpus], "cuda": self.cuda, "nvidia": self.nvidia,
                "amd_agents": list(self.amd_agents), "apple_silicon": self.apple_silicon,
                "rosetta": self.rosetta, "notes": list(self.notes)}  # fmt: skip


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
    "memory.total": re.compile(r"\d+ MiB|" + _BRACKET),
    "driver_version": re.compile(r"\d{3,}(?:\.\d+)+|" + _BRACKET),
    "compute_cap": re.compile(r"\d{1,2}\.\d{1,2}|" + _BRACKET),
}
_ARCH = {"amd64": "x86_64", "x86_64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
_VERSION = re.compile(r"\d+(?:\.\d+)*")


def parse_cuda_version(text: str) -> str | None:
    """The driver's CUDA version from ``nvidia-smi`` or ``nvidia-smi -q`` output, or None.

    Reads ``CUDA Version: 13.0``, ``CUDA UMD Version: 13.0`` (newer drivers, Windows) and the
    ``-q`` form ``CUDA Version : 13.0 [deprecated …]`` alike (C13); MIG tables do not matter.
    """
    match = _CUDA.search(text)
    return match.group(1) if match else None


def nvidia_smi_failure(returncode: int, stdout: str, stderr: str) -> str | None:
    """None when ``nvidia-smi`` ran; else a note saying why there is no usable NVIDIA GPU (C20).

    "No devices were found" (exit 6), "couldn't communicate with the NVIDIA driver" (exit 9),
    NVML initialisation errors and any other non-zero exit all mean no usable GPU: the no-GPU
    rule applies, never a CUDA cell.
    """
    text = f"{stdout}\n{stderr}"
    for needle in _NO_NVIDIA:
        if needle.lower() in text.lower():
            line = next(line for line in text.splitlines() if needle.lower() in line.lower())
            return f"nvidia-smi: {line.strip()} (exit {returncode}): no usable NVIDIA GPU"
    if returncode == NOT_FOUND:
        return "nvidia-smi: not found"
    if returncode != 0:
        return f"nvidia-smi: exit {returncode}: {_first_line(text) or 'no output'}: no usable NVIDIA GPU"
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
    order is an error, never misread.
    """
    gpus: list[Gpu] = []
    lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    for index, (number, line) in enumerate(lines):
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
            raise QueryError(f"line {number}: column {column} ({name}) is {value!r}, which is not a {name} value")
    cap = row.get("compute_cap")
    known = cap is not None and not cap.startswith("[")
    return Gpu(name=row.get("name", "NVIDIA GPU"), memory=row.get("memory.total", ""),
               driver=row.get("driver_version", ""), compute_capability=float(cap) if known and cap else None,
               capability_reported=known or cap == "[N/A]")  # fmt: skip


def parse_gpu_list(text: str) -> list[str]:
    """GPU names from ``nvidia-smi -L`` (``GPU 0: NAME (UUID: …)``); the indented ``MIG …
    Device N:`` lines under a GPU are slices of it, not extra GPUs."""
    return [
        m.group(1) for line in text.splitlines() if (m := _LISTED.fullmatch(line.strip())) and not line[:1].isspace()
    ]


def parse_rocminfo(text: str) -> tuple[str, ...]:
    """Distinct GPU agent names (``Name: gfx1100``) from ``rocminfo`` output, in order (C21).

    CPU agents and ISA names (``amdgcn-amd-amdhsa--gfx1100``) do not count; an agent listed twice
    is one entry.
    """
    return tuple(dict.fromkeys(_GFX.findall(text)))


def rocminfo_failure(returncode: int, stdout: str, stderr: str) -> str | None:
    """None when ``rocminfo`` ran; else a note: "ROCk module is NOT loaded", a missing program or
    another non-zero exit all mean no AMD GPU (C21)."""
    text = f"{stdout}\n{stderr}"
    if "rock module is not loaded" in text.lower():
        return f"rocminfo: {_first_line(text, 'NOT loaded')}: no AMD GPU"
    if returncode == NOT_FOUND:
        return "rocminfo: not found"
    if returncode != 0:
        return f"rocminfo: exit {returncode}: {_first_line(text) or 'no output'}: no AMD GPU"
    return None


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
    return lines[0] if lines else ""


# ---- running the programs -------------------------------------------------------------------


def run_program(argv: Sequence[str]) -> tuple[int, str, str]:
    """Run ``argv`` (no shell, ``TIMEOUT`` seconds): (returncode, stdout, stderr), decoded as UTF-8
    with replacement. A missing program gives ``NOT_FOUND`` (127), a timeout ``TIMED_OUT`` (124)."""
    import subprocess  # imported late: see _unshadow_stdlib

    try:
        done = subprocess.run(list(argv), capture_output=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return TIMED_OUT, "", f"{argv[0]}: timed out after {TIMEOUT:g} s"
    except OSError as exc:  # not found, not executable
        return NOT_FOUND, "", f"{argv[0]}: {exc}"
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def gather(env: Mapping[str, str] | None = None, run: Runner | None = None, *, system: str | None = None,
           machine: str | None = None, probe_gpus: bool = True) -> Facts:  # fmt: skip
    """This machine's :class:`Facts`. Never raises for missing programs, failures or timeouts.

    ``env`` defaults to ``os.environ``, ``run`` to :func:`run_program`, ``system`` to
    ``sys.platform``, ``machine`` to ``platform.machine()`` (tests pass canned ones). Runs
    ``nvidia-smi`` and (on Linux) ``rocminfo`` unless ``probe_gpus`` is False, and on macOS
    ``sysctl -n sysctl.proc_translated`` / ``hw.optional.arm64`` for Rosetta.
    """
    env = os.environ if env is None else env
    run = run_program if run is None else run
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
    nvidia, cuda, gpus, notes = probe_nvidia(run)
    agents: tuple[str, ...] = ()
    if os_name == "linux":
        agents, amd_notes = probe_amd(run)
        notes += amd_notes
    return replace(facts, nvidia=nvidia, cuda=cuda, gpus=gpus, amd_agents=agents, notes=tuple(notes))


def _sysctl_flags(machine: str, run: Runner) -> tuple[bool | None, bool | None]:
    if normalize_arch(machine) != "x86_64":
        return None, None
    flags = []
    for key in ("sysctl.proc_translated", "hw.optional.arm64"):
        code, out, _ = run(["sysctl", "-n", key])
        flags.append(parse_sysctl_flag(out) if code == 0 else None)
    return flags[0], flags[1]


def probe_nvidia(run: Runner) -> tuple[bool, str | None, tuple[Gpu, ...], list[str]]:
    """(usable, driver CUDA version, GPUs, notes) from ``nvidia-smi`` and its GPU query.

    A failing banner means no usable GPU (C20). A query that rejects a field is retried without
    it; a query that fails or prints something unexpected falls back to ``nvidia-smi -L`` names
    (or one placeholder GPU), all with capability "not reported", never an empty list.
    """
    code, out, err = run(["nvidia-smi"])
    failure = nvidia_smi_failure(code, out, err)
    if failure:
        return False, None, (), [failure]
    cuda = parse_cuda_version(out)
    notes = [] if cuda else ["nvidia-smi: no CUDA version in its banner"]
    gpus, query_notes = _query_gpus(run)
    return True, cuda, gpus, notes + query_notes


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
    names = (parse_gpu_list(out) if code == 0 else []) or ["NVIDIA GPU"]
    notes.append(f"nvidia-smi: compute capability not reported for {', '.join(names)}")
    return tuple(Gpu(name, capability_reported=False) for name in names), notes


def probe_amd(run: Runner) -> tuple[tuple[str, ...], list[str]]:
    """(distinct gfx agent names, notes) from ``rocminfo`` (C21)."""
    code, out, err = run(["rocminfo"])
    failure = rocminfo_failure(code, out, err)
    if failure:
        return (), [failure]
    agents = parse_rocminfo(out)
    return agents, [] if agents else ["rocminfo: no GPU agent (only CPU agents): no AMD GPU"]


# ---- rules as data ---------------------------------------------------------------------------

_RULES_KEYS = ("apple", "amd", "no-gpu", "no-gpu-refuse", "nvidia-unknown-cuda", "nvidia-too-old", "nvidia")
_NVIDIA_KEYS = ("match", "min-cuda", "backend", "refuse-compute-capability", "refuse")
_AXES = {"os": OSES, "arch": ARCHES}
Problems = list[tuple[str, str]]


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
class DetectRules:
    """The ``[detect]`` table: which backend a machine gets (the seed's ``_cuda_flavor`` and
    ``build_spec`` as data). ``no_gpu`` is one backend or one per OS; messages may hold ``{cuda}``."""

    nvidia: tuple[NvidiaRule, ...] = ()
    nvidia_unknown_cuda: str | None = None
    nvidia_too_old: str = DEFAULT_TOO_OLD
    apple: str | None = None
    amd: str | None = None
    no_gpu: str | dict[str, str] | None = None
    no_gpu_refuse: str = DEFAULT_NO_GPU

    @classmethod
    def from_dict(cls, data: Any, path: str = "detect") -> DetectRules:
        """Validate the kebab-case table (as TOML or the manifest's ``"detect"`` holds it).

        Raises :class:`RulesError` with every problem and its key path
        (``detect.nvidia[1].min-cuda``): unknown keys, wrong types, versions that are not
        strings like "12.6", match axes other than os/arch or values outside
        linux|windows|macos / x86_64|aarch64, ``refuse`` without ``refuse-compute-capability``.
        """
        problems: Problems = []
        if not isinstance(data, Mapping):
            raise RulesError([(path, "must be a table")])
        _unknown_keys(data, _RULES_KEYS, path, problems)
        texts = ("apple", "amd", "nvidia-unknown-cuda", "nvidia-too-old", "no-gpu-refuse")
        text = {key: _text(data, key, path, problems) for key in texts}
        rules = cls(nvidia=_nvidia_rules(data.get("nvidia", []), f"{path}.nvidia", problems),
                    nvidia_unknown_cuda=text["nvidia-unknown-cuda"], apple=text["apple"], amd=text["amd"],
                    nvidia_too_old=text["nvidia-too-old"] or DEFAULT_TOO_OLD,
                    no_gpu=_no_gpu(data.get("no-gpu"), f"{path}.no-gpu", problems),
                    no_gpu_refuse=text["no-gpu-refuse"] or DEFAULT_NO_GPU)  # fmt: skip
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
        if self.no_gpu is not None:
            data["no-gpu"] = self.no_gpu if isinstance(self.no_gpu, str) else dict(sorted(self.no_gpu.items()))
        data["no-gpu-refuse"] = self.no_gpu_refuse
        data["nvidia-too-old"] = self.nvidia_too_old
        data["nvidia"] = [rule.to_dict() for rule in self.nvidia]
        return data

    def no_gpu_backend(self, os_name: str) -> str | None:
        """The ``no-gpu`` backend for ``os_name`` (one for all, or the per-OS table's entry)."""
        return self.no_gpu if isinstance(self.no_gpu, str) or self.no_gpu is None else self.no_gpu.get(os_name)


def _unknown_keys(data: Mapping[Any, Any], known: Sequence[str], path: str, problems: Problems) -> None:
    for key in data:
        if key not in known:
            problems.append((f"{path}.{key}", f"unknown key; expected one of: {', '.join(sorted(known))}"))


def _text(data: Mapping[Any, Any], key: str, path: str, problems: Problems, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append((f"{path}.{key}", "missing" if value is None else f"must be a non-empty string, not {value!r}"))
        return None
    return value


def _nvidia_rules(data: Any, path: str, problems: Problems) -> tuple[NvidiaRule, ...]:
    if not isinstance(data, list):
        problems.append((path, "must be a list of tables ([[detect.nvidia]])"))
        return ()
    rules = (_nvidia_rule(item, f"{path}[{index}]", problems) for index, item in enumerate(data))
    return tuple(rule for rule in rules if rule is not None)


def _nvidia_rule(data: Any, path: str, problems: Problems) -> NvidiaRule | None:
    if not isinstance(data, Mapping):
        problems.append((path, "must be a table"))
        return None
    before = len(problems)
    _unknown_keys(data, _NVIDIA_KEYS, path, problems)
    backend = _text(data, "backend", path, problems, required=True)
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


def _version_text(value: Any, path: str, problems: Problems) -> str | None:
    if value is None:
        problems.append((path, 'missing; write the lowest driver CUDA version as a string, like "12.6"'))
    elif not isinstance(value, str):
        problems.append((path, f'must be a string like "12.6", not {value!r} (a number loses zeros: 12.10 reads 12.1)'))
    elif not _VERSION.fullmatch(value):
        problems.append((path, f'{value!r} is not a version like "12.6"'))
    else:
        return value
    return None


def _match(data: Any, path: str, problems: Problems) -> dict[str, tuple[str, ...]]:
    if not isinstance(data, Mapping):
        problems.append((path, 'must be a table like { os = "windows", arch = "aarch64" }'))
        return {}
    _unknown_keys(data, tuple(_AXES), path, problems)
    match = {}
    for axis, allowed in _AXES.items():
        if axis not in data:
            continue
        values = [data[axis]] if isinstance(data[axis], str) else data[axis]
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            problems.append((f"{path}.{axis}", f"must be a string or a non-empty list of strings, not {data[axis]!r}"))
            continue
        for value in values:
            if value not in allowed:
                problems.append((f"{path}.{axis}", f"{value!r} is not one of: {', '.join(allowed)}"))
        match[axis] = tuple(sorted(set(values)))
    return match


def _capability(value: Any, path: str, problems: Problems) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        problems.append((path, f"must be a compute capability like 12.0, not {value!r}"))
        return None
    return float(value)


def _no_gpu(value: Any, path: str, problems: Problems) -> str | dict[str, str] | None:
    if value is None or (isinstance(value, str) and value.strip()):
        return value
    if not isinstance(value, Mapping):
        problems.append((path, f'must be a backend ("cpu") or a table per os ({{ linux = "cpu" }}), not {value!r}'))
        return None
    _unknown_keys(value, OSES, path, problems)
    table = {key: backend for key in OSES if (backend := _text(value, key, path, problems)) is not None}
    if not table and not any(key not in OSES for key in value):
        problems.append((path, "the table names no os (linux, windows, macos)"))
    return table


# ---- the decision ----------------------------------------------------------------------------


def choose_backend(facts: Facts, rules: DetectRules, allow_cpu: bool = False) -> tuple[str, list[str]]:
    """(backend, reasons) for ``facts`` by ``rules``; raises :class:`Refused` with the configured text.

    In order (the seed's ``build_spec``): Apple silicon -> ``apple`` (an x86_64 Python under
    Rosetta still gets the arm64 cell); a usable NVIDIA GPU -> the NVIDIA rules (see
    :func:`_choose_nvidia`); an AMD GPU agent -> ``amd``; otherwise the no-GPU rule: with
    ``allow_cpu`` the ``no-gpu`` backend for the machine's os, else refused with ``no-gpu-refuse``
    (C20, C21). A GPU kind the rules name no backend for counts as no GPU.
    """
    if facts.apple_silicon and rules.apple:
        rosetta = " (this Python is x86_64 under Rosetta 2; the arm64 cell is chosen)" if facts.rosetta else ""
        return rules.apple, [f"Apple silicon{rosetta}: {rules.apple} (detect.apple)"]
    if facts.nvidia and (rules.nvidia or rules.nvidia_unknown_cuda):
        return _choose_nvidia(facts, rules)
    if facts.amd_agents and rules.amd:
        return rules.amd, [f"AMD GPU ({', '.join(facts.amd_agents)}): {rules.amd} (detect.amd)"]
    return _choose_no_gpu(facts, rules, allow_cpu)


def _choose_nvidia(facts: Facts, rules: DetectRules) -> tuple[str, list[str]]:
    """The seed's ``_cuda_flavor``: an unknown CUDA version -> ``nvidia-unknown-cuda``; else the
    first rule whose match fits (os, host arch) and whose ``min-cuda`` the driver reaches (numeric
    comparison), subject to its capability refusal; no such rule -> ``nvidia-too-old`` (C16),
    with notes saying what was seen: the GPUs, the driver's CUDA version, each rule's minimum."""
    seen = ", ".join(gpu.describe() for gpu in facts.gpus) or "no GPU list (pretended)"
    notes = _notes(facts, "nvidia-smi:")
    reasons = [f"NVIDIA GPU: {seen}", *notes]
    if facts.cuda is None:
        unknown = "driver CUDA version unknown"
        if _notes(facts, "pretended:"):  # --gpu nvidia or --gpu-query without --cuda: nothing ran nvidia-smi
            unknown += " (pretended without --cuda: pass --cuda X.Y with --gpu-query to check the driver)"
        if rules.nvidia_unknown_cuda is None:
            raise Refused("the NVIDIA driver's CUDA version could not be read, and the detect rules name no "
                          "nvidia-unknown-cuda backend", [*reasons, unknown])  # fmt: skip
        backend = rules.nvidia_unknown_cuda
        return backend, [*reasons, f"{unknown}: {backend} (detect.nvidia-unknown-cuda)"]
    for index, rule in enumerate(rules.nvidia):
        if rule.fits(facts.os, facts.arch) and version_key(facts.cuda) >= version_key(rule.min_cuda):
            where = f"detect.nvidia[{index}]"
            reasons.append(f"driver CUDA {facts.cuda} >= {rule.min_cuda}: {rule.backend} ({where})")
            return rule.backend, reasons + _check_capability(facts, rule, where)
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


def _choose_no_gpu(facts: Facts, rules: DetectRules, allow_cpu: bool) -> tuple[str, list[str]]:
    why = "no GPU the detect rules support" + (f" ({'; '.join(facts.notes)})" if facts.notes else "")
    if facts.nvidia or facts.amd_agents or facts.apple_silicon:
        kinds = [kind for kind, seen in (("NVIDIA", facts.nvidia), ("AMD", facts.amd_agents),
                                          ("Apple silicon", facts.apple_silicon)) if seen]  # fmt: skip
        why = f"{' and '.join(kinds)} found, but the detect rules name no backend for it"
    if not allow_cpu:
        raise Refused(rules.no_gpu_refuse, [why])
    backend = rules.no_gpu_backend(facts.os)
    if backend is None:
        raise Refused(f"--cpu: the detect rules name no no-gpu backend for {facts.os}", [why])
    return backend, [why, f"--cpu: {backend} (detect.no-gpu)"]


def _notes(facts: Facts, source: str) -> list[str]:
    """The notes of one source: every note starts with ``nvidia-smi:``, ``rocminfo:``, ``sysctl:``
    or ``pretended:``."""
    return [note for note in facts.notes if note.startswith(source)]


def check_cuda(cuda: str) -> str:
    """``cuda`` if it is a version like 13.0; else :class:`InputError` (for ``--cuda``)."""
    if not _VERSION.fullmatch(cuda.strip()):
        raise InputError(f"--cuda {cuda!r}: write the driver's CUDA version like 13.0")
    return cuda.strip()


def pretend(facts: Facts, *, os: str | None = None, arch: str | None = None, interpreter: str | None = None,
            gpu: str | None = None, cuda: str | None = None, gpu_query: str | None = None) -> Facts:  # fmt: skip
    """``facts`` with command-line facts in place of probed ones (``lockgen detect``'s pretend).

    ``cuda``/``gpu_query`` (query text) imply ``gpu="nvidia"``; a pretended os/arch without
    ``gpu`` drops the probed GPU (Apple silicon for macOS aarch64); ``arch`` without
    ``interpreter`` sets both. Raises :class:`InputError` for a bad ``cuda`` or ``gpu``, for
    ``cuda``/``gpu_query`` with another ``gpu`` than nvidia (a contradiction), and
    :class:`QueryError` for query text without GPU rows in the expected columns.
    """
    cuda = check_cuda(cuda) if cuda is not None else None
    if gpu not in (None, "nvidia") and (cuda is not None or gpu_query is not None):
        flag = "--cuda" if cuda is not None else "--gpu-query"
        raise InputError(f"--gpu {gpu} with {flag}: {flag} describes an NVIDIA GPU; drop one of them")
    gpus = tuple(parse_gpu_query(gpu_query)) if gpu_query is not None else None
    if gpus == ():
        raise QueryError("no GPU rows")
    given = {"os": os, "arch": arch, "interpreter": interpreter, "gpu": gpu, "cuda": cuda}
    said = " ".join(f"--{key} {value}" for key, value in given.items() if value) + (" --gpu-query" if gpus else "")
    if gpu is None and (cuda is not None or gpus is not None):
        gpu = "nvidia"
    new = replace(
        facts, os=os or facts.os, arch=arch or facts.arch, interpreter=interpreter or arch or facts.interpreter
    )
    if gpu is None and (os or arch):
        gpu = "apple" if (new.os, new.arch) == ("macos", "aarch64") else "none"
    if gpu is not None:
        new = _pretend_gpu(new, gpu, cuda, gpus)
    rosetta = (new.os, new.arch, new.interpreter) == ("macos", "aarch64", "x86_64")
    return replace(new, rosetta=rosetta, notes=(*new.notes, f"pretended: {said}") if said else new.notes)


def _pretend_gpu(facts: Facts, gpu: str, cuda: str | None, gpus: tuple[Gpu, ...] | None) -> Facts:
    if gpu not in GPU_KINDS:
        raise InputError(f"--gpu {gpu!r}: expected one of {', '.join(GPU_KINDS)}")
    if gpu == "nvidia":
        return replace(facts, nvidia=True, amd_agents=(), apple_silicon=False,
                       cuda=cuda if cuda is not None else facts.cuda if facts.nvidia else None,
                       gpus=gpus if gpus is not None else facts.gpus if facts.nvidia else ())  # fmt: skip
    agents = (facts.amd_agents or ("pretended",)) if gpu == "amd" else ()
    return replace(facts, nvidia=False, cuda=None, gpus=(), amd_agents=agents, apple_silicon=gpu == "apple")


# ---- the cell --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Selection:
    """The chosen cell. ``lock``: project-relative main lock path; ``layers``: the manifest
    entry's layer objects (``name``, ``kind`` main|optional|no-deps|unhashed, ``lock``, …) in install
    order; ``interpreter``: the arch the install's Python must have; ``facts``: the raw facts."""

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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field (``--json`` prints it)."""
        return {"cell": self.cell, "os": self.os, "arch": self.arch, "backend": self.backend,
                "python": self.python, "lock": self.lock, "layers": self.layers,
                "interpreter": self.interpreter, "reasons": self.reasons, "facts": self.facts}  # fmt: skip


def manifest_rules(manifest: Mapping[str, Any]) -> DetectRules:
    """The manifest's detect rules, after checking its ``format`` is :data:`MANIFEST_FORMAT`.

    Raises :class:`InputError` (an unknown format, no ``"detect"``) or :class:`RulesError`.
    """
    fmt = manifest.get("format")
    if isinstance(fmt, bool) or not isinstance(fmt, int):
        raise InputError(f'no integer "format" (expected {MANIFEST_FORMAT}); is this a lockgen manifest?')
    if fmt != MANIFEST_FORMAT:
        fix = "rewrite it with a newer lockgen (lockgen all)" if fmt < MANIFEST_FORMAT else "use a newer select.py"
        raise InputError(
            f"manifest format {fmt} is not supported (this selector reads format {MANIFEST_FORMAT}); {fix}"
        )
    if manifest.get("detect") is None:
        raise InputError(
            "the manifest has no detect rules; add a [tool.lockgen.detect] table to pyproject.toml ([detect] in a lockgen.toml), then run lockgen all"
        )
    return DetectRules.from_dict(manifest["detect"], "detect")


def select_cell(facts: Facts, manifest: Mapping[str, Any], python: str | None = None,
                allow_cpu: bool = False) -> Selection:  # fmt: skip
    """The manifest's cell for this machine: (os, host arch, backend by the rules, python).

    ``python``: given (X.Y), else the only one the matrix has for that (os, arch, backend), else
    the running interpreter's. Raises :class:`Refused` (the rules), :class:`NoCell` (no such
    cell, another Python, status failed/skipped), :class:`InputError`/:class:`RulesError` (a bad
    manifest). Reads ``format``, ``detect`` and per cell ``os``, ``arch``, ``backend``,
    ``python``, ``status``, ``reason``, ``lock``, ``layers``, ``requires.interpreter``, ``alias_of``.
    """
    rules = manifest_rules(manifest)
    cells = manifest.get("cells")
    if not isinstance(cells, Mapping) or not all(isinstance(entry, Mapping) for entry in cells.values()):
        raise InputError('"cells" must be an object of cell name -> object')
    backend, reasons = choose_backend(facts, rules, allow_cpu)
    name, entry, why = _find_cell(cells, facts, backend, python)
    lock, layers = _lock_and_layers(name, entry)
    pinned = (entry.get("requires") or {}).get("interpreter")
    required = pinned or facts.arch
    reasons += [why] + ([f"reuses the lock of {entry['alias_of']}"] if entry.get("alias_of") else [])
    if required != facts.interpreter:
        rosetta = ": use an arm64 Python, not this one under Rosetta 2" if facts.rosetta else ""
        reasons.append(f"install with an {required} interpreter (this one is {facts.interpreter}){rosetta}")
    elif pinned:
        reasons.append(f"the install must use an {required} interpreter, as this one is")
    return Selection(cell=name, os=facts.os, arch=facts.arch, backend=backend, python=str(entry["python"]),
                     lock=lock, layers=layers, interpreter=required, reasons=reasons, facts=facts.to_dict())  # fmt: skip


def _find_cell(cells: Mapping[str, Any], facts: Facts, backend: str,
               python: str | None) -> tuple[str, Mapping[str, Any], str]:  # fmt: skip
    where = f"{facts.os} {facts.arch} {backend}"
    found = {name: entry for name, entry in cells.items()
             if (entry.get("os"), entry.get("arch"), entry.get("backend")) == (facts.os, facts.arch, backend)}  # fmt: skip
    if not found:
        raise NoCell(f"the manifest has no cell for {where}")
    pythons = sorted({str(entry.get("python")) for entry in found.values()}, key=_python_key)
    if python is not None:
        python, why = _major_minor(python), "Python {} (--python)"
    elif len(pythons) == 1:
        python, why = pythons[0], "Python {}: the only one the matrix has for " + where
    else:
        python, why = "{}.{}".format(*sys.version_info[:2]), "Python {}: the running interpreter's"
    names = [name for name, entry in found.items() if str(entry.get("python")) == python]
    if not names:
        raise NoCell(f"the matrix has no {where} cell for Python {python}; it has {', '.join(pythons)}: pass --python")
    if len(names) > 1:
        raise InputError(f"cells {', '.join(names)} are all {where} Python {python}")
    entry = found[names[0]]
    status = entry.get("status")
    if status in ("failed", "skipped"):
        what = "failed to lock" if status == "failed" else "skipped"
        raise NoCell(f"cell {names[0]} {what}: {entry.get('reason') or 'no reason given'}")
    if status == "missing":
        raise NoCell(f"cell {names[0]} has no lock yet; run `lockgen all` in the project")
    if status not in ("locked", "alias"):
        raise InputError(f"cells.{names[0]}.status: {status!r} is not one of locked, alias, failed, skipped")
    return names[0], entry, why.format(python)


def _lock_and_layers(name: str, entry: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    lock, layers = entry.get("lock"), entry.get("layers")
    if not isinstance(lock, str) or not lock:
        raise InputError(f"cells.{name}.lock: must be the project-relative path of the lock")
    if not isinstance(layers, list):
        raise InputError(f"cells.{name}.layers: must be a list of objects with name, kind, lock")
    for index, layer in enumerate(layers):
        if not isinstance(layer, Mapping) or not all(
            isinstance(layer.get(key), str) for key in ("name", "kind", "lock")
        ):
            raise InputError(f"cells.{name}.layers[{index}]: must be an object with the strings name, kind, lock")
    if entry.get("requires") is not None and not isinstance(entry["requires"], Mapping):
        raise InputError(f"cells.{name}.requires: must be an object")
    return lock, [dict(layer) for layer in layers]


def _major_minor(python: str) -> str:
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", python.strip()):
        raise InputError(f"--python {python!r}: write the Python version like 3.12")
    return ".".join(python.strip().split(".")[:2])


def _python_key(python: str) -> tuple[int, ...]:
    return version_key(python) if _VERSION.fullmatch(python) else (sys.maxsize,)


# ---- command line ----------------------------------------------------------------------------


def load_manifest(path: str) -> dict[str, Any]:
    """The manifest at ``path`` as a dict; :class:`InputError` naming the file when unreadable."""
    try:
        with open(path, encoding="utf-8-sig") as file:
            data = json.load(file)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the manifest ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a JSON manifest ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a JSON manifest (expected an object)")
    return data


def read_gpu_query(path: str) -> str:
    """A saved ``nvidia-smi --query-gpu`` file's text, checked by :func:`parse_gpu_query` to have
    at least one GPU row; :class:`InputError` naming the file and the expected format."""
    expected = (f"expected the UTF-8 output of nvidia-smi --query-gpu={','.join(QUERY_FIELDS)} --format=csv,noheader: "
                f"one line per GPU with the columns {', '.join(QUERY_FIELDS)}, like {QUERY_EXAMPLE!r}")  # fmt: skip
    try:
        with open(path, encoding="utf-8-sig") as file:
            text = file.read()
    except OSError as exc:
        raise InputError(f"--gpu-query {path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InputError(f"--gpu-query {path}: not UTF-8 text; {expected}") from None
    try:
        if not parse_gpu_query(text):
            raise QueryError("no GPU rows")
    except QueryError as exc:
        raise InputError(f"--gpu-query {path}: {exc}; {expected}") from None
    return text


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The CLI's arguments (``python -m lockgen.select -h``), added to ``parser`` if given
    (``lockgen detect`` takes the same ones, with the project's manifest)."""
    if parser is None:
        parser = argparse.ArgumentParser(description="Print the lock of the manifest's cell for this machine.")
        parser.add_argument(
            "--manifest", default="locks/manifest.json", help="lockgen's manifest (default: %(default)s)"
        )
    parser.add_argument("--json", action="store_true", help="print the choice as JSON")
    parser.add_argument("--cpu", action="store_true", help="without a supported GPU, use the no-gpu backend")
    parser.add_argument("--python", help="target Python X.Y (default: the matrix's only one, else this one's)")
    pretend_ = parser.add_argument_group("pretend other facts (they replace the probed ones)")
    pretend_.add_argument("--os", choices=OSES)
    pretend_.add_argument("--arch", choices=ARCHES, help="host arch (also the interpreter's, unless --interpreter)")
    pretend_.add_argument("--interpreter", choices=ARCHES)
    pretend_.add_argument("--gpu", choices=GPU_KINDS)
    pretend_.add_argument("--cuda", metavar="X.Y", help="the NVIDIA driver's CUDA version (implies --gpu nvidia)")
    pretend_.add_argument("--gpu-query", metavar="FILE", help=f"saved nvidia-smi --query-gpu={','.join(QUERY_FIELDS)} "
                          "--format=csv,noheader output (implies --gpu nvidia)")  # fmt: skip
    return parser


def main(argv: Sequence[str] | None = None, *, run: Runner | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run the CLI: 0 with the choice on stdout, 2 with ``error: …`` on stderr (refused, no cell,
    bad input, usage). ``run``/``env`` replace the program runner and environment (tests)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    return run_cli(args, run=run, env=env)


def run_cli(
    args: argparse.Namespace,
    *,
    run: Runner | None = None,
    env: Mapping[str, str] | None = None,
    manifest: Mapping[str, Any] | None = None,
) -> int:
    """Select and print (see :func:`main`); ``manifest`` instead of reading ``args.manifest``."""
    out: list[str] = []
    try:
        selection = _select(args, run, env, manifest)
    except Refused as exc:
        return _emit(2, out, [f"error: {exc.message}", *(f"note: {note}" for note in exc.notes)])
    except SelectError as exc:
        return _emit(2, out, [f"error: {line}" for line in str(exc).splitlines()])
    if args.json:
        out.append(json.dumps(selection.to_dict(), indent=2))
    else:
        out += [f"{selection.cell}: {selection.lock}", *(f"  {reason}" for reason in selection.reasons)]
    return _emit(0, out, [])


def _emit(code: int, out: Sequence[str], err: Sequence[str]) -> int:
    """Print ``out`` and ``err`` lines and return ``code``. A reader that stops early
    (``select.py | head -1``) is not an error: no ``BrokenPipeError`` traceback, the same exit
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


def _select(
    args: argparse.Namespace, run: Runner | None, env: Mapping[str, str] | None, given: Mapping[str, Any] | None = None
) -> Selection:
    manifest = given if given is not None else load_manifest(args.manifest)
    query = read_gpu_query(args.gpu_query) if args.gpu_query else None
    pretended_gpu = args.gpu or args.cuda is not None or query is not None or args.os or args.arch
    facts = gather(env, run, probe_gpus=not pretended_gpu)
    facts = pretend(facts, os=args.os, arch=args.arch, interpreter=args.interpreter, gpu=args.gpu,
                    cuda=args.cuda, gpu_query=query)  # fmt: skip
    python = _major_minor(args.python) if args.python is not None else None
    try:
        return select_cell(facts, manifest, python, args.cpu)
    except InputError as exc:  # the manifest's fault: name the file
        where = getattr(args, "manifest", None) or "the project's manifest"
        raise InputError("\n".join(f"{where}: {line}" for line in str(exc).splitlines())) from None


def _unshadow_stdlib() -> None:
    """Run as ``python select.py``, this file's folder is first on ``sys.path`` and its name would
    shadow the stdlib ``select`` that ``subprocess`` imports: drop that entry before any probe."""
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]


if __name__ == "__main__":
    _unshadow_stdlib()
    raise SystemExit(main())
