"""Mirrors: fetch from the mirror, write the canonical URL."""

from __future__ import annotations

import pytest

from lockgen.errors import UsageError
from lockgen.plan.mirror import Mirrors, from_env, parse


def test_longest_prefix_wins_both_ways():
    mirrors = Mirrors(parse(["https://pypi.org=http://m1", "https://pypi.org/simple=http://m2/pypi"]))
    assert mirrors.fetch_url("https://pypi.org/simple/torch/") == "http://m2/pypi/torch/"
    assert mirrors.fetch_url("https://pypi.org/other") == "http://m1/other"
    assert mirrors.fetch_url("https://download.pytorch.org/whl") == "https://download.pytorch.org/whl"
    text = "--index-url http://m2/pypi\nfile http://m1/x\n"
    assert mirrors.canonical(text) == "--index-url https://pypi.org/simple\nfile https://pypi.org/x\n"


def test_sources_merge_later_wins_and_bad_pairs_say_how():
    config = Mirrors({"https://a.example": "http://config"})
    merged = config.merged(
        from_env("https://a.example=http://env, https://b.example=http://b"), parse(["https://a.example=http://cli"])
    )
    assert merged.table == {"https://a.example": "http://cli", "https://b.example": "http://b"}
    with pytest.raises(UsageError, match="--mirror 'nonsense': write CANONICAL=MIRROR"):
        parse(["nonsense"])
    with pytest.raises(UsageError, match="LOCKGEN_MIRRORS"):
        from_env("pypi=http://x")


def test_trailing_slashes_and_unused_prefixes():
    mirrors = Mirrors(parse(["https://pypi.org/simple/=http://m/simple/"]))
    assert mirrors.fetch_url("https://pypi.org/simple") == "http://m/simple"
    assert mirrors.fetch_url("https://pypi.org/simple/torch/") == "http://m/simple/torch/"
    assert mirrors.never_used() == []  # fetch_url went through it


def test_a_mirror_nothing_went_through_is_reported():
    mirrors = Mirrors(
        parse(["https://pypi.org/simple=http://m/simple", "https://files.pythonhosted.org=http://m/files"])
    )
    mirrors.fetch_url("https://pypi.org/simple/torch/")
    assert mirrors.never_used() == ["https://files.pythonhosted.org"]
    mirrors.canonical("url = http://m/files/torch.whl")  # a file URL read back from uv's output
    assert mirrors.never_used() == []
