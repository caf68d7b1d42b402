"""Choosing among a release page's builds by their labels (issue 16, item 3): pure, on a plan."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from lockgen.project import Project
from lockgen.resolve.choose import by_label
from tests.conftest import write_project

PAGE = "https://github.com/o/r/releases/download/v1"


def plan(tmp_path, backend: str, extra: str = ""):
    config = f"""
        {extra}
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["{backend}"]
        python = ["3.12"]
    """
    project = Project.load(write_project(tmp_path / backend, config, {"requirements.in.j2": "torch\n"}), None)
    (found,) = project.plans(project.cells)
    return found


def url(label: str, name: str = "flash_attn") -> str:
    return (
        f"{PAGE}/{name}-2.8.3+{label}-cp312-cp312-linux_x86_64.whl"
        if label
        else f"{PAGE}/{name}-2.8.3-cp312-cp312-linux_x86_64.whl"
    )


def test_the_build_for_the_locked_torch_and_backend(tmp_path):
    urls = [url("cu130torch2.12"), url("cu130torch2.13"), url("cu128torch2.13"), url("cu130torch2.14")]
    choice = by_label(urls, plan(tmp_path, "cu130"), Version("2.13.0"))
    assert choice.best() == url("cu130torch2.13")
    assert [n.split(": ", 1)[1] for n in choice.notes] == [
        "built for torch 2.12, the cell locks torch 2.13.0", "built for cuda 12.8, the cell's backend is cu130",
        "built for torch 2.14, the cell locks torch 2.13.0",
    ]  # fmt: skip


def test_without_a_torch_the_backend_decides(tmp_path):
    choice = by_label([url("cu128torch2.9"), url("cu130torch2.9")], plan(tmp_path, "cu130"), None)
    assert choice.best() == url("cu130torch2.9")


def test_allow_mix_keeps_a_build_the_config_declared(tmp_path):
    declared = plan(tmp_path, "cu128", 'allow-mix = { "flash-attn" = "the torch 2.9.0 build runs on 2.9.1" }')
    choice = by_label([url("cu128torch2.9.0")], declared, Version("2.9.1"))
    assert choice.best() == url("cu128torch2.9.0") and not choice.notes


def test_a_requirement_may_name_a_build_by_its_label(tmp_path):
    """A label the grammar does not read (``+vulkan``) is a build the requirement may pick."""
    urls = [url("cu124", "llama_cpp_binaries"), url("vulkan", "llama_cpp_binaries"), url("", "llama_cpp_binaries")]
    choice = by_label(urls, plan(tmp_path, "vulkan"), None)
    assert choice.best([SpecifierSet("==2.8.3+vulkan")]) == url("vulkan", "llama_cpp_binaries")
    assert choice.best() == url("cu124", "llama_cpp_binaries")  # a readable fit first, when nothing is asked
