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


def test_the_gpu_code_of_a_real_pypi_wheel_by_range_reads(tmp_path):
    """torchao 0.10.0's x86_64 wheel (5.4 MB on PyPI, in the default matrix's linux cu130 locks)
    ships a CUDA extension: its code is read without downloading the whole wheel, and the cell's
    coverage record in the committed manifest is what reading it gives."""
    import json
    from pathlib import Path

    import httpx

    from lockgen.config.model import DEFAULT_BACKENDS
    from lockgen.locks import pylockfile
    from lockgen.wheels.cells import gpu_wheels
    from lockgen.wheels.reading import refresh
    from lockgen.wheels.remote import read_remote

    repo = Path(__file__).parents[2]
    cell = "linux-x86_64-cu130-py3.12"
    pylock = pylockfile.loads((repo / "locks" / cell / "pylock.toml").read_text(), "pylock")
    (wheel,) = [w for p in pylock.packages if p.name == "torchao" for w in p.wheels or () if "manylinux" in w.url]
    assert wheel.size < 10_000_000
    with httpx.Client(follow_redirects=True, timeout=60) as client:
        code, fetched = read_remote(client, wheel.url, wheel.size)
    assert code.sass == ("sm_80", "sm_86") and fetched < wheel.size
    cuda = next(f for f in DEFAULT_BACKENDS if f.name == "cuda")
    small = [w for w in gpu_wheels(repo, f"locks/{cell}.txt", cuda) if w.name == "torchao"]
    record, _ = refresh(tmp_path, small)
    recorded = json.loads((repo / "locks" / "manifest.json").read_text())["cells"][cell]["coverage"]["wheels"]
    assert record["wheels"] == [w for w in recorded if w["name"] == "torchao"], record["unread"]
