"""A cpu cell that still pulls CUDA packages fails naming the requirement that pulled them in
and the two ways out, and ``lockgen why NAME --cell CELL`` answers from the resolution that was
refused (kept in the cell's work folder, never in the locks folder). PyPI's linux torch is the
CUDA build: it requires the CUDA runtime packages (``nvidia-cublas``, ``cuda-toolkit``), as the
fake torch here does (docs/layers-labels-builds.md, "Backend invariants")."""

from __future__ import annotations

import pytest

from lockgen.resolve.pipeline import refused_path
from tests.conftest import one_cell, run_cli, run_ok
from tests.support.fakehost import FakeHost

pytestmark = pytest.mark.uv
CELL = "linux-x86_64-cpu-py3.12"


@pytest.fixture
def project(tmp_path):
    index = FakeHost(tmp_path / "index")
    index.add(
        "torch", "2.13.0", "cp312-cp312-manylinux_2_28_x86_64",
        requires=(
            "nvidia-cublas==13.1.0.3; platform_system == 'Linux'",
            "cuda-toolkit[cublas]==13.0.2; platform_system == 'Linux'", "filelock",
        ),
    )  # fmt: skip
    index.add("nvidia-cublas", "13.1.0.3", "py3-none-manylinux_2_27_x86_64")
    index.add("cuda-toolkit", "13.0.2", requires=("nvidia-cublas==13.*; extra == 'cublas'",))
    index.add("filelock", "3.0")
    index.add("app", "1.0", requires=("torch",))
    index.publish()
    yield index
    index.stop()


def test_the_failure_names_torch_and_the_two_ways_out(tmp_path, project):
    root = one_cell(tmp_path / "p", project.index_url(), "app\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    said = " ".join(run.err.split())
    assert (
        "torch 2.13.0 pulls in cuda-toolkit, nvidia-cublas: the torch it locks is a cuda build, not a cpu one "
        "(PyPI's linux torch is the CUDA build)"
    ) in said, said
    assert 'give the cell a CPU index for torch (a source with index = "https://download.pytorch.org/whl/cpu"' in said
    assert "or label the backend as the cuda build it is" in said
    assert not (root / "locks" / f"{CELL}.txt").exists()
    assert (root / refused_path_of(root)).is_file()
    why = run_cli("why", "nvidia-cublas", "--cell", CELL, "-C", str(root))
    assert why.code == 0, why.err
    assert "nvidia-cublas 13.1.0.3 [in the resolution the last run refused: the cell failed" in why.out
    assert "templates/requirements.in.j2:1 `app` → app → torch → nvidia-cublas" in why.out
    # declared intended: the cell locks, the refused resolution is gone, why answers from the lock
    config = root / "pyproject.toml"
    config.write_text(
        config.read_text().replace(
            "[tool.lockgen.matrix]",
            'allow-mix = { "nvidia-*" = "test", "cuda-toolkit" = "test" }\n[tool.lockgen.matrix]',
        )
    )
    run_ok("all", "-C", str(root))
    assert not (root / refused_path_of(root)).exists()
    why = run_cli("why", "nvidia-cublas", CELL, "-C", str(root))
    assert why.code == 0 and "refused" not in why.out and "→ torch → nvidia-cublas" in why.out


def refused_path_of(root):
    from lockgen.project import Project

    project = Project.load(root)
    (plan,) = project.plans([project.cell(CELL)])
    return refused_path(plan)
