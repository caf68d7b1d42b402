"""Step 4 of a cell's resolution: uv's PEP 751 output read back as a target-only :class:`Pylock`.

uv writes what it resolved as ``pylock.toml`` (mirror URLs, local paths relative to where it
wrote, every artifact of each version). :func:`read_pylock` parses it with the lock model
(:mod:`lockgen.locks.pylockfile`) into the value every later step takes: canonical URLs, local
files relative to the cell's committed pylock (PEP 751), only the artifacts the target may
install. A local path outside the project fails the cell: a committed lock names nothing of one
machine.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.pylock import Pylock

from lockgen.locks import pylockfile
from lockgen.resolve.cellrun import CellRun
from lockgen.runtime.errors import CellFailed

__all__ = ["read_pylock", "read_wheels"]


def read_pylock(run: CellRun, output: str) -> Pylock:
    """uv's pylock at ``output``: canonical URLs, local files relative to the cell's committed
    pylock, only the artifacts the target may install. Raises :class:`CellFailed` for a local path
    outside the project, :class:`~lockgen.runtime.errors.LockFormatError` for a file that is no pylock."""
    plan = run.plan
    pylock = pylockfile.loads(run.read(output), output)
    folder = pylockfile.pylock_path(plan.lock).rsplit("/", 1)[0]
    pylock = _local_paths(run, pylock, posixpath.dirname(output), folder)
    pylock = pylockfile.relative_files(pylock, run.root, folder)
    return pylockfile.target_only(pylock, plan.target.supported_tags(), plan.inputs.allow_build)


def _local_paths(run: CellRun, pylock: Pylock, written: str, folder: str) -> Pylock:
    """uv's local paths (project folders, local archives; relative to the folder of the file it
    ``written``, or absolute for a ``name @ file:`` requirement) as paths relative to the lock's
    ``folder``, as PEP 751 wants. Raises :class:`CellFailed` for a path outside the project: a
    committed lock names nothing of one machine."""
    root = run.root.resolve()

    def move(path: str, name: str) -> str:
        where = Path(path) if Path(path).is_absolute() else run.root / written / path
        try:
            rel = Path(os.path.normpath(where.resolve())).relative_to(root).as_posix()
        except ValueError:
            raise CellFailed(
                f"cell {run.plan.cell.name}: {name}: the local path {path} is outside the project folder; "
                "a lock names local projects relative to the project root: move it inside the project"
            ) from None
        return posixpath.relpath(rel, folder)

    packages = []
    for package in pylock.packages:
        changes: dict[str, Any] = {}
        if package.directory is not None:
            changes["directory"] = replace(package.directory, path=move(package.directory.path, package.name))
        if package.archive is not None and package.archive.path is not None:
            changes["archive"] = replace(package.archive, path=move(package.archive.path, package.name))
        packages.append(replace(package, **changes) if changes else package)
    return replace(pylock, packages=packages)


def read_wheels(run: CellRun, output: str) -> Pylock:
    """uv's pylock at ``output`` of a run for another target (the newer levels'): canonical URLs,
    local files relative to the cell's committed pylock, every artifact uv listed."""
    folder = pylockfile.pylock_path(run.plan.lock).rsplit("/", 1)[0]
    return pylockfile.relative_files(pylockfile.loads(run.read(output), output), run.root, folder)
