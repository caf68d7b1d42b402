"""The one reader of untrusted bytes (``lockgen.runtime.bounded``), unit by unit: files that are
not regular or lead out of their folder, bodies that do not end, zip archives whose members lie
about their size, inflate too much, are too many or are named out of the archive."""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path

import pytest

from lockgen.runtime import bounded
from lockgen.runtime.errors import InputError


def _zip(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    return path


def _read_all(path: Path) -> dict[str, bytes]:
    with bounded.open_archive(path, path.name, limit=1 << 20) as archive:
        return {info.filename: archive.read(info) for info in archive.members()}


def test_a_good_archive_reads_whole(tmp_path):
    path = _zip(tmp_path / "a.zip", {"A.json": b'{"id": "A"}', "sub/B.json": b"{}"})
    assert _read_all(path) == {"A.json": b'{"id": "A"}', "sub/B.json": b"{}"}


def test_a_bomb_is_refused_from_its_central_directory(tmp_path):
    path = _zip(tmp_path / "bomb.zip", {"X.json": b"0" * (8 << 20)})
    with (
        bounded.open_archive(path, "bomb.zip", limit=64 << 20) as archive,
        pytest.raises(bounded.BadArchive, match=r"X.json: .*more than 200 times: a zip bomb"),
    ):
        archive.members()


def test_a_member_declared_over_the_limit_is_refused(tmp_path):
    path = _zip(tmp_path / "big.zip", {"X.json": os.urandom(2 << 20)}, zipfile.ZIP_STORED)
    with pytest.raises(bounded.BadArchive, match=r"declared 2097152 bytes, more than 1 MiB"):
        _read_all(path)


def _lie(path: Path, size: int) -> None:
    """Rewrite the member's declared size in both headers (the central directory and the local one)."""
    data = bytearray(path.read_bytes())
    local = data.find(b"PK\x03\x04")
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, local + 22, size)
    struct.pack_into("<I", data, central + 24, size)
    path.write_bytes(bytes(data))


def test_a_member_that_inflates_past_its_declared_size_is_refused(tmp_path):
    path = _zip(tmp_path / "lie.zip", {"X.json": b"{}" + b" " * 5000})
    _lie(path, 10)
    with pytest.raises(bounded.BadArchive, match=r"X.json: cannot be read"):
        _read_all(path)


@pytest.mark.parametrize("name", ["../x.json", "/etc/x.json", "a/../../x.json", "a\\..\\x.json", "C:/x.json"])
def test_a_member_named_out_of_the_archive_is_refused(tmp_path, name):
    path = _zip(tmp_path / "names.zip", {name: b"{}"})
    with pytest.raises(bounded.BadArchive, match="not a relative path inside the archive"):
        _read_all(path)


def test_too_many_members_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(bounded, "MAX_MEMBERS", 3)
    path = _zip(tmp_path / "many.zip", {f"{i}.json": b"{}" for i in range(4)})
    with pytest.raises(bounded.BadArchive, match="4 members, more than 3"):
        _read_all(path)


def test_the_total_inflated_is_bounded(tmp_path):
    path = _zip(tmp_path / "t.zip", {f"{i}.json": os.urandom(1000) for i in range(4)}, zipfile.ZIP_STORED)
    with bounded.open_archive(path, "t.zip", limit=2000, total=2500) as archive:
        infos = archive.members()
        archive.read(infos[0])
        archive.read(infos[1])
        with pytest.raises(bounded.BadArchive, match="more than 2500 bytes inflated over the archive"):
            archive.read(infos[2])


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder", "not-a-zip"])
def test_an_archive_that_is_not_a_regular_zip_is_refused_unread(tmp_path, kind):
    path = tmp_path / "x.zip"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_bytes(b"PK" + b"\0" * 100)
    with pytest.raises(InputError, match=r"x.zip: (not a regular file|not a zip archive)"):
        bounded.open_archive(path, "x.zip")


def test_read_in_refuses_a_symlink_out_and_reads_one_inside(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    (tmp_path / "secret").write_text("hunter2")
    (folder / "out").symlink_to(tmp_path / "secret")
    (folder / "real").write_text("ok")
    (folder / "in").symlink_to(folder / "real")
    with pytest.raises(bounded.Outside, match="out: a symlink leading outside the folder f/; refused unread"):
        bounded.read_in(folder, "out")
    assert bounded.read_in(folder, "in") == b"ok"


def test_read_text_names_the_first_byte_that_is_not_utf8(tmp_path):
    (tmp_path / "x.txt").write_bytes(b"\xef\xbb\xbfok\xff")
    with pytest.raises(InputError, match=r"x.txt: not UTF-8 text \(byte offset 5\)"):
        bounded.read_text(tmp_path / "x.txt", "x.txt")
    (tmp_path / "y.txt").write_bytes(b"\xef\xbb\xbfok")
    assert bounded.read_text(tmp_path / "y.txt", "y.txt") == "ok"


@pytest.mark.parametrize("content", [b'{"a": 1}', b"[" * 100_000, b"\xff\xfe", b"not json", None, "fifo", "dev-zero"])
def test_a_cache_that_is_anything_but_json_counts_as_none(tmp_path, content):
    path = tmp_path / "cache.json"
    if content == "fifo":
        os.mkfifo(path)
    elif content == "dev-zero":
        path.symlink_to("/dev/zero")
    elif content is not None:
        path.write_bytes(content)
    assert bounded.read_cache(path) == ({"a": 1} if content == b'{"a": 1}' else None)
