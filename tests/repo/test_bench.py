"""The benchmark scripts in bench/ still import: they are not run by the suite (they need minutes
or the network), and a test helper they use had moved without them noticing (bench_scale.py
imported a module the fake-host merge had removed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "bench"


@pytest.mark.parametrize("script", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_a_bench_script_imports(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH.parent))
    spec = importlib.util.spec_from_file_location(f"bench_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # each runs its work only under __main__
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"
