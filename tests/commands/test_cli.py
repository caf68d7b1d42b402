"""The command line: exit codes, messages without tracebacks, ``matrix --json``."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys

import pytest

from lockgen.cli import COMMANDS, command, parse, shared_options
from lockgen.commands.all import run as cmd_all
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
        (["-j", "2", "matrix"], "-j/--jobs does not apply to matrix (only to all, lock, check, bump, bundle)"),
        (["--only", "os=linux", "detect"], "--only does not apply to detect (only to all, lock, matrix, check)"),
        (["--json", "diff"], "--json does not apply to diff (only to all, lock, matrix, detect, check, bump, why)"),
        (["matrix", "-j", "2"], "-j/--jobs does not apply to matrix (only to all, lock, check, bump, bundle)"),
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


def _help(*argv: str) -> str:
    """What ``lockgen … --help`` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        parse([*argv, "--help"])
    assert done.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_s_help_starts_with_what_it_does(name):
    """``lockgen merge --help``: its one-line usage, then a description of merge, then only the
    options merge takes."""
    module = command(name)
    usage, description, *_ = _help(name).split("\n\n")
    assert usage.startswith(f"usage: lockgen {name} [OPTIONS]") and "\n" not in usage
    assert " ".join(description.split()) == module.HELP[0].upper() + module.HELP[1:] + "."
    shown = set(re.findall(r"^  (-[\w-]+|--[\w-]+)", _help(name), re.MULTILINE)) - {"-h"}
    assert shown == {opt.flags[0] for opt in module.OPTIONS} | _own_flags(module)


def _own_flags(module) -> set[str]:
    parser = argparse.ArgumentParser(add_help=False)
    module.arguments(parser)
    return {action.option_strings[0] for action in parser._actions if action.option_strings}


#: Commands whose names are ordinary words of a help text too ("with a lock", "all of it", "the matrix").
_ORDINARY = ("all", "lock", "matrix")


def _speaks_of(others: list[str]) -> re.Pattern[str]:
    """Another command used as a qualifier of a help text: ``install: into this venv``, ``all,
    lock, bump: …``, ``check --online and …``, ``(install)``; not as a reference (``lockgen
    merge``), an option (``--detect``) or a plain word (``a bundle folder``, ``the matrix's``)."""
    return re.compile(rf"(?<!lockgen )(?<![-\w.<])({'|'.join(others)})(?=:|,|\)| --\w)")


def test_the_qualifier_pattern_finds_the_old_help_texts():
    """The texts one table of options gave every command (merge's --wait said install's)."""
    old = [
        "wait for another lockgen run on this project (install: into this venv) instead of refusing",
        "cells resolved at once (default: CPU cores + 1, 2 to 8); check --online and bundle: requests at once",
        "change nothing: say what would be installed (install) or written (init)",
        "detect: take this cell (the way past GPU facts that cannot be known); why: the cell to explain",
    ]
    assert all(_speaks_of(["install", "check", "init", "why"]).search(text) for text in old)
    assert not _speaks_of(["bundle", "detect", "matrix"]).search("from a bundle folder (lockgen bundle) or --detect")


@pytest.mark.parametrize("name", COMMANDS)
def test_no_option_of_a_command_speaks_of_another_command(name):
    """Each command says what its options do there: merge's --wait is not install's."""
    module = command(name)
    parser = argparse.ArgumentParser(add_help=False)
    module.arguments(parser)
    texts = [opt.own_help or opt.help for opt in module.OPTIONS] + [a.help or "" for a in parser._actions]
    pattern = _speaks_of([other for other in COMMANDS if other not in (name, *_ORDINARY)])
    assert [text for text in texts if pattern.search(text)] == []


def test_a_shared_option_is_defined_once():
    """Every command that takes --wait (or -j, --python, …) takes the one definition; a command
    that defined its own, different, copy would break the parser."""
    found = shared_options()
    assert found["wait"][1] == ("all", "lock", "check", "bump", "install", "merge", "audit")
    assert all(opt.same(taken) for name in COMMANDS for taken in command(name).OPTIONS
               for opt, _ in [found[taken.dest]])  # fmt: skip
    assert "install" not in _help("merge") and "install" in _help("install", "--wait")
