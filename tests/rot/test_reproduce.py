"""``lockgen check --resolve``: every cell resolved again into a scratch folder (the recorded uv
and cutoff, no preference for the locked versions), the drift explained per cell (a file deleted,
a yank, a new upload under the cutoff, a page changed), ``locks/`` untouched."""

from __future__ import annotations

import json

import pytest

from lockgen.locks.stamp import STAMP
from tests.conftest import lock_files, run_cli, run_ok, write_project
from tests.support.rotworld import RotHost, json_pages

CELL = "linux-x86_64-cpu-py3.12"


@pytest.fixture
def pypi(tmp_path):
    host = RotHost(tmp_path / "pypi")
    host.add("alpha", "1.0", requires=("beta",))
    host.add("beta", "1.9")
    host.add("beta", "2.0")
    host.add("delta", "0.9")
    host.add("delta", "1.0")
    host.publish()
    json_pages(host)  # upload times (2026-01-01) and yanks come from the JSON pages
    yield host
    host.stop()


@pytest.fixture
def project(pypi, tmp_path, monkeypatch):
    root = write_project(
        tmp_path / "proj",
        f"""
        index-url = "https://pypi.org/simple"
        exclude-newer = "2030-01-01T00:00:00Z"
        [tool.lockgen.mirrors]
        "https://pypi.org/simple" = "{pypi.url}/pypi/simple"
        "https://files.pythonhosted.org" = "{pypi.url}/files"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
        """,
        {"requirements.in.j2": "alpha>=1.0\ndelta\n"},
    )
    monkeypatch.chdir(root)
    run_ok("all")
    return root


def test_an_unchanged_index_reproduces_the_locks(project):
    before = lock_files(project)
    stamp = (project / STAMP).read_bytes()
    done = run_cli("check", "--resolve")
    assert done.code == 0, done.out + done.err
    assert f"{CELL}: reproducible" in done.out
    assert "1 of 1 cell resolves today to their committed locks (fresh locks in .lockgen/reproduce/locks/)" in done.out
    assert lock_files(project) == before and (project / STAMP).read_bytes() == stamp
    assert (project / ".lockgen/reproduce/locks" / f"{CELL}.txt").is_file()
    assert run_ok("all").code == 0 and lock_files(project) == before  # still a no-op


def test_drift_is_explained_per_package(project, pypi):
    before = lock_files(project)
    pypi.add("alpha", "1.1", requires=("beta",))  # a new upload, dated before the cutoff
    pypi.publish()
    (pypi.root / "files" / "delta-1.0-py3-none-any.whl").unlink()  # a file deleted: off its page too
    pypi.sources["pypi"] = [e for e in pypi.sources["pypi"] if e.path.name != "delta-1.0-py3-none-any.whl"]
    pypi.publish()
    for page in ("delta",):
        html = pypi.root / "pypi" / "simple" / page / "index.html"
        html.write_text("\n".join(line for line in html.read_text().splitlines() if "delta-1.0" not in line))
    json_pages(
        pypi,
        yanked={"beta-2.0-py3-none-any.whl": "broken"},
        upload_time={"alpha-1.1-py3-none-any.whl": "2026-06-01T00:00:00Z"},
    )
    done = run_cli("check", "--resolve", "--json")
    assert done.code == 1, done.err
    (cell,) = json.loads(done.out)["cells"]
    assert cell["cell"] == CELL and cell["state"] == "drift"
    why = {c["change"]: c["why"] for c in cell["changes"]}
    assert why["alpha 1.0 → 1.1"] == (
        "a new upload under the cutoff: alpha 1.1 was uploaded 2026-06-01T00:00:00Z, before exclude-newer 2030-01-01T00:00:00Z"
    )
    assert why["beta 2.0 → 1.9 (downgrade)"] == "a yank: beta 2.0 is yanked (broken)"
    assert why["delta 1.0 → 0.9 (downgrade)"] == "a file deleted: no page lists the locked files of delta 1.0 any more"
    assert lock_files(project) == before
    text = run_cli("check", "--resolve").out
    assert f"{CELL}: drift\n" in text and "  beta 2.0 → 1.9 (downgrade): a yank: beta 2.0 is yanked (broken)" in text


def test_a_cell_that_no_longer_resolves_says_why(project, pypi):
    for name in ("delta-1.0-py3-none-any.whl", "delta-0.9-py3-none-any.whl"):
        (pypi.root / "files" / name).unlink()
    pypi.sources["pypi"] = [e for e in pypi.sources["pypi"] if not e.path.name.startswith("delta-")]
    import shutil

    shutil.rmtree(pypi.root / "pypi" / "simple" / "delta")
    done = run_cli("check", "--resolve")
    assert done.code == 1
    assert f"{CELL}: failed" in done.out and "it does not resolve today:" in done.out
    assert "  delta 1.0: a file deleted: no page lists the locked files of delta 1.0 any more" in done.out
