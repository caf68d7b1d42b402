"""Templates as input from elsewhere (a fork's ``templates/``): the sandbox refuses attribute
escapes, the loader refuses files outside the folder, and one expression may not make a huge
value (``'a' * 10**10`` would take 10 GB: the sandbox bounds ranges only). Each is a named
refusal (exit 2, the template and line named), without a traceback or the outside file's text,
for every command that renders: ``all --dry-run``, ``lock`` and ``bump``.
"""

from __future__ import annotations

import pytest

from tests.conftest import run_cli, write_project

CONFIG = """
    pins = { alpha = "1.0" }
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
SECRET = "hunter2-do-not-show"
CASES = {
    "class-escape": ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "unsafe"),
    "globals-escape": ("{{ lipsum.__globals__ }}", "unsafe"),
    "include-dotdot": ("{% include '../../secret.txt' %}", "a path leading outside the folder templates/"),
    "include-absolute": ("{% include '/etc/passwd' %}", "a path leading outside the folder templates/"),
    "include-symlink-out": ("{% include 'link.j2' %}", "a symlink leading outside the folder templates/"),
    "string-bomb": ("{{ 'a' * 10**10 }}", "larger than a template may make"),
    "list-bomb": ("{{ [1] * 10**9 }}", "larger than a template may make"),
    "power-bomb": ("{{ 10 ** 10000000 }}", "larger than a template may compute"),
    "huge-range": ("{% for i in range(10**9) %}x{% endfor %}", "Range too big"),
}
COMMANDS = {
    "all-dry-run": ["all", "--dry-run"],
    "lock": ["lock", "linux-x86_64-cpu-py3.12", "--dry-run"],
    "bump": ["bump", "alpha==1.1", "--no-lock"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_template_is_a_named_refusal(tmp_path, case, command):
    template, said = CASES[case]
    root = write_project(
        tmp_path / "a" / "proj", CONFIG, {"requirements.in.j2": f"alpha=={{{{ pins.alpha }}}}\n{template}\n"}
    )
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "a" / "secret.txt").write_text(SECRET)
    (root / "templates" / "link.j2").symlink_to(tmp_path / "secret.txt")
    before = (root / "pyproject.toml").read_text()
    run = run_cli(*COMMANDS[command], "-C", str(root))
    assert run.code == 2, (run.code, run.err)
    assert "Traceback" not in run.err and SECRET not in run.out + run.err
    assert "templates/" in run.err and said in run.err, run.err
    assert (root / "pyproject.toml").read_text() == before  # bump wrote nothing
