"""``lockgen install [CELL]``: install a cell's layers into a venv, as the manifest says (:func:`lockgen.install.install`); ``--from DIR``: from a bundle
(:func:`lockgen.install.install_bundle`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from lockgen.commands import common
from lockgen.install import Options, install, install_bundle

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    options = Options(
        cell=args.cell, detect=args.detect, venv=args.venv, cpu=args.cpu, python=args.python, dry_run=args.dry_run,
        installer=args.installer, mirrors=tuple(args.mirror), index_url=args.index_url, force=args.reinstall,
        wait=args.wait, axes=tuple(args.axis), format=args.format,
    )  # fmt: skip
    if args.from_dir is not None:  # a bundle: its own locks and manifest, no project, no network
        return install_bundle(Path(args.from_dir), options)
    return install(common.project(args), options)
