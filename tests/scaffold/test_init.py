"""``lockgen init`` (issue 20, item 2): from a project's requirement files to a working config.

The end-to-end tests take the real requirement sets in tests/data/realworld/, run init, and lock
the result against fake hosts serving every package the files name (tiny wheels without
dependencies, so a lock holds exactly what is asked for): for every file, each of its cells locks
the packages the file names whose markers hold for the cell, no more and no fewer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import pytest
from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from lockgen.scaffold import Options, scaffold, write
from lockgen.scaffold.inference import _marker_env, backend_label
from tests.conftest import locked_versions, run_cli, run_ok

DATA = Path(__file__).parents[1] / "data" / "realworld"
TIME = "2026-01-01T00:00:00Z"
TORCH = {"torch", "torchvision", "torchaudio"}


def requirements(path: Path) -> list[tuple[str, str, Marker | None, str | None]]:
    """``(name, specifier, marker, url)`` of every requirement of a file (``-r`` followed), read
    here with ``packaging`` alone, independently of lockgen's reader."""
    found = []
    for raw in path.read_text().splitlines():
        line = raw.split(" #")[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        if line.startswith("-r"):
            found += requirements(path.parent / line[2:].strip())
            continue
        if line.startswith("-"):
            continue
        try:
            req = Requirement(line)
            found.append((canonicalize_name(req.name), str(req.specifier), req.marker, req.url))
        except InvalidRequirement:
            url, _, marker = line.partition(";")
            name = parse_wheel_filename(unquote(PurePosixPath(urlsplit(url.strip()).path).name))[0]
            found.append((name, "", Marker(marker) if marker.strip() else None, url.strip()))
    return found


def pick(specifier: str) -> str:
    """A version the specifier allows."""
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(specifier)
    candidates = [s.version.removesuffix(".*") for s in spec] + ["1.0", "0.1", "99.0"]
    return next(c for c in candidates if spec.contains(c, prereleases=True))


def world(root: Path, fake_host, indexes: dict[str, str]) -> list[str]:
    """Fake PyPI, download.pytorch.org (``indexes``: label -> URL) and GitHub for every
    requirement under ``root``; returns the ``--mirror`` arguments."""
    pypi, pytorch, github = fake_host("pypi"), fake_host("pytorch"), fake_host("github")
    files = []
    for path in root.rglob("*.txt"):
        for name, spec, _, url in requirements(path):
            if url:
                filename = unquote(PurePosixPath(urlsplit(url).path).name)
                _, version, _, tags = parse_wheel_filename(filename)
                folder = PurePosixPath(urlsplit(url).path).parent.as_posix().lstrip("/")
                tag = "-".join(
                    ".".join(sorted({getattr(t, a) for t in tags})) for a in ("interpreter", "abi", "platform")
                )
                built = github.wheel(folder, name, str(version), tag)
                built.rename(built.parent / filename)
                continue
            files.append(pypi.wheel("files", name, pick(spec)))
            if name in TORCH:
                for label in indexes:
                    pytorch.wheel(f"whl/{label}/files", name, f"{pick(spec)}+{label}")
    pypi.index_page("simple", files, upload_time=TIME)
    for label in indexes:
        wheels = sorted((pytorch.root / "whl" / label / "files").glob("*.whl"))
        pytorch.index_page(f"whl/{label}", wheels)
    return [
        arg
        for m in (f"https://pypi.org/simple={pypi.url}/simple", f"https://files.pythonhosted.org={pypi.url}/files",
                  f"https://download.pytorch.org={pytorch.url}", f"https://github.com={github.url}")
        for arg in ("--mirror", m)
    ]  # fmt: skip


def expected(path: Path, cell: tuple[str, ...], python: str) -> set[str]:
    env = _marker_env(cell[0], cell[1], python)
    return {name for name, _, marker, _ in requirements(path) if marker is None or marker.evaluate(env)}


def init_and_lock(tmp_path, fake_host, name: str, python: str, indexes: tuple[str, ...] = ()) -> None:
    root = tmp_path / name
    shutil.copytree(DATA / name, root)
    draft = scaffold(root, Options(pythons=(python,), exclude_newer="2026-11-25", indexes=indexes))
    write(root, draft)
    mirrors = world(root, fake_host, {backend_label(u) or "": u for u in indexes})
    rows = json.loads(run_ok("matrix", "--json", "-C", str(root)).out)
    run_ok("all", "-C", str(root), *mirrors)
    by_values = {tuple(row[a] for a in ("os", "arch", "backend", "variant") if a in row): row for row in rows}
    assert sum(len(cells) for cells in draft.cells.values()) == len(rows)  # every cell is one file's
    for rel, cells in draft.cells.items():
        for cell in cells:
            row = by_values[cell]
            locked = set(locked_versions((root / row["lock"]).read_text()))
            assert locked == expected(root / rel, cell, python), (rel, row["name"])
            if row["backend"] in {backend_label(u) for u in indexes}:
                assert all(
                    v.endswith("+" + row["backend"])
                    for k, v in locked_versions((root / row["lock"]).read_text()).items()
                    if k in TORCH
                )


def test_comfyui_with_backend_indexes_locks_what_its_file_names(tmp_path, fake_host):
    """One file, torch unpinned, the NVIDIA index its README names given with --index: cu128
    and cpu cells take torch from download.pytorch.org, macOS from PyPI."""
    indexes = ("https://download.pytorch.org/whl/cu128", "https://download.pytorch.org/whl/cpu")
    init_and_lock(tmp_path, fake_host, "ComfyUI", "3.12", indexes)
    config = (tmp_path / "ComfyUI" / "lockgen.toml").read_text()
    assert 'index = "https://download.pytorch.org/whl/{flavor}"' in config
    assert 'backend = ["cu128", "cpu", "mps"]' in config


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "python"),
    [("ai-toolkit", "3.12"), ("text-generation-webui", "3.13"), ("sdnext", "3.12"),
     ("stable-diffusion-webui-forge", "3.12"), ("Fooocus", "3.12")],
)  # fmt: skip
def test_real_requirement_sets_lock_what_their_files_name(tmp_path, fake_host, name, python):
    init_and_lock(tmp_path, fake_host, name, python)


# -- what init writes and says (no uv) --------------------------------------------------------------


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


FILES = {
    "requirements_cuda.txt": "--extra-index-url https://download.pytorch.org/whl/cu128\n-r requirements_common.txt\ntorch==2.7.1+cu128\nnvidia-ml-py\nnumpy==2.1.0 --hash=sha256:00\n",
    "requirements_rocm.txt": "--extra-index-url https://download.pytorch.org/whl/rocm6.3\n-r requirements_common.txt\ntorch==2.7.1+rocm6.3\nnumpy==2.1.0\n",
    "requirements_mac.txt": "-r requirements_common.txt\ntorch==2.7.1\nnumpy==2.2.0\n",
    "requirements_common.txt": "pillow>=10  # images\nsafetensors\n",
}


def test_init_writes_a_config_lockgen_matrix_accepts_and_explains_each_choice(tmp_path):
    root = project(tmp_path, FILES)
    run = run_cli("init", "-C", str(root), "--python", "3.11,3.12", "--exclude-newer", "2026-11-25")
    assert run.code == 0, run.err
    for said in ("requirements_cuda.txt: backend cu128: the index https://download.pytorch.org/whl/cu128",
                 "requirements_mac.txt: platforms macos aarch64: its name",
                 "requirements_common.txt: not a variant of its own", "numpy: pinned at different versions (2.1.0, 2.2.0)",
                 "requirements_cuda.txt:5: --hash: dropped, because lockgen hashes every file", "sources.pytorch:"):  # fmt: skip
        assert said in run.err, run.err
    rows = json.loads(run_ok("matrix", "--json", "-C", str(root)).out)
    assert sorted(r["name"] for r in rows) == sorted(
        f"{c}-py{p}" for c in ("linux-x86_64-cu128", "windows-x86_64-cu128", "linux-x86_64-rocm6.3",
                               "windows-x86_64-rocm6.3", "macos-aarch64-mps") for p in ("3.11", "3.12")
    )  # fmt: skip
    common = (root / "templates" / "requirements.in.j2").read_text()
    assert "pillow>=10\nsafetensors\n" in common and 'numpy=={{ pins["numpy"] }}' in common
    from lockgen.project import Project

    loaded = Project.load(root)
    texts = {p.cell.name: p.rendered.files["requirements"][1] for p in loaded.plans(loaded.cells)}
    assert "numpy==2.2.0" in texts["macos-aarch64-mps-py3.12"] and "numpy==2.1.0" in texts["linux-x86_64-cu128-py3.12"]
    assert (
        "nvidia-ml-py" in texts["linux-x86_64-cu128-py3.12"]
        and "nvidia-ml-py" not in texts["linux-x86_64-rocm6.3-py3.12"]
    )
    assert "torch==2.7.1+rocm6.3" in texts["windows-x86_64-rocm6.3-py3.12"]

    again = run_cli("init", "-C", str(root))
    assert again.code == 2 and "lockgen.toml: a lockgen config exists already" in again.err


def test_init_writes_nothing_over_an_existing_template(tmp_path):
    root = project(tmp_path, {**FILES, "templates/requirements.in.j2": "mine\n"})
    run = run_cli("init", "-C", str(root))
    assert run.code == 2 and "templates/requirements.in.j2: exists already" in run.err
    assert not (root / "lockgen.toml").exists()
    assert (root / "templates" / "requirements.in.j2").read_text() == "mine\n"


def test_dry_run_prints_and_writes_nothing(tmp_path):
    root = project(tmp_path, FILES)
    run = run_cli("init", "--dry-run", "-C", str(root))
    assert run.code == 0 and "--- lockgen.toml" in run.out
    assert not (root / "lockgen.toml").exists() and not (root / "templates").exists()


def test_a_pyproject_with_a_lockgen_config_or_nothing_to_start_from_is_refused(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.lockgen]\n")
    assert "has a [tool.lockgen] config already" in run_cli("init", "-C", str(tmp_path)).err
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert "no requirement files" in run_cli("init", "-C", str(tmp_path)).err


def test_project_dependencies_alone_give_a_working_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nrequires-python = ">=3.11"\ndependencies = ["numpy"]\n'
    )
    run_ok("init", "-C", str(tmp_path))
    assert '{{ project.dependencies | join("\\n") }}' in (tmp_path / "templates" / "requirements.in.j2").read_text()
    rows = json.loads(run_ok("matrix", "--json", "-C", str(tmp_path)).out)
    assert {r["python"] for r in rows} == {"3.11", "3.12", "3.13"}


@pytest.mark.parametrize(
    ("url", "label"),
    [("https://download.pytorch.org/whl/cu128", "cu128"), ("https://download.pytorch.org/whl/nightly/rocm7.1/", "rocm7.1"),
     ("https://download.pytorch.org/whl/cpu", "cpu"), ("https://pypi.org/simple", None), ("https://x.org/whl/xpu", "xpu")],
)  # fmt: skip
def test_backend_label_of_an_index_url(url, label):
    assert backend_label(url) == label
