"""``lockgen init`` from a ``pyproject.toml`` (issue 20, item 2): extras and PEP 735 groups
that are backend variants become the backend axis, uv's index tables its sources.

The end-to-end test takes InvokeAI's real pyproject.toml (tests/data/realworld/InvokeAI), runs
init, and locks the result against fake hosts serving every package it names: each cell locks
the dependencies and its extra's requirements whose markers hold for the cell, no more and no
fewer, at the versions the extra pins (labels included).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from lockgen.config.load import parse_toml
from lockgen.scaffold import Options, scaffold, write
from tests.conftest import locked_versions, run_cli, run_ok
from tests.initworld import serve, string_requirements

DATA = Path(__file__).parent / "data" / "realworld"


def members(pyproject: dict) -> dict[str, list[str]]:
    """``{draft cell key: requirement strings}``: the dependencies, each extra, each group."""
    project = pyproject.get("project", {})
    found = {"[project].dependencies": []}
    for name, reqs in project.get("optional-dependencies", {}).items():
        found[f"[project.optional-dependencies] {name}"] = list(reqs)
    for name, reqs in pyproject.get("dependency-groups", {}).items():
        found[f"[dependency-groups] {name}"] = [r for r in reqs if isinstance(r, str)]
    return found


def init_and_lock(root: Path, fake_host, python: str, indexes: tuple[str, ...]) -> dict:
    """Init the project at ``root`` for ``python``, lock it against fake hosts and check every
    cell; returns the draft."""
    draft = scaffold(root, Options(pythons=(python,), exclude_newer="2026-11-25"))
    write(root, draft)
    pyproject = parse_toml((root / "pyproject.toml").read_text())
    lists = members(pyproject)
    deps = string_requirements(pyproject.get("project", {}).get("dependencies", []))
    mirrors = serve([*deps, *(w for reqs in lists.values() for w in string_requirements(reqs))], fake_host, indexes)
    rows = json.loads(run_ok("matrix", "--json", "-C", str(root)).out)
    run_ok("all", "-C", str(root), *mirrors)
    by_values = {(row["os"], row["arch"], row["backend"]): row for row in rows}
    assert sum(len(cells) for cells in draft.cells.values()) == len(rows)
    for key, cells in draft.cells.items():
        own = string_requirements(lists[key])
        for cell in cells:
            locked = locked_versions((root / by_values[cell]["lock"]).read_text())
            wanted = [w for w in (*deps, *own) if w.holds(cell[0], cell[1], python)]
            assert set(locked) == {w.name for w in wanted}, (key, cell)
            for w in own:
                if w.spec.startswith("==") and w in wanted:  # the member's exact pins, a label it names too
                    pin, got = Version(w.spec[2:]), Version(locked[w.name])
                    assert got == pin if pin.local else got.public == pin.public, (key, cell, w)
    return {"draft": draft, "rows": rows}


@pytest.mark.slow
def test_invokeai_backend_extras_become_the_backend_axis_and_lock_what_each_names(tmp_path, fake_host):
    """InvokeAI: cpu / cuda / rocm / xpu extras ([tool.uv] conflicts), torch sent per extra and
    marker to four explicit download.pytorch.org indexes; linux aarch64 and macOS take PyPI's torch."""
    root = tmp_path / "InvokeAI"
    shutil.copytree(DATA / "InvokeAI", root)
    indexes = ("whl/cpu", "whl/cu128", "whl/rocm7.1", "whl/xpu")
    result = init_and_lock(root, fake_host, "3.12", indexes)
    assert sorted(r["name"] for r in result["rows"]) == sorted(
        ["linux-x86_64-cpu-py3.12", "linux-x86_64-cu128-py3.12", "linux-x86_64-rocm7.1-py3.12",
         "linux-x86_64-xpu-py3.12", "windows-x86_64-cpu-py3.12", "windows-x86_64-cu128-py3.12",
         "windows-x86_64-xpu-py3.12", "linux-aarch64-cpu-py3.12", "macos-aarch64-mps-py3.12"]
    )  # fmt: skip
    config = (root / "lockgen.toml").read_text()
    assert 'index = "https://download.pytorch.org/whl/{flavor}"' in config
    assert 'vars = {extra = "cuda"}' in config and 'overrides = "overrides.txt.j2"' in config
    explained = "\n".join(result["draft"].explanation)
    for said in ("[tool.uv] conflicts says they cannot be installed together",
                 "[project.optional-dependencies] cuda: backend cu128 on linux x86_64, windows x86_64 ([tool.uv.sources] torch -> index torch-cuda",
                 "linux aarch64: no variant's build holds there", "extras xformers, onnx"):  # fmt: skip
        assert said in explained, explained


GROUPS = """\
[project]
name = "app"
version = "1.0"
requires-python = ">=3.12"
dependencies = ["numpy", "torch>=2.5"]

[dependency-groups]
cpu = ["torch==2.7.1+cpu"]
cu128 = ["torch==2.7.1", "nvidia-ml-py"]
lint = ["ruff"]
dev = [{include-group = "lint"}, "pytest"]

[tool.uv]
conflicts = [[{group = "cpu"}, {group = "cu128"}]]
environments = ["sys_platform == 'linux' and platform_machine == 'x86_64'", "sys_platform == 'darwin'"]
constraint-dependencies = ["numpy<3"]

[tool.uv.sources]
torch = [{ index = "pytorch-cpu", group = "cpu" }, { index = "pytorch-cu128", group = "cu128" }]

[[tool.uv.index]]
name = "pytorch-cpu"
url = "https://download.pytorch.org/whl/cpu"
explicit = true

[[tool.uv.index]]
name = "pytorch-cu128"
url = "https://download.pytorch.org/whl/cu128"
explicit = true
"""


@pytest.mark.slow
def test_dependency_groups_that_are_backends_lock_what_each_group_names(tmp_path, fake_host):
    """PEP 735 groups as the backend variants (a group conflict set, torch sent per group to
    explicit indexes), [tool.uv] environments as the platforms: each cell locks its group's
    packages, torch==2.7.1 from the index uv sends it to (so +cu128)."""
    (tmp_path / "pyproject.toml").write_text(GROUPS)
    result = init_and_lock(tmp_path, fake_host, "3.12", ("whl/cpu", "whl/cu128"))
    assert len(result["rows"]) == 3
    cu128 = locked_versions((tmp_path / "locks" / "linux-x86_64-cu128-py3.12.txt").read_text())
    assert cu128["torch"] == "2.7.1+cu128"


def test_dependency_groups_that_are_backends_make_a_rule_per_group(tmp_path):
    """The same project without uv: the cells, the group each rule selects, the constraints
    template from constraint-dependencies, and the other groups available (dev with its
    included lint group, PEP 735)."""
    (tmp_path / "pyproject.toml").write_text(GROUPS)
    run = run_cli("init", "-C", str(tmp_path), "--python", "3.12", "--exclude-newer", "2026-11-25")
    assert run.code == 0, run.err
    assert "groups lint, dev: not backend variants" in run.err
    template = (tmp_path / "templates" / "requirements.in.j2").read_text()
    assert "project.dependency_groups[group]" in template and "for name in groups" in template
    assert (tmp_path / "templates" / "constraints.txt.j2").read_text().endswith("numpy<3\n")
    rows = json.loads(run_ok("matrix", "--json", "-C", str(tmp_path)).out)
    assert sorted(r["name"] for r in rows) == [
        "linux-x86_64-cpu-py3.12", "linux-x86_64-cu128-py3.12", "macos-aarch64-mps-py3.12"]  # fmt: skip
    config = tmp_path / "lockgen.toml"
    assert 'vars = {extra = "", group = "", groups = []}' not in config.read_text()  # no extras: no extra var
    config.write_text(
        config.read_text().replace('vars = {group = "cu128"}', 'vars = {group = "cu128", groups = ["dev"]}')
    )
    from lockgen.project import Project

    loaded = Project.load(tmp_path)
    texts = {p.cell.name: p.rendered.files["requirements"][1] for p in loaded.plans(loaded.cells)}
    assert "torch==2.7.1\nnvidia-ml-py\n" in texts["linux-x86_64-cu128-py3.12"]
    assert "ruff\npytest" in texts["linux-x86_64-cu128-py3.12"] and "ruff" not in texts["linux-x86_64-cpu-py3.12"]
    assert "torch==2.7.1+cpu" in texts["linux-x86_64-cpu-py3.12"] and "torch==" not in texts["macos-aarch64-mps-py3.12"]


def test_backend_extras_without_uv_tables_take_their_labels_and_the_given_indexes(tmp_path):
    """No [tool.uv] at all: extras named for backends whose pins carry local labels are the
    variants (taken as mutually exclusive, said so); --index gives the index for a label."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "1"\nrequires-python = ">=3.11"\ndependencies = ["pillow"]\n'
        '[project.optional-dependencies]\ncu126 = ["torch==2.7.1+cu126"]\nrocm = ["torch==2.7.1+rocm6.3"]\n'
        'docs = ["sphinx"]\n'
    )
    draft = scaffold(tmp_path, Options(pythons=("3.12",), exclude_newer="2026-11-25",
                                       indexes=("https://download.pytorch.org/whl/cu126",)))  # fmt: skip
    said = "\n".join(draft.explanation)
    assert "no [tool.uv] conflicts declared: init takes them as mutually exclusive" in said
    assert "sources.pytorch: https://download.pytorch.org/whl/{flavor} for torch: the --index URLs" in said
    assert draft.cells["[project.optional-dependencies] cu126"] == (
        ("linux", "x86_64", "cu126"),
        ("windows", "x86_64", "cu126"),
    )
    # no cpu variant: linux and windows get a cpu cell with the dependencies alone, macOS mps
    assert draft.cells["[project].dependencies"] == (("linux", "x86_64", "cpu"), ("windows", "x86_64", "cpu"),
                                                     ("macos", "aarch64", "mps"))  # fmt: skip
    config = draft.files["lockgen.toml"]
    assert 'vars = {extra = "", extras = []}' in config
    assert (
        'match = {os = ["linux", "windows"], arch = "x86_64", backend = "rocm6.3"}\nvars = {extra = "rocm"}' in config
    )


def test_a_conflict_set_without_backends_is_no_axis(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "1"\ndependencies = ["pillow"]\n'
        '[project.optional-dependencies]\nold = ["numpy<2"]\nnew = ["numpy>=2"]\n'
        '[tool.uv]\nconflicts = [[{extra = "old"}, {extra = "new"}]]\n'
    )
    run = run_cli("init", "--dry-run", "-C", str(tmp_path), "--python", "3.12")
    assert run.code == 0, run.err
    assert "old, new: mutually exclusive ([tool.uv] conflicts) but no backend builds" in run.err
    assert 'backend = ["cpu", "mps"]' in run.out  # the dependencies as a requirement file


def test_a_pyproject_without_variants_takes_uvs_index_and_overrides(tmp_path):
    """One backend for every install (a non-explicit uv index, or torch sent to an explicit
    one for every install): the dependencies are composed as one requirement file with that
    index; override-dependencies become the overrides template."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "1"\nrequires-python = ">=3.12"\ndependencies = ["torch", "pillow"]\n'
        '[tool.uv]\noverride-dependencies = ["numpy<2"]\n'
        '[tool.uv.sources]\ntorch = { index = "pytorch" }\n'
        '[[tool.uv.index]]\nname = "pytorch"\nurl = "https://download.pytorch.org/whl/cu126"\nexplicit = true\n'
    )
    draft = scaffold(tmp_path, Options(exclude_newer="2026-11-25"))
    config = draft.files["lockgen.toml"]
    assert 'overrides = "overrides.txt.j2"' in config and 'backend = ["cu126"]' in config  # a GPU build: no macOS
    assert draft.files["templates/overrides.txt.j2"].endswith("numpy<2\n")
    assert 'index = "https://download.pytorch.org/whl/{flavor}"\npackages = ["torch"]' in config
    assert '{{ project.dependencies | join("\\n") }}' in draft.files["templates/requirements.in.j2"]
