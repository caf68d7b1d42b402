"""``examples/invokeai`` (issue 9, item 9): InvokeAI's pyproject.toml as the one place its dependency
lists live, locked against fake hosts shaped like the real ones (reached through ``--mirror``).

The xpu and rocm cells rely on the index label policy (triton-xpu and triton-rocm carry no
local label on download.pytorch.org, CASES C25).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lockgen.config.load import parse_toml
from lockgen.project import Project
from tests.conftest import locked_versions, run_cli
from tests.support.invokeai_world import EXAMPLE, build

X86 = [f"{os_}-x86_64-{b}-py{py}" for os_ in ("linux", "windows") for b in ("cu128", "cpu") for py in ("3.11", "3.12")]
ARM = [f"linux-aarch64-{b}-py{py}" for b in ("cu128", "cpu") for py in ("3.11", "3.12")]
MAC = ["macos-aarch64-mps-py3.11", "macos-aarch64-mps-py3.12"]
XPU = [f"{os_}-x86_64-xpu-py{py}" for os_ in ("linux", "windows") for py in ("3.11", "3.12")]
ROCM = ["linux-x86_64-rocm7.1-py3.11", "linux-x86_64-rocm7.1-py3.12"]
LOCKABLE = X86 + ARM + MAC  # every cell whose sources work without the sources half


@pytest.fixture(scope="module")
def world(shared_fake_host):
    return build(shared_fake_host)


@pytest.fixture(scope="module")
def locked(world, tmp_path_factory):
    """A copy of the example, locked once for the whole module: (project root, run result)."""
    root = tmp_path_factory.mktemp("example") / "invokeai"
    shutil.copytree(EXAMPLE, root)
    return root, run_cli("all", "-C", str(root), *world.mirror_args())


def versions(root: Path, cell: str) -> dict[str, str]:
    return locked_versions((root / "locks" / f"{cell}.txt").read_text())


def pyproject() -> dict:
    return parse_toml((EXAMPLE / "pyproject.toml").read_text())["project"]


def test_every_cell_of_the_handed_config():
    run = run_cli("matrix", "--json", "-C", str(EXAMPLE))
    assert sorted(row["name"] for row in json.loads(run.out)) == sorted(LOCKABLE + XPU + ROCM)


def test_the_dependency_lists_come_from_pyproject_not_a_copy():
    """Item 6: no template holds a version; the rendered requirements are the project's lists."""
    assert not (EXAMPLE / "templates" / "dependencies.txt.j2").exists()
    for path in (EXAMPLE / "templates").glob("*.j2"):
        assert "==" not in path.read_text() or path.name == "overrides.txt.j2", path
    project = Project.load(EXAMPLE)
    plans = {p.cell.name: p for p in project.plans(project.cells)}
    text = plans["linux-x86_64-cu128-py3.12"].rendered.files["requirements"][1]
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    meta = pyproject()
    extras = meta["optional-dependencies"]
    assert lines == [*meta["dependencies"], *extras["cuda"], *extras["xformers"]]
    mac = plans["macos-aarch64-mps-py3.12"].rendered.files["requirements"][1]
    assert [line for line in mac.splitlines() if line] == meta["dependencies"]  # no extra on macOS


@pytest.mark.slow
def test_a_changed_dependency_in_pyproject_makes_every_cell_stale(locked, tmp_path):
    root, _ = locked
    copy = tmp_path / "invokeai"
    shutil.copytree(root, copy)
    text = (copy / "pyproject.toml").read_text()
    (copy / "pyproject.toml").write_text(text.replace('"transformers>=5.5,<5.6"', '"transformers>=5.5,<5.7"'))
    run = run_cli("check", "-C", str(copy), "--only", "os=macos")
    assert run.code == 1
    assert run.out.count("stale") >= len(MAC)


@pytest.mark.slow
def test_the_cells_that_need_only_index_pages_and_pypi_lock(locked):
    root, run = locked
    assert "error: cell linux-x86_64-cu128" not in run.err
    for cell in LOCKABLE:
        assert (root / "locks" / f"{cell}.txt").is_file(), (cell, run.err[-2000:])
    for path in (root / "locks").rglob("*"):
        if path.is_file():  # mirrors are where lockgen fetched from, never what a lock says
            assert "127.0.0.1" not in path.read_text(), path


@pytest.mark.slow
def test_the_extras_exact_torch_builds_come_from_their_flavor_index(locked):
    root, _ = locked
    for cell in X86:
        flavor = cell.split("-")[2]
        pins = versions(root, cell)
        assert (pins["torch"], pins["torchvision"]) == (f"2.7.1+{flavor}", f"0.22.1+{flavor}"), cell
        text = (root / "locks" / f"{cell}.txt").read_text()
        assert f"# find-links: https://download.pytorch.org/whl/{flavor}/torch/\n" in text
        assert "--extra-index-url" not in text
        assert versions(root, cell)["numpy"] != "1.26.3"


@pytest.mark.slow
def test_aarch64_and_macos_take_pypi_torch(locked):
    root, _ = locked
    for cell in ARM + MAC:
        pins = versions(root, cell)
        assert (pins["torch"], pins["torchvision"]) == ("2.7.1", "0.22.1"), cell  # macOS: <2.8.0 keeps 2.8.0 out
        assert "download.pytorch.org" not in (root / "locks" / f"{cell}.txt").read_text()


@pytest.mark.slow
def test_xformers_only_where_it_has_wheels(locked):
    root, _ = locked
    for cell in X86:
        assert ("xformers" in versions(root, cell)) == ("cu128" in cell), cell
    assert versions(root, "linux-x86_64-cu128-py3.12")["xformers"] == "0.0.31"  # 0.0.32 needs torch 2.8
    for cell in ARM + MAC:
        assert "xformers" not in versions(root, cell)


@pytest.mark.slow
def test_c26_wheels_first_without_any_config(locked):
    """python-jose[cryptography]: cryptography 50.0.2 has no macOS wheel; macOS locks 48.0.1 on
    the first run, with nothing in allow-build (the handed config needed a constraints file)."""
    root, _ = locked
    assert "allow-build" not in (EXAMPLE / "lockgen.toml").read_text()
    for cell in MAC:
        assert versions(root, cell)["cryptography"] == "48.0.1", cell
    assert versions(root, "linux-x86_64-cu128-py3.12")["cryptography"] == "50.0.2"


@pytest.mark.slow
def test_the_override_keeps_opencv_python_out(locked):
    root, _ = locked
    for cell in LOCKABLE:
        pins = versions(root, cell)
        assert "opencv-python" not in pins, cell
        assert "opencv-contrib-python" in pins, cell


@pytest.mark.slow
def test_a_rerun_is_a_noop_for_the_locked_cells(locked):
    root, _ = locked
    run = run_cli("check", "-C", str(root), *[arg for cell in LOCKABLE for arg in ("--only", f"name={cell}")])
    assert run.code == 0, run.out


@pytest.mark.slow
def test_all_cells_lock(locked):
    _, run = locked
    assert run.code == 0, run.err


@pytest.mark.slow
def test_xpu_and_rocm_cells_lock_their_unlabelled_triton_from_the_index(locked):
    root, _ = locked
    for cell in XPU:
        pins = versions(root, cell)
        assert (pins["torch"], pins["triton-xpu"]) == ("2.13.0+xpu", "3.7.2"), cell
    for cell in ROCM:
        pins = versions(root, cell)
        assert (pins["torch"], pins["torchvision"], pins["triton-rocm"]) == (
            "2.10.0+rocm7.1",
            "0.25.0+rocm7.1",
            "3.6.0",
        )
