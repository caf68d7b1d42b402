"""Stage 2: matrix expansion (CI-matrix include/exclude), rules, cell names, selection."""

from __future__ import annotations

import pytest

from lockgen.config import load_config
from lockgen.plan.matrix import expand, expand_matrix, select
from lockgen.runtime.errors import ConfigError, UsageError
from tests.conftest import write_project


def cells_of(tmp_path, config):
    write_project(tmp_path, config, {})
    return expand(load_config(tmp_path / "pyproject.toml"))


def test_product_minus_exclude_plus_include(tmp_path):
    cells = cells_of(
        tmp_path,
        """
        [tool.lockgen.matrix]
        os = ["linux", "windows"]
        arch = ["x86_64", "aarch64"]
        backend = ["cpu", "cu130"]
        python = ["3.12"]
        exclude = [{ os = "windows", arch = "aarch64" }, { os = "windows", backend = ["cu130"] }]
        include = [
          { os = "linux", arch = "x86_64", backend = "rocm7.1", python = "3.12" },  # adds a cell
          { backend = "cu130", vars = { cuda = "13.0" } },                          # adds a variable
        ]
        """,
    )
    names = [c.name for c in cells]
    assert names == [
        "linux-x86_64-cpu-py3.12",
        "linux-x86_64-cu130-py3.12",
        "linux-aarch64-cpu-py3.12",
        "linux-aarch64-cu130-py3.12",
        "windows-x86_64-cpu-py3.12",
        "linux-x86_64-rocm7.1-py3.12",
    ]
    by_name = {c.name: c for c in cells}
    assert by_name["linux-aarch64-cu130-py3.12"].settings.vars == {"cuda": "13.0"}
    assert by_name["linux-aarch64-cpu-py3.12"].settings.vars == {}


def test_include_that_matches_nothing_and_is_partial_is_an_error(tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"tool\.lockgen\.matrix\.include\[0\]\.os: 'macos' is not a value of the os axis \(linux\); .*missing arch",
    ):
        cells_of(
            tmp_path,
            """
            [tool.lockgen.matrix]
            os = ["linux"]
            arch = ["x86_64"]
            backend = ["cpu"]
            python = ["3.12"]
            include = [{ os = "macos", backend = "mps", python = "3.12" }]
            """,
        )


def test_rules_apply_in_order_later_wins_and_vars_merge(tmp_path):
    cells = cells_of(
        tmp_path,
        """
        manylinux = "2_17"
        vars = { flavour = "plain", extra = "a" }
        [tool.lockgen.matrix]
        os = ["linux", "macos"]
        arch = ["aarch64"]
        backend = ["cpu"]
        python = ["3.11", "3.12"]
        [[tool.lockgen.rules]]
        match = { os = "linux" }
        manylinux = "2_28"
        vars = { flavour = "linux" }
        find-links = { torch = "https://example.invalid/torch/" }
        [[tool.lockgen.rules]]
        match = { os = "linux", python = ["3.12"] }
        manylinux = "2_34"
        skip = "no wheels yet"
        [[tool.lockgen.rules]]
        match = { os = "macos" }
        macos = "15.0"
        """,
    )
    by_name = {c.name: c.settings for c in cells}
    assert by_name["linux-aarch64-cpu-py3.11"].manylinux == "2_28"
    assert by_name["linux-aarch64-cpu-py3.11"].vars == {"flavour": "linux", "extra": "a"}
    assert by_name["linux-aarch64-cpu-py3.11"].find_links == {"torch": ("https://example.invalid/torch/",)}
    assert by_name["linux-aarch64-cpu-py3.12"].manylinux == "2_34"
    assert by_name["linux-aarch64-cpu-py3.12"].skip == "no wheels yet"
    assert by_name["macos-aarch64-cpu-py3.11"].macos == "15.0"
    assert by_name["macos-aarch64-cpu-py3.11"].vars == {"flavour": "plain", "extra": "a"}


@pytest.fixture(scope="module")
def eight_cells(tmp_path_factory):
    """linux x {x86_64, aarch64} x {cpu, cu130} x {3.11, 3.12}."""
    config = """
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64", "aarch64"]
        backend = ["cpu", "cu130"]
        python = ["3.11", "3.12"]
    """
    return cells_of(tmp_path_factory.mktemp("eight-cells"), config)


#: id -> (names, only, the cells chosen)
SELECTIONS = {
    "only-narrows": ([], ["backend=cu130", "python=3.12"], ["linux-x86_64-cu130-py3.12", "linux-aarch64-cu130-py3.12"]),
    "only-repeated-axis-widens": (
        [],
        ["python=3.11", "python=3.12", "arch=aarch64", "backend=cpu"],
        ["linux-aarch64-cpu-py3.11", "linux-aarch64-cpu-py3.12"],
    ),
    "by-name": (["linux-aarch64-cpu-py3.11"], [], ["linux-aarch64-cpu-py3.11"]),
}


@pytest.mark.parametrize(("names", "only", "chosen"), SELECTIONS.values(), ids=SELECTIONS)
def test_select_by_name_and_only(eight_cells, names, only, chosen):
    assert [c.name for c in select(eight_cells, names, only=only)] == chosen


#: id -> (names, only, what the usage error says)
BAD_SELECTIONS = {
    "misspelt-name": (["linux-x86_64-cpu-py312"], [], "did you mean linux-x86_64-cpu-py3.12"),
    "unknown-axis": ([], ["gpu=yes"], "KEY=VALUE"),
    "unknown-value": (
        [],
        ["python=3.9"],
        "--only python=3.9: '3.9' is not a value of the python axis \\(3.11, 3.12\\)",
    ),
    "no-match": (["linux-x86_64-cpu-py3.11"], ["arch=aarch64"], "no cell matches"),
}


@pytest.mark.parametrize(("names", "only", "message"), BAD_SELECTIONS.values(), ids=BAD_SELECTIONS)
def test_bad_selections_say_why(eight_cells, names, only, message):
    with pytest.raises(UsageError, match=message):
        select(eight_cells, names, only=only)


def test_a_matrix_without_cells_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"tool\.lockgen\.matrix: has no cells"):
        cells_of(tmp_path, '[tool.lockgen.matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = []')


def test_aliases_and_pinned_are_checked_per_cell(tmp_path):
    with pytest.raises(ConfigError) as info:
        cells_of(
            tmp_path,
            """
            pinned = ["torch"]
            [tool.lockgen.matrix]
            os = ["windows"]
            arch = ["x86_64", "aarch64"]
            backend = ["cu130"]
            python = ["3.12", "3.13"]
            [[tool.lockgen.rules]]
            match = { arch = "aarch64", python = "3.12" }
            alias = "windows-x86_64-cu130-py3.11"
            pins = { torch = "2.13.0" }
            [[tool.lockgen.rules]]
            match = { python = "3.13" }
            pinned = ["numpy", "Torch"]
            pins = { numpy = "2.4.5" }
            """,
        )
    text = str(info.value)
    assert (
        "tool.lockgen.rules[0].alias: alias 'windows-x86_64-cu130-py3.11' names no cell of the matrix (did you mean "
        "windows-x86_64-cu130-py3.13, windows-x86_64-cu130-py3.12, windows-aarch64-cu130-py3.13?)"
    ) in text and text.count("(cell windows-aarch64-cu130-py3.12)") == 1
    # torch has a version in a rule's pins (so the config is valid), but only for one cell: the
    # others are named under the key path of the pinned entry they got
    assert (
        "tool.lockgen.pinned[0]: 'torch' has no version in the pins of cell windows-x86_64-cu130-py3.12 (a rule's "
        "pins give it to other cells only); add it to tool.lockgen.pins or to a rule matching these cells"
    ) in text
    assert (
        "tool.lockgen.rules[1].pinned[1]: 'Torch' has no version in the pins of cells windows-x86_64-cu130-py3.13, "
        "windows-aarch64-cu130-py3.13 (a rule's"
    ) in text
    assert len(info.value.messages) == 3


AXES_2x2 = """
[tool.lockgen.matrix]
os = ["linux", "windows"]
arch = ["x86_64"]
backend = ["cpu", "cu130", "mps"]
python = ["3.12"]
"""


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ('exclude = [{ os = "linux" }, { os = "windows" }, { backend = "mpss" }]',
         "tool.lockgen.matrix.exclude[2].backend: 'mpss' is not a value of the backend axis (cpu, cu130, mps)"),
        ('exclude = [{ backend = ["cpu", "cu131"] }]',
         "tool.lockgen.matrix.exclude[0].backend: 'cu131' is not a value of the backend axis (cpu, cu130, mps)"),
        ('exclude = [{ os = "macos" }]', "tool.lockgen.matrix.exclude[0].os: 'macos' is not a value of the os axis (linux, windows)"),
        ('exclude = [{ python = "3.13" }]', "tool.lockgen.matrix.exclude[0].python: '3.13' is not a value of the python axis (3.12)"),
        ('include = [{ backend = "cu13", vars = { cuda = true } }]',
         "tool.lockgen.matrix.include[0].backend: 'cu13' is not a value of the backend axis (cpu, cu130, mps); "
         "an include adds a cell only when it names all four axes (missing os, arch, python)"),
        ('[[tool.lockgen.rules]]\nmatch = { arch = "aarch64" }\nskip = "x"',
         "tool.lockgen.rules[0].match.arch: 'aarch64' is not a value of the arch axis (x86_64)"),
        ('[[tool.lockgen.rules]]\nmatch = {}\n[[tool.lockgen.rules]]\nmatch = { os = "linux", backend = ["cu130", "rocm"] }\nskip = "x"',
         "tool.lockgen.rules[1].match.backend: 'rocm' is not a value of the backend axis (cpu, cu130, mps)"),
    ],
    ids=["exclude", "exclude-list", "exclude-os", "exclude-python", "partial-include", "rule", "rule-list"],
)  # fmt: skip
def test_matrix_values_must_be_on_their_axis(tmp_path, entries, problem):
    config = (
        AXES_2x2 + entries
        if entries.startswith("[[")
        else AXES_2x2.replace('python = ["3.12"]', f'python = ["3.12"]\n{entries}')
    )
    with pytest.raises(ConfigError) as info:
        cells_of(tmp_path, config)
    assert info.value.messages == [problem]


def test_a_full_include_adds_values_that_rules_and_excludes_may_name(tmp_path):
    cells = cells_of(
        tmp_path,
        AXES_2x2.replace('python = ["3.12"]', 'python = ["3.12"]\n'
        'include = [{ os = "linux", arch = "aarch64", backend = "rocm7.1", python = "3.13" }]')
        + '[[tool.lockgen.rules]]\nmatch = { backend = "rocm7.1", arch = "aarch64" }\nskip = "experimental"',
    )  # fmt: skip
    assert cells[-1].name == "linux-aarch64-rocm7.1-py3.13" and cells[-1].settings.skip == "experimental"


def test_a_partial_include_of_an_excluded_combination_is_still_an_error(tmp_path):
    with pytest.raises(
        ConfigError, match=r"matrix\.include\[0\]: matches no cell and cannot add one \(missing arch, python\)"
    ):
        cells_of(
            tmp_path,
            AXES_2x2.replace(
                'python = ["3.12"]',
                'python = ["3.12"]\nexclude = [{ os = "windows", backend = "mps" }]\ninclude = [{ os = "windows", backend = "mps", vars = { a = 1 } }]',
            ),
        )


@pytest.mark.parametrize(
    ("entries", "warnings"),
    [
        ('exclude = [{ os = "windows", backend = "mps" }, { os = "linux", backend = "rocm7.1" }]\n'
         'include = [{ os = "linux", arch = "x86_64", backend = "rocm7.1", python = "3.12" }]',
         ["tool.lockgen.matrix.exclude[1]: matches no combination of the axes, so it excludes nothing; fix or remove it"]),
        ('exclude = [{ backend = "mps" }]\n[[tool.lockgen.rules]]\nmatch = { backend = "mps" }\nskip = "x"\n'
         '[[tool.lockgen.rules]]\nmatch = { os = "windows" }\nskip = "y"',
         ["tool.lockgen.rules[0].match: matches no cell, so the rule does nothing; fix or remove it"]),
        ('exclude = [{ backend = "mps" }]\n[[tool.lockgen.rules]]\nmatch = {}\nskip = "x"', []),
    ],
    ids=["exclude-of-an-included-value", "rule-of-an-excluded-value", "all-used"],
)  # fmt: skip
def test_entries_that_do_nothing_warn(tmp_path, caplog, entries, warnings):
    head, _, rules = entries.partition("[[")
    config = AXES_2x2.replace('python = ["3.12"]', f'python = ["3.12"]\n{head}') + (f"[[{rules}" if rules else "")
    write_project(tmp_path, config, {})
    config_ = load_config(tmp_path / "pyproject.toml")
    assert list(expand_matrix(config_).warnings) == warnings
    with caplog.at_level("WARNING", logger="lockgen"):
        expand(config_)
    assert [r.getMessage() for r in caplog.records if r.name == "lockgen"] == warnings


@pytest.mark.parametrize(
    ("only", "message"),
    [
        (["os=linx"], "--only os=linx: 'linx' is not a value of the os axis (linux, windows)"),
        (
            ["backend=cu130", "backend=mpss"],
            "--only backend=mpss: 'mpss' is not a value of the backend axis (cpu, cu130, mps)",
        ),
        (["python=3.9"], "--only python=3.9: '3.9' is not a value of the python axis (3.12)"),
        (
            ["name=linux-x86_64-cpu-py312"],
            "--only name=linux-x86_64-cpu-py312: no such cell (did you mean linux-x86_64-cpu-py3.12",
        ),
        (["os=windows", "backend=mps"], "no cell matches the selection"),
    ],
    ids=["os", "one-of-two", "python", "name", "valid-values-no-cell"],
)
def test_only_values_must_exist(tmp_path, only, message):
    cells = cells_of(
        tmp_path, AXES_2x2 + '[[tool.lockgen.rules]]\nmatch = { os = "windows", backend = "mps" }\nskip = "x"'
    )
    cells = [c for c in cells if c.name != "windows-x86_64-mps-py3.12"]
    with pytest.raises(UsageError) as info:
        select(cells, only=only)
    assert str(info.value).startswith(message)
