"""``examples/text-generation-webui`` (issue 9, item 9): full / portable / portable_ik as a variant
axis (no GPU choice folded into backend labels), locked against fake hosts shaped like the real
ones (PyPI, download.pytorch.org, GitHub release assets, repo.radeon.com) through ``--mirror``.

``lockgen.toml`` is the faithful config: every cell takes the patched gradio and the llama.cpp
binaries from GitHub release assets as main requirements (``urls`` sources serving main
requirements, CASES C23). ``lockgen.pypi.toml`` is the PyPI-substitute variant (GitHub wheels as
optional layers).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lockgen.project import Project
from tests.conftest import locked_versions, run_cli
from tests.support.tgwui_world import EXAMPLE, build

FULL = ["linux-x86_64-cu128-py3.13-full", "linux-x86_64-cpu-py3.13-full", "linux-x86_64-xpu-py3.13-full",
        "linux-x86_64-rocm7.2-py3.13-full", "windows-x86_64-cu128-py3.13-full", "windows-x86_64-cpu-py3.13-full",
        "windows-x86_64-xpu-py3.13-full", "macos-aarch64-mps-py3.13-full"]  # fmt: skip
SKIPPED = "macos-x86_64-cpu-py3.13-full"
PORTABLE = [
    f"{os_}-x86_64-{b}-py3.13-portable"
    for os_ in ("linux", "windows")
    for b in ("cpu", "rocm7.2", "cu124", "cu131", "vulkan")
]
PORTABLE += ["macos-aarch64-mps-py3.13-portable", "macos-x86_64-cpu-py3.13-portable"]
IK = [f"{os_}-x86_64-{b}-py3.13-portable_ik" for os_ in ("linux", "windows") for b in ("cpu", "cu124", "cu131")]
RESOLVED = FULL + PORTABLE + IK
PYPI_LOCKABLE = [c for c in RESOLVED if c != "linux-x86_64-rocm7.2-py3.13-full"]


@pytest.fixture(scope="module")
def world(shared_fake_host):
    return build(shared_fake_host)


def _locked(world, tmp_path_factory, config: str):
    root = tmp_path_factory.mktemp("example") / "text-generation-webui"
    shutil.copytree(EXAMPLE, root)
    return root, run_cli("all", "-C", str(root / config), *world.mirror_args())


@pytest.fixture(scope="module")
def locked(world, tmp_path_factory):
    """The faithful config, locked once for the module: (project root, run result)."""
    return _locked(world, tmp_path_factory, "lockgen.toml")


@pytest.fixture(scope="module")
def locked_pypi(world, tmp_path_factory):
    """The PyPI-substitute config, locked once for the module: (project root, run result)."""
    return _locked(world, tmp_path_factory, "lockgen.pypi.toml")


def versions(root: Path, cell: str, folder: str = "locks", layer: str | None = None) -> dict[str, str]:
    path = root / folder / (f"{cell}.txt" if layer is None else f"{cell}/{layer}.txt")
    return locked_versions(path.read_text())


# -- the matrix (item 7) -----------------------------------------------------------------------


@pytest.mark.parametrize("config", ["lockgen.toml", "lockgen.pypi.toml"])
def test_every_cell_of_the_handed_config_with_the_variant_in_its_name(config):
    run = run_cli("matrix", "--json", "-C", str(EXAMPLE / config))
    rows = {row["name"]: row for row in json.loads(run.out)}
    assert sorted(rows) == sorted([*RESOLVED, SKIPPED])  # the 27 cells of the handed config
    for name, row in rows.items():
        assert name.endswith(f"-{row['variant']}")
        assert "portable" not in row["backend"]
        assert "_" not in row["backend"]
    assert rows[SKIPPED]["skip"]


def test_only_selects_a_variant():
    run = run_cli("matrix", "--json", "-C", str(EXAMPLE), "--only", "variant=portable_ik")
    assert sorted(row["name"] for row in json.loads(run.out)) == sorted(IK)


def test_templates_see_the_variant_and_the_gpu_choice():
    project = Project.load(EXAMPLE)
    plans = {p.cell.name: p for p in project.plans(project.cells)}

    def lines(cell: str) -> list[str]:
        text = plans[cell].rendered.files["requirements"][1]
        return [line for line in text.splitlines() if line and not line.startswith("#")]

    full = lines("linux-x86_64-cu128-py3.13-full")  # cu128 torch with the cu124 llama.cpp wheels
    assert {"llama-cpp-binaries==0.124.0+cu124", "ik-llama-cpp-binaries==0.124.0+cu124", "exllamav3==0.0.30"} <= set(
        full
    )
    assert "torch==2.9.1+cu128" in full
    portable = lines("windows-x86_64-cu131-py3.13-portable")
    assert "llama-cpp-binaries==0.124.0+cu131" in portable
    assert not any(line.startswith(("torch", "ik-llama")) for line in portable)
    ik = lines("linux-x86_64-cpu-py3.13-portable_ik")
    assert "ik-llama-cpp-binaries==0.124.0+cpu" in ik
    assert not any(line.startswith("llama-cpp") for line in ik)
    assert "llama-cpp-binaries==0.124.0" in lines("macos-x86_64-cpu-py3.13-portable")  # Apple wheels: no label
    assert plans["linux-x86_64-rocm7.2-py3.13-full"].pinned == {"torch": "2.9.1+rocm7.2.0.lw.git7e1940d4"}


# -- the PyPI-substitute config: locks today ------------------------------------------------------


@pytest.mark.slow
def test_pypi_variant_locks_its_cells_through_mirrors(locked_pypi):
    root, run = locked_pypi
    for cell in PYPI_LOCKABLE:
        assert (root / "locks-pypi" / f"{cell}.txt").is_file(), (cell, run.err[-3000:])
    for path in (root / "locks-pypi").rglob("*"):
        if path.is_file():
            assert "127.0.0.1" not in path.read_text(), path
    cells = json.loads((root / "locks-pypi" / "manifest.json").read_text())["cells"]
    assert cells["linux-x86_64-cu124-py3.13-portable_ik"]["axes"] == {"variant": "portable_ik"}
    assert cells["linux-x86_64-cu124-py3.13-portable_ik"]["backend"] == "cu124"


@pytest.mark.slow
def test_pypi_variant_torch_per_cell(locked_pypi):
    root, _ = locked_pypi
    get = lambda cell: versions(root, cell, "locks-pypi")  # noqa: E731
    linux = get("linux-x86_64-cu128-py3.13-full")  # PyPI's linux torch is the CUDA 12.8 build
    assert (linux["torch"], linux["nvidia-cuda-runtime-cu12"]) == ("2.9.1", "12.8.90")
    assert get("windows-x86_64-cu128-py3.13-full")["torch"] == "2.9.1+cu128"
    assert get("linux-x86_64-cpu-py3.13-full")["torch"] == "2.9.1+cpu"
    assert get("windows-x86_64-xpu-py3.13-full")["torch"] == "2.9.1+xpu"
    assert get("macos-aarch64-mps-py3.13-full")["torch"] == "2.9.1"
    for cell in PORTABLE + IK:
        assert "torch" not in get(cell), cell


@pytest.mark.slow
def test_pypi_variant_llama_layers_follow_the_gpu_choice(locked_pypi):
    root, _ = locked_pypi
    layers = json.loads((root / "locks-pypi" / "manifest.json").read_text())["cells"]
    names = {cell: [layer["name"] for layer in entry.get("layers", [])] for cell, entry in layers.items()}
    assert names["linux-x86_64-cu128-py3.13-full"] == [
        "main", "optional-llama-cpp-binaries", "optional-ik-llama-cpp-binaries", "optional-exllamav3", "optional-flash-attn",
    ]  # fmt: skip
    assert names["linux-x86_64-vulkan-py3.13-portable"] == ["main", "optional-llama-cpp-binaries"]
    assert names["windows-x86_64-cu131-py3.13-portable_ik"] == ["main", "optional-ik-llama-cpp-binaries"]

    def layer(cell: str) -> str:
        return (root / "locks-pypi" / cell / "optional-llama-cpp-binaries.txt").read_text()

    # cu128 torch with the cu124 llama.cpp build (allow-mix says why); a portable cell's own flavour
    assert "/llama_cpp_binaries-0.124.0+cu124-py3-none-linux_x86_64.whl \\\n    --hash=sha256:" in layer(
        "linux-x86_64-cu128-py3.13-full"
    )
    assert "/llama_cpp_binaries-0.124.0+cu131-py3-none-win_amd64.whl \\\n    --hash=sha256:" in layer(
        "windows-x86_64-cu131-py3.13-portable"
    )


@pytest.mark.slow
def test_pypi_variant_c26_and_allow_build(locked_pypi):
    """cryptography 50.0.2 has no macOS x86_64 wheel: the first run locks 48.0.1 with no
    constraints file (the handed config needed one); markupsafe 2.1.5 is an sdist that gradio's
    cap requires: allow-build lets it be built, its sdist is hashed."""
    root, _ = locked_pypi
    mac = versions(root, "macos-x86_64-cpu-py3.13-portable", "locks-pypi")
    assert mac["cryptography"] == "48.0.1"
    assert not (EXAMPLE / "templates" / "constraints-macos-x86_64.txt.j2").exists()
    assert versions(root, "linux-x86_64-cpu-py3.13-portable", "locks-pypi")["cryptography"] == "50.0.2"
    assert mac["markupsafe"] == "2.1.5"


@pytest.mark.slow
def test_pypi_variant_rocm_cell_takes_torch_from_repo_radeon(locked_pypi):
    root, run = locked_pypi
    assert run.code == 0, run.err
    pins = versions(root, "linux-x86_64-rocm7.2-py3.13-full", "locks-pypi")
    assert pins["torch"] == "2.9.1+rocm7.2.0.lw.git7e1940d4"


# -- the faithful config: needs urls sources for main requirements -------------------------------


@pytest.mark.slow
def test_all_cells_lock(locked):
    root, run = locked
    assert run.code == 0, run.err
    for cell in RESOLVED:
        assert (root / "locks" / f"{cell}.txt").is_file(), cell


@pytest.mark.slow
def test_the_patched_gradio_is_a_main_requirement_of_every_cell(locked):
    root, _ = locked
    for cell in RESOLVED:
        pins = versions(root, cell)
        assert (pins["gradio"], pins["gradio-client"]) == ("4.37.2+custom.20", "1.0.2+custom.20"), cell


@pytest.mark.slow
def test_llama_cpp_binaries_follow_the_variant_and_gpu_choice(locked):
    root, _ = locked
    assert versions(root, "linux-x86_64-cu128-py3.13-full")["llama-cpp-binaries"] == "0.124.0+cu124"
    assert versions(root, "linux-x86_64-cu131-py3.13-portable")["llama-cpp-binaries"] == "0.124.0+cu131"
    ik = versions(root, "windows-x86_64-cu124-py3.13-portable_ik")
    assert ik["ik-llama-cpp-binaries"] == "0.124.0+cu124"
    assert "llama-cpp-binaries" not in ik
    assert versions(root, "macos-aarch64-mps-py3.13-portable")["llama-cpp-binaries"] == "0.124.0"


@pytest.mark.slow
def test_macos_full_takes_the_unlabelled_torch_of_the_cpu_index(locked):
    root, _ = locked
    assert versions(root, "macos-aarch64-mps-py3.13-full")["torch"] == "2.9.1"
    assert (
        "# find-links: https://download.pytorch.org/whl/cpu/torch/"
        in (root / "locks" / "macos-aarch64-mps-py3.13-full.txt").read_text()
    )
