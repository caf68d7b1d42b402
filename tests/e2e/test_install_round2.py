"""``lockgen install`` on issue 17's shapes (item 8): pip into a venv lockgen made (it has no
pip) with an editable setup.py project, the whole cause of a failed command, and the optional
layers a cell lacks named before anything runs."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from lockgen.install.venv import Done
from tests.conftest import one_cell, run_cli, run_ok
from tests.support.localproject import setup_py_project, setuptools_wheels

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{HOST}"

#: The shape of pip's output when an editable build fails: the cause is far above the last lines.
PIP_BUILD_FAILURE = "\n".join(
    [
        "Obtaining file:///p/legacy (from -r locks/x/unhashed.txt (line 1))",
        "  Installing build dependencies: started",
        "  Installing build dependencies: finished with status 'done'",
        "  Checking if build backend supports build_editable: started",
        "  Getting requirements to build editable: started",
        "  error: subprocess-exited-with-error",
        "",
        "  × Getting requirements to build editable did not run successfully.",
        "  │ exit code: 1",
        "  ╰─> [18 lines of output]",
        "      Traceback (most recent call last):",
        *[f"        frame {i}" for i in range(14)],
        "      ModuleNotFoundError: No module named 'torch'",
        "      [end of output]",
        "",
        "  note: This error originates from a subprocess, and is likely not a problem with pip.",
        "error: subprocess-exited-with-error",
        "",
        "× Getting requirements to build editable did not run successfully.",
        "│ exit code: 1",
        "╰─> See above for output.",
        "",
        "note: This error originates from a subprocess, and is likely not a problem with pip.",
    ]
)


def test_a_failure_shows_its_whole_cause():
    done = Done(1, PIP_BUILD_FAILURE)
    assert "Traceback (most recent call last):" not in done.tail()  # what the message showed before
    cause = done.cause()
    assert cause.startswith("  error: subprocess-exited-with-error")
    assert "Traceback (most recent call last):" in cause and "No module named 'torch'" in cause
    assert Done(1, "a\nb\n").cause() == "a\nb"  # no error line: the tail
    long = Done(1, "error: x\n" + "\n".join(f"line {i}" for i in range(500)))
    assert len(long.cause(limit=20).splitlines()) == 21 and "(481 lines)" in long.cause(limit=20)


@pytest.fixture
def legacy_world(pypi):
    wheels = setuptools_wheels()
    if wheels is None:
        pytest.skip("needs real setuptools and wheel wheels (CPython's own copies)")
    files = [pypi.wheel("files", "dep", "1.0"), *(Path(shutil.copy(w, pypi.root / "files")) for w in wheels)]
    return pypi.index("simple", files)


def legacy_project(root: Path, index: str) -> Path:
    extra = 'allow-build = ["legacy"]\noptional = ["dep>=99"]'
    root = one_cell(root, index, "dep\n-e ./legacy\n", python=HOST, extra=extra)
    setup_py_project(root / "legacy", requires=("dep",))
    (root / "legacy" / "pyproject.toml").unlink()  # setup.py alone
    return root


@pytest.mark.uv
def test_install_names_the_optional_layers_the_cell_lacks(tmp_path, pypi):
    """No local build is needed to show this: one wheel, and an optional layer no host serves."""
    index = pypi.index("simple", [pypi.wheel("files", "dep", "1.0")])
    root = one_cell(tmp_path / "p", index, "dep\n", python=HOST, extra='optional = ["dep>=99"]')
    run_ok("all", "-C", str(root))
    run = run_cli("install", CELL, "-C", str(root), "--venv", str(tmp_path / "venv"), "--dry-run")
    assert run.code == 0, run.err
    assert f"not available for {CELL}: optional dep>=99 (" in run.out


@pytest.mark.uv
@pytest.mark.slow
@pytest.mark.parametrize("pip", ["lockgen's own pip", "ensurepip"])
def test_pip_into_a_venv_without_pip_with_an_editable_setup_py_project(tmp_path, legacy_world, monkeypatch, pip):
    """lockgen's venvs have no pip: ``--installer pip`` runs lockgen's pip with ``--python``, or
    (lockgen installed without pip, as a uv tool) the venv's ensurepip."""
    root = legacy_project(tmp_path / "p", legacy_world)
    run_ok("all", "-C", str(root))
    if pip == "ensurepip":
        real = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pip" else real(name, *a))
    run = run_cli("install", CELL, "-C", str(root), "--venv", str(tmp_path / "venv"), "--installer", "pip")
    assert run.code == 0, run.out + run.err
    assert "unhashed: pip install --no-deps" in run.out
    assert "verified: 2 packages" in run.out
