"""Source distributions for tests: static PEP 643 metadata, so uv reads them without building."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path


def sdist(folder: Path, name: str, version: str) -> Path:
    """A source distribution with static PEP 643 metadata (uv reads it without building)."""
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
