"""A version whose files all need another Python is reported as that, naming the version, the
Pythons its wheels serve and the cell's Python, with the ways out that keep wheels, not as "add
allow-build" (docs/layers-labels-builds.md, "Builds"): on day one that is a pin made for older
Pythons in a cell of a newer one (numpy==1.26.4 in a Python 3.13 cell), with an sdist beside."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli, write_project
from tests.support.fakehost import FakeHost

pytestmark = pytest.mark.uv


def _project(tmp_path, files, requirement: str):
    index = FakeHost(tmp_path / "index")
    url = index.index_page("simple", files(index))
    config = f"""
        index-url = "{url}"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
    """
    return index, write_project(tmp_path / "p", config, {"requirements.in.j2": requirement})


def test_a_pin_whose_wheels_serve_other_pythons_says_so(tmp_path):
    def files(index):
        return [
            index.wheel("files", "numpy", "1.26.4", f"cp{v}-cp{v}-manylinux_2_17_x86_64.manylinux2014_x86_64")
            for v in ("310", "311")
        ] + [
            index.wheel("files", "numpy", "2.3.5", "cp312-cp312-manylinux_2_28_x86_64"),
            index.sdist("files", "numpy", "1.26.4"),
        ]

    index, root = _project(tmp_path, files, "numpy==1.26.4\n")
    try:
        run = run_cli("all", "-C", str(root))
    finally:
        index.stop()
    assert run.code == 1
    said = " ".join(run.err.split())
    assert (
        "cell linux-x86_64-cpu-py3.12: numpy 1.26.4 has wheels for CPython 3.10, 3.11 only, and this cell's Python "
        "is 3.12 (cp312): give the cell a Python those wheels serve (the matrix's python values), or require a "
        'version of numpy with a cp312 wheel; building from source is the last resort (allow-build = ["numpy"]'
    ) in said, said


def test_a_package_with_no_wheel_at_all_still_gets_the_allow_build_line(tmp_path):
    index, root = _project(tmp_path, lambda index: [index.sdist("files", "a", "1.0")], "a\n")
    try:
        run = run_cli("all", "-C", str(root))
    finally:
        index.stop()
    assert run.code == 1
    said = " ".join(run.err.split())
    assert "a: no wheel for x86_64-manylinux_2_28 cp312 in any version the requirements allow" in said
    assert 'copy into the cell\'s settings: allow-build = ["a"]' in said and "CPython" not in said
