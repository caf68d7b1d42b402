"""Day one on a real project against real PyPI (opt-in: ``pytest -m network``): ``lockgen init``
with no flags, then ``lockgen all``, then ``lockgen check``, on the requirement files of real ML
applications (tests/data/realworld/).

Every cell whose hosts are all reachable here (PyPI) must lock with zero hand edits; a cell that
needs another host (download.pytorch.org, github.com: unreachable from the test machines) must
fail at once, naming that host, without starting uv. ai-toolkit runs twice: as its files are
(their ``git+https://github.com/huggingface/diffusers.git@…`` line: every cell needs github.com)
and with that line as ``diffusers`` from PyPI (the copy in tests/data/realworld/). The hermetic
twin is ``test_realworld.py``; the table of cells is docs/realworld.md, and :data:`CELLS` keeps
its counts true.

One cell per project is installed with the pinned uv and with pip 23.2.1 (what ``python3.11 -m
venv`` ships) where a cheap one exists: a linux x86_64 cell PyPI serves whose lock holds no
torch and no CUDA runtime. None does today (every such cell holds PyPI's CUDA torch and its
``nvidia-*`` runtime, over 2.5 GB; the cells with a CPU torch need download.pytorch.org, and
text-generation-webui's torch-free portable cells need github.com), so that test says so per
project; the installs of a real-shaped cell run in the fake world (``test_realworld.py``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import locked_versions, run_cli, run_ok

pytestmark = [pytest.mark.network, pytest.mark.uv]

DATA = Path(__file__).parents[1] / "data" / "realworld"
PYPI = ("https://pypi.org", "https://files.pythonhosted.org")
#: ai-toolkit's line as its files have it (tests/data/realworld/README.md: the copy says ``diffusers``).
DIFFUSERS_GIT = "git+https://github.com/huggingface/diffusers.git@c943837899b16cbae2f619b8dd4f7bb6f07dd81a"

#: Cells init declares, and how many of them PyPI alone serves (all of which must lock), by
#: project (docs/realworld.md's table; measured 2026-12-06).
CELLS = {
    "ComfyUI": (3, 3),
    "Fooocus": (3, 3),
    "InvokeAI": (18, 4),
    "ai-toolkit": (6, 4),
    "ai-toolkit (git)": (6, 0),
    "sdnext": (3, 3),
    "stable-diffusion-webui-forge": (3, 3),
    "text-generation-webui": (34, 0),
}
PROJECTS = tuple(CELLS)
#: Cells PyPI cannot serve though their files name no other host, by project: ``(cell name prefix,
#: suffix)`` -> what the cell's failure says. ai-toolkit's DGX set on linux aarch64 pins
#: ``torchcodec==0.9.1`` (from requirements_base.txt), which has no linux aarch64 wheel on PyPI;
#: its Spark set (Windows on ARM) pins ``numba==0.67.0rc1`` and ``llvmlite==0.49.0rc1``, whose
#: PyPI win_arm64 wheels are cp314 only, and takes opencv-python, soxr, pywavelets and kornia-rs
#: from "the ai-toolkit spark wheel set (self-built), resolved via --find-links" (its comments),
#: which no line of it names.
NOT_ON_PYPI = {
    "ai-toolkit": {
        ("linux-aarch64-", "-dgx"): "torchcodec==0.9.1 has no wheels with a matching platform tag",
        ("windows-aarch64-", "-spark"): "numba 0.67.0rc1 has wheels for CPython 3.14 only",
    },
}
_LOCKED: dict[str, tuple[Path, dict[str, dict]]] = {}  # project -> its folder and manifest cells, for the install test


def init(tmp_path: Path, name: str) -> Path:
    project = name.removesuffix(" (git)")
    root = tmp_path / project
    shutil.copytree(DATA / project, root)
    if name.endswith(" (git)"):  # the line as the project has it
        for path in root.glob("*requirements*.txt"):
            path.write_text(path.read_text().replace("\ndiffusers\n", f"\n{DIFFUSERS_GIT}\n"))
    run_ok("init", "-C", str(root))
    return root


def lock_all(root: Path, name: str) -> dict[str, dict]:
    """``lockgen all``; the cells that need PyPI only must lock (but those :data:`NOT_ON_PYPI`
    names, which must fail saying why), the others fail at once naming their host; ``lockgen
    check`` then passes for the locked cells. Returns the manifest's cells."""
    run = run_cli("all", "-C", str(root))
    cells = json.loads((root / "locks" / "manifest.json").read_text())["cells"]
    elsewhere = {n: c for n, c in cells.items() if c["status"] == "failed" and "is unreachable" in c.get("reason", "")}
    for cell_name, cell in elsewhere.items():
        reason = cell["reason"]
        assert "no uv process was started" in reason, (cell_name, reason)
        assert not reason.startswith(PYPI), (cell_name, reason)
        assert reason.startswith(("https://download.pytorch.org ", "https://github.com ")), (cell_name, reason)
    known = NOT_ON_PYPI.get(name.removesuffix(" (git)"), {})
    for cell_name, cell in cells.items():
        why = next(
            (w for (head, tail), w in known.items() if cell_name.startswith(head) and cell_name.endswith(tail)), None
        )
        if cell_name in elsewhere:
            continue
        if why is not None:
            assert cell["status"] == "failed" and why in cell["reason"], (cell_name, cell)
        else:
            assert cell["status"] == "locked", (cell_name, cell.get("reason"), run.err)
    locked = sorted(n for n, c in cells.items() if c["status"] == "locked")
    assert run.code == (0 if len(locked) == len(cells) else 1), run.err
    if locked:
        run_ok("check", "-C", str(root), *locked)
    return cells


@pytest.mark.parametrize("name", PROJECTS)
def test_every_cell_pypi_serves_locks_with_zero_edits(tmp_path, name):
    root = init(tmp_path, name)
    cells = lock_all(root, name)
    declared, served = CELLS[name]
    locked = [n for n, c in cells.items() if c["status"] == "locked"]
    assert (len(cells), len(locked)) == (declared, served), sorted(locked)
    _LOCKED[name] = (root, cells)


def cheap_cell(root: Path, cells: dict[str, dict]) -> str | None:
    """A locked linux x86_64 cell whose lock holds no torch and no CUDA runtime (``nvidia-*``):
    one this machine can install in a minute. None when there is none."""
    for name, cell in sorted(cells.items()):
        if cell["status"] != "locked" or not name.startswith("linux-x86_64-"):
            continue
        locked = locked_versions((root / "locks" / f"{name}.txt").read_text())
        if "torch" not in locked and not any(n.startswith("nvidia-") for n in locked):
            return name
    return None


@pytest.mark.parametrize("name", PROJECTS)
def test_one_cell_per_project_installs_with_uv_and_with_pip_23_2_1(tmp_path, name):
    """The project's cheap cell (:func:`cheap_cell`), installed by the pinned uv and by pip
    23.2.1 into fresh venvs, then verified by lockgen's check of the installed files."""
    if sys.platform != "linux" or sys.version_info[:2] != (3, 11):
        pytest.skip("needs CPython 3.11 on Linux (its ensurepip ships pip 23.2.1)")
    if name in _LOCKED:
        root, cells = _LOCKED[name]
    else:
        root = init(tmp_path, name)
        cells = lock_all(root, name)
    cell = cheap_cell(root, cells)
    if cell is None:
        served = any(c["status"] == "locked" and n.startswith("linux-x86_64-") for n, c in cells.items())
        pytest.skip(
            f"{name}: every linux x86_64 cell PyPI serves holds torch and its CUDA runtime (docs/realworld.md)"
            if served
            else f"{name}: no linux x86_64 cell PyPI serves; the others are cells this machine cannot install"
        )
    base = getattr(sys, "_base_executable", sys.executable)
    for installer in ("uv", "pip"):
        venv = tmp_path / f"venv-{installer}"
        subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
        run = run_ok("install", cell, "-C", str(root), "--venv", str(venv), "--installer", installer)
        assert "verified:" in run.out, (installer, run.out)
