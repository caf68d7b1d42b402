"""Templates take the project's ``[project].dependencies`` and optional-dependency groups
(issue 9, item 6): the dependency list lives in one place."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lockgen.config import load_config
from lockgen.project import Project
from lockgen.runtime.errors import ConfigError, TemplateError
from tests.conftest import run_cli, write_project

MATRIX = """
[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cpu", "cu128"]
python = ["3.12"]
[[tool.lockgen.rules]]
match = { backend = "cu128" }
vars = { extra = "cuda" }
[[tool.lockgen.rules]]
match = { backend = "cpu" }
vars = { extra = "cpu" }
"""
PROJECT = """
[project]
name = "app"
version = "1.0"
requires-python = ">=3.11"
dependencies = [
  "numpy<2",
  "pillow; sys_platform != 'darwin'",
]
[project.optional-dependencies]
cuda = ["torch==2.7.1+cu128"]
cpu = ["torch==2.7.1+cpu"]
"onnx-cuda" = ["onnxruntime-gpu"]
"""
TEMPLATE = """\
{{ project.dependencies | join("\\n") }}
{{ project.optional_dependencies[extra] | join("\\n") }}
# {{ project.name }} {{ project.version }} {{ project.requires_python }}
"""


def pyproject(root: Path, project: str = PROJECT, lockgen: str = MATRIX, template: str = TEMPLATE) -> Path:
    """A pyproject.toml holding both the project's metadata and ``[tool.lockgen]``."""
    root.mkdir(parents=True, exist_ok=True)
    body = textwrap.dedent(lockgen).strip().replace("[tool.lockgen.", "[tool.lockgen.")
    (root / "pyproject.toml").write_text(textwrap.dedent(project).strip() + "\n[tool.lockgen]\n" + body + "\n")
    (root / "templates").mkdir(exist_ok=True)
    (root / "templates" / "requirements.in.j2").write_text(template)
    return root


def rendered(root: Path, config: str | None = None) -> dict[str, str]:
    project = Project.load(root, config)
    return {p.cell.name: p.rendered.files["requirements"][1] for p in project.plans(project.cells)}


def test_templates_see_dependencies_and_optional_groups_of_the_configs_own_pyproject(tmp_path):
    texts = rendered(pyproject(tmp_path))
    assert (
        texts["linux-x86_64-cu128-py3.12"]
        == "numpy<2\npillow; sys_platform != 'darwin'\ntorch==2.7.1+cu128\n# app 1.0 >=3.11\n"
    )
    assert "torch==2.7.1+cpu" in texts["linux-x86_64-cpu-py3.12"]


def test_a_lockgen_toml_reads_the_pyproject_beside_it_or_the_one_it_names(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    write_project(tmp_path, MATRIX.replace("tool.lockgen.", ""), {"requirements.in.j2": TEMPLATE}, name="lockgen.toml")
    assert "numpy<2" in rendered(tmp_path)["linux-x86_64-cpu-py3.12"]
    (tmp_path / "app").mkdir()
    (tmp_path / "pyproject.toml").rename(tmp_path / "app" / "pyproject.toml")
    write_project(
        tmp_path, 'project = "app/pyproject.toml"\n' + MATRIX.replace("tool.lockgen.", ""), {}, name="lockgen.toml"
    )
    assert "numpy<2" in rendered(tmp_path)["linux-x86_64-cpu-py3.12"]


def test_without_a_project_table_the_variable_is_undefined(tmp_path):
    write_project(tmp_path, MATRIX, {"requirements.in.j2": TEMPLATE})  # pyproject.toml with [tool.lockgen] only
    with pytest.raises(TemplateError, match=r"templates/requirements.in.j2:1: 'project' is undefined"):
        rendered(tmp_path)


def test_a_changed_dependency_list_changes_the_input_hash(tmp_path):
    root = pyproject(tmp_path)
    before = {p.cell.name: p.input_hash for p in Project.load(root).plans(Project.load(root).cells)}
    pyproject(tmp_path, PROJECT.replace('"numpy<2"', '"numpy<3"'))
    after = {p.cell.name: p.input_hash for p in Project.load(root).plans(Project.load(root).cells)}
    assert all(before[name] != after[name] for name in before)


@pytest.mark.parametrize(
    ("project", "setting", "problem"),
    [
        (PROJECT.replace('"numpy<2"', '"numpy <<2"'), None, "project: pyproject.toml: project.dependencies[0]: 'numpy <<2' is not a requirement"),
        ('[project]\nname = "app"\ndynamic = ["dependencies"]\n', "pyproject.toml", None),
        (PROJECT, "missing/pyproject.toml", "project: missing/pyproject.toml: no such file"),
        (PROJECT, "../pyproject.toml", "project: '../pyproject.toml' must be the path of a pyproject.toml inside the project"),
        ('[tool.other]\nx = 1\n', "other.toml", "project: other.toml: has no [project] table"),
        ('[project]\nname = "app"\noptional-dependencies = { cuda = "torch" }\n', None,
         "project: pyproject.toml: project.optional-dependencies.cuda must be a list of requirement strings"),
    ],
    ids=["bad-requirement", "dynamic", "missing-file", "outside", "no-project-table", "group-not-a-list"],
)  # fmt: skip
def test_the_project_file_is_checked(tmp_path, project, setting, problem):
    (tmp_path / ("other.toml" if setting == "other.toml" else "pyproject.toml")).write_text(project)
    config = (f'project = "{setting}"\n' if setting else "") + MATRIX.replace("tool.lockgen.", "")
    write_project(tmp_path, config, {"requirements.in.j2": TEMPLATE}, name="lockgen.toml")
    if problem is None:  # dynamic lists are not read: a template that uses one fails naming it
        with pytest.raises(TemplateError, match="has no attribute 'dependencies'"):
            rendered(tmp_path)
        return
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "lockgen.toml")
    assert any(p.startswith(problem) for p in info.value.messages), info.value.messages


def test_a_changed_separate_project_file_is_not_a_noop(tmp_path, fake_host):
    """The no-op stamp covers the project file when it is not the config file."""
    pypi = fake_host("pypi")
    files = [
        pypi.wheel("files", n, v)
        for n, v in [("numpy", "1.26.0"), ("numpy", "2.0.0"), ("pillow", "11.0"), ("torch", "2.7.1+cpu")]
    ]
    pypi.index_page("simple", files, upload_time="2026-01-01T00:00:00Z")
    mirrors = f'[mirrors]\n"https://pypi.org/simple" = "{pypi.url}/simple"\n"https://files.pythonhosted.org" = "{pypi.url}/files"\n'
    root = tmp_path / "p"
    (root / "app").mkdir(parents=True)
    (root / "app" / "pyproject.toml").write_text(PROJECT)
    matrix = '[matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n'
    config = 'project = "app/pyproject.toml"\nvars = { extra = "cpu" }\n' + mirrors + matrix
    write_project(root, config, {"requirements.in.j2": TEMPLATE}, name="lockgen.toml")
    first = run_cli("all", "-C", str(root))
    assert first.code == 0, first.err
    assert "numpy==1.26.0" in (root / "locks" / "linux-x86_64-cpu-py3.12.txt").read_text()
    assert "1 up to date" in run_cli("all", "-C", str(root)).err
    (root / "app" / "pyproject.toml").write_text(PROJECT.replace('"numpy<2"', '"numpy>=2"'))
    assert run_cli("check", "-C", str(root)).code == 1
    again = run_cli("all", "-C", str(root))
    assert again.code == 0, again.err
    assert "numpy==2.0.0" in (root / "locks" / "linux-x86_64-cpu-py3.12.txt").read_text()


# -- PEP 735 dependency groups (issue 20, item 6) -------------------------------------------------

GROUPS = """
[dependency-groups]
test = ["pytest>=8", {include-group = "Lint_Tools"}, "coverage"]
lint-tools = ["ruff"]
all = [{include-group = "test"}, {include-group = "lint-tools"}, "mypy; python_version >= '3.11'"]
"""


def test_templates_see_dependency_groups_with_includes_expanded(tmp_path):
    """PEP 735: an ``include-group`` entry is replaced in place by the named group's entries
    (expanded in turn); names compare normalized (``Lint_Tools`` is ``lint-tools``)."""
    template = '{{ project.dependency_groups["all"] | join("\\n") }}\n{{ project.dependencies | join("\\n") }}\n'
    texts = rendered(pyproject(tmp_path, PROJECT + GROUPS, template=template))
    assert texts["linux-x86_64-cpu-py3.12"] == (
        "pytest>=8\nruff\ncoverage\nruff\nmypy; python_version >= '3.11'\nnumpy<2\npillow; sys_platform != 'darwin'\n"
    )


def test_dependency_groups_need_no_project_table(tmp_path):
    """A pyproject.toml of a project that is no package: ``[dependency-groups]`` without ``[project]``."""
    template = '{{ project.dependency_groups.test | join("\\n") }}\n'
    texts = rendered(pyproject(tmp_path, GROUPS, template=template))
    assert texts["linux-x86_64-cpu-py3.12"] == "pytest>=8\nruff\ncoverage\n"


@pytest.mark.parametrize(
    ("groups", "problem"),
    [
        ('a = [{include-group = "b"}]\nb = [{include-group = "a"}]\n',
         "project: pyproject.toml: dependency-groups.b[0]: include-group 'a' makes a cycle (a -> b -> a)"),
        ('a = ["x", {include-group = "a"}]\n',
         "project: pyproject.toml: dependency-groups.a[1]: include-group 'a' makes a cycle (a -> a)"),
        ('a = [{include-group = "missing"}]\n',
         "project: pyproject.toml: dependency-groups.a[0]: include-group 'missing' names no group of [dependency-groups] (groups: a)"),
        ('a = ["numpy <<2"]\n', "project: pyproject.toml: dependency-groups.a[0]: 'numpy <<2' is not a requirement"),
        ('a = [{include = "b"}]\n', "project: pyproject.toml: dependency-groups.a[0]: {'include': 'b'} is neither"),
        ('a = "x"\n', "project: pyproject.toml: dependency-groups.a must be a list"),
        ('A_b = ["x"]\na-B = ["y"]\n', "project: pyproject.toml: dependency-groups.a-B: the same group as 'A_b'"),
        ('"-bad" = ["x"]\n', "project: pyproject.toml: dependency-groups.-bad: not a valid group name"),
    ],
    ids=["cycle", "self-include", "unknown", "bad-requirement", "bad-entry", "not-a-list", "same-normalized", "bad-name"],
)  # fmt: skip
def test_bad_dependency_groups_are_config_errors_with_the_key_path(tmp_path, groups, problem):
    (tmp_path / "pyproject.toml").write_text(PROJECT + "\n[dependency-groups]\n" + groups)
    write_project(tmp_path, MATRIX.replace("tool.lockgen.", ""), {"requirements.in.j2": TEMPLATE}, name="lockgen.toml")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "lockgen.toml")
    assert any(p.startswith(problem) for p in info.value.messages), info.value.messages
