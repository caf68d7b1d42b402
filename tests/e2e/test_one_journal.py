"""One journal for every writer (lockgen.locks.journal): every writing command (all, lock, bump,
audit --fix, merge, bundle, init), stopped at a step of its journal, leaves after the next command
all-old or all-new files, no temporary, and a ``check`` that agrees with ``all``.

The kill is the journal's fault-injection seam (``journal.fault``, raising at the N-th step) in
the default tier; the slow tier kills at every step, and kills real processes with SIGKILL
(``LOCKGEN_TEST_KILL_AT``). The other faults of the mechanism are here too: a read-only file is
never replaced (exit 2, named), and a folder reached through a symlink is never written through.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from lockgen.locks import journal
from tests.conftest import run_cli, run_ok, write_project
from tests.support.fakeosv import record, write_export

CELL = "linux-x86_64-cpu-py3.12"
CONFIG = """
    index-url = "{index}"
    pins = {{ alpha = "1.0" }}
    [tool.lockgen.audit]
    osv = "osv"
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
TEMPLATE = "alpha=={{ pins.alpha }}\nbeta\n"


class Killed(BaseException):
    """What the seam raises: nothing in lockgen catches it, as nothing catches a SIGKILL."""


@dataclass(frozen=True)
class Writer:
    """A writing command: ``prepare(root, tmp)`` makes its change to write and returns its argv
    (``-C root`` added) and the folder it writes (the project, or a bundle's folder)."""

    name: str
    prepare: Callable[[Path, Path], tuple[list[str], Path]]


def _edit_template(root: Path) -> None:
    (root / "templates" / "requirements.in.j2").write_text("alpha=={{ pins.alpha }}\n")


def _all(root: Path, tmp: Path) -> tuple[list[str], Path]:
    _edit_template(root)
    return ["all"], root


def _lock(root: Path, tmp: Path) -> tuple[list[str], Path]:
    _edit_template(root)
    return ["lock", CELL], root


def _bump(root: Path, tmp: Path) -> tuple[list[str], Path]:
    return ["bump", "alpha==1.1"], root


def _audit_fix(root: Path, tmp: Path) -> tuple[list[str], Path]:
    return ["audit", "--fix"], root


def _merge(root: Path, tmp: Path) -> tuple[list[str], Path]:
    shard = tmp / f"shard-of-{root.name}"
    shutil.copytree(root, shard)
    _edit_template(shard)
    _edit_template(root)  # the shard's inputs are the project's
    run_ok("all", "-C", str(shard), "--shard", "1/1")
    return ["merge", str(shard / "locks")], root


def _bundle(root: Path, tmp: Path) -> tuple[list[str], Path]:
    out = tmp / f"bundle-of-{root.name}"
    return ["bundle", CELL, "-o", str(out)], out


def _init(root: Path, tmp: Path) -> tuple[list[str], Path]:
    fresh = tmp / f"init-{root.name}"
    fresh.mkdir()
    (fresh / "requirements.txt").write_text("alpha==1.0\nbeta\n")
    return ["init", "--python", "3.12"], fresh


WRITERS = [
    Writer("all", _all), Writer("lock", _lock), Writer("bump", _bump), Writer("audit --fix", _audit_fix),
    Writer("merge", _merge), Writer("bundle", _bundle), Writer("init", _init),
]  # fmt: skip


@pytest.fixture
def locked(tmp_path, index) -> Path:
    for name, version in (("alpha", "1.0"), ("beta", "1.0")):
        index.add(name, version)
    index.publish()
    root = write_project(tmp_path / "proj", CONFIG.format(index=index.index_url()), {"requirements.in.j2": TEMPLATE})
    write_export([record("GHSA-aaaa-bbbb-cccc", "alpha", ["1.0"], fixed="1.1", rating="HIGH")], root / "osv")
    run_ok("all", "-C", str(root))
    index.add("alpha", "1.1")
    index.publish()
    return root


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but lockgen's work folder, by relative path."""
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".lockgen" not in p.relative_to(folder).parts
    }


def debris(folder: Path) -> list[str]:
    """Temporaries, units and scratch folders left anywhere under ``folder``."""
    found = list(folder.rglob("*.tmp")) if folder.is_dir() else []
    found += list((folder / journal.JOURNALS).glob("*")) if (folder / journal.JOURNALS).is_dir() else []
    found += list((folder / ".lockgen").glob("stage-*")) if (folder / ".lockgen").is_dir() else []
    return sorted(p.relative_to(folder).as_posix() for p in found)


def argv(writer: Writer, args: list[str], root: Path, target: Path) -> list[str]:
    return [*args, "-C", str(target if writer.name == "init" else root)]


def project_commit(writer: Writer, steps: list[str]) -> int:
    """The index of the commit step of the unit that writes the project: ``bump`` (and ``audit
    --fix``, through it) first write their re-locks into a stage, through units of their own."""
    if writer.name in ("bump", "audit --fix"):
        return len(steps) - 1 - steps[::-1].index("commit")
    return steps.index("commit")


def steps_of(writer: Writer, locked: Path, tmp: Path) -> tuple[list[str], dict[str, bytes]]:
    """The journal steps an uninterrupted run of ``writer`` takes (on a copy), and what it writes."""
    copy = tmp / f"whole-{writer.name.replace(' ', '-')}"
    shutil.copytree(locked, copy)
    args, target = writer.prepare(copy, tmp)
    seen: list[str] = []
    journal.fault = seen.append
    try:
        run = run_cli(*argv(writer, args, copy, target))
    finally:
        journal.fault = None
    assert run.code in (0, 1), run.err  # audit --fix exits 1 when a finding is left
    return seen, snapshot(target)


#: The writers whose whole write is one unit (all of it or none of it); the others write a unit per
#: cell and one for the manifest (each file then is its old or its new self).
ONE_UNIT = ("bump", "audit --fix", "merge", "bundle", "init")


def kill_at(writer: Writer, locked: Path, tmp: Path, step: int, label: str, after: dict[str, bytes]) -> None:
    """Run ``writer`` on a copy of ``locked`` killed at its ``step``-th journal step, then the next
    command, and check the mechanism's promises against ``after`` (an uninterrupted run's files)."""
    root = tmp / f"{writer.name.replace(' ', '-')}-{label}"
    shutil.copytree(locked, root)
    args, target = writer.prepare(root, tmp)
    before = snapshot(target)
    count = 0

    def fault(name: str) -> None:
        nonlocal count
        count += 1
        if count == step:
            raise Killed(name)

    journal.fault = fault
    try:
        with pytest.raises(Killed):
            run_cli(*argv(writer, args, root, target))
    finally:
        journal.fault = None
    if writer.name == "bundle":  # the next commands over a bundle: install --from refuses it half-written
        if journal.pending(target):
            refused = run_cli("install", "--from", str(target), CELL, "--dry-run")
            assert refused.code == 2 and "stopped while writing it" in refused.err, refused.err
        run_ok(*argv(writer, args, root, target))  # bundle finishes or redoes it
        assert debris(target) == [] and not (target / ".lockgen").exists()
        assert snapshot(target) == after
        return
    check = run_cli("check", "-C", str(target))  # the next command: it settles the journal first
    assert debris(target) == [], debris(target)
    now = snapshot(target)
    if writer.name in ONE_UNIT:
        assert now in (before, after), sorted(p for p in now.keys() | after.keys() if now.get(p) != after.get(p))
    else:
        assert all(now.get(p) in (before.get(p), after.get(p)) for p in now.keys() | before.keys() | after.keys())
    if writer.name == "init":
        return
    assert check.code in (0, 1), check.err
    again = run_cli("all", "-C", str(target))
    assert again.code == 0, again.err
    if check.code == 0:  # check said up to date: all agrees, writing nothing
        assert snapshot(target) == now
    assert run_cli("check", "-C", str(target)).code == 0


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_every_writer_stopped_at_its_commit_is_finished_by_the_next_command(writer, locked, tmp_path):
    """The field's kill: after a unit's record says committed, before its first rename."""
    steps, after = steps_of(writer, locked, tmp_path)
    assert "commit" in steps, steps
    kill_at(writer, locked, tmp_path, project_commit(writer, steps) + 2, "commit", after)  # the first rename


def test_a_bump_stopped_before_its_first_rename_is_finished_by_the_next_all(locked, tmp_path):
    """The field's report: the next ``all`` must not lock the old pins under the new config."""
    steps, _ = steps_of(WRITERS[2], locked, tmp_path)
    count = 0

    def fault(name: str) -> None:
        nonlocal count
        count += 1
        if count == project_commit(WRITERS[2], steps) + 2:
            raise Killed(name)

    journal.fault = fault
    try:
        with pytest.raises(Killed):
            run_cli("bump", "alpha==1.1", "-C", str(locked))
    finally:
        journal.fault = None
    run = run_cli("all", "-C", str(locked))
    assert run.code == 0, run.err
    assert 'alpha = "1.1"' in (locked / "pyproject.toml").read_text()
    assert "alpha==1.1 " in (locked / "locks" / f"{CELL}.txt").read_text()
    assert run_cli("check", "-C", str(locked)).code == 0
    assert run_cli("all", "-C", str(locked)).code == 0  # up to date, and check agrees


@pytest.mark.parametrize("writer", [w for w in WRITERS if w.name in ("bump", "bundle")], ids=lambda w: w.name)
def test_a_writer_stopped_before_its_commit_is_rolled_back(writer, locked, tmp_path):
    steps, after = steps_of(writer, locked, tmp_path)
    kill_at(writer, locked, tmp_path, project_commit(writer, steps) + 1, "staged", after)


@pytest.mark.slow
@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_every_writer_stopped_at_each_step_of_its_journal(writer, locked, tmp_path):
    steps, after = steps_of(writer, locked, tmp_path)
    for step in range(1, len(steps) + 1):
        kill_at(writer, locked, tmp_path, step, f"step-{step}", after)


def _lockgen(*args: str, kill_at: int | None = None) -> subprocess.CompletedProcess[str]:
    """``lockgen ARGS`` as a process, SIGKILLed at its ``kill_at``-th journal step."""
    env = dict(os.environ)
    env.pop(journal.KILL_ENV, None)
    if kill_at is not None:
        env[journal.KILL_ENV] = str(kill_at)
    return subprocess.run(
        [sys.executable, "-m", "lockgen", *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize("writer", [w for w in WRITERS if w.name in ("all", "bump", "bundle")], ids=lambda w: w.name)
def test_a_real_sigkill_in_the_journal_is_settled_by_the_next_process(writer, locked, tmp_path):
    steps, after = steps_of(writer, locked, tmp_path)
    commit = project_commit(writer, steps)
    for label, step in (("staged", commit + 1), ("renaming", commit + 2)):
        root = tmp_path / f"sigkill-{writer.name}-{label}"
        shutil.copytree(locked, root)
        args, target = writer.prepare(root, tmp_path)
        before = snapshot(target)
        killed = _lockgen(*argv(writer, args, root, target), kill_at=step)
        assert killed.returncode == -9, killed.stderr
        if writer.name == "bundle":
            assert _lockgen(*argv(writer, args, root, target)).returncode == 0
            assert debris(target) == [] and snapshot(target) == after
            continue
        check = _lockgen("check", "-C", str(target))
        assert debris(target) == [], debris(target)
        now = snapshot(target)
        assert all(now.get(p) in (before.get(p), after.get(p)) for p in now.keys() | before.keys() | after.keys())
        if writer.name == "bump":
            assert now in (before, after)
        assert _lockgen("all", "-C", str(target)).returncode == 0
        if check.returncode == 0:
            assert snapshot(target) == now
        assert _lockgen("check", "-C", str(target)).returncode == 0


# -- the journal's other refusals: read-only files, folders reached through symlinks -----------------


@pytest.mark.parametrize("writer", [w for w in WRITERS if w.name in ("bump", "all")], ids=lambda w: w.name)
def test_a_read_only_file_is_never_replaced(writer, locked, tmp_path):
    args, target = writer.prepare(locked, tmp_path)
    protected = locked / ("pyproject.toml" if writer.name == "bump" else f"locks/{CELL}.txt")
    protected.chmod(0o444)
    before = snapshot(locked)
    run = run_cli(*argv(writer, args, locked, target))
    assert run.code == 2, run.err
    rel = protected.relative_to(locked).as_posix()
    assert f"{rel}: the file is read-only" in run.err and "Traceback" not in run.err
    assert snapshot(locked) == before  # nothing written
    assert debris(locked) == []


def test_bundle_never_writes_or_deletes_through_a_symlinked_folder(locked, tmp_path):
    out = tmp_path / "bundle"
    run_ok("bundle", CELL, "-o", str(out), "-C", str(locked))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("mine\n")
    shutil.rmtree(out / "files")
    (out / "files").symlink_to(elsewhere)
    run = run_cli("bundle", CELL, "-o", str(out), "-C", str(locked))
    assert run.code == 2 and "is a symbolic link" in run.err, run.err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious.txt"]


def test_the_journal_refuses_a_unit_through_a_symlinked_folder(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "root" / "locks").symlink_to(tmp_path / "outside")
    with pytest.raises(journal.ReadOnlyFile, match="is a symbolic link"):
        journal.replace_files(tmp_path / "root", "x", {"locks/a.txt": "a\n"})
    assert list((tmp_path / "outside").iterdir()) == []
    assert debris(tmp_path / "root") == []
