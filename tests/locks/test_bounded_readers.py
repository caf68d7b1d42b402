"""Every reader of JSON and files from elsewhere is bounded (docs/untrusted-input.md, "Rules"):
deep nesting and huge numbers are a record naming the file (exit 2), never a RecursionError;
a file over the limit is refused before it is read (a sparse 3 GiB file), a FIFO never blocks;
a template that leads out of its folder is refused unread, its content never quoted."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lockgen.install.choose import read_manifest
from lockgen.locks import manifest, manifestfile, shard
from lockgen.locks.lock import Lock
from lockgen.locks.lockset import LockSet
from lockgen.plan.render import _OverlayLoader
from lockgen.rot.bundle import is_bundle
from lockgen.runtime.bounded import NotRegular, TooLarge, read_file
from lockgen.runtime.errors import InputError, LockFormatError, LockgenError, TemplateError

DEEP = '{"format": 4, "cells": {}, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
HUGE = '{"format": 4, "cells": {}, "x": ' + "9" * 5000 + "}"


def _locks(tmp_path: Path, text: str) -> Path:
    (tmp_path / "locks").mkdir(exist_ok=True)
    (tmp_path / "locks" / "manifest.json").write_text(text)
    return tmp_path / "locks" / "manifest.json"


READERS: dict[str, Callable[[Path], object]] = {
    "install": lambda p: read_manifest(p.parents[1], "locks"),
    "manifestfile.load": lambda p: manifestfile.load(p.read_bytes(), "locks/manifest.json", "locks"),
    "check-failures": lambda p: manifest.failures(manifest.read(p)),
    "all-recorded-coverage": lambda p: manifest.recorded_coverage(manifest.read(p)),
    "recorded-pylocks": lambda p: manifest.recorded_pylocks(manifest.read(p)),
    "merge-shard-manifest": lambda p: shard._part(p.parent, "locks"),
}


@pytest.mark.parametrize("text", [DEEP, HUGE], ids=["deep", "huge-integer"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_hostile_json_is_a_record_naming_the_file(tmp_path, reader, text):
    path = _locks(tmp_path, text.replace('"cells": {}', '"shard": "1/2", "cells": {}'))
    with pytest.raises(InputError) as info:
        READERS[reader](path)
    assert "manifest.json" in str(info.value) and (
        "nested deeper" in str(info.value) or "out of range" in str(info.value)
    )


def test_diff_statuses_record_a_hostile_manifest(tmp_path):
    path = _locks(tmp_path, DEEP)
    found = LockSet.from_folder(path.parent, "locks")  # what diff and check --online read
    assert found.statuses == {}
    assert any("manifest.json" in p.message and "nested deeper" in p.message for p in found.problems)


def test_a_hostile_bundle_json_is_no_bundle(tmp_path):
    (tmp_path / "bundle.json").write_text('{"generator": "lockgen", "x": ' + "[" * 100_000 + "}")
    assert is_bundle(tmp_path) is False


def _sparse(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.truncate(3 * 1024**3)  # nothing is written; reading it whole would take 3 GiB
    return path


SIZED: dict[str, Callable[[Path], object]] = {
    "read_file": lambda p: read_file(p, "x"),
    "install-manifest": lambda p: read_manifest(p.parents[1], "locks"),
    "check-manifest": lambda p: manifest.read(p),
    "merge-shard-manifest": lambda p: shard._part(p.parent, "locks"),
    "lock": lambda p: Lock.read(p.parent / "a.txt"),
}


@pytest.mark.parametrize("reader", sorted(SIZED))
def test_a_3_gib_sparse_file_is_refused_unread(tmp_path, reader):
    _sparse(tmp_path / "locks" / "manifest.json")
    _sparse(tmp_path / "locks" / "a.txt")
    with pytest.raises(LockgenError, match="3221225472 bytes: larger than any file lockgen writes"):
        SIZED[reader](tmp_path / "locks" / "manifest.json")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_never_blocks(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(NotRegular):
        read_file(tmp_path / "fifo", "fifo")
    (tmp_path / "locks").mkdir()
    os.mkfifo(tmp_path / "locks" / "a.txt")
    with pytest.raises(LockFormatError, match="not a regular file"):
        Lock.read(tmp_path / "locks" / "a.txt", "locks/a.txt")
    assert manifest.read(tmp_path / "fifo") is None  # where the manifest goes: no manifest, unread


def test_a_file_growing_past_the_limit_is_refused(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 101)
    with pytest.raises(TooLarge):
        read_file(tmp_path / "f", "f", limit=100)
    assert read_file(tmp_path / "f", "f", limit=101) == b"x" * 101


# ---- templates: confined to their folder, content of a file outside never quoted -------------

SECRET = "machine example.com login bob password NETRCSECRET42\n"


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda t, s: (t / "extra.j2").symlink_to(s), "a symlink leading outside the folder templates/"),
        (lambda t, s: (t / "sub").symlink_to(s.parent), "a symlink leading outside the folder templates/"),
        (lambda t, s: os.mkfifo(t / "extra.j2"), "not a regular file"),
        (lambda t, s: (t / "extra.j2").symlink_to(t / "extra.j2"), "leads nowhere"),
    ],
    ids=["file-symlink-out", "folder-symlink-out", "fifo", "symlink-loop"],
)
def test_a_template_leading_out_of_its_folder_is_refused_unread(tmp_path, make, said):
    templates = tmp_path / "templates"
    templates.mkdir()
    secret = tmp_path / "home" / ".netrc"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    (templates / "requirements.in.j2").write_text("alpha\n{% include 'extra.j2' %}\n{% include 'sub/.netrc' %}\n")
    make(templates, secret)
    import jinja2

    loader = _OverlayLoader(templates, {}, "templates")
    env = jinja2.Environment(loader=loader)
    name = "sub/.netrc" if (templates / "sub").exists() else "extra.j2"
    with pytest.raises(TemplateError) as info:
        loader.get_source(env, name)
    assert said in str(info.value) and f"templates/{name}" in str(info.value)
    assert "NETRCSECRET42" not in str(info.value)


def test_a_symlink_inside_the_templates_folder_still_reads(tmp_path):
    templates = tmp_path / "templates"
    (templates / "shared").mkdir(parents=True)
    (templates / "shared" / "common.j2").write_text("alpha\n")
    (templates / "extra.j2").symlink_to(templates / "shared" / "common.j2")
    import jinja2

    loader = _OverlayLoader(templates, {}, "templates")
    assert loader.get_source(jinja2.Environment(loader=loader), "extra.j2")[0] == "alpha\n"
