"""Staleness from content (issue 16, item 2): every local input counts by its bytes; a cheap
size/time hint decides only when to hash again (lockgen.plan.content)."""

from __future__ import annotations

import hashlib
import io
import os
import time
import zipfile
from pathlib import Path

import pytest

from lockgen.plan.content import Digests
from tests.conftest import run_cli
from tests.test_trust import CELL, project, publish
from tests.wheels import make_wheel


def rebuild_same_size(path: Path) -> None:
    """Rewrite the wheel at ``path`` with other bytes of the same length (its ``__init__.py``
    quoted otherwise, stored uncompressed both times), keeping its modification time: the worst
    case for a size/mtime check."""
    stat = path.stat()
    with zipfile.ZipFile(path) as zf:
        members = [(info, zf.read(info)) for info in zf.infolist()]
    quote = b"'" if b'"' in members[0][1] else b'"'
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for info, data in members:
            if info.filename.endswith("__init__.py"):
                data = data.replace(b'"', quote).replace(b"'", quote)
            zf.writestr(zipfile.ZipInfo(info.filename, date_time=info.date_time), data)
    path.write_bytes(buffer.getvalue())
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def stored(path: Path) -> None:
    """The wheel at ``path`` with its members stored uncompressed (so a rebuild keeps its size)."""
    rebuild_same_size(path)
    rebuild_same_size(path)


@pytest.mark.uv
def test_a_wheel_rebuilt_at_the_same_size_makes_its_cell_stale_naming_cell_and_file(tmp_path, pypi):
    index = publish(pypi, "alpha==1.0")
    root = project(tmp_path / "p", index, "alpha\nlocalpkg\n", extra='find-links = { local = "wheels" }')
    wheel = make_wheel(root / "wheels", "localpkg", "1.0")
    stored(wheel)
    time.sleep(0.01)
    assert run_cli("all", "-C", str(root)).code == 0
    assert run_cli("check", "-C", str(root)).code == 0
    size, before = wheel.stat().st_size, hashlib.sha256(wheel.read_bytes()).hexdigest()
    rebuild_same_size(wheel)
    after = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert wheel.stat().st_size == size and after != before
    check = run_cli("check", "-C", str(root))
    assert check.code == 1
    assert (
        f"{CELL}: stale\n  wheels/localpkg-1.0-py3-none-any.whl of the local wheel folder wheels changed "
        f"(sha256 {before[:12]}… -> {after[:12]}…)"
    ) in check.out
    run = run_cli("all", "-C", str(root))  # not a no-op: the stamp sees the content too
    assert run.code == 0, run.err
    assert "linux-x86_64-cpu-py3.12  locked" in run.err
    assert after in (root / "locks" / CELL / "pylock.toml").read_text()  # the hash an install checks
    assert f"--hash=sha256:{after}" in (root / "locks" / f"{CELL}.txt").read_text()
    assert (
        f"# local-file: sha256:{after} wheels/localpkg-1.0-py3-none-any.whl"
        in (root / "locks" / f"{CELL}.txt").read_text()
    )
    assert run_cli("check", "-C", str(root)).code == 0


@pytest.mark.uv
def test_a_local_project_reading_its_requirements_from_a_file_is_stale_when_that_file_changes(tmp_path, pypi):
    """A local project whose dependencies setuptools reads from ``requirements.txt`` (or that
    names the file in uv's ``cache-keys``): the file is one of its inputs."""
    index = publish(pypi, "alpha==1.0", "beta==1.0")
    root = project(tmp_path / "p", index, "alpha\n-e ./sub\n")
    sub = root / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "sub"\nversion = "0.1"\ndynamic = ["dependencies"]\n'
        '[tool.setuptools.dynamic]\ndependencies = { file = ["requirements.txt"] }\n'
        '[tool.uv]\ncache-keys = [{ file = "pyproject.toml" }, { file = "extra/*.cfg" }]\n'
    )
    (sub / "requirements.txt").write_text("alpha\n")
    (sub / "extra").mkdir()
    (sub / "extra" / "a.cfg").write_text("x\n")
    from lockgen.plan.plan import project_files

    assert project_files(sub) == ["extra/a.cfg", "pyproject.toml", "requirements.txt"]
    from lockgen.project import Project

    before = Project.load(root).plans(Project.load(root).cells)[0]
    (sub / "requirements.txt").write_text("alpha\nbeta\n")
    after = Project.load(root).plans(Project.load(root).cells)[0]
    assert before.input_parts["local_projects"] != after.input_parts["local_projects"]
    assert after.local_inputs["sub/requirements.txt"] == hashlib.sha256(b"alpha\nbeta\n").hexdigest()


# ------------------------------------------------------------------ the hint decides when, never whether


def test_an_unchanged_file_is_not_hashed_again(tmp_path):
    path = tmp_path / "wheels" / "a.whl"
    path.parent.mkdir()
    path.write_bytes(b"one")
    old = time.time() - 60
    os.utime(path, (old, old))  # well before the racy window
    first = Digests(tmp_path)
    assert first.sha256("wheels/a.whl") == hashlib.sha256(b"one").hexdigest()
    first.save()
    again = Digests(tmp_path)
    assert again.sha256("wheels/a.whl") == hashlib.sha256(b"one").hexdigest()
    assert again.hashed == 0


def test_content_counts_even_when_size_and_mtime_are_kept(tmp_path):
    """Same size, same mtime (``touch -r``, a copy that keeps times): the change time and inode
    still move, so the file is hashed again and its new content is what counts."""
    path = tmp_path / "a.whl"
    path.write_bytes(b"one")
    old = time.time() - 60
    os.utime(path, (old, old))
    digests = Digests(tmp_path)
    digests.sha256("a.whl")
    digests.save()
    stat = path.stat()
    path.write_bytes(b"two")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert Digests(tmp_path).sha256("a.whl") == hashlib.sha256(b"two").hexdigest()


def test_a_file_written_just_before_it_was_hashed_is_hashed_again(tmp_path):
    path = tmp_path / "a.whl"
    path.write_bytes(b"one")  # now: inside the racy window
    digests = Digests(tmp_path)
    digests.sha256("a.whl")
    digests.save()
    later = Digests(tmp_path)
    later.sha256("a.whl")
    assert later.hashed == 1


def test_a_garbled_cache_is_ignored(tmp_path):
    (tmp_path / ".lockgen").mkdir()
    (tmp_path / ".lockgen" / "digests.json").write_text("{not json")
    (tmp_path / "a").write_bytes(b"x")
    assert Digests(tmp_path).sha256("a") == hashlib.sha256(b"x").hexdigest()
