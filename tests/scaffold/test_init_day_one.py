"""``lockgen init`` on the files maintainers really have (field shapes: PyPI's linux torch is a
CUDA build that requires its runtime packages; a conda ``pip freeze`` writes ``name @ file:///``
lines; installers ``-r`` a shared file from per-backend files; hostile files).

Fast tests call init in-process; the one lock runs the real uv against a fake PyPI whose torch
has the shape of the real one (its linux wheel requires ``nvidia-cuda-runtime-cu12``, its core
metadata served as PEP 658 files).
"""

from __future__ import annotations

import json
import os

import pytest
import tomllib
from packaging.specifiers import SpecifierSet

from lockgen.scaffold import Options, default_index_builds, scaffold
from lockgen.scaffold.builds import PypiTorch, cuda_label
from lockgen.scaffold.reading import MAX_DEPTH, hide_login
from tests.conftest import locked_versions, run_cli, run_ok

OPTS = {"pythons": ("3.12",), "exclude_newer": "2026-11-25"}


def config(root) -> dict:
    return tomllib.loads((root / "lockgen.toml").read_text())


# -- item 2: every line is carried or named -------------------------------------------------------


FREEZE = (
    "\ufeffnumpy==2.3.5\n"
    "certifi @ file:///croot/certifi_1700000000000/work/certifi\n"
    "pillow @ file:///home/conda/feedstock_root/build_artifacts/pillow_1/pillow-11.0.0-cp312-cp312-linux_x86_64.whl\n"
    "requests==2.32.3 --hash=sha256:" + "0" * 64 + "\n"
    "-e .\n"
    "-e /home/someone/src/tool\n"
    "--find-links https://wheels.example.org/links/\n"
    "-f ./wheels\n"
    "--extra-index-url https://alice:s3cret-pass@pypi.corp.example/simple\n"
    "private-pkg @ https://bob:hunter2@files.corp.example/private_pkg-1.0-py3-none-any.whl\n"
)


def test_every_line_of_a_conda_freeze_is_carried_or_named(tmp_path):
    (tmp_path / "requirements.txt").write_bytes(FREEZE.encode("utf-8"))
    (tmp_path / "wheels").mkdir()
    run = run_cli("init", "-C", str(tmp_path), "--python", "3.12", "--exclude-newer", "2026-11-25")
    assert run.code == 0, run.err
    template = (tmp_path / "templates" / "requirements.in.j2").read_text()
    assert template.splitlines()[1] == "numpy==2.3.5"  # the byte-order mark is gone
    assert "pillow==11.0.0" in template and "file://" not in template  # the version from the wheel's file name
    assert "-e ." in template.splitlines() and "certifi" not in template
    assert "requirements.txt:3: pillow @ file:///" in run.err and "carried as pillow==11.0.0" in run.err
    listed = run.err.split("not carried (")[1]
    for line in ("requirements.txt:2: certifi @ file:///croot", "requirements.txt:4: --hash", "requirements.txt:6: -e /home",
                 "requirements.txt:9: --extra-index-url https://${PYPI_CORP_EXAMPLE_USER}:"):  # fmt: skip
        assert line in listed, line
    settings = config(tmp_path)
    assert settings["find-links"] == {"links": "https://wheels.example.org/links/", "wheels": "wheels"}
    assert (
        "private-pkg @ https://${FILES_CORP_EXAMPLE_USER}:${FILES_CORP_EXAMPLE_PASSWORD}@files.corp.example/"
        in template
    )
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file() and ".lockgen" not in p.parts)
    for secret in ("s3cret-pass", "hunter2", "alice", "bob:"):
        assert secret not in run.err + run.out and secret not in written.replace(FREEZE, "")


def test_a_login_is_written_as_references_and_never_shown():
    assert hide_login("--index-url=https://u:p4ss@h.example/simple") == (
        "--index-url=https://${H_EXAMPLE_USER}:${H_EXAMPLE_PASSWORD}@h.example/simple",
        "the login in the URL for h.example is written as ${H_EXAMPLE_USER} and ${H_EXAMPLE_PASSWORD}: set them in "
        "the environment",
    )
    assert (
        hide_login("git+https://ghp_token@github.com/o/r.git")[0]
        == "git+https://${GITHUB_COM_TOKEN}@github.com/o/r.git"
    )
    assert hide_login("https://${USER}:${TOKEN}@h/simple") == ("https://${USER}:${TOKEN}@h/simple", None)


def test_logins_in_scripts_pyproject_and_options_are_never_written(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "1"\ndependencies = ["torch"]\n'
        '[[tool.uv.index]]\nname = "corp"\nurl = "https://carol:pyproj-secret@pypi.corp.example/simple"\n'
    )
    (tmp_path / "install.sh").write_text(
        "pip install torch --index-url https://dave:script-secret@mirror.example/cu128\n"
    )
    run = run_cli("init", "-C", str(tmp_path), "--commands", "install.sh", "--python", "3.12",
                  "--index", "https://erin:option-secret@idx.example/whl/cu128")  # fmt: skip
    assert run.code == 0, run.err
    written = (tmp_path / "lockgen.toml").read_text() + "".join(
        p.read_text() for p in (tmp_path / "templates").iterdir()
    )
    for secret in ("pyproj-secret", "script-secret", "option-secret"):
        assert secret not in run.out + run.err and secret not in written, secret


# -- item 7: hostile files --------------------------------------------------------------------------


def test_hostile_includes_are_refused_with_the_file_named(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("numpy\n")
    root = tmp_path / "project"
    root.mkdir()
    (root / "shared.txt").symlink_to(outside)
    (root / "requirements.txt").write_text("-r shared.txt\n")
    run = run_cli("init", "--dry-run", "-C", str(root))
    assert run.code == 2 and "shared.txt: a symlink leading outside the folder" in run.err, run.err
    (root / "shared.txt").unlink()
    os.mkfifo(root / "shared.txt")
    run = run_cli("init", "--dry-run", "-C", str(root))
    assert run.code == 2 and "shared.txt: not a regular file" in run.err, run.err
    (root / "shared.txt").unlink()
    (root / "requirements.txt").write_text("-r /dev/zero\n")
    run = run_cli("init", "--dry-run", "-C", str(root))
    assert run.code == 2 and "requirements.txt:1: -r /dev/zero names a file outside the project" in run.err
    for i in range(2000):  # a chain thousands deep: refused at MAX_DEPTH, naming where
        (root / f"r{i}.txt").write_text(f"-r r{i + 1}.txt\n")
    (root / "requirements.txt").write_text("-r r0.txt\n")
    run = run_cli("init", "--dry-run", "-C", str(root))
    assert run.code == 2 and f"includes nest deeper than {MAX_DEPTH} files" in run.err, run.err
    assert "Traceback" not in run.err


def test_init_never_writes_through_a_symlinked_templates_folder(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "project"
    root.mkdir()
    (root / "requirements.txt").write_text("numpy\n")
    (root / "templates").symlink_to(elsewhere)
    run = run_cli("init", "-C", str(root))
    assert run.code == 2 and "templates/: a symlink; lockgen init never writes through one" in run.err
    assert not list(elsewhere.iterdir()) and not (root / "lockgen.toml").exists()  # all or nothing


# -- item 1: labels say what the index serves -------------------------------------------------------


def test_a_linux_cell_with_pypis_torch_is_labelled_by_its_build():
    """No index line: PyPI's linux torch 2.7.1 is the CUDA 12.6 build (init's table, offline);
    windows stays cpu, Apple silicon mps; the reason is printed."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "requirements.txt").write_text("torch==2.7.1\ntorchvision\nnumpy\n")
        draft = scaffold(root, Options(**OPTS))
    assert draft.cells["requirements.txt"] == (("linux", "x86_64", "cu126"), ("windows", "x86_64", "cpu"),
                                               ("macos", "aarch64", "mps"))  # fmt: skip
    assert any("backend cu126 on linux x86_64: it takes torch from the default index" in w for w in draft.explanation)
    detect = tomllib.loads(draft.files["lockgen.toml"])["detect"]
    assert detect["nvidia"] == [{"match": {"os": "linux", "arch": "x86_64"}, "min-cuda": "12.6", "backend": "cu126"}]
    assert detect["apple"] == "mps" and detect["no-gpu"] == {"windows": "cpu"}


def test_a_file_named_cpu_gets_the_cpu_index(tmp_path):
    (tmp_path / "requirements_cpu.txt").write_text("torch==2.7.1\nnumpy\n")
    draft = scaffold(tmp_path, Options(**OPTS))
    settings = tomllib.loads(draft.files["lockgen.toml"])
    assert settings["sources"]["pytorch"] == {
        "index": "https://download.pytorch.org/whl/{flavor}",
        "packages": ["torch"],
    }
    assert draft.cells["requirements_cpu.txt"][0] == ("linux", "x86_64", "cpu")
    assert any(
        "the CPU index https://download.pytorch.org/whl/cpu for its torch packages" in w for w in draft.explanation
    )


def test_the_build_table_and_the_metadata_reading_agree_on_real_shapes():
    table = PypiTorch()
    assert table.build(SpecifierSet("==2.9.1"), "linux", "x86_64", "3.12").label == "cu128"
    assert table.build(SpecifierSet("==2.3.1"), "linux", "aarch64", "3.12").label == "cpu"
    assert table.build(SpecifierSet("==2.7.1"), "windows", "x86_64", "3.12").label == "cpu"
    guess = table.build(SpecifierSet("==2.14.0"), "linux", "x86_64", "3.12")
    assert guess.label == "cu130" and "check it" in guess.why
    from packaging.requirements import Requirement

    assert cuda_label([Requirement("nvidia-cuda-runtime-cu12==12.8.90")]) == "cu128"
    assert cuda_label([Requirement("cuda-toolkit[cudart]==13.0.2")]) == "cu130"
    assert cuda_label([Requirement("nvidia-cudnn-cu13==9.26.0.51")]) == "cu13"
    assert cuda_label([Requirement("numpy")]) is None


def fake_pypi(fake_host, metadata_files: bool = True):
    """A fake PyPI whose torch has the real shapes: the linux wheel requires the CUDA runtime
    (only on Linux), the windows and macOS wheels nothing; PEP 658 metadata files served."""
    pypi = fake_host("pypi")
    linux = 'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"'
    files = [
        pypi.wheel("files", "torch", "2.9.1", "cp312-cp312-manylinux_2_28_x86_64", requires=(linux,)),
        pypi.wheel("files", "torch", "2.9.1", "cp312-cp312-win_amd64"),
        pypi.wheel("files", "torch", "2.9.1", "cp312-none-macosx_11_0_arm64"),
        pypi.wheel("files", "nvidia-cuda-runtime-cu12", "12.8.90", "py3-none-manylinux_2_28_x86_64"),
        pypi.wheel("files", "numpy", "2.3.5"),
        pypi.wheel("files", "lightning-like", "1.0", requires=("torch>=2.9", "deep-source>=1")),
        pypi.sdist("files", "source-only", "1.0"),
        pypi.sdist("files", "deep-source", "1.1"),
    ]
    pypi.index_page("simple", files, upload_time="2026-01-01T00:00:00Z")
    if metadata_files:
        pypi.metadata_files()
    return ["--mirror", f"https://pypi.org/simple={pypi.url}/simple",
            "--mirror", f"https://files.pythonhosted.org={pypi.url}/files"]  # fmt: skip


def test_the_label_is_read_from_the_index_and_the_cell_locks(tmp_path, fake_host):
    """The linux cell is labelled cu128 from torch's own metadata (PEP 658), and locks with
    zero edits: PyPI's torch and its CUDA runtime pass the backend invariants."""
    mirrors = fake_pypi(fake_host)
    (tmp_path / "requirements.txt").write_text("torch==2.9.1\nnumpy\n")
    pairs = [mirrors[i + 1] for i in range(0, len(mirrors), 2)]
    draft = scaffold(tmp_path, Options(**OPTS), torch_builds=default_index_builds(pairs))
    assert draft.cells["requirements.txt"][0] == ("linux", "x86_64", "cu128")
    assert any("torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl.metadata" in w for w in draft.explanation)
    from lockgen.scaffold import write

    write(tmp_path, draft)
    run_ok("lock", "linux-x86_64-cu128-py3.12", "-C", str(tmp_path), *mirrors)
    locked = locked_versions((tmp_path / "locks" / "linux-x86_64-cu128-py3.12.txt").read_text())
    assert locked == {"torch": "2.9.1", "nvidia-cuda-runtime-cu12": "12.8.90", "numpy": "2.3.5"}


def test_without_pep_658_files_the_wheel_is_read_by_ranges(tmp_path, fake_host):
    mirrors = fake_pypi(fake_host, metadata_files=False)
    (tmp_path / "requirements.txt").write_text("torch==2.9.1\n")
    pairs = [mirrors[i + 1] for i in range(0, len(mirrors), 2)]
    draft = scaffold(tmp_path, Options(**OPTS), torch_builds=default_index_builds(pairs))
    assert draft.cells["requirements.txt"][0] == ("linux", "x86_64", "cu128")
    assert any("requires CUDA packages (its core metadata" in w for w in draft.explanation)


def test_torch_a_dependency_pulls_in_and_source_only_pins_are_read_from_the_index(tmp_path, fake_host):
    """No torch line, but a named package requires torch: its linux cell is PyPI's CUDA build,
    by the CUDA major (torch is not pinned); a pin the index has only as an sdist, and a
    requirement of a named package that has only sdists, are allowed to build, as pip would,
    said with the reason."""
    mirrors = fake_pypi(fake_host)
    (tmp_path / "requirements.txt").write_text("lightning-like\nsource-only==1.0\nnumpy\n")
    pairs = [mirrors[i + 1] for i in range(0, len(mirrors), 2)]
    draft = scaffold(tmp_path, Options(**OPTS), torch_builds=default_index_builds(pairs))
    assert draft.cells["requirements.txt"][0] == ("linux", "x86_64", "cu12")
    assert any("through lightning-like, which requires it" in w for w in draft.explanation)
    assert tomllib.loads(draft.files["lockgen.toml"])["allow-build"] == ["deep-source", "source-only"]
    assert (
        "allow-build deep-source: deep-source>=1 is published only as source distributions (the default index); "
        "lightning-like requires it; uv builds it, as pip does (remove it to refuse builds)"
    ) in draft.explanation
    assert any(
        w.startswith("allow-build source-only: source-only==1.0 is published only as source distributions")
        for w in draft.explanation
    )


# -- item 3: the matrix is what the installers do ---------------------------------------------------


def test_dev_and_test_files_are_no_matrix_values(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "requirements-dev.txt").write_text("-r requirements.txt\npytest\n")
    (tmp_path / "requirements_test.txt").write_text("hypothesis\n")
    draft = scaffold(tmp_path, Options(**OPTS))
    assert list(draft.cells) == ["requirements.txt"]
    assert any("requirements-dev.txt: a development or test file, not a matrix value" in w for w in draft.explanation)
    draft = scaffold(tmp_path, Options(**OPTS, with_dev=True))
    assert list(draft.cells) == ["requirements.txt"]
    assert draft.files["templates/dev.txt.j2"].splitlines()[1:] == ["pytest", "hypothesis"]
    assert '{% include "dev.txt.j2" %}' in draft.files["templates/requirements.in.j2"]
    assert tomllib.loads(draft.files["lockgen.toml"])["vars"]["dev"] is True


def test_a_shared_file_reaches_every_cell_whose_files_include_it(tmp_path):
    (tmp_path / "requirements_base.txt").write_text("numpy\n")
    (tmp_path / "requirements_cuda.txt").write_text(
        "-r requirements_base.txt\n--extra-index-url https://download.pytorch.org/whl/cu128\n"
        'torch==2.7.1+cu128 ; sys_platform == "linux"\n'
    )
    (tmp_path / "requirements_rocm.txt").write_text(
        "-r requirements_base.txt\n--index-url https://download.pytorch.org/whl/rocm6.3\n"
        'torch==2.7.1+rocm6.3 ; sys_platform == "linux"\n'
    )
    draft = scaffold(tmp_path, Options(**OPTS))
    assert draft.cells == {"requirements_cuda.txt": (("linux", "x86_64", "cu128"),),
                           "requirements_rocm.txt": (("linux", "x86_64", "rocm6.3"),)}  # fmt: skip
    assert "numpy" in draft.files["templates/requirements.in.j2"].splitlines()  # both cells install it


def test_requires_python_and_the_torch_pin_bound_the_python_axis(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "1"\nrequires-python = ">=3.10"\ndependencies = ["torch==2.1.0", "numpy"]\n'
    )
    draft = scaffold(tmp_path, Options(exclude_newer="2026-11-25"))
    assert tomllib.loads(draft.files["lockgen.toml"])["matrix"]["python"] == ["3.10", "3.11"]
    assert any(w.startswith("python 3.10, 3.11: those of 3.10, 3.11, 3.12, 3.13 that pyproject.toml's requires-python "
                            ">=3.10 allows; not 3.12, 3.13: torch==2.1.0") for w in draft.explanation)  # fmt: skip


def test_apple_silicon_takes_the_arm64_branch_of_a_macos_script(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "webui-macos-env.sh").write_text(
        '#!/bin/bash\nif [[ "$(sysctl -n machdep.cpu.brand_string)" =~ ^.*"Intel".*$ ]]; then\n'
        '    export TORCH_COMMAND="pip install torch==2.1.2 torchvision==0.16.2"\nelse\n'
        '    export TORCH_COMMAND="pip install torch==2.3.1 torchvision==0.18.1"\nfi\n'
    )
    draft = scaffold(tmp_path, Options(commands=("webui-macos-env.sh",), **OPTS))
    by_cell = {c: f for f, cells in draft.cells.items() for c in cells}
    assert by_cell[("macos", "aarch64", "mps")] == "requirements.txt + webui-macos-env.sh:5"
    assert by_cell[("macos", "x86_64", "cpu")] == "requirements.txt + webui-macos-env.sh:3"


# -- item 4: installers work from init's output -----------------------------------------------------


def test_detect_fits_the_matrix_and_a_named_cell_needs_no_rules(tmp_path):
    (tmp_path / "requirements_cuda.txt").write_text(
        "--extra-index-url https://download.pytorch.org/whl/cu128\ntorch==2.7.1+cu128\n"
    )
    (tmp_path / "requirements_mac.txt").write_text("torch==2.7.1\n")
    run_ok("init", "-C", str(tmp_path), "--python", "3.12", "--exclude-newer", "2026-11-25")
    detect = config(tmp_path)["detect"]
    assert detect["apple"] == "mps" and detect["nvidia"][0]["backend"] == "cu128"
    run = run_ok("detect", "-C", str(tmp_path), "--os", "linux", "--arch", "x86_64", "--cuda", "12.9", "--json")
    assert json.loads(run.out)["cell"] == "linux-x86_64-cu128-py3.12"
    (tmp_path / "lockgen.toml").write_text((tmp_path / "lockgen.toml").read_text().split("[detect]")[0])
    run = run_ok(
        "detect", "-C", str(tmp_path), "--os", "macos", "--arch", "aarch64", "--cell", "macos-aarch64-mps-py3.12"
    )
    assert run.out.startswith("macos-aarch64-mps-py3.12")


@pytest.mark.parametrize("name", ["ComfyUI", "Fooocus", "ai-toolkit", "sdnext", "stable-diffusion-webui-forge"])
def test_init_runs_on_each_real_project(tmp_path, name):
    """Every real project's files: init writes a config ``lockgen matrix`` accepts, with a
    [detect] table, and lists what it did not carry."""
    import shutil
    from pathlib import Path

    shutil.copytree(Path(__file__).parents[1] / "data" / "realworld" / name, tmp_path / name)
    run = run_cli("init", "-C", str(tmp_path / name), "--python", "3.12", "--exclude-newer", "2026-11-25")
    assert run.code == 0, run.err
    assert "Traceback" not in run.err
    run_ok("matrix", "-C", str(tmp_path / name))
