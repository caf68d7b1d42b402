"""Pylock entries parsed apart and shared (``pylockfile._by_package``) give exactly what parsing
the whole file gives, and any layout where that is not sure is parsed whole (issue 24, item 4:
``lockgen diff`` spent most of its time parsing the same entries again)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.pylock import Pylock

from lockgen.config import parse_toml
from lockgen.locks import pylockfile
from lockgen.runtime.errors import LockFormatError

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "locks").glob("*/pylock.toml"))

ONE = """lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.11"

[[packages]]
name = "alpha"
version = "1.0"
index = "https://pypi.org/simple"
wheels = [{ url = "https://files.example/alpha-1.0-py3-none-any.whl", hashes = { sha256 = "AAA" } }]

[[packages]]
name = "beta"
version = "2.0"
index = "https://pypi.org/simple"
sdist = { url = "https://files.example/beta-2.0.tar.gz", hashes = { sha256 = "BBB" } }
""".replace("AAA", "a" * 64).replace("BBB", "b" * 64)


def whole(text: str) -> Pylock:
    return Pylock.from_dict(parse_toml(text))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.parent.name)
def test_the_committed_pylocks_read_entry_by_entry_equal_the_whole_parse(path):
    text = path.read_text(encoding="utf-8")
    shared = pylockfile._by_package(text)
    assert shared is not None
    assert shared == whole(text)
    assert pylockfile.loads(text, str(path)) == whole(text)  # again: every entry from the table


def test_an_entry_met_again_is_the_same_object():
    first, second = pylockfile.loads(ONE, "a"), pylockfile.loads(ONE.replace('"uv"', '"lockgen"'), "b")
    assert first.packages[0] is second.packages[0]
    assert second.created_by == "lockgen"


@pytest.mark.parametrize(
    "text",
    [
        ONE.replace('version = "2.0"', "version = '''2.0'''"),  # a multi-line string: a header line may be inside it
        ONE + "\n[tool.x]\ny = 1\n",  # a table after the packages
        ONE.replace('created-by = "uv"', 'created-by = "uv"\npackages = []'),  # packages defined twice
        ONE.replace("\n", "\r\n"),
        ONE.replace('name = "beta"', 'name = "beta"\n\n[[packages]]\nname = "gamma"', 1).replace(
            '\n[[packages]]\nname = "gamma"', '\n[[packages]] \nname = "gamma"'
        ),  # a header spelled otherwise: its entry would hold two packages
    ],
    ids=["multiline-string", "table-after", "packages-twice", "crlf", "header-spelled-otherwise"],
)
def test_layouts_not_sure_to_split_are_parsed_whole(text):
    assert pylockfile._by_package(text) is None
    try:
        expected: Pylock | None = whole(text)
    except Exception:
        expected = None
    if expected is None:
        with pytest.raises(LockFormatError):
            pylockfile.loads(text, "x")
    else:
        assert pylockfile.loads(text, "x") == expected


def test_an_invalid_entry_reports_the_whole_parse_error():
    text = ONE.replace('version = "2.0"', "version = 2")
    with pytest.raises(LockFormatError, match=r"not a valid pylock\.toml"):
        pylockfile.loads(text, "locks/x/pylock.toml")
