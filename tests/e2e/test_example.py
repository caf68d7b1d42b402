"""Seed parity: ``examples/ai-toolkit`` locks every row of the spec's table against fake hosts
shaped like the real ones (reached through ``--mirror``), and each rule the seed states holds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import assert_locked, forbid_processes, lock_files, locked_versions, run_cli, run_ok
from tests.support.aitoolkit_world import EXAMPLE, build

CUDA_LINUX = [
    "linux-x86_64-cu126-py3.12",
    "linux-x86_64-cu130-py3.12",
    "linux-aarch64-cu126-py3.12",
    "linux-aarch64-cu130-py3.12",
]
DGX = ["linux-aarch64-cu126_dgx-py3.12", "linux-aarch64-cu130_dgx-py3.12"]
WINDOWS = ["windows-x86_64-cu126-py3.12", "windows-x86_64-cu130-py3.12"]
ALIASES = ["windows-aarch64-cu126-py3.12", "windows-aarch64-cu130-py3.12"]
SPARK = "windows-aarch64-cu134-py3.12"
MAC = "macos-aarch64-mps-py3.12"
ROCM = "linux-x86_64-rocm7.1-py3.12"
CPU = ["linux-x86_64-cpu-py3.12", "windows-x86_64-cpu-py3.12"]
RESOLVED = CUDA_LINUX + DGX + WINDOWS + [SPARK, MAC, ROCM] + CPU
#: Cells whose torch trio comes from the backend index, with the local label it must carry.
LABELLED = [(c, c.split("-")[2].removesuffix("_dgx")) for c in CUDA_LINUX + DGX + WINDOWS + CPU] + [(ROCM, "rocm7.1")]


@pytest.fixture(scope="module")
def world(shared_fake_host):
    return build(shared_fake_host)


@pytest.fixture(scope="module")
def locked(world, tmp_path_factory) -> Path:
    """A copy of the example, locked once for the whole module; every resolved cell has its lock."""
    root = tmp_path_factory.mktemp("example") / "ai-toolkit"
    shutil.copytree(EXAMPLE, root)
    run_ok("all", "-C", str(root), *world.mirror_args())
    assert_locked(root, RESOLVED)
    return root


def lock(root: Path, cell: str, layer: str | None = None) -> str:
    path = root / "locks" / (f"{cell}.txt" if layer is None else f"{cell}/{layer}.txt")
    return path.read_text()


def manifest(root: Path) -> dict:
    return json.loads((root / "locks" / "manifest.json").read_text())


def test_every_row_of_the_seed_table_is_a_cell():
    run = run_cli("matrix", "--json", "-C", str(EXAMPLE))
    rows = {row["name"]: row for row in json.loads(run.out)}
    assert sorted(rows) == sorted(RESOLVED + ALIASES)
    for name in ALIASES:  # Windows on ARM runs the x64 stack; the interpreter must be x64
        assert rows[name]["alias"] == name.replace("aarch64", "x86_64")
        assert rows[name]["interpreter"] == "x86_64"
    assert rows[SPARK]["interpreter"] == "aarch64"


def test_all_cells_lock_through_mirrors(locked):
    files = assert_locked(locked, RESOLVED)
    assert len(files) > len(RESOLVED)  # the locks, their layers and the manifest
    for name, data in files.items():  # mirrors are where lockgen fetched from, never what a lock says
        assert b"127.0.0.1" not in data, name


@pytest.mark.parametrize(("cell", "label"), LABELLED, ids=[c for c, _ in LABELLED])
def test_torch_trio_pinned_with_the_backend_label(locked, cell, label):
    pins = locked_versions(lock(locked, cell))
    assert pins["torch"] == f"2.13.0+{label}"
    assert pins["torchvision"] == f"0.28.0+{label}"
    assert pins["torchaudio"] == f"2.11.0+{label}"


def test_torch_trio_from_pypi_and_the_spark_wheels(locked):
    root = locked
    mac = locked_versions(lock(root, MAC))  # PyPI: no local label
    assert (mac["torch"], mac["torchvision"], mac["torchaudio"]) == ("2.13.0", "0.28.0", "2.11.0")
    spark = locked_versions(lock(root, SPARK))  # the Spark dev pins, from its find-links source
    assert spark["torch"] == "2.14.0.dev20260727" and spark["torchvision"] == "0.29.0.dev20260727"


def test_backend_index_is_per_package_find_links_never_an_index(locked):
    root = locked
    text = lock(root, "linux-x86_64-cu130-py3.12")
    assert "# index-url: https://pypi.org/simple\n" in text
    assert "--extra-index-url" not in text
    for package in ("torch", "torchvision", "torchaudio"):
        assert f"# find-links: https://download.pytorch.org/whl/cu130/{package}/\n" in text
    assert "# find-links: https://download.pytorch.org/whl/cu130/\n" not in text
    pins = locked_versions(text)  # the index's stale numpy 1.26.0 / filelock 3.0.0 are never used (C03)
    assert pins["numpy"] != "1.26.0" and pins["filelock"] == "3.20.0"
    assert "# find-links: https://download.pytorch.org/whl/rocm7.1/torch/" in lock(root, ROCM)
    assert "download.pytorch.org" not in lock(root, MAC)


@pytest.mark.parametrize("cell", RESOLVED)
def test_the_torchcodec_override_beats_the_requirement_pin(locked, cell):
    assert locked_versions(lock(locked, cell))["torchcodec"] == "0.15.0"  # requirements say 0.9.1


def test_extras_override_requirement_pins(locked):
    root = locked
    win = locked_versions(lock(root, "windows-x86_64-cu130-py3.12"))
    assert {"wheel", "setuptools", "poetry-core", "hf-xet", "triton-windows"} <= set(win)
    assert win["triton-windows"].startswith("3.7")
    assert locked_versions(lock(root, SPARK))["triton"] == "3.8.0+git8743423b"
    assert "triton-windows" not in locked_versions(lock(root, "linux-x86_64-cu130-py3.12"))


def test_dgx_uses_its_requirements_file(locked):
    root = locked
    dgx = locked_versions(lock(root, "linux-aarch64-cu130_dgx-py3.12"))
    plain = locked_versions(lock(root, "linux-aarch64-cu130-py3.12"))
    assert dgx["scipy"] == "1.16.0" and dgx["opencv-python-headless"] == "4.11.0.86"
    assert plain["scipy"] == "1.12.0"
    assert dgx["torch"] == "2.13.0+cu130"


def test_optional_packages_are_layers_and_unavailable_ones_are_recorded(locked):
    root = locked
    cells = manifest(root)["cells"]
    layers = {name: [layer["name"] for layer in entry["layers"]] for name, entry in cells.items()}
    assert layers["linux-x86_64-cu130-py3.12"] == [
        "main",
        "optional-flash-linear-attention",
        "optional-flash-attn",
        "optional-natten",
    ]
    assert layers["windows-x86_64-cu130-py3.12"] == ["main", "optional-flash-linear-attention", "optional-flash-attn"]
    assert layers[ROCM] == ["main", "optional-flash-linear-attention"]
    assert layers[MAC] == ["main"] and layers["linux-x86_64-cpu-py3.12"] == ["main"]
    assert layers[SPARK] == [
        "main",
        "optional-flash-attn",
        "optional-natten",
        "optional-flash-linear-attention",
        "no-deps",
    ]
    # linux aarch64 cells target manylinux_2_34, where the v0.9.48 flash-attn build fits
    assert "optional-flash-attn" in layers["linux-aarch64-cu130-py3.12"]
    # the release has no cu126 aarch64 asset (404): that layer is unavailable for good, the cell is fine
    missing = cells["linux-aarch64-cu126-py3.12"]["unavailable"]
    assert [m["requirement"] for m in missing] == ["flash-attn==2.8.3"]
    assert missing[0]["reason"].startswith("not available: https://github.com/") and "HTTP 404" in missing[0]["reason"]


def test_layers_cannot_move_the_main_pins(locked):
    root = locked
    cell = "linux-x86_64-cu130-py3.12"
    main = locked_versions(lock(root, cell))
    compared = 0
    for layer in ("optional-flash-attn", "optional-natten", "optional-flash-linear-attention"):
        pins = locked_versions(lock(root, cell, layer))
        for name, version in pins.items():
            if name in main:
                assert version == main[name], (layer, name)
                compared += 1
    assert compared > 0  # the layers do pin main's packages (torch at least)
    natten = locked_versions(lock(root, cell, "optional-natten"))
    assert natten["natten"] == "0.21.7+torch2130cu130"  # from the flat page with a local label (C10)
    flash = lock(root, cell, "optional-flash-attn")
    assert (
        "flash-attn @ https://github.com/mjun0812/flash-attention-prebuild-wheels/releases/download/v0.9.47/flash_attn-2.8.3+cu130torch2.13-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
        in flash
    )
    assert "--hash=sha256:" in flash
    skipped = manifest(root)["cells"][cell]["skipped_urls"]  # the other (os, arch) builds, with a note each
    assert len(skipped) == 2 and all("do not fit x86_64-manylinux_2_28 cp312" in note for note in skipped)


def test_no_deps_layer_has_no_dependencies(locked):
    root = locked
    text = lock(root, SPARK, "no-deps")
    assert set(locked_versions(text)) == {"tensorboard"}  # its grpcio has no win_arm64 wheel
    assert "pip install --require-hashes --no-deps" in text


def test_spark_uses_the_local_wheel_folder_when_it_holds_torch(world, tmp_path):
    root = tmp_path / "ai-toolkit"
    shutil.copytree(EXAMPLE, root)
    folder = root / "wheels" / "spark"
    folder.mkdir(parents=True)
    for wheel in world.spark_wheels:
        shutil.copy(wheel, folder)
    run = run_cli("lock", SPARK, "-C", str(root), *world.mirror_args())
    assert run.code == 0, run.err
    text = lock(root, SPARK)
    assert "# find-links: wheels/spark\n" in text  # relative: no machine path in the lock (C10)
    assert "expanded_assets" not in text
    assert str(tmp_path) not in text


def test_every_installable_artifact_is_hashed(locked):
    paths = sorted((locked / "locks").rglob("*.txt"))
    assert len(paths) > len(RESOLVED)  # every main lock and the layers
    for path in paths:
        lines = path.read_text().splitlines()
        requirements = [i for i, line in enumerate(lines) if line and line[0] not in " #-"]
        assert requirements, path  # each lock lists at least one artifact
        for i in requirements:
            assert lines[i].endswith("\\") and "--hash=sha256:" in lines[i + 1], (path.name, lines[i])


def test_sources_without_upload_times_are_recorded(locked):
    root = locked
    cells = manifest(root)["cells"]
    # the backend index (main), the flat natten page and the direct flash-attn URLs (layers)
    assert cells["linux-x86_64-cu130-py3.12"]["no_upload_time"] == ["flash-attn", "natten", "pytorch"]
    assert "no_upload_time" not in cells[MAC]


def test_a_requirement_that_would_move_a_pin_is_a_hard_error(world, tmp_path):
    """C08: setuptools==69.5.1 next to torch 2.13 (which needs setuptools>=77.0.3)."""
    root = tmp_path / "ai-toolkit"
    shutil.copytree(EXAMPLE, root)
    template = root / "templates" / "requirements.txt.j2"
    text = template.read_text().replace("setuptools>=77.0.3", "setuptools==69.5.1")
    template.write_text(text)
    line = text.splitlines().index("setuptools==69.5.1") + 1
    run = run_cli("lock", "linux-x86_64-cu130-py3.12", "-C", str(root), *world.mirror_args())
    assert run.code == 1
    assert "torch==2.13.0+cu130" in run.err and "setuptools" in run.err
    assert f"templates/requirements.txt.j2:{line}: setuptools==69.5.1" in run.err
    assert not (root / "locks" / "linux-x86_64-cu130-py3.12.txt").exists()


def test_rerun_is_a_noop(locked, world, monkeypatch):
    """Re-running ``lockgen all`` (and ``lock CELL``) on the locked example starts no uv and
    leaves every byte as it was; ``check`` agrees."""
    before = lock_files(locked)
    forbid_processes(monkeypatch)
    run = run_ok("all", "-C", str(locked), *world.mirror_args())
    assert f"{len(RESOLVED)} up to date" in run.err
    run_ok("lock", MAC, "-C", str(locked), *world.mirror_args())
    assert lock_files(locked) == before
    run = run_cli("check", "-C", str(locked))
    assert run.code == 0, run.out


@pytest.mark.slow  # the example's instance (a copy of the world re-locked three times); the default tier keeps the
# mechanism in test_trust_sources.py::test_c28_an_unreachable_optional_source_is_a_settled_state (C28)
def test_an_unreachable_optional_source_makes_only_its_layer_unavailable(world, tmp_path, monkeypatch):
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # fail fast on the refused connection
    root = tmp_path / "ai-toolkit"
    shutil.copytree(EXAMPLE, root)
    mirrors = [m for m in world.mirrors if not m.startswith("https://whl.natten.org")]
    mirrors.append("https://whl.natten.org=http://127.0.0.1:9")  # nothing listens there
    args = [arg for m in mirrors for arg in ("--mirror", m)]
    run = run_cli("lock", "linux-x86_64-cu130-py3.12", "-C", str(root), *args)
    assert run.code == 0, run.err
    entry = manifest(root)["cells"]["linux-x86_64-cu130-py3.12"]
    (missing,) = entry["unavailable"]
    assert missing["requirement"] == "natten==0.21.7+torch2130cu130"
    assert "https://whl.natten.org" in missing["reason"] and "127.0.0.1" not in missing["reason"]
    assert [layer["name"] for layer in entry["layers"]] == [
        "main",
        "optional-flash-linear-attention",
        "optional-flash-attn",
    ]
    assert "# find-links: https://whl.natten.org" not in lock(
        root, "linux-x86_64-cu130-py3.12"
    )  # main does not need it
    # an outage must not drop the layer for good, nor keep every run re-resolving: check names the
    # layer and its host, and a run asked to retry brings it back once the source answers
    run = run_cli("check", "linux-x86_64-cu130-py3.12", "-C", str(root))
    assert run.code == 0 and "optional natten==0.21.7+torch2130cu130 unavailable: source unreachable" in run.out
    assert "https://whl.natten.org" in run.out
    settled = run_cli("lock", "linux-x86_64-cu130-py3.12", "-C", str(root), *world.mirror_args())
    assert settled.code == 0 and "resolving" not in settled.err and "1 up to date" in settled.err
    again = run_cli("lock", "linux-x86_64-cu130-py3.12", "--retry-unavailable", "-C", str(root), *world.mirror_args())
    assert again.code == 0, again.err
    assert "optional-natten" in [
        layer["name"] for layer in manifest(root)["cells"]["linux-x86_64-cu130-py3.12"]["layers"]
    ]


def test_the_fighting_requirement_is_found_in_an_included_template(world, tmp_path):
    root = tmp_path / "ai-toolkit"
    shutil.copytree(EXAMPLE, root)
    templates = root / "templates"
    (templates / "pinned_tools.txt.j2").write_text("# tools\nsetuptools==69.5.1\n")
    main = templates / "requirements.txt.j2"
    main.write_text(main.read_text().replace("setuptools>=77.0.3", '{% include "pinned_tools.txt.j2" %}'))
    run = run_cli("lock", "linux-x86_64-cu130-py3.12", "-C", str(root), *world.mirror_args())
    assert run.code == 1
    assert "templates/pinned_tools.txt.j2:2: setuptools==69.5.1" in run.err
