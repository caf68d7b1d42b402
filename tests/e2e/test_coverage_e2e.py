"""Kernel coverage end to end (issue 19): ``lockgen all`` with the real uv against a fake index
whose torch and torchvision wheels carry nvcc-built shared objects; the manifest records their
code, ``check`` and a no-op run read nothing again, and ``lockgen detect`` decides by it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli, write_project

pytestmark = pytest.mark.uv
CUDA = Path(__file__).parents[1] / "data" / "cuda"
TAG = "cp312-cp312-manylinux_2_28_x86_64"


def query(tmp_path: Path, cap: str) -> str:
    path = tmp_path / f"query-{cap}.csv"
    path.write_text(f"NVIDIA GPU, 24564 MiB, 580.65.06, {cap}\n")
    return str(path)


def test_the_manifest_records_the_wheels_code_and_detect_uses_it(tmp_path: Path, fake_host) -> None:
    pypi = fake_host("pypi")
    files = [
        pypi.wheel("files", "nvidia-cuda-runtime-cu13", "13.0.96", "py3-none-manylinux_2_28_x86_64"),
        pypi.wheel("files", "torch", "2.13.0", TAG, requires=("nvidia-cuda-runtime-cu13",),
                   files={"torch/lib/libtorch_cuda.so": (CUDA / "sm75-sm86.so").read_bytes()}),
        pypi.wheel("files", "torchvision", "0.28.0", TAG, requires=("torch==2.13.0",),
                   files={"torchvision/_C.so": (CUDA / "sm80-ptx90.so").read_bytes()}),
        pypi.wheel("files", "numpy", "2.3.0", TAG),
    ]  # fmt: skip
    pypi.index_page("simple", files, upload_time="2026-01-01T00:00:00Z")
    config = f"""
        [tool.lockgen.mirrors]
        "https://pypi.org/simple" = "{pypi.url}/simple"
        "https://files.pythonhosted.org" = "{pypi.url}/files"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cu130"]
        python = ["3.12"]
        [tool.lockgen.detect]
        nvidia-unknown-cuda = "cu130"
        [[tool.lockgen.detect.nvidia]]
        min-cuda = "13.0"
        backend = "cu130"
    """
    write_project(tmp_path, config, {"requirements.in.j2": "torchvision\nnumpy\n"})
    run = run_cli("all", "-C", str(tmp_path))
    assert run.code == 0, run.err
    entry = json.loads((tmp_path / "locks" / "manifest.json").read_text())["cells"]["linux-x86_64-cu130-py3.12"]
    wheels = {w["name"]: (w["sass"], w["ptx"]) for w in entry["coverage"]["wheels"]}
    assert entry["coverage"]["unread"] == [], entry["coverage"]["unread"]
    assert wheels == {"torch": (["sm_75", "sm_86"], []), "torchvision": (["sm_80"], ["compute_90"])}
    assert entry["coverage"]["unread"] == []
    assert sorted(p.name for p in (tmp_path / ".lockgen" / "coverage").glob("*.json")) == sorted(
        f"{w['sha256']}.json" for w in entry["coverage"]["wheels"]
    )
    assert run_cli("check", "-C", str(tmp_path)).code == 0
    assert "1 up to date" in run_cli("all", "-C", str(tmp_path)).err

    args = ("detect", "-C", str(tmp_path), "--os", "linux", "--arch", "x86_64", "--cuda", "13.0", "--json")
    ok = run_cli(*args, "--gpu-query", query(tmp_path, "8.6"))
    assert ok.code == 0, ok.err
    assert json.loads(ok.out)["coverage"] == [
        "GPU 0 NVIDIA GPU (compute capability 8.6): torch sm_86, torchvision sm_80"
    ]
    refused = run_cli(*args, "--gpu-query", query(tmp_path, "8.0"))
    assert refused.code == 2
    assert "GPU 0 NVIDIA GPU (compute capability 8.0): torch 2.13.0 has sm_75, sm_86" in refused.err

    # a shard run records it in its shard manifest, and merge takes it from there
    shutil.rmtree(tmp_path / ".lockgen")
    shard = tmp_path.parent / f"{tmp_path.name}-shard"
    shutil.copytree(tmp_path, shard)
    assert run_cli("all", "-C", str(shard), "--shard", "1/1", "--force").code == 0
    shard_entry = json.loads((shard / "locks" / "manifest.json").read_text())["cells"]["linux-x86_64-cu130-py3.12"]
    assert shard_entry["coverage"] == entry["coverage"]
    path = tmp_path / "locks" / "manifest.json"
    data = json.loads(path.read_text())
    del data["cells"]["linux-x86_64-cu130-py3.12"]["coverage"]  # the checkout's manifest has none yet
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    merged = run_cli("merge", str(shard / "locks"), "-C", str(tmp_path))
    assert merged.code == 0, merged.err
    assert json.loads(path.read_text())["cells"]["linux-x86_64-cu130-py3.12"]["coverage"] == entry["coverage"]

    # a coverage record that does not match the locked wheels is stale: check says so
    data = json.loads(path.read_text())
    data["cells"]["linux-x86_64-cu130-py3.12"]["coverage"]["wheels"][0]["sha256"] = "0" * 64
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    assert run_cli("check", "-C", str(tmp_path)).code != 0
