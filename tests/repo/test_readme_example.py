"""The "Start a project" example of docs/locking.md, taken from the page itself: its config is valid,
its matrix has the cells the README says, and its template renders what the text promises
(no uv: rendering only)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from lockgen.project import Project
from tests.conftest import run_cli

README = Path(__file__).parents[2] / "docs" / "locking.md"


def _example() -> tuple[str, str]:
    section = README.read_text(encoding="utf-8").split("## Start a project", 1)[1].split("\n## ", 1)[0]
    toml = re.search(r"```toml\n(.*?)```", section, re.S)
    jinja = re.search(r"```jinja\n(.*?)```", section, re.S)
    assert toml and jinja, "the README's Start a project section lost its config or template"
    return toml.group(1), jinja.group(1)


def test_the_start_a_project_example_works(tmp_path):
    config, template = _example()
    (tmp_path / "pyproject.toml").write_text(config)
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "requirements.in.j2").write_text(template)
    run = run_cli("matrix", "--json", "-C", str(tmp_path))
    assert run.code == 0, run.err
    cells = [row["name"] for row in json.loads(run.out)]
    assert len(cells) == 8, cells  # "lockgen matrix lists the 8 cells"
    project = Project.load(tmp_path, None)
    rendered = {p.cell.name: p.rendered.files["requirements"][1] for p in project.plans(project.cells)}
    linux, windows = rendered["linux-x86_64-cpu-py3.12"], rendered["windows-x86_64-cpu-py3.12"]
    for text in (linux, windows):
        lines = {line.strip() for line in text.splitlines() if line.strip()}
        assert {"fastapi>=0.110", "pillow", "numpy==2.3.5"} <= lines
        assert not any(line.startswith("numpy") and line != "numpy==2.3.5" for line in lines)
    assert "scikit-learn" in linux and "scikit-learn" not in windows  # the rule's group
    run = run_cli("detect", "--cpu", "--os", "linux", "--arch", "x86_64", "--python", "3.12", "-C", str(tmp_path))
    assert run.code == 0, run.err
    assert "linux-x86_64-cpu-py3.12" in run.out
