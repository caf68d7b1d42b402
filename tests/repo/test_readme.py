"""Every code block of the README stays true (issue 20, item 4): each block is claimed by a check
here (a new block needs one), every ``lockgen`` line parses as the CLI has it, the install lines
name this version's tag (tests/e2e/test_install_tool.py installs from such a tag), the developer
commands are the ones CI runs, the workflow snippet uses the action's inputs, and the quick start
runs: ``lockgen init`` on requirement files, then the lines of steps 2 and 3 as written, against
fake hosts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from lockgen import __version__
from lockgen.cli import parse
from tests.conftest import run_cli, run_ok

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks() -> list[tuple[str, str]]:
    return [(m[1], m[2]) for m in BLOCK.finditer(README)]


def commands(body: str) -> list[str]:
    return [line.split("  #")[0].split(" # ")[0].strip() for line in body.splitlines() if line.strip()]


def test_every_block_is_claimed():
    langs = [lang for lang, _ in blocks()]
    # the diagram, install, init, all, check, the workflow, the two developer commands
    assert langs == ["", "sh", "sh", "sh", "sh", "yaml", "sh", "sh"], langs
    for lang, body in blocks():
        assert lang in ("", "sh", "yaml"), lang
        if lang == "sh":
            for line in commands(body):
                assert line.startswith(("lockgen ", "uv tool install", "pipx install", "python3 -m ")), line


def test_every_lockgen_line_parses():
    for lang, body in blocks():
        for line in commands(body) if lang == "sh" else []:
            if line.startswith("lockgen "):
                parse(shlex.split(line)[1:])  # a usage error exits


def test_install_lines_name_this_versions_tag():
    (install,) = [body for lang, body in blocks() if lang == "sh" and "tool install" in body]
    for line in commands(install):
        assert f"@v{__version__}'" in line or f"lockgen-{__version__}-py3-none-any.whl" in line, line
    assert f"lockgen {__version__} (uv " in README


def test_the_developer_commands_are_the_ones_ci_runs():
    ci = (REPO / ".ci" / "run").read_text()
    dev = [commands(body)[0] for lang, body in blocks() if lang == "sh" and body.startswith("python3 -m venv")]
    assert dev == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/lockgen all --force",
        "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest",
    ]
    assert ci.count("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && ") == 1
    assert ".venv/bin/pytest" in ci


def test_the_workflow_snippet_uses_the_action_as_it_is():
    ((_, body),) = [b for b in blocks() if b[0] == "yaml"]
    steps = yaml.safe_load(body)["jobs"]["check"]["steps"]
    action = yaml.safe_load((REPO / "action.yml").read_text())
    ours = [s for s in steps if s.get("uses", "").startswith("lockgen/lockgen@")]
    assert ours and ours[0]["uses"] == f"lockgen/lockgen@v{__version__}"
    assert set(ours[0].get("with", {})) <= set(action["inputs"])


FILES = {
    "requirements_cuda.txt": "--extra-index-url https://download.pytorch.org/whl/cu128\ntorch==2.7.1+cu128\npillow\n",
    "requirements_mac.txt": "torch==2.7.1\npillow\n",
}


def test_the_quick_start_runs(tmp_path, fake_host):
    """Step 1 (``lockgen init``), then every line of steps 2 and 3 that needs no git history."""
    for rel, text in FILES.items():
        (tmp_path / rel).write_text(text)
    pypi, pytorch = fake_host("pypi"), fake_host("pytorch")
    files = [pypi.wheel("files", "pillow", "11.0"), pypi.wheel("files", "torch", "2.7.1")]
    pypi.index_page("simple", files, upload_time="2026-01-01T00:00:00Z")
    pytorch.index_page("whl/cu128", [pytorch.wheel("whl/cu128/files", "torch", "2.7.1+cu128")])
    mirrors = ["--mirror", f"https://pypi.org/simple={pypi.url}/simple", "--mirror",
               f"https://files.pythonhosted.org={pypi.url}/files", "--mirror", f"https://download.pytorch.org={pytorch.url}"]  # fmt: skip
    run_ok("init", "-C", str(tmp_path), "--exclude-newer", "2026-11-25", "--python", "3.12", *mirrors)
    steps = [body for lang, body in blocks() if lang == "sh" and body.startswith(("lockgen matrix", "lockgen check"))]
    assert len(steps) == 2
    for line in [c for body in steps for c in commands(body)]:
        args = shlex.split(line)[1:]
        if args[0] == "diff":  # compares with git's HEAD: tests/locks/test_diff.py
            continue
        extra = mirrors if args[0] in ("all", "lock") else []
        run = run_cli(*args, "-C", str(tmp_path), *extra)
        assert run.code == 0, (line, run.err)
    assert (tmp_path / "locks" / "linux-x86_64-cu128-py3.12.txt").is_file()
    assert "torch==2.7.1+cu128" in (tmp_path / "locks" / "linux-x86_64-cu128-py3.12.txt").read_text()


def test_actionlint_accepts_the_workflow_snippet(tmp_path):
    from tests.repo.test_workflows import actionlint

    ((_, body),) = [b for b in blocks() if b[0] == "yaml"]
    workflow = tmp_path / "check.yml"
    workflow.write_text("on:\n  pull_request:\npermissions:\n  contents: read\n" + body)
    assert actionlint(workflow) == (0, [])
