"""Harmonizing across the matrix: every difference explained, drift moved, forced kept (real uv, fake index)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import locked_versions, run_ok, write_project

pytestmark = pytest.mark.uv  # these tests lock with the real uv


def _project(root: Path, index_url: str, pythons: list[str], extra: str = "") -> Path:
    config = f"""
        index-url = "{index_url}"
        {extra}
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = {json.dumps(pythons)}
    """
    return write_project(root, config, {"requirements.in.j2": "alpha\nbeta\n"})


def _versions(root: Path, cell: str) -> dict[str, str]:
    return locked_versions((root / "locks" / f"{cell}.txt").read_text())


def _differences(root: Path) -> dict[str, dict]:
    data = json.loads((root / "locks" / "differences.json").read_text())
    return {d["name"]: d for d in data["packages"]}


def _cell(python: str) -> str:
    return f"linux-x86_64-cpu-py{python}"


def test_drift_is_moved_to_the_common_version_and_a_rerun_changes_nothing(index, tmp_path):
    """A cell added after a release locks the newer version alone: nothing forces it, so the
    default ``unforced`` moves it to the version the other cells have; ``--force`` then keeps
    every byte, and ``check --json`` and the run's report say there is no difference left."""
    index.add("alpha", "1.0")
    index.add("beta", "1.0")
    index.publish()
    root = _project(tmp_path / "proj", index.index_url(), ["3.11", "3.12"])
    run_ok("-C", str(root), "all")
    index.add("alpha", "1.1")
    index.publish()
    _project(root, index.index_url(), ["3.11", "3.12", "3.13"])  # a new cell, resolved after the release

    run = run_ok("-C", str(root), "all", "--json")

    assert _versions(root, _cell("3.13"))["alpha"] == "1.0"
    assert _differences(root) == {}
    data = json.loads(run.out)
    assert data["differences"] == []
    cells = {c["cell"]: c for c in data["cells"]}
    assert "harmonized: preferred alpha 1.0" in cells[_cell("3.13")]["message"]
    before = {p: p.read_bytes() for p in (root / "locks").rglob("*") if p.is_file()}
    run_ok("-C", str(root), "all", "--force")
    assert {p: p.read_bytes() for p in (root / "locks").rglob("*") if p.is_file()} == before


def test_off_keeps_drift_and_names_it(index, tmp_path):
    """``harmonize = "off"``: the drifted cell keeps the newer version, and the difference is
    listed once, not forced (drift), in the report and in differences.json."""
    index.add("alpha", "1.0")
    index.add("beta", "1.0")
    index.publish()
    root = _project(tmp_path / "proj", index.index_url(), ["3.11", "3.12"], 'harmonize = "off"')
    run_ok("-C", str(root), "all")
    index.add("alpha", "1.1")
    index.publish()
    _project(root, index.index_url(), ["3.11", "3.12", "3.13"], 'harmonize = "off"')
    shutil.copytree(root / "locks", tmp_path / "before")

    run = run_ok("-C", str(root), "all")

    assert _versions(root, _cell("3.13"))["alpha"] == "1.1"
    found = _differences(root)["alpha"]
    assert found["forced"] is False and found["common"] == "1.0"
    assert found["off"] == [{"cell": _cell("3.13"), "version": "1.1", "cause": "drift", "detail": ""}]
    assert "alpha: 1.0 in 2 cells, 1.1 in 1 cell (not forced, drift: linux-x86_64-cpu-py3.13)" in run.err
    check = json.loads(run_ok("-C", str(root), "check", "--json").out)
    assert [d["name"] for d in check["differences"]] == ["alpha"]
    diff = run_ok("-C", str(root), "diff", str(tmp_path / "before"), str(root / "locks")).out
    assert "now differs across cells: alpha: 1.0, 1.1" in diff
    back = run_ok("-C", str(root), "diff", str(root / "locks"), str(tmp_path / "before")).out
    assert "no longer differs across cells: alpha" in back


def test_requires_python_is_forced_and_common_takes_the_newest_all_can(index, tmp_path):
    """alpha 1.1 requires Python 3.12: the 3.11 cell is forced to 1.0, said with the
    requires-python; ``harmonize = "common"`` moves every cell to 1.0, the newest all can take,
    while ``harmonize-package`` exempts beta."""
    index.add("alpha", "1.0")
    index.add("alpha", "1.1", requires_python=">=3.12")
    index.add("beta", "1.0")
    index.publish()
    root = _project(tmp_path / "proj", index.index_url(), ["3.11", "3.12", "3.13"])

    run_ok("-C", str(root), "all")

    assert _versions(root, _cell("3.11"))["alpha"] == "1.0"
    assert _versions(root, _cell("3.12"))["alpha"] == "1.1"
    found = _differences(root)["alpha"]
    assert found["forced"] is True and found["causes"] == ["requires-python"]
    assert found["off"][0]["detail"] == "alpha 1.1 requires Python >=3.12 (the cell has 3.11)"

    _project(
        root, index.index_url(), ["3.11", "3.12", "3.13"], 'harmonize = "common"\nharmonize-package = { beta = "off" }'
    )
    run_ok("-C", str(root), "all")

    assert {_versions(root, _cell(p))["alpha"] for p in ("3.11", "3.12", "3.13")} == {"1.0"}
    assert _differences(root) == {}


def test_no_wheel_for_the_platform_is_forced(index, tmp_path):
    """alpha 1.1 ships a macOS wheel only: the linux cell is forced to 1.0 (no wheel for its
    platform) and stays there, while the macOS cells keep 1.1."""
    index.add("alpha", "1.0")
    index.add("alpha", "1.1", tag="py3-none-macosx_11_0_arm64")
    index.add("beta", "1.0")
    index.publish()
    config = f"""
        index-url = "{index.index_url()}"
        [tool.lockgen.matrix]
        os = ["linux", "macos"]
        arch = ["aarch64"]
        backend = ["cpu"]
        python = ["3.12", "3.13"]
        exclude = [{{ os = "linux", python = "3.13" }}]
    """
    root = write_project(tmp_path / "proj", config, {"requirements.in.j2": "alpha\nbeta\n"})

    run_ok("-C", str(root), "all")

    found = _differences(root)["alpha"]
    assert found["versions"] == {
        "1.0": ["linux-aarch64-cpu-py3.12"],
        "1.1": ["macos-aarch64-cpu-py3.12", "macos-aarch64-cpu-py3.13"],
    }
    assert found["forced"] is True and found["causes"] == ["no wheel"]
    assert found["off"][0]["detail"].startswith("alpha 1.1 has no wheel for aarch64-manylinux")


def test_only_the_cells_a_run_resolves_move(index, tmp_path):
    """``lockgen lock CELL --upgrade-package alpha`` upgrades that cell alone and leaves alpha
    unmoved (uv ignores a preference for an upgraded package): the difference is listed as
    drift; ``lockgen lock CELL`` moves only its cell (here: none off the common version);
    ``lockgen all --force`` moves the other cell to the common version (a tie: the newest)."""
    index.add("alpha", "1.0")
    index.add("beta", "1.0")
    index.publish()
    root = _project(tmp_path / "proj", index.index_url(), ["3.11", "3.12"])
    run_ok("-C", str(root), "all")
    index.add("alpha", "1.1")
    index.publish()

    run_ok("-C", str(root), "lock", _cell("3.12"), "--upgrade-package", "alpha")
    assert (_versions(root, _cell("3.11"))["alpha"], _versions(root, _cell("3.12"))["alpha"]) == ("1.0", "1.1")
    assert _differences(root)["alpha"]["off"] == [
        {"cell": _cell("3.11"), "version": "1.0", "cause": "drift", "detail": ""}
    ]
    run_ok("-C", str(root), "lock", _cell("3.12"), "--force")
    assert _versions(root, _cell("3.11"))["alpha"] == "1.0"  # not selected: not moved

    run_ok("-C", str(root), "all", "--force")

    assert {_versions(root, _cell(p))["alpha"] for p in ("3.11", "3.12")} == {"1.1"}
    assert _differences(root) == {}


def test_a_version_uv_will_not_take_is_held(index, tmp_path):
    """alpha 1.1 needs beta 2, which the Python 3.11 cell's template pins to 1.0: asked to prefer
    alpha 1.1 there, uv keeps 1.0, and the run says so (held), changing nothing; a re-run with
    ``--force`` changes no byte."""
    index.add("alpha", "1.0")
    index.add("alpha", "1.1", requires=("beta>=2",))
    index.add("beta", "1.0")
    index.add("beta", "2.0")
    index.publish()
    root = _project(tmp_path / "proj", index.index_url(), ["3.11", "3.12", "3.13"])
    (root / "templates" / "requirements.in.j2").write_text("alpha\nbeta{{ '==1.0' if python == '3.11' else '' }}\n")

    run_ok("-C", str(root), "all")

    assert _versions(root, _cell("3.11"))["alpha"] == "1.0"
    off = _differences(root)["alpha"]["off"]
    assert [(o["cell"], o["cause"]) for o in off] == [(_cell("3.11"), "held")]
    assert off[0]["detail"].startswith("uv kept 1.0 when asked to prefer 1.1")
    before = {p: p.read_bytes() for p in (root / "locks").rglob("*") if p.is_file()}
    run_ok("-C", str(root), "all", "--force")
    assert {p: p.read_bytes() for p in (root / "locks").rglob("*") if p.is_file()} == before
