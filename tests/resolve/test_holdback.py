"""``--upgrade-package NAME`` names what holds NAME back (issue 18, item 7): a pin, a constraint,
another requirement, the exclude-newer cutoff, or nothing newer on the index. End to end on the fake
index with the real uv; the cutoff on a recorded uv explanation (the fake index's pages carry no
upload times)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from lockgen.resolve.uv import Result
from tests.conftest import run_ok, write_project

CONFIG = """
    index-url = "{index}"
    constraints = "constraints.txt.j2"
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
TEMPLATE = "torch\nnumpy\nalpha==1.0\nbeta\nzeta\n"


@pytest.fixture
def locked(tmp_path, index) -> Path:
    for version in ("1.0", "2.0"):
        index.add("numpy", version)
        index.add("alpha", version)
        index.add("beta", version)
    index.add("torch", "1.0", requires=("numpy<2.5",))
    index.add("zeta", "1.0")
    index.publish()
    files = {"requirements.in.j2": TEMPLATE, "constraints.txt.j2": "beta<2  # not yet\nnumpy<2.5\n"}
    root = write_project(tmp_path / "p", CONFIG.format(index=index.index_url()), files)
    run_ok("all", "-C", str(root))
    index.add("numpy", "3.0")
    index.publish()
    return root


def test_each_upgrade_says_what_holds_it(locked):
    run = run_ok(
        "all", "-C", str(locked), "--upgrade-package", "numpy", "--upgrade-package", "alpha",
        "--upgrade-package", "beta", "--upgrade-package", "zeta",
    )  # fmt: skip
    assert "alpha: kept at 1.0 in 1 cell, held by the pin templates/requirements.in.j2:3: alpha==1.0" in run.err
    assert "beta: kept at 1.0 in 1 cell, held by the constraint templates/constraints.txt.j2:1: beta<2" in run.err
    assert "numpy: kept at 2.0 in 1 cell, held by the constraint templates/constraints.txt.j2:2: numpy<2.5" in run.err
    assert "zeta: kept at 1.0 in 1 cell, held by nothing newer on the index" in run.err


def test_another_requirement_holds_it(locked):
    (locked / "templates" / "constraints.txt.j2").write_text("beta<2\n")
    run = run_ok("all", "-C", str(locked), "--upgrade-package", "numpy")
    assert "numpy: kept at 2.0 in 1 cell, held by every version of torch, which requires numpy<2.5" in run.err


class Replay:
    """A uv runner that answers every command with one recorded result."""

    def __init__(self, result: Result) -> None:
        self.result = result

    def run(self, argv, env, cwd):
        return self.result


def test_the_cutoff_holds_it(tmp_path):
    from lockgen.plan.mirror import Mirrors
    from lockgen.plan.render import LineMap, environment
    from lockgen.project import Project
    from lockgen.resolve.holdback import holder

    root = write_project(
        tmp_path / "p",
        CONFIG.replace("constraints = ", 'exclude-newer = "2026-01-01T00:00:00Z"\n    # ').format(
            index="https://pypi.org/simple"
        ),
        {"requirements.in.j2": "numpy\n"},
    )
    project = Project.load(root)
    (plan,) = project.plans(project.cells)
    lines = LineMap(environment(project.config), project.config.templates)
    stderr = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because numpy>2.0 was published after the exclude newer time and you require numpy>2.0, we can\n"
        "      conclude that your requirements are unsatisfiable.\n"
    )
    why = holder(project.config, lines, plan, "numpy", Version("2.0"), Mirrors(), Replay(Result(1, stderr)))
    assert why == "the exclude-newer cutoff 2026-01-01T00:00:00Z: newer versions were published after it"
