"""Kernel coverage end to end (issue 19): ``lockgen all`` with the real uv against a fake index
whose torch and torchvision wheels carry nvcc-built shared objects; the manifest records their
code, ``check`` and a no-op run read nothing again, and ``lockgen detect`` decides by it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import HOST_PYTHON, run_cli, schema_problems, write_project

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


def test_the_layers_gpu_wheels_are_read_and_decide_which_layers_install(
    tmp_path: Path, fake_host, monkeypatch, caplog
) -> None:
    """GPU extensions in layers (issue 19): an optional layer from a hashed find-links page, one
    from a page without hashes (downloaded and hashed), one from the index (found on its project
    page by sha256) and a no-deps layer from a direct URL; each layer's code is recorded, a
    second run reads nothing, and detect / install --detect leave out an optional layer whose
    kernels do not run on the machine."""
    tag = f"cp{HOST_PYTHON.replace('.', '')}-cp{HOST_PYTHON.replace('.', '')}-manylinux_2_28_x86_64"
    pypi = fake_host("pypi")
    files = [
        pypi.wheel("files", "nvidia-cuda-runtime-cu13", "13.0.96", "py3-none-manylinux_2_28_x86_64"),
        pypi.wheel("files", "torch", "2.13.0", tag, requires=("nvidia-cuda-runtime-cu13",),
                   files={"torch/lib/libtorch_cuda.so": (CUDA / "sm75-sm86.so").read_bytes()}),
        pypi.wheel("files", "bitsandbytes", "0.50.2", tag, requires=("torch",),  # a CUDA 12 build: cannot load
                   files={"bitsandbytes/libbitsandbytes_cuda12x.so": (CUDA / "sm80-sm90-cudart12.so").read_bytes()}),
        pypi.wheel("files", "numpy", "2.3.0", tag),
    ]  # fmt: skip
    pypi.index_page("simple", files, upload_time="2026-01-01T00:00:00Z")
    flash = pypi.wheel("fa", "flash-attn", "2.8.3", tag, requires=("torch",),
                       files={"flash_attn_2_cuda.so": (CUDA / "sm120-cudart13.so").read_bytes()})  # fmt: skip
    pypi.flat_page("fa", [flash], hashed=True)
    sage = pypi.wheel("sage", "sageattention", "2.2.0", tag, requires=("torch",),
                      files={"sageattention/_qattn.so": (CUDA / "sm80-ptx90.so").read_bytes()})  # fmt: skip
    pypi.flat_page("sage", [sage], hashed=False)
    natten = pypi.wheel(
        "nat", "natten", "0.21.7", tag, files={"natten/libnatten.so": (CUDA / "two-units.so").read_bytes()}
    )
    config = f"""
        [tool.lockgen.mirrors]
        "https://pypi.org/simple" = "{pypi.url}/simple"
        "https://files.pythonhosted.org" = "{pypi.url}/files"
        "https://fa.example" = "{pypi.url}/fa"
        "https://sage.example" = "{pypi.url}/sage"
        "https://nat.example" = "{pypi.url}/nat"
        [tool.lockgen.sources.fa]
        find-links = "https://fa.example/"
        packages = ["flash-attn"]
        [tool.lockgen.sources.sage]
        find-links = "https://sage.example/"
        packages = ["sageattention"]
        [tool.lockgen.sources.nat]
        urls = ["https://nat.example/{natten.name}"]
        packages = ["natten"]
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cu130"]
        python = ["{HOST_PYTHON}"]
        [[tool.lockgen.rules]]
        use = ["fa", "sage", "nat"]
        optional = ["flash-attn==2.8.3", "sageattention==2.2.0", "bitsandbytes==0.50.2"]
        no-deps = ["natten==0.21.7"]
        [tool.lockgen.detect]
        nvidia-unknown-cuda = "cu130"
        [[tool.lockgen.detect.nvidia]]
        min-cuda = "13.0"
        backend = "cu130"
    """
    write_project(tmp_path, config, {"requirements.in.j2": "torch\nnumpy\n"})
    with caplog.at_level("WARNING", logger="lockgen"):
        run = run_cli("all", "-C", str(tmp_path))
    assert run.code == 0, run.err
    warned = [r.getMessage() for r in caplog.records]
    assert any("bitsandbytes 0.50.2: its GPU code is linked against libcudart.so.12" in m for m in warned)
    cell = f"linux-x86_64-cu130-py{HOST_PYTHON}"
    manifest = json.loads((tmp_path / "locks" / "manifest.json").read_text())
    assert schema_problems(manifest) == []
    coverage = manifest["cells"][cell]["coverage"]
    assert coverage["runtimes"] == ["cudart64_13.dll", "libcudart.so.13"]  # the runtime package of the main lock
    shas = {layer["name"]: layer["sha256"] for layer in manifest["cells"][cell]["layers"]}
    layers = {layer["name"]: layer for layer in coverage["layers"]}
    assert sorted(layers) == ["no-deps", "optional-bitsandbytes", "optional-flash-attn", "optional-sageattention"]
    assert all(layer["sha256"] == shas[name] and layer["unread"] == [] for name, layer in layers.items())
    code = {name: [(w["name"], w["sass"], w["ptx"], [g["needs"] for g in w["linked"]]) for w in layer["wheels"]]
            for name, layer in layers.items()}  # fmt: skip
    assert code == {
        "optional-flash-attn": [("flash-attn", ["sm_120"], [], [["libcudart.so.13"]])],
        "optional-sageattention": [("sageattention", ["sm_80"], ["compute_90"], [[]])],
        "optional-bitsandbytes": [("bitsandbytes", ["sm_80", "sm_90"], [], [["libcudart.so.12"]])],
        "no-deps": [("natten", ["sm_75", "sm_80", "sm_90"], [], [[]])],
    }
    assert run_cli("check", "-C", str(tmp_path)).code == 0
    assert "1 up to date" in run_cli("all", "-C", str(tmp_path)).err  # nothing read again

    # a layer part whose layer lock is not the one on disk is read again; the other parts are carried
    shutil.rmtree(tmp_path / ".lockgen" / "coverage")
    path = tmp_path / "locks" / "manifest.json"
    edited = json.loads(path.read_text())
    sage_part = next(p for p in edited["cells"][cell]["coverage"]["layers"] if p["name"] == "optional-sageattention")
    sage_part["sha256"] = "0" * 64
    path.write_text(json.dumps(edited, indent=2, sort_keys=True) + "\n")
    assert run_cli("check", "-C", str(tmp_path)).code == 1  # stale
    assert run_cli("all", "-C", str(tmp_path), "--force").code == 0
    assert json.loads(path.read_text()) == manifest
    read_again = {p.stem for p in (tmp_path / ".lockgen" / "coverage").glob("*.json")}
    assert read_again == {layers["optional-sageattention"]["wheels"][0]["sha256"]}

    args = ("detect", "-C", str(tmp_path), "--os", "linux", "--arch", "x86_64", "--cuda", "13.0", "--json")
    chosen = json.loads(run_cli(*args, "--gpu-query", query(tmp_path, "8.6")).out)
    assert [layer["name"] for layer in chosen["skipped_layers"]] == ["optional-flash-attn"]
    assert "optional-flash-attn" not in [layer["name"] for layer in chosen["layers"]]
    assert (
        "optional-bitsandbytes: not counted: bitsandbytes 0.50.2: its GPU code is linked against libcudart.so.12"
        in (" ".join(chosen["coverage"]))
    )
    older = json.loads(run_cli(*args, "--gpu-query", query(tmp_path, "7.5")).out)
    assert [layer["name"] for layer in older["skipped_layers"]] == ["optional-flash-attn", "optional-sageattention"]
    text = run_cli(*args[:-1], "--gpu-query", query(tmp_path, "7.5"))
    assert "layer not installed on this machine: optional-sageattention (optional): no code for GPU 0" in text.out

    # install --detect goes on without the optional layers the machine cannot run
    from lockgen import cellselect as selector

    facts = selector.Facts(os="linux", arch="x86_64", interpreter="x86_64", nvidia=True, cuda="13.0",
                           gpus=(selector.Gpu("NVIDIA GPU", "24564 MiB", "580.65.06", 7.5),))  # fmt: skip
    monkeypatch.setattr(selector, "gather", lambda *a, **k: facts)
    dry = run_cli("install", "--detect", "--dry-run", "-C", str(tmp_path), "--venv", str(tmp_path / "venv"))
    assert dry.code == 0, dry.err
    assert "optional-flash-attn: not installed on this machine" in dry.err
    assert "would run for optional-bitsandbytes" in dry.out and "would run for optional-flash-attn" not in dry.out
