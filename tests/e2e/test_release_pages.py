"""Release-page wheels as they are published (issue 16, item 3) and backend checks in optional
layers (issue 17, item 2), against fake hosts through ``--mirror``.

flash-attn's prebuilt wheels carry their build in the file name only
(``flash_attn-2.8.3+cu130torch2.13-cp312-cp312-linux_x86_64.whl``; the metadata says 2.8.3), and
one release lists a build per torch and CUDA version. lockgen chooses the build whose label
fits the locked torch and the cell's backend, locks it, and the lock installs with uv and with
the pip of a fresh venv and passes ``lockgen install``'s checks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lockgen.resolve import uv
from tests.conftest import run_cli, run_ok, write_project
from tests.e2e.test_c18_c19_installers import clean_env
from tests.support.fakehost import FakeHost

pytestmark = pytest.mark.uv

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
TAG = f"cp{PY.replace('.', '')}"
CELL = f"linux-x86_64-cu130-py{PY}"
REL = "mjun0812/flash-attention-prebuild-wheels/releases/download/v0.9.47"
LABELS = ("cu130torch2.12", "cu130torch2.13", "cu128torch2.13", "cu130torch2.14")
TIME = "2026-01-01T00:00:00Z"


@pytest.fixture
def hosts(tmp_path):
    made = [FakeHost(tmp_path / name) for name in ("pypi", "github", "backend")]
    yield made
    for host in made:
        host.stop()


def mirrors(pypi: FakeHost, github: FakeHost, backend: FakeHost) -> list[str]:
    pairs = [
        f"https://pypi.org/simple={pypi.url}/simple", f"https://files.pythonhosted.org={pypi.url}/files",
        f"https://github.com={github.url}", f"https://download.pytorch.org={backend.url}",
    ]  # fmt: skip
    return [arg for pair in pairs for arg in ("--mirror", pair)]


def release_builds(github: FakeHost, labels=LABELS, name: str = "flash_attn", version: str = "2.8.3") -> list[str]:
    """One wheel per label on the release page, each named with its label while its metadata
    (and dist-info) says the bare version, as flash-attn's prebuilt wheels are; their URLs."""
    urls = []
    for label in labels:
        built = github.wheel(REL, name, version, f"{TAG}-{TAG}-linux_x86_64", requires=("torch",))
        named = built.rename(built.with_name(f"{name}-{version}+{label}-{TAG}-{TAG}-linux_x86_64.whl"))
        urls.append(f"https://github.com/{REL}/{named.name}")
    return urls


def torch_world(pypi: FakeHost, backend: FakeHost) -> None:
    pypi.index_page("simple", [pypi.wheel("files", "numpy", "2.3.0")], upload_time=TIME)
    wheels = [
        backend.wheel("whl/cu130", "torch", f"{v}+cu130", "py3-none-manylinux_2_28_x86_64", requires=("numpy",))
        for v in ("2.12.0", "2.13.0")
    ]
    backend.index_page("whl/cu130", wheels)


def project(
    root: Path, urls: list[str], requirements: str = "torch\n", extra: str = 'optional = ["flash-attn"]'
) -> Path:
    config = f"""
        use = ["pytorch", "flash"]
        pinned = ["torch"]
        pins = {{ torch = "2.13.0" }}
        {extra}
        [tool.lockgen.sources.pytorch]
        index = "https://download.pytorch.org/whl/{{flavor}}"
        packages = ["torch"]
        [tool.lockgen.sources.flash]
        urls = {json.dumps(urls)}
        packages = ["flash-attn"]
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cu130"]
        python = ["{PY}"]
    """
    return write_project(root, config, {"requirements.in.j2": requirements})


def lock_text(root: Path, layer: str | None = None) -> str:
    return (root / "locks" / (f"{CELL}.txt" if layer is None else f"{CELL}/{layer}.txt")).read_text()


def cell_entry(root: Path) -> dict:
    return json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]


@pytest.mark.parametrize("where", ["optional", "main"])
def test_the_build_that_fits_the_locked_torch_and_backend_is_chosen(tmp_path, hosts, where):
    pypi, github, backend = hosts
    torch_world(pypi, backend)
    urls = release_builds(github)
    requirements, extra = (
        ("torch\n", 'optional = ["flash-attn"]') if where == "optional" else ("torch\nflash-attn\n", "")
    )
    root = project(tmp_path / "p", urls, requirements, extra)
    run = run_ok("all", "-C", str(root), *mirrors(*hosts))
    text = lock_text(root, "optional-flash-attn" if where == "optional" else None)
    assert f"flash-attn @ https://github.com/{REL}/flash_attn-2.8.3+cu130torch2.13-{TAG}-{TAG}-linux_x86_64.whl" in text
    assert "cu130torch2.14" not in text and "cu130torch2.12" not in text  # not the highest label: the one that fits
    assert cell_entry(root).get("unavailable", []) == []
    assert "cannot read" not in run.err


def test_when_no_build_fits_the_layer_lists_every_build_seen(tmp_path, hosts):
    pypi, github, backend = hosts
    torch_world(pypi, backend)
    urls = release_builds(github, ("cu130torch2.12", "cu128torch2.13"))
    root = project(tmp_path / "p", urls)
    run_ok("all", "-C", str(root), *mirrors(*hosts))
    (gap,) = cell_entry(root)["unavailable"]
    assert gap["requirement"] == "flash-attn"
    assert gap["reason"].startswith("no build fits this cell (builds seen: ")
    assert (
        f"flash_attn-2.8.3+cu130torch2.12-{TAG}-{TAG}-linux_x86_64.whl: built for torch 2.12, the cell locks torch 2.13.0"
        in gap["reason"]
    )
    assert (
        f"flash_attn-2.8.3+cu128torch2.13-{TAG}-{TAG}-linux_x86_64.whl: built for cuda 12.8, the cell's backend is cu130"
        in gap["reason"]
    )


def test_when_no_build_fits_a_main_requirement_the_cell_says_why(tmp_path, hosts):
    pypi, github, backend = hosts
    torch_world(pypi, backend)
    urls = release_builds(github, ("cu130torch2.12",))
    root = project(tmp_path / "p", urls, "torch\nflash-attn\n", "")
    run = run_cli("all", "-C", str(root), *mirrors(*hosts))
    assert run.code == 1
    assert "flash-attn: source 'flash' has no wheel URL for" in run.err
    assert "built for torch 2.12, the cell locks torch 2.13.0" in run.err


def test_a_backend_mix_in_an_optional_layer_makes_it_unavailable_not_the_cell_failed(tmp_path, hosts):
    """An optional extension from a find-links page built for another torch only: the layer is
    unavailable, naming the page, each build and why it was passed over, and the cell locks."""
    pypi, github, backend = hosts
    torch_world(pypi, backend)
    page = github.flat_page(
        "natten/whl", [github.wheel("natten/whl", "natten", "0.21.0+torch2120cu130", f"{TAG}-{TAG}-linux_x86_64")]
    )
    page = page.replace(github.url, "https://github.com")
    config_extra = f'optional = ["natten"]\nfind-links = {{ natten = "{page}" }}'
    root = project(tmp_path / "p", release_builds(github, ("cu130torch2.13",)), "torch\n", config_extra)
    run = run_ok("all", "-C", str(root), *mirrors(*hosts))
    (gap,) = cell_entry(root)["unavailable"]
    assert gap["requirement"] == "natten"
    assert gap["reason"].startswith("no build of natten on https://github.com/natten/whl/ fits this cell")
    assert "natten-0.21.0+torch2120cu130" in gap["reason"] and "the cell locks torch 2.13.0" in gap["reason"]
    assert 'allow-mix = { "natten" = "why" }' in gap["reason"]
    assert not (root / "locks" / CELL / "optional-natten.txt").exists()
    assert "unavailable: natten" in run.err
    assert run_cli("check", "-C", str(root)).code == 0


@pytest.mark.slow
def test_a_file_name_label_installs_with_uv_and_fresh_pip_and_passes_the_checks(tmp_path, hosts):
    """uv, the pip 23.2.1 of a fresh venv and ``lockgen install`` (its post-install check reads
    the installed 2.8.3 as the locked ``+cu130torch2.13`` build)."""
    pypi, github, backend = hosts
    torch_world(pypi, backend)
    root = project(tmp_path / "p", release_builds(github))
    run_ok("all", "-C", str(root), *mirrors(*hosts))
    for installer in ("uv", "pip"):
        run = run_cli(
            "install", CELL, "-C", str(root), "--venv", str(tmp_path / f"venv-{installer}"),
            "--installer", installer, *mirrors(*hosts),
        )  # fmt: skip
        assert run.code == 0, run.out + run.err
        assert "verified" in run.out and "optional-flash-attn" in run.out
    if sys.version_info[:2] != (3, 11):
        return
    fresh = tmp_path / "fresh"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(fresh)], check=True, capture_output=True, env=clean_env())
    env = {**clean_env(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for layer in cell_entry(root)["layers"]:
        argv = [str(fresh / "bin" / "python"), "-m", "pip", "--isolated", *layer["commands"]["pip"][1:]]
        for canonical, mirror in (pair.split("=", 1) for pair in mirrors(*hosts)[1::2]):
            argv = [a.replace(canonical, mirror) for a in argv]
        copy = root / f"{layer['name']}.mapped.txt"  # the release page's URLs through the mirror
        copy.write_text((root / argv[-1]).read_text().replace("https://github.com", github.url))
        argv[-1] = str(copy)
        done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    version = subprocess.run(
        [str(fresh / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('flash-attn'))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert version.stdout.strip() == "2.8.3"
    assert uv.uv_binary()


def _shaped(tmp_path: Path, hosts: list[FakeHost], shape: str) -> tuple[Path, str]:
    """A project whose flash-attn builds (:data:`LABELS`) come from a source of ``shape``; the text
    the chosen build's lock line starts with."""
    pypi, github, backend = hosts
    torch_world(pypi, backend)
    urls = release_builds(github)
    files = [github.root / REL / url.rsplit("/", 1)[1] for url in urls]
    if shape == "urls":
        return project(tmp_path / "p", urls, "torch\nflash-attn\n", ""), "flash-attn @ "
    pinned = "flash-attn @ "  # a page's build labelled in its file name only is locked by its URL, as pip 23 needs
    if shape == "index":
        (backend.root / "whl/flash/files").mkdir(parents=True)
        files = [Path(shutil.copy(f, backend.root / "whl/flash/files")) for f in files]
        backend.index_page("whl/flash", files)
        source = 'index = "https://download.pytorch.org/whl/flash"'
    else:
        page = github.flat_page(REL, files).replace(github.url, "https://github.com")
        source = f'find-links = "{page}"'
    config = f"""
        use = ["pytorch"{', "flash"' if shape != "setting" else ""}]
        pinned = ["torch"]
        pins = {{ torch = "2.13.0" }}
        {f'find-links = {{ flash = "{page}" }}' if shape == "setting" else ""}
        [tool.lockgen.sources.pytorch]
        index = "https://download.pytorch.org/whl/{{flavor}}"
        packages = ["torch"]
        {"" if shape == "setting" else "[tool.lockgen.sources.flash]"}
        {"" if shape == "setting" else source}
        {"" if shape == "setting" else 'packages = ["flash-attn"]'}
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cu130"]
        python = ["{PY}"]
    """
    return write_project(tmp_path / "p", config, {"requirements.in.j2": "torch\nflash-attn\n"}), pinned


@pytest.mark.parametrize("shape", ["urls", "find-links", "setting", "index"])
def test_every_source_shape_chooses_the_build_of_the_locked_torch(tmp_path, hosts, shape):
    """Issue 16 item 3, the kind: a ``urls`` source, a find-links source, the ``find-links``
    setting and an index source listing one build per torch and CUDA all lock the build whose
    label fits torch 2.13.0 and cu130 (not uv's highest label, ``+cu130torch2.14``)."""
    root, line = _shaped(tmp_path, hosts, shape)
    run = run_cli("all", "-C", str(root), *mirrors(*hosts))
    assert run.code == 0, run.err
    text = lock_text(root)
    assert line in text and "cu130torch2.13" in text
    assert "cu130torch2.14" not in text and "cu128" not in text and "cu130torch2.12" not in text


@pytest.mark.parametrize("shape", ["find-links", "setting", "index"])
def test_when_no_page_build_fits_the_cell_lists_each_build_and_why(tmp_path, hosts, shape):
    root, _ = _shaped(tmp_path, hosts, shape)
    _, github, backend = hosts
    folder = backend.root / "whl/flash/files" if shape == "index" else github.root / REL
    (folder / f"flash_attn-2.8.3+cu130torch2.12-{TAG}-{TAG}-linux_x86_64.whl").unlink()
    files = sorted(p for p in folder.iterdir() if p.name.endswith(".whl"))
    if shape == "index":
        backend.index_page("whl/flash", files)
    else:
        github.flat_page(REL, files)
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace('torch = "2.13.0"', 'torch = "2.12.0"'))
    run = run_cli("all", "-C", str(root), *mirrors(*hosts))
    assert run.code == 1
    said = " ".join(run.err.split())
    assert "no build of flash-attn on" in said and "fits this cell" in said
    for label in ("cu130torch2.13", "cu130torch2.14"):
        assert f"flash_attn-2.8.3+{label}-{TAG}-{TAG}-linux_x86_64.whl: built for torch" in said
    assert "flash_attn-2.8.3+cu128torch2.13" in said


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["find-links", "index"])
def test_a_page_build_labelled_in_its_file_name_installs_with_fresh_pip(tmp_path, hosts, shape):
    """A build chosen from a find-links page or an index whose label is in its file name only
    (the metadata says 2.8.3) installs with the pip 23.2.1 of a fresh venv, each layer's recorded
    pip command run from the project root, and with ``lockgen install --installer pip``."""
    if sys.version_info[:2] != (3, 11):
        pytest.skip("the fresh venv's pip 23.2.1 is CPython 3.11's")
    root, _ = _shaped(tmp_path, hosts, shape)
    run_ok("all", "-C", str(root), *mirrors(*hosts))
    fresh = tmp_path / "fresh"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(fresh)], check=True, capture_output=True, env=clean_env())
    env = {**clean_env(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for layer in cell_entry(root)["layers"]:
        argv = [str(fresh / "bin" / "python"), "-m", "pip", "--isolated", *layer["commands"]["pip"][1:]]
        for canonical, mirror in (pair.split("=", 1) for pair in mirrors(*hosts)[1::2]):
            argv = [a.replace(canonical, mirror) for a in argv]
        text = (root / argv[-1]).read_text()
        for canonical, mirror in (pair.split("=", 1) for pair in mirrors(*hosts)[1::2]):
            text = text.replace(canonical, mirror)  # the locked wheel URLs through the mirrors
        copy = root / f"{layer['name']}.mapped.txt"
        copy.write_text(text)
        argv[-1] = str(copy)
        done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "flash-attn @ https://" in lock_text(root) and "flash-attn==" not in lock_text(root)
    run = run_cli(
        "install", CELL, "-C", str(root), "--venv", str(tmp_path / "venv"), "--installer", "pip", *mirrors(*hosts)
    )
    assert run.code == 0, run.out + run.err
    assert "verified" in run.out
