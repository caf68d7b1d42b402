"""What a newcomer who reads only the README and docs relies on, checked against the repository:
the workflow examples' table lists every workflow in one table and no page counts them (a count
goes stale), ``python -m build``'s output is ignored by git, the quick start says what
``install --detect`` needs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).parents[2]
WORKFLOWS = ROOT / "examples" / "github-actions"


def test_the_workflow_examples_table_lists_every_workflow_in_one_table():
    text = (WORKFLOWS / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([^`]+\.yml)` \|", text, re.MULTILINE)
    assert sorted(rows) == sorted(p.name for p in WORKFLOWS.glob("*.yml"))
    lines = text.splitlines()
    table = [i for i, line in enumerate(lines) if line.startswith("|")]
    assert table == list(range(table[0], table[-1] + 1)), "a blank line splits the table in two"


def test_no_page_counts_the_example_workflows():
    counted = re.compile(r"\b(one|two|three|four|five|six|seven|\d+) (ready )?workflows\b", re.IGNORECASE)
    pages = [ROOT / "README.md", WORKFLOWS / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in pages for m in counted.finditer(p.read_text("utf-8"))]
    assert found == []


def test_build_output_is_ignored_by_git():
    for path in ("dist/lockgen-0.1.0-py3-none-any.whl", "build/lib/lockgen/cli.py"):
        done = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, check=False)
        assert done.returncode == 0, f"{path} is not ignored"


def test_the_quick_start_says_install_detect_needs_a_detect_table():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    at = text.index("lockgen install --detect")
    assert "`[detect]` table" in text[at : at + 300] and "docs/installing.md#detect" in text[at : at + 400]
