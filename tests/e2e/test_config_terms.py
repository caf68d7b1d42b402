"""Messages name the config, never uv's or lockgen's internals (issue 16, item 6): the source, its
index URL and what it does serve; a repeated cause is said once with the packages or cells."""

from __future__ import annotations

import json

import pytest
from packaging.tags import Tag
from packaging.version import Version

from lockgen.index.pages import parse
from lockgen.resolve.offers import versions
from lockgen.resolve.verify import Finding, render
from tests.conftest import run_cli, write_project
from tests.support.faulthost import FaultHost

ROCM = """index-url = "{default}"
use = ["pytorch"]
pins = {{ torch = "2.13.0" }}
pinned = ["torch"]
[tool.lockgen.sources.pytorch]
index = "{backend}"
packages = ["torch"]
labels = {{ torch = "rocm6.2" }}
[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["rocm6.2"]
python = ["3.11", "3.12", "3.13"]
"""


@pytest.mark.uv
def test_an_index_source_without_the_pinned_build_says_what_it_has(tmp_path, pypi: FaultHost):
    default = pypi.index("default/simple", [pypi.wheel("default-files", "app", "1.0", requires=("torch",))])
    backend = pypi.index(
        "whl/rocm6.2",
        [pypi.wheel("torch-files", "torch", "2.12.0+rocm6.2"), pypi.wheel("torch-files", "torch", "2.11.0+rocm6.2")],
    )
    root = write_project(
        tmp_path / "p", ROCM.format(default=default, backend=backend), {"requirements.in.j2": "app\ntorch\n"}
    )
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert (
        f"error: all 3 cells: source 'pytorch' ({backend}) has torch 2.12.0+rocm6.2, 2.11.0+rocm6.2, "
        "not 2.13.0+rocm6.2\n"
    ) in run.err
    assert "torch==2.13.0 is the version the pins give torch (pins.torch in pyproject.toml" in run.err
    manifest = (root / "locks" / "manifest.json").read_text()
    for text in (run.err, manifest):
        assert "lockgen-index-pins" not in text and ".lockgen/" not in text
    reasons = {c["reason"] for c in json.loads(manifest)["cells"].values()}
    assert len(reasons) == 1 and next(iter(reasons)).startswith(
        f"source 'pytorch' ({backend}) has torch 2.12.0+rocm6.2"
    )


def test_pages_are_read_as_file_names():
    html = b'<a href="/whl/torch-2.12.0%2Brocm6.2-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ab">x</a>\n<a href="../t/torch-2.0.tar.gz">t</a>'

    def names(body: bytes, content_type: str) -> list[str]:
        return [f.filename for f in parse(body.decode(), content_type, "https://h/simple/torch/")[0]]

    assert names(html, "text/html") == [
        "torch-2.12.0+rocm6.2-cp312-cp312-manylinux_2_28_x86_64.whl", "torch-2.0.tar.gz",
    ]  # fmt: skip
    body = json.dumps({"files": [{"filename": "torch-2.1.0-py3-none-any.whl", "url": "x"}, {"url": 1}]}).encode()
    assert names(body, "application/vnd.pypi.simple.v1+json") == ["torch-2.1.0-py3-none-any.whl"]
    assert names(b"{not json", "application/json") == []


def test_versions_split_into_what_the_target_can_install_and_the_rest():
    files = [
        "torch-2.12.0+rocm6.2-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.13.0+rocm6.2-cp313-cp313-manylinux_2_28_x86_64.whl",
        "torchvision-0.9-py3-none-any.whl",
        "garbage.whl",
    ]
    supported = frozenset({Tag("cp312", "cp312", "manylinux_2_28_x86_64")})
    assert versions(files, "torch", supported) == ((Version("2.12.0+rocm6.2"),), (Version("2.13.0+rocm6.2"),))


def test_uv_internals_are_put_in_the_config_s_terms(tmp_path):
    from lockgen.resolve.cellrun import CellRun
    from lockgen.resolve.hints import in_config_terms
    from tests.resolve.test_pipeline import cell_run

    run, _ = cell_run(tmp_path, [])
    assert isinstance(run, CellRun)
    work = run.plan.work
    text = (
        "Because there is no version of torch==2.13.0+cu130 and lockgen-index-pins depends on torch==2.13.0+cu130, "
        f"we can conclude that your requirements are unsatisfiable. Failed to parse `{work}/requirements.in`; "
        f"and -c {work}/main-pins.txt"
    )
    assert in_config_terms(run, text) == (
        "Because there is no version of torch==2.13.0+cu130 and you require torch==2.13.0+cu130, we can conclude "
        "that your requirements are unsatisfiable. Failed to parse `templates/requirements.in.j2`; and -c the "
        f"versions of {run.plan.lock}"
    )


def test_a_cause_shared_by_several_packages_is_one_line_naming_them():
    cause = "has no sha256 hash; add {names} to allow-build"
    lines = render([Finding("a", "a 1.0", cause), Finding("b", "b 2.0", cause), Finding("c", "c 1.0", "other")])
    assert lines == ["a 1.0, b 2.0: has no sha256 hash; add a, b to allow-build", "c 1.0: other"]


def test_one_broken_invariant_in_many_packages_is_one_line():
    """15 nvidia packages of CUDA 12 in a CUDA 13 cell: one line naming five and counting the
    rest, with one allow-mix glob to copy; a problem alone keeps its own message."""
    from lockgen.config.model import DEFAULT_BACKENDS
    from lockgen.resolve.invariants import problems
    from lockgen.resolve.invariants import render as render_mix
    from tests.resolve.test_invariants import pkg

    libs = [f"nvidia-lib{i:02d}-cu12==12.8.{i}" for i in range(15)]
    found = problems("cu130", [pkg("torch==2.13.0+cu130"), *map(pkg, libs)], DEFAULT_BACKENDS)
    assert len(found) == 15
    (line,) = render_mix(found)
    assert line.startswith(
        "15 packages (nvidia-lib00-cu12 12.8.0, nvidia-lib01-cu12 12.8.1, nvidia-lib02-cu12 12.8.2, "
        "nvidia-lib03-cu12 12.8.3, nvidia-lib04-cu12 12.8.4 and 10 more): name (nvidia-*-cu{major}) shows cuda 12, "
        "but the cell's backend cu130 is cuda 13.0"
    )
    assert line.endswith('allow-mix = { "nvidia-*" = "why" } (C27)')
    assert len(line) < 600
    (alone,) = render_mix(found[:1])
    assert alone == found[0].message and '"nvidia-lib00-cu12" = "why"' in alone


@pytest.mark.uv
def test_a_hold_back_in_a_cell_with_an_index_source_names_no_internal_project(tmp_path, pypi: FaultHost):
    """``--upgrade-package`` on a package already at its newest, in a cell whose torch comes from an
    index source (lockgen pins it through a generated project): the hold-back says nothing newer
    is on the index, never that ``lockgen-index-pins`` holds it (a fresh-eyes review)."""
    default = pypi.index(
        "default/simple",
        [pypi.wheel("default-files", "app", "1.0", requires=("torch", "urllib3")),
         pypi.wheel("default-files", "urllib3", "2.3.0")],
    )  # fmt: skip
    backend = pypi.index("whl/rocm6.2", [pypi.wheel("torch-files", "torch", "2.13.0+rocm6.2")])
    config = ROCM.replace('"3.11", "3.12", "3.13"', '"3.12"')
    root = write_project(
        tmp_path / "p", config.format(default=default, backend=backend), {"requirements.in.j2": "app\n"}
    )
    assert run_cli("all", "-C", str(root)).code == 0
    run = run_cli("all", "-C", str(root), "--upgrade-package", "urllib3")
    assert run.code == 0, run.err
    assert "lockgen-index-pins" not in run.out + run.err and ".lockgen/" not in run.out + run.err
    assert "urllib3: kept at 2.3.0 in 1 cell, held by nothing newer on the index" in run.err
