"""A hostile checkout's journal (``.lockgen/journal/``): every command settles what a killed run
left before it reads the project (lockgen.locks.journal.settle), so a record committed in a fork
or unpacked with a release is input from elsewhere, read at the entry of every command, read-only
ones included (docs/untrusted-input.md, "journal records").

Each case plants one hostile record (or unit folder) and runs a command that only reads
(``matrix``, ``check``): it must end as it would without the record (no hang, no traceback), the
record must not be replayed, and no file outside the project may be written, moved or deleted.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from lockgen.locks import journal
from tests.conftest import Run, run_cli, write_project

CONFIG = """
    pins = { alpha = "1.0" }
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12"]
"""
#: Seconds a case may take before it counts as hung (each takes well under one).
HUNG = 30.0
PAYLOAD = "echo owned\n"


def _run(*argv: str) -> Run:
    done: list[Run] = []
    worker = threading.Thread(target=lambda: done.append(run_cli(*argv)), daemon=True)
    worker.start()
    worker.join(HUNG)
    assert done, f"lockgen {' '.join(argv)} hung (more than {HUNG} s)"
    return done[0]


def _record(root: Path, name: str, body: object, state: str = "committed") -> Path:
    folder = root / journal.JOURNALS
    folder.mkdir(parents=True, exist_ok=True)
    text = body if isinstance(body, str) else json.dumps({"state": state, **body})  # type: ignore[dict-item]
    (folder / f"{name}.json").write_text(text)
    return folder


def _staged(root: Path, name: str) -> str:
    unit = root / journal.JOURNALS / f"{name}.d"
    unit.mkdir(parents=True, exist_ok=True)
    (unit / "0.tmp").write_text(PAYLOAD)
    return f"{journal.JOURNALS}/{name}.d/0.tmp"


def _absolute_target(root: Path, outside: Path) -> None:
    """A committed unit that renames its temporary over a file outside the project."""
    _record(root, "evil", {"replace": [[_staged(root, "evil"), str(outside / "victim.sh")]], "remove": []})


def _absolute_target_prepared(root: Path, outside: Path) -> None:
    _record(root, "evil", {"replace": [[str(outside / ".victim.sh.0123abcd.tmp"), str(outside / "victim.sh")]],
                           "remove": []}, state="prepared")  # fmt: skip


def _absolute_beside(root: Path, outside: Path) -> None:
    """A temporary 'beside' a target outside the project, as for a config symlinked out: both
    outside, so the rename moves one outside file over another."""
    (outside / ".victim.sh.0123abcd.tmp").write_text(PAYLOAD)
    _record(root, "evil", {"replace": [[str(outside / ".victim.sh.0123abcd.tmp"), str(outside / "victim.sh")]],
                           "remove": []})  # fmt: skip


def _unit_folder_out(root: Path, outside: Path) -> None:
    """The unit's folder is a symlink out: the rename would move an outside file into the project."""
    (outside / "0.tmp").write_text(PAYLOAD)
    folder = root / journal.JOURNALS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evil.d").symlink_to(outside)
    _record(root, "evil", {"replace": [[f"{journal.JOURNALS}/evil.d/0.tmp", "stolen.txt"]], "remove": []})


def _target_through_link(root: Path, outside: Path) -> None:
    (root / "out").symlink_to(outside)
    _record(root, "evil", {"replace": [[_staged(root, "evil"), "out/victim.sh"]], "remove": []})


def _remove_outside(root: Path, outside: Path) -> None:
    _record(root, "evil", {"replace": [], "remove": [str(outside / "keep.txt")]})


def _fifo(root: Path, outside: Path) -> None:
    folder = root / journal.JOURNALS
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "evil.json")


def _dev_zero(root: Path, outside: Path) -> None:
    folder = root / journal.JOURNALS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evil.json").symlink_to("/dev/zero")


def _huge(root: Path, outside: Path) -> None:
    folder = root / journal.JOURNALS
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "evil.json").open("wb") as fh:
        fh.truncate(3 * 1024**3)  # sparse


def _deep(root: Path, outside: Path) -> None:
    _record(root, "evil", "[" * 100_000 + "]" * 100_000)


def _odd(root: Path, outside: Path) -> None:
    _record(root, "evil", '{"state": "committed", "replace": [["a"], 7, {"x": 1}, null], "remove": "abc"}')


def _not_text(root: Path, outside: Path) -> None:
    folder = root / journal.JOURNALS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evil.json").write_bytes(b"\xff\xfe\x00garbage" * 64)


CASES: dict[str, Callable[[Path, Path], None]] = {
    "absolute-target": _absolute_target, "absolute-target-prepared": _absolute_target_prepared,
    "absolute-beside": _absolute_beside, "unit-folder-out": _unit_folder_out,
    "target-through-link": _target_through_link, "remove-outside": _remove_outside, "fifo": _fifo,
    "dev-zero": _dev_zero, "huge": _huge, "deep-json": _deep, "odd-record": _odd, "not-text": _not_text,
}  # fmt: skip


def _outside_files(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(outside.iterdir()) if p.is_file()}


@pytest.mark.parametrize("command", ["matrix", "check"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_journal_record_is_not_replayed(case, command, tmp_path):
    root = write_project(tmp_path / "proj", CONFIG, {"requirements.in.j2": "alpha=={{ pins.alpha }}\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine\n")
    CASES[case](root, outside)
    before = _outside_files(outside)
    run = _run(command, "-C", str(root))
    assert "Traceback" not in run.err, run.err
    assert run.code in (0, 1, 2), run.err  # check: the project has no locks yet (exit 1)
    assert _outside_files(outside) == before, f"{case}: a file outside the project changed"
    assert not (outside / "victim.sh").exists()
    assert not (root / "stolen.txt").exists()
    assert not os.path.lexists(root / journal.JOURNALS / "evil.json"), f"{case}: the record was kept"


class _Killed(BaseException):
    """What the seam raises: nothing in lockgen catches it, as nothing catches a SIGKILL."""


def _killed_at_apply(root: Path, real: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit writing ``real`` (outside ``root``) through the project's symlink ``pyproject.toml``,
    stopped after its commit, before its rename."""

    def fault(step: str) -> None:
        if step == "apply":
            raise _Killed

    monkeypatch.setattr(journal, "fault", fault)
    with pytest.raises(_Killed):
        journal.replace_files(root, "bump", {str(real): "new\n"}, links={str(real): "pyproject.toml"})
    monkeypatch.setattr(journal, "fault", None)


def test_a_write_through_the_projects_symlink_is_still_finished(tmp_path, monkeypatch):
    """The one write outside the project lockgen makes (a config symlinked out, ``bump``) is
    recorded with the link that leads there, and finished by the next command."""
    root, real = tmp_path / "proj", tmp_path / "real.toml"
    root.mkdir()
    real.write_text("old\n")
    (root / "pyproject.toml").symlink_to(real)
    _killed_at_apply(root, real, monkeypatch)
    assert real.read_text() == "old\n"
    assert journal.recover(root) == ["bump"]
    assert real.read_text() == "new\n"


def test_a_write_through_a_link_that_moved_is_not_replayed(tmp_path, monkeypatch):
    root, real, other = tmp_path / "proj", tmp_path / "real.toml", tmp_path / "other.toml"
    root.mkdir()
    real.write_text("old\n")
    other.write_text("other\n")
    (root / "pyproject.toml").symlink_to(real)
    _killed_at_apply(root, real, monkeypatch)
    (root / "pyproject.toml").unlink()
    (root / "pyproject.toml").symlink_to(other)  # the link no longer leads to the recorded target
    journal.recover(root)
    assert real.read_text() == "old\n" and other.read_text() == "other\n"


@pytest.mark.parametrize("command", [["matrix"], ["check"], ["all", "--dry-run"], ["bump", "alpha==1.1", "--no-lock"]])
def test_a_work_folder_linked_out_of_the_project_is_refused(tmp_path, command):
    """A checkout committing ``.lockgen -> elsewhere``: lockgen used to write its run lock, its
    ``.gitignore`` and cell work folders there, and delete the ``stage-*`` folders it found."""
    root = write_project(tmp_path / "proj", CONFIG, {"requirements.in.j2": "alpha=={{ pins.alpha }}\n"})
    outside = tmp_path / "outside"
    (outside / "stage-mine").mkdir(parents=True)
    (outside / "stage-mine" / "data").write_text("mine\n")
    (root / ".lockgen").symlink_to(outside)
    before = sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*"))
    config = (root / "pyproject.toml").read_text()
    run = _run(*command, "-C", str(root))
    assert run.code == 2 and ".lockgen" in run.err and "symbolic link" in run.err, run.err
    assert "Traceback" not in run.err
    assert sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*")) == before
    assert (root / "pyproject.toml").read_text() == config


def test_temporaries_are_never_deleted_through_a_locks_folder_linked_out(tmp_path):
    """A checkout committing ``locks -> elsewhere``: the clean-up of a killed run's temporaries
    (``.<name>.<8 hex>.tmp``) deletes only files inside the project, never a look-alike there."""
    root = write_project(tmp_path / "proj", CONFIG, {"requirements.in.j2": "alpha=={{ pins.alpha }}\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    bait = outside / ".keep.0123abcd.tmp"
    bait.write_text("mine\n")
    (root / "locks").symlink_to(outside)
    (root / ".lockgen").mkdir()
    journal.clean_temporaries(root, "locks")
    assert bait.read_text() == "mine\n"
