"""A folder of wheels for installing lockgen without a network: its dependencies (and the build
backend) repacked from the distributions the test run itself has installed.

``pip``, ``uv tool install`` and ``pipx`` then install the lockgen wheel that ``python -m build``
made, with ``--no-index --find-links <wheelhouse>``: every dependency resolves as it would from
PyPI, only from local files. A repacked wheel holds the installed files (``RECORD`` lists them),
with a fresh ``RECORD``; scripts outside ``site-packages`` (uv's binary) go to
``<name>-<version>.data/scripts/``; console scripts made from entry points are left to the
installer, as in a wheel built from source.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sysconfig
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

__all__ = ["closure", "offline_env", "repack", "source_copy", "wheelhouse"]

_SKIP = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def closure(roots: Iterable[str]) -> list[metadata.Distribution]:
    """The installed distributions ``roots`` need (requirement names), transitively, without
    extras; markers evaluated for this interpreter."""
    environment = {**default_environment(), "extra": ""}
    seen: dict[NormalizedName, metadata.Distribution] = {}
    todo = [Requirement(r) for r in roots]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker is not None and not requirement.marker.evaluate(environment)):
            continue
        dist = metadata.distribution(requirement.name)
        seen[name] = dist
        todo += [Requirement(r) for r in dist.requires or ()]
    return sorted(seen.values(), key=lambda d: canonicalize_name(d.metadata["Name"]))


def _tag(dist: metadata.Distribution) -> str:
    """The (compressed) wheel tag of an installed distribution, from its ``WHEEL`` file."""
    tags = [
        line.split(":", 1)[1].strip()
        for line in (dist.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag:")
    ]
    parts = [sorted({tag.split("-")[i] for tag in tags}) for i in range(3)]
    return "-".join(".".join(p) for p in parts) if tags else "py3-none-any"


def repack(dist: metadata.Distribution, folder: Path) -> Path:
    """Write a wheel of the installed ``dist`` into ``folder``; returns its path."""
    name = canonicalize_name(dist.metadata["Name"]).replace("-", "_")
    version = dist.version
    info = f"{name}-{version}.dist-info"
    scripts = Path(sysconfig.get_path("scripts")).resolve()
    console = {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}
    path = folder / f"{name}-{version}-{_tag(dist)}.whl"
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in dist.files or ():
            source = Path(os.path.normpath(dist.locate_file(entry)))
            parts = entry.parts
            if "__pycache__" in parts or entry.suffix == ".pyc" or not source.is_file():
                continue
            if parts[0] == "..":
                if source.parent != scripts or source.name in console:
                    continue
                arcname = f"{name}-{version}.data/scripts/{source.name}"
            elif parts[0].endswith(".dist-info"):
                if entry.name in _SKIP:
                    continue
                arcname = f"{info}/{'/'.join(parts[1:])}"
            else:
                arcname = entry.as_posix()
            data = source.read_bytes()
            info_ = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info_.external_attr = (
                0o100755 if os.access(source, os.X_OK) else 0o100644
            ) << 16  # a regular file (pip checks)
            archive.writestr(info_, data, zipfile.ZIP_DEFLATED)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arcname},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def wheelhouse(folder: Path, roots: Iterable[str]) -> Path:
    """``folder`` filled with a wheel of each installed distribution ``roots`` need."""
    folder.mkdir(parents=True, exist_ok=True)
    for dist in closure(roots):
        repack(dist, folder)
    return folder


def runtime_requirements() -> list[str]:
    """lockgen's own requirements, without the extras' (read from the installed metadata)."""
    found = []
    for text in metadata.requires("lockgen") or []:
        requirement = Requirement(text)
        if requirement.marker is None or "extra" not in str(requirement.marker):
            found.append(str(requirement))
    return found


def offline_env(house: Path, uv_cache: Path) -> dict[str, str]:
    """An environment for subprocesses in which pip (and the isolated builds it runs) finds
    packages only in the wheelhouse ``house`` made for lockgen (:func:`wheelhouse` of
    :func:`runtime_requirements`, setuptools and pip) and reads no configuration; the wheelhouse
    is also ``WHEELHOUSE``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "PIPX_", "VIRTUAL_ENV"))}
    return {
        **clean, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(house),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never",
        "UV_CACHE_DIR": str(uv_cache), "WHEELHOUSE": str(house),
    }  # fmt: skip


def lockgen_wheelhouse(folder: Path) -> Path:
    """:func:`wheelhouse` of what installing and building lockgen needs."""
    return wheelhouse(folder, [*runtime_requirements(), "setuptools>=77", "pip"])


def source_copy(repo: Path, target: Path) -> Path:
    """The repository's files (tracked, and new ones not ignored) copied to ``target``: a build
    leaves ``*.egg-info`` in its source folder."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        if (repo / rel).is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, target / rel)
    return target
