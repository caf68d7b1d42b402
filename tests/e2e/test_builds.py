"""Builds as a cell needs them (issue 17, items 5, 7 and 8): what one cell learns is its own (a
full, a forced and a lone run give the same bytes), every package without a wheel for a cell's
target is named in one run with one ``allow-build`` line to copy, and lockgen's resolutions leave
no ``*.egg-info`` behind in the project."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import lock_files, run_cli, run_ok, write_project

pytestmark = pytest.mark.uv

CELLS = ("linux-x86_64-cpu-py3.11", "linux-x86_64-cpu-py3.12")


def config(index_url: str, extra: str = "") -> str:
    return f"""
        index-url = "{index_url}"
        {extra}
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.11", "3.12"]
    """


@pytest.fixture
def builds_world(index):
    """ext 1.0 has a wheel for CPython 3.12 only, ext 2.0 only an sdist: the 3.11 cell must build
    ext (2.0), the 3.12 cell takes the 1.0 wheel (wheels first, C26). a and b: sdists only."""
    files = [
        index.wheel("files", "ext", "1.0", "cp312-cp312-manylinux_2_28_x86_64"),
        index.sdist("files", "ext", "2.0"),
        index.sdist("files", "a", "1.0"),
        index.sdist("files", "b", "1.0"),
        index.wheel("files", "app", "1.0", requires=("a", "b", "dep")),
        index.wheel("files", "dep", "1.0"),
    ]
    return index.index_page("simple", files)


def cell_files(root: Path, cell: str) -> dict[str, bytes]:
    return {k: v for k, v in lock_files(root).items() if k.startswith(cell)}


def test_a_full_a_forced_and_a_lone_run_give_the_same_bytes(tmp_path, builds_world):
    root = write_project(tmp_path / "p", config(builds_world, 'allow-build = ["ext"]'), {"requirements.in.j2": "ext\n"})
    clean = tmp_path / "clean"
    shutil.copytree(root, clean)
    run_ok("all", "-C", str(root))
    full = lock_files(root)
    assert b"ext==1.0" in full[f"{CELLS[1]}.txt"]  # the 3.12 cell's own wheel, not the 3.11 cell's build
    assert b"ext==2.0" in full[f"{CELLS[0]}.txt"]
    run_ok("all", "-C", str(root), "--force")
    forced = lock_files(root)
    assert {k: v for k, v in forced.items() if k != "manifest.json"} == {
        k: v for k, v in full.items() if k != "manifest.json"
    }
    for cell in CELLS:
        alone = tmp_path / f"alone-{cell}"
        shutil.copytree(clean, alone)
        run_ok("lock", cell, "-C", str(alone))
        assert cell_files(alone, cell) == cell_files(root, cell), cell


def test_every_package_without_a_wheel_is_named_in_one_run(tmp_path, builds_world):
    root = write_project(tmp_path / "p", config(builds_world), {"requirements.in.j2": "app\n"})
    run = run_cli("lock", CELLS[1], "-C", str(root))
    assert run.code == 1
    assert "a, b: no wheel for x86_64-manylinux_2_28 cp312 in any version the requirements allow" in run.err
    assert 'allow-build = ["a", "b"]' in run.err
    text = (
        (root / "pyproject.toml").read_text().replace("[tool.lockgen]\n", '[tool.lockgen]\nallow-build = ["a", "b"]\n')
    )
    (root / "pyproject.toml").write_text(text)  # the line copied: the next run locks
    run_ok("lock", CELLS[1], "-C", str(root))


def test_the_allow_build_line_keeps_what_the_cell_already_allows(tmp_path, builds_world):
    root = write_project(
        tmp_path / "p", config(builds_world, 'allow-build = ["ext"]'), {"requirements.in.j2": "app\next\n"}
    )
    run = run_cli("lock", CELLS[0], "-C", str(root))
    assert run.code == 1
    assert 'allow-build = ["a", "b", "ext"]' in run.err


def test_builds_leave_no_egg_info_in_the_project(tmp_path, pypi):
    """A local setuptools project (``setup.py`` only: dynamic metadata) is built to be locked;
    setuptools writes ``<name>.egg-info`` into its folder, which lockgen removes when the run ends."""
    from tests.support.localproject import setup_py_project, setuptools_wheels

    wheels = setuptools_wheels()
    if wheels is None:
        pytest.skip("needs real setuptools and wheel wheels (CPython's own copies)")
    files = [pypi.wheel("files", "dep", "1.0"), *(Path(shutil.copy(w, pypi.root / "files")) for w in wheels)]
    index = pypi.index("simple", files)
    root = write_project(
        tmp_path / "p", config(index, 'allow-build = ["legacy"]'), {"requirements.in.j2": "legacy @ file:./legacy\n"}
    )
    setup_py_project(root / "legacy", requires=("dep",))
    (root / "legacy" / "old.egg-info").mkdir()  # one the user had: kept
    run_ok("lock", CELLS[0], "-C", str(root))
    assert "legacy" in (root / "locks" / CELLS[0] / "unhashed.txt").read_text()
    assert sorted(p.name for p in (root / "legacy").iterdir()) == [
        "legacy_pkg",
        "old.egg-info",
        "pyproject.toml",
        "setup.py",
    ]


def _runs(monkeypatch) -> list[tuple[str, str]]:
    """Record each uv run of the cells: (wheels-only or building, online or offline)."""
    from lockgen.resolve import pipeline

    seen: list[tuple[str, str]] = []
    real = pipeline._uv

    def spy(run, output, given, **kw):
        if kw.get("fmt") is None and not kw.get("no_deps"):
            build = "building" if run.builds.names & run.plan.allow_build else "wheels-only"
            seen.append((build, "offline" if kw.get("offline") else "online"))
        return real(run, output, given, **kw)

    monkeypatch.setattr(pipeline, "_uv", spy)
    return seen


@pytest.mark.parametrize("change", ["none", "a wheel appears"])
def test_a_build_the_committed_lock_names_gives_the_bytes_of_the_usual_order(tmp_path, index, monkeypatch, change):
    """Issue 24: a cell whose committed lock built a package runs the building resolution first
    online and checks offline that wheels alone cannot resolve; its lock is the usual order's
    byte for byte, also when a wheel of a newer version appeared meanwhile (then the offline
    check cannot tell, and the usual order runs)."""
    from lockgen.resolve import pipeline

    files = [index.sdist("files", "ext", "2.0"), index.wheel("files", "dep", "1.0")]
    url = index.index_page("simple", files)
    root = write_project(tmp_path / "p", config(url, 'allow-build = ["ext"]'), {"requirements.in.j2": "ext\ndep\n"})
    run_ok("lock", CELLS[0], "-C", str(root))
    assert b"ext==2.0" in (root / "locks" / f"{CELLS[0]}.txt").read_bytes()
    if change != "none":
        files.append(index.wheel("files", "ext", "2.1"))
        index.index_page("simple", files)
    usual = tmp_path / "usual"
    shutil.copytree(root, usual)
    seen = _runs(monkeypatch)
    run_ok("lock", CELLS[0], "-C", str(root), "--force")
    hinted = seen[:]
    seen.clear()
    with monkeypatch.context() as m:
        m.setattr(pipeline, "_hinted", lambda *a: None)
        run_ok("lock", CELLS[0], "-C", str(usual), "--force")
    assert lock_files(root) == lock_files(usual)
    if change == "none":
        assert hinted[:2] == [("building", "online"), ("wheels-only", "offline")]
        assert ("wheels-only", "online") not in hinted
    else:
        assert b"ext==2.1" in (root / "locks" / f"{CELLS[0]}.txt").read_bytes()
        assert ("wheels-only", "online") in hinted


def test_an_offline_try_learns_no_build_from_what_it_could_not_read(tmp_path, index):
    """The whole kind of the case above: a build learned from an offline wheel-only failure in
    which uv missed something in its cache is not learned (``uvout.missed_offline``); every cell
    takes the new ext 2.1 wheel, online or offline (wheels first, C26)."""
    files = [index.sdist("files", "ext", "2.0"), index.wheel("files", "dep", "1.0")]
    url = index.index_page("simple", files)
    root = write_project(tmp_path / "p", config(url, 'allow-build = ["ext"]'), {"requirements.in.j2": "ext\n"})
    run_ok("all", "-C", str(root))
    files.append(index.wheel("files", "ext", "2.1"))
    index.index_page("simple", files)
    (root / "templates" / "requirements.in.j2").write_text("ext\ndep\n")
    run_ok("all", "-C", str(root), "-j", "1")  # the second cell tries offline on the first's pages
    for cell in CELLS:
        text = (root / "locks" / f"{cell}.txt").read_bytes()
        assert b"ext==2.1" in text, cell
        assert b"dep==1.0" in text
