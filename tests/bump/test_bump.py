"""``lockgen bump``'s pure part: parse NAME==VERSION, which pins move (the policy), pins in templates.
The byte-for-byte edit and the write are in tests/bump/test_bump_toml.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from lockgen.bump.pins import bump, parse_requirements, plan_bumps
from lockgen.runtime.errors import ConfigError, UsageError

REPO = Path(__file__).resolve().parents[2]

# A pyproject.toml that exercises everything tomlkit must leave alone: comments above, beside and
# inside tables, odd spacing, quote styles, inline tables, arrays of tables with sub-tables, other
# tools' tables between lockgen's, a key spelt non-canonically and a quoted key.
COMMENTED = """\
# ---- header comment ----
[build-system]
requires = ["setuptools>=69"]   # build

[tool.lockgen]  # the config
exclude-newer = "2026-11-25T00:00:00Z"
vars = { flavour = "plain", n = 3 }   # inline table

[tool.lockgen.pins]
# torch first: everything else follows it
torch   =   "2.13.0"    # why: the CUDA 13.0 build
torchvision = '0.28.0'
Flash_Attn = "2.8.3"#tight
"zope.interface" = "7.2"

    # an indented comment
torchaudio="2.11.0"

[tool.ruff]   # another tool in between
line-length = 120

[[tool.lockgen.rules]]   # same torch as the top-level pin: follows it
match = { os = "linux" }
pins = { torch = "2.13.0", torchvision = '0.28.0' }   # inline pins

[[tool.lockgen.rules]]   # dev builds: a deliberate exception
match = { backend = "cu134" }
[tool.lockgen.rules.pins]
torch = "2.14.0.dev20260727"   # spark

[[tool.lockgen.rules]]
match = {}
vars = { x = true }

[tool.lockgen.matrix]
os = ["linux"]   # trailing
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.12"]
"""

COMMENTED_BUMPED = (
    COMMENTED.replace('torch   =   "2.13.0"', 'torch   =   "2.14.0"')
    .replace('Flash_Attn = "2.8.3"#tight', 'Flash_Attn = "2.8.4"#tight')
    .replace('pins = { torch = "2.13.0", torchvision', 'pins = { torch = "2.14.0", torchvision')
)


def write(tmp_path: Path, text: str, name: str = "pyproject.toml", newline: str = "\n") -> Path:
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


def problems(error: pytest.ExceptionInfo[Exception]) -> str:
    return str(error.value)


# ---- NAME==VERSION -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["torch==2.14.0"], {"torch": "2.14.0"}),
        (["Flash_Attn==2.8.4"], {"flash-attn": "2.8.4"}),
        (["torch == 2.14", "torchvision==0.29.0"], {"torch": "2.14", "torchvision": "0.29.0"}),
        (["torch==2.14.0.dev20260727"], {"torch": "2.14.0.dev20260727"}),
        (["torch==2.14.0", "Torch==2.14"], {"torch": "2.14.0"}),  # the same version twice
    ],
    ids=["plain", "canonical-name", "spaces-and-two", "dev-release", "same-twice"],
)
def test_parse_requirements(args, expected):
    assert parse_requirements(args) == {name: Version(v) for name, v in expected.items()}


@pytest.mark.parametrize(
    "arg",
    [
        "torch",
        "torch>=2.14",
        "torch==2.*",
        "torch==2.14,<3",
        "torch===2.14.0",
        "torch~=2.14",
        "torch[cuda]==2.14.0",
        'torch==2.14.0; python_version > "3"',
        "torch @ https://example.org/torch-2.14.0-py3-none-any.whl",
        "torch==2.14.0+cu130",
        "-r requirements.txt",
        "torch==two",
    ],
    ids=[
        "bare-name", "lower-bound", "wildcard", "two-specifiers", "arbitrary-equality", "compatible", "extras",
        "marker", "url", "local-label", "option", "bad-version",
    ],
)  # fmt: skip
def test_parse_requirements_refuses_anything_but_name_eq_version(arg):
    with pytest.raises(UsageError) as error:
        parse_requirements([arg])
    assert "NAME==VERSION" in problems(error)
    assert repr(arg) in problems(error)


def test_parse_requirements_lists_every_bad_one_and_conflicts():
    with pytest.raises(UsageError) as error:
        parse_requirements(["torch>=2", "numpy==2.0", "numpy==2.1", "x==1+cpu"])
    text = problems(error)
    assert "'torch>=2'" in text and "numpy is also asked for as 2.0" in text and "local label (+cpu)" in text


def test_parse_requirements_needs_one():
    with pytest.raises(UsageError, match="NAME==VERSION"):
        parse_requirements([])


# ---- policy ------------------------------------------------------------------------------------


def plan(text: str, *args: str, name: str = "pyproject.toml"):
    return plan_bumps(Path(name), textwrap.dedent(text), parse_requirements(args))


def test_canonical_names_match_and_the_file_keeps_its_spelling():
    result = plan('[tool.lockgen.pins]\nFlash_Attn = "2.8.3"\n', "FLASH.attn==2.8.4")
    assert result.text == '[tool.lockgen.pins]\nFlash_Attn = "2.8.4"\n'
    assert [(e.name, e.key_path) for e in result.edits] == [("flash-attn", "tool.lockgen.pins.Flash_Attn")]


def test_a_key_that_needs_quotes_is_quoted_in_the_key_path():
    result = plan('[tool.lockgen.pins]\n"zope.interface" = "7.2"\n', "zope-interface==7.3")
    assert result.edits[0].key_path == 'tool.lockgen.pins."zope.interface"'


@pytest.mark.parametrize(
    ("rule_version", "moves", "kept_reason"),
    [
        ("2.13.0", True, None),
        ("2.13", True, None),  # the same version, spelt otherwise
        ("2.12.1", False, "differs from the top-level 2.13.0"),
        ("2.14.0", False, "already 2.14.0"),
    ],
    ids=["same-follows", "same-other-spelling", "different-kept", "already-new-kept"],
)
def test_rule_pins_follow_the_top_level_pin_only_at_the_same_version(rule_version, moves, kept_reason):
    text = f"""\
        [tool.lockgen.pins]
        torch = "2.13.0"
        [[tool.lockgen.rules]]
        match = {{}}
        pins = {{ torch = "{rule_version}" }}
        """
    result = plan(text, "torch==2.14.0")
    edited = [e.key_path for e in result.edits]
    assert edited == ["tool.lockgen.pins.torch"] + (["tool.lockgen.rules[0].pins.torch"] if moves else [])
    assert [k.reason for k in result.kept] == ([kept_reason] if kept_reason else [])


def test_only_rules_pin_it_and_agree_all_move():
    text = """\
        [[tool.lockgen.rules]]
        match = { os = "linux" }
        pins = { torch = "2.13.0" }
        [[tool.lockgen.rules]]
        match = { os = "windows" }
        pins = { torch = "2.13.0" }
        """
    result = plan(text, "torch==2.14.0")
    edited = [e.key_path for e in result.edits]
    assert edited == ["tool.lockgen.rules[0].pins.torch", "tool.lockgen.rules[1].pins.torch"]
    assert result.text.count('"2.14.0"') == 2


def test_only_rules_pin_it_and_disagree_is_refused():
    text = """\
        [[tool.lockgen.rules]]
        pins = { torch = "2.13.0" }
        [[tool.lockgen.rules]]
        pins = { torch = "2.14.0.dev1" }
        """
    with pytest.raises(UsageError) as error:
        plan(text, "torch==2.14.0")
    text = problems(error)
    assert "pinned only in rules, to different versions" in text
    assert "tool.lockgen.rules[0].pins.torch = '2.13.0'" in text and "[tool.lockgen.pins]" in text


def test_already_at_the_version_writes_nothing(tmp_path):
    path = write(tmp_path, '[tool.lockgen.pins]\ntorch = "2.14"\n')
    inode = path.stat().st_ino
    result = bump(path, ["torch==2.14.0"])
    assert not result.written and not result.edits and path.stat().st_ino == inode
    assert result.lines() == [
        "pyproject.toml: tool.lockgen.pins.torch: already 2.14",
        "pyproject.toml: no pin moved; nothing written",
    ]


@pytest.mark.parametrize(
    ("name", "where"),
    [("pyproject.toml", "[tool.lockgen.pins]"), ("lockgen.toml", "[pins]")],
    ids=["pyproject", "standalone"],
)
def test_a_name_pinned_nowhere_says_where_pins_live(name, where):
    prefix = "tool.lockgen." if name == "pyproject.toml" else ""
    text = f'[{prefix}pins]\ntorch = "2.13.0"\nTorchVision = "0.28.0"\n'
    text += f'[[{prefix}rules]]\npins = {{ triton = "3.5.0" }}\n'
    with pytest.raises(UsageError) as error:
        plan(text, "numpy==2.3.0", "torch==2.14.0", "pillow==12.0.0", name=name)
    assert problems(error) == (
        f"{name}: cannot bump: numpy, pillow: pinned nowhere in {name}; pins live in {where} (a rule may also set its "
        f"own pins) and bump only moves existing pins; pinned in {name}: torch, torchvision, triton"
    )


def test_no_pins_at_all():
    with pytest.raises(UsageError, match=r"pinned in pyproject\.toml: nothing"):
        plan("[tool.lockgen]\nlocks = 'locks'\n", "torch==2.14.0")


def test_pyproject_without_tool_lockgen():
    with pytest.raises(ConfigError, match=r"tool\.lockgen: missing"):
        plan("[project]\nname = 'x'\n", "torch==2.14.0")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[tool.lockgen.pins]\ntorch = "==2.8.0.*"\n', "tool.lockgen.pins.torch: '==2.8.0.*' is a version specifier"),
        (
            '[tool.lockgen.pins]\ntorch = "2.13.0"\n[[tool.lockgen.rules]]\npins = { torch = ">=2.13" }\n',
            "tool.lockgen.rules[0].pins.torch: '>=2.13' is a version specifier",
        ),
        ('[tool.lockgen.pins]\ntorch = "two"\n', "tool.lockgen.pins.torch: 'two' is not a valid version"),
        ("[tool.lockgen.pins]\ntorch = 2\n", "tool.lockgen.pins.torch: must be a version string"),
        ('[tool.lockgen]\npins = ["torch==2.13.0"]\n', "tool.lockgen.pins: must be a table"),
        ('[tool.lockgen.pins]\ntorch = "2.13.0"\nTorch = "2.13.0"\n', "torch is already pinned in this table as torch"),
        ("[tool.lockgen.pins\n", "cannot read TOML"),
    ],
    ids=["specifier", "specifier-in-rule", "bad-version", "not-a-string", "not-a-table", "twice", "not-toml"],
)
def test_pins_bump_cannot_move_are_config_errors(text, message):
    with pytest.raises(ConfigError) as error:
        plan(text, "torch==2.14.0")
    assert message in problems(error)
    assert problems(error).startswith("pyproject.toml: ")


def test_a_specifier_pin_of_another_package_is_not_our_business():
    result = plan('[tool.lockgen.pins]\ntorch = "2.13.0"\nnumpy = ">=2"\n', "torch==2.14.0")
    assert [e.key_path for e in result.edits] == ["tool.lockgen.pins.torch"]


# -- pins written in templates (lockgen/bump/templates.py) ----------------------------------------


def test_a_name_pinned_only_in_a_template_is_bumped_there(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.lockgen]\npins = { torch = "2.13.0" }\n')
    template = tmp_path / "templates" / "requirements.in.j2"
    template.parent.mkdir()
    original = "torch=={{ pins.torch }}\r\nmatplotlib==3.10.1  # plots\r\n{% if os == 'linux' %}matplotlib==3.10.1{% endif %}\r\n"
    template.write_bytes(original.encode())
    result = bump(tmp_path / "pyproject.toml", ["matplotlib==3.10.3"], templates="templates")
    assert (
        template.read_bytes() == original.replace("matplotlib==3.10.1  # plots", "matplotlib==3.10.3  # plots").encode()
    )
    assert result.lines() == ["templates/requirements.in.j2:2: matplotlib 3.10.1 -> 3.10.3"]
    assert result.changed and not result.written and result.names == {"matplotlib"}
    assert result.files == [template]


def test_the_files_bump_edited_and_how_to_undo_them(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.lockgen]\npins = { torch = "2.13.0" }\n')
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "base.in.j2").write_text("matplotlib==3.10.1\nnumpy==2.4.5\n")
    (tmp_path / "templates" / "more.in.j2").write_text("numpy==2.4.6\n")  # already there: not edited
    result = bump(tmp_path / "pyproject.toml", ["torch==2.14.0", "matplotlib==3.10.3", "numpy==2.4.6"], "templates")
    assert result.files == [tmp_path / "pyproject.toml", tmp_path / "templates" / "base.in.j2"]
    assert result.kept_after_failure(tmp_path).endswith(
        "undo the edits: git checkout -- pyproject.toml templates/base.in.j2"
    )
    assert f"kept in {tmp_path / 'pyproject.toml'}, " in result.kept_after_failure(tmp_path / "elsewhere")


def test_a_name_pinned_nowhere_names_the_templates_too(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.lockgen]\npins = { torch = "2.13.0" }\n')
    (tmp_path / "templates").mkdir()
    with pytest.raises(
        UsageError, match=r"numpy: pinned nowhere in pyproject.toml nor as a NAME==VERSION line in templates/"
    ):
        bump(tmp_path / "pyproject.toml", ["numpy==2.0"], templates="templates")
