"""Real PyPI (opt-in: ``pytest -m network``)."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli, write_project

pytestmark = [pytest.mark.network, pytest.mark.uv]


def test_small_real_matrix(tmp_path):
    """A torch-free slice of the default stack, for a Linux, a Windows and a macOS cell."""
    config = """
        exclude-newer = "2026-11-25T00:00:00Z"
        [tool.lockgen.matrix]
        os = ["linux", "windows", "macos"]
        arch = ["aarch64", "x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
        exclude = [{ os = "windows", arch = "aarch64" }, { os = "macos", arch = "x86_64" }, { os = "linux", arch = "x86_64" }]
    """
    root = write_project(tmp_path, config, {"requirements.in.j2": "numpy\npyyaml\nsafetensors\n"})
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    lock = (root / "locks" / "macos-aarch64-cpu-py3.12.txt").read_text()
    assert "--index-url https://pypi.org/simple" in lock and "numpy==" in lock
    first = {p.name: p.read_bytes() for p in (root / "locks").iterdir()}
    assert run_cli("all", "--force", "-C", str(root)).code == 0
    assert {p.name: p.read_bytes() for p in (root / "locks").iterdir()} == first

