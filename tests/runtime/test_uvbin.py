"""The pinned uv binary (never one from PATH) and write errors that name the file."""

from __future__ import annotations

import errno
import os
import stat
from importlib import metadata
from pathlib import Path

import pytest

from lockgen.runtime import uvbin
from lockgen.runtime.errors import UvMissing, WriteError
from lockgen.runtime.writing import write_error, writing


class FakeDistribution(metadata.Distribution):
    """An installed ``uv`` with the given RECORD text, its files under ``root/site-packages``."""

    def __init__(self, root: Path, record: str | None):
        self.root, self.record = root, record

    def read_text(self, filename: str) -> str | None:
        return self.record if filename == "RECORD" else None

    def locate_file(self, path: str | os.PathLike[str]) -> Path:
        return self.root / "lib" / "python3.12" / "site-packages" / path


def installed(monkeypatch, tmp_path, record: str | None, binary: bool = True, executable: bool = True) -> Path:
    """Pretend ``uv`` is installed in ``tmp_path`` (a venv layout); returns where its binary is."""
    uvbin.pinned_uv_binary.cache_clear()
    site = tmp_path / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    bin_path = tmp_path / "bin" / "uv"
    if binary:
        bin_path.parent.mkdir()
        bin_path.write_text("#!/bin/sh\n")
        bin_path.chmod(0o755 if executable else 0o644)
    distribution = FakeDistribution(tmp_path, record)
    monkeypatch.setattr(uvbin.metadata, "files", lambda name: distribution.files)
    # a uv on PATH that must never be used
    decoy = tmp_path / "path-bin" / "uv"
    decoy.parent.mkdir()
    decoy.write_text("#!/bin/sh\n")
    decoy.chmod(0o755)
    monkeypatch.setenv("PATH", str(decoy.parent))
    return bin_path


RECORD = "uv/__init__.py,sha256=x,10\nuv/_find_uv.py,sha256=y,20\n../../../bin/uv,sha256=z,30\n../../../bin/uvx,sha256=w,40\n"


@pytest.fixture(autouse=True)
def _fresh_cache():
    uvbin.pinned_uv_binary.cache_clear()
    yield
    uvbin.pinned_uv_binary.cache_clear()


@pytest.mark.skipif(os.name == "nt", reason="POSIX venv layout")
def test_the_binary_listed_in_the_record(monkeypatch, tmp_path):
    binary = installed(monkeypatch, tmp_path, RECORD)
    assert uvbin.pinned_uv_binary() == str(binary)


@pytest.mark.skipif(os.name == "nt", reason="POSIX venv layout")
@pytest.mark.parametrize(
    ("record", "binary", "executable", "message"),
    [
        (RECORD, False, True, "the pinned uv package's binary is missing (expected at "),
        (RECORD, True, False, "the pinned uv package's binary is missing (expected at "),
        (
            RECORD.replace("../../../bin/uv,", "../../../bin/uv-other,"),
            True,
            True,
            "the pinned uv package's binary is missing: ",
        ),
        (None, True, True, "the installed uv package lists no files (no RECORD)"),
    ],
    ids=["binary-deleted", "not-executable", "not-in-record", "no-record"],
)
def test_a_missing_binary_is_an_error_never_path(monkeypatch, tmp_path, record, binary, executable, message):
    installed(monkeypatch, tmp_path, record, binary=binary, executable=executable)
    with pytest.raises(UvMissing) as info:
        uvbin.pinned_uv_binary()
    assert str(info.value).startswith(message)
    assert "reinstall" in str(info.value) and "pip install --force-reinstall 'uv==" in str(info.value)
    assert "path-bin" not in str(info.value)


def test_uv_not_installed(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(uvbin.metadata, "files", missing)
    with pytest.raises(
        UvMissing,
        match=r"the pinned uv package is not installed: reinstall lockgen \(pip install --force-reinstall 'uv==\d",
    ):
        uvbin.pinned_uv_binary()


def test_the_real_install():
    path = Path(uvbin.pinned_uv_binary())
    assert path.name in ("uv", "uv.exe") and path.is_file()


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        (errno.EROFS, "the file system is read-only; run lockgen in a writable copy of the project"),
        (errno.EACCES, "no permission to write there"),
        (errno.EPERM, "no permission to write there"),
        (errno.ENOSPC, "the disk is full; free some space"),
        (errno.EDQUOT, "the disk quota is used up"),
        (errno.ENAMETOOLONG, "the path is too long"),
        (errno.EIO, "check that the folder exists and can be written"),
    ],
    ids=["read-only", "access", "permission", "disk-full", "quota", "name-too-long", "other"],
)
def test_write_errors_name_the_path_and_what_to_do(code, hint):
    with pytest.raises(WriteError) as info, writing("locks/manifest.json"):
        raise OSError(code, os.strerror(code), "/abs/locks/.manifest.json.x1.tmp")
    error = info.value
    assert str(error) == f"cannot write locks/manifest.json: {os.strerror(code)}; {error.hint}"
    assert hint in error.hint and error.exit_code == 1 and error.path == "locks/manifest.json"
    assert isinstance(error.__cause__, OSError)


def test_a_real_write_into_a_folder_that_is_a_file(tmp_path):
    (tmp_path / "locks").write_text("not a folder")
    with (
        pytest.raises(WriteError, match=r"cannot write locks/a\.txt: Not a directory; a file stands where a folder"),
        writing("locks/a.txt"),
    ):
        (tmp_path / "locks" / "a.txt").write_text("x")
    (tmp_path / "b").mkdir()
    assert "a folder stands where the file should be" in str(
        write_error("b", IsADirectoryError(errno.EISDIR, "Is a directory"))
    )


@pytest.mark.skipif(os.name == "nt" or os.geteuid() == 0, reason="root writes anywhere")
def test_a_real_read_only_folder(tmp_path):
    folder = tmp_path / "locks"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(WriteError, match="no permission to write there"), writing("locks/a.txt"):
            (folder / "a.txt").write_text("x")
    finally:
        folder.chmod(0o755)
