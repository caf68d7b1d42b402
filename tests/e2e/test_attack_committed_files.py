"""Committed locks as input from elsewhere, for every command that reads them (a fork's or a
release's ``locks/``): ``all`` and ``lock`` (the committed ``pylock.toml`` as uv's preferences,
the builds it learned), ``check``, ``diff``, ``why``, ``sbom``, ``licenses``, ``audit``,
``bump --dry-run``, ``all --dry-run`` and ``install --format pylock``.

Each file of a locked cell is replaced by a hostile shape (a FIFO, a symlink to ``/dev/zero``, a
sparse 3 GiB file, a symlink to a secret outside the project); each command must end (no hang),
without a traceback, exit 0, 1 or 2, never show the secret, and write nothing outside the project.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Run, run_cli, run_ok, write_project
from tests.support.fakeosv import record, write_export

CELL = "linux-x86_64-cpu-py3.12"
CONFIG = """
    index-url = "{index}"
    pins = {{ alpha = "1.0" }}
    [tool.lockgen.audit]
    osv = "osv"
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
TEMPLATE = "alpha=={{ pins.alpha }}\nbeta\n"
SECRET = "hunter2-do-not-show"
#: The cell's interpreter for ``install`` (pyenv keeps every CPython beside this one).
PY312 = next(iter(sorted(Path(sys.base_prefix).parent.glob("3.12*/bin/python3"))), Path(sys.executable))
HUNG = float(os.environ.get("ATTACK_HUNG", "60"))


def _run(*argv: str) -> Run:
    done: list[Run] = []
    worker = threading.Thread(target=lambda: done.append(run_cli(*argv)), daemon=True)
    worker.start()
    worker.join(HUNG)
    assert done, f"lockgen {' '.join(argv)} hung (more than {HUNG} s)"
    return done[0]


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    path.unlink(missing_ok=True)
    with path.open("wb") as fh:
        fh.truncate(3 * 1024**3)


def _outside(path: Path) -> None:
    secret = path.parents[3] / f"secret-{path.name}"
    secret.write_text(f"# {SECRET}\nalpha=={SECRET}\n")
    path.unlink(missing_ok=True)
    path.symlink_to(secret)


SHAPES: dict[str, Callable[[Path], None]] = {
    "fifo": _fifo,
    "dev-zero": _dev_zero,
    "huge": _huge,
    "symlink-out": _outside,
}
SITES = {"pylock": f"locks/{CELL}/pylock.toml", "main": f"locks/{CELL}.txt", "manifest": "locks/manifest.json"}
COMMANDS: dict[str, list[str]] = {
    "all": ["all"], "all-forced": ["all", "--force"], "lock": ["lock", CELL], "all-dry-run": ["all", "--dry-run"],
    "check": ["check"], "diff": ["diff"], "why": ["why", "alpha"], "sbom": ["sbom"], "licenses": ["licenses"],
    "audit": ["audit"], "bump-dry-run": ["bump", "alpha==1.1", "--dry-run"],
    "install-pylock": ["install", CELL, "--format", "pylock", "--dry-run", "--python", str(PY312)],
}  # fmt: skip


@pytest.fixture(scope="module")
def locked(tmp_path_factory, shared_fake_host) -> Path:
    index = shared_fake_host("committed-files")
    for name, version in (("alpha", "1.0"), ("alpha", "1.1"), ("beta", "1.0")):
        index.add(name, version)
    index.publish()
    base = tmp_path_factory.mktemp("committed")
    root = write_project(
        base / "src" / "proj", CONFIG.format(index=index.index_url()), {"requirements.in.j2": TEMPLATE}
    )
    write_export([record("GHSA-aaaa-bbbb-cccc", "alpha", ["1.0"], fixed="1.1", rating="HIGH")], root / "osv")
    run_ok("all", "-C", str(root))
    return root


def _copy(locked: Path, tmp_path: Path) -> Path:
    import shutil

    root = tmp_path / "a" / "b" / "proj"
    shutil.copytree(locked, root, symlinks=True)
    return root


#: The default tier's cases: the writers' and readers' defects found (a FIFO lock or pylock hung
#: ``all`` in the journal and the preference reader; a huge one was copied whole, 3 GiB, by the
#: stage and the change report); the slow tier runs every command with every shape at every site.
DEFAULT = [(shape, site, command) for shape in ("fifo", "huge") for site in ("main", "pylock")
           for command in ("all", "all-dry-run", "why")] + [("fifo", "pylock", "install-pylock")]  # fmt: skip


def _case(shape: str, site: str, command: str) -> object:
    marks = () if (shape, site, command) in DEFAULT else (pytest.mark.slow,)
    return pytest.param(shape, site, command, marks=marks, id=f"{shape}-{site}-{command}")


@pytest.mark.uv
@pytest.mark.parametrize(
    ("shape", "site", "command"),
    [_case(sh, si, c) for sh in sorted(SHAPES) for si in sorted(SITES) for c in sorted(COMMANDS)],
)
def test_a_hostile_committed_file_is_refused_by_every_reader(locked, tmp_path, command, site, shape):
    root = _copy(locked, tmp_path)
    SHAPES[shape](root / SITES[site])
    outside = sorted(p.name for p in tmp_path.rglob("*") if root not in p.parents and p != root)
    run = _run(*COMMANDS[command], "-C", str(root))
    assert "Traceback" not in run.err, run.err
    assert run.code in (0, 1, 2), (run.code, run.err)
    assert SECRET not in run.out + run.err
    assert sorted(p.name for p in tmp_path.rglob("*") if root not in p.parents and p != root) == outside
