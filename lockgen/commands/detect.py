"""``lockgen detect``: print the cell (and lock) for this machine: the vendorable selector
(:func:`lockgen.cellselect.run_cli`) over the manifest the project's config gives
(:func:`lockgen.install.detect.detect_manifest`)."""

from __future__ import annotations

import argparse

from lockgen.commands import common, options
from lockgen.commands.options import option

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "print the cell (and lock) for this machine"
USAGE = ""
_ARCHES = ("x86_64", "aarch64")
OPTIONS = (
    *options.EVERY, options.JSON.meaning("print the choice as JSON"), options.CPU,
    options.PYTHON.meaning("target Python (default: the cell's only Python in the matrix, else this interpreter's)"),
    options.CELL.meaning("take this cell (the way past GPU facts that cannot be known)"), options.AXIS,
    option("--os", choices=["linux", "windows", "macos"], help="pretend: operating system"),
    option("--arch", choices=_ARCHES, help="pretend: host arch"),
    option("--interpreter", choices=_ARCHES, help="pretend: interpreter arch"),
    option("--gpu", choices=["nvidia", "amd", "apple", "none"], help="pretend: GPU kind"),
    option("--cuda", metavar="X.Y", help="pretend: the NVIDIA driver's CUDA version"),
    option("--gfx", metavar="LIST", help="pretend: AMD GPUs by gfx target (gfx1100,gfx1036)"),
    option("--gpu-query", metavar="FILE", help="pretend: saved nvidia-smi --query-gpu output"),
)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    """None but its options."""


def run(args: argparse.Namespace) -> int:
    from lockgen import cellselect
    from lockgen.install.detect import detect_manifest

    named = bool(getattr(args, "select_cell", None) or getattr(args, "cell", None))
    return cellselect.run_cli(args, manifest=detect_manifest(common.project(args), named=named))
