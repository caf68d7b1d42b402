"""Trust (issue 8), part 2, the sources: unreachable hosts (C28), fresh pages under ``--force`` and
hashes checked against their files. End to end against fake hosts and the real uv; the helpers are
tests/e2e/test_trust.py's."""

from __future__ import annotations

import pytest

from tests.conftest import locked_versions, run_cli
from tests.e2e.test_trust import CELL, ONE, manifest, no_uv, project, publish
from tests.support.faulthost import UNRESOLVABLE, FaultHost, refusing_url

pytestmark = pytest.mark.uv  # these tests lock with the real uv


# ------------------------------------------------------------------ C28: unreachable hosts

SIX = 'os = ["linux", "windows"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.11", "3.12", "3.13"]'
VENDOR = """use = ["vendor"]
[tool.lockgen.sources.vendor]
find-links = "https://vendor.example/wheels/"
packages = ["vpkg"]
[tool.lockgen.mirrors]
"https://vendor.example" = "{mirror}"
"""


def test_c28_a_refused_host_fails_its_cells_at_once_with_one_message(tmp_path, pypi, monkeypatch):
    index = publish(pypi, ("app", "1.0", ("vpkg",)))
    no_uv(monkeypatch)  # the probe decides: no uv process, so no retries
    with refusing_url() as down:
        root = project(tmp_path / "p", index, "app\n", extra=VENDOR.format(mirror=down), matrix=SIX)
        run = run_cli("all", "-C", str(root))
    assert run.code == 1
    errors = [line for line in run.err.splitlines() if line.startswith("error:")]
    cells = [f"{os}-x86_64-cpu-py{py}" for os in ("linux", "windows") for py in ("3.11", "3.12", "3.13")]
    assert errors == [
        "error: all 6 cells: https://vendor.example is unreachable through its mirror (connection refused); "
        "no uv process was started. Check that the mirror is up, or point it elsewhere: --mirror https://vendor.example=<mirror URL>"
    ]
    assert "127.0.0.1" not in run.err.replace(pypi.url, "")  # the mirror's address is not a fact about the project
    reasons = {entry["reason"] for entry in manifest(root).values()}
    # the same one-line reason for every cell, without the cell names (the manifest is keyed by cell)
    assert reasons == {errors[0].removeprefix("error: all 6 cells: ")}
    assert set(manifest(root)) == set(cells)


def test_c28_a_host_whose_name_does_not_resolve(tmp_path, pypi, monkeypatch):
    index = publish(pypi, ("app", "1.0", ("vpkg",)))
    no_uv(monkeypatch)
    extra = VENDOR.replace("https://vendor.example", UNRESOLVABLE).split("[tool.lockgen.mirrors]")[0]
    root = project(tmp_path / "p", index, "app\n", extra=extra, matrix=SIX)
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    (error,) = [line for line in run.err.splitlines() if line.startswith("error:")]
    assert f"{UNRESOLVABLE} is unreachable (its name does not resolve)" in error
    assert f"--mirror {UNRESOLVABLE}=<mirror URL>" in error
    assert error.startswith("error: all 6 cells: ")


@pytest.mark.parametrize("line", ["git+{host}/o/r.git@c943837", "r @ git+{host}/o/r.git@c943837"])
def test_c28_a_vcs_url_on_a_host_that_does_not_resolve_fails_at_once(tmp_path, pypi, monkeypatch, line):
    """ai-toolkit's ``git+https://github.com/huggingface/diffusers.git@…`` line where github.com
    cannot be reached: the probe connects to the host behind the ``git+`` prefix, so no uv
    process clones it (uv's git fetch fails per cell, after its retries)."""
    index = publish(pypi, ("app", "1.0", ()))
    no_uv(monkeypatch)
    root = project(tmp_path / "p", index, "app\n" + line.format(host=UNRESOLVABLE) + "\n", matrix=SIX)
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    (error,) = [ln for ln in run.err.splitlines() if ln.startswith("error:")]
    assert error.startswith(f"error: all 6 cells: {UNRESOLVABLE} is unreachable (its name does not resolve); ")


def test_c28_an_unreachable_optional_source_is_a_settled_state(tmp_path, pypi, monkeypatch):
    index = publish(pypi, "app==1.0")
    vendor = FaultHost(tmp_path / "vendor")
    try:
        vendor.flat("wheels", [vendor.wheel("wheels", "vpkg", "1.0")])
        with refusing_url() as down:
            root = project(tmp_path / "p", index, "app\n", extra=VENDOR.format(mirror=down) + 'optional = ["vpkg"]')
            text = (root / "pyproject.toml").read_text().replace('optional = ["vpkg"]\n', "")
            (root / "pyproject.toml").write_text(
                text.replace('use = ["vendor"]', 'use = ["vendor"]\noptional = ["vpkg"]')
            )
            run = run_cli("all", "-C", str(root))
        assert run.code == 0, run.err
        (gap,) = manifest(root)[CELL]["unavailable"]
        assert gap == {
            "requirement": "vpkg", "reason": "source unreachable: https://vendor.example is unreachable (connection refused)", "retry": True,
        }  # fmt: skip
        check = run_cli("check", "-C", str(root))
        assert check.code == 0
        assert "optional vpkg unavailable: source unreachable: https://vendor.example is unreachable" in check.out
        assert run_cli("all", "-C", str(root)).code == 0
        assert "unavailable" in manifest(root)[CELL]
        run = run_cli("all", "--retry-unavailable", "--mirror", f"https://vendor.example={vendor.url}", "-C", str(root))
        assert run.code == 0, run.err
        assert "unavailable" not in manifest(root)[CELL]
        assert (root / "locks" / CELL / "optional-vpkg.txt").is_file()
    finally:
        vendor.stop()


def test_c28_the_same_uv_error_in_many_cells_prints_once(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0")
    root = project(tmp_path / "p", index, "alpha\ndoes-not-exist\n", matrix=SIX)
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    errors = [line for line in run.err.splitlines() if line.startswith("error: all")]
    assert len(errors) == 1
    assert errors[0].startswith("error: all 6 cells: ")
    assert run.err.count("does-not-exist was not found") == 1


# ------------------------------------------------------------------ fresh truth


def test_force_and_upgrade_see_a_version_published_under_a_cached_page(tmp_path, pypi):
    """The host says pages may be kept an hour (``max-age=3600``); a version published since
    must not hide behind uv's cache under ``--force``/``--upgrade`` (uv ``--refresh``). A plain
    run reads every page once from the host through lockgen's page cache, so it sees it too;
    only ``--online`` (plain uv) keeps the host's caching."""
    pypi.cache_control = "max-age=3600"
    index = publish(pypi, "alpha==1.0")
    matrix = ONE.replace('["3.12"]', '["3.12", "3.13"]')  # two cells: the second reuses the first's pages
    root = project(tmp_path / "p", index, "alpha\n", matrix=matrix)
    assert run_cli("all", "--online", "-C", str(root)).code == 0  # uv caches the host's page for an hour
    publish(pypi, "alpha==1.1")
    (root / "templates" / "requirements.in.j2").write_text("alpha>=1.1\n")
    plain = run_cli("all", "--online", "-C", str(root))
    assert plain.code == 1
    assert "alpha>=1.1" in plain.err
    run = run_cli("all", "--force", "--online", "-C", str(root))
    assert run.code == 0, run.err
    for py in ("3.12", "3.13"):
        assert locked_versions((root / "locks" / f"linux-x86_64-cpu-py{py}.txt").read_text())["alpha"] == "1.1"
    publish(pypi, "alpha==1.2")
    run = run_cli("all", "--upgrade", "--online", "-C", str(root))
    assert run.code == 0, run.err
    assert locked_versions((root / "locks" / f"{CELL}.txt").read_text())["alpha"] == "1.2"
    publish(pypi, "alpha==1.3")  # through the page cache, a plain run's pages are this run's
    (root / "templates" / "requirements.in.j2").write_text("alpha>=1.3\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert locked_versions((root / "locks" / f"{CELL}.txt").read_text())["alpha"] == "1.3"


def test_a_wrong_hash_on_a_find_links_page_fails_the_cell(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0")
    links = FaultHost(tmp_path / "links")
    try:
        wheel = links.wheel("wheels", "beta", "1.0")
        page = links.flat("wheels", [wheel], wrong_hash=frozenset({wheel.name}))
        root = project(tmp_path / "p", index, "alpha\nbeta\n", extra=f'find-links = {{ vendor = "{page}" }}')
        run = run_cli("all", "-C", str(root))
        assert run.code == 1
        assert (
            f"beta 1.0: wheel {links.url}/wheels/{wheel.name}: the find-links page of 'vendor' gives sha256 {'0' * 64}"
            in run.err
        )
        assert "Fix the page's #sha256" in run.err
        assert not (root / "locks" / f"{CELL}.txt").exists()
        page = links.flat("wheels", [wheel])
        run = run_cli("all", "-C", str(root))
        assert run.code == 0, run.err
        entry = manifest(root)[CELL]
        assert entry["unverified_hashes"] == ["default index"]  # alpha's hash is the index's word
    finally:
        links.stop()


def test_an_index_hash_is_marked_unverified_and_a_local_file_is_checked(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0")
    root = project(tmp_path / "p", index, "alpha\nlocalpkg\n", extra='find-links = { local = "wheels" }')
    from tests.support.faulthost import make_wheel

    wheel = make_wheel(root / "wheels", "localpkg", "1.0")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    lock = (root / "locks" / f"{CELL}.txt").read_text()
    assert "# unverified-hashes: default index\n" in lock
    assert manifest(root)[CELL]["unverified_hashes"] == ["default index"]  # the local file was checked
    assert wheel.name in (root / "locks" / CELL / "pylock.toml").read_text()


def test_a_local_find_links_setting_folder_is_part_of_the_input_hash(tmp_path, pypi):
    """``find-links = { local = "wheels" }`` (a setting, not a source's ``local``): a wheel added to
    or rebuilt in the folder makes the cell stale, as for a source's local folder."""
    from tests.support.faulthost import make_wheel

    index = publish(pypi, "alpha==1.0")
    root = project(tmp_path / "p", index, "alpha\nlocalpkg\n", extra='find-links = { local = "wheels" }')
    make_wheel(root / "wheels", "localpkg", "1.0")
    assert run_cli("all", "-C", str(root)).code == 0
    assert run_cli("check", "-C", str(root)).code == 0
    make_wheel(root / "wheels", "localpkg", "1.1")
    run = run_cli("check", "-C", str(root))
    assert run.code == 1
    assert "wheels/localpkg-1.1-py3-none-any.whl added to the local wheel folder wheels" in run.out + run.err


def test_a_server_error_on_an_optional_source_is_retried_not_recorded_for_good(tmp_path, pypi, monkeypatch):
    """HTTP 500 is the server's trouble, not the package's: the layer is unavailable with a
    retry reason (``check`` names it, ``--retry-unavailable`` tries again), like an outage."""
    from tests.support.faulthost import Fault

    index = publish(pypi, "app==1.0")
    vendor = FaultHost(tmp_path / "vendor")
    try:
        vendor.flat("wheels", [vendor.wheel("wheels", "vpkg", "1.0")])
        vendor.faults["/wheels/"] = Fault(status=500)
        extra = VENDOR.format(mirror=vendor.url).replace('use = ["vendor"]', 'use = ["vendor"]\noptional = ["vpkg"]')
        root = project(tmp_path / "p", index, "app\n", extra=extra)
        monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # uv would retry a 500 three times
        monkeypatch.setenv("COLUMNS", "40")  # uv wraps to it; lockgen must read the same failure
        run = run_cli("all", "-C", str(root))
        assert run.code == 0, run.err
        (gap,) = manifest(root)[CELL]["unavailable"]
        assert gap["retry"] is True
        assert "500" in gap["reason"]
        assert "https://vendor.example/wheels/" in gap["reason"]
        assert vendor.url not in gap["reason"]
        vendor.faults.clear()
        run = run_cli("all", "--retry-unavailable", "-C", str(root))
        assert run.code == 0, run.err
        assert "unavailable" not in manifest(root)[CELL]
    finally:
        vendor.stop()
