"""Naming the requirement that fought a pin that cannot move (field case C08), on uv's words."""

from __future__ import annotations

from pathlib import Path

from lockgen.config import Settings
from lockgen.plan.matrix import Cell
from lockgen.plan.plan import Plan
from lockgen.plan.render import Rendered
from lockgen.plan.target import target_for
from lockgen.resolve.blame import blame

DATA = Path(__file__).parents[1] / "data" / "uv"


def plan(tmp_path: Path, requirements: str, pinned: dict[str, str]) -> Plan:
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "requirements.in.j2").write_text(requirements)
    base = Settings(
        requirements="requirements.in.j2", index_url="https://pypi.org/simple", manylinux="2_28", macos="14.0"
    )
    cell = Cell(os="linux", arch="x86_64", backend="cpu", python="3.12", settings=base)
    rendered = requirements + "# pins that cannot move\n" + "".join(f"{n}=={v}\n" for n, v in pinned.items())
    return Plan(
        cell=cell, target=target_for(cell), rendered=Rendered(files={"requirements": ("requirements.in.j2", rendered)}),
        lock=f"locks/{cell.name}.txt", work=f".lockgen/{cell.name}", uv_version="0.13.9", pinned=pinned,
    )  # fmt: skip


def test_a_requirement_of_another_package_that_fought_the_pin_is_named(tmp_path):
    the_plan = plan(tmp_path, "timm\nsetuptools==69.5.1\n", {"torch": "2.13.0"})
    text = blame(tmp_path, the_plan, (DATA / "pin-fought.txt").read_text())
    assert "the pin(s) torch==2.13.0 cannot move" in text
    assert "templates/requirements.in.j2:2: setuptools==69.5.1" in text
    assert "templates/requirements.in.j2:1: timm" in text  # timm pulled torch: uv's explanation names it


def test_a_template_line_of_the_pinned_package_itself_is_named(tmp_path):
    """A review found no blame for ``attrs`` pinned to 25.1.0 next to a template line ``attrs==25.3.0``."""
    stderr = (
        "error: No solution found when resolving dependencies\n"
        "  cause: Because you require attrs==25.3.0 and attrs==25.1.0, we can conclude that your requirements are unsatisfiable.\n"
    )
    text = blame(tmp_path, plan(tmp_path, "requests\nattrs==25.3.0\n", {"attrs": "25.1.0"}), stderr)
    assert "templates/requirements.in.j2:2: attrs==25.3.0" in text
    assert (
        "attrs==25.1.0" not in text.split("fought them:")[1].splitlines()[1:-1][0]
    )  # lockgen's own pin line is not blamed
