"""The smaller things a newcomer met (issue 16, item 8), each said in the config's terms: a pins typo
names the pins' keys, a misspelt matrix table is one problem; one broken invariant in many packages
is one line (tests/test_config_terms.py)."""

from __future__ import annotations

from tests.conftest import run_cli, write_project

MATRIX = '[tool.lockgen.matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n'
RULE = '[[tool.lockgen.rules]]\nmatch = { backend = "cpu" }\npins = { numpy = "2.0" }\n'


def test_a_pins_typo_names_the_pins_keys(tmp_path):
    config = f'pins = {{ torch = "2.13.0" }}\n{MATRIX}{RULE}'
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "torch=={{ pins.torhc }}\n"})
    run = run_cli("check", "-C", str(root))
    assert run.code == 2
    assert (
        "error: templates/requirements.in.j2:1: pins has no key 'torhc' (did you mean 'torch'?); "
        "the pins of this cell: numpy, torch (cell linux-x86_64-cpu-py3.12)"
    ) in run.err
    assert "dict object" not in run.err


def test_a_vars_key_and_item_access_say_the_same(tmp_path):
    config = f'vars = {{ channel = "stable" }}\n{MATRIX}'
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "x=={{ vars['chanel'] }}\n"})
    run = run_cli("check", "-C", str(root))
    assert "vars has no key 'chanel' (did you mean 'channel'?); the vars of this cell: channel" in run.err


def test_a_pin_named_like_an_attribute_is_still_a_pin(tmp_path):
    config = f'pins = {{ label = "1.0" }}\n{MATRIX}'
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "x=={{ pins.label }}\n"})
    from lockgen.project import Project

    project = Project.load(root)
    (plan,) = project.plans(project.cells)
    assert plan.rendered.files["requirements"][1] == "x==1.0\n"


def test_a_misspelt_matrix_table_is_one_problem(tmp_path):
    root = write_project(tmp_path / "p", MATRIX.replace("matrix", "matrx") + RULE, {"requirements.in.j2": "x\n"})
    run = run_cli("check", "-C", str(root))
    assert run.code == 2
    assert run.err == (
        "error: pyproject.toml: 1 configuration problem:\n  - tool.lockgen.matrx: unknown key; did you mean 'matrix'?\n"
    )
