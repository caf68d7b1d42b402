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
    first = _files(root / "locks")
    assert run_cli("all", "--force", "-C", str(root)).code == 0
    assert _files(root / "locks") == first


def _files(folder):
    """Every file under ``folder`` (the cells' folders hold their pylock.toml), by relative path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _copy(example: str, tmp_path):
    import shutil
    from pathlib import Path

    root = tmp_path / example
    shutil.copytree(Path(__file__).parents[2] / "examples" / example, root)
    return root


def test_invokeai_pypi_only_cells(tmp_path):
    """examples/invokeai: the cells PyPI alone serves (linux aarch64 and macOS, issue 9)."""
    root = _copy("invokeai", tmp_path)
    run = run_cli("all", "-C", str(root), "--only", "arch=aarch64")
    assert run.code == 0, run.err
    for cell in ("linux-aarch64-cu128-py3.11", "linux-aarch64-cpu-py3.12", "macos-aarch64-mps-py3.12"):
        assert "torch==2.7.1 " in (root / "locks" / f"{cell}.txt").read_text(), cell


def test_text_generation_webui_pypi_only_cells(tmp_path):
    """examples/text-generation-webui's PyPI-substitute config: the cells PyPI alone serves (the
    GitHub wheels are optional layers, recorded unavailable where GitHub is unreachable)."""
    root = _copy("text-generation-webui", tmp_path)
    cells = ["linux-x86_64-cu128-py3.13-full", "windows-x86_64-cpu-py3.13-full", "macos-aarch64-mps-py3.13-full"]
    run = run_cli("lock", *cells, "-C", str(root / "lockgen.pypi.toml"))
    assert run.code == 0, run.err
    run = run_cli(
        "all", "-C", str(root / "lockgen.pypi.toml"), "--only", "variant=portable", "--only", "variant=portable_ik"
    )
    assert run.code == 0, run.err
    assert len(list((root / "locks-pypi").glob("*.txt"))) == len(cells) + 18
