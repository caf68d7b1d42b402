"""``lockgen bump`` finds what binds and keeps each line's meaning (issue 18, items 1 and 2), on the
fake index with the real uv: marker-split template pins (only the line the new version fits
moves), a labelled pin (its label stays), the binding template literal beside a config pin no
template reads, ``[project]`` dependencies and optional dependencies."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import lock_files, locked_versions, run_cli, run_ok, write_project

MATRIX = """
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.11", "3.12"]
"""
OLD, NEW = "linux-x86_64-cpu-py3.11", "linux-x86_64-cpu-py3.12"


def versions(root: Path, cell: str) -> dict[str, str]:
    return locked_versions((root / "locks" / f"{cell}.txt").read_text())


def project_files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".lockgen" not in p.relative_to(root).parts
    }


def test_only_the_line_the_new_version_fits_moves(tmp_path, index):
    """numpy 2.2.0 needs Python 3.12: the old-Python line keeps 1.26.4, and its cell still locks."""
    index.add("numpy", "1.26.4")
    index.add("numpy", "2.1.0", requires_python=">=3.12")
    index.publish()
    template = 'numpy==1.26.4; python_version < "3.12"  # old Pythons\nnumpy==2.1.0; python_version >= "3.12"\n'
    root = write_project(
        tmp_path / "p", f'index-url = "{index.index_url()}"\n' + MATRIX, {"requirements.in.j2": template}
    )
    run_ok("all", "-C", str(root))
    index.add("numpy", "2.2.0", requires_python=">=3.12")
    index.publish()
    run = run_ok("bump", "numpy==2.2.0", "-C", str(root))
    assert (root / "templates" / "requirements.in.j2").read_text() == template.replace("2.1.0", "2.2.0")
    assert (
        'templates/requirements.in.j2:1: numpy==1.26.4; python_version < "3.12": kept (2.2.0 fits none of its cells: '
        f"{OLD})"
    ) in run.err
    assert "templates/requirements.in.j2:2: numpy 2.1.0 -> 2.2.0" in run.err
    assert versions(root, NEW)["numpy"] == "2.2.0"
    assert versions(root, OLD)["numpy"] == "1.26.4"  # re-locked (its rendered inputs changed), still resolvable
    assert run_cli("check", "-C", str(root)).code == 0


def test_a_version_both_lines_fit_is_refused_and_a_marker_chooses(tmp_path, index):
    for version in ("1.26.4", "2.1.0", "2.2.0"):
        index.add("numpy", version)
    index.publish()
    template = 'numpy==1.26.4; python_version < "3.12"\nnumpy==2.1.0; python_version >= "3.12"\n'
    root = write_project(
        tmp_path / "p", f'index-url = "{index.index_url()}"\n' + MATRIX, {"requirements.in.j2": template}
    )
    run_ok("all", "-C", str(root))
    before = project_files(root)
    run = run_cli("bump", "numpy==2.2.0", "-C", str(root))
    assert run.code == 2
    assert "bump cannot tell which lines it is meant for" in run.err
    assert "templates/requirements.in.j2:1 'numpy==1.26.4; python_version < \"3.12\"'" in run.err
    assert "nothing was written" in run.err
    assert project_files(root) == before
    run_ok("bump", 'numpy==2.2.0; python_version >= "3.12"', "-C", str(root))
    assert (root / "templates" / "requirements.in.j2").read_text() == template.replace("2.1.0", "2.2.0")
    assert versions(root, NEW)["numpy"] == "2.2.0" and versions(root, OLD)["numpy"] == "1.26.4"


def test_a_labelled_pin_keeps_its_label(tmp_path, index):
    """``alpha==1.0+cpu``: bumped to 1.1 it stays the +cpu build, never the +cu130 one."""
    for version in ("1.0+cpu", "1.1+cpu", "1.1+cu130"):
        index.add("alpha", version, source="builds")
    index.add("beta", "1.0")
    index.publish()
    config = f'index-url = "{index.index_url()}"\nfind-links = {{ builds = ["{index.flat_url("builds")}"] }}\n' + MATRIX
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "alpha==1.0+cpu  # the CPU build\nbeta\n"})
    run_ok("all", "-C", str(root))
    run_ok("bump", "alpha==1.1", "-C", str(root))
    assert (root / "templates" / "requirements.in.j2").read_text() == "alpha==1.1+cpu  # the CPU build\nbeta\n"
    assert versions(root, NEW)["alpha"] == "1.1+cpu"


def test_the_binding_template_literal_moves_and_the_unread_config_pin_is_named(tmp_path, index):
    """issue 18: the config pin is read by no template, the template pins beta literally: both move,
    the config pin is reported as read by no template, and the locks move (exit 0)."""
    for version in ("1.0", "1.1"):
        index.add("beta", version)
    index.publish()
    config = f'index-url = "{index.index_url()}"\npins = {{ beta = "1.0" }}\n' + MATRIX
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "beta==1.0\n"})
    run_ok("all", "-C", str(root))
    run = run_ok("bump", "beta==1.1", "-C", str(root))
    assert (
        "pyproject.toml: tool.lockgen.pins.beta: 1.0 -> 1.1 (read by no template: no cell's inputs change with it)"
        in run.err
    )
    assert "templates/requirements.in.j2:1: beta 1.0 -> 1.1" in run.err
    assert 'beta = "1.1"' in (root / "pyproject.toml").read_text()
    assert versions(root, OLD)["beta"] == versions(root, NEW)["beta"] == "1.1"


PROJECT_TABLE = """\
[project]
name = "app"
version = "1.0"
dependencies = [
    "alpha==1.0",  # the app's own pin
]
[project.optional-dependencies]
extra = ['beta==1.0; python_version >= "3.12"']

"""


@pytest.mark.parametrize("config_file", ["pyproject.toml", "lockgen.toml"])
def test_project_dependencies_and_extras_are_bumped(tmp_path, index, config_file):
    for name in ("alpha", "beta"):
        for version in ("1.0", "1.1"):
            index.add(name, version)
    index.publish()
    template = '{{ project.dependencies | join("\\n") }}\n{{ project.optional_dependencies["extra"] | join("\\n") }}\n'
    lockgen = f'index-url = "{index.index_url()}"\n' + textwrap.dedent(MATRIX)
    root = tmp_path / "p"
    write_project(root, lockgen, {"requirements.in.j2": template}, name=config_file)
    pyproject = root / "pyproject.toml"
    if config_file == "pyproject.toml":
        pyproject.write_text(PROJECT_TABLE + pyproject.read_text())
    else:
        (root / "lockgen.toml").write_text(textwrap.dedent(lockgen).replace("[tool.lockgen.matrix]", "[matrix]"))
        pyproject.write_text(PROJECT_TABLE)
    run_ok("all", "-C", str(root))
    before = pyproject.read_text()
    run = run_ok("bump", "alpha==1.1", "beta==1.1", "-C", str(root))
    assert pyproject.read_text() == before.replace('"alpha==1.0"', '"alpha==1.1"').replace("'beta==1.0;", "'beta==1.1;")
    assert "pyproject.toml: project.dependencies[0]: alpha 1.0 -> 1.1" in run.err
    assert "pyproject.toml: project.optional-dependencies.extra[0]: beta 1.0 -> 1.1" in run.err
    assert versions(root, NEW) == {"alpha": "1.1", "beta": "1.1"}
    assert versions(root, OLD) == {"alpha": "1.1"}
    assert run_cli("check", "-C", str(root)).code == 0


def test_a_dependency_group_is_found_and_bumped_with_the_rest(tmp_path, index):
    """A PEP 735 group names the package too: it moves with the binding pins."""
    for version in ("1.0", "1.1"):
        index.add("alpha", version)
    index.publish()
    config = f'index-url = "{index.index_url()}"\n' + MATRIX
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": '{{ project.dependencies | join("\\n") }}\n'})
    pyproject = root / "pyproject.toml"
    groups = '[dependency-groups]\ntest = ["alpha==1.0", { include-group = "lint" }]\nlint = []\n\n'
    pyproject.write_text(PROJECT_TABLE + groups + pyproject.read_text())
    run_ok("all", "-C", str(root))
    run = run_ok("bump", "alpha==1.1", "-C", str(root))
    assert "pyproject.toml: dependency-groups.test[0]: alpha 1.0 -> 1.1" in run.err
    assert 'test = ["alpha==1.1", { include-group = "lint" }]' in pyproject.read_text()
    assert versions(root, NEW)["alpha"] == "1.1"
    files = lock_files(root)
    assert f"{NEW}.txt" in files
