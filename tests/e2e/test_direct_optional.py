"""Direct references of every kind as optional entries (issue 17, item 6): a wheel URL, a source
archive URL and a local archive lock in their optional layer, hashed; a VCS URL and a project
folder are refused when the config is read, naming the entry (no hash exists for them: they
belong in the requirements, whose unhashed layer installs them)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import one_cell, run_cli, run_ok

pytestmark = pytest.mark.uv

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{HOST}"


@pytest.fixture
def assets(fake_host):
    """An index with dep, and a release page (another host) with a wheel and an sdist."""
    pypi, github = fake_host("pypi"), fake_host("github")
    pypi.add("dep", "1.0")
    pypi.publish()
    wheel = github.wheel("rel/v1", "wheelpkg", "1.0", requires=("dep",))
    sdist = github.sdist("rel/v1", "srcpkg", "2.0")
    return pypi, github, wheel, sdist


def project(root: Path, pypi, optional: list[str], extra: str = "") -> Path:
    return one_cell(root, pypi.index_url(), "dep\n", python=HOST, extra=f"optional = {json.dumps(optional)}\n{extra}")


def layer(root: Path, name: str) -> str:
    return (root / "locks" / CELL / f"optional-{name}.txt").read_text()


def hashes(text: str, start: str) -> list[str]:
    lines = text.split("\n\n", 1)[1].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    return [line.strip(" \\") for line in lines[first + 1 :] if line.strip().startswith("--hash=")][:1]


def test_a_wheel_url_a_source_archive_url_and_a_local_archive_lock_hashed(tmp_path, assets):
    pypi, github, wheel, sdist = assets
    root = project(
        tmp_path / "p", pypi,
        [github.file_url(wheel), f"srcpkg @ {github.file_url(sdist)}", "./dist/localpkg-3.0.tar.gz"],
        'allow-build = ["srcpkg", "localpkg"]',
    )  # fmt: skip
    (root / "dist").mkdir()
    local = github.sdist("tmp", "localpkg", "3.0")
    shutil.copy(local, root / "dist")
    run_ok("all", "-C", str(root))
    entry = json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]
    assert entry.get("unavailable", []) == []
    assert [x["name"] for x in entry["layers"]] == ["main", "optional-wheelpkg", "optional-srcpkg", "optional-localpkg"]
    assert hashes(layer(root, "wheelpkg"), "wheelpkg @ ")
    assert hashes(layer(root, "srcpkg"), "srcpkg @ ")
    assert hashes(layer(root, "localpkg"), "./dist/localpkg-3.0.tar.gz")


def test_a_source_archive_not_allowed_to_build_is_unavailable_with_the_line_to_copy(tmp_path, assets):
    pypi, github, _, sdist = assets
    root = project(tmp_path / "p", pypi, [f"srcpkg @ {github.file_url(sdist)}"])
    run_ok("all", "-C", str(root))
    (gap,) = json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]["unavailable"]
    assert 'allow-build = ["srcpkg"]' in gap["reason"]


@pytest.mark.parametrize(
    ("entry", "what"),
    [
        ("vcs @ git+https://example.org/org/vcs@main", "a VCS checkout"),
        ("./sub", "a project folder"),
        ("-e ./sub", "an editable project"),
        ("sub @ file:./sub", "a project folder"),
        ("https://example.org/simple/page/", "not a wheel or source archive URL"),
    ],
)
def test_a_form_without_a_hash_is_refused_when_the_config_is_read(tmp_path, assets, entry, what):
    pypi = assets[0]
    root = project(tmp_path / "p", pypi, [entry])
    run = run_cli("all", "-C", str(root))
    assert run.code == 2
    assert f"tool.lockgen.optional: optional entry {entry!r} is {what}" in run.err
    assert CELL in run.err
