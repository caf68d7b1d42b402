"""The readers of input lockgen did not just write (docs/untrusted-input.md), as pure parts: the
confinement of paths and names, the typed manifest reader (every field, any garbage: a record
naming the field, never a traceback), the lock decoder (any encoding), and ``check``/``diff`` on
a lock whose header names files outside its folder."""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from pathlib import Path

import pytest

from lockgen.runtime.errors import InputError, LockFormatError, Problem
from lockgen.locks import manifestfile
from lockgen.locks.lock import LayerKind, LayerRef, Lock, decode
from lockgen.locks.lockset import LockSet
from lockgen.locks.paths import confine, name_problem, path_problem

REPO = Path(__file__).parents[2]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("locks/a.txt", None), ("locks/a/optional-x.txt", None), ("locks/../x.txt", "'..'"), ("/etc/passwd", "absolute"),
        ("C:/x.txt", "absolute"), ("locks\\a.txt", "backslash"), ("locks//a.txt", "empty"), ("other/a.txt", "not inside"),
        ("", "empty path"), (None, "expected a path"), (5, "expected a path"), ("locks/a\0.txt", "NUL"),
    ],
)  # fmt: skip
def test_path_problem(value, problem):
    found = path_problem(value, "locks")
    assert (problem in found) if problem else found is None, found


@pytest.mark.parametrize(
    ("value", "ok"),
    [("main", True), ("optional-flash-attn", True), ("linux-x86_64-cu130-py3.12", True), ("../x", False),
     ("a/b", False), ("a..b", False), ("", False), (".hidden", False), ("x" * 201, False), (3, False)],
)  # fmt: skip
def test_name_problem(value, ok):
    assert (name_problem(value) is None) is ok


def test_confine_follows_symlinks(tmp_path):
    (tmp_path / "locks").mkdir()
    (tmp_path / "secret.txt").write_text("x")
    (tmp_path / "locks" / "a.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(InputError, match="leads outside the locks folder"):
        confine(tmp_path, "locks", "locks/a.txt", "cells.a.lock")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "other").symlink_to(tmp_path / "elsewhere")
    assert confine(tmp_path, "locks", "locks/b.txt", "x") == tmp_path / "locks" / "b.txt"  # need not exist


def _repo_manifest() -> dict:
    return json.loads((REPO / "locks" / "manifest.json").read_text())


def test_the_repository_manifest_reads():
    manifest = manifestfile.load((REPO / "locks" / "manifest.json").read_bytes(), "locks/manifest.json", "locks")
    cell = manifest.cells["linux-x86_64-cu130-py3.12"]
    assert cell.installable and cell.layers[0].lock == "locks/linux-x86_64-cu130-py3.12.txt"
    assert cell.layers[0].built(cell.layers[0].index_url, cell.layers[0].find_links or ()) == {
        k: list(v) for k, v in cell.layers[0].commands.items()
    }


def _mutations(value: object, rng: random.Random) -> object:
    """``value`` with one random node replaced by a hostile value."""
    hostile = [None, 0, -1, 10**40, True, "", "../../x", "/etc/passwd", [], {}, [[[]]], "x" * 300, 1.5, "\x00"]
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(sorted(value))
        return {**value, key: _mutations(value[key], rng)}
    if isinstance(value, list) and value and rng.random() < 0.8:
        i = rng.randrange(len(value))
        return [*value[:i], _mutations(value[i], rng), *value[i + 1 :]]
    return rng.choice(hostile)


def _problems(data: object) -> tuple[Problem, ...]:
    """The records :func:`manifestfile.parse` raises for ``data`` (none: it reads)."""
    try:
        manifestfile.parse(data, "locks/manifest.json", "locks")
    except InputError as exc:
        return exc.problems
    return ()


def test_any_mutation_of_a_manifest_is_a_record_naming_the_field_or_valid():
    """250 random one-node mutations of the repository's manifest: each reads, or raises
    InputError whose every problem names the file (and a field); nothing else escapes."""
    base = _repo_manifest()
    rng = random.Random(15)
    refused = 0
    for _ in range(250):
        mutated = _mutations(copy.deepcopy(base), rng)
        problems = _problems(mutated)
        if problems:
            refused += 1
            assert all(p.file == "locks/manifest.json" for p in problems), problems
            assert problems[0].key or problems[0].message.startswith("not a lockgen manifest"), problems
    assert refused > 90  # the rest changed what install does not read (detect, unavailable, …)


@pytest.mark.parametrize(
    ("field", "value"),
    [("input_hash", {}), ("input_hash", "md5:00"), ("uv", [1]), ("uv", "latest"), ("exclude_newer", 5),
     ("target", "linux"), ("unverified_hashes", [1])],
)  # fmt: skip
def test_the_fields_install_does_not_act_on_are_typed_too(field, value):
    """A manifest lockgen wrote holds these typed; another shape is named, not passed over."""
    data = _repo_manifest()
    data["cells"]["linux-x86_64-cu130-py3.12"][field] = value
    problems = _problems(data)
    assert [p.key for p in problems] == [f"cells.linux-x86_64-cu130-py3.12.{field}"], problems


def test_a_manifest_with_too_many_problems_lists_twenty():
    data = _repo_manifest()
    for entry in data["cells"].values():
        entry["os"] = entry["arch"] = entry["python"] = "?"
    with pytest.raises(InputError) as info:
        manifestfile.parse(data, "locks/manifest.json", "locks")
    assert len(info.value.problems) == 21
    assert "… and" in info.value.problems[-1].message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xef\xbb\xbf# This file", "saved as UTF-8 with a byte-order mark"), (b"\xff\xfe#\x00", "saved as UTF-16"),
        (b"\x00\x00\xfe\xff", "saved as UTF-32"), (b"# caf\xe9", "not UTF-8 text (byte 0xe9 at offset 5)"),
    ],
    ids=["utf8-bom", "utf16", "utf32", "latin1"],
)  # fmt: skip
def test_locks_in_any_encoding_are_named(data, message):
    with pytest.raises(LockFormatError, match="locks/a.txt: " + message.replace("(", r"\(").replace(")", r"\)")):
        decode(data, "locks/a.txt")


def _lock_naming(path: str) -> str:
    """The repository's main lock with one layer field naming ``path`` (re-rendered: intact)."""
    text = (REPO / "locks" / "linux-x86_64-cu130-py3.12.txt").read_text()
    lock = Lock.parse(text, "locks/linux-x86_64-cu130-py3.12.txt")
    ref = LayerRef(kind=LayerKind.OPTIONAL, name="optional-x", sha256="0" * 64, path=path)
    return dataclasses.replace(lock, header=dataclasses.replace(lock.header, layers=(ref,))).render()


@pytest.mark.parametrize("path", ["locks/../outside.txt", "locks/linux-x86_64-cu130-py3.12/other.txt"])
def test_diff_and_check_read_no_layer_a_lock_names_elsewhere(tmp_path, path):
    from lockgen.locks.folder import edited

    (tmp_path / "outside.txt").write_text("not a lock\n")
    folder = tmp_path / "locks"
    folder.mkdir()
    text = _lock_naming(path)
    (folder / "linux-x86_64-cu130-py3.12.txt").write_text(text)
    found = LockSet.from_folder(folder, "locks")
    assert (
        f"its layer optional-x is at {path!r}, not locks/linux-x86_64-cu130-py3.12/optional-x.txt"
        in found.problems[0].message
    )
    problem = edited(tmp_path, "locks/linux-x86_64-cu130-py3.12.txt", Lock.parse(text, "x"))
    assert problem is not None and "where lockgen writes it" in problem


def test_a_lock_run_over_committed_files_in_another_encoding_relocks_them(tmp_path, index):
    """The committed lock and pylock.toml a run reads for preferences, saved in another encoding:
    the cell is re-locked (``check`` named it), no traceback."""
    from tests.conftest import one_cell, run_cli, run_ok

    index.add("alpha", "1.0")
    index.publish()
    root = one_cell(tmp_path / "p", index.index_url(), "alpha\n")
    run_ok("all", "-C", str(root))
    cell = "linux-x86_64-cpu-py3.12"
    for rel in (f"locks/{cell}.txt", f"locks/{cell}/pylock.toml"):
        path = root / rel
        path.write_bytes(b"\xff\xfe" + path.read_bytes())
    check = run_cli("check", "-C", str(root))
    assert check.code == 1
    assert f"locks/{cell}.txt: saved as UTF-16" in check.out
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert "Traceback" not in run.err
    assert run_cli("check", "-C", str(root)).code == 0
