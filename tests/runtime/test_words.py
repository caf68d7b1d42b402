"""How counts, suggestions and repeated reasons are said (:mod:`lockgen.runtime.words`)."""

from __future__ import annotations

import pytest

from lockgen.runtime.words import counted, did_you_mean, first_sentence


@pytest.mark.parametrize(
    ("count", "noun", "said"),
    [(1, "cell", "1 cell"), (0, "cell", "0 cells"), (12, "cell", "12 cells"), (1, "package version", "1 package version"),
     (2, "package version", "2 package versions"), (3, "entry", "3 entries"), (2, "URL", "2 URLs"),
     (2, "more cell", "2 more cells"), (2, "advisory", "2 advisories"), (2, "key", "2 keys")],
)  # fmt: skip
def test_counted(count, noun, said):
    assert counted(count, noun) == said


def test_did_you_mean_names_close_names_or_nothing():
    known = ["linux-x86_64-cu130-py3.12", "linux-x86_64-cpu-py3.12", "macos-aarch64-mps-py3.12"]
    assert did_you_mean("linux-x86_64-cu13-py3.12", known, n=1) == " (did you mean linux-x86_64-cu130-py3.12?)"
    assert did_you_mean("zzz", known) == ""


@pytest.mark.parametrize(
    ("text", "first"),
    [("no wheel of torch 2.13.0 for this target. uv said: …", "no wheel of torch 2.13.0 for this target"),
     ("a file, e.g. a wheel, is missing. More", "a file, e.g. a wheel, is missing"),
     ("one line\nhint: the second", "one line"), ("the CUDA index is down", "the CUDA index is down"),
     ("", ""), ("x" * 300, "x" * 199 + "…")],
    ids=["version-then-sentence", "abbreviation", "lines", "one-sentence", "empty", "long"],
)  # fmt: skip
def test_first_sentence(text, first):
    assert first_sentence(text) == first
