"""Tiny local Python projects and git repositories for the requirement-form tests (issue 9).

A project has static PEP 621 metadata in its ``pyproject.toml`` (uv reads it without building)
and an in-tree PEP 517 backend with no build requirements, so pip and uv can build and install it
with no index. With ``dynamic_version`` the version is only known by building (uv must build it
to lock it). A git repository stands in for a remote: ``git+file://`` URLs.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

_BACKEND = '''
"""An in-tree PEP 517 backend: a pure wheel of one package (tests only)."""
import base64, hashlib, os, zipfile

NAME, VERSION, REQUIRES = {name!r}, {version!r}, {requires!r}


def _hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(wheel_directory, extra):
    dist = NAME.replace("-", "_")
    info = f"{{dist}}-{{VERSION}}.dist-info"
    meta = f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{VERSION}}\\n" + "".join(f"Requires-Dist: {{r}}\\n" for r in REQUIRES)
    files = {{f"{{info}}/METADATA": meta.encode(), f"{{info}}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}}
    files.update(extra)
    record = "".join(f"{{p}},{{_hash(d)}},{{len(d)}}\\n" for p, d in files.items()) + f"{{info}}/RECORD,,\\n"
    files[f"{{info}}/RECORD"] = record.encode()
    name = f"{{dist}}-{{VERSION}}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    module = NAME.replace("-", "_")
    return _wheel(wheel_directory, {{f"{{module}}/__init__.py": f"VERSION = {{VERSION!r}}\\n".encode()}})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    here = os.path.dirname(os.path.abspath(__file__))
    return _wheel(wheel_directory, {{f"_{{NAME.replace('-', '_')}}_editable.pth": (here + "\\n").encode()}})


def build_sdist(sdist_directory, config_settings=None):
    raise NotImplementedError("tests build wheels only")
'''


def local_project(
    folder: Path, name: str, version: str, requires: tuple[str, ...] = (), dynamic_version: bool = False
) -> Path:
    """Write a project into ``folder`` (its module is ``name`` with ``_``) and return ``folder``."""
    module = folder / name.replace("-", "_")
    module.mkdir(parents=True, exist_ok=True)
    (module / "__init__.py").write_text(f"VERSION = {version!r}\n")
    deps = ", ".join(f'"{r}"' for r in requires)
    version_line = 'dynamic = ["version"]' if dynamic_version else f'version = "{version}"'
    (folder / "pyproject.toml").write_text(
        textwrap.dedent(f"""\
        [project]
        name = "{name}"
        {version_line}
        dependencies = [{deps}]

        [build-system]
        requires = []
        build-backend = "backend"
        backend-path = ["."]
    """)
    )
    (folder / "backend.py").write_text(_BACKEND.format(name=name, version=version, requires=tuple(requires)))
    return folder


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (no user config) and return its stripped output."""
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null", "PATH": "/usr/bin:/bin",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid"}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def git_repo(folder: Path, name: str, version: str, branch: str = "feature", requires: tuple[str, ...] = (),
             dynamic_version: bool = False) -> Path:  # fmt: skip
    """A git repository holding one project, with a ``main`` branch and ``branch`` at its commit."""
    local_project(folder, name, version, requires, dynamic_version)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "first")
    git(folder, "branch", branch)
    return folder
