"""Config of the backend invariants (CASES C27): ``[tool.lockgen.backends]`` and ``allow-mix``."""

from __future__ import annotations

import pytest

from lockgen.config import load_config
from lockgen.config.model import DEFAULT_BACKENDS
from lockgen.plan.matrix import expand
from lockgen.runtime.errors import ConfigError
from tests.conftest import write_project

MATRIX = """
[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cu130", "cpu"]
python = ["3.12"]
"""


def load(tmp_path, text: str):
    write_project(tmp_path, text + MATRIX, {})
    return load_config(tmp_path / "pyproject.toml")


def test_defaults(tmp_path):
    config = load(tmp_path, "")
    assert config.backends == DEFAULT_BACKENDS
    assert [f.name for f in config.backends] == ["cuda", "rocm", "cpu", "mps"]
    assert all(c.settings.allow_mix == {} for c in expand(config))


def test_a_table_replaces_the_keys_it_names_and_adds_families(tmp_path):
    config = load(
        tmp_path,
        """
        [tool.lockgen.backends.cuda]
        packages = ["nvidia-*-cu{major}"]
        [tool.lockgen.backends.xpu]
        flavors = ["xpu"]
        packages = ["pytorch-triton-xpu", "intel-sycl-rt"]
        gpu = true
        """,
    )
    by_name = {f.name: f for f in config.backends}
    assert list(by_name) == ["cuda", "rocm", "cpu", "mps", "xpu"]
    assert by_name["cuda"].packages == ("nvidia-*-cu{major}",)
    assert by_name["cuda"].versioned == DEFAULT_BACKENDS[0].versioned and by_name["cuda"].gpu
    assert by_name["xpu"].gpu and by_name["xpu"].builds == ("torch",)


def test_allow_mix_merges_per_cell(tmp_path):
    config = load(
        tmp_path,
        """
        allow-mix = { "nvidia-cudnn-cu12" = "onnxruntime-gpu needs cuDNN for CUDA 12" }
        [[tool.lockgen.rules]]
        match = { backend = "cu130" }
        allow-mix = { "tensorrt-*" = "TensorRT ships its own runtime" }
        """,
    )
    by_name = {c.backend: c.settings.allow_mix for c in expand(config)}
    assert by_name["cpu"] == {"nvidia-cudnn-cu12": "onnxruntime-gpu needs cuDNN for CUDA 12"}
    assert by_name["cu130"] == {
        "nvidia-cudnn-cu12": "onnxruntime-gpu needs cuDNN for CUDA 12", "tensorrt-*": "TensorRT ships its own runtime",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("backends = 3", "tool.lockgen.backends: must be a table of backend families"),
        ("[tool.lockgen.backends]\ncuda = true", "tool.lockgen.backends.cuda: must be a table"),
        ("[tool.lockgen.backends.cuda]\nflavour = ['cu{version}']", "tool.lockgen.backends.cuda.flavour: unknown key"),
        ("[tool.lockgen.backends.xpu]\npackages = ['intel-*']", "tool.lockgen.backends.xpu.flavors: a new backend family needs flavors"),
        ("[tool.lockgen.backends.cuda]\npackages = ['nvidia-*-cu{major}-{major}']",
         "tool.lockgen.backends.cuda.packages: 'nvidia-*-cu{major}-{major}' is not a pattern of letters, digits, '.', '_', '-', * and ?, and {major} at most once"),
        ("[tool.lockgen.backends.cuda]\nflavors = ['cu{major}']", "tool.lockgen.backends.cuda.flavors: 'cu{major}' is not a pattern"),
        ("[tool.lockgen.backends.cuda]\nversioned = ['cuda toolkit']", "tool.lockgen.backends.cuda.versioned: 'cuda toolkit' is not a pattern"),
        ("[tool.lockgen.backends.cuda]\nbuilds = ['torch*']", "tool.lockgen.backends.cuda.builds: 'torch*' is not a pattern of letters, digits, '.', '_', '-'"),
        ("[tool.lockgen.backends.cuda]\ngpu = 'yes'", "tool.lockgen.backends.cuda.gpu: must be true or false"),
        ("[tool.lockgen.backends.cuda]\npackages = 'nvidia-*'", "tool.lockgen.backends.cuda.packages: must be an array of non-empty strings"),
        ("allow-mix = ['nvidia-*']", "tool.lockgen.allow-mix: must be a table of package = \"why the mix is intended\""),
        ("allow-mix = { 'nvidia-*' = '' }", "tool.lockgen.allow-mix.nvidia-*: give the reason the mix is intended"),
        ("allow-mix = { 'nvidia cublas' = 'x' }", "tool.lockgen.allow-mix.nvidia cublas: not a package name or pattern"),
        ("[[tool.lockgen.rules]]\nmatch = { backend = 'cpu' }\nallow-mix = { torch = 1 }", "tool.lockgen.rules[0].allow-mix.torch: give the reason"),
    ],
    ids=["not-a-table", "family-not-a-table", "unknown-key", "new-without-flavors", "placeholder-twice",
         "wrong-placeholder", "space-in-name", "glob-in-builds", "gpu-not-bool", "not-an-array", "allow-mix-array",
         "allow-mix-no-reason", "allow-mix-bad-name", "allow-mix-in-rule"],
)  # fmt: skip
def test_problems_name_their_key_path(tmp_path, text, problem):
    if text.startswith(("[[", "[tool")):
        body = MATRIX + text
    else:
        body = text + "\n" + MATRIX
    write_project(tmp_path, body, {})
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "pyproject.toml")
    assert len(info.value.messages) == 1 and info.value.messages[0].startswith(problem), info.value.messages
