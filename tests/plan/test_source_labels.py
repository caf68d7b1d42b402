"""The pure parts of sources as real projects use them (tests/e2e/test_real_sources.py runs uv): the
label policy of an index source, placeholder and label problems with their key paths, and what a
cell's requirements name for its target (CASES C25). No uv, no host: plans only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_project
from tests.e2e.test_real_sources import PYTORCH


def cells_of(tmp_path: Path, config: str, template: str = "torch\n"):
    from lockgen.project import Project

    project = Project.load(write_project(tmp_path, config, {"requirements.in.j2": template}))
    return {plan.cell.name: plan for plan in project.plans(project.cells)}


@pytest.mark.parametrize(
    ("labels", "cell", "expected"),
    [
        ("", "linux-x86_64-cu128-py3.12", {"torch": "cu128", "xformers": None, "triton-rocm": None}),
        ("", "macos-aarch64-cpu-py3.12", {"torch": "", "xformers": None, "triton-rocm": None}),
        ('[tool.lockgen.sources.pytorch.labels]\ntorch = "*"\nxformers = "{flavor}"\ntriton-rocm = ""',
         "linux-x86_64-cu128-py3.12", {"torch": None, "xformers": "cu128", "triton-rocm": ""}),
    ],
    ids=["default", "macos-cpu-unlabelled", "configured"],
)  # fmt: skip
def test_label_policy(tmp_path, labels, cell, expected):
    plan = cells_of(tmp_path, PYTORCH.format(extra="", labels=labels))[cell]
    source = plan.sources[0]
    assert {name: source.expected_label(name) for name in source.packages} == expected
    assert plan.pinned["torch"] == "2.7.0" + (f"+{expected['torch']}" if expected["torch"] else "")


def test_label_and_placeholder_problems_name_their_keys(tmp_path):
    from lockgen.project import Project
    from lockgen.runtime.errors import ConfigError

    config = """
        vars = { wheel_set = "cpu" }
        [tool.lockgen.sources.llama]
        urls = ["https://example.org/{wheel_set}/{nope}/x.whl"]
        packages = ["x"]
        labels = { x = "cpu" }
        [tool.lockgen.sources.pytorch]
        index = "https://download.pytorch.org/whl/{flavor}"
        packages = ["torch"]
        labels = { torchvision = "{flavor}", torch = "+cu128" }
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
    """
    with pytest.raises(ConfigError) as info:
        Project.load(write_project(tmp_path, config, {"requirements.in.j2": "x\n"}))
    problems = info.value.messages
    assert (
        "tool.lockgen.sources.llama.urls: bad placeholder 'nope' in 'https://example.org/{wheel_set}/{nope}/x.whl'"
        in problems[-1]
    )
    assert any(p.startswith("tool.lockgen.sources.llama.labels: only an index source has labels") for p in problems)
    assert any(
        p.startswith("tool.lockgen.sources.pytorch.labels.torchvision: not one of the source's packages")
        for p in problems
    )
    assert any(p.startswith("tool.lockgen.sources.pytorch.labels.torch: must be a label") for p in problems)


def test_what_the_requirements_name_for_the_target(tmp_path):
    from lockgen.plan.plan import index_pins
    from lockgen.plan.sources import index_project

    template = "torch>=2.7 ; sys_platform == 'linux'\nxformers ; sys_platform == 'darwin'\nnumpy\nother @ https://x.org/o-1-py3-none-any.whl\n"
    plans = cells_of(tmp_path, PYTORCH.format(extra="", labels=""), template)
    linux = plans["linux-x86_64-cu128-py3.12"]
    assert [str(r) for _, r in index_pins(linux)] == ['torch>=2.7; sys_platform == "linux"', "torch==2.7.0+cu128"]
    text = index_project(index_pins(linux), lambda url: url.replace("https://download.pytorch.org", "http://mirror"))
    assert 'dependencies = ["torch", "torch ; sys_platform == \\"linux\\""]' in text
    assert 'torch = { index = "lockgen-pytorch" }' in text
    assert 'url = "http://mirror/whl/cu128"' in text
    assert [r.name for _, r in index_pins(plans["macos-aarch64-cpu-py3.12"])] == ["xformers", "torch"]


def test_a_cell_problem_elsewhere_does_not_stop_planning_the_chosen_cells(tmp_path):
    """A placeholder only the linux cells fill is a config problem of the windows cell alone:
    ``lockgen lock <linux cell>`` plans its cell all the same (``all`` reports the problem)."""
    from lockgen.project import Project
    from lockgen.run.lock import _plan_all
    from lockgen.runtime.errors import ConfigError

    config = """
        use = ["llama"]
        [tool.lockgen.sources.llama]
        urls = ["https://example.org/{wheel_set}/x-1.0-py3-none-any.whl"]
        packages = ["x"]
        [tool.lockgen.matrix]
        os = ["linux", "windows"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
        [[tool.lockgen.rules]]
        match = { os = "linux" }
        vars = { wheel_set = "cpu" }
    """
    project = Project.load(write_project(tmp_path, config, {"requirements.in.j2": "x\n"}))
    with pytest.raises(ConfigError, match="wheel_set"):
        project.plans(project.cells)
    linux = [c for c in project.cells if c.os == "linux"]
    assert [p.cell.name for p in _plan_all(project, linux)] == ["linux-x86_64-cpu-py3.12"]
