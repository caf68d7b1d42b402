"""The local-label grammar (issue 17, item 2) on a table of labels from real release pages
(``tests/data/labels.toml``, each row naming where its file is published), and the compatibility
policy (issue 16, item 7). Pure."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from lockgen.resolve import labels
from lockgen.resolve.compat import Build, fits

TABLE = tomlkit.loads((Path(__file__).parents[1] / "data" / "labels.toml").read_text()).unwrap()["label"]


def label_of(file: str) -> str:
    return parse_wheel_filename(file)[1].local or ""


@pytest.mark.parametrize("row", TABLE, ids=[row["file"] for row in TABLE])
def test_real_labels_read_as_their_publishers_mean(row):
    assert row["source"] and row["publisher"]  # every row says where it came from
    found = labels.read(label_of(row["file"]))
    if row["reads"] == "none":
        assert found is None
        return
    if row["reads"] == "unreadable":
        assert isinstance(found, labels.Unreadable)
        assert "cannot read the local label" in found.warning("pkg 1.0")
        return
    assert isinstance(found, labels.Label), found
    readings = [".".join(map(str, r)) for r in found.torch.readings] if found.torch else []
    assert readings == row.get("torch", [])
    assert (found.torch.floor if found.torch else False) == row.get("floor", False)
    assert (str(found.backend) if found.backend else None) == row.get("backend")
    assert found.python == row.get("python")
    assert found.cxx11abi == row.get("cxx11abi")


def test_the_table_covers_every_form_the_issue_names():
    texts = " ".join(label_of(row["file"]) for row in TABLE)
    for form in ("cu130", "cu13", "cu130torch2.9", "torch2.10.0", "torch210cu13py311", "cu130torch2.9.0andhigher",
                 "pt29cu130", "rocm6.4", "rocm.git", "cpu", "xpu"):  # fmt: skip
        assert form in texts, form
    assert any("a0+" in row["file"] for row in TABLE)  # a pre-release torch with a label
    publishers = " ".join(row["publisher"] for row in TABLE)
    for name in ("flash-attn", "xformers", "sageattention", "natten", "llama", "bitsandbytes", "TheRock"):
        assert name in publishers


@pytest.mark.parametrize(
    ("label", "locked", "ok"),
    [
        ("torch2.9", "2.9.1", True),
        ("torch2.9", "2.10.0", False),
        ("cu130torch2.9.0andhigher", "2.13.0", True),  # a floor
        ("cu130torch2.9.0andhigher", "2.8.0", False),
        ("torch210cu13py311", "2.10.0", True),  # read as 2.10 (or 2.1.0): not only 2.1.0
        ("torch210cu13py311", "2.1.0", True),
        ("torch210cu13py311", "2.9.0", False),
        ("torch2130cu130", "2.13.0", True),
        ("torch2130cu130", "2.1.3", False),
        ("pt113cpu", "1.13.1", True),
    ],
)
def test_a_torch_statement_matches_the_locked_torch(label, locked, ok):
    found = labels.read(label)
    assert isinstance(found, labels.Label) and found.torch is not None
    assert found.torch.matches(Version(locked)) is ok


def test_what_names_no_build_is_not_read():
    assert labels.read("custom.20") is None
    assert labels.read("") is None
    assert labels.read("+9eb57cd") is None
    unread = labels.read("torch2x.cu130")
    assert isinstance(unread, labels.Unreadable) and unread.text[unread.at :].startswith("torch2x")


@pytest.mark.parametrize(
    ("shown", "cell", "member", "minor", "ok"),
    [
        (Build("cuda", (12, 4)), Build("cuda", (12, 8)), False, "any", True),  # NVIDIA minor version compatibility
        (Build("cuda", (12, 4)), Build("cuda", (12, 8)), True, "any", False),  # the torch family: exactly
        (Build("cuda", (12, 4)), Build("cuda", (12, 8)), False, "older", True),
        (Build("cuda", (12, 9)), Build("cuda", (12, 8)), False, "older", False),
        (Build("cuda", (12, 4)), Build("cuda", (12, 8)), False, "exact", False),
        (Build("cuda", (12,)), Build("cuda", (12, 8)), False, "exact", True),  # major only: agrees
        (Build("cuda", (13, 0)), Build("cuda", (12, 8)), False, "any", False),  # a major mix: always refused
        (Build("rocm", (6, 3)), Build("rocm", (6, 4)), False, "exact", False),
        (Build("rocm", ()), Build("rocm", (6, 4)), False, "exact", True),
    ],
)
def test_the_compatibility_policy(shown, cell, member, minor, ok):
    assert fits(shown, cell, family_member=member, minor=minor) is ok


def test_the_module_docstring_tables_every_token():
    doc = labels.__doc__ or ""
    for token in labels.GRAMMAR:
        if token.name not in ("post", "git", "date", "llama", "lw", "commit"):
            assert token.name in doc, token.name


def test_the_docs_page_tables_the_grammar_and_the_policy():
    from lockgen.config.model import MINOR_POLICIES

    page = (Path(__file__).parents[2] / "docs" / "layers-labels-builds.md").read_text()
    for token in labels.GRAMMAR:
        if token.name not in ("post", "git", "date", "llama", "lw", "commit"):
            assert f"| `{token.name}`" in page or f"`{token.name}`," in page, token.name
    for policy in MINOR_POLICIES:
        assert f"`{policy}`" in page
    assert "docs.nvidia.com/deploy/cuda-compatibility" in page and "RELEASE.md" in page
