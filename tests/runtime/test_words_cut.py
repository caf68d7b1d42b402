"""Reasons cut at a sentence end (issue 17, item 8): never mid-word, never inside a version."""

from __future__ import annotations

import pytest

from lockgen.runtime.words import cut

UV = (
    "No solution found when resolving dependencies: Because only torch<=2.9.0 is available and vllm==0.11.0 "
    "depends on torch==2.9.0, we can conclude that vllm==0.11.0 depends on torch==2.9.0. And because you require "
    "torch==2.13.0, we can conclude that your requirements are unsatisfiable."
)


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (1000, UV),
        (200, UV.split(". And")[0] + ". …"),
        (60, "No solution found when resolving dependencies …"),
        (20, "No solution found …"),
    ],
)
def test_cut_at_a_sentence_end(limit, expected):
    assert cut(UV, limit) == expected
    assert len(cut(UV, limit)) <= max(limit, len(UV) if limit >= len(UV) else limit)


def test_cut_joins_lines_and_never_splits_a_version():
    assert cut("a\n  b   c", 100) == "a b c"
    text = "torch 2.13.0 is locked " * 10
    assert "2.1 …" not in cut(text, 50) and cut(text, 50).endswith(" …")
