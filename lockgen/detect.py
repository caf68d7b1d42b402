"""``lockgen detect``: which cell fits this machine, by the rules of ``[tool.lockgen.detect]``.

Parsing is kept apart from running programs (as packaging does for musl): the parse functions
take the text ``nvidia-smi`` prints and are tested on recorded samples (CASES C12-C16). The
seed's rules become config: ordered ``nvidia`` rules (the first whose ``match`` fits the machine
and whose ``min-cuda`` the driver reaches wins; it may refuse when any GPU has a compute
capability at or above ``refuse-compute-capability``), a backend for an unknown CUDA version, a
refusal when the driver is too old, and backends for Apple silicon, AMD and no GPU (``--cpu``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lockgen.config import selector_matches
from lockgen.errors import LockgenError

_ARCH = {"amd64": "x86_64", "x86_64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}


class Refused(LockgenError):
    """The machine is not supported as it is (an old driver, a GPU the driver cannot run)."""


@dataclass(frozen=True)
class Gpu:
    name: str
    memory: str
    driver: str
    compute_capability: float | None  # None: nvidia-smi printed [N/A] (C14)


@dataclass(frozen=True, kw_only=True)
class Machine:
    os: str  # linux | windows | macos
    arch: str  # the host's arch
    interpreter: str  # the running interpreter's arch (x86_64 under emulation on Windows ARM)
    gpu: str = "none"  # nvidia | amd | apple | none
    cuda: str | None = None  # the driver's CUDA version
    gpus: tuple[Gpu, ...] = ()


@dataclass(frozen=True, kw_only=True)
class NvidiaRule:
    min_cuda: str
    backend: str
    match: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    refuse_compute_capability: float | None = None
    refuse: str | None = None


@dataclass(frozen=True, kw_only=True)
class DetectConfig:
    nvidia: tuple[NvidiaRule, ...] = ()
    nvidia_unknown_cuda: str | None = None
    nvidia_too_old: str = "NVIDIA driver only supports CUDA {cuda}, which is too old; update the NVIDIA driver"
    apple: str | None = None
    amd: str | None = None
    no_gpu: str | None = None
    no_gpu_refuse: str = "no supported GPU detected; pass --cpu to use the CPU cell anyway"


def parse_gpu_query(text: str) -> list[Gpu]:
    """Rows of ``nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap
    --format=csv,noheader``: every GPU (C12); ``[N/A]`` capability is unknown (C14)."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4:
            continue
        try:
            capability = float(parts[3])
        except ValueError:
            capability = None
        gpus.append(Gpu(parts[0], parts[1], parts[2], capability))
    return gpus


_CUDA = re.compile(r"CUDA(?: UMD)? Version\s*:\s*(\d+\.\d+)")


def parse_cuda_version(text: str) -> str | None:
    """The driver's CUDA version from ``nvidia-smi`` or ``nvidia-smi -q``: ``CUDA Version: 13.0``,
    ``CUDA UMD Version: 13.0`` (newer drivers), with or without a bracketed note after it (C13)."""
    match = _CUDA.search(text)
    return match.group(1) if match else None


def arches(machine: str, env: Mapping[str, str]) -> tuple[str, str]:
    """(host arch, interpreter arch). On Windows an x64 interpreter on an ARM64 host sees
    ``AMD64``; the host shows in ``PROCESSOR_ARCHITEW6432`` or ``PROCESSOR_IDENTIFIER`` (C15)."""
    interpreter = _ARCH.get(machine.lower(), machine.lower())
    host = env.get("PROCESSOR_ARCHITEW6432") or ("ARM64" if "ARMv8" in env.get("PROCESSOR_IDENTIFIER", "") else "")
    return _ARCH.get(host.lower(), interpreter) if host else interpreter, interpreter


def _version(text: str):
    """A CUDA version as a PEP 440 version, so "13" equals "13.0"."""
    from packaging.version import Version

    return Version(text)


def choose(machine: Machine, config: DetectConfig, allow_cpu: bool = False) -> tuple[str, str]:
    """The backend for ``machine`` and why. Raises :class:`Refused` with the config's message."""
    if machine.gpu == "apple" and config.apple:
        return config.apple, "Apple silicon"
    if machine.gpu == "amd" and config.amd:
        return config.amd, "AMD GPU"
    if machine.gpu == "nvidia":
        if machine.cuda is None and config.nvidia_unknown_cuda:
            return config.nvidia_unknown_cuda, "NVIDIA driver with an unknown CUDA version"
        cuda = _version(machine.cuda or "0.0")
        caps = [g.compute_capability for g in machine.gpus if g.compute_capability is not None]
        for rule in config.nvidia:
            if not selector_matches(rule.match, {"os": machine.os, "arch": machine.arch}) or cuda < _version(rule.min_cuda):
                continue
            if rule.refuse_compute_capability is not None and any(c >= rule.refuse_compute_capability for c in caps):
                raise Refused((rule.refuse or "this GPU is not supported with driver CUDA {cuda}").format(cuda=machine.cuda))
            return rule.backend, f"NVIDIA driver CUDA {machine.cuda} >= {rule.min_cuda}"
        raise Refused(config.nvidia_too_old.format(cuda=machine.cuda))
    if allow_cpu:
        if not config.no_gpu:
            raise Refused("no GPU, and the detect rules name no `no-gpu` backend for --cpu")
        return config.no_gpu, "no GPU; --cpu"
    raise Refused(config.no_gpu_refuse)


def pick_cell(cells: Sequence, machine: Machine, backend: str, python: str):
    """The matrix cell for (os, host arch, backend, python), or None."""
    for cell in cells:
        if (cell.os, cell.arch, cell.backend, cell.python) == (machine.os, machine.arch, backend, python):
            return cell
    return None


def pretend(machine: Machine, *, os=None, arch=None, interpreter=None, gpu=None, cuda=None, gpu_query=None) -> Machine:
    """``machine`` with the facts given on the command line in place of the probed ones.

    ``cuda``/``gpu_query`` imply an NVIDIA GPU; a pretended os/arch without ``gpu`` drops this
    host's GPU (Apple silicon for macOS aarch64); ``arch`` without ``interpreter`` sets both.
    Raises :class:`~lockgen.errors.UsageError` for a ``cuda`` that is not a version.
    """
    import dataclasses

    from packaging.version import InvalidVersion

    from lockgen.errors import UsageError

    if cuda is not None:
        try:
            _version(cuda)
        except InvalidVersion:
            raise UsageError(f"--cuda {cuda!r}: write the driver's CUDA version like 13.0") from None
    facts = {k: v for k, v in {"os": os, "arch": arch, "interpreter": interpreter or arch, "gpu": gpu, "cuda": cuda}.items() if v}
    if gpu_query is not None:
        facts["gpus"] = tuple(parse_gpu_query(gpu_query))
    if gpu is None and (cuda or gpu_query is not None):
        facts["gpu"] = "nvidia"
    machine = dataclasses.replace(machine, **facts)
    if "gpu" not in facts and (os or arch):
        apple = machine.os == "macos" and machine.arch == "aarch64"
        machine = dataclasses.replace(machine, gpu="apple" if apple else "none")
    return machine


def probe(env: Mapping[str, str]) -> Machine:
    """Facts about this machine: os, host and interpreter arch, and the GPU (``nvidia-smi``'s
    output for NVIDIA, ``rocminfo`` on PATH for AMD, Apple silicon on macOS arm64)."""
    import platform
    import shutil
    import subprocess
    import sys

    os_ = {"linux": "linux", "win32": "windows", "darwin": "macos"}.get(sys.platform, sys.platform)
    host, interpreter = arches(platform.machine(), env)
    if shutil.which("nvidia-smi"):
        def run(*args: str) -> str:
            try:
                return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=30).stdout
            except (OSError, subprocess.SubprocessError):
                return ""

        query = run("--query-gpu=name,memory.total,driver_version,compute_cap", "--format=csv,noheader")
        return Machine(os=os_, arch=host, interpreter=interpreter, gpu="nvidia",
                       cuda=parse_cuda_version(run()), gpus=tuple(parse_gpu_query(query)))  # fmt: skip
    if shutil.which("rocminfo"):
        return Machine(os=os_, arch=host, interpreter=interpreter, gpu="amd")
    if os_ == "macos" and host == "aarch64":
        return Machine(os=os_, arch=host, interpreter=interpreter, gpu="apple")
    return Machine(os=os_, arch=host, interpreter=interpreter)
