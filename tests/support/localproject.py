"""A tiny local project for editable requirements (CASES C24): static metadata in its
``pyproject.toml`` and an in-tree PEP 517/660 build backend written with the standard library, so
pip and uv build it without fetching a build backend from an index (hermetic)."""

from __future__ import annotations

import textwrap
from pathlib import Path

_BACKEND = '''
"""A PEP 517/660 build backend in 40 lines of standard library (tests only)."""
import base64, hashlib, os, zipfile

NAME, VERSION = {name!r}, {version!r}
MODULE = NAME.replace("-", "_") + "_pkg"
DIST = f"{{NAME.replace('-', '_')}}-{{VERSION}}.dist-info"
META = f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{VERSION}}\\n"
HERE = os.path.dirname(os.path.abspath(__file__))


def _wheel(directory, files):
    name = f"{{NAME.replace('-', '_')}}-{{VERSION}}-py3-none-any.whl"
    files = {{**files, f"{{DIST}}/METADATA": META,
             f"{{DIST}}/WHEEL": "Wheel-Version: 1.0\\nGenerator: tests\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}}
    record = []
    with zipfile.ZipFile(os.path.join(directory, name), "w") as zf:
        for path, text in files.items():
            data = text.encode()
            zf.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{{path}},sha256={{digest}},{{len(data)}}")
        record.append(f"{{DIST}}/RECORD,,")
        zf.writestr(f"{{DIST}}/RECORD", "\\n".join(record) + "\\n")
    return name


def _metadata(directory, config_settings=None):
    os.makedirs(os.path.join(directory, DIST), exist_ok=True)
    with open(os.path.join(directory, DIST, "METADATA"), "w") as file:
        file.write(META)
    return DIST


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_editable = get_requires_for_build_wheel
prepare_metadata_for_build_wheel = prepare_metadata_for_build_editable = _metadata


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with open(os.path.join(HERE, MODULE, "__init__.py")) as file:
        return _wheel(wheel_directory, {{f"{{MODULE}}/__init__.py": file.read()}})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {{f"{{NAME.replace('-', '_')}}.pth": HERE + "\\n"}})
'''


def local_project(folder: Path, name: str = "sub", version: str = "0.1.0") -> Path:
    """Write the project ``name`` into ``folder``: module ``<name>_pkg`` (``WHERE = "<name>"``),
    static metadata, the in-tree backend. Returns ``folder``."""
    module = folder / f"{name.replace('-', '_')}_pkg"
    module.mkdir(parents=True, exist_ok=True)
    (module / "__init__.py").write_text(f'WHERE = "{name}"\n')
    (folder / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
        [build-system]
        requires = []
        build-backend = "backend"
        backend-path = ["."]

        [project]
        name = "{name}"
        version = "{version}"
    """)
    )
    (folder / "backend.py").write_text(_BACKEND.format(name=name, version=version))
    return folder


def setup_py_project(
    folder: Path, name: str = "legacy", version: str = "0.1.0", requires: tuple[str, ...] = ()
) -> Path:
    """A setuptools project with a ``setup.py`` only (dynamic metadata: uv must run it to lock
    it, and setuptools writes ``<name>.egg-info`` into ``folder``). Its build needs setuptools
    from the index: serve :func:`setuptools_wheels`. Returns ``folder``."""
    module = folder / f"{name.replace('-', '_')}_pkg"
    module.mkdir(parents=True, exist_ok=True)
    (module / "__init__.py").write_text(f'WHERE = "{name}"\n')
    (folder / "pyproject.toml").write_text(  # setuptools alone (the legacy default also needs wheel)
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    (folder / "setup.py").write_text(
        "from setuptools import setup\n"
        f"setup(name={name!r}, version={version!r}, packages=[{module.name!r}], install_requires={list(requires)!r})\n"
    )
    return folder


def setuptools_wheels() -> list[Path] | None:
    """Real setuptools and wheel wheels this machine already has (CPython ships them with
    ensurepip and its test suite), to serve a setup.py project's build from a fake index
    (hermetic); None when either is missing (the test skips)."""
    import sys

    from packaging.version import Version

    versions = Path(sys.base_prefix).parent  # pyenv: the folder of every installed CPython
    found = []
    for name in ("setuptools", "wheel"):
        wheels = sorted(
            versions.glob(f"*/lib/python3*/**/{name}-[0-9]*-py3-none-any.whl"),
            key=lambda p: Version(p.name.split("-")[1]),
        )
        if not wheels:
            return None
        found.append(wheels[-1])
    return found
