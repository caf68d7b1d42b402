"""The repo's own default matrix: committed locks match committed config and templates."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli

ROOT = Path(__file__).parents[2]


def test_default_matrix_has_12_cells():
    run = run_cli("matrix", "-C", str(ROOT))
    assert len(run.out.splitlines()) == 12


def test_committed_locks_are_up_to_date():
    """What `lockgen check` does in CI: every input hash matches, the manifest matches the locks."""
    run = run_cli("check", "-C", str(ROOT))
    assert run.code == 0, run.out
