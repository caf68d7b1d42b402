"""The command line: exit codes, messages without tracebacks, ``matrix --json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lockgen.cli import cmd_all, parse
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
    assert run.err.startswith("error: pyproject.toml: 1 configuration problem:")
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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "lockgen: error: unrecognized arguments: --bogus"),
        ([], "lockgen: error: a command is required (lockgen --help lists them)"),
        (["lock"], "lockgen lock: error: the following arguments are required: CELL"),
        (["check", "--force"], "lockgen: error: --force does not apply to check"),
    ],
    ids=["unknown-option-before-a-command", "no-command", "missing-argument", "option-of-another-command"],
)
def test_a_usage_error_is_one_usage_line_and_the_error(args, message):
    """argparse's usage listed every option, ten lines above each usage error (fresh-eyes reviews)."""
    run = run_cli(*args)
    assert run.code == 2
    usage, error = run.err.splitlines()
    assert usage.startswith("usage: lockgen")
    assert error.startswith(message)


def test_template_error_exits_2_and_names_the_place(tmp_path):
    write_project(tmp_path, CONFIG, {"requirements.in.j2": "x\n{{ nope }}\n"})
    run = run_cli("all", "-C", str(tmp_path))
    assert run.code == 2
    assert "templates/requirements.in.j2:2: 'nope' is undefined (cell linux-aarch64-cpu-py3.12)" in run.err
    assert not (tmp_path / "locks").exists()


def test_global_options_go_before_or_after_the_command(tmp_path):
    write_project(tmp_path, CONFIG, {"requirements.in.j2": "x\n"})
    assert run_cli("-C", str(tmp_path), "matrix").out == run_cli("matrix", "-C", str(tmp_path)).out != ""


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (["-j", "2", "--force"], [], {"jobs": 2, "force": True}),
        ([], ["-j", "2", "--force"], {"jobs": 2, "force": True}),
        (["-j", "3"], ["-j", "2"], {"jobs": 2}),  # the later one wins
        (["--only", "os=linux"], ["--only", "python=3.12"], {"only": ["os=linux", "python=3.12"]}),  # repeatable: both
        (["--mirror", "a=b", "--online", "--upgrade", "--upgrade-package", "torch"], ["--upgrade-package", "numpy"],
         {"mirror": ["a=b"], "online": True, "upgrade": True, "upgrade_package": ["torch", "numpy"]}),
        (["-v", "-C", "x"], [], {"verbose": True, "config": "x"}),
        ([], [], {"jobs": None, "force": False, "only": [], "mirror": [], "upgrade_package": [], "config": None, "verbose": False}),
    ],
    ids=["before", "after", "after-wins", "append-both", "resolving-options", "global", "defaults"],
)  # fmt: skip
def test_options_go_before_or_after_the_command(before, after, expected):
    args = parse([*before, "all", *after])
    assert {key: getattr(args, key) for key in expected} == expected
    assert args.command == "all" and args.func is cmd_all


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--json", "matrix"], {"command": "matrix", "json": True}),
        (
            ["--os", "linux", "--cpu", "detect", "--gpu", "none"],
            {"command": "detect", "os": "linux", "cpu": True, "gpu": "none"},
        ),
        (["-C", "x", "lock", "a", "b"], {"command": "lock", "config": "x", "cells": ["a", "b"]}),
        (["--only", "os=linux", "check"], {"command": "check", "only": ["os=linux"], "cells": []}),
    ],
    ids=["json", "detect-pretend", "lock-cells", "check-only"],
)
def test_command_options_before_the_command(argv, expected):
    args = parse(argv)
    assert {key: getattr(args, key) for key in expected} == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--force", "matrix"], "--force does not apply to matrix (only to all, lock, bump)"),
        (["-j", "2", "matrix"], "-j/--jobs does not apply to matrix (only to all, lock, bump, check, bundle)"),
        (["--only", "os=linux", "detect"], "--only does not apply to detect (only to all, lock, matrix, check)"),
        (["--json", "diff"], "--json does not apply to diff (only to all, lock, matrix, detect, check, bump, why)"),
        (["matrix", "-j", "2"], "-j/--jobs does not apply to matrix (only to all, lock, bump, check, bundle)"),
        (["detect", "--only", "os=linux"], "--only does not apply to detect (only to all, lock, matrix, check)"),
        (["all", "--gpu", "none"], "--gpu does not apply to all (only to detect)"),
    ],
    ids=[
        "force-matrix",
        "jobs-matrix",
        "only-detect",
        "json-diff",
        "after-jobs-matrix",
        "after-only-detect",
        "after-gpu-all",
    ],
)
def test_an_option_for_a_command_that_does_not_take_it_is_a_usage_error(argv, message):
    run = run_cli(*argv)
    assert run.code == 2 and message in run.err


def test_resolving_options_before_the_command_reach_the_run(tmp_path):
    write_project(tmp_path, CONFIG, {"requirements.in.j2": "x\n"})
    assert run_cli("-j", "0", "all", "-C", str(tmp_path)).code == 2
    assert run_cli("--only", "os=linx", "-C", str(tmp_path), "matrix").err.startswith(
        "error: --only os=linx: 'linx' is not a value of the os axis (linux, macos)"
    )


def test_a_closed_pipe_exits_quietly(tmp_path):
    """``lockgen matrix --json | head -1``: the reader is gone before lockgen writes (here: from
    the start, so the test does not race it). No ``error: Broken pipe``, no traceback; exit 1."""
    root = write_project(tmp_path, CONFIG, {"requirements.in.j2": "alpha\n"})
    read, write = os.pipe()
    os.close(read)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "lockgen", "matrix", "--json", "-C", str(root)],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert (run.returncode, run.stderr) == (1, "")
