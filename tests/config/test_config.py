"""Stage 1: config discovery and validation; every error names its key path."""

from __future__ import annotations

import pytest

from lockgen.config import find_config, load_config
from lockgen.runtime.errors import ConfigError, UsageError
from tests.conftest import write_project

GOOD = """
exclude-newer = "2026-11-25T00:00:00Z"
[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.12"]
"""


def test_loads_defaults(tmp_path):
    write_project(tmp_path, GOOD, {"requirements.in.j2": "x\n"})
    config = load_config(tmp_path / "pyproject.toml")
    assert config.defaults.index_url == "https://pypi.org/simple"
    assert config.defaults.manylinux == "2_28"
    assert config.defaults.macos == "14.0"
    assert config.defaults.exclude_newer == "2026-11-25T00:00:00Z"
    assert (config.templates, config.locks) == ("templates", "locks")


EVERY_PROBLEM = """
colour = "blue"
manylinux = "2_99"
exclude-newer = "last tuesday"
[tool.lockgen.matrix]
os = ["linux", "beos"]
python = ["3.12", "312"]
[tool.lockgen.pins]
torch = "two"
[[tool.lockgen.rules]]
match = { os = "linux" }
[[tool.lockgen.rules]]
match = { os = "linux" }
[[tool.lockgen.rules]]
match = { backend = "CU130", gpu = "yes" }
macos = "fourteen"
vars = { os = "x" }
"""
#: Every problem of :data:`EVERY_PROBLEM`, each with its key path.
PROBLEMS = [
    "tool.lockgen.colour: unknown key",
    "tool.lockgen.manylinux: unsupported level '2_99'",
    "tool.lockgen.exclude-newer: 'last tuesday' is not a date",
    "tool.lockgen.matrix.os[1]: unknown os 'beos'",
    "tool.lockgen.matrix.python[1]: bad python version '312'",
    "tool.lockgen.pins.torch: 'two' is not a valid version",
    "tool.lockgen.rules[2].match.backend: bad backend label 'CU130'",
    "tool.lockgen.rules[2].match.gpu: unknown key",
    "tool.lockgen.rules[2].macos: bad macOS version",
    "tool.lockgen.rules[2].vars.os: 'os' is a built-in template variable",
]


@pytest.fixture(scope="module")
def every_problem(tmp_path_factory) -> ConfigError:
    root = write_project(tmp_path_factory.mktemp("every-problem"), EVERY_PROBLEM, {})
    with pytest.raises(ConfigError) as info:
        load_config(root / "pyproject.toml")
    return info.value


def test_every_problem_is_reported_at_once(every_problem):
    assert len(every_problem.messages) == len(PROBLEMS)


@pytest.mark.parametrize("expected", PROBLEMS, ids=[p.split(":")[0] for p in PROBLEMS])
def test_every_problem_is_reported_with_its_key_path(every_problem, expected):
    assert expected in str(every_problem)


#: id -> (config file name, its text, what the error says, what it must not say)
CONFIG_ERRORS = {
    "lockgen.toml-has-no-prefix": (
        "lockgen.toml",
        "[matrix]\nos = ['solaris']\n",
        ["matrix.os[0]: unknown os"],
        ["tool.lockgen"],
    ),
    "extended-names-exist": (
        "pyproject.toml",
        "[[tool.lockgen.rules]]\nmatch = {}\nextend-use = ['nosuch']\nextend-pinned = ['nover']",
        [
            "tool.lockgen.rules[0].extend-use: unknown source 'nosuch'",
            "tool.lockgen.rules[0].extend-pinned[0]: 'nover' has no version",
        ],
        [],
    ),
    "timestamp-needs-a-zone": ("pyproject.toml", 'exclude-newer = "2026-11-25T00:00:00"', ["needs a time zone"], []),
    "odd-forms": (
        "pyproject.toml",
        'exclude-newer = "2025-W22"\nlocks = ""\n[tool.lockgen.matrix]\nexclude = [{}]',
        [
            "tool.lockgen.exclude-newer: '2025-W22' is not a date",
            "tool.lockgen.locks: must name a folder",
            "tool.lockgen.matrix.exclude[0]: names no axis",
        ],
        [],
    ),
    "sources-and-their-use": (
        "pyproject.toml",
        """
        use = ["pytorch", "nope"]
        [tool.lockgen.sources.pytorch]
        index = "https://download.pytorch.org/whl/{flavor}"
        packages = ["torch", "Torch_Vision"]
        [tool.lockgen.sources.bad]
        index = "https://a"
        find-links = "https://b"
        """,
        ["tool.lockgen.sources.bad: give exactly one of", "tool.lockgen.use: unknown source 'nope'"],
        [],
    ),
    "source-and-cell-settings": (
        "pyproject.toml",
        """
        interpreter = "sparc"
        [tool.lockgen.sources.spark]
        find-links = "https://example.org/{cuda}"
        local = "/abs/wheels"
        packages = ["torch"]
        [tool.lockgen.sources.other]
        index = "https://example.org/{flavor}"
        local-if = "*.whl"
        packages = ["x"]
        """,
        [
            "tool.lockgen.interpreter: unknown arch 'sparc'",
            "tool.lockgen.sources.spark.find-links: bad placeholder 'cuda'",
            "tool.lockgen.sources.spark.local: '/abs/wheels' must be a folder inside the project",
            "tool.lockgen.sources.other.local-if: needs a non-empty glob and a local folder",
        ],
        [],
    ),
    "harmonize": (
        "pyproject.toml",
        """
        harmonize = "always"
        harmonize-package = { numpy = "never", "bad name!" = "off" }
        """,
        [
            'tool.lockgen.harmonize: unknown mode \'always\'; use one of "unforced", "common", "off"',
            "tool.lockgen.harmonize-package.numpy: unknown mode 'never'",
            "tool.lockgen.harmonize-package.bad name!: not a valid package name",
        ],
        [],
    ),
}


def test_harmonize_setting(tmp_path):
    """``harmonize`` with per-package exceptions (canonical names); the default is no part of
    the input hash (docs/configuration.md, "Harmonizing")."""
    write_project(tmp_path, 'harmonize = "common"\nharmonize-package = { Py_Wavelets = "off" }\n', {})
    config = load_config(tmp_path / "pyproject.toml")
    assert config.harmonize.mode == "common" and config.harmonize.of("py-wavelets") == "off"
    assert config.harmonize.of("numpy") == "common" and not config.harmonize.default


@pytest.mark.parametrize(("name", "text", "expected", "unexpected"), CONFIG_ERRORS.values(), ids=CONFIG_ERRORS)
def test_config_errors(tmp_path, name, text, expected, unexpected):
    write_project(tmp_path, text, {}, name=name)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / name)
    message = str(info.value)
    for part in expected:
        assert part in message
    for part in unexpected:
        assert part not in message


def test_bad_toml_names_the_file(tmp_path):
    (tmp_path / "lockgen.toml").write_text("matrix = [\n")
    with pytest.raises(ConfigError, match=r"(?s)lockgen.toml: .*cannot read TOML"):
        load_config(tmp_path / "lockgen.toml")


@pytest.mark.parametrize("tool", ["tool = 5", 'tool = "lockgen"', "tool = [1]", "tool = true"])
def test_a_pyproject_whose_tool_is_no_table_is_no_config_and_no_crash(tmp_path, tool):
    (tmp_path / "pyproject.toml").write_text(tool + "\n")
    with pytest.raises(UsageError, match=r"no lockgen\.toml or pyproject\.toml"):
        find_config(tmp_path)


def test_a_tool_lockgen_that_is_no_table_is_named(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool]\nlockgen = 3\n")
    with pytest.raises(ConfigError, match=r"tool\.lockgen: must be a table, not int"):
        load_config(tmp_path / "pyproject.toml")


def test_discovery_walks_upward_and_honours_explicit_paths(tmp_path):
    write_project(tmp_path, GOOD, {})
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    assert find_config(tmp_path / "sub" / "deeper") == tmp_path / "pyproject.toml"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "lockgen.toml").write_text("")
    assert find_config(tmp_path, "other") == tmp_path / "other" / "lockgen.toml"
    assert find_config(tmp_path, "other/lockgen.toml") == tmp_path / "other" / "lockgen.toml"
    with pytest.raises(UsageError, match="no such config file"):
        find_config(tmp_path, "missing.toml")


def test_both_configs_in_one_folder_use_lockgen_toml_and_say_so(tmp_path, caplog):
    write_project(tmp_path, GOOD, {})
    (tmp_path / "lockgen.toml").write_text(GOOD.replace("tool.lockgen.", ""))
    with caplog.at_level("WARNING", logger="lockgen"):
        assert find_config(tmp_path) == tmp_path / "lockgen.toml"
        assert find_config(tmp_path) == tmp_path / "lockgen.toml"  # looked up again: said once
    said = [r.getMessage() for r in caplog.records if "both lockgen.toml and pyproject.toml" in r.getMessage()]
    assert len(said) == 1 and "pyproject.toml's table is ignored" in said[0]


def test_lockgen_toml_beside_a_broken_pyproject_is_still_found(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project\nname = \n")
    (tmp_path / "lockgen.toml").write_text(GOOD.replace("tool.lockgen.", ""))
    assert find_config(tmp_path) == tmp_path / "lockgen.toml"


def test_pyproject_without_table_is_not_a_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    with pytest.raises(UsageError, match=r"no lockgen.toml"):
        find_config(tmp_path)


def test_dates_mean_utc_midnight(tmp_path):
    write_project(tmp_path, 'exclude-newer = "2024-04-10"\nmacos = "10.15"', {})
    config = load_config(tmp_path / "pyproject.toml")
    assert config.defaults.exclude_newer == "2024-04-10T00:00:00Z"  # uv would read a bare date in local time
    assert config.defaults.macos == "10.15"


def test_unknown_keys_get_did_you_mean_and_the_key_list_once(tmp_path):
    """A misspelt key is answered with the key it is close to (like matrix keys); far-off keys
    list the table's keys once, not once per key."""
    typos = 'pin = { torch = "2.0" }\nindex_url = "https://x.example/simple"\ncolour = "blue"\nsize = 3\n'
    write_project(tmp_path, typos + GOOD + '[[tool.lockgen.rules]]\nmatch = {}\nno_deps = ["a"]\n', {})
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "pyproject.toml")
    messages = info.value.messages
    assert "tool.lockgen.pin: unknown key; did you mean 'pins'?" in messages
    assert "tool.lockgen.index_url: unknown key; did you mean 'index-url'?" in messages
    assert "tool.lockgen.rules[0].no_deps: unknown key; did you mean 'no-deps'?" in messages
    (colour,) = [m for m in messages if m.startswith("tool.lockgen.colour:")]
    assert colour.startswith("tool.lockgen.colour: unknown key; expected one of alias, allow-build,")
    assert "tool.lockgen.size: unknown key; not one of the keys listed for tool.lockgen.colour" in messages
    assert len(messages) == 5


def test_a_pinned_name_without_a_version_anywhere_is_a_config_problem_with_its_key_path(tmp_path):
    """Reported at validation, with the other problems, not per cell once they are fixed."""
    text = 'pinned = ["torch", "gamma"]\npins = { torch = "2.13.0" }\ncolour = "blue"\n' + GOOD
    text += '[[tool.lockgen.rules]]\nmatch = { os = "linux" }\npinned = ["delta"]\n'
    write_project(tmp_path, text, {})
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "pyproject.toml")
    messages = info.value.messages
    assert len(messages) == 3 and messages[0].startswith("tool.lockgen.colour: unknown key")
    assert messages[1:] == [
        "tool.lockgen.pinned[1]: 'gamma' has no version in any pins table; add it to tool.lockgen.pins "
        '(gamma = "VERSION"), or to the pins of the rules whose cells pin it',
        "tool.lockgen.rules[0].pinned[0]: 'delta' has no version in any pins table; add it to tool.lockgen.pins "
        '(delta = "VERSION"), or to the pins of the rules whose cells pin it',
    ]
