"""Shared by the selector's tests (tests/test_select*.py): recorded outputs (tests/data/detect),
canned runners, facts, and a manifest shaped like the ai-toolkit example's, whose detect rules are
the seed's (see /work/shared/seed/README.md)."""

from __future__ import annotations

import contextlib
import io
import platform
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from lockgen import cellselect as select
from lockgen.cellselect import (
    Facts,
    Gpu,
)

DATA = Path(__file__).parents[1] / "data" / "detect"
NO_SYSFS = str(Path(__file__).parents[1] / "data" / "detect" / "no-sysfs")  # no such folder: no PCI bus, no KFD
MODULE = Path(select.__file__)
LINUX_X86 = sys.platform == "linux" and platform.machine() == "x86_64"
probing_here = pytest.mark.skipif(not LINUX_X86, reason="probes this machine (os, arch) with canned GPU outputs")
EXAMPLE = Path(__file__).parents[2] / "examples" / "ai-toolkit" / "lockgen.toml"
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
    return {"format": 4, "generator": "lockgen 0.1.0", "detect": RULES, "cells": cells, **changes}


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


def nvidia_outputs(
    banner: str, query: str | None = None, **extra: tuple[int, str, str]
) -> dict[tuple[str, ...], tuple[int, str, str]]:
    outputs = {BANNER: ok(f"nvidia-smi/{banner}")}
    if query:
        outputs[QUERY] = ok(f"nvidia-smi/{query}")
    return outputs | {tuple(k.split()): v for k, v in extra.items()}
