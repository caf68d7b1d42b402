"""Stage 2: matrix expansion (CI-matrix include/exclude), rules, cell names, selection."""

from __future__ import annotations

import pytest

from lockgen.config import load_config
from lockgen.errors import ConfigError, UsageError
from lockgen.plan.matrix import expand, select
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
    with pytest.raises(ConfigError, match=r"tool\.lockgen\.matrix\.include\[0\]: matches no cell .*missing arch"):
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
        [], ["python=3.11", "python=3.12", "arch=aarch64", "backend=cpu"], ["linux-aarch64-cpu-py3.11", "linux-aarch64-cpu-py3.12"],
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
    "no-match": ([], ["python=3.9"], "no cell matches"),
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
            python = ["3.12"]
            [[tool.lockgen.rules]]
            match = { arch = "aarch64" }
            alias = "windows-x86_64-cu130-py3.13"
            """,
        )
    text = str(info.value)
    assert "cell windows-aarch64-cu130-py3.12: alias 'windows-x86_64-cu130-py3.13' names no cell" in text
    assert "cell windows-x86_64-cu130-py3.12: pinned 'torch' has no version in pins" in text
