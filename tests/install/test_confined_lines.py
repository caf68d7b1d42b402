"""What ``lockgen install`` lets a lock line name (docs/untrusted-input.md, "Rules"): local paths
inside the project (after symlinks); from a bundle, only the bundle's own files, no URL at all."""

from __future__ import annotations

import pytest

from lockgen.install.choose import direct_problem


@pytest.fixture
def root(tmp_path):
    (tmp_path / "p" / "files" / "ab").mkdir(parents=True)
    (tmp_path / "p" / "files" / "ab" / "beta-1.0-py3-none-any.whl").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "p" / "link").symlink_to(tmp_path / "elsewhere")
    return tmp_path / "p"


@pytest.mark.parametrize("bundle", [False, True], ids=["project", "bundle"])
@pytest.mark.parametrize(
    ("url", "project_ok", "bundle_ok"),
    [
        ("./files/ab/beta-1.0-py3-none-any.whl", True, True), ("./sub", True, True),
        ("./files/../../elsewhere/beta-1.0-py3-none-any.whl", False, False), ("../x", False, False),
        ("./link/beta-1.0-py3-none-any.whl", False, False), ("/etc/beta-1.0-py3-none-any.whl", False, False),
        ("file:///tmp/beta-1.0-py3-none-any.whl", True, False), ("http://h/beta-1.0-py3-none-any.whl", True, False),
        ("https://h/beta-1.0-py3-none-any.whl", True, False), ("git+https://h/x.git@" + "0" * 40, True, False),
    ],
    ids=["stored", "folder", "dotdot-via-files", "dotdot", "symlink-out", "absolute", "file-url", "http", "https", "vcs"],
)  # fmt: skip
def test_lock_lines_are_confined(root, url, project_ok, bundle_ok, bundle):
    problem = direct_problem(root, url, bundle)
    assert (problem is None) is (bundle_ok if bundle else project_ok), problem
