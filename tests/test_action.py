"""The reusable GitHub Action (``action.yml``, issue 20 item 3): a composite action that installs
lockgen as a tool and runs one command.

The slow tests run the action's own steps as the runner would (``bash --noprofile --norc -eo
pipefail``, inputs and step outputs through ``env:``, ``GITHUB_ACTION_PATH`` a copy of this
repository, ``GITHUB_OUTPUT`` files), in a user's repository whose own ``pyproject.toml`` could
not be installed: lockgen must come from the action's folder, never from ``pip install -e .``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lockgen import __version__
from tests.conftest import run_ok
from tests.test_workflows import PINNED
from tests.wheelhouse import lockgen_wheelhouse, offline_env, source_copy

REPO = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def test_the_action_is_composite_with_the_inputs_the_docs_name():
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {
        "command",
        "args",
        "python-version",
        "lockgen-version",
        "extras",
        "working-directory",
        "output",
    }
    assert all(spec.get("description") for spec in ACTION["inputs"].values())
    assert set(ACTION["outputs"]) == {"exit-code", "lockgen"}


def test_every_step_is_safe_as_written():
    """Pinned actions, bash everywhere, and no ``${{ … }}`` pasted into a script (inputs reach
    the scripts only through ``env:``)."""
    steps = ACTION["runs"]["steps"]
    python = steps[0]
    action, ref = python["uses"].split("@")
    assert (ref, "v5.6.0") == PINNED[action]
    assert python["with"]["update-environment"] is False  # the job's own python is left alone
    for step in steps[1:]:
        assert step["shell"] == "bash"
        assert "${{" not in step["run"]


def test_the_install_step_reads_lockgen_version_as_the_package_does():
    script = ACTION["runs"]["steps"][1]["run"]
    (line,) = [line for line in script.splitlines() if line.startswith("own=")]
    out = subprocess.run(["bash", "-c", line + '; printf %s "$own"'], env={**os.environ, "GITHUB_ACTION_PATH": str(REPO)},
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert out == __version__


# -- the action, run as a runner runs it (slow) -------------------------------------------------------


class Runner:
    """Runs the action's steps in ``workspace`` with ``inputs``, as a composite action runs."""

    def __init__(self, action_path: Path, temp: Path, env: dict[str, str]):
        self.action_path, self.temp, self.env = action_path, temp, env
        self.path_file = temp / "github-path"

    def evaluate(self, text: str, inputs: dict[str, str], steps: dict[str, dict[str, str]]) -> str:
        def one(match: re.Match[str]) -> str:
            expr = match[1]
            condition = re.fullmatch(r"(\S+) != ''", expr)
            if condition:
                return "true" if self.lookup(condition[1], inputs, steps) != "" else "false"
            return self.lookup(expr, inputs, steps)

        return EXPRESSION.sub(one, text)

    @staticmethod
    def lookup(expr: str, inputs: dict[str, str], steps: dict[str, dict[str, str]]) -> str:
        parts = expr.split(".")
        if parts[0] == "inputs":
            return inputs[parts[1]]
        if parts[0] == "steps" and parts[2] == "outputs":
            return steps.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"the emulator does not know the expression {expr!r}: teach it")

    def run(self, workspace: Path, **given: str) -> tuple[int, str, dict[str, str]]:
        """(exit code of the first failing step or 0, every step's output, the action's outputs)."""
        inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
        inputs |= {k.replace("_", "-"): v for k, v in given.items()}
        steps: dict[str, dict[str, str]] = {"python": {"python-path": sys.executable}}
        log = ""
        for step in ACTION["runs"]["steps"][1:]:
            if "if" in step and self.evaluate(step["if"], inputs, steps) != "true":
                continue
            output = self.temp / f"output-{step['id']}"
            output.write_text("")
            env = {**self.env, "GITHUB_ACTION_PATH": str(self.action_path), "RUNNER_TEMP": str(self.temp),
                   "RUNNER_OS": "Linux", "GITHUB_PATH": str(self.path_file), "GITHUB_OUTPUT": str(output)}  # fmt: skip
            env |= {k: self.evaluate(v, inputs, steps) for k, v in step.get("env", {}).items()}
            cwd = workspace / self.evaluate(step.get("working-directory", "."), inputs, steps)
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600,
            )  # fmt: skip
            log += done.stdout + done.stderr
            steps[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
            if done.returncode:
                return done.returncode, log, steps.get("run", {})
        outputs = {name: self.evaluate(spec["value"], inputs, steps) for name, spec in ACTION["outputs"].items()}
        return 0, log, outputs


@pytest.fixture(scope="module")
def runner(tmp_path_factory) -> Runner:
    house = lockgen_wheelhouse(tmp_path_factory.mktemp("wheelhouse"))
    env = offline_env(house, Path(os.environ.get("UV_CACHE_DIR") or tmp_path_factory.mktemp("uv-cache")))
    action_path = source_copy(REPO, tmp_path_factory.mktemp("actions") / "lockgen")
    return Runner(action_path, tmp_path_factory.mktemp("runner-temp"), env)


USER_PROJECT = """\
[project]
name = "myapp"
version = "1.0"
dependencies = ["no-such-package-anywhere==99"]  # pip install -e . of this project fails

[tool.lockgen]
index-url = "{index}"

[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.12"]
"""


@pytest.mark.slow
def test_the_action_installs_lockgen_from_its_own_folder_and_runs_a_command(runner, tmp_path, fake_host):
    index = fake_host("pypi")
    index.add("alpha", "1.0")
    index.publish()
    workspace = tmp_path / "myapp"
    (workspace / "templates").mkdir(parents=True)
    (workspace / "pyproject.toml").write_text(USER_PROJECT.format(index=index.index_url()))
    (workspace / "templates" / "requirements.in.j2").write_text("alpha\n")
    run_ok("all", "-C", str(workspace))  # the locks the user committed

    code, log, outputs = runner.run(workspace, command="check", args="--json", output="check.json")
    assert code == 0, log
    assert f"lockgen {__version__} (uv " in log
    assert outputs["exit-code"] == "0"
    assert json.loads((workspace / "check.json").read_text())["ok"] is True
    tool = Path(outputs["lockgen"]).parent.parent
    assert tool.is_relative_to(runner.temp) and (runner.path_file.read_text().splitlines()[-1] == str(tool / "bin"))
    site = subprocess.run([tool / "bin" / "python", "-m", "pip", "list"], capture_output=True, text=True, check=True)
    assert "lockgen" in site.stdout and "myapp" not in site.stdout

    python = tool / "bin" / "python"
    before = python.lstat().st_mtime_ns
    code, log, outputs = runner.run(workspace, command="matrix", args="--json --only 'backend=cpu'")
    assert code == 0, log
    assert python.lstat().st_mtime_ns == before  # a second use in the job reuses the tool venv
    assert '"name": "linux-x86_64-cpu-py3.12"' in log

    (workspace / "templates" / "requirements.in.j2").write_text("alpha>=1\n")
    code, log, outputs = runner.run(workspace, command="check")
    assert code == 1 and outputs["exit-code"] == "1", log  # a stale lock fails the step


@pytest.mark.slow
def test_a_lockgen_version_the_actions_ref_is_not_fails_the_step(runner, tmp_path):
    code, log, _ = runner.run(tmp_path, command="check", lockgen_version="9.9.9")
    assert code == 1
    assert (
        f"::error title=lockgen::lockgen-version 9.9.9 is not the version of this action's ref ({__version__})" in log
    )
    code, log, _ = runner.run(tmp_path, lockgen_version=__version__)  # its own version: installs
    assert code == 0, log
