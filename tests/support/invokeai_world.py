"""The hosts ``examples/invokeai`` reads, faked on loopback with tiny wheels (issue 9).

* PyPI: every requirement of the project's ``[project].dependencies`` and extras as a pure wheel
  (PEP 691 JSON with upload times), with the extras the dependencies ask for declared
  (``diffusers[torch]``, ``python-jose[cryptography]``…); PyPI's own torch 2.7.1 / torchvision
  0.22.1 builds (linux aarch64 and macOS: CPU builds) and a newer torch 2.8.0; xformers 0.0.31
  (built for torch 2.7.1) and 0.0.32.post1 (for torch 2.8.0) for linux x86_64 and windows, with
  an sdist (no linux aarch64 wheel); cryptography 50.0.2 without a macOS wheel (an sdist) and
  48.0.1 with one (CASES C26).
* download.pytorch.org: per-flavor PEP 503 pages without upload times: cu128 and cpu builds of
  torch 2.7.1 / torchvision 0.22.1 (+label; the cpu index's macOS wheels unlabelled, as the real
  one), rocm7.1 (torch 2.10.0, torchvision 0.25.0, triton-rocm 3.6.0 unlabelled), xpu (torch
  2.13.0, torchvision 0.28.0, triton-xpu 3.7.2 unlabelled: CASES C25), and stale numpy copies.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lockgen.config.load import parse_toml
from tests.support.fakehost import FakeHost
from tests.support.worlds import Hosts, publish_pypi, pypi_versions, template_lines

EXAMPLE = Path(__file__).parents[2] / "examples" / "invokeai"
PYTHONS = ("cp311", "cp312")
LINUX_X86, LINUX_ARM, WINDOWS, MAC = "manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64", "macosx_11_0_arm64"
SPECIAL = {"torch", "torchvision", "triton-rocm", "triton-xpu", "xformers", "cryptography"}
#: The extras the dependencies ask for, as the real wheels declare them.
EXTRAS = {
    "diffusers": ('torch>=1.4; extra == "torch"', 'accelerate>=0.31.0; extra == "torch"'),
    "imageio": ('imageio-ffmpeg; extra == "ffmpeg"',),
    "uvicorn": ('websockets>=10.4; extra == "standard"',),
    "passlib": ('bcrypt>=3.1.0; extra == "bcrypt"',),
    "python-jose": ('cryptography>=3.4.0; extra == "cryptography"',),
}


def project_requirements(example: Path = EXAMPLE) -> list[str]:
    """The requirement strings of the example's pyproject.toml that its cells install: the
    dependencies and the backend and xformers extras."""
    project = parse_toml((example / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for group in ("cpu", "cuda", "rocm", "xpu", "xformers"):
        lines += project["optional-dependencies"][group]
    return lines


def build(make_host: Callable[[str], FakeHost]) -> Hosts:
    """The hosts, each made by ``make_host(name)`` (the ``shared_fake_host`` fixture)."""
    hosts = Hosts()
    pypi = hosts.add("https://pypi.org/simple", make_host("pypi"), "/simple")
    hosts.add("https://files.pythonhosted.org", pypi, "/files")
    pytorch = hosts.add("https://download.pytorch.org", make_host("pytorch"))

    wanted = project_requirements() + template_lines(EXAMPLE / "templates")
    wanted += [r for extra in EXTRAS.values() for r in (e.split(";")[0] for e in extra)]
    versions = pypi_versions(wanted, skip=SPECIAL)
    more = []
    for py in PYTHONS:
        for platform in (LINUX_ARM, MAC, LINUX_X86, WINDOWS):
            tag = f"{py}-{py}-{platform}"
            more.append(pypi.wheel("files", "torch", "2.7.1", tag))
            more.append(pypi.wheel("files", "torch", "2.8.0", tag))
            more.append(pypi.wheel("files", "torchvision", "0.22.1", tag, requires=("torch==2.7.1",)))
    for platform in (LINUX_X86, WINDOWS):
        more.append(pypi.wheel("files", "xformers", "0.0.31", f"cp39-abi3-{platform}", requires=("torch==2.7.1",)))
        more.append(
            pypi.wheel("files", "xformers", "0.0.32.post1", f"cp39-abi3-{platform}", requires=("torch==2.8.0",))
        )
    more.append(pypi.sdist("files", "xformers", "0.0.31"))
    for platform in (LINUX_X86, LINUX_ARM, WINDOWS):  # cryptography 50: no macOS wheel (C26)
        more.append(pypi.wheel("files", "cryptography", "50.0.2", f"cp311-abi3-{platform}"))
    more.append(pypi.sdist("files", "cryptography", "50.0.2"))
    for platform in (LINUX_X86, LINUX_ARM, WINDOWS, MAC):
        more.append(pypi.wheel("files", "cryptography", "48.0.1", f"cp311-abi3-{platform}"))
    publish_pypi(pypi, versions, EXTRAS, more)

    flavors = {  # flavor -> (torch, torchvision, platforms, unlabelled extras)
        "cu128": ("2.7.1", "0.22.1", (LINUX_X86, WINDOWS), ()),
        "cpu": ("2.7.1", "0.22.1", (LINUX_X86, LINUX_ARM, WINDOWS), ()),
        "rocm7.1": ("2.10.0", "0.25.0", (LINUX_X86,), (("triton-rocm", "3.6.0"),)),
        "xpu": ("2.13.0", "0.28.0", (LINUX_X86, WINDOWS), (("triton-xpu", "3.7.2"),)),
    }
    for flavor, (torch, vision, platforms, unlabelled) in flavors.items():
        folder = f"whl/{flavor}"
        files = []
        for py in PYTHONS:
            for platform in platforms:
                tag = f"{py}-{py}-{platform}"
                files.append(pytorch.wheel(folder, "torch", f"{torch}+{flavor}", tag))
                files.append(
                    pytorch.wheel(folder, "torchvision", f"{vision}+{flavor}", tag, requires=(f"torch=={torch}",))
                )
                files += [pytorch.wheel(folder, name, version, tag) for name, version in unlabelled]
            if flavor == "cpu":  # the cpu index's macOS wheels carry no label (CASES C25)
                files.append(pytorch.wheel(folder, "torch", torch, f"{py}-{py}-{MAC}"))
                files.append(
                    pytorch.wheel(folder, "torchvision", vision, f"{py}-{py}-{MAC}", requires=(f"torch=={torch}",))
                )
        files.append(pytorch.wheel(folder, "numpy", "1.26.3"))  # a stale mirror copy (C03)
        pytorch.index_page(folder, files)
    return hosts
