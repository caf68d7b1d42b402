"""``lockgen bump``'s TOML side (lockgen/bump/toml.py): every other byte of the file is kept, in
every pin-table shape, and the file is written atomically or not at all."""

from __future__ import annotations

import os
import stat
import textwrap

import pytest

from lockgen.bump import pins as bump_module
from lockgen.bump.pins import bump
from lockgen.runtime.errors import ConfigError
from tests.bump.test_bump import COMMENTED, COMMENTED_BUMPED, REPO, plan, write

# ---- exact bytes -------------------------------------------------------------------------------


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_every_other_byte_is_kept(tmp_path, newline):
    path = write(tmp_path, COMMENTED, newline=newline)
    result = bump(path, ["torch==2.14.0", "flash-attn==2.8.4"])
    assert path.read_bytes() == COMMENTED_BUMPED.replace("\n", newline).encode("utf-8")
    assert result.written
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
    bump(path, ["torch==2.14.0"])
    assert path.read_bytes() == after.encode("utf-8")


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
    result = bump(path, ["torch==2.14.0"])
    assert path.read_text() == before.replace('"2.13.0"', '"2.14.0"')
    assert [e.key_path for e in result.edits] == ["pins.torch", "rules[0].pins.torch"]
    assert result.lines() == [
        "lockgen.toml: pins.torch: 2.13.0 -> 2.14.0",
        "lockgen.toml: rules[0].pins.torch: 2.13.0 -> 2.14.0",
        "lockgen.toml: torch also pinned in rules[1] to 2.12.1: kept (differs from the top-level 2.13.0)",
    ]


def test_ai_toolkit_example_keeps_the_spark_dev_pins(tmp_path):
    before = (REPO / "examples/ai-toolkit/lockgen.toml").read_text()
    path = write(tmp_path, before, name="lockgen.toml")
    result = bump(path, ["torch==2.14.0", "flash-attn==2.8.4"])
    expected = before.replace('\ntorch = "2.13.0"\n', '\ntorch = "2.14.0"\n').replace(
        'flash-attn = "2.8.3"', 'flash-attn = "2.8.4"'
    )
    assert path.read_text() == expected != before
    assert 'torch = "2.14.0.dev20260727"' in expected
    assert result.lines() == [
        "lockgen.toml: pins.torch: 2.13.0 -> 2.14.0",
        "lockgen.toml: pins.flash-attn: 2.8.3 -> 2.8.4",
        "lockgen.toml: torch also pinned in rules[7] to 2.14.0.dev20260727: kept (differs from the top-level 2.13.0)",
    ]


def test_repo_pyproject_keeps_the_comment_beside_a_pin(tmp_path):
    before = (REPO / "pyproject.toml").read_text()
    path = write(tmp_path, before)
    bump(path, ["torchcodec==0.16.0"])
    after = path.read_text()
    assert after == before.replace('torchcodec = "0.15.0"  # the toolkit', 'torchcodec = "0.16.0"  # the toolkit')
    assert after != before


# ---- writing -----------------------------------------------------------------------------------


def test_written_atomically_keeping_mode_and_symlink(tmp_path):
    real = write(tmp_path, '[tool.lockgen.pins]\ntorch = "2.13.0"\n', name="real.toml")
    real.chmod(0o600)
    (tmp_path / "project").mkdir()
    link = tmp_path / "project" / "pyproject.toml"
    link.symlink_to(real)
    assert bump(link, ["torch==2.14.0"]).written
    assert link.is_symlink() and real.read_text() == '[tool.lockgen.pins]\ntorch = "2.14.0"\n'
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project", "real.toml"]


def test_a_failed_write_leaves_the_file_and_no_temporary(tmp_path, monkeypatch):
    path = write(tmp_path, '[tool.lockgen.pins]\ntorch = "2.13.0"\n')

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        bump(path, ["torch==2.14.0"])
    assert path.read_text() == '[tool.lockgen.pins]\ntorch = "2.13.0"\n'
    assert [p.name for p in tmp_path.iterdir()] == ["pyproject.toml"]


def test_an_edit_that_would_touch_other_bytes_is_refused(tmp_path, monkeypatch):
    """If tomlkit ever reformats more than the value, bump refuses instead of writing."""
    path = write(tmp_path, '[tool.lockgen.pins]\ntorch = "2.13.0"\n')
    replace = bump_module._replace

    def replace_and_reformat(doc, where, version):
        tokens = replace(doc, where, version)
        doc["tool"]["lockgen"]["pins"]["extra"] = "1.0"
        return tokens

    monkeypatch.setattr(bump_module, "_replace", replace_and_reformat)
    with pytest.raises(ConfigError, match="cannot be moved without changing other parts of the file"):
        bump(path, ["torch==2.14.0"])
    assert path.read_text() == '[tool.lockgen.pins]\ntorch = "2.13.0"\n'


def test_a_quote_style_change_is_refused(monkeypatch):
    from tomlkit.items import String, StringType

    replace = bump_module._replace

    def replace_as_literal(doc, where, version):
        tokens = replace(doc, where, version)
        pins = doc["tool"]["lockgen"]["pins"]
        pins["torch"] = String(StringType.SLL, version, version, pins["torch"].trivia)
        return tokens

    monkeypatch.setattr(bump_module, "_replace", replace_as_literal)
    with pytest.raises(ConfigError, match="cannot be moved"):
        plan('[tool.lockgen.pins]\ntorch = "2.13.0"\n', "torch==2.14.0")


def test_unreadable_config(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        bump(tmp_path / "pyproject.toml", ["torch==2.14.0"])
