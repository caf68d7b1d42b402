"""Symbolic links inside lockgen's work folder (``.lockgen/``) as input from elsewhere: a fork may
commit ``.lockgen/journal`` (docs/untrusted-input.md), and any checkout can hold links there.

Each site is made a link to a victim outside the project (a folder holding a ``*.json`` and a
``*.d`` folder, as the journal's clean-up would take them; or a file); each command that touches
the site must end without a traceback, refuse (exit 2, naming the link) where it would write,
lock or delete through it, and leave the victim byte for byte as it was. Every command settles
the journal at its entry, so a link directly in ``.lockgen`` is refused by all of them; a link
deeper down is refused by the command that would write there (a cell's work folder by a run
that resolves the cell), and a record or unit folder in the journal that is a link is removed
itself, never followed.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from lockgen.locks import journal, store
from lockgen.runtime.errors import LockgenError
from tests.conftest import Run, run_cli, run_ok, write_project

CELL = "linux-x86_64-cpu-py3.12"
CONFIG = """
    index-url = "{index}"
    pins = {{ alpha = "1.0" }}
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
TEMPLATE = "alpha=={{ pins.alpha }}\nbeta\n"
#: The cell's interpreter for ``install`` (pyenv keeps every CPython beside this one).
PY312 = next(iter(sorted(Path(sys.base_prefix).parent.glob("3.12*/bin/python3"))), Path(sys.executable))
HUNG = float(os.environ.get("ATTACK_HUNG", "60"))

#: site -> (the link, project-relative; whether it leads to a folder; whether every command's
#: entry refuses it: a link directly in .lockgen, or on the way to the journal's folder)
SITES: dict[str, tuple[str, bool, bool]] = {
    "journal": (".lockgen/journal", True, True),
    "record": (".lockgen/journal/cpu.json", False, False),
    "unit": (".lockgen/journal/cpu.d", True, False),
    "run-lock": (".lockgen/run.lock", False, True),
    "cell": (f".lockgen/{CELL}", True, True),
    "cell-inner": (f".lockgen/{CELL}/main-newer", True, False),
    "install": (".lockgen/install", True, True),
    "install-cell": (f".lockgen/install/{CELL}", True, False),
    "coverage-cache": (".lockgen/coverage", True, True),
    "downloads-cache": (".lockgen/downloads.json", False, True),
}
COMMANDS: dict[str, list[str]] = {
    "matrix": ["matrix"], "check": ["check"], "all": ["all"], "all-forced": ["all", "--force"],
    "lock": ["lock", CELL, "--force"], "all-dry-run": ["all", "--dry-run"],
    "bump-dry-run": ["bump", "alpha==1.1", "--dry-run"],
    "install-dry-run": ["install", CELL, "--dry-run", "--python", str(PY312)],
}  # fmt: skip
#: (site, command) pairs below .lockgen's top level whose command writes there: refused too.
DEEP_REFUSED = {("cell-inner", c) for c in ("all-forced", "lock", "bump-dry-run")}

#: The default tier's cases: each site once with a command that only reads (the journal's
#: settle), plus the writers the attack review named; the slow tier runs every pair.
DEFAULT = {(site, "matrix") for site in SITES} | {
    ("journal", "check"), ("run-lock", "all-forced"), ("cell", "all-forced"), ("cell-inner", "lock"),
}  # fmt: skip


def _run(*argv: str) -> Run:
    done: list[Run] = []
    worker = threading.Thread(target=lambda: done.append(run_cli(*argv)), daemon=True)
    worker.start()
    worker.join(HUNG)
    assert done, f"lockgen {' '.join(argv)} hung (more than {HUNG} s)"
    return done[0]


@pytest.fixture(scope="module")
def locked(tmp_path_factory, shared_fake_host) -> Path:
    index = shared_fake_host("work-folder")
    for name, version in (("alpha", "1.0"), ("alpha", "1.1"), ("beta", "1.0")):
        index.add(name, version)
    index.publish()
    root = write_project(
        tmp_path_factory.mktemp("work") / "proj",
        CONFIG.format(index=index.index_url()),
        {"requirements.in.j2": TEMPLATE},
    )
    run_ok("all", "-C", str(root))
    return root


def _victim(base: Path, folder: bool) -> Path:
    """A folder the journal's clean-up would empty (a record-like ``*.json``, a ``*.d`` folder,
    a pid-like file), or a file."""
    if not folder:
        base.mkdir()
        victim = base / "settings.json"
        victim.write_text('{"k": 1}\n')
        return victim
    victim = base / "v"
    (victim / "notes.d").mkdir(parents=True)
    (victim / "notes.d" / "keep.txt").write_text("mine\n")
    (victim / "settings.json").write_text('{"k": 1}\n')
    (victim / "main-pins.txt").write_text("mine\n")
    return victim


def _snapshot(base: Path) -> dict[str, bytes | None]:
    return {p.relative_to(base).as_posix(): (None if p.is_dir() else p.read_bytes()) for p in sorted(base.rglob("*"))}


def _case(site: str, command: str) -> object:
    marks = () if (site, command) in DEFAULT else (pytest.mark.slow,)
    return pytest.param(site, command, marks=marks, id=f"{site}-{command}")


@pytest.mark.uv
@pytest.mark.parametrize(("site", "command"), [_case(s, c) for s in SITES for c in COMMANDS])
def test_a_link_in_the_work_folder_is_never_followed(locked, tmp_path, site, command):
    import shutil

    root = tmp_path / "proj"
    shutil.copytree(locked, root, symlinks=True)
    link, folder, at_entry = SITES[site]
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    if (root / link).is_dir():
        shutil.rmtree(root / link)
    (root / link).unlink(missing_ok=True)
    outside = tmp_path / "outside"
    (root / link).symlink_to(_victim(outside, folder))
    before = _snapshot(outside)
    run = _run(*COMMANDS[command], "-C", str(root))
    assert "Traceback" not in run.err, run.err
    if at_entry or (site, command) in DEEP_REFUSED:
        assert run.code == 2, (run.code, run.err)
        assert link in run.err and "remove the link" in run.err, run.err
    else:
        assert run.code in (0, 1), (run.code, run.err)
    assert _snapshot(outside) == before, f"{site}: {command} changed a file outside the project"
    if site in ("record", "unit"):  # the link itself is removed (never what it leads to)
        assert not os.path.lexists(root / link)


# -- the mechanism, for callers that do not come through the command line --------------------------


def _linked_journal(tmp_path: Path) -> tuple[Path, Path]:
    root = write_project(tmp_path / "proj", CONFIG.format(index="https://example.invalid/simple"), {})
    victim = _victim(tmp_path / "outside", True)
    (root / ".lockgen").mkdir()
    (root / journal.JOURNALS).symlink_to(victim)
    return root, victim


def test_recover_and_a_unit_refuse_a_linked_journal_folder(tmp_path):
    root, victim = _linked_journal(tmp_path)
    before = _snapshot(victim)
    with pytest.raises(store.LinkedWork, match=r"\.lockgen/journal: is a symbolic link"):
        journal.recover(root)
    with pytest.raises(store.LinkedWork):
        journal.replace_files(root, "cpu", {"locks/x.txt": "x\n"})
    with pytest.raises(store.LinkedWork):
        journal.settle(root)
    assert _snapshot(victim) == before and not (root / "locks").exists()


def test_the_run_lock_is_opened_without_following_a_link(tmp_path):
    """``O_NOFOLLOW``: even past the work folder's check (a venv's install lock, a race)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    link = tmp_path / "run.lock"
    link.symlink_to(victim)

    def busy(holder: str) -> LockgenError:
        return LockgenError(holder)

    with pytest.raises(store.LinkedWork, match="symbolic link"), store.FileLock(link, False, busy, "waiting"):
        pass
    assert victim.read_text() == "mine\n"


def test_a_deep_link_is_found_below_the_folder_written(tmp_path):
    root = tmp_path / "proj"
    (root / ".lockgen" / "install" / CELL / "sub").mkdir(parents=True)
    (root / ".lockgen" / "install" / CELL / "sub" / "restore.txt").symlink_to(tmp_path)
    assert store.linked_work(root, f".lockgen/install/{CELL}", depth=0) is None
    found = store.linked_work(root, f".lockgen/install/{CELL}", depth=-1)
    assert found == f".lockgen/install/{CELL}/sub/restore.txt"
    with pytest.raises(store.LinkedWork, match="remove the link"):
        store.work_folder(root, f".lockgen/install/{CELL}", depth=-1)
