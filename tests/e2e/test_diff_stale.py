"""``lockgen diff`` after a template edit says the locks are stale, naming what changed and what
to run, instead of "no changes" (docs/review-and-ci.md): a diff of lock files cannot show an edit
no lock holds yet."""

from __future__ import annotations

import json

import pytest

from tests.conftest import one_cell, run_cli, run_ok
from tests.support.fakehost import FakeHost
from tests.support.localprojects import git

pytestmark = pytest.mark.uv
CELL = "linux-x86_64-cpu-py3.12"


@pytest.fixture
def project(tmp_path):
    index = FakeHost(tmp_path / "index")
    index.add("alpha", "1.0")
    index.add("beta", "1.0")
    index.publish()
    root = one_cell(tmp_path / "proj", index.index_url(), "alpha\n")
    run_ok("all", "-C", str(root))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "locks")
    yield root
    index.stop()


def test_diff_after_a_template_edit_says_the_locks_are_stale(project):
    (project / "templates" / "requirements.in.j2").write_text("alpha\nbeta\n")
    run = run_cli("diff", "-C", str(project))
    assert run.code == 0, run.err
    said = " ".join(run.out.split())
    assert said.startswith(f"no changes in the lock files, but the locks of 1 cell ({CELL}) are stale:")
    assert "changed since they were locked: the rendered templates/requirements.in.j2" in said
    assert "run `lockgen all`, then `lockgen diff` shows what the edit does" in said
    markdown = run_cli("diff", "-C", str(project), "--format", "markdown")
    assert "No changes." in markdown.out and "> ⚠️ the locks of 1 cell" in markdown.out
    as_json = run_cli("diff", "-C", str(project), "--format", "json")
    assert json.loads(as_json.out) == [] and "warning: the locks of 1 cell" in as_json.err
    run_ok("all", "-C", str(project))
    after = run_cli("diff", "-C", str(project))
    assert "beta" in after.out and "stale" not in after.out


def test_diff_between_two_revisions_or_of_current_locks_says_nothing_of_staleness(project):
    assert run_cli("diff", "-C", str(project)).out.strip() == "no changes"
    (project / "templates" / "requirements.in.j2").write_text("alpha\nbeta\n")
    assert run_cli("diff", "HEAD", "HEAD", "-C", str(project)).out.strip() == "no changes"
