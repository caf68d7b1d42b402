"""``lockgen detect``: print the cell (and lock) for this machine: the vendorable selector
(:func:`lockgen.cellselect.run_cli`) over the manifest the project's config gives
(:func:`lockgen.install.detect.detect_manifest`)."""

from __future__ import annotations

import argparse

from lockgen import cellselect
from lockgen.commands import common
from lockgen.install.detect import detect_manifest

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    named = bool(getattr(args, "select_cell", None) or getattr(args, "cell", None))
    return cellselect.run_cli(args, manifest=detect_manifest(common.project(args), named=named))
