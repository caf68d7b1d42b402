"""``lockgen init --commands`` (issue 20, item 2): an installer's torch install commands become
backends, sources, pins and rules; nothing in the script runs.

The end-to-end tests take real installers' commands (sdnext's and forge's extracted
``TORCH_COMMAND`` values, text-generation-webui's ``one_click.py``) with their requirement files,
run init, and lock the result against fake hosts: each cell locks the packages its file names
for the target and the packages its command installs, at the versions the command pins.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from lockgen.scaffold import Options, scaffold, write
from lockgen.scaffold.commands import read_commands
from tests.conftest import locked_versions, run_cli, run_ok
from tests.support.initworld import RUNTIMES, Wanted, command_requirements, file_requirements, serve

DATA = Path(__file__).parents[1] / "data" / "realworld"


def command_packages(root: Path, origin: str) -> list[Wanted]:
    """The packages of the command at ``script:line``, read here from that line: the arguments
    after each ``pip install`` up to a closing quote (or the whole line in a file of arguments);
    for a Python script, whose commands are built from pieces, torch (all one_click.py installs)."""
    script, _, number = origin.rpartition(":")
    if script.endswith(".py"):  # one_click.py, TORCH_VERSION 2.9.1, PYTHON_VERSION 3.13
        if number == "120":
            url = ("https://repo.radeon.com/rocm/manylinux/rocm-rel-7.2/"
                   "torch-2.9.1%2Brocm7.2.0.lw.git7e1940d4-cp313-cp313-linux_x86_64.whl")  # fmt: skip
            return [Wanted("torch", "", None, url)]
        return [Wanted("torch", "==2.9.1", None, None)]
    line = (root / script).read_text().splitlines()[int(number) - 1]
    pieces = re.findall(r"pip install ([^\"';]*)", line) or [line]
    return [w for piece in pieces for w in command_requirements(piece)]


def init_and_lock(root: Path, fake_host, python: str, files: tuple[str, ...], scripts: tuple[str, ...],
                  indexes: tuple[str, ...]) -> dict:  # fmt: skip
    draft = scaffold(root, Options(files=files, commands=scripts, pythons=(python,), exclude_newer="2026-11-25"))
    write(root, draft)
    wanted = [w for f in files for w in file_requirements(root / f.split(":")[0])]
    for key in draft.cells:
        if " + " in key:
            wanted += command_packages(root, key.split(" + ")[1])
    mirrors = serve(wanted, fake_host, indexes)
    rows = json.loads(run_ok("matrix", "--json", "-C", str(root)).out)
    run_ok("all", "-C", str(root), *mirrors)
    by_values = {tuple(row[a] for a in ("os", "arch", "backend", "variant") if a in row): row for row in rows}
    assert sum(len(cells) for cells in draft.cells.values()) == len(rows)
    for key, cells in draft.cells.items():
        base, _, origin = key.partition(" + ")
        command = command_packages(root, origin) if origin else []
        for cell in cells:
            row = by_values[cell]
            locked = locked_versions((root / row["lock"]).read_text())
            names = {w.name for w in file_requirements(root / base) if w.holds(cell[0], cell[1], python)}
            runtime = set(locked) - names - {w.name for w in command}  # PyPI's torch pulls its CUDA runtime on linux
            assert runtime <= RUNTIMES and (not runtime or (cell[:2] == ("linux", "x86_64") and cell[2] != "cpu"))
            assert set(locked) - runtime == names | {w.name for w in command}, (key, row["name"])
            for w in command:
                if w.spec.startswith("=="):
                    pin, got = Version(w.spec[2:]), Version(locked[w.name])
                    assert got == pin if pin.local else got.public == pin.public, (key, row["name"], w)
    return {"draft": draft, "rows": rows}


@pytest.mark.slow
def test_sdnext_torch_commands_become_backends_beside_its_requirements(tmp_path, fake_host):
    """sdnext: one requirements.txt without torch and 23 TORCH_COMMAND values: one backend per
    index (nightlies as <label>_nightly with the label as flavor), a Windows ROCm build from
    direct wheel URLs, directml by its package, PyPI's torch for macOS."""
    root = tmp_path / "sdnext"
    shutil.copytree(DATA / "sdnext", root)
    indexes = ("whl/cu132", "whl/cu118", "whl/rocm7.2", "whl/rocm7.1", "whl/rocm7.0", "whl/rocm6.4", "whl/rocm6.3",
               "whl/rocm6.2.4", "whl/rocm6.1", "whl/rocm6.0", "whl/xpu", "whl/cpu", "whl/nightly/cu132",
               "whl/nightly/rocm7.2", "whl/nightly/rocm7.1", "whl/nightly/xpu")  # fmt: skip
    result = init_and_lock(root, fake_host, "3.12", ("requirements.txt",), ("torch_commands_extracted.txt",), indexes)
    names = {r["name"] for r in result["rows"]}
    assert {"linux-x86_64-cu132_nightly-py3.12", "windows-x86_64-rocm6.4.4-py3.12", "macos-aarch64-mps-py3.12",
            "windows-x86_64-directml-py3.12", "linux-x86_64-cpu-py3.12"} <= names  # fmt: skip
    assert "linux-x86_64-rocm6.4.4-py3.12" not in names  # its wheels are win_amd64
    locked = locked_versions((root / "locks" / "linux-x86_64-cu132_nightly-py3.12.txt").read_text())
    assert locked["torch"].endswith("+cu132")  # from …/whl/nightly/cu132: flavor cu132
    config = (root / "lockgen.toml").read_text()
    assert 'flavor = "cu132"\nprerelease = "allow"' in config
    said = "\n".join(result["draft"].explanation)
    assert (
        "torch_commands_extracted.txt:5: --index-url https://rocm.nightlies.amd.com/{device.therock}: a value init cannot know"
        in said
    )
    assert "torch_commands_extracted.txt:24: unknown: names no index and no torch package" in said


@pytest.mark.slow
def test_forge_commands_and_its_macos_script(tmp_path, fake_host):
    """forge: its TORCH_COMMAND defaults (Python fragments; the ones built from variables are
    skipped and said), the cpu command with a second pip install (torch_npu) in the same value,
    and webui-macos-env.sh, whose name says macOS and whose branches say Intel and Apple silicon."""
    root = tmp_path / "forge"
    shutil.copytree(DATA / "stable-diffusion-webui-forge", root)
    result = init_and_lock(root, fake_host, "3.12", ("requirements_versions.txt",),
                           ("torch_commands_extracted.txt", "webui-macos-env.sh"),
                           ("whl/rocm5.7", "whl/nightly/rocm5.7", "whl/cpu"))  # fmt: skip
    assert sorted(r["name"] for r in result["rows"]) == sorted(
        ["linux-x86_64-rocm5.7_nightly-py3.12", "windows-x86_64-rocm5.7_nightly-py3.12", "linux-x86_64-rocm5.7-py3.12",
         "windows-x86_64-rocm5.7-py3.12", "linux-x86_64-cpu-py3.12", "windows-x86_64-cpu-py3.12",
         "macos-aarch64-mps-py3.12", "macos-x86_64-cpu-py3.12"]
    )  # fmt: skip
    # webui-macos-env.sh: Intel Macs get the `if … Intel` branch, Apple silicon its `else` (PyPI's builds)
    mac = locked_versions((root / "locks" / "macos-aarch64-mps-py3.12.txt").read_text())
    assert mac["torch"] == "2.3.1"
    intel = locked_versions((root / "locks" / "macos-x86_64-cpu-py3.12.txt").read_text())
    assert intel["torch"] == "2.1.2"
    said = "\n".join(result["draft"].explanation)
    assert "{torch_index_url}: a value init cannot know without running the script" in said
    assert "a wheel for none of the target Pythons (3.12)" in said


@pytest.mark.slow
def test_text_generation_webui_one_click_commands_go_with_their_files(tmp_path, fake_host):
    """one_click.py builds each command from pieces (f-strings, +, names, .replace): init works
    them out without running it. cu128 goes with the file for CUDA wheels, the AMD wheel URL
    with the AMD file, cpu with the cpu and Apple files, xpu with the file that names no backend."""
    root = tmp_path / "tgwui"
    shutil.copytree(DATA / "text-generation-webui", root)
    files = tuple(sorted(p.relative_to(root).as_posix() for p in (root / "requirements" / "full").glob("*.txt")))
    result = init_and_lock(root, fake_host, "3.13", files, ("one_click.py",), ("whl/cu128", "whl/cpu", "whl/xpu"))
    keys = set(result["draft"].cells)
    assert "requirements/full/requirements.txt + one_click.py:117" in keys
    assert "requirements/full/requirements_amd.txt + one_click.py:120" in keys
    assert "requirements/full/requirements_nowheels.txt + one_click.py:124" in keys
    lock = {r["name"].rsplit("-", 1)[0] if r["name"].count("-") > 3 else r["name"]: root / r["lock"]
            for r in result["rows"] if "nowheels" not in r["name"]}  # fmt: skip
    assert locked_versions(lock["linux-x86_64-rocm7.2-py3.13"].read_text())["torch"] == "2.9.1+rocm7.2.0.lw.git7e1940d4"
    assert locked_versions(lock["linux-x86_64-cu128-py3.13"].read_text())["torch"] == "2.9.1+cu128"
    assert "torch" not in locked_versions(lock["windows-x86_64-rocm7.2-py3.13"].read_text())  # the AMD wheel is linux's


# -- reading commands (no uv) ----------------------------------------------------------------------


def test_commands_in_a_shell_script_python_and_a_list_of_arguments():
    shell = ('#!/bin/sh\nif [ "$GPU" = nvidia ]; then\n  pip install torch==2.7.1+cu128 \\\n'
             '    --index-url https://download.pytorch.org/whl/cu128\nelse\n'
             '  export TORCH_COMMAND="pip install torch==2.7.1 --index-url https://download.pytorch.org/whl/cpu; pip install onnxruntime"\n'
             'fi\npython -m pip install -r requirements.txt\n')  # fmt: skip
    commands, notes = read_commands("install.sh", shell, ["3.12"])
    assert [(c.origin, c.backend, [ln.text for ln in c.lines]) for c in commands] == [
        ("install.sh:3", "cu128", ["torch==2.7.1+cu128"]),
        ("install.sh:6", "cpu", ["torch==2.7.1", "onnxruntime"]),  # one value, two installs: one variant
    ]
    python = (
        'VERSION = "2.9.1"\nPY = "3.13"\n'
        "def cmd(choice):\n"
        '    base = f"python -m pip install torch=={VERSION} "\n'
        "    tag = f\"cp{PY.replace('.', '')}\"\n"
        '    if choice == "amd":\n'
        '        return f"pip install https://h.example/torch-{VERSION}%2Brocm6.3-{tag}-{tag}-linux_x86_64.whl"\n'
        '    return base + "--index-url https://download.pytorch.org/whl/nightly/cu130 --pre"\n'
        "def later(path):\n"
        '    return f"pip install -r {path}"\n'
    )
    commands, notes = read_commands("setup.py", python, ["3.13"])
    assert [(c.backend, c.flavor, c.prerelease) for c in commands] == [
        (None, None, False), ("rocm6.3", "rocm6.3", False), ("cu130_nightly", "cu130", True)]  # fmt: skip
    assert commands[1].lines[0].text == "torch @ https://h.example/torch-2.9.1%2Brocm6.3-cp313-cp313-linux_x86_64.whl"
    assert notes == []  # -r {path} is no torch install: nothing to say
    listed = "# one per line\ntorch==2.6.0+rocm6.1 --index-url https://download.pytorch.org/whl/rocm6.1\nunknown\n"
    commands, notes = read_commands("torch.txt", listed, ["3.12"])
    assert [c.backend for c in commands] == ["rocm6.1"]
    assert notes == ["torch.txt:3: unknown: names no index and no torch package, so no torch install; skipped"]


def test_a_command_whose_value_comes_from_outside_is_skipped_and_said():
    commands, notes = read_commands("run.sh", 'pip install torch --index-url "$TORCH_INDEX"\n', ["3.12"])
    assert commands == [] and "a value init cannot know without running the script" in notes[0]


def test_init_with_commands_from_the_cli(tmp_path):
    """Commands with one requirement file: a backend and source per index, pins from the
    commands; the file's platforms no cpu command covers get the PyPI command (macOS here)."""
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "install.sh").write_text(
        "pip install torch==2.7.1+cu128 --index-url https://download.pytorch.org/whl/cu128\n"
        "pip install torch==2.7.1+cpu --index-url https://download.pytorch.org/whl/cpu\n"
        "pip install torch==2.7.1\n"
    )
    run = run_cli("init", "-C", str(tmp_path), "--commands", "install.sh", "--python", "3.12")
    assert run.code == 0, run.err
    assert ("requirements.txt + install.sh:3: platforms macos aarch64: install.sh:3 installs PyPI's builds where "
            "no other command of requirements.txt does") in run.err  # fmt: skip
    rows = json.loads(run_ok("matrix", "--json", "-C", str(tmp_path)).out)
    assert sorted(r["name"] for r in rows) == sorted(
        f"{c}-py3.12" for c in ("linux-x86_64-cu128", "windows-x86_64-cu128", "linux-x86_64-cpu", "windows-x86_64-cpu",
                                "macos-aarch64-mps"))  # fmt: skip
    assert 'torch=={{ pins["torch"] }}' in (tmp_path / "templates" / "requirements.in.j2").read_text()
    from lockgen.project import Project

    loaded = Project.load(tmp_path)
    texts = {p.cell.name: p.rendered.files["requirements"][1] for p in loaded.plans(loaded.cells)}
    assert texts["linux-x86_64-cu128-py3.12"].split() == ["numpy", "torch==2.7.1+cu128"]
    assert texts["macos-aarch64-mps-py3.12"].split() == ["numpy", "torch==2.7.1"]


def test_commands_alone_make_a_config(tmp_path):
    (tmp_path / "install.sh").write_text(
        "pip install torch==2.7.1+cu128 --index-url https://download.pytorch.org/whl/cu128\npip install torch==2.7.1\n"
    )
    draft = scaffold(tmp_path, Options(commands=("install.sh",), pythons=("3.12",), exclude_newer="2026-11-25"))
    assert draft.cells == {
        "install.sh:1": (("linux", "x86_64", "cu128"), ("windows", "x86_64", "cu128")),
        "install.sh:2": (("linux", "x86_64", "cu126"), ("windows", "x86_64", "cpu"), ("macos", "aarch64", "mps")),
    }  # PyPI's linux torch 2.7.1 is the CUDA 12.6 build: the installer's default gives linux CUDA


def test_a_script_outside_the_project_or_not_text_is_refused(tmp_path):
    (tmp_path / "requirements.txt").write_text("-r ../elsewhere.txt\n")
    run = run_cli("init", "--dry-run", "-C", str(tmp_path))
    assert run.code == 2 and "requirements.txt:1: -r ../elsewhere.txt names a file outside the project" in run.err
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "install.bat").write_bytes(b"pip install torch \xff\n")
    run = run_cli("init", "--dry-run", "-C", str(tmp_path), "--commands", "install.bat")
    assert run.code == 2 and "install.bat: not UTF-8 text" in run.err
    run = run_cli("init", "--dry-run", "-C", str(tmp_path), "--commands", "../install.sh")
    assert run.code == 2 and "../install.sh: name a file inside the project" in run.err
