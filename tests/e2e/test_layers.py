"""Layers agree with main (issue 7, item 5; CASES C22) and every layer's recorded command installs
as written with uv and with pip (C24: an editable local project in the unhashed layer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockgen.resolve import uv
from tests.conftest import locked_versions, one_cell, run_cli
from tests.support.localproject import local_project

pytestmark = pytest.mark.uv  # every test here locks or installs with the real uv

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{HOST}"


@pytest.fixture
def typer_index(index):
    for version in ("0.27.1", "0.29.2"):
        index.add("typer", version)
    for version in ("0.10.0", "0.12.0"):
        index.add("torchao", version)
    index.add("tool", "1.0", requires=("torchao>=0.12",))
    index.add("alpha", "1.0", requires=("beta",))
    index.add("beta", "1.0")
    index.publish()
    return index


def project(root: Path, index, requirements: str, extra: str = "") -> Path:
    return one_cell(root, index.index_url(), requirements, python=HOST, extra=extra)


def cell_entry(root: Path) -> dict:
    return json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]


def test_c22_an_overlapping_no_deps_entry_takes_the_main_version(tmp_path, typer_index):
    root = project(tmp_path / "p", typer_index, "typer==0.27.1\n", 'no-deps = ["typer>=0.12.0"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert locked_versions((root / "locks" / CELL / "no-deps.txt").read_text()) == {"typer": "0.27.1"}
    assert "replaces" not in cell_entry(root)


def test_c22_a_no_deps_layer_that_would_move_a_main_pin_is_refused(tmp_path, typer_index):
    root = project(tmp_path / "p", typer_index, "typer==0.27.1\ntorchao==0.10.0\n", 'no-deps = ["typer==0.29.2"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "layer no-deps would set typer to 0.29.2 (the main lock has typer==0.27.1)" in run.err
    assert 'replace = ["typer"]' in run.err
    assert not (root / "locks" / f"{CELL}.txt").exists()


def test_c22_an_optional_layer_that_would_move_a_main_pin_is_unavailable(tmp_path, typer_index):
    """Optional means optional (issue 17): the cell locks, the layer is unavailable, saying why."""
    root = project(tmp_path / "p", typer_index, "typer==0.27.1\ntorchao==0.10.0\n", 'optional = ["tool"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    (gap,) = cell_entry(root)["unavailable"]
    assert gap["reason"].startswith("it would set torchao to 0.12.0 (the main lock has torchao==0.10.0)")
    assert 'replace = ["torchao"]' in gap["reason"]


@pytest.mark.slow
def test_c22_a_declared_replacement_is_recorded_and_installed(tmp_path, typer_index):
    root = project(tmp_path / "p", typer_index, "typer==0.27.1\n", 'no-deps = ["typer==0.29.2"]\nreplace = ["typer"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    lock = (root / "locks" / f"{CELL}.txt").read_text()
    assert "# replaces: typer 0.27.1 -> 0.29.2 no-deps\n" in lock
    assert " replace=" in lock
    assert locked_versions(lock)["typer"] == "0.27.1"
    assert cell_entry(root)["replaces"] == [{"package": "typer", "main": "0.27.1", "layer": "0.29.2", "by": "no-deps"}]
    assert run_cli("check", "-C", str(root)).code == 0
    run = run_cli("install", CELL, "-C", str(root), "--venv", str(tmp_path / "venv"))
    assert run.code == 0, run.err
    assert "replaces: typer 0.27.1 (main) -> 0.29.2 (no-deps)" in run.out
    assert "verified: 1 package" in run.out


def test_without_replace_the_input_hash_has_no_replace_part(tmp_path, typer_index):
    root = project(tmp_path / "p", typer_index, "typer==0.27.1\n")
    assert run_cli("all", "-C", str(root)).code == 0
    assert " replace=" not in (root / "locks" / f"{CELL}.txt").read_text()  # existing locks stay up to date


def test_replace_is_checked_with_its_key_path(tmp_path, typer_index):
    extra = '[[tool.lockgen.rules]]\nmatch = { os = "linux" }\nreplace = ["typer", "not a name!"]\n'
    root = project(tmp_path / "p", typer_index, "typer\n")
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + extra)
    run = run_cli("matrix", "-C", str(root))
    assert run.code == 2
    assert "tool.lockgen.rules[0].replace[1]: 'not a name!' is not a package name" in run.err


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_")) or k == "UV_CACHE_DIR"}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "UV_PYTHON_DOWNLOADS": "never"}


@pytest.mark.slow
def test_c24_every_recorded_command_installs_as_written_with_uv_and_pip(tmp_path, typer_index):
    """The unhashed layer holds ``-e file:./sub#egg=sub`` (the requirement ``-e ./sub``, with its
    package name, issue 9): the path is relative to the project root, where pip and uv both read it
    (run from there, as the manifest says)."""
    root = project(
        tmp_path / "p",
        typer_index,
        "alpha\ntyper==0.27.1\n-e ./sub\n",
        'optional = ["tool"]\nreplace = ["torchao"]\nno-deps = ["typer"]',
    )
    local_project(root / "sub")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    layers = cell_entry(root)["layers"]
    assert [layer["kind"] for layer in layers] == ["main", "optional", "no-deps", "unhashed"]
    assert (
        (root / "locks" / CELL / "unhashed.txt").read_text().split("\n\n", 1)[1].startswith("-e file:./sub#egg=sub\n")
    )
    env = _env()
    for installer in ("uv", "pip"):
        venv = tmp_path / f"venv-{installer}"
        subprocess.run(
            [uv.uv_binary(), "venv", "-q", "--no-config", "--python", sys.executable, str(venv)], check=True, env=env
        )
        python = str(venv / "bin" / "python")
        for layer in layers:
            argv = layer["commands"][installer]
            if installer == "uv":  # the venv active, as the manifest says
                command, run_env = [uv.uv_binary(), *argv[1:]], {**env, "VIRTUAL_ENV": str(venv)}
            else:  # pip >= 22.3 installs into another environment with --python
                command, run_env = [sys.executable, "-m", "pip", "--python", python, *argv[1:]], env
            done = subprocess.run(command, cwd=root, env=run_env, capture_output=True, text=True)
            assert done.returncode == 0, (installer, layer["name"], done.stdout + done.stderr)
        probe = "import sub_pkg, typer, tool, torchao; print(sub_pkg.__file__, torchao.__version__)"
        out = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout
        assert out.split() == [str(root / "sub" / "sub_pkg" / "__init__.py"), "0.12.0"], installer


def test_an_optional_entry_the_index_has_no_project_for_fails_the_cell(tmp_path, typer_index):
    """A misspelt optional entry (no project on the index, no source or find-links page that
    could serve it) fails the cell; recorded as unavailable it passed ``check`` and was dropped
    for good (a fresh-eyes review). An entry that exists but cannot be had here stays optional."""
    root = project(tmp_path / "p", typer_index, "alpha\n", 'optional = ["typr"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert f"optional entry 'typr': the index {typer_index.index_url()} has no project typr" in run.err
    assert not (root / "locks" / f"{CELL}.txt").exists()
    root = project(tmp_path / "q", typer_index, "alpha\n", 'optional = ["typer>=9"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert "unavailable: typer>=9" in run.err
