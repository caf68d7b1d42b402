"""``lockgen audit --fix`` (issue 22, item 2) and the advisories of a pin bump in ``lockgen diff
--format markdown`` (item 5), on a project locked by the real uv from a fake PyPI, with advisories
from an OSV export on disk (offline)."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import locked_versions, run_cli, write_project
from tests.support.fakeosv import record, write_export

CELL = "linux-x86_64-cpu-py3.12"


def records():
    return [
        # unpinned (a range in the template): re-locked to the smallest fix, 3.1.5 (3.1.6 exists too)
        record("GHSA-h5c8-rqwp-cp95", "jinja2", ["3.1.3", "3.1.4"], fixed="3.1.5", rating="MODERATE"),
        # pinned in the config: the pin moves as `lockgen bump` moves it
        record("GHSA-2x4m-9vq8-fj2c", "numpy", ["2.0.0"], fixed="2.0.1", rating="HIGH"),
        # pinned in a template line: moved there
        record("GHSA-44wm-f244-xhp3", "pillow", ["10.0.0"], fixed="10.0.1", rating="HIGH"),
        # the constraints template excludes the fix: blocked, named
        record("GHSA-hvqx-g3r7-4mmw", "markupsafe", ["2.1.5"], fixed="2.2.0", rating="LOW"),
        # no fix published
        record("GHSA-7f3x-c4wq-5x2p", "tool", ["1.0"], last_affected="1.0", rating="CRITICAL"),
    ]


@pytest.fixture
def project(index, tmp_path):
    for name, version, requires in [
        ("jinja2", "3.1.4", ("markupsafe>=2.0",)), ("markupsafe", "2.1.5", ()), ("numpy", "2.0.0", ()),
        ("pillow", "10.0.0", ()), ("tool", "1.0", ()),
    ]:  # fmt: skip
        index.add(name, version, requires=requires)
    index.publish()
    config = f"""
        index-url = "{index.index_url()}"
        constraints = "constraints.txt.j2"
        pins = {{ numpy = "2.0.0" }}
        pinned = ["numpy"]
        [tool.lockgen.audit]
        osv = "osv"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
    """
    templates = {
        "requirements.in.j2": "jinja2>=3.1\nnumpy=={{ pins.numpy }}\npillow==10.0.0\ntool\n",
        "constraints.txt.j2": "markupsafe<2.2\n",
    }
    root = write_project(tmp_path / "p", config, templates)
    write_export(records(), root / "osv")
    assert run_cli("all", "-C", str(root)).code == 0
    # newer releases appear after the lock was made (the lock keeps its versions until asked)
    for name, version, requires in [
        ("jinja2", "3.1.5", ("markupsafe>=2.0",)), ("jinja2", "3.1.6", ("markupsafe>=2.0",)), ("numpy", "2.0.1", ()),
        ("pillow", "10.0.1", ()), ("markupsafe", "2.2.0", ()),
    ]:  # fmt: skip
        index.add(name, version, requires=requires)
    index.publish()
    return root


def lock(root) -> dict[str, str]:
    return locked_versions((root / "locks" / f"{CELL}.txt").read_text())


def test_fix_moves_each_package_to_its_smallest_fixed_version_and_names_what_blocks(project):
    assert lock(project)["jinja2"] == "3.1.4"
    before = (project / "pyproject.toml").read_text()
    run = run_cli("audit", "--fix", "-C", str(project))
    versions = lock(project)
    assert versions["jinja2"] == "3.1.5"  # the smallest fix, not the newest (3.1.6)
    assert versions["numpy"] == "2.0.1" and versions["pillow"] == "10.0.1"
    assert versions["markupsafe"] == "2.1.5" and versions["tool"] == "1.0"
    # the config pin moved, every other byte kept (as lockgen bump does); the template line too
    after = (project / "pyproject.toml").read_text()
    assert after == before.replace('numpy = "2.0.0"', 'numpy = "2.0.1"')
    assert "pillow==10.0.1" in (project / "templates" / "requirements.in.j2").read_text()
    out = run.out
    assert (
        "fix: jinja2 3.1.4 -> 3.1.5 (GHSA-h5c8-rqwp-cp95; 1 cell): re-lock with --upgrade-package jinja2==3.1.5" in out
    )
    assert "fix: numpy 2.0.0 -> 2.0.1 (GHSA-2x4m-9vq8-fj2c; 1 cell): move its pin (as lockgen bump)" in out
    assert (
        f"cannot fix GHSA-hvqx-g3r7-4mmw in markupsafe 2.1.5 ({CELL}): templates/constraints.txt.j2 renders "
        "'markupsafe<2.2' (constraints), which excludes 2.2.0"
    ) in out
    assert f"cannot fix GHSA-7f3x-c4wq-5x2p in tool 1.0 ({CELL}): no fixed version is published" in out
    assert "3 of 5 findings fixed; 2 at or above --fail-on any left" in out
    assert run.code == 1
    assert "jinja2 3.1.4 → 3.1.5" in run.err  # the change report of the re-lock
    # the locks are current: a check passes, and a second audit finds only the blocked two
    assert run_cli("check", "-C", str(project)).code == 0
    again = run_cli("audit", "-C", str(project), "--fail-on", "high")
    assert again.code == 1 and "GHSA-7f3x-c4wq-5x2p in tool 1.0" in again.out and "jinja2" not in again.out


def test_the_markdown_diff_of_a_bump_names_the_advisories_it_fixes(project, tmp_path):
    import shutil

    old = tmp_path / "old-locks"
    shutil.copytree(project / "locks", old)
    run_cli("audit", "--fix", "-C", str(project))
    diff = run_cli("diff", str(old), "-C", str(project), "--format", "markdown")
    assert diff.code == 0, diff.err
    text = diff.out
    assert "### Advisories" in text
    assert "This change fixes 3 advisories and introduces 0 (osv)." in text
    assert (
        "| ✅ fixed | [GHSA-h5c8-rqwp-cp95](https://github.com/advisories/GHSA-h5c8-rqwp-cp95) medium | jinja2 3.1.4 | 1 of 1 |"
        in text
    )
    # without a configured or given source nothing is asked (and no section is added)
    plain = run_cli("diff", str(old), "-C", str(project), "--format", "text")
    assert "Advisories" not in plain.out


def test_the_markdown_diff_says_what_a_change_introduces(project, tmp_path):
    import shutil

    new = tmp_path / "new-locks"
    old = tmp_path / "old-locks"
    shutil.copytree(project / "locks", old)
    run_cli("audit", "--fix", "-C", str(project))
    shutil.copytree(project / "locks", new)
    text = run_cli("diff", str(new), str(old), "-C", str(project), "--format", "markdown").out
    assert "This change fixes 0 advisories and introduces 3 (osv)." in text
    assert "| ⚠️ introduced | [GHSA-2x4m-9vq8-fj2c]" in text


def test_no_fix_needed(index, tmp_path):
    index.add("six", "1.16.0")
    index.publish()
    config = textwrap.dedent(f"""
        index-url = "{index.index_url()}"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
    """)
    root = write_project(tmp_path / "q", config, {"requirements.in.j2": "six\n"})
    write_export([], root / "osv")
    assert run_cli("all", "-C", str(root)).code == 0
    run = run_cli("audit", "--fix", "--osv", "osv", "-C", str(root))
    assert run.code == 0 and "0 of 0 findings fixed" in run.out


def _yank(index, name: str, version: str) -> None:
    """Mark every file of ``name`` ``version`` yanked on the fake index's page (PEP 592)."""
    page = index.root / "pypi" / "simple" / name / "index.html"
    lines = page.read_text().splitlines()
    page.write_text(
        "\n".join(
            line.replace("<a ", '<a data-yanked="pulled" ', 1) if f">{name}-{version}-" in line else line
            for line in lines
        )
        + "\n"
    )


def test_fix_never_moves_to_a_yanked_version(project, index):
    """A yanked fix is passed over for the next release above it (an exact pin would still
    select a yanked version, PEP 592); when no release is left, the finding is blocked, named."""
    index.add("numpy", "2.0.2")
    index.add("jinja2", "3.1.6", requires=("markupsafe>=2.0",))
    index.publish()
    _yank(index, "numpy", "2.0.1")  # a pinned package: its pin moves past the yanked fix
    _yank(index, "jinja2", "3.1.5")  # an unpinned one: re-locked past it
    _yank(index, "pillow", "10.0.1")  # the only fix: blocked
    run = run_cli("audit", "--fix", "-C", str(project))
    versions = lock(project)
    assert versions["numpy"] == "2.0.2" and versions["jinja2"] == "3.1.6", run.out + run.err
    assert versions["pillow"] == "10.0.0"
    assert 'numpy = "2.0.2"' in (project / "pyproject.toml").read_text()
    assert f"cannot fix GHSA-44wm-f244-xhp3 in pillow 10.0.0 ({CELL}): every fixed version is yanked" in run.out
