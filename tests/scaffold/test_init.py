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
from urllib.parse import urlsplit

import pytest

from lockgen.scaffold import Options, discover, scaffold, write
from lockgen.scaffold.inference import backend_label
from tests.conftest import locked_versions, run_cli, run_ok
from tests.support.initworld import RUNTIMES, TORCH, file_requirements, serve

DATA = Path(__file__).parents[1] / "data" / "realworld"


def expected(path: Path, cell: tuple[str, ...], python: str) -> set[str]:
    return {w.name for w in file_requirements(path) if w.holds(cell[0], cell[1], python)}


def init_and_lock(tmp_path, fake_host, name: str, python: str, indexes: tuple[str, ...] = (),
                  files: tuple[str, ...] = ()) -> None:  # fmt: skip
    root = tmp_path / name
    shutil.copytree(DATA / name, root)
    draft = scaffold(root, Options(files=files, pythons=(python,), exclude_newer="2026-11-25", indexes=indexes))
    write(root, draft)
    paths = {PurePosixPath(p.split(":")[0]) for p in files} or {PurePosixPath(p) for p in discover(root)}
    wanted = [w for path in paths for w in file_requirements(root / path)]
    mirrors = serve(wanted, fake_host, [urlsplit(u).path.strip("/") for u in indexes])
    rows = json.loads(run_ok("matrix", "--json", "-C", str(root)).out)
    run_ok("all", "-C", str(root), *mirrors)
    by_values = {tuple(row[a] for a in ("os", "arch", "backend", "variant") if a in row): row for row in rows}
    assert sum(len(cells) for cells in draft.cells.values()) == len(rows)  # every cell is one file's
    for rel, cells in draft.cells.items():
        for cell in cells:
            row = by_values[cell]
            locked = set(locked_versions((root / row["lock"]).read_text()))
            runtime = locked - expected(root / rel, cell, python)
            assert locked - runtime == expected(root / rel, cell, python), (rel, row["name"])
            # PyPI's torch pulls its CUDA runtime on linux x86_64 only: such a cell is labelled by that build
            assert runtime <= RUNTIMES and (not runtime or (cell[:2] == ("linux", "x86_64") and cell[2] != "cpu"))
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
    ("name", "python", "files"),
    [("ai-toolkit", "3.12", ()), ("text-generation-webui", "3.13", ()), ("sdnext", "3.12", ()),
     ("stable-diffusion-webui-forge", "3.12", ()), ("Fooocus", "3.12", ()),
     # ai-toolkit's DGX OS set is for linux aarch64, its Spark set for Windows on ARM (item 3)
     ("ai-toolkit", "3.12", ("requirements.txt", "dgx_requirements.txt:os=linux,arch=aarch64",
                             "spark_requirements.txt:os=windows,arch=aarch64"))],
)  # fmt: skip
def test_real_requirement_sets_lock_what_their_files_name(tmp_path, fake_host, name, python, files):
    init_and_lock(tmp_path, fake_host, name, python, files=files)


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


# -- what a file is for: its name, or what the user says (item 3) -----------------------------------


@pytest.mark.parametrize(
    ("name", "platforms", "backend"),
    [("requirements_arm64.txt", [("linux", "aarch64")], None),
     ("requirements_aarch64.txt", [("linux", "aarch64")], None),
     ("requirements_mac.txt", [("macos", "aarch64")], None),
     ("requirements_macos.txt", [("macos", "aarch64")], None),
     ("requirements_win.txt", [("windows", "x86_64")], None),
     ("requirements_win_arm64.txt", [("windows", "aarch64")], None),
     ("requirements_apple_intel.txt", [("macos", "x86_64")], None),
     ("requirements_amd.txt", None, "rocm"),
     ("requirements_rocm.txt", None, "rocm"),
     ("requirements_cpu.txt", None, "cpu"),
     ("requirements_cuda.txt", None, "cuda"),
     ("requirements_cu128.txt", None, "cu128"),
     ("requirements-cuda131.txt", None, "cu131"),
     ("requirements_amd64.txt", [("linux", "x86_64")], None),  # amd64 is an arch, not AMD's GPUs
     ("jetson_requirements.txt", [("linux", "aarch64")], None),
     ("requirements_gh200.txt", [("linux", "aarch64")], None),
     ("dgx_requirements.txt", [("linux", "x86_64"), ("linux", "aarch64")], None),  # DGX OS: both arches
     ("spark_requirements.txt", None, None)],  # "Spark": DGX Spark, or Windows on ARM (ai-toolkit's): its comments say
)  # fmt: skip
def test_name_parts_say_platform_and_backend(name, platforms, backend):
    from lockgen.scaffold.inference import infer
    from lockgen.scaffold.reading import ReqFile

    facts = infer(ReqFile(path=name, lines=()), ["3.12"], ())
    assert facts.platforms == (tuple(platforms) if platforms else None)
    assert facts.backends == ((backend,) if backend else ())


def test_the_files_name_and_comments_say_its_platform_and_the_user_can_say_it(tmp_path):
    """ai-toolkit's dgx_requirements.txt is for DGX OS (linux, on x86_64 and aarch64 machines) and
    spark_requirements.txt for Windows on ARM (its first comment names the ``win_arm64`` wheel
    tag): init says both, with the reason; the plain requirements.txt keeps the default
    platforms (a DGX is one kind of linux machine: its file is a variant beside the default);
    FILE:os=…,arch=… still says otherwise."""
    root = tmp_path / "ai-toolkit"
    shutil.copytree(DATA / "ai-toolkit", root)
    run = run_cli("init", "-C", str(root), "--python", "3.12", "--offline")
    assert run.code == 0, run.err
    assert "dgx_requirements.txt: platforms linux x86_64, linux aarch64: its name" in run.err
    assert (
        "spark_requirements.txt: platforms windows aarch64: the wheel platform its comments name: "
        "win_arm64 (spark_requirements.txt:1)" in run.err
    )
    rows = json.loads(run_ok("matrix", "--json", "-C", str(root)).out)
    assert sorted((r["os"], r["arch"], r["variant"]) for r in rows) == sorted(
        [("linux", "x86_64", "dgx"), ("linux", "aarch64", "dgx"), ("linux", "x86_64", "default"),
         ("windows", "x86_64", "default"), ("macos", "aarch64", "default"), ("windows", "aarch64", "spark")]
    )  # fmt: skip
    (root / "lockgen.toml").unlink()
    shutil.rmtree(root / "templates")
    run = run_cli("init", "-C", str(root), "--python", "3.12", "--offline", "dgx_requirements.txt:os=linux,arch=aarch64",
                  "spark_requirements.txt:os=windows,arch=arm64", "requirements.txt")  # fmt: skip
    assert run.code == 0, run.err
    assert (
        "dgx_requirements.txt: platforms linux aarch64: given as dgx_requirements.txt:os=linux,arch=aarch64" in run.err
    )
    rows = json.loads(run_ok("matrix", "--json", "-C", str(root)).out)
    assert sorted(r["name"] for r in rows) == sorted(
        ["linux-aarch64-cpu-py3.12", "windows-aarch64-cpu-py3.12", "linux-x86_64-cpu-py3.12",
         "windows-x86_64-cpu-py3.12", "macos-aarch64-mps-py3.12"]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("comment", "platforms"),
    [("# native Windows-on-ARM (win_arm64) requirement set", [("windows", "aarch64")]),
     ("# wheels: manylinux_2_28_aarch64 and macosx_11_0_arm64", [("linux", "aarch64"), ("macos", "aarch64")]),
     ("# for linux_x86_64 and win_amd64", [("linux", "x86_64"), ("windows", "x86_64")]),
     ("# see https://example.org/win_arm64_notes", None),  # inside a word: not a tag
     ("# nothing here", None)],
)  # fmt: skip
def test_wheel_platform_tags_in_a_files_comments_say_its_platforms(tmp_path, comment, platforms):
    from lockgen.scaffold.inference import infer
    from lockgen.scaffold.reading import read_requirements

    (tmp_path / "reqs.txt").write_text(f"{comment}\nnumpy\n")
    facts = infer(read_requirements("reqs.txt", lambda rel: (tmp_path / rel).read_text()), ["3.12"], ())
    assert facts.platforms == (tuple(platforms) if platforms else None)


def test_a_container_images_file_is_no_matrix_value(tmp_path):
    """Fooocus's installer installs requirements_docker.txt and requirements_versions.txt into
    one environment; the docker file is what its Dockerfile installs: init leaves it out, says
    so and how to read it (name it), and reads it when it is the only file."""
    root = tmp_path / "Fooocus"
    shutil.copytree(DATA / "Fooocus", root)
    draft = scaffold(root, Options(pythons=("3.11",)))
    assert set(draft.cells) == {"requirements_versions.txt"}
    assert any(n.startswith("requirements_docker.txt: a container image's file (its name), not a matrix value: not "
                            "read; name it to read it") for n in draft.explanation)  # fmt: skip
    assert "variant" not in draft.files["lockgen.toml"]
    (root / "requirements_versions.txt").unlink()
    assert set(scaffold(root, Options(pythons=("3.11",))).cells) == {"requirements_docker.txt"}


@pytest.mark.parametrize(
    ("argument", "error"),
    [("reqs.txt:os=beos", "os 'beos': use linux, windows or macos"),
     ("reqs.txt:arch=sparc", "arch 'sparc': use x86_64 or aarch64"),
     ("reqs.txt:gpu=nvidia", "say a file's platform as FILE:os=linux,arch=aarch64"),
     ("missing.txt", "missing.txt: no such file")],
)  # fmt: skip
def test_a_bad_platform_spec_is_a_usage_error(tmp_path, argument, error):
    (tmp_path / "reqs.txt").write_text("numpy\n")
    run = run_cli("init", "--dry-run", "-C", str(tmp_path), argument)
    assert run.code == 2 and error in run.err, run.err


def test_a_given_backend_and_several_oses(tmp_path):
    (tmp_path / "reqs.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cu126\ntorch\n")
    draft = scaffold(tmp_path, Options(files=("reqs.txt:os=linux,os=windows,backend=cu126",), pythons=("3.12",)))
    assert draft.cells["reqs.txt"] == (("linux", "x86_64", "cu126"), ("windows", "x86_64", "cu126"))
    assert 'index = "https://download.pytorch.org/whl/{flavor}"' in draft.files["lockgen.toml"]


# -- constraints files (item 4) ---------------------------------------------------------------------


def test_constraints_files_become_the_constraints_template(tmp_path):
    """-c lines (in a file or one it includes) are the constraints template: the top-level
    setting when every file reads the same, a rule's otherwise; the constraints file is no
    variant of its own."""
    root = project(tmp_path, {
        "requirements/common.txt": "-c constraints.txt\npillow\n",
        "requirements/constraints.txt": "numpy<2  # old ABI\nurllib3!=2.0.0\n",
        "requirements/cuda.txt": "-r common.txt\ntorch\n",
        "requirements/cpu.txt": "-r common.txt\n-c ../pins-cpu.txt\ntorch\n",
        "pins-cpu.txt": "torch<2.8\n",
    })  # fmt: skip
    run = run_cli("init", "-C", str(root), "--python", "3.12", "requirements/cuda.txt", "requirements/cpu.txt",
                  "--exclude-newer", "2026-11-25")  # fmt: skip
    assert run.code == 0, run.err
    assert (
        "requirements/cpu.txt: -c requirements/constraints.txt, pins-cpu.txt: its lines are the constraints" in run.err
    )
    templates = root / "templates"
    assert (templates / "requirements-constraints.txt.j2").read_text().endswith("numpy<2\nurllib3!=2.0.0\n")
    assert (templates / "pins-cpu.txt.j2").read_text().endswith("torch<2.8\n")
    from lockgen.project import Project

    loaded = Project.load(root)
    rendered = {p.cell.name: p.rendered.files for p in loaded.plans(loaded.cells)}
    cpu, cuda = rendered["linux-x86_64-cpu-py3.12"], rendered["linux-x86_64-cuda-py3.12"]
    assert cpu["constraints"][1].split() == ["numpy<2", "urllib3!=2.0.0", "torch<2.8"]
    assert cuda["constraints"][1].split() == ["numpy<2", "urllib3!=2.0.0"]
    assert "numpy" not in cpu["requirements"][1]


@pytest.mark.parametrize(
    ("args", "error"),
    [(["--python", "3.x"], "--python 3.x: bad python version '3.x'; write major.minor such as \"3.12\""),
     (["--python", "3.12,3"], "--python 3: bad python version '3'"),
     (["--exclude-newer", "tomorrow"], "--exclude-newer tomorrow: 'tomorrow' is not a date, an RFC 3339 timestamp"),
     (["--exclude-newer", "2026-11-25T00:00:00"], "--exclude-newer 2026-11-25T00:00:00: '2026-11-25T00:00:00' needs a time zone"),
     (["--index", "download.pytorch.org/whl/cu128"], "--index download.pytorch.org/whl/cu128: 'download.pytorch.org/whl/cu128' is not a URL")],
    ids=["python-word", "python-major", "exclude-newer-word", "exclude-newer-no-zone", "index-no-scheme"],
)  # fmt: skip
def test_option_values_the_config_would_refuse_are_refused_by_option(tmp_path, args, error):
    """The config's own validators judge init's options: a value `lockgen matrix` would refuse
    is never written (exit 2, naming the option)."""
    (tmp_path / "requirements.txt").write_text("numpy\n")
    run = run_cli("init", "-C", str(tmp_path), *args)
    assert run.code == 2 and error in run.err, run.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["requirements.txt"]


def test_malformed_requirement_lines_are_refused_by_file_and_line(tmp_path):
    """pip-compile and uv pip compile stop at a line they cannot read, naming it; init does too,
    every such line at once (its includes and constraints files too), and writes nothing: copied
    into a template, the lines would fail every cell at lockgen all, naming the template."""
    (tmp_path / "requirements.txt").write_text("requests==\nnumpy>=1 <2  # two clauses, no comma\ntorch\n-r more.txt\n")
    (tmp_path / "more.txt").write_text("pillow>=10\nsafetensors ==\n./local/pkg\n")
    run = run_cli("init", "-C", str(tmp_path))
    assert run.code == 2
    assert "error: 3 requirement lines that pip and uv would refuse:\n" in run.err
    assert "  requirements.txt:1: 'requests==': not a requirement (" in run.err
    assert "  requirements.txt:2: 'numpy>=1 <2': not a requirement (Expected comma" in run.err
    assert "  more.txt:2: 'safetensors ==': not a requirement (" in run.err
    assert "./local/pkg" not in run.err  # a path is uv's to read, as in templates
    assert "(nothing was written)" in run.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["more.txt", "requirements.txt"]
    (tmp_path / "requirements.txt").write_text("requests==2.32.3\nnumpy>=1,<2\ntorch\n-r more.txt\n")
    (tmp_path / "more.txt").write_text("pillow>=10\nsafetensors\n")
    assert run_cli("init", "-C", str(tmp_path)).code == 0
    run_ok("matrix", "-C", str(tmp_path))
