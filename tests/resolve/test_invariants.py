"""Backend invariants (CASES C27) and extension ABI: pure checks on small pylock packages."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.pylock import Package, PackageArchive, PackageWheel
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.config.model import DEFAULT_BACKENDS, BackendFamily
from lockgen.resolve.invariants import Build, backend_build, problems


def pkg(spec: str, wheel: str | None = None, url: str | None = None) -> Package:
    """``"name==version"`` as a pylock package, with a wheel file name or a direct URL archive."""
    name, _, version = spec.partition("==")
    wheels = (
        [PackageWheel(name=wheel, url=f"https://files.example/{wheel}", hashes={"sha256": "0" * 64})] if wheel else None
    )
    archive = PackageArchive(url=url, hashes={"sha256": "0" * 64}) if url else None
    return Package(name=canonicalize_name(name), version=Version(version), wheels=wheels, archive=archive)


#: torch 2.13.0 from PyPI on linux: the CUDA 13.0 build and its runtime (locks/linux-x86_64-cu130-py3.12.txt).
PYPI_CU130 = [
    pkg("torch==2.13.0"), pkg("cuda-bindings==13.5.0"), pkg("cuda-pathfinder==1.9.1"), pkg("cuda-toolkit==13.0.3.0"),
    pkg("nvidia-cublas==13.1.1.3"), pkg("nvidia-cuda-cupti==13.0.85"), pkg("nvidia-cuda-nvrtc==13.0.88"),
    pkg("nvidia-cuda-runtime==13.0.96"), pkg("nvidia-cudnn-cu13==9.20.0.48"), pkg("nvidia-cufft==12.0.0.61"),
    pkg("nvidia-cufile==1.15.1.6"), pkg("nvidia-curand==10.4.0.35"), pkg("nvidia-cusolver==12.0.4.66"),
    pkg("nvidia-cusparse==12.6.3.3"), pkg("nvidia-cusparselt-cu13==0.8.1"), pkg("nvidia-nccl-cu13==2.29.7"),
    pkg("nvidia-nvjitlink==13.5.37"), pkg("nvidia-nvshmem-cu13==3.4.5"), pkg("nvidia-nvtx==13.0.85"),
    pkg("triton==3.7.1"), pkg("numpy==2.5.5"),
]  # fmt: skip
#: torch 2.6.0+cu124 from the backend index and its CUDA 12 runtime.
INDEX_CU124 = [
    pkg("torch==2.6.0+cu124"), pkg("nvidia-cublas-cu12==12.4.5.8"), pkg("nvidia-cuda-runtime-cu12==12.4.127"),
    pkg("nvidia-cudnn-cu12==9.1.0.70"), pkg("numpy==2.2.0"),
]  # fmt: skip


def names(found) -> list[str]:
    return [p.package for p in found]


@pytest.mark.parametrize(
    ("flavor", "build"),
    [
        ("cu126", Build("cuda", (12, 6))),
        ("cu130", Build("cuda", (13, 0))),
        ("cu12", Build("cuda", (12,))),
        ("rocm7.1", Build("rocm", (7, 1))),
        ("cpu", Build("cpu")),
        ("mps", Build("mps")),
        ("cu130_dgx", None),
        ("xpu", None),
    ],
    ids=lambda v: str(v),
)
def test_backend_build_of_a_flavor(flavor, build):
    assert backend_build(flavor, DEFAULT_BACKENDS) == build


@pytest.mark.parametrize(
    ("flavor", "packages"),
    [
        ("cu130", PYPI_CU130),
        ("cu124", INDEX_CU124),
        ("cu126", [pkg("torch==2.13.0+cu126"), pkg("torchvision==0.28.0+cu126"), pkg("nvidia-cublas-cu12==12.6.4.1")]),
        ("cu126", [pkg("torch==2.13.0+cu126")]),  # labelled: the runtime may be bundled (windows)
        ("cpu", [pkg("torch==2.13.0"), pkg("numpy==2.5.5")]),  # PyPI's windows torch
        ("cpu", [pkg("torch==2.13.0+cpu"), pkg("torchvision==0.28.0+cpu")]),
        ("mps", [pkg("torch==2.13.0"), pkg("torchvision==0.28.0")]),
        ("rocm7.1", [pkg("torch==2.13.0+rocm7.1"), pkg("pytorch-triton-rocm==3.7.0")]),
        ("xpu", PYPI_CU130),  # no family: nothing to check
        ("cpu", [pkg("nvidia-ml-py==13.580.82")]),  # NVML bindings are no CUDA runtime
        ("rocm7.2", [pkg("torch==2.9.1+rocm7.2.0.lw.git7e1940d4")]),  # repo.radeon.com: a build suffix on the label
    ],
    ids=["cu130-torch-from-pypi", "cu124-labelled", "cu126-labelled-with-runtime", "cu126-labelled-alone", "cpu-pypi",
         "cpu-labelled", "mps", "rocm", "unknown-flavor", "cpu-nvml", "rocm-label-with-build-suffix"],
)  # fmt: skip
def test_valid_locks_have_no_problems(flavor, packages):
    assert problems(flavor, packages, DEFAULT_BACKENDS) == []


def test_c27_gpu_cell_with_a_cpu_torch():
    """A cu128 cell whose torch comes bare from the default index with no CUDA runtime packages."""
    (problem,) = problems(
        "cu128", [pkg("torch==2.10.0"), pkg("numpy==2.5.5"), pkg("filelock==3.20.0")], DEFAULT_BACKENDS
    )
    assert problem.package == "torch"
    assert "torch 2.10.0 has no local label" in problem.evidence and "cuda 12.8" in problem.evidence
    assert "CPU build" in problem.message and "allow-mix" in problem.message


def test_c27_cpu_cell_with_cuda_runtime():
    found = problems("cpu", [pkg("torch==2.13.0"), pkg("nvidia-cublas-cu12==12.8.4.1")], DEFAULT_BACKENDS)
    assert names(found) == ["nvidia-cublas-cu12"]
    assert found[0].evidence == "nvidia-cublas-cu12 12.8.4.1: name (nvidia-*-cu{major}) shows cuda 12"
    assert "the cell's backend cpu is cpu" in found[0].message


def test_c27_cu124_cell_mixing_cuda_12_and_13():
    found = problems(
        "cu124", [*INDEX_CU124, pkg("tensorrt-cu13==10.14.1"), pkg("nvidia-cuda-runtime==13.0.96")], DEFAULT_BACKENDS
    )
    assert names(found) == ["nvidia-cuda-runtime", "tensorrt-cu13"]
    assert "version 13.0.96 (nvidia-cuda-runtime) shows cuda 13" in found[0].evidence
    assert "name (*-cu{major}) shows cuda 13" in found[1].evidence
    assert all("cu124 is cuda 12.4" in p.message for p in found)


@pytest.mark.parametrize(
    ("flavor", "packages", "expected"),
    [
        ("cu130", [pkg("torch==2.13.0+cpu")], ["torch"]),  # a labelled CPU build in a GPU cell
        ("cu126", [pkg("torch==2.6.0+cu124"), pkg("nvidia-cublas-cu12==12.4.5.8")], ["torch"]),  # 12.4 is not 12.6
        ("cu126", PYPI_CU130, [p.name for p in PYPI_CU130 if "cu13" in p.name or p.name in (
            "cuda-bindings", "cuda-toolkit", "nvidia-cublas", "nvidia-cuda-cupti", "nvidia-cuda-nvrtc",
            "nvidia-cuda-runtime", "nvidia-nvjitlink", "nvidia-nvtx")] + ["torch"]),  # PyPI torch is CUDA 13
        ("mps", [pkg("torch==2.13.0"), pkg("nvidia-nccl-cu13==2.29.7")], ["nvidia-nccl-cu13"]),
        ("rocm7.1", [pkg("torch==2.13.0+rocm7.1"), pkg("nvidia-cufft==12.0.0.61")], ["nvidia-cufft"]),
        ("cu130", [pkg("torch==2.13.0+cu130"), pkg("pytorch-triton-rocm==3.7.0")], ["pytorch-triton-rocm"]),
        ("cu130", [pkg("torch==2.13.0+cu130"), pkg("torchvision==0.28.0+cpu")], ["torchvision"]),
        ("rocm7.1", [pkg("torch==2.13.0")], ["torch"]),
    ],
    ids=["cpu-label-in-gpu-cell", "cu124-torch-in-cu126", "pypi-cu13-in-cu126", "cuda-in-mps", "cuda-in-rocm",
         "rocm-in-cuda", "cpu-torchvision-in-cuda", "bare-torch-in-rocm"],
)  # fmt: skip
def test_mixed_backends_are_problems(flavor, packages, expected):
    assert sorted(names(problems(flavor, packages, DEFAULT_BACKENDS))) == sorted(canonicalize_name(n) for n in expected)


@pytest.mark.parametrize(
    ("allow", "left"),
    [
        ({"nvidia-cudnn-cu12": "onnxruntime-gpu loads cuDNN 9 for CUDA 12 side by side"}, ["tensorrt-cu12"]),
        ({"nvidia-*-cu12": "side by side", "TensorRT_cu12": "TensorRT ships its own runtime"}, []),
        ({"*": "this cell is a mix on purpose"}, []),
        ({}, ["nvidia-cudnn-cu12", "tensorrt-cu12"]),
    ],
    ids=["one-package", "glob-and-unnormalized-name", "everything", "nothing-declared"],
)
def test_declared_mix_is_accepted(allow, left):
    packages = [pkg("torch==2.13.0+cu130"), pkg("nvidia-cudnn-cu12==9.1.0.70"), pkg("tensorrt-cu12==10.14.1")]
    assert names(problems("cu130", packages, DEFAULT_BACKENDS, allow)) == left


NATTEN_OK = "natten-0.21.7+torch2130cu130-cp312-cp312-linux_x86_64.whl"
FLASH_CU12_TORCH26 = "flash_attn-2.8.3+cu12torch2.6cxx11abiFALSE-cp312-cp312-linux_x86_64.whl"
FLASH_URL = "https://github.com/mjun0812/flash-attention-prebuild-wheels/releases/download/v0.9.47/"


@pytest.mark.parametrize(
    ("flavor", "torch", "extension", "ok"),
    [
        ("cu130", "2.13.0+cu130", pkg("natten==0.21.7+torch2130cu130", NATTEN_OK), True),
        ("cu126", "2.13.0+cu126", pkg("natten==0.21.7+torch2130cu130"), False),  # CUDA 13.0 build in a cu126 cell
        ("cu130", "2.12.0+cu130", pkg("natten==0.21.7+torch2130cu130"), False),  # built for torch 2.13.0
        ("cu124", "2.6.0+cu124", pkg("flash-attn==2.8.3", FLASH_CU12_TORCH26), True),  # cu12: major only; 2.6 matches 2.6.0
        ("cu126", "2.6.3+cu126", pkg("flash-attn==2.8.3+cu12torch2.6cxx11abifalse"), True),
        ("cu124", "2.7.0+cu124", pkg("flash-attn==2.8.3", FLASH_CU12_TORCH26), False),
        ("cu130", "2.6.0+cu130", pkg("flash-attn==2.8.3", FLASH_CU12_TORCH26), False),  # cu12 in a CUDA 13 cell
        ("cu130", "2.13.0+cu130", pkg("flash-attn==2.8.3", url=FLASH_URL + "flash_attn-2.8.3%2Bcu130torch2.13-cp312-cp312-linux_x86_64.whl"), True),
        ("cu126", "2.13.0+cu126", pkg("flash-attn==2.8.3", url=FLASH_URL + "flash_attn-2.8.3+cu130torch2.13-cp312-cp312-linux_x86_64.whl"), False),
        ("cu134", "2.14.0.dev20260727+cu134", pkg("flash-attn==2.8.3+cu134torch2.14"), True),
        ("cu130", "2.13.0+cu130", pkg("flash-attn==2.8.3", "flash_attn-2.8.3-1cu130torch2.13-cp312-cp312-linux_x86_64.whl"), True),
        ("cu130", "2.13.0+cu130", pkg("flash-attn==2.8.3", "flash_attn-2.8.3-1cu130torch2.12-cp312-cp312-linux_x86_64.whl"), False),
        ("cpu", "2.13.0+cpu", pkg("natten==0.21.7+torch2130cpu"), True),
        ("cpu", "2.13.0+cpu", pkg("natten==0.21.7+torch2130cu130"), False),
        ("cu130", None, pkg("natten==0.21.7+torch2130cu130"), False),  # no torch locked at all
        ("cu130", "2.13.0+cu130", pkg("natten==0.21.7"), True),  # says nothing: nothing to check
    ],
    ids=["natten-match", "natten-cuda-mismatch", "natten-torch-mismatch", "flash-file-match", "flash-label-match",
         "flash-torch-mismatch", "flash-cuda-major-mismatch", "flash-url-match", "flash-url-mismatch", "spark-dev-torch",
         "build-tag-match", "build-tag-mismatch", "cpu-extension", "cuda-extension-in-cpu-cell", "no-torch",
         "no-build-stated"],
)  # fmt: skip
def test_extension_abi(flavor, torch, extension, ok):
    runtime = {"cu12": "nvidia-cublas-cu12==12.4.5.8", "cu13": "nvidia-cuda-runtime==13.0.96"}
    packages = [pkg(f"torch=={torch}")] if torch else []
    packages += [pkg(runtime["cu13" if flavor.startswith("cu13") else "cu12"])] if flavor.startswith("cu") else []
    found = problems(flavor, [*packages, extension], DEFAULT_BACKENDS)
    assert names(found) == ([] if ok else [extension.name])
    if not ok:
        assert "undefined symbol" in found[0].message
        assert f"{flavor} cell" in found[0].message and (
            "no torch" in found[0].message or f"torch {torch}" in found[0].message
        )


def test_abi_problem_names_both_builds():
    (problem,) = problems("cu126", [pkg("torch==2.13.0+cu126"), pkg("natten==0.21.7+torch2130cu130")], DEFAULT_BACKENDS)
    assert problem.evidence == "natten 0.21.7+torch2130cu130: local label says torch 2.13.0 and cuda 13.0"
    assert "the lock has torch 2.13.0+cu126 in a cu126 cell (cuda 12.6)" in problem.message


def test_rules_are_data():
    """A custom family (Intel XPU) and a family whose names are replaced."""
    xpu = BackendFamily(name="xpu", flavors=("xpu",), packages=("pytorch-triton-xpu", "intel-sycl-rt"), gpu=True)
    rules = (*DEFAULT_BACKENDS, xpu)
    assert names(problems("xpu", [pkg("torch==2.13.0+xpu"), pkg("intel-sycl-rt==2025.2.1")], rules)) == []
    assert names(problems("cpu", [pkg("torch==2.13.0"), pkg("pytorch-triton-xpu==3.7.0")], rules)) == [
        "pytorch-triton-xpu"
    ]
    assert names(problems("xpu", [pkg("torch==2.13.0")], rules)) == ["torch"]
    no_cuda_names = tuple(BackendFamily(name=f.name, flavors=f.flavors, gpu=f.gpu) for f in DEFAULT_BACKENDS)
    assert problems("cpu", [pkg("torch==2.13.0"), pkg("nvidia-cublas-cu12==12.8.4.1")], no_cuda_names) == []


def _lock_packages(path) -> list[Package]:
    """The pins of a committed lock (requirements format) as pylock packages (names and versions)."""
    from packaging.requirements import Requirement

    found = []
    for line in path.read_text().splitlines():
        if line and not line.startswith(("#", "-", " ")):
            requirement = Requirement(line.rstrip(" \\"))
            (spec,) = requirement.specifier
            found.append(Package(name=canonicalize_name(requirement.name), version=Version(spec.version)))
    return found


REPO_LOCKS = Path(__file__).parents[2] / "locks"


@pytest.mark.parametrize("lock", sorted(p.name for p in REPO_LOCKS.glob("*.txt")))
def test_the_repo_locks_keep_the_invariants(lock):
    """The committed default matrix: linux cu130 (torch from PyPI), windows cpu, macos mps. The
    linux locks, checked as cpu cells, show their CUDA 13 runtime."""
    packages = _lock_packages(REPO_LOCKS / lock)
    backend = lock.split("-")[2]
    assert problems(backend, packages, DEFAULT_BACKENDS) == []
    if backend == "cu130":
        found = names(problems("cpu", packages, DEFAULT_BACKENDS))
        assert {"nvidia-cudnn-cu13", "nvidia-cuda-runtime", "cuda-toolkit", "nvidia-cufft"} <= set(found)
        assert "cuda-pathfinder" not in found and "triton" not in found


def test_the_module_docstring_tables_the_defaults():
    import lockgen.resolve.invariants as module

    doc = module.__doc__ or ""
    for family in DEFAULT_BACKENDS:
        assert f"\n{family.name} " in doc and all(f"``{pattern}``" in doc for pattern in family.flavors)
        assert all(
            pattern.removeprefix("nvidia-").split("-")[0] in doc for pattern in (*family.packages, *family.versioned)
        )


# -- issue 17 item 2 and issue 16 item 7: labels read by the grammar, compatibility as data


@pytest.mark.parametrize(
    ("flavor", "packages", "expected"),
    [
        # the labels the issue names, each read as its publisher means it
        ("cu130", [pkg("torch==2.10.0+cu130"), pkg("llamacpp-gguf-cuda==1.0.2+torch210cu13py311")], []),
        ("cu130", [pkg("torch==2.13.0+cu130"), pkg("sageattention==2.2.0+cu130torch2.9.0andhigher.post4")], []),
        ("cu130", [pkg("torch==2.8.0+cu130"), pkg("sageattention==2.2.0+cu130torch2.9.0andhigher.post4")], ["sageattention"]),
        ("cu130", [pkg("torch==2.9.0+cu130"), pkg("torch-scatter==2.1.2+pt29cu130")], []),
        ("cu130", [pkg("torch==2.13.0+cu130"), pkg("torch-scatter==2.1.2+pt29cu130")], ["torch-scatter"]),
        ("rocm6.5", [pkg("torch==2.7.0a0+rocm.git3f903c3")], []),  # TheRock: ROCm, version not stated
        ("cu130", [pkg("torch==2.7.0a0+rocm.git3f903c3")], ["torch"]),  # a ROCm torch in a CUDA cell
        ("rocm6.5", [pkg("torch==2.7.0a0+gitbfd8155")], []),  # names no backend: a warning, not "a CPU build"
        ("cu130", [pkg("torch==2.13.0+cu130"), pkg("torchvision==0.28.0+xpu")], ["torchvision"]),
        # CUDA minor version compatibility: an extension within the major fits, the torch family does not
        ("cu128", [pkg("torch==2.6.0+cu128"), pkg("flashinfer-python==0.2.2.post1+cu124torch2.6")], []),
        ("cu128", [pkg("torch==2.6.0+cu128"), pkg("llama-cpp-python==0.3.40+cu124")], []),
        ("cu128", [pkg("torch==2.6.0+cu128"), pkg("torchvision==0.21.0+cu126")], ["torchvision"]),
        ("cu128", [pkg("torch==2.6.0+cu128"), pkg("llama-cpp-python==0.3.40+cu131")], ["llama-cpp-python"]),
        ("rocm6.4", [pkg("torch==2.8.0+rocm6.4"), pkg("xformers==0.0.30+rocm6.3")], ["xformers"]),  # ROCm: exact
    ],
    ids=["torch210-is-2.10", "andhigher-floor", "andhigher-below-floor", "pyg-pt29", "pyg-pt29-torch-mismatch",
         "therock-rocm-git", "rocm-torch-in-cuda", "git-label-torch", "xpu-torchvision", "extension-cu124-in-cu128",
         "extension-label-cu124-in-cu128", "torchvision-cu126-in-cu128", "extension-newer-major",
         "rocm-minor-mix"],
)  # fmt: skip
def test_labels_as_publishers_write_them(flavor, packages, expected):
    assert names(problems(flavor, packages, DEFAULT_BACKENDS)) == expected


def test_a_config_tightens_the_minor_policy():
    import dataclasses

    packages = [pkg("torch==2.6.0+cu128"), pkg("flashinfer-python==0.2.2.post1+cu124torch2.6")]
    exact = tuple(dataclasses.replace(f, minor="exact") if f.name == "cuda" else f for f in DEFAULT_BACKENDS)
    assert names(problems("cu128", packages, exact)) == ["flashinfer-python"]
    older = tuple(dataclasses.replace(f, minor="older") if f.name == "cuda" else f for f in DEFAULT_BACKENDS)
    assert names(problems("cu128", packages, older)) == []
    assert names(problems("cu124", [pkg("torch==2.6.0+cu124"), pkg("xf==1.0+cu128")], older)) == ["xf"]


def test_a_label_only_in_the_file_name_counts():
    """Release-page wheels whose metadata has the bare version (issue 16, item 3)."""
    wheel = "flash_attn-2.8.3+cu130torch2.13-cp312-cp312-linux_x86_64.whl"
    ok = [pkg("torch==2.13.0+cu130"), pkg("flash-attn==2.8.3", wheel)]
    assert problems("cu130", ok, DEFAULT_BACKENDS) == []
    found = problems("cu130", [pkg("torch==2.12.0+cu130"), pkg("flash-attn==2.8.3", wheel)], DEFAULT_BACKENDS)
    assert names(found) == ["flash-attn"]
    assert f"file {wheel} says torch 2.13 and cuda 13.0" in found[0].evidence


def test_what_cannot_be_read_is_a_warning():
    from lockgen.resolve.invariants import label_warnings

    packages = [
        pkg("torch==2.7.0a0+gitbfd8155"), pkg("xformers==0.0.33+das.opt1.dtk2604.torch251"), pkg("gradio-client==1.0.2+custom.20"),
    ]  # fmt: skip
    found = label_warnings(packages, DEFAULT_BACKENDS)
    assert len(found) == 2
    assert found[0].startswith("torch 2.7.0a0+gitbfd8155: its local label names no backend")
    assert "xformers 0.0.33+das.opt1.dtk2604.torch251: lockgen cannot read the local label" in found[1]
    assert problems("cu130", packages[1:], DEFAULT_BACKENDS) == []  # unread: not a wrong reading


def test_the_minor_policy_is_checked_with_its_key_path(tmp_path):
    from tests.conftest import run_cli, write_project

    root = write_project(
        tmp_path / "p",
        """
        [tool.lockgen.backends.cuda]
        minor = "loose"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cu128"]
        python = ["3.12"]
        """,
        {"requirements.in.j2": "torch\n"},
    )
    run = run_cli("matrix", "-C", str(root))
    assert run.code == 2
    assert "tool.lockgen.backends.cuda.minor: must be one of 'any', 'older', 'exact'" in run.err


def test_pulled_in_names_the_requirer_of_the_gpu_packages_in_a_cpu_cell_only():
    from lockgen.locks.lock import Entry
    from lockgen.resolve.invariants import pulled_in

    def entry(spec: str, *via: str) -> Entry:
        name, _, version = spec.partition("==")
        return Entry(name=canonicalize_name(name), version=Version(version), via=via)

    entries = [
        entry("app==1.0", "templates/requirements.in.j2"),
        entry("torch==2.13.0", "app"),
        entry("cuda-toolkit==13.0.2", "torch"),
        entry("nvidia-cublas==13.1.0.3", "torch", "cuda-toolkit"),
    ]
    packages = [pkg("torch==2.13.0"), pkg("cuda-toolkit==13.0.2"), pkg("nvidia-cublas==13.1.0.3"), pkg("app==1.0")]
    found = problems("cpu", packages, DEFAULT_BACKENDS)
    said = pulled_in("cpu", found, entries, DEFAULT_BACKENDS)
    assert said.startswith("  torch 2.13.0 pulls in cuda-toolkit, nvidia-cublas: the torch it locks is a cuda build")
    assert "https://download.pytorch.org/whl/cpu" in said and "label the backend as the cuda build it is" in said
    assert pulled_in("cu130", problems("cu130", packages, DEFAULT_BACKENDS), entries, DEFAULT_BACKENDS) == ""
    assert pulled_in("cpu", found, [], DEFAULT_BACKENDS) == ""  # no # via data: nothing to name
