"""The command line: exit codes, messages without tracebacks, ``matrix --json``."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli, write_project

CONFIG = """
[tool.lockgen.matrix]
os = ["linux", "macos"]
arch = ["aarch64"]
backend = ["cpu"]
python = ["3.12"]
[[tool.lockgen.rules]]
match = { os = "macos" }
skip = "not yet"
"""


def test_matrix_json(tmp_path):
    write_project(tmp_path, CONFIG, {"requirements.in.j2": "x\n"})
    run = run_cli("matrix", "--json", "-C", str(tmp_path))
    assert run.code == 0
    rows = json.loads(run.out)
    assert rows[0] == {
        "name": "linux-aarch64-cpu-py3.12", "os": "linux", "arch": "aarch64", "backend": "cpu", "python": "3.12",
        "lock": "locks/linux-aarch64-cpu-py3.12.txt", "target": "aarch64-manylinux_2_28", "python_tag": "cp312", "skip": None,
        "alias": None, "interpreter": None,
    }  # fmt: skip
    assert rows[1]["skip"] == "not yet"
    plain = run_cli("matrix", "--only", "os=linux", "-C", str(tmp_path))
    assert plain.out.split()[0] == "linux-aarch64-cpu-py3.12" and "macos" not in plain.out


def test_config_error_exits_2_without_traceback(tmp_path):
    write_project(tmp_path, CONFIG.replace('"cpu"', '"CPU"'), {})
    run = run_cli("all", "-C", str(tmp_path))
    assert run.code == 2
    assert run.err.startswith("error: pyproject.toml: 1 configuration problem(s):")
    assert "tool.lockgen.matrix.backend[0]: bad backend label 'CPU'" in run.err
    assert "Traceback" not in run.err
    verbose = run_cli("all", "-v", "-C", str(tmp_path))
    assert verbose.code == 2 and "Traceback" in verbose.err


#: id -> arguments (``{root}``: a valid project) that are a usage error.
USAGE_ERRORS = {
    "unknown-cell": ["lock", "nope", "-C", "{root}"],
    "unknown-axis": ["all", "--only", "colour=red", "-C", "{root}"],
    "zero-jobs": ["all", "-j", "0", "-C", "{root}"],
    "unknown-command": ["frobnicate"],
    "missing-folder": ["all", "-C", "{root}/missing"],
}


@pytest.mark.parametrize("args", USAGE_ERRORS.values(), ids=USAGE_ERRORS)
def test_usage_errors_exit_2(tmp_path, args):
    write_project(tmp_path, CONFIG, {"requirements.in.j2": "x\n"})
    assert run_cli(*(a.format(root=tmp_path) for a in args)).code == 2


def test_template_error_exits_2_and_names_the_place(tmp_path):
    write_project(tmp_path, CONFIG, {"requirements.in.j2": "x\n{{ nope }}\n"})
    run = run_cli("all", "-C", str(tmp_path))
    assert run.code == 2
    assert "templates/requirements.in.j2:2: 'nope' is undefined (cell linux-aarch64-cpu-py3.12)" in run.err
    assert not (tmp_path / "locks").exists()


def test_global_options_go_before_or_after_the_command(tmp_path):
    write_project(tmp_path, CONFIG, {"requirements.in.j2": "x\n"})
    assert run_cli("-C", str(tmp_path), "matrix").out == run_cli("matrix", "-C", str(tmp_path)).out != ""
