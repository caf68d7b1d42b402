"""Issue 17's smaller items (item 8): empty rendered inputs are not handed to uv, rules add to a
list (``extend-use`` and friends), ``exclude-newer-package``, and the change report names an old
failure without repeating its reason."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lockgen.project import Project
from lockgen.resolve import uv
from lockgen.resolve.inputs import has_lines, main_inputs
from tests.conftest import one_cell, run_cli, run_ok, write_project

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{HOST}"
TIME = "2026-06-01T00:00:00Z"


def plan_of(root: Path, cell: str = CELL):
    project = Project.load(root, None)
    (plan,) = [p for p in project.plans(project.cells) if p.cell.name == cell]
    return plan


def test_an_input_that_renders_empty_is_not_handed_to_uv(tmp_path):
    root = one_cell(
        tmp_path / "p",
        "https://pypi.org/simple",
        "numpy\n",
        python=HOST,
        extra='overrides = "overrides.txt.j2"\nconstraints = "constraints.txt.j2"',
    )
    (root / "templates" / "overrides.txt.j2").write_text(
        '{% if os == "windows" %}setuptools==69.5.1{% endif %}\n# for windows only\n'
    )
    (root / "templates" / "constraints.txt.j2").write_text("numpy<3  # keep\n")
    plan = plan_of(root)
    given = main_inputs(plan)
    assert given.overrides is None and given.constraints == (plan.input_path("constraints"),)
    assert "--override" not in uv.compile_argv(plan, "out.toml", inputs=given)
    assert not has_lines("\n  # a comment\n\n") and has_lines("pkg  # why\n")


@pytest.mark.uv
def test_an_empty_overrides_template_leaves_no_note(tmp_path, index):
    index.add("numpy", "2.0")
    index.publish()
    root = one_cell(tmp_path / "p", index.index_url(), "numpy\n", python=HOST, extra='overrides = "overrides.txt.j2"')
    (root / "templates" / "overrides.txt.j2").write_text('{% if os == "windows" %}setuptools==69.5.1{% endif %}\n')
    run = run_ok("all", "-C", str(root))
    assert "does not contain any dependencies" not in run.err


def test_rules_add_to_lists(tmp_path):
    config = """
        allow-build = ["a"]
        use = ["one"]
        optional = ["x"]
        [tool.lockgen.sources.one]
        find-links = "https://example.org/one/"
        packages = ["p1"]
        [tool.lockgen.sources.two]
        find-links = "https://example.org/two/"
        packages = ["p2"]
        [[tool.lockgen.rules]]
        match = { python = "3.12" }
        extend-use = ["two"]
        extend-allow-build = ["b", "a"]
        extend-optional = ["y"]
        [[tool.lockgen.rules]]
        match = { python = "3.12" }
        extend-allow-build = ["c"]
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.11", "3.12"]
    """
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "numpy\n"})
    project = Project.load(root, None)
    cells = {c.name: c.settings for c in project.cells}
    old, new = cells["linux-x86_64-cpu-py3.11"], cells["linux-x86_64-cpu-py3.12"]
    assert (old.sources, old.allow_build, old.optional) == (("one",), ("a",), ("x",))
    assert (new.sources, new.allow_build, new.optional) == (("one", "two"), ("a", "b", "c"), ("x", "y"))


def test_an_extend_key_is_checked_like_its_list(tmp_path):
    config = """
        [[tool.lockgen.rules]]
        match = { os = "linux" }
        extend-use = "two"
        extend-replace = ["not a name!"]
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
    """
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "numpy\n"})
    run = run_cli("matrix", "-C", str(root))
    assert run.code == 2
    assert "tool.lockgen.rules[0].extend-use" in run.err
    assert "tool.lockgen.rules[0].extend-replace[0]: 'not a name!' is not a package name" in run.err


def test_exclude_newer_package_reaches_uv(tmp_path):
    extra = 'exclude-newer = "2026-01-01T00:00:00Z"\nexclude-newer-package = { torch = false, "Numpy" = 2026-07-01 }'
    root = one_cell(tmp_path / "p", "https://pypi.org/simple", "numpy\n", python=HOST, extra=extra)
    argv = uv.compile_argv(plan_of(root), "out.toml")
    pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "--exclude-newer-package"]
    assert pairs == ["numpy=2026-07-01T00:00:00Z", "torch=false"]
    assert "exclude_newer_package=" in " ".join(f"{k}={v}" for k, v in plan_of(root).input_parts.items())
    bad = one_cell(
        tmp_path / "q",
        "https://pypi.org/simple",
        "numpy\n",
        python=HOST,
        extra="exclude-newer-package = { numpy = true }",
    )
    run = run_cli("matrix", "-C", str(bad))
    assert run.code == 2 and "tool.lockgen.exclude-newer-package.numpy: use false" in run.err


@pytest.mark.uv
def test_exclude_newer_package_exempts_a_package_from_the_cutoff(tmp_path, index):
    url = index.index_page("simple", [index.wheel("files", "fresh", "1.0")], upload_time=TIME)
    extra = 'exclude-newer = "2026-01-01T00:00:00Z"'
    root = one_cell(tmp_path / "p", url, "fresh\n", python=HOST, extra=extra)
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "exclude-newer-package = { fresh = false }" in run.err  # the hint names the setting
    text = (root / "pyproject.toml").read_text().replace(extra, extra + "\nexclude-newer-package = { fresh = false }")
    (root / "pyproject.toml").write_text(text)
    run_ok("all", "-C", str(root))


@pytest.mark.uv
def test_the_change_report_does_not_repeat_an_old_failure(tmp_path, index):
    index.add("numpy", "2.0")
    index.publish()
    root = one_cell(tmp_path / "p", index.index_url(), "numpy\nmissing-pkg\n", python=HOST)
    assert run_cli("all", "-C", str(root)).code == 1
    (root / "templates" / "requirements.in.j2").write_text("numpy\n")
    run = run_ok("all", "-C", str(root))
    line = next(line for line in run.err.splitlines() if "cell added" in line)
    assert "(was failed)" in line and "missing-pkg" not in line
