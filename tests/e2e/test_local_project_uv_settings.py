"""``-e .`` (or ``./sub``) in a template never brings in the project's own uv index settings
unannounced: uv reads the local project's ``[tool.uv.sources]`` (and the ``[[tool.uv.index]]``
they name) when it builds it, so the cell refuses them with the reason before uv runs, naming
each entry, the index URL without its login, and what to do (docs/sources.md)."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli, write_project
from tests.support.fakehost import FakeHost
from tests.support.localprojects import local_project

pytestmark = pytest.mark.uv
CONFIG = """
    index-url = "{url}"
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
UV = """
[tool.uv.sources]
alpha = {{ index = "other" }}
beta = [{{ url = "https://files.example.org/beta-1.0-py3-none-any.whl", marker = "sys_platform == 'linux'" }}]
gamma = {{ workspace = true }}

[[tool.uv.index]]
name = "other"
url = "https://user:s3cret@other.example.org/simple"
explicit = true
"""


@pytest.fixture
def index(tmp_path):
    host = FakeHost(tmp_path / "index")
    host.add("alpha", "1.0")
    host.publish()
    yield host
    host.stop()


@pytest.mark.parametrize("where", ["root", "sub"])
def test_a_local_projects_uv_sources_are_refused_with_the_reason(tmp_path, index, where):
    root = tmp_path / "p"
    folder = root if where == "root" else root / "sub"
    local_project(folder, "app", "0.1", ("alpha",))
    project_text = (folder / "pyproject.toml").read_text() + UV.format()
    config = CONFIG.format(url=index.index_url())
    requirement = "-e .\n" if where == "root" else "-e ./sub\n"
    write_project(root, config, {"requirements.in.j2": requirement})
    if where == "root":
        (root / "pyproject.toml").write_text(project_text + "\n" + (root / "pyproject.toml").read_text())
    else:
        (folder / "pyproject.toml").write_text(project_text)
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    rel = "pyproject.toml" if where == "root" else "sub/pyproject.toml"
    assert "a local project requirement brings its own uv settings, which uv reads when it builds" in run.err
    assert f"{rel}: [tool.uv.sources] alpha = index 'other' (https://other.example.org/simple)" in run.err
    assert f"{rel}: [tool.uv.sources] beta = url 'https://files.example.org/beta-1.0-py3-none-any.whl'" in run.err
    assert "gamma" not in run.err and "s3cret" not in run.err + run.out
    assert "declare each index in lockgen's config as a source" in run.err
    assert not (root / "locks" / "linux-x86_64-cpu-py3.12.txt").exists()


def test_a_local_project_without_uv_sources_locks(tmp_path, index):
    root = tmp_path / "p"
    local_project(root / "sub", "app", "0.1", ("alpha",))
    write_project(root, CONFIG.format(url=index.index_url()), {"requirements.in.j2": "-e ./sub\n"})
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
