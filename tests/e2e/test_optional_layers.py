"""Optional means optional (issue 17, items 3 and 4): an optional entry that cannot be had
against main, for any reason, is recorded unavailable with uv's reason cut at a sentence end,
and the cell locks; layers are resolved with main's versions as uv's preferences, so a conflict
names only what must move and a ``replace`` never moves a main version that already fits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import locked_versions, one_cell, run_cli, run_ok

pytestmark = pytest.mark.uv

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{HOST}"


@pytest.fixture
def world(index):
    for version in ("2.9.0", "2.13.0"):
        index.add("torch", version)
    index.add("vllm", "0.11.0", requires=("torch==2.9.0",))
    index.add("stubborn", "1.0", requires=("torch<2",))  # no torch below 2 exists: no resolution at all
    for name in ("alpha", "beta", "gamma"):
        for version in ("1.0", "2.0"):
            index.add(name, version)
    index.add("tool", "1.0", requires=("alpha>=2", "beta", "gamma"))  # only alpha must move
    index.publish()
    return index


def project(root: Path, world, requirements: str, extra: str) -> Path:
    return one_cell(root, world.index_url(), requirements, python=HOST, extra=extra)


def entry(root: Path) -> dict:
    return json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]


def test_an_optional_entry_that_needs_another_main_version_is_unavailable_and_the_cell_locks(tmp_path, world):
    root = project(tmp_path / "p", world, "torch==2.13.0\n", 'optional = ["vllm"]')
    run = run_ok("all", "-C", str(root))
    (gap,) = entry(root)["unavailable"]
    assert gap["requirement"] == "vllm"
    assert gap["reason"].startswith("it would set torch to 2.9.0 (the main lock has torch==2.13.0)")
    assert 'replace = ["torch"]' in gap["reason"]
    assert "unavailable: vllm" in run.err
    assert run_cli("check", "-C", str(root)).code == 0


def test_an_optional_entry_without_any_resolution_keeps_uvs_reason_cut_at_a_sentence_end(tmp_path, world):
    root = project(tmp_path / "p", world, "torch==2.13.0\n", 'optional = ["stubborn"]')
    run_ok("all", "-C", str(root))
    (gap,) = entry(root)["unavailable"]
    assert gap["requirement"] == "stubborn"
    assert "torch" in gap["reason"] and "unsatisfiable" in gap["reason"]
    assert gap["reason"].endswith((".", "…"))
    assert len(gap["reason"]) <= 310


def test_a_conflict_names_only_what_must_move(tmp_path, world):
    """main locks alpha, beta and gamma 1.0; tool needs alpha>=2 and takes any beta and gamma:
    the hint names alpha alone (it named every difference: the free resolution took the newest
    of everything)."""
    root = project(tmp_path / "q", world, "alpha==1.0\nbeta==1.0\ngamma==1.0\n", 'optional = ["tool"]')
    run_ok("all", "-C", str(root))
    (gap,) = entry(root)["unavailable"]
    assert "would set alpha to 2.0 (the main lock has alpha==1.0)" in gap["reason"]
    assert 'replace = ["alpha"]' in gap["reason"]
    assert "beta" not in gap["reason"] and "gamma" not in gap["reason"]


def test_following_the_hint_moves_only_what_must_move(tmp_path, world):
    """replace names alpha (what the hint said) and beta too (an over-broad list, as the old hint
    produced): the layer moves alpha, and keeps main's beta and gamma, which already fit."""
    extra = 'optional = ["tool"]\nreplace = ["alpha", "beta"]'
    root = project(tmp_path / "p", world, "alpha==1.0\nbeta==1.0\ngamma==1.0\n", extra)
    run_ok("all", "-C", str(root))
    layer = locked_versions((root / "locks" / CELL / "optional-tool.txt").read_text())
    assert (layer["alpha"], layer["beta"], layer["gamma"]) == ("2.0", "1.0", "1.0")
    assert entry(root)["replaces"] == [{"package": "alpha", "main": "1.0", "layer": "2.0", "by": "optional-tool"}]


def test_a_no_deps_layer_never_moves_a_main_version_that_fits(tmp_path, world):
    extra = 'no-deps = ["beta"]\nreplace = ["beta"]'
    root = project(tmp_path / "p", world, "beta==1.0\n", extra)
    run_ok("all", "-C", str(root))
    assert locked_versions((root / "locks" / CELL / "no-deps.txt").read_text()) == {"beta": "1.0"}
    assert "replaces" not in entry(root)


def test_the_no_deps_layer_still_fails_the_cell(tmp_path, world):
    root = project(tmp_path / "p", world, "torch==2.13.0\n", 'no-deps = ["torch==2.9.0"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "layer no-deps would set torch to 2.9.0 (the main lock has torch==2.13.0)" in run.err
