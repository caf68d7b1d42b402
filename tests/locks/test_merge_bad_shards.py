"""``lockgen merge`` verifies every shard file before it writes, then writes everything in one
journal (issue 15, item 4): for each bad shard shape, the merge exits 2 naming the file (or the
field) and the project's ``locks/`` is the same, byte for byte, before and after."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from lockgen.locks.lock import Lock, text_sha256
from tests.conftest import run_cli, write_project

CELLS = ("linux-x86_64-cpu-py3.12", "linux-x86_64-cpu-py3.13")
A, B = CELLS
CONFIG = """
    index-url = "{index}"
    pins = {{ alpha = "{alpha}" }}
    optional = ["gamma"]
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cpu"]
    python = ["3.12", "3.13"]
"""
REQUIREMENTS = "alpha=={{ pins.alpha }}\n"


def _project(root: Path, index, alpha: str) -> Path:
    return write_project(
        root, CONFIG.format(index=index.index_url(), alpha=alpha), {"requirements.in.j2": REQUIREMENTS}
    )


def files(folder: Path) -> dict[str, bytes]:
    """Every file and symlink under ``folder``, by relative path (a symlink as its target)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[rel] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory, shared_fake_host):
    """A project locked at alpha 1.0 with alpha 1.1 published since, and the locks folders of
    ``all --shard 1/2`` and ``2/2`` on it (each shard one cell, with an optional layer)."""
    index = shared_fake_host("index")
    for name, version in (("alpha", "1.0"), ("alpha", "1.1"), ("gamma", "1.0")):
        index.add(name, version)
    index.publish()
    base = tmp_path_factory.mktemp("merge")
    root = _project(base / "proj", index, "1.0")
    assert run_cli("all", "-C", str(root)).code == 0
    _project(root, index, "1.1")
    shutil.rmtree(root / ".lockgen")
    shards = []
    for i in (1, 2):
        shard = base / f"shard-{i}"
        shutil.copytree(root, shard)
        run = run_cli("all", "--shard", f"{i}/2", "-C", str(shard))
        assert run.code == 0, run.err
        shards.append(shard / "locks")
    return root, shards


def _edit_hash(folder: Path) -> str:
    lock = folder / f"{A}.txt"
    text = lock.read_text()
    digest = text.split("--hash=sha256:", 1)[1][:64]
    lock.write_text(text.replace(digest, "0" * 64))
    return f"{A}.txt: not the lock lockgen wrote (its content-sha256 does not match: edited or truncated)"


def _rendered_with_another_hash(folder: Path) -> str:
    """A hash edited and the lock's content-sha256 made to match: its shard manifest still says otherwise."""
    lock = Lock.parse((folder / f"{A}.txt").read_text(), A)
    alpha = lock.entries[0]
    edited = dataclasses.replace(lock, entries=(dataclasses.replace(alpha, hashes=("sha256:" + "1" * 64,)),))
    (folder / f"{A}.txt").write_text(edited.render())
    return f"manifest.json: cell {A}'s layers are not the files in"


def _truncated(folder: Path) -> str:
    lock = folder / f"{A}.txt"
    lock.write_bytes(lock.read_bytes()[: len(lock.read_bytes()) // 2])
    return "truncated"


def _missing_layer(folder: Path) -> str:
    (folder / A / "optional-gamma.txt").unlink()
    return f"{A}/optional-gamma.txt: missing, but"


def _symlinked_layer(folder: Path) -> str:
    layer = folder / A / "optional-gamma.txt"
    target = folder.parent / "elsewhere.txt"
    target.write_bytes(layer.read_bytes())
    layer.unlink()
    layer.symlink_to(target)
    return f"{A}/optional-gamma.txt: a symlink"


def _symlinked_main(folder: Path) -> str:
    lock = folder / f"{A}.txt"
    target = folder.parent / "main.txt"
    target.write_bytes(lock.read_bytes())
    lock.unlink()
    lock.symlink_to(target)
    return f"{A}.txt: a symlink"


def _symlinked_cell_folder(folder: Path) -> str:
    target = folder.parent / "cell-folder"
    shutil.move(folder / A, target)
    (folder / A).symlink_to(target)
    return f"{A}: a symlink"


def _foreign_file(folder: Path) -> str:
    (folder / A / "evil.txt").write_text("numpy==1.0\n")
    return f"{A}/evil.txt: not a file lockgen writes for cell {A}"


def _edited_layer(folder: Path) -> str:
    layer = folder / A / "optional-gamma.txt"
    layer.write_text(layer.read_text().replace("gamma==1.0", "gamma==1.0 "))
    return f"{A}/optional-gamma.txt: not the layer"


def _edited_pylock(folder: Path) -> str:
    pylock = folder / A / "pylock.toml"
    pylock.write_text(pylock.read_text() + "# edited\n")
    return f"{A}/pylock.toml: not the pylock.toml"


def _not_utf8(folder: Path) -> str:
    lock = folder / f"{A}.txt"
    lock.write_bytes(lock.read_bytes().replace(b"alpha", b"alph\xe9", 1))
    return f"{A}.txt: not UTF-8 text (byte 0xe9"


def _utf16(folder: Path) -> str:
    lock = folder / f"{A}.txt"
    lock.write_bytes(lock.read_text().encode("utf-16"))
    return f"{A}.txt: saved as UTF-16"


def _layer_outside(folder: Path) -> str:
    """The main lock (re-rendered, so intact) names its layer outside the cell's folder."""
    lock = Lock.parse((folder / f"{A}.txt").read_text(), A)
    refs = tuple(dataclasses.replace(ref, path="locks/../../etc/passwd") for ref in lock.header.layers)
    edited = dataclasses.replace(lock, header=dataclasses.replace(lock.header, layers=refs))
    (folder / f"{A}.txt").write_text(edited.render())
    return "its layer optional-gamma is at 'locks/../../etc/passwd', not"


def _manifest_cell_name(folder: Path) -> str:
    data = json.loads((folder / "manifest.json").read_text())
    data["cells"]["../../x"] = data["cells"].pop(A)
    (folder / "manifest.json").write_text(json.dumps(data))
    return "cells.../../x: the cell name '../../x' is not a plain name"


def _manifest_layer_path(folder: Path) -> str:
    data = json.loads((folder / "manifest.json").read_text())
    data["cells"][A]["layers"][1]["lock"] = "/etc/passwd"
    (folder / "manifest.json").write_text(json.dumps(data))
    return f"cells.{A}.layers[1].lock: '/etc/passwd' is absolute"


def _manifest_not_json(folder: Path) -> str:
    (folder / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    return "not a manifest lockgen wrote: nested deeper than 32 levels"


def _manifest_wrong_type(folder: Path) -> str:
    data = json.loads((folder / "manifest.json").read_text())
    data["cells"][A]["layers"][0]["sha256"] = 12345
    (folder / "manifest.json").write_text(json.dumps(data))
    return f"cells.{A}.layers[0].sha256: expected a non-empty string, got a number"


def _manifest_symlink(folder: Path) -> str:
    target = folder.parent / "manifest-elsewhere.json"
    shutil.move(folder / "manifest.json", target)
    (folder / "manifest.json").symlink_to(target)
    return "no manifest.json"


def _failed_from_other_inputs(folder: Path) -> str:
    """The cell marked failed, with an intact main lock of other inputs (attacker review 1, 10)."""
    lock = Lock.parse((folder / f"{A}.txt").read_text(), A)
    text = dataclasses.replace(lock, header=dataclasses.replace(lock.header, input_hash="sha256:" + "0" * 64)).render()
    (folder / f"{A}.txt").write_text(text)
    data = json.loads((folder / "manifest.json").read_text())
    entry = data["cells"][A]
    entry.update(status="failed", reason="it failed", sha256=text_sha256(text))
    entry["layers"][0]["sha256"] = text_sha256(text)
    (folder / "manifest.json").write_text(json.dumps(data))
    return "it failed"


def _locked_without_main(folder: Path) -> str:
    (folder / f"{A}.txt").unlink()
    return f"{A}.txt: missing, but"


def _main_is_a_fifo(folder: Path) -> str:
    (folder / f"{A}.txt").unlink()
    os.mkfifo(folder / f"{A}.txt")
    return f"{A}.txt: not a regular file"


def _main_too_large(folder: Path) -> str:
    with (folder / f"{A}.txt").open("r+b") as fh:
        fh.truncate(3 * 1024**3)  # sparse: nothing is written
    return f"{A}.txt: 3221225472 bytes: larger than any file lockgen writes"


def _manifest_too_large(folder: Path) -> str:
    with (folder / "manifest.json").open("r+b") as fh:
        fh.truncate(3 * 1024**3)
    return "manifest.json: 3221225472 bytes: larger than any file lockgen writes"


def _differences_is_a_fifo(folder: Path) -> str:
    (folder / "differences.json").unlink(missing_ok=True)
    os.mkfifo(folder / "differences.json")
    return "differences.json: not a regular file"


SHAPES: dict[str, Callable[[Path], str]] = {
    "locked-without-main-lock": _locked_without_main,
    "main-lock-is-a-fifo": _main_is_a_fifo,
    "main-lock-3-gib-sparse": _main_too_large,
    "manifest-3-gib-sparse": _manifest_too_large,
    "differences-json-is-a-fifo": _differences_is_a_fifo,
    "edited-hash": _edit_hash,
    "hash-edited-and-digest-remade": _rendered_with_another_hash,
    "truncated-lock": _truncated,
    "missing-layer": _missing_layer,
    "layer-is-a-symlink": _symlinked_layer,
    "main-lock-is-a-symlink": _symlinked_main,
    "cell-folder-is-a-symlink": _symlinked_cell_folder,
    "foreign-file": _foreign_file,
    "edited-layer": _edited_layer,
    "edited-pylock": _edited_pylock,
    "not-utf8": _not_utf8,
    "utf16": _utf16,
    "layer-path-outside": _layer_outside,
    "manifest-cell-name": _manifest_cell_name,
    "manifest-layer-path": _manifest_layer_path,
    "manifest-nested-too-deeply": _manifest_not_json,
    "manifest-field-type": _manifest_wrong_type,
    "manifest-is-a-symlink": _manifest_symlink,
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_bad_shard_is_refused_and_locks_stay_byte_for_byte(tmp_path, world, shape):
    root, shards = world
    project = tmp_path / "proj"
    shutil.copytree(root, project)
    bad = tmp_path / "shard-1" / "locks"
    shutil.copytree(shards[0], bad, symlinks=True)
    message = SHAPES[shape](bad)
    before = files(project / "locks")
    run = run_cli("merge", str(bad), str(shards[1]), "-C", str(project))
    assert run.code == 2, run.err
    assert message in run.err
    assert "Traceback" not in run.err
    assert files(project / "locks") == before
    assert not (project / ".lockgen" / "journal").is_dir() or not list((project / ".lockgen" / "journal").iterdir())


def test_a_truncated_shard_lock_is_not_called_one_of_other_inputs(tmp_path, world):
    root, shards = world
    project = tmp_path / "proj"
    shutil.copytree(root, project)
    bad = tmp_path / "shard-1"
    shutil.copytree(shards[0], bad)
    _truncated(bad)
    run = run_cli("merge", str(bad), str(shards[1]), "-C", str(project))
    assert run.code == 2
    assert "other inputs" not in run.err


def test_good_shards_merge_in_one_journal_and_leave_the_work_folder_ignored(tmp_path, world, monkeypatch):
    """A fresh checkout (no .lockgen/) merges; the work folder gets its .gitignore; every file
    is written by one replace_files call (one journal: all or nothing)."""
    from lockgen.locks import journal

    root, shards = world
    project = tmp_path / "proj"
    shutil.copytree(root, project)
    calls = []
    real = journal.replace_files

    def recorded(root_, name, texts, remove=()):
        calls.append((name, sorted(texts)))
        return real(root_, name, texts, remove)

    monkeypatch.setattr(journal, "replace_files", recorded)
    run = run_cli("merge", *map(str, shards), "-C", str(project))
    assert run.code == 0, run.err
    assert [name for name, _ in calls] == ["merge"]
    assert "locks/manifest.json" in calls[0][1] and f"locks/{A}.txt" in calls[0][1] and f"locks/{B}.txt" in calls[0][1]
    assert (project / ".lockgen" / ".gitignore").read_text().endswith("*\n")
    assert run_cli("check", "-C", str(project)).code == 0
    (project / "locks" / A / "evil.txt").write_text("numpy==1.0\n")  # a foreign file: check names it too
    found = run_cli("check", "-C", str(project))
    assert found.code == 1
    assert f"locks/{A}/evil.txt is not a file lockgen writes for this cell" in found.out
    (project / "locks" / A / "evil.txt").unlink()
    assert text_sha256((project / "locks" / f"{A}.txt").read_text()) == text_sha256(
        (shards[0] / f"{A}.txt").read_text()
    )


def test_a_shard_marking_a_cell_failed_does_not_replace_its_lock_with_one_of_other_inputs(tmp_path, world):
    """A failed cell's main lock of another input hash (made up: 000…) keeps the project's lock."""
    root, shards = world
    project = tmp_path / "proj"
    shutil.copytree(root, project)
    bad = tmp_path / "shard-1" / "locks"
    shutil.copytree(shards[0], bad)
    reason = _failed_from_other_inputs(bad)
    before = (project / "locks" / f"{A}.txt").read_bytes()
    run = run_cli("merge", str(bad), str(shards[1]), "-C", str(project))
    assert run.code == 1, run.err
    assert f"{A}: failed in its shard" in run.err and reason in run.err
    assert (project / "locks" / f"{A}.txt").read_bytes() == before
    assert "0" * 64 not in (project / "locks" / "manifest.json").read_text()
