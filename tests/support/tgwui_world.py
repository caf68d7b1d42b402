"""The hosts ``examples/text-generation-webui`` reads, faked on loopback with tiny wheels (issue 9).

* PyPI: every plain requirement line of the example's templates as a pure wheel (upload times);
  upstream gradio 4.37.2 / gradio_client 1.0.2 (gradio caps ``markupsafe~=2.0``, whose 2.1.5 is an
  sdist only: the PyPI variant lists it in allow-build); PyPI's torch 2.9.1 (linux x86_64: the CUDA
  12.8 build with its ``nvidia-*-cu12`` runtime; windows: the CPU build; linux aarch64; macOS);
  xformers 0.0.33.post2, triton-windows; ``mcp`` pulls cryptography, whose 50.0.2 has no macOS
  x86_64 wheel (an sdist) and 48.0.1 has one (CASES C26).
* download.pytorch.org: torch 2.9.1 per flavor (cu128, cpu, xpu; the cpu index's macOS wheel
  unlabelled, CASES C25), no upload times.
* github.com: oobabooga's patched gradio build (+custom.20), the llama.cpp server binaries per
  (flavour, platform) and ik_llama.cpp's, exllamav3 and flash-attn built for torch 2.9.0 + cu128.
* repo.radeon.com: the ROCm 7.2 torch wheel on a flat find-links page.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.fakehost import FakeHost
from tests.support.worlds import Hosts, publish_pypi, pypi_versions, template_lines

EXAMPLE = Path(__file__).parents[2] / "examples" / "text-generation-webui"
CP = "cp313"
LINUX_X86, LINUX_ARM, WINDOWS = "manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64"
MAC_ARM, MAC_X86 = "macosx_11_0_arm64", "macosx_10_13_x86_64"
SPECIAL = {"torch", "xformers", "triton-windows", "gradio", "gradio-client", "markupsafe", "cryptography"}
REQUIRES = {"mcp": ("cryptography>=3.4",), "jinja2": ("MarkupSafe>=2.0",)}
GRADIO_REQUIRES = ("gradio_client==1.0.2", "markupsafe~=2.0", "fastapi", "numpy")
LLAMA = "oobabooga/llama-cpp-binaries/releases/download/v0.124.0"


def build(make_host: Callable[[str], FakeHost]) -> Hosts:
    """The hosts, each made by ``make_host(name)`` (the ``shared_fake_host`` fixture)."""
    hosts = Hosts()
    pypi = hosts.add("https://pypi.org/simple", make_host("pypi"), "/simple")
    hosts.add("https://files.pythonhosted.org", pypi, "/files")
    pytorch = hosts.add("https://download.pytorch.org", make_host("pytorch"))
    github = hosts.add("https://github.com", make_host("github"))
    radeon = hosts.add("https://repo.radeon.com", make_host("radeon"))

    _serve_pypi(pypi)
    _serve_pytorch(pytorch)
    _serve_radeon(radeon)
    _serve_github(github)
    return hosts


def _serve_pypi(pypi: FakeHost) -> None:
    """PyPI: the templates' pins, gradio and its sdist-only markupsafe cap, torch, xformers, cryptography."""
    versions = pypi_versions(template_lines(EXAMPLE / "templates"), skip=SPECIAL)
    more = [
        pypi.wheel("files", "gradio", "4.37.2", requires=GRADIO_REQUIRES),
        pypi.wheel("files", "gradio_client", "1.0.2"),
        pypi.sdist("files", "markupsafe", "2.1.5"),  # no cp313 wheel: gradio's cap needs a build
        pypi.wheel("files", "markupsafe", "3.0.3", f"{CP}-{CP}-{LINUX_X86}"),
        pypi.wheel("files", "nvidia-cuda-runtime-cu12", "12.8.90", f"py3-none-{LINUX_X86}"),
        pypi.wheel("files", "nvidia-cublas-cu12", "12.8.4.1", f"py3-none-{LINUX_X86}"),
        pypi.wheel("files", "triton-windows", "3.5.1.post24", f"{CP}-{CP}-{WINDOWS}"),
        pypi.sdist("files", "cryptography", "50.0.2"),
    ]
    cuda = ("nvidia-cuda-runtime-cu12==12.8.90", "nvidia-cublas-cu12==12.8.4.1")
    for platform, requires in ((LINUX_X86, cuda), (LINUX_ARM, ()), (WINDOWS, ()), (MAC_ARM, ())):
        more.append(pypi.wheel("files", "torch", "2.9.1", f"{CP}-{CP}-{platform}", requires=requires))
    for platform in (LINUX_X86, WINDOWS):
        more.append(pypi.wheel("files", "xformers", "0.0.33.post2", f"cp39-abi3-{platform}", requires=("torch>=2.9",)))
    for platform in (LINUX_X86, LINUX_ARM, WINDOWS, MAC_ARM):  # cryptography 50: no macOS x86_64 wheel (C26)
        more.append(pypi.wheel("files", "cryptography", "50.0.2", f"cp311-abi3-{platform}"))
    for platform in (LINUX_X86, LINUX_ARM, WINDOWS, MAC_ARM, MAC_X86):
        more.append(pypi.wheel("files", "cryptography", "48.0.1", f"cp311-abi3-{platform}"))
    publish_pypi(pypi, versions, REQUIRES, more)


def _serve_pytorch(pytorch: FakeHost) -> None:
    """download.pytorch.org: the cu128, cpu and xpu indexes."""
    for flavor, platforms in (
        ("cu128", (LINUX_X86, WINDOWS)),
        ("cpu", (LINUX_X86, WINDOWS)),
        ("xpu", (LINUX_X86, WINDOWS)),
    ):
        files = [pytorch.wheel(f"whl/{flavor}", "torch", f"2.9.1+{flavor}", f"{CP}-{CP}-{p}") for p in platforms]
        if flavor == "cpu":  # the cpu index's macOS wheel carries no label (CASES C25)
            files.append(pytorch.wheel("whl/cpu", "torch", "2.9.1", f"{CP}-{CP}-{MAC_ARM}"))
        files.append(pytorch.wheel(f"whl/{flavor}", "numpy", "1.26.3"))  # a stale mirror copy (C03)
        pytorch.index_page(f"whl/{flavor}", files)


def _serve_radeon(radeon: FakeHost) -> None:
    """repo.radeon.com: the ROCm torch build on a flat page."""
    rocm = "rocm/manylinux/rocm-rel-7.2"
    radeon.flat_page(rocm, [radeon.wheel(rocm, "torch", "2.9.1+rocm7.2.0.lw.git7e1940d4", f"{CP}-{CP}-linux_x86_64")])


def _serve_github(github: FakeHost) -> None:
    """GitHub release assets: the custom gradio, llama.cpp binaries, exllamav3 and flash-attn."""
    release = "oobabooga/gradio/releases/download/4.37.2-custom.20"
    github.wheel(release, "gradio", "4.37.2+custom.20", requires=GRADIO_REQUIRES)
    github.wheel(release, "gradio_client", "1.0.2+custom.20")
    for flavour in ("cu124", "cu131", "rocm7.2", "vulkan", "cpu"):
        for platform in ("linux_x86_64", "win_amd64"):
            github.wheel(LLAMA, "llama_cpp_binaries", f"0.124.0+{flavour}", f"py3-none-{platform}")
            if flavour in ("cu124", "cu131", "cpu"):
                github.wheel(LLAMA, "ik_llama_cpp_binaries", f"0.124.0+{flavour}", f"py3-none-{platform}")
    for platform in ("macosx_13_0_arm64", "macosx_13_0_x86_64"):
        github.wheel(LLAMA, "llama_cpp_binaries", "0.124.0", f"py3-none-{platform}")
    for platform in ("linux_x86_64", "win_amd64"):
        github.wheel("turboderp-org/exllamav3/releases/download/v0.0.30", "exllamav3", "0.0.30+cu128.torch2.9.0",
                     f"{CP}-{CP}-{platform}", requires=("torch",))  # fmt: skip
        github.wheel("kingbri1/flash-attention/releases/download/v2.8.3", "flash_attn", "2.8.3+cu128torch2.9.0cxx11abiFALSE",
                     f"{CP}-{CP}-{platform}", requires=("torch", "einops"))  # fmt: skip
