"""Mirrors: fetch from the mirror, write the canonical URL."""

from __future__ import annotations

import pytest

from lockgen.plan.mirror import Mirrors, from_env, parse
from lockgen.runtime.errors import UsageError


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


@pytest.mark.parametrize(
    ("prefix", "url", "mapped"),
    [
        ("https://pypi.org/simpl", "https://pypi.org/simple/torch/", False),
        ("https://download.pytorch.org/whl/cu13", "https://download.pytorch.org/whl/cu130/torch/", False),
        ("https://download.pytorch.org/whl/cu13", "https://download.pytorch.org/whl/cu13/torch/", True),
        ("https://download.pytorch.org/whl/cu13", "https://download.pytorch.org/whl/cu13", True),
        ("https://host.example", "https://host.example.evil/simple", False),
        ("https://host.example", "https://host.example:8443/simple", False),
        ("https://host.example/simple", "https://host.example/simple?x=1", True),
        ("https://host.example/simple", "https://host.example/simple#frag", True),
    ],
    ids=["shorter-segment", "cu13-not-cu130", "cu13-folder", "equal", "longer-host", "other-port", "query", "fragment"],
)
def test_a_prefix_matches_at_a_segment_boundary_only(prefix, url, mapped):
    mirrors = Mirrors(parse([f"{prefix}=http://m/x"]))
    assert (mirrors.fetch_url(url) != url) is mapped
    assert (mirrors.never_used() == []) is mapped


def test_mirror_urls_in_text_turn_back_at_a_boundary_only():
    mirrors = Mirrors(parse(["https://download.pytorch.org/whl/cu13=http://m/whl/cu13"]))
    text = "a http://m/whl/cu130/torch/ b `http://m/whl/cu13/torch/` c (http://m/whl/cu13) d http://m/whl/cu13\n"
    assert mirrors.canonical(text) == (
        "a http://m/whl/cu130/torch/ b `https://download.pytorch.org/whl/cu13/torch/` "
        "c (https://download.pytorch.org/whl/cu13) d https://download.pytorch.org/whl/cu13\n"
    )


@pytest.mark.parametrize(
    "pair", ["pypi=ci:ghp_TOKENABC@mirror.corp/simple", "garbage:ghp_TOKENABC@", "ci:ghp_TOKENABC@m=https://x/simple"]
)
def test_a_malformed_pair_never_echoes_a_login_without_a_scheme(pair):
    with pytest.raises(UsageError) as caught:
        parse([pair])
    assert "ghp_TOKENABC" not in str(caught.value) and "****@" in str(caught.value)
    with pytest.raises(UsageError) as caught:
        from_env(pair)
    assert "ghp_TOKENABC" not in str(caught.value)
