"""The hosts ``examples/ai-toolkit`` reads, faked on loopback with tiny wheels.

* PyPI: every requirement of the example's templates as a pure wheel (PEP 691 JSON with upload
  times, as PyPI serves), the PyPI builds of the torch family, helpers, a tensorboard whose
  grpcio has no win_arm64 wheel;
* download.pytorch.org: per-flavor PEP 503 pages with local-label wheels (``+cu130``), no upload
  times, and stale numpy/filelock copies (CASES C03);
* whl.natten.org: one flat page, local-label wheels, no hashes, %2B-encoded and mixed-case links
  (C04, C10);
* github.com: flash-attn release assets (compressed manylinux tag sets per cpXY; none for
  linux aarch64 cu126) and the Spark wheel set behind an ``expanded_assets`` page.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.fakehost import FakeHost

EXAMPLE = Path(__file__).parents[2] / "examples" / "ai-toolkit"
PYPI_TIME = "2026-01-01T00:00:00Z"
CP = "cp312"
LINUX_X86 = "manylinux_2_28_x86_64"
LINUX_ARM = "manylinux_2_28_aarch64"
#: Versions only the Spark wheel set has (self-built win_arm64 wheels).
SPARK_ONLY = {("numba", "0.67.0rc1"), ("llvmlite", "0.49.0rc1"), ("opencv-python", "4.12.0.88"),
              ("opencv-python-headless", "4.12.0.88"), ("soxr", "1.1.0")}  # fmt: skip
SPARK_TAG = f"{CP}-{CP}-win_arm64"


@dataclass
class World:
    pypi: FakeHost
    pytorch: FakeHost
    natten: FakeHost
    github: FakeHost
    spark_wheels: list[Path]

    @property
    def mirrors(self) -> list[str]:
        return [
            f"https://pypi.org/simple={self.pypi.url}/simple",
            f"https://files.pythonhosted.org={self.pypi.url}/files",
            f"https://download.pytorch.org={self.pytorch.url}",
            f"https://whl.natten.org={self.natten.url}",
            f"https://github.com={self.github.url}",
        ]

    def mirror_args(self) -> list[str]:
        return [arg for m in self.mirrors for arg in ("--mirror", m)]

    def stop(self) -> None:
        for host in (self.pypi, self.pytorch, self.natten, self.github):
            host.stop()


def template_requirements(folder: Path = EXAMPLE / "templates") -> dict[str, set[str]]:
    """Every plain requirement line of the example's templates: name -> versions to publish."""
    wanted: dict[str, set[str]] = {}
    for path in folder.glob("*.j2"):
        text = re.sub(r"\{#.*?#\}", "", path.read_text(), flags=re.S)  # drop Jinja comments
        for line in text.splitlines():
            line = line.split("#")[0].strip()
            if not line or "{" in line or line.startswith("-"):
                continue
            req = Requirement(line)
            versions = [s.version for s in req.specifier if s.operator in ("==", ">=", "~=")]
            wanted.setdefault(canonicalize_name(req.name), set()).update(versions or ["1.0"])
    return wanted


def build(make_host: Callable[[str], FakeHost]) -> World:
    """The four hosts, each made by ``make_host(name)`` (e.g. the ``shared_fake_host`` fixture)."""
    pypi, pytorch, natten, github = (make_host(n) for n in ("pypi", "pytorch", "natten", "github"))
    _serve_pypi(pypi)
    _serve_pytorch(pytorch)
    _serve_natten(natten)
    spark = _serve_github(github)
    return World(pypi, pytorch, natten, github, spark)


def _serve_pypi(pypi: FakeHost) -> None:
    """PyPI: every plain requirement of the templates, build tools, and PyPI's own torch builds."""
    files = []
    for name, versions in template_requirements().items():
        if name in ("torch", "torchvision", "torchaudio", "triton-windows", "triton"):
            continue
        for version in versions:
            if (name, version) in SPARK_ONLY:
                continue
            requires = ("grpcio",) if name == "tensorboard" else ()
            files.append(pypi.wheel("files", name, version, requires=requires))
    for name, version in [("wheel", "0.45.1"), ("setuptools", "80.9.0"), ("setuptools", "69.5.1"),
                          ("poetry-core", "2.2.1"), ("hf-xet", "1.2.0"), ("flash-linear-attention", "0.5.2"),
                          ("torchcodec", "0.9.1"), ("numpy", "2.3.0"), ("filelock", "3.20.0")]:  # fmt: skip
        files.append(pypi.wheel("files", name, version))
    for tag in (
        f"{CP}-{CP}-{LINUX_X86}",
        f"{CP}-{CP}-{LINUX_ARM}",
        f"{CP}-{CP}-win_amd64",
        f"{CP}-{CP}-macosx_11_0_arm64",
    ):
        files.append(pypi.wheel("files", "grpcio", "1.76.0", tag))
    files.append(pypi.wheel("files", "triton-windows", "3.7.1.post21", f"{CP}-{CP}-win_amd64"))
    for tag in (LINUX_X86, LINUX_ARM, "win_amd64", "macosx_14_0_arm64"):  # no win_arm64 build on PyPI
        files.append(pypi.wheel("files", "torchcodec", "0.15.0", f"{CP}-{CP}-{tag}"))
    # PyPI's own torch builds (macOS: only macosx_14_0 wheels, as torch 2.13 ships)
    for tag in (
        f"{CP}-{CP}-macosx_14_0_arm64",
        f"{CP}-{CP}-{LINUX_X86}",
        f"{CP}-{CP}-{LINUX_ARM}",
        f"{CP}-{CP}-win_amd64",
    ):
        files.append(pypi.wheel("files", "torch", "2.13.0", tag, requires=("setuptools>=77.0.3", "filelock")))
        files.append(pypi.wheel("files", "torchvision", "0.28.0", tag, requires=("torch==2.13.0", "numpy")))
        files.append(pypi.wheel("files", "torchaudio", "2.11.0", tag))
    pypi.index_page("simple", files, upload_time=PYPI_TIME)


def _serve_pytorch(pytorch: FakeHost) -> None:
    """download.pytorch.org: one index per flavor with its torch family and stale mirror copies."""
    for flavor in ("cu126", "cu130", "rocm7.1", "cpu"):
        tags = [LINUX_X86] + ([LINUX_ARM, "win_amd64"] if flavor.startswith("cu") or flavor == "cpu" else [])
        wheels = []
        for platform in tags:
            tag = f"{CP}-{CP}-{platform}"
            wheels.append(
                pytorch.wheel(
                    f"whl/{flavor}", "torch", f"2.13.0+{flavor}", tag, requires=("setuptools>=77.0.3", "filelock")
                )
            )
            wheels.append(
                pytorch.wheel(
                    f"whl/{flavor}", "torchvision", f"0.28.0+{flavor}", tag, requires=("torch==2.13.0", "numpy")
                )
            )
            wheels.append(pytorch.wheel(f"whl/{flavor}", "torchaudio", f"2.11.0+{flavor}", tag))
        # the stale mirror copies a backend index also carries
        wheels.append(pytorch.wheel(f"whl/{flavor}", "numpy", "1.26.0"))
        wheels.append(pytorch.wheel(f"whl/{flavor}", "filelock", "3.0.0"))
        pytorch.index_page(f"whl/{flavor}", wheels)


def _serve_natten(natten: FakeHost) -> None:
    """natten's flat find-links page (no hashes, mixed-case file names)."""
    natten_files = []
    for flavor in ("cu126", "cu130"):
        for platform in (LINUX_X86, LINUX_ARM):
            natten_files.append(
                natten.wheel("", "natten", f"0.21.7+torch2130{flavor}", f"{CP}-{CP}-{platform}", requires=("torch",))
            )
    natten.flat_page("", natten_files, hashed=False, mixed_case=True)


def _serve_github(github: FakeHost) -> list[Path]:
    """GitHub release assets: the prebuilt flash-attn wheels and the Spark (cu134) wheel set, whose
    files are returned."""
    base = "mjun0812/flash-attention-prebuild-wheels/releases/download"
    for flavor in ("cu126", "cu130"):
        github.wheel(
            f"{base}/v0.9.47",
            "flash_attn",
            f"2.8.3+{flavor}torch2.13",
            f"{CP}-{CP}-manylinux_2_24_x86_64.manylinux_2_28_x86_64",
            requires=("torch", "einops"),
        )
        github.wheel(
            f"{base}/v0.9.52",
            "flash_attn",
            f"2.8.3+{flavor}torch2.13",
            f"{CP}-{CP}-win_amd64",
            requires=("torch", "einops"),
        )
    github.wheel(
        f"{base}/v0.9.48",
        "flash_attn",
        "2.8.3+cu130torch2.13",
        f"{CP}-{CP}-manylinux_2_34_aarch64",
        requires=("torch", "einops"),
    )

    assets = "ostris/ai-toolkit-spark-wheels/releases/download/cu134-20260727"
    spark = [
        github.wheel(assets, "torch", "2.14.0.dev20260727", SPARK_TAG, requires=("setuptools>=77.0.3", "filelock")),
        github.wheel(
            assets, "torchvision", "0.29.0.dev20260727", SPARK_TAG, requires=("torch==2.14.0.dev20260727", "numpy")
        ),
        github.wheel(assets, "torchaudio", "2.11.0.dev20260727", SPARK_TAG),
        github.wheel(assets, "torchcodec", "0.15.0", SPARK_TAG),
        github.wheel(assets, "triton", "3.8.0+git8743423b", SPARK_TAG),
        github.wheel(assets, "flash_attn", "2.8.3+cu134torch2.14", SPARK_TAG, requires=("torch",)),
        github.wheel(assets, "natten", "0.21.7", SPARK_TAG, requires=("torch",)),
        github.wheel(assets, "opencv_python", "4.12.0.88", SPARK_TAG),
        github.wheel(assets, "opencv_python_headless", "4.12.0.88", SPARK_TAG),
        github.wheel(assets, "numba", "0.67.0rc1", SPARK_TAG),
        github.wheel(assets, "llvmlite", "0.49.0rc1", SPARK_TAG),
        github.wheel(assets, "soxr", "1.1.0", SPARK_TAG),
    ]
    github.flat_page("ostris/ai-toolkit-spark-wheels/releases/expanded_assets/cu134-20260727", spark)
    return spark
