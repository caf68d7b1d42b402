"""``lockgen bump``'s pure part: parse NAME==VERSION, which config pins move (the policy), and the
command's refusals that need no uv (``--no-lock``). The byte-for-byte edit and the write are in
tests/bump/test_bump_toml.py, the lines' policy in tests/bump/test_bump_lines.py, the whole command on the
fake index in tests/e2e/test_bump.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from lockgen.bump.pins import parse_requirements, parse_wanted, plan_bumps
from lockgen.runtime.errors import ConfigError, UsageError
from tests.conftest import run_cli

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
        "torch @ https://example.org/torch-2.14.0-py3-none-any.whl",
        "torch==2.14.0+cu130",
        "-r requirements.txt",
        "torch==two",
    ],
    ids=[
        "bare-name", "lower-bound", "wildcard", "two-specifiers", "arbitrary-equality", "compatible", "extras",
        "url", "local-label", "option", "bad-version",
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


def plan(text: str, *args: str, name: str = "pyproject.toml", dedent: bool = True):
    return plan_bumps(Path(name), textwrap.dedent(text) if dedent else text, parse_requirements(args))


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


def test_already_at_the_version_is_no_edit():
    result = plan('[tool.lockgen.pins]\ntorch = "2.14"\n', "torch==2.14.0")
    assert not result.edits and [s.key_path for s in result.current] == ["tool.lockgen.pins.torch"]
    assert result.text == '[tool.lockgen.pins]\ntorch = "2.14"\n'


def test_a_name_the_config_does_not_pin_is_left_to_the_lines():
    result = plan('[tool.lockgen.pins]\ntorch = "2.13.0"\n', "numpy==2.3.0", "torch==2.14.0")
    assert [e.name for e in result.edits] == ["torch"] and result.configured == {"torch"}


def test_no_pins_at_all():
    result = plan("[tool.lockgen]\nlocks = 'locks'\n", "torch==2.14.0")
    assert not result.edits and not result.configured


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


# -- the command's refusals (no uv: --no-lock, or a refusal before anything resolves) -----------------

PROJECT = """\
[tool.lockgen]
pins = { torch = "2.13.0" }
[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.11", "3.12"]
"""


def project(tmp_path: Path, template: str, config: str = PROJECT) -> Path:
    (tmp_path / "templates").mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(config)
    (tmp_path / "templates" / "requirements.in.j2").write_bytes(template.encode())
    return tmp_path


def files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".lockgen" not in p.parts
    }


def test_a_template_line_is_moved_keeping_every_other_byte(tmp_path):
    original = (
        "torch=={{ pins.torch }}\r\n"
        "matplotlib==3.10.1  # plots\r\n"
        "{% if os == 'linux' %}matplotlib[extra] == 3.10.1 ; python_version >= '3.11'{% endif %}\r\n"
    )
    root = project(tmp_path, original)
    run = run_cli("bump", "matplotlib==3.10.3", "--no-lock", "-C", str(root))
    assert run.code == 0, run.err
    assert (root / "templates" / "requirements.in.j2").read_bytes() == original.replace("3.10.1", "3.10.3").encode()
    assert "templates/requirements.in.j2:2: matplotlib 3.10.1 -> 3.10.3" in run.err
    assert "templates/requirements.in.j2:3: matplotlib 3.10.1 -> 3.10.3" in run.err
    assert "bump: wrote templates/requirements.in.j2" in run.err


def test_a_name_pinned_nowhere_names_every_place_pins_live(tmp_path):
    root = project(tmp_path, "torch=={{ pins.torch }}\nnumpy\n")
    before = files(root)
    run = run_cli("bump", "numpy==2.0", "pillow==12.0", "-C", str(root))
    assert run.code == 2
    assert (
        "numpy, pillow: pinned nowhere: not in [tool.lockgen.pins] of pyproject.toml (nor a rule's pins), nor by a "
        "line of templates/ or of the project's dependencies; named without a pin in templates/requirements.in.j2:2"
    ) in run.err
    assert "pinned in pyproject.toml: torch" in run.err
    said = " ".join(run.err.split())
    assert (
        "to lock numpy 2.0, write the pin into the line that names it (templates/requirements.in.j2:2: 'numpy' -> "
        "'numpy==2.0'), then run `lockgen all` (later bumps move it)"
    ) in said
    assert "to lock pillow 12.0, add the line pillow==12.0 to a template of templates/" in said
    assert files(root) == before


def test_an_unpinned_line_with_extras_and_a_marker_is_shown_its_exact_pin(tmp_path):
    root = project(tmp_path, "torch=={{ pins.torch }}\nnumpy[dev] <3 ; python_version >= '3.11'  # any\n")
    run = run_cli("bump", "numpy==2.0", "-C", str(root))
    assert run.code == 2
    said = " ".join(run.err.split())
    assert (
        "templates/requirements.in.j2:2: \"numpy[dev] <3 ; python_version >= '3.11'\" -> "
        "'numpy[dev]==2.0; python_version >= \"3.11\"'"
    ) in said, said


def test_a_config_pin_read_by_no_template_is_refused(tmp_path):
    """The bump issue 18 met: the pin moved, nothing re-locked, exit 0. Now: nothing written, exit 2."""
    root = project(tmp_path, "torch==2.13.0\n", PROJECT.replace('torch = "2.13.0"', 'torch = "2.13.0", numpy = "2.0"'))
    before = files(root)
    run = run_cli("bump", "numpy==2.1", "-C", str(root))
    assert run.code == 2
    assert (
        "pyproject.toml: tool.lockgen.pins.numpy: 2.0 -> 2.1 (read by no template: no cell's inputs change with it)"
        in run.err
    )
    assert "no cell's inputs change with these edits" in run.err and "nothing was written" in run.err
    assert files(root) == before


def test_a_line_bump_will_not_move_is_refused_by_name(tmp_path):
    root = project(tmp_path, "torch=={{ pins.torch }}\nnumpy>=1.26,<2  # range\nnumpy==1.26.4\n")
    before = files(root)
    run = run_cli("bump", "numpy==2.2.0", "--no-lock", "-C", str(root))
    assert run.code == 2
    assert "templates/requirements.in.j2:2: 'numpy>=1.26,<2' does not allow 2.2.0 and is not a single pin" in run.err
    assert files(root) == before


def test_another_run_holding_the_project_stops_bump_before_it_writes(tmp_path):
    from lockgen.locks.store import ProjectLock

    root = project(tmp_path, "torch=={{ pins.torch }}\n")
    before = files(root)
    with ProjectLock(root):
        run = run_cli("bump", "torch==2.14.0", "--no-lock", "-C", str(root))
    assert run.code == 2 and "another lockgen run is working on this project" in run.err
    assert files(root) == before


def test_parse_wanted_takes_a_marker():
    wanted = parse_wanted(['numpy==2.2.0; python_version >= "3.12"', "torch==2.14"])
    assert str(wanted["numpy"].marker) == 'python_version >= "3.12"' and wanted["torch"].marker is None


def test_a_no_deps_entry_of_the_config_is_a_pin_too(tmp_path):
    config = PROJECT.replace(
        'pins = { torch = "2.13.0" }', 'pins = { torch = "2.13.0" }\nno-deps = ["lycoris-lora==3.1.0"]  # kept apart'
    )
    root = project(tmp_path, "torch=={{ pins.torch }}\n", config)
    run = run_cli("bump", "lycoris-lora==3.2.0", "--no-lock", "-C", str(root))
    assert run.code == 0, run.err
    assert "pyproject.toml: tool.lockgen.no-deps[0]: lycoris-lora 3.1.0 -> 3.2.0" in run.err
    assert (root / "pyproject.toml").read_text() == config.replace("3.1.0", "3.2.0")
