"""Every Python ``lockgen install`` starts runs isolated (``-I``): a project whose root holds a
``select.py`` (a vendored selector) or a ``json.py`` installs with pip from lockgen's environment,
with pip from ``ensurepip`` (a lockgen without pip: pipx, ``uv tool``) and with uv; and a venv lockgen
has just created but could not complete (ensurepip failed) is removed again, as exit 2 promises
("refused before anything was installed"). The bundle's own case is in tests/rot/test_bundle.py."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from lockgen.install import venv as venv_module
from lockgen.install.venv import CREATING, ISOLATED, LOCK_FILE, Done, Venv
from tests.conftest import HOST_PYTHON, one_cell, run_cli, run_ok
from tests.support.fakehost import FakeHost

pytestmark = [
    pytest.mark.uv,
    pytest.mark.skipif(
        sys.platform != "linux" or platform.machine() != "x86_64", reason="installs a linux x86_64 cell here"
    ),
]
CELL = f"linux-x86_64-cpu-py{HOST_PYTHON}"
#: Modules a project may have at its root that hide the stdlib ones for a Python started there
#: without ``-I``: ``select`` (subprocess, selectors: ensurepip, pip), ``json`` (pip's metadata).
TRAPS = ("select", "json", "platform")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    index = FakeHost(tmp_path_factory.mktemp("index"))
    index.add("alpha", "1.0", requires=("beta",))
    index.add("beta", "1.0")
    index.publish()
    root = one_cell(tmp_path_factory.mktemp("trap") / "proj", index.index_url(), "alpha\n", python=HOST_PYTHON)
    for name in TRAPS:
        (root / f"{name}.py").write_text(f"raise SystemExit('the project root was on sys.path: its {name}.py ran')\n")
    run_ok("all", "-C", str(root))
    yield root
    index.stop()


def installed(venv: Path) -> dict[str, str]:
    return {n: v[0] for n, v in Venv(venv).distributions(venv).items() if n not in ("pip", "setuptools")}


def test_pip_runs_isolated_whichever_pip_it_is(tmp_path, monkeypatch):
    """The argv of each pip lockgen may run starts ``python -I`` (no venv needed to tell)."""
    venv = Venv(tmp_path / "v")
    monkeypatch.setattr(venv_module, "lockgen_has_pip", lambda: True)
    assert venv.pip()[:4] == [sys.executable, ISOLATED, "-m", "pip"]
    (tmp_path / "v" / "lib" / "python3.11" / "site-packages" / "pip").mkdir(parents=True)
    (tmp_path / "v" / "lib" / "python3.11" / "site-packages" / "pip" / "__init__.py").write_text("")
    assert venv.pip()[:4] == [str(venv.python), ISOLATED, "-m", "pip"]


@pytest.mark.slow
@pytest.mark.parametrize("lockgen_pip", [True, False], ids=["lockgens-pip", "ensurepip"])
def test_a_project_with_a_select_py_installs_with_pip(project, tmp_path, monkeypatch, lockgen_pip):
    monkeypatch.setattr(venv_module, "lockgen_has_pip", lambda: lockgen_pip)
    venv = tmp_path / "venv"
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", "pip")
    assert run.code == 0, run.err + run.out
    assert installed(venv) == {"alpha": "1.0", "beta": "1.0"}
    assert (venv / "lib" / f"python{HOST_PYTHON}" / "site-packages" / "pip").is_dir() != lockgen_pip
    assert "sys.path" not in run.err


@pytest.mark.slow
def test_a_project_with_a_select_py_installs_with_uv(project, tmp_path):
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(tmp_path / "venv"))
    assert run.code == 0, run.err + run.out
    assert installed(tmp_path / "venv") == {"alpha": "1.0", "beta": "1.0"}


@pytest.mark.slow
def test_a_venv_it_could_not_complete_is_removed_again(project, tmp_path, monkeypatch):
    """ensurepip fails (here: made to): exit 2, and nothing of the new venv is left but the
    install lock; the next install creates it afresh."""
    real = venv_module.run

    def failing_ensurepip(argv, env, cwd):
        if "ensurepip" in argv:
            return Done(1, "ensurepip: no bundled pip in this Python")
        return real(argv, env, cwd)

    monkeypatch.setattr(venv_module, "lockgen_has_pip", lambda: False)
    monkeypatch.setattr(venv_module, "run", failing_ensurepip)
    venv = tmp_path / "venv"
    run = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", "pip")
    assert run.code == 2, run.err
    assert "no pip in it and ensurepip failed:\nensurepip: no bundled pip in this Python" in run.err
    assert f"the venv {venv} lockgen had just created was removed again: nothing was installed" in run.err
    assert [p.name for p in venv.iterdir()] == [LOCK_FILE]
    assert not (venv / CREATING).exists()
    monkeypatch.setattr(venv_module, "run", real)
    again = run_cli("install", CELL, "-C", str(project), "--venv", str(venv), "--installer", "pip")
    assert again.code == 0, again.err
    assert f"venv {venv}: created from" in again.out
