"""``lockgen bump``'s TOML side (lockgen/bump/toml.py): every other byte of the file is kept, in
every pin-table shape (the planned text, :func:`lockgen.bump.plan_bumps`), and the files are
written together (journaled, mode and symlinks kept) or not at all."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest

from lockgen.bump import toml as bump_toml
from lockgen.config.load import parse_toml
from lockgen.runtime.errors import ConfigError
from tests.bump.test_bump import COMMENTED, COMMENTED_BUMPED, REPO, plan, write
from tests.conftest import run_cli


def bump_text(path, *pins):
    """The planned new text of the config file ``path`` for ``pins`` (nothing written)."""
    return plan(path.read_bytes().decode("utf-8"), *pins, name=path.name, dedent=False)


# ---- exact bytes -------------------------------------------------------------------------------


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_every_other_byte_is_kept(tmp_path, newline):
    path = write(tmp_path, COMMENTED, newline=newline)
    result = bump_text(path, "torch==2.14.0", "flash-attn==2.8.4")
    assert result.text.encode("utf-8") == COMMENTED_BUMPED.replace("\n", newline).encode("utf-8")
    assert [(e.key_path, e.old, e.new) for e in result.edits] == [
        ("tool.lockgen.pins.torch", "2.13.0", "2.14.0"),
        ("tool.lockgen.rules[0].pins.torch", "2.13.0", "2.14.0"),
        ("tool.lockgen.pins.Flash_Attn", "2.8.3", "2.8.4"),
    ]
    kept = [(k.key_path, k.version) for k in result.kept]
    assert kept == [("tool.lockgen.rules[1].pins.torch", "2.14.0.dev20260727")]


SHAPES = [
    (  # the whole table inline, as a dotted key at the top of the file
        'tool.lockgen.pins = { torch = "2.13.0", torchaudio = "2.11.0" }  # inline\n[tool.other]\nx = 1\n',
        'tool.lockgen.pins = { torch = "2.14.0", torchaudio = "2.11.0" }  # inline\n[tool.other]\nx = 1\n',
    ),
    (  # an inline table under [tool.lockgen]
        '[tool.lockgen]\npins = {torch="2.13.0"}   # c\nlocks = "locks"\n',
        '[tool.lockgen]\npins = {torch="2.14.0"}   # c\nlocks = "locks"\n',
    ),
    (  # dotted keys under [tool.lockgen], odd spacing
        "[tool.lockgen]\npins.torch = '2.13.0'  # c\npins . torchaudio='2.11.0'\n",
        "[tool.lockgen]\npins.torch = '2.14.0'  # c\npins . torchaudio='2.11.0'\n",
    ),
    (  # everything inline under [tool]
        '[tool]\nlockgen = { pins = { torch = "2.13.0" }, rules = [{ pins = { torch = "2.13.0" } }] }\n',
        '[tool]\nlockgen = { pins = { torch = "2.14.0" }, rules = [{ pins = { torch = "2.14.0" } }] }\n',
    ),
    (  # lockgen's tables out of order, split by another tool's
        '[tool.lockgen]\nlocks = "locks"\n\n[tool.black]\nline-length = 99\n\n[tool.lockgen.pins]\ntorch = "2.13.0"\n',
        '[tool.lockgen]\nlocks = "locks"\n\n[tool.black]\nline-length = 99\n\n[tool.lockgen.pins]\ntorch = "2.14.0"\n',
    ),
    (  # a multi-line basic string written on one line
        '[tool.lockgen.pins]\ntorch = """2.13.0"""\n',
        '[tool.lockgen.pins]\ntorch = """2.14.0"""\n',
    ),
    (  # a literal string, no newline at the end of the file
        "[tool.lockgen.pins]\ntorch = '2.13.0'",
        "[tool.lockgen.pins]\ntorch = '2.14.0'",
    ),
    (  # a byte order mark
        '\ufeff[tool.lockgen.pins]\ntorch = "2.13.0"\n',
        '\ufeff[tool.lockgen.pins]\ntorch = "2.14.0"\n',
    ),
]


@pytest.mark.parametrize(
    ("before", "after"),
    SHAPES,
    ids=[
        "root-dotted-inline",
        "inline",
        "dotted",
        "all-inline",
        "out-of-order",
        "multiline-string",
        "literal-no-eol",
        "bom",
    ],
)
def test_pin_table_shapes(tmp_path, before, after):
    path = write(tmp_path, before)
    assert bump_text(path, "torch==2.14.0").text.encode("utf-8") == after.encode("utf-8")


def test_standalone_lockgen_toml(tmp_path):
    before = textwrap.dedent("""\
        [pins]   # top-level pins
        torch = "2.13.0"

        [[rules]]
        match = { os = "linux" }
        [rules.pins]
        torch = "2.13.0"   # follows

        [[rules]]
        match = { os = "windows" }
        pins = { torch = "2.12.1" }
        """)
    path = write(tmp_path, before, name="lockgen.toml")
    result = bump_text(path, "torch==2.14.0")
    assert result.text == before.replace('"2.13.0"', '"2.14.0"')
    assert [e.key_path for e in result.edits] == ["pins.torch", "rules[0].pins.torch"]
    assert [(k.key_path, k.version, k.reason) for k in result.kept] == [
        ("rules[1].pins.torch", "2.12.1", "differs from the top-level 2.13.0")
    ]


def test_ai_toolkit_example_keeps_the_spark_dev_pins(tmp_path):
    before = (REPO / "examples/ai-toolkit/lockgen.toml").read_text()
    path = write(tmp_path, before, name="lockgen.toml")
    result = bump_text(path, "torch==2.14.0", "flash-attn==2.8.4")
    expected = before.replace('\ntorch = "2.13.0"\n', '\ntorch = "2.14.0"\n').replace(
        'flash-attn = "2.8.3"', 'flash-attn = "2.8.4"'
    )
    assert result.text == expected != before
    assert 'torch = "2.14.0.dev20260727"' in expected
    assert [e.key_path for e in result.edits] == ["pins.torch", "pins.flash-attn"]
    assert [(k.key_path, k.reason) for k in result.kept] == [
        ("rules[7].pins.torch", "differs from the top-level 2.13.0")
    ]


def test_repo_pyproject_keeps_the_comment_beside_a_pin(tmp_path):
    before = (REPO / "pyproject.toml").read_text()
    path = write(tmp_path, before)
    after = bump_text(path, "torchcodec==0.16.0").text
    assert after == before.replace('torchcodec = "0.15.0"  # the toolkit', 'torchcodec = "0.16.0"  # the toolkit')
    assert after != before


# ---- writing -----------------------------------------------------------------------------------

PROJECT = '[tool.lockgen]\npins = { alpha = "1.0" }\n[tool.lockgen.matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n'


def small_project(folder):
    """A project whose template reads the config's pin (``--no-lock`` bumps run no uv)."""
    (folder / "templates").mkdir(parents=True)
    (folder / "templates" / "requirements.in.j2").write_text("alpha=={{ pins.alpha }}\nbeta==2.0  # literal\n")
    return folder


def test_written_atomically_keeping_mode_and_symlink(tmp_path):
    real = write(tmp_path, PROJECT, name="real.toml")
    real.chmod(0o600)
    project = small_project(tmp_path / "project")
    link = project / "pyproject.toml"
    link.symlink_to(real)
    template = project / "templates" / "requirements.in.j2"
    template.chmod(0o640)
    run = run_cli("bump", "alpha==1.1", "beta==2.1", "--no-lock", "-C", str(project))
    assert run.code == 0, run.err
    assert link.is_symlink() and real.read_text() == PROJECT.replace('"1.0"', '"1.1"')
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert template.read_text() == "alpha=={{ pins.alpha }}\nbeta==2.1  # literal\n"
    assert stat.S_IMODE(template.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project", "real.toml"]
    assert not list((project / ".lockgen").rglob("*.json"))  # the journal is gone


def test_a_failed_write_leaves_every_file_and_no_temporary(tmp_path, monkeypatch):
    project = small_project(tmp_path / "project")
    write(project, PROJECT)
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fail)  # the first temporary cannot be written
    run = run_cli("bump", "alpha==1.1", "beta==2.1", "--no-lock", "-C", str(project))
    assert run.code == 1 and "cannot write" in run.err and "disk full" in run.err
    after = {p: p.read_bytes() for p in project.rglob("*") if p.is_file() and ".lockgen" not in p.parts}
    assert after == before


def test_an_edit_that_would_touch_other_bytes_is_refused(tmp_path, monkeypatch):
    """If tomlkit ever reformats more than the value, bump refuses instead of writing."""
    replace = bump_toml._replace

    def replace_and_reformat(doc, where, version):
        tokens = replace(doc, where, version)
        doc["tool"]["lockgen"]["pins"]["extra"] = "1.0"
        return tokens

    monkeypatch.setattr(bump_toml, "_replace", replace_and_reformat)
    with pytest.raises(ConfigError, match="cannot be moved without changing other parts of the file"):
        plan('[tool.lockgen.pins]\ntorch = "2.13.0"\n', "torch==2.14.0")


def test_a_quote_style_change_is_refused(monkeypatch):
    from tomlkit.items import String, StringType

    replace = bump_toml._replace

    def replace_as_literal(doc, where, version):
        tokens = replace(doc, where, version)
        pins = doc["tool"]["lockgen"]["pins"]
        pins["torch"] = String(StringType.SLL, version, version, pins["torch"].trivia)
        return tokens

    monkeypatch.setattr(bump_toml, "_replace", replace_as_literal)
    with pytest.raises(ConfigError, match="cannot be moved"):
        plan('[tool.lockgen.pins]\ntorch = "2.13.0"\n', "torch==2.14.0")


def test_project_requirement_strings_keep_their_style():
    text = textwrap.dedent("""\
        [project]
        dependencies = [
          "numpy==1.26.4; python_version < '3.12'",  # old Pythons
          'torch==2.13.0+cpu',
        ]
        [dependency-groups]
        dev = ["pytest==8.0", { include-group = "docs" }]
        """)
    data = parse_toml(text)
    found = [(r.key_path, r.value) for r in bump_toml.requirement_strings(data)]
    assert found == [
        ("project.dependencies[0]", "numpy==1.26.4; python_version < '3.12'"),
        ("project.dependencies[1]", "torch==2.13.0+cpu"),
        ("dependency-groups.dev[0]", "pytest==8.0"),
    ]
    new = bump_toml.edit_strings(
        Path("pyproject.toml"), text,
        [(("project", "dependencies", 1), "torch==2.14.0+cpu"), (("dependency-groups", "dev", 0), "pytest==8.1")],
    )  # fmt: skip
    assert new == text.replace("'torch==2.13.0+cpu'", "'torch==2.14.0+cpu'").replace('"pytest==8.0"', '"pytest==8.1"')
