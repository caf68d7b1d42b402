"""Update bots: the Renovate preset (renovate/lockgen.json, which the recipe examples/bots/renovate.json
extends) and the
Dependabot-style relock workflow (examples/github-actions/lockgen-relock.yml), each tested by
simulating the bot's edit on a project locked against the fake index, then running what the bot
or the workflow runs, and checking the re-lock and the change report.

Renovate's regex manager is simulated as its ``recursive`` strategy works (each matchString applied
with the ``g`` flag to each match of the one before, the last match being the string whose
``currentValue`` is replaced); the patterns are also run by Node's RegExp, when Node is installed,
to check that JavaScript reads them as Python does."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from lockgen import __version__
from tests.conftest import locked_versions, run_cli, run_ok, write_project
from tests.repo.test_workflows import git, jobs, script, step_script

REPO = Path(__file__).resolve().parents[2]
RENOVATE = REPO / "examples" / "bots" / "renovate.json"
PRESET = REPO / "renovate" / "lockgen.json"
#: How a project names the preset: Renovate's ``github>owner/repo//path/file#tag`` (the file without
#: ``.json``, at the tag of the lockgen release the project's locks come from).
PRESET_REF = re.compile(r"^github>lockgen/lockgen//(?P<path>[\w./-]+)#v(?P<version>.+)$")
RELOCK = REPO / "examples" / "github-actions" / "lockgen-relock.yml"
CELL = "linux-x86_64-cpu-py3.12"

# ---- Renovate's presets and regex manager, simulated ----------------------------------------------


def resolved(path: Path = RENOVATE) -> dict:
    """The config of ``path`` with its lockgen presets merged in as Renovate merges ``extends``:
    each preset first, then the file's own keys; arrays of ``customManagers`` are concatenated,
    other keys replaced. Renovate's built-in presets (``config:recommended``) are left out."""
    config = json.loads(path.read_text())
    merged: dict = {}
    for ref in config.get("extends", []):
        match = PRESET_REF.match(ref)
        if match is None:
            continue
        preset = resolved(REPO / f"{match['path']}.json")
        for key, value in preset.items():
            merged[key] = merged.get(key, []) + value if key == "customManagers" else value
    for key, value in config.items():
        if key != "extends":
            merged[key] = merged.get(key, []) + value if key == "customManagers" else value
    return merged


def managers(path: str) -> list[dict]:
    """The custom managers of renovate.json whose managerFilePatterns (``/regex/``) match ``path``."""
    found = []
    for manager in resolved()["customManagers"]:
        patterns = [p.strip("/") for p in manager["managerFilePatterns"]]
        if any(re.search(p, path) for p in patterns):
            found.append(manager)
    return found


def python_pattern(js: str) -> re.Pattern[str]:
    return re.compile(js.replace("(?<", "(?P<"))


def extract(manager: dict, content: str) -> list[dict[str, str]]:
    """``{depName, currentValue, replaceString}`` per dependency, as the recursive strategy finds them."""
    assert manager["matchStringsStrategy"] == "recursive"
    regexes = [python_pattern(s) for s in manager["matchStrings"]]

    def walk(text: str, index: int, groups: dict[str, str]) -> list[dict[str, str]]:
        if index == len(regexes):
            return [{**groups, "replaceString": text}]
        out = []
        for match in regexes[index].finditer(text):
            named = {k: v for k, v in match.groupdict().items() if v is not None}
            out += walk(match.group(0), index + 1, {**groups, **named})
        return out

    return [d for d in walk(content, 0, {}) if "depName" in d and "currentValue" in d]


def renovate(root: Path, updates: dict[str, str]) -> list[str]:
    """Apply ``{package: new version}`` to every file the managers match, replacing each
    dependency's currentValue inside its replaceString; returns the files changed."""
    changed = []
    for path in sorted(
        p for p in root.rglob("*") if p.is_file() and ".lockgen" not in p.parts and "locks" not in p.parts
    ):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        new = text
        for manager in managers(rel):
            for dep in extract(manager, text):
                if dep["depName"] in updates:
                    old = dep["replaceString"]
                    new = new.replace(old, old.replace(dep["currentValue"], updates[dep["depName"]], 1), 1)
        if new != text:
            path.write_text(new)
            changed.append(rel)
    return changed


PYPROJECT = """\
[tool.lockgen]
index-url = "{index}"
find-links = {{ builds = ["{builds}"] }}

[tool.lockgen.pins]
alpha = "1.0"  # read by the template

[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.12"]
"""
TEMPLATE = """\
alpha=={{ pins.alpha }}
beta==1.0+cpu  # the CPU build
gamma==1.0; python_version < "3.13"
delta[extra]==1.0
"""


def test_the_recipe_extends_the_preset_of_this_release():
    """The recipe holds no managers of its own: it names the preset at the tag of this release,
    and the preset is a file Renovate reads as a preset (JSON, no ``extends`` of Renovate's
    defaults: the project chooses those)."""
    recipe = json.loads(RENOVATE.read_text())
    assert set(recipe) == {"$schema", "extends"}
    refs = [m for m in map(PRESET_REF.match, recipe["extends"]) if m]
    assert [(m["path"], m["version"]) for m in refs] == [("renovate/lockgen", __version__)]
    preset = json.loads(PRESET.read_text())
    assert "extends" not in preset and preset["description"].startswith("lockgen:")
    assert {"customManagers", "postUpgradeTasks"} <= set(preset)
    assert all(m["customType"] == "regex" and m["datasourceTemplate"] == "pypi" for m in preset["customManagers"])


def test_the_regex_managers_find_the_pins_a_bot_may_move():
    (pins,) = managers("pyproject.toml")
    found = extract(pins, PYPROJECT + '[tool.other]\nalpha = "9"\n')
    assert [(d["depName"], d["currentValue"]) for d in found] == [("alpha", "1.0")]
    (templates,) = managers("templates/requirements.in.j2")
    found = extract(templates, TEMPLATE + "# eps==1.0 in a comment\nzeta>=1\n")
    assert [(d["depName"], d["currentValue"]) for d in found] == [("beta", "1.0"), ("delta", "1.0")]  # no marker line
    assert managers("locks/linux-x86_64-cpu-py3.12.txt") == []


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_javascript_reads_the_patterns_as_python_does():
    program = """
    const [config, texts] = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const found = {};
    for (const [i, m] of config.customManagers.entries()) {
      const text = texts[i];
      const walk = (content, index, groups) => {
        if (index === m.matchStrings.length) return [groups];
        return [...content.matchAll(new RegExp(m.matchStrings[index], "g"))]
          .flatMap((match) => walk(match[0], index + 1, {...groups, ...(match.groups || {})}));
      };
      found[i] = walk(text, 0, {}).filter((g) => g.depName && g.currentValue).map((g) => [g.depName, g.currentValue]);
    }
    console.log(JSON.stringify(found));
    """
    lockgen_toml = '[pins]\ntorch = "2.9.1"  # c\n\n[sources.pytorch.pins]\nno = "1.0"\n'
    data = json.dumps([resolved(), [PYPROJECT, lockgen_toml, TEMPLATE]])
    run = subprocess.run(["node", "-e", program], input=data, capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(run.stdout) == {
        "0": [["alpha", "1.0"]], "1": [["torch", "2.9.1"]], "2": [["beta", "1.0"], ["delta", "1.0"]],
    }  # fmt: skip


def locked_project(tmp_path: Path, index) -> Path:
    for name in ("alpha", "gamma", "delta"):
        for version in ("1.0", "1.1"):
            index.add(name, version)
    for version in ("1.0+cpu", "1.1+cpu", "1.1+cu130"):
        index.add("beta", version, source="builds")
    index.publish()
    root = tmp_path / "project"
    write_project(root, "", {"requirements.in.j2": TEMPLATE})
    (root / "pyproject.toml").write_text(PYPROJECT.format(index=index.index_url(), builds=index.flat_url("builds")))
    run_ok("all", "-C", str(root))
    return root


def test_renovate_moves_the_pins_of_a_lockgen_toml(tmp_path):
    """``lockgen init`` writes ``lockgen.toml``: its top-level ``[pins]`` are moved as
    ``[tool.lockgen.pins]`` are; a source's ``[sources.X.pins]`` and specifiers are not."""
    text = (
        '[pins]\ntorch = "2.9.1"  # the CUDA build\n"numpy" = \'2.1.0\'\nloose = ">=1"\n\n'
        '[sources.pytorch.pins]\ntorch = "2.9.1"\n\n[matrix]\nos = ["linux"]\n'
    )
    (tmp_path / "lockgen.toml").write_text(text)
    assert renovate(tmp_path, {"torch": "2.9.2", "numpy": "2.2.0", "loose": "2"}) == ["lockgen.toml"]
    assert (tmp_path / "lockgen.toml").read_text() == text.replace('torch = "2.9.1"  #', 'torch = "2.9.2"  #').replace(
        "'2.1.0'", "'2.2.0'"
    )


def test_renovate_edit_then_its_post_upgrade_task(tmp_path, index, monkeypatch):
    """The bot moves alpha, beta and delta (gamma's marker line is not its business), runs
    ``lockgen all`` as postUpgradeTasks says, and commits what fileFilters names."""
    root = locked_project(tmp_path, index)
    before = tmp_path / "before"
    shutil.copytree(root / "locks", before)
    tracked = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert renovate(root, {"alpha": "1.1", "beta": "1.1", "delta": "1.1", "gamma": "1.1"}) == [
        "pyproject.toml", "templates/requirements.in.j2",
    ]  # fmt: skip
    assert 'alpha = "1.1"  # read by the template' in (root / "pyproject.toml").read_text()
    assert (root / "templates" / "requirements.in.j2").read_text() == TEMPLATE.replace(
        "beta==1.0", "beta==1.1"
    ).replace("delta[extra]==1.0", "delta[extra]==1.1")
    tasks = resolved()["postUpgradeTasks"]
    monkeypatch.chdir(root)
    for command in tasks["commands"]:
        argv = shlex.split(command)
        assert argv[0] == "lockgen"
        run = run_cli(*argv[1:])
        assert run.code == 0, run.err
    changed = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and ".lockgen" not in p.parts and tracked.get(p.relative_to(root).as_posix()) != p.read_bytes()
    }
    committed = {rel for rel in changed if re.fullmatch(r"locks/.+", rel)}  # fileFilters: locks/**
    assert changed - committed == {"pyproject.toml", "templates/requirements.in.j2"}  # the bot's own edits
    assert f"locks/{CELL}.txt" in committed
    versions = locked_versions((root / "locks" / f"{CELL}.txt").read_text())
    assert (versions["alpha"], versions["beta"], versions["delta"], versions["gamma"]) == (
        "1.1",
        "1.1+cpu",
        "1.1",
        "1.0",
    )
    report = run_ok("diff", str(before), "locks", "--format", "markdown").out
    assert "| **alpha** | 1.0 → 1.1 | 1 of 1 cell |" in report
    assert "| **beta** | 1.0+cpu → 1.1+cpu | 1 of 1 cell |" in report
    assert "gamma" not in report


# ---- the Dependabot-style relock workflow ---------------------------------------------------------

DEPENDABOT_PROJECT = """\
[project]
name = "app"
version = "1.0"
dependencies = [
    "alpha==1.0",
]

[tool.lockgen]
index-url = "{index}"

[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.12"]
"""

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@needs_git
def test_relock_workflow_pushes_the_locks_and_writes_the_report(tmp_path, index):
    """Dependabot bumps ``alpha`` in ``[project].dependencies``; the workflow's own scripts re-lock,
    write the markdown report against the base commit and push one commit of locks to the branch."""
    for version in ("1.0", "1.1"):
        index.add("alpha", version)
    index.publish()
    origin = tmp_path / "origin"
    write_project(origin, "", {"requirements.in.j2": '{{ project.dependencies | join("\\n") }}\n'})
    (origin / "pyproject.toml").write_text(DEPENDABOT_PROJECT.format(index=index.index_url()))
    (origin / ".gitignore").write_text(".lockgen/\n")
    run_ok("all", "-C", str(origin))
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", ".")
    git(origin, "commit", "-qm", "project and locks")
    base = git(origin, "rev-parse", "HEAD").strip()
    # the bot's pull request: one edit of pyproject.toml on its own branch
    branch = "dependabot/pip/alpha-1.1"
    git(origin, "checkout", "-q", "-b", branch)
    pyproject = origin / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"alpha==1.0"', '"alpha==1.1"'))
    git(origin, "commit", "-qam", "Bump alpha from 1.0 to 1.1")
    git(origin, "checkout", "-q", "main")
    # the workflow's job: a clone of the branch (checkout with ref: head_ref, fetch-depth: 0)
    work = tmp_path / "runner"
    git(tmp_path, "clone", "-q", "-b", branch, str(origin), str(work))
    job = jobs(RELOCK.read_text())["relock"]
    summary = tmp_path / "summary.md"
    env = {"CONFIG": "pyproject.toml", "LOCKS": "locks", "GITHUB_STEP_SUMMARY": str(summary)}
    script(work, step_script(job, "Re-lock"), **env)
    script(work, step_script(job, "Write the change report"), BASE=base, **env)
    report = (work / "diff.md").read_text()
    assert report.startswith(f"## Lock changes: {base} → work tree\n")
    assert "| **alpha** | 1.0 → 1.1 | 1 of 1 cell |" in report
    assert summary.read_text() == report
    script(work, step_script(job, "Push the locks to the pull request"), GH_TOKEN="t0ken", HEAD_REF=branch, **env)
    log = git(origin, "log", "--format=%s", branch).splitlines()
    assert log[:2] == ["lockgen: re-lock", "Bump alpha from 1.0 to 1.1"]
    changed = git(origin, "diff", "--name-only", f"{branch}~1", branch).split()
    assert changed and all(name.startswith("locks/") for name in changed)
    assert "t0ken" not in (work / ".git" / "config").read_text()
    git(origin, "checkout", "-q", branch)
    assert run_cli("check", "-C", str(origin)).code == 0
    assert "alpha==1.1 \\" in (origin / "locks" / f"{CELL}.txt").read_text()
    # a second run (a push that changes nothing) pushes nothing
    script(work, step_script(job, "Push the locks to the pull request"), GH_TOKEN="t0ken", HEAD_REF=branch, **env)
    assert git(origin, "rev-parse", branch) == git(work, "rev-parse", "HEAD")


def test_the_relock_workflow_runs_only_for_bots_on_their_own_branches():
    text = RELOCK.read_text()
    assert 'contains(fromJSON(\'["dependabot[bot]", "renovate[bot]"]\'), github.event.pull_request.user.login)' in text
    assert "github.event.pull_request.head.repo.full_name == github.repository" in text
    assert "persist-credentials: false" in text
