"""``lockgen install [CELL]``: install a cell's layers into a venv, as the manifest says (:func:`lockgen.install.install`)."""

from __future__ import annotations

import argparse

from lockgen.commands import common
from lockgen.install import Options, install

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    options = Options(
        cell=args.cell, detect=args.detect, venv=args.venv, cpu=args.cpu, python=args.python, dry_run=args.dry_run,
        installer=args.installer, mirrors=tuple(args.mirror), index_url=args.index_url, force=args.reinstall,
    )  # fmt: skip
    return install(common.project(args), options)
