"""Day one on a real project, hermetically: ``lockgen init`` with no flags, then ``lockgen all``,
then ``lockgen check``, on the requirement files of real ML applications (tests/data/realworld/).

The hosts are fakes with the shapes of the real ones (``initworld.serve(..., shaped=True)``,
recorded from PyPI): torch's wheels require the CUDA runtime packages on linux x86_64, and
accelerate, timm and peft require torch; numpy's and scipy's wheels are cp-tagged for a range of
Pythons and list bytecode in RECORD; GitHub's release assets are redirects whose HEAD is refused;
sdist-only pins have no wheel. Every package the files name is served, so what fails is lockgen's,
not the world's. The same projects against real PyPI are in ``test_realworld_network.py``, and
the table of what each needs by hand in docs/realworld.md.

One small project (ComfyUI: one file, three cells) is in the default tier; every project is in
the slow tier. init reads torch's metadata from the fake index too (``--mirror``), so the labels
it writes are those of the fake world's torch, as they are PyPI's on a real first day.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import tomlkit
from packaging.requirements import Requirement

from tests.conftest import locked_versions, run_cli, run_ok
from tests.support.initworld import Wanted, file_requirements, serve, string_requirements

pytestmark = pytest.mark.uv

DATA = Path(__file__).parents[1] / "data" / "realworld"
PYTORCH = "download.pytorch.org"


#: Cells whose wheels exist neither in the fake world nor on PyPI, by project: (cell name prefix,
#: what its failure says). ai-toolkit's Spark set is for Windows on ARM (its comments), and takes
#: its win_arm64 wheels from a self-built wheel set no line names; the fake world's numpy is 2.2.6,
#: which, like PyPI's, has no win_arm64 wheel (test_realworld_network.py: the real cell's reason).
NO_WHEELS = {"ai-toolkit": ("windows-aarch64-", "numpy==2.2.6 has no wheels with a matching platform tag")}


def requirement_files(root: Path) -> list[Path]:
    """The project's requirement files (every ``.txt`` but the extracted install commands)."""
    return sorted(p for p in root.rglob("*.txt") if "commands" not in p.name)


def project_requirements(root: Path) -> tuple[list[Wanted], list[str]]:
    """Every requirement the project's files and ``pyproject.toml`` name, and the
    download.pytorch.org index paths they name (``whl/cu128``)."""
    wanted: list[Wanted] = []
    urls: list[str] = []
    for path in requirement_files(root):
        wanted += file_requirements(path)
        urls += re.findall(r"^\s*(?:--index-url|--extra-index-url|-i)[=\s]+(\S+)", path.read_text(), flags=re.M)
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        data = tomlkit.parse(pyproject.read_text()).unwrap()
        project = data.get("project", {})
        lines = list(project.get("dependencies", []))
        lines += [line for extra in project.get("optional-dependencies", {}).values() for line in extra]
        wanted += string_requirements(line for line in lines if Requirement(line).name != project.get("name"))
        urls += [index["url"] for index in data.get("tool", {}).get("uv", {}).get("index", [])]
    indexes = sorted({urlsplit(u).path.strip("/") for u in urls if urlsplit(u).hostname == PYTORCH})
    return wanted, indexes


def day_one(tmp_path: Path, make_host, name: str) -> tuple[Path, list[dict]]:
    """Copy the project, ``init`` with no flags, serve what its files name, ``all``, ``check``;
    returns the project folder and ``lockgen matrix --json``'s rows."""
    root = tmp_path / name
    shutil.copytree(DATA / name, root)
    wanted, indexes = project_requirements(root)
    mirrors = serve(wanted, make_host, indexes, shaped=True)
    run_ok("init", "-C", str(root), *mirrors)  # init reads torch's metadata from the fake index too
    rows = json.loads(run_ok("matrix", "--json", "-C", str(root)).out)
    failing = NO_WHEELS.get(name)
    if failing is None:
        run_ok("all", "-C", str(root), *mirrors)
        run_ok("check", "-C", str(root), *mirrors)
        return root, rows
    run = run_cli("all", "-C", str(root), *mirrors)
    cells = json.loads((root / "locks" / "manifest.json").read_text())["cells"]
    prefix, why = failing
    assert {n: c["status"] for n, c in cells.items()} == {
        n: "failed" if n.startswith(prefix) else "locked" for n in cells
    }, run.err
    assert all(why in c["reason"] for n, c in cells.items() if n.startswith(prefix)), run.err
    run_ok("check", "-C", str(root), *mirrors, *(n for n in cells if not n.startswith(prefix)))
    return root, [r for r in rows if not r["name"].startswith(prefix)]


def cuda_runtime_follows_torch(root: Path, rows: list[dict]) -> None:
    """A lock with PyPI's torch holds the CUDA runtime packages on linux x86_64 and nowhere else."""
    for row in rows:
        locked = locked_versions((root / row["lock"]).read_text())
        if "+" in locked.get("torch", "+"):
            continue  # no torch, or a labelled build (from an index)
        linux = row["os"] == "linux" and row["arch"] == "x86_64"
        assert ("nvidia-cublas-cu12" in locked) == linux, row["name"]


def test_comfyui_on_day_one(tmp_path, fake_host):
    """The default tier's representative: one file, torch unpinned, no index line."""
    root, rows = day_one(tmp_path, fake_host, "ComfyUI")
    cuda_runtime_follows_torch(root, rows)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["Fooocus", "InvokeAI", "ai-toolkit", "sdnext", "stable-diffusion-webui-forge", "text-generation-webui"]
)
def test_real_project_on_day_one(tmp_path, fake_host, name):
    root, rows = day_one(tmp_path, fake_host, name)
    cuda_runtime_follows_torch(root, rows)
    if name == "text-generation-webui":  # init picks 3.13: every full CUDA cell keeps the cp313 wheels its file names
        full = [r for r in rows if "-cu128-" in r["name"] and r["name"].endswith("-full")]
        assert {r["os"] for r in full} == {"linux", "windows"}
        for row in full:
            assert row["python"] == "3.13"
            assert {"exllamav3", "flash-attn"} <= set(locked_versions((root / row["lock"]).read_text())), row["name"]


# -- the fake world's shapes (no uv) ----------------------------------------------------------------


def test_shaped_torch_requires_the_cuda_runtime_on_linux_x86_64_only(tmp_path, fake_host):
    import zipfile

    from packaging.markers import Marker

    serve([Wanted("torch", "", None, None), Wanted("numpy", "==1.26.4", None, None)], fake_host, shaped=True)
    files = {p.name for p in (tmp_path / "pypi" / "files").iterdir()}
    assert "torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl" in files
    assert "nvidia_cublas_cu12-12.8.4.1-py3-none-manylinux_2_27_x86_64.whl" in files
    assert not any(f.startswith("nvidia") and "win" in f for f in files)
    assert "numpy-1.26.4-cp312-cp312-win_amd64.whl" in files and "numpy-1.26.4-cp313-cp313-win_amd64.whl" not in files
    wheel = tmp_path / "pypi" / "files" / "torch-2.9.1-cp312-cp312-win_amd64.whl"
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read("torch-2.9.1.dist-info/METADATA").decode()
    cublas = next(line for line in metadata.splitlines() if "nvidia-cublas-cu12" in line)
    assert Requirement(cublas.split(": ", 1)[1]).marker == Marker(
        'platform_system == "Linux" and platform_machine == "x86_64"'
    )
    with zipfile.ZipFile(tmp_path / "pypi" / "files" / "numpy-1.26.4-cp311-cp311-win_amd64.whl") as zf:
        assert "numpy/__pycache__/__init__.cpython-311.pyc," in zf.read("numpy-1.26.4.dist-info/RECORD").decode()


def test_a_shaped_release_asset_redirects_and_refuses_head(tmp_path, fake_host):
    import httpx

    url = "https://github.com/o/r/releases/download/v1/tool-1.0-py3-none-any.whl"
    mirrors = serve([Wanted("tool", "", None, url)], fake_host, shaped=True)
    base = next(m.split("=", 1)[1] for m in mirrors if m.startswith("https://github.com="))
    path = urlsplit(url).path
    for method in ("HEAD", "GET"):
        got = httpx.request(method, base + path, follow_redirects=False)
        assert got.status_code == 302 and got.headers["location"] == "/release-assets" + path
    assert httpx.head(base + "/release-assets" + path).status_code == 403
    assert httpx.get(base + path, follow_redirects=True).content[:2] == b"PK"


@pytest.mark.slow  # a whole init + lock of a real-shaped world; the default tier keeps check --online against
# a host refusing HEAD (test_hostile_hosts.py), the redirect and 403 shape of the fake (above) and the client's
# redirects (tests/index/test_client.py)
def test_release_assets_that_refuse_head_are_checked_online(tmp_path, fake_host):
    """text-generation-webui's portable cell locks gradio and llama.cpp's binaries from GitHub
    release assets; ``check --online`` follows the redirect and, HEAD refused with 403 by the
    storage URL, reads one byte by GET: the files are there, no finding."""
    root = tmp_path / "text-generation-webui"
    shutil.copytree(DATA / "text-generation-webui", root)
    wanted, indexes = project_requirements(root)
    mirrors = serve(wanted, fake_host, indexes, shaped=True)
    run_ok(
        "init", "--python", "3.11", "-C", str(root), *mirrors
    )  # init alone picks 3.13 (its cp313 wheels): the fake world's numpy has 3.11
    cell = "linux-x86_64-cpu-py3.11-portable"
    run_ok("lock", cell, "-C", str(root), *mirrors)
    assert {"gradio", "llama-cpp-binaries"} <= set(locked_versions((root / "locks" / f"{cell}.txt").read_text()))
    run = run_ok("check", "--online", cell, "-C", str(root), *mirrors)
    assert "refused" not in run.out + run.err


# -- installing a real-shaped cell (slow: venvs) -----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_real_shaped_cell_installs_with_uv_and_with_the_pip_a_fresh_venv_ships(tmp_path, fake_host, installer):
    """text-generation-webui's linux cpu ``full`` cell (init's config, Python 3.11): numpy's
    wheel with bytecode in RECORD, gradio from a GitHub release asset behind a redirect that
    refuses HEAD; installed by the pinned uv, and by pip 23.2.1 (what ``python3.11 -m venv``
    ships), then verified by lockgen's check of the installed files."""
    import subprocess
    import sys

    if sys.platform != "linux" or sys.version_info[:2] != (3, 11):
        pytest.skip("needs CPython 3.11 on Linux (its ensurepip ships pip 23.2.1)")
    root = tmp_path / "text-generation-webui"
    shutil.copytree(DATA / "text-generation-webui", root)
    wanted, indexes = project_requirements(root)
    mirrors = serve(wanted, fake_host, indexes, shaped=True)
    run_ok(
        "init", "--python", "3.11", "-C", str(root), *mirrors
    )  # init alone picks 3.13 (its cp313 wheels): the fake world's numpy has 3.11
    cell = "linux-x86_64-cpu-py3.11-full"
    run_ok("lock", cell, "-C", str(root), *mirrors)
    locked = locked_versions((root / "locks" / f"{cell}.txt").read_text())
    assert {"numpy", "gradio"} <= set(locked)
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--version"], capture_output=True, text=True)
    assert pip.stdout.startswith("pip 23.2.1"), pip.stdout
    run = run_ok("install", cell, "-C", str(root), "--venv", str(venv), "--installer", installer, *mirrors)
    assert "verified:" in run.out, run.out
