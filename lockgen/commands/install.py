"""``lockgen install [CELL]``: install a cell's layers into a venv, as the manifest says (:func:`lockgen.install.install`); ``--from DIR``: from a bundle
(:func:`lockgen.install.install_bundle`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from lockgen.commands import common, options
from lockgen.commands.options import option

__all__ = ["HELP", "OPTIONS", "USAGE", "arguments", "run"]

HELP = "install a cell's layers into a venv, as the manifest says"
USAGE = "[CELL]"
OPTIONS = (
    *options.EVERY, options.MIRROR,
    options.WAIT.meaning("wait for another lockgen install into this venv instead of refusing"),
    options.DRY_RUN.meaning("change nothing; say what would be installed"),
    options.CPU.meaning("with --detect: accept the CPU cell when no GPU is found"),
    options.PYTHON.meaning(
        "target Python X.Y, or the path of the interpreter to create the venv from "
        "(default: the cell's only Python in the matrix, else this interpreter's)"
    ),
    options.AXIS.meaning("with --detect: the value of an extra matrix axis (repeatable)"),
    option("--detect", action="store_true", help="install the cell the selector picks for this machine"),
    option("--venv", metavar="PATH", help="the virtual environment (default: .venv in the project root)"),
    option("--installer", choices=["uv", "pip"], default="uv", help="run the manifest's uv (default) or pip commands"),
    option("--index-url", metavar="URL", help="install from this index instead of the recorded one"),
    option("--reinstall", action="store_true", help="install even when the venv is up to date"),
)  # fmt: skip


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cell", nargs="?", metavar="CELL", help="the cell to install (or --detect)")
    parser.add_argument(
        "--from", dest="from_dir", metavar="DIR", default=None,
        help="install from a bundle folder (lockgen bundle): its locks and files, no network, no project",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=("txt", "pylock"), default="txt",
        help="install from the layers' .txt locks, layer by layer (default), or from the cell's pylock.toml in "
        "one command, its optional layers as PEP 751 extras",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from lockgen.install import Options, install, install_bundle

    options = Options(
        cell=args.cell, detect=args.detect, venv=args.venv, cpu=args.cpu, python=args.python, dry_run=args.dry_run,
        installer=args.installer, mirrors=tuple(args.mirror), index_url=args.index_url, force=args.reinstall,
        wait=args.wait, axes=tuple(args.axis), format=args.format,
    )  # fmt: skip
    if args.from_dir is not None:  # a bundle: its own locks and files, no project, no network
        return install_bundle(Path(args.from_dir), options)
    return install(common.project(args), options)
