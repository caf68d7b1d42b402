"""The distribution factory for hermetic tests: tiny but valid wheels and sdists.

:func:`make_wheel` builds a real wheel (``METADATA``, ``WHEEL`` with its tags, ``RECORD`` with
hashes); :func:`make_sdist` a source distribution with static PEP 643 metadata (uv reads it
without building). :mod:`tests.support.fakehost` serves them on loopback.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import marshal
import re
import sys
import tarfile
import zipfile
from pathlib import Path

from packaging.tags import parse_tag


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    folder: Path,
    name: str,
    version: str,
    tag: str = "py3-none-any",
    requires: tuple[str, ...] = (),
    requires_python: str | None = None,
    metadata: tuple[str, ...] = (),
    files: dict[str, bytes] | None = None,
    *,
    scripts: dict[str, str] | None = None,
    bytecode: bool = False,
    duplicated: bool = False,
) -> Path:
    """Write ``<name>-<version>-<tag>.whl`` into ``folder`` and return its path. ``metadata``:
    more core metadata lines (``License-Expression: MIT``, ``Classifier: …``); ``files``: more
    members (``torch/lib/libtorch_cuda.so`` -> bytes), listed in RECORD like the others.

    The shapes of real wheels, on request: ``scripts`` (``{"f2py": "numpy.f2py:main"}``) become
    ``[console_scripts]`` in ``entry_points.txt``, which installers turn into files of ``bin/``;
    ``bytecode`` ships a ``__pycache__/<module>.<tag>.pyc`` (this interpreter's tag, a valid
    timestamp pyc) beside each ``.py``, listed in RECORD with its hash, which pip compiles over;
    ``duplicated`` lists the package's ``__init__.py`` twice in RECORD (wheels built by some tools do).

    ``tag`` may be a compressed tag set (``cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64``);
    the ``WHEEL`` file lists every tag it expands to, as real wheels do.
    """
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    more_metadata = metadata
    metadata = [
        "Metadata-Version: 2.4" if more_metadata else "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
    ]
    if requires_python:
        metadata.append(f"Requires-Python: {requires_python}")
    extras = sorted({m for r in requires for m in re.findall(r"""extra\s*==\s*['"]([^'"]+)['"]""", r)})
    metadata += [f"Provides-Extra: {e}" for e in extras]  # as real wheels declare the extras their requires use
    metadata += [f"Requires-Dist: {r}" for r in requires]
    metadata += list(more_metadata)
    wheel = ["Wheel-Version: 1.0", "Generator: lockgen-tests", "Root-Is-Purelib: true"]
    wheel += [f"Tag: {t}" for t in sorted(str(t) for t in parse_tag(tag))]
    files = {
        f"{dist}/__init__.py": f'__version__ = "{version}"\n'.encode(),
        f"{info}/METADATA": ("\n".join(metadata) + "\n").encode(),
        f"{info}/WHEEL": ("\n".join(wheel) + "\n").encode(),
        **(files or {}),
    }
    if scripts:
        lines = ["[console_scripts]", *(f"{k} = {v}" for k, v in sorted(scripts.items()))]
        files[f"{info}/entry_points.txt"] = ("\n".join(lines) + "\n").encode()
    if bytecode:
        files.update(_bytecode(files))
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in files.items()]
    if duplicated:
        record.insert(1, record[0])
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"{dist}-{version}-{tag}.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in files.items():
            zf.writestr(zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0)), data)
    folder.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return path


def _bytecode(files: dict[str, bytes]) -> dict[str, bytes]:
    """``{"<pkg>/__pycache__/<module>.<tag>.pyc": pyc}`` for each ``.py`` of ``files``: this
    interpreter's bytecode in a timestamp pyc (PEP 552 header: magic, flags 0, mtime 0, size)."""
    out = {}
    for path, data in files.items():
        if path.endswith(".py"):
            folder, _, module = path.rpartition("/")
            code = marshal.dumps(compile(data, path, "exec"))
            header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") * 2 + len(data).to_bytes(4, "little")
            out[f"{folder}/__pycache__/{module[:-3]}.{sys.implementation.cache_tag}.pyc"] = header + code
    return out


def make_sdist(folder: Path, name: str, version: str) -> Path:
    """Write ``<name>-<version>.tar.gz`` (``PKG-INFO`` with Metadata-Version 2.2, a minimal
    ``pyproject.toml``) into ``folder`` and return its path."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for member, text in {
            "PKG-INFO": f"Metadata-Version: 2.2\nName: {name}\nVersion: {version}\n",
            "pyproject.toml": f'[project]\nname = "{name}"\nversion = "{version}"\n',
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{member}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path = folder / f"{name}-{version}.tar.gz"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return path
