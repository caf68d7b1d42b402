"""pip installs a cell of real-shaped wheels and lockgen's check after the install passes
(docs/installing.md, "What the check after an install accepts").

A numpy-like wheel as PyPI serves numpy: modules with bytecode pip compiles at install time (here
the wheel also ships a ``.pyc`` per module, listed in RECORD, which pip compiles over), console
scripts pip generates (``f2py``, ``numpy-config``) and a RECORD that lists a file twice; beside it
``setuptools``, which the lock lists and the venv already has from ensurepip (CPython 3.11 seeds
pip and setuptools). pip is the venv's own, from ensurepip (23.2.1 on CPython 3.11)."""

from __future__ import annotations

import base64
import csv
import hashlib
import platform
import sys
from pathlib import Path

import pytest

from lockgen.install import venv as venv_module
from lockgen.install.steps import _HINTS, INSTALLERS, _untraced_lines
from tests.conftest import HOST_PYTHON, one_cell, run_cli, run_ok
from tests.support.fakehost import FakeHost

pytestmark = [
    pytest.mark.uv,
    pytest.mark.skipif(
        sys.platform != "linux" or platform.machine() != "x86_64", reason="installs a linux x86_64 cell here"
    ),
]
CELL = f"linux-x86_64-cpu-py{HOST_PYTHON}"
TAG = f"cp{HOST_PYTHON.replace('.', '')}"
SITE = Path("lib") / f"python{HOST_PYTHON}" / "site-packages"
F2PY = b"def main():\n    return 0\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    index = FakeHost(tmp_path_factory.mktemp("index"))
    index.add(
        "numpy", "2.3.5", f"{TAG}-{TAG}-manylinux_2_27_x86_64.manylinux_2_28_x86_64",
        files={"numpy/f2py.py": F2PY, "numpy/_core/__init__.py": b"", "numpy/_core/umath.py": b"PI = 3.14\n"},
        scripts={"f2py": "numpy.f2py:main", "numpy-config": "numpy.f2py:main"}, bytecode=True, duplicated=True,
    )  # fmt: skip
    index.add("setuptools", "80.9.0")
    index.publish()
    root = one_cell(
        tmp_path_factory.mktemp("np") / "proj", index.index_url(), "numpy\nsetuptools\n", python=HOST_PYTHON
    )
    run_ok("all", "-C", str(root))
    yield root
    index.stop()


def _rows(venv: Path) -> list[list[str]]:
    return list(csv.reader((venv / SITE / "numpy-2.3.5.dist-info" / "RECORD").read_text().splitlines()))


def _hash(path: Path) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()


@pytest.mark.slow
def test_pip_installs_real_shaped_wheels_and_the_check_passes(project, tmp_path, monkeypatch):
    monkeypatch.setattr(venv_module, "lockgen_has_pip", lambda: False)  # the venv's own pip, from ensurepip
    venv = tmp_path / "venv"
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", "pip")
    assert run.code == 0, run.out + run.err
    assert "verified: 2 packages" in run.out and "2 from archives with the locks' hashes" in run.out
    assert "cannot trace" not in run.out
    if HOST_PYTHON == "3.11":  # ensurepip seeds setuptools up to CPython 3.11
        assert "replacing the venv's own setuptools (put there when the venv was made" in run.out
    # the shapes the check accepted: pip compiled over the shipped bytecode, kept the wheel's row
    rows = _rows(venv)
    pyc = f"numpy/__pycache__/f2py.{sys.implementation.cache_tag}.pyc"
    listed = [r[1] for r in rows if r[0] == pyc]
    assert listed and _hash(venv / SITE / pyc) not in listed
    assert [r[0] for r in rows].count("numpy/__init__.py") == 2
    assert (venv / "bin" / "f2py").is_file() and (venv / "bin" / "numpy-config").is_file()
    again = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", "pip")
    assert again.code == 0 and "up to date" in again.out, again.out + again.err


@pytest.mark.slow
def test_a_file_changed_after_a_pip_install_is_still_caught(project, tmp_path):
    venv = tmp_path / "venv"
    run_ok("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", "pip")
    changed = venv / SITE / "numpy" / "f2py.py"
    changed.write_bytes(F2PY + b"import os\n")
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", "pip")
    assert run.code == 0, run.out + run.err
    assert "reinstalling 1 distribution lockgen cannot trace to the locks' hashes" in run.out
    assert ": numpy" in run.out and changed.read_bytes() == F2PY


@pytest.mark.slow
def test_uv_installs_the_same_wheels_and_the_check_passes(project, tmp_path):
    venv = tmp_path / "venv"
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv))
    assert run.code == 0, run.out + run.err
    assert "verified: 2 packages" in run.out and "cannot trace" not in run.out


def test_the_hint_after_a_changed_file_names_the_installer_that_ran():
    assert set(_HINTS) == set(INSTALLERS)
    for installer, hint in _HINTS.items():
        assert f"The installer was {installer}" in hint
    assert "uv cache clean" not in _HINTS["pip"]


def test_the_seed_packages_are_replaced_not_reported_untraceable():
    assert _untraced_lines(["numpy", "setuptools"]) == [  # type: ignore[list-item]
        "replacing the venv's own setuptools (put there when the venv was made, not from the locks) with the "
        "locked build",
        "reinstalling 1 distribution lockgen cannot trace to the locks' hashes (installed another way, or changed "
        "since): numpy",
    ]
    assert _untraced_lines([]) == []
