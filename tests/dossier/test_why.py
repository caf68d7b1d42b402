"""``lockgen why NAME [CELL…]`` (issue 18, item 6): per cell the chains of requirements that bring a
package in, from the locks' ``# via`` data, each named by the template line or config entry it
starts at; cells with the same answer grouped; ``--json``. On the fake index with the real uv."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli, run_ok, write_project

CONFIG = """
    index-url = "{index}"
    optional = ["epsilon"]
    [tool.lockgen.matrix]
    os = ["linux", "windows"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
TEMPLATE = """\
alpha==1.0  # the app
{% if os == "linux" %}gamma{% endif %}
{{ project.dependencies | join("\\n") }}
"""
PROJECT = '[project]\nname = "app"\nversion = "1"\ndependencies = ["zeta>=1"]\n\n'
LINUX, WINDOWS = "linux-x86_64-cpu-py3.12", "windows-x86_64-cpu-py3.12"


@pytest.fixture(scope="module")
def world(shared_fake_host, tmp_path_factory):
    index = shared_fake_host("why-index")
    index.add("alpha", "1.0", requires=("beta",))
    index.add("gamma", "1.0", requires=("beta>=1", "delta"))
    index.add("delta", "1.0", requires=("beta",))
    index.add("beta", "1.0")
    index.add("epsilon", "1.0", requires=("beta",))
    index.add("zeta", "1.0")
    index.publish()
    root = write_project(
        tmp_path_factory.mktemp("why") / "p", CONFIG.format(index=index.index_url()), {"requirements.in.j2": TEMPLATE}
    )
    (root / "pyproject.toml").write_text(PROJECT + (root / "pyproject.toml").read_text())
    run_ok("all", "-C", str(root))
    return root


def test_chains_per_cell_grouped(world):
    run = run_ok("why", "beta", "-C", str(world))
    assert run.out == (
        f"beta 1.0 in 1 of 2 cells: {LINUX}\n"
        "  templates/requirements.in.j2:1 `alpha==1.0` → alpha → beta\n"
        "  templates/requirements.in.j2:2 `gamma` → gamma → beta\n"
        "  templates/requirements.in.j2:2 `gamma` → gamma → delta → beta\n"
        f"beta 1.0 in 1 of 2 cells: {WINDOWS}\n"
        "  templates/requirements.in.j2:1 `alpha==1.0` → alpha → beta\n"
    )


def test_a_direct_requirement_from_the_project_dependencies(world):
    run = run_ok("why", "zeta", "-C", str(world))
    assert run.out == (
        f"zeta 1.0 in 2 of 2 cells: {LINUX}, {WINDOWS}\n  pyproject.toml: project.dependencies[0] `zeta>=1` → zeta\n"
    )


def test_an_optional_layer_names_the_config_entry(world):
    run = run_ok("why", "epsilon", LINUX, "-C", str(world))
    assert run.out == (
        f"epsilon 1.0 [layer optional-epsilon] in 1 of 1 cell: {LINUX}\n"
        "  pyproject.toml: tool.lockgen.optional `epsilon` → epsilon\n"
    )


def test_a_package_absent_from_some_cells(world):
    run = run_ok("why", "Gamma", "-C", str(world))
    assert run.out.endswith(f"not in the lock of 1 cell: {WINDOWS}\n")
    assert run.out.startswith(f"gamma 1.0 in 1 of 2 cells: {LINUX}\n  templates/requirements.in.j2:2 `gamma` → gamma\n")


def test_json(world):
    data = json.loads(run_ok("why", "delta", "--json", "-C", str(world)).out)
    assert data == {
        "package": "delta",
        "groups": [{
            "version": "1.0", "layer": "main", "cells": [LINUX], "count": 1, "more_chains": 0,
            "chains": [{"start": {"source": "templates/requirements.in.j2:2", "text": "gamma"}, "path": ["gamma", "delta"]}],
        }],
        "absent": [WINDOWS],
        "unlocked": {},
    }  # fmt: skip


def test_unknown_package_and_cell(world):
    run = run_cli("why", "gama", "-C", str(world))
    assert run.code == 2 and "gama: in no selected cell's lock (did you mean gamma?)" in run.err
    run = run_cli("why", "beta", "nope", "-C", str(world))
    assert run.code == 2 and "unknown cell(s): nope. `lockgen matrix` lists the cells" in run.err
    run = run_cli("why", "beta", "linux-x86_64-cpu-py312", "-C", str(world))  # as every command says it
    assert run.code == 2 and f"unknown cell(s): linux-x86_64-cpu-py312 (did you mean {LINUX}" in run.err


def test_without_arguments_only_the_name_is_required(world):
    run = run_cli("why", "-C", str(world))
    assert run.code == 2
    assert "the following arguments are required: NAME\n" in run.err and "CELL" not in run.err.splitlines()[-1]
