"""The fuzz tier's TOML readers: the config validator, ``lockgen init``'s pyproject reader, a local
project's ``[tool.uv]`` tables and ``pylock.toml``, each fed a real document with one subtree
replaced by any value (``_mutated``, as in :mod:`tests.fuzz.test_parsers`). Each ends in a value or
a named refusal (lockgen's error root), never a ``TypeError``, ``AttributeError`` or ``KeyError``.
"""

from __future__ import annotations

import atexit
import contextlib
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import given
from hypothesis import strategies as st

from lockgen.config.load import parse_toml
from lockgen.config.validate import Validator
from lockgen.locks import pylockfile
from lockgen.plan import uvtables
from lockgen.plan.plan import project_files
from lockgen.runtime.errors import LockgenError
from lockgen.scaffold import Options, scaffold
from lockgen.scaffold.pyproject import read_pyproject
from tests.fuzz.test_parsers import FUZZ, _mutated

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).parents[2]


def _config() -> dict[str, Any]:
    """The documented example config (docs/configuration.md), its commented keys too."""
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    block = re.search(r"```toml\n(.*?)```", text, re.S)
    assert block is not None
    body = re.sub(r"^# (allow-mix|interpreter|project) ", r"\1 ", block[1], flags=re.M)
    body = body.replace('# variant = ["full", "portable"]', 'variant = ["full", "portable"]')
    return parse_toml(body)["tool"]["lockgen"]


CONFIG = _config()
CONFIGS = [CONFIG, parse_toml((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["lockgen"]]
INVOKEAI = parse_toml(
    (ROOT / "tests" / "data" / "realworld" / "InvokeAI" / "pyproject.toml").read_text(encoding="utf-8")
)
PYPROJECT = parse_toml("""\
[project]
name = "app"
version = "1.0"
requires-python = ">=3.11"
dynamic = ["version"]
dependencies = ["numpy", "torch>=2.5"]

[project.optional-dependencies]
cpu = ["torch==2.7.1+cpu"]
cu128 = ["torch==2.7.1+cu128; sys_platform == 'linux'"]

[dependency-groups]
lint = ["ruff"]
dev = [{include-group = "lint"}, "pytest"]

[tool.uv]
conflicts = [[{ extra = "cpu" }, { extra = "cu128" }]]
environments = ["sys_platform == 'linux'", "sys_platform == 'win32'"]
override-dependencies = ["numpy<3"]
constraint-dependencies = ["pillow<12"]
prerelease = "allow"
cache-keys = [{ file = "requirements.txt" }, { file = "**/*.cfg" }]

[tool.uv.sources]
torch = [{ index = "torch-cpu", extra = "cpu" }, { index = "torch-cu128", extra = "cu128", marker = "sys_platform == 'linux'" }]
local = { path = "sub", editable = true }
remote = { git = "https://example.org/remote" }

[[tool.uv.index]]
name = "torch-cpu"
url = "https://download.pytorch.org/whl/cpu"
explicit = true

[[tool.uv.index]]
name = "torch-cu128"
url = "https://download.pytorch.org/whl/cu128"
explicit = true
format = "flat"

[tool.setuptools.dynamic]
dependencies = { file = ["requirements.txt"] }
optional-dependencies = { gpu = { file = "requirements-gpu.txt" } }
""")
PYLOCK = parse_toml(next(iter(sorted((ROOT / "locks").glob("*/pylock.toml")))).read_text(encoding="utf-8"))
PYLOCK = {**PYLOCK, "extras": ["gpu"], "packages": [*PYLOCK["packages"][:3],
          {"name": "local", "directory": {"path": "sub", "editable": True}},
          {"name": "vcs", "vcs": {"type": "git", "url": "https://x/y", "commit-id": "a" * 40}}]}  # fmt: skip

#: Where init and the local-project readers find the pyproject.toml of an example (hypothesis
#: runs many examples per test; a fixture's folder would be shared by them all the same).
FOLDER = Path(tempfile.mkdtemp(prefix="lockgen-fuzz-toml-"))  # hypothesis reuses one folder across examples
atexit.register(shutil.rmtree, FOLDER, True)
(FOLDER / "requirements.txt").write_text("numpy\n")


def _toml(value: Any) -> Any:
    """``value`` as TOML can hold it: a null (JSON's, which TOML has not) becomes a string."""
    if isinstance(value, dict):
        return {k: _toml(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_toml(v) for v in value]
    return "null" if value is None else value


def _mutated_toml(data: st.DataObject, document: dict[str, Any]) -> dict[str, Any] | None:
    """A mutation of ``document`` that is a TOML document (a table), else None."""
    value = _toml(_mutated(data, document))
    return value if isinstance(value, dict) else None


@FUZZ
@given(st.data())
def test_the_config_validator_names_any_shape_by_its_key_path(data):
    table = _mutated_toml(data, data.draw(st.sampled_from(CONFIGS)))
    if table is None:  # load_config refuses a [tool.lockgen] that is no table first
        return
    with contextlib.suppress(LockgenError):
        Validator("pyproject.toml", "tool.lockgen", read_toml=parse_toml).config(table, FOLDER)


@FUZZ
@given(st.data())
def test_inits_pyproject_reader_reads_any_shape_or_names_the_key(data):
    document = _mutated_toml(data, data.draw(st.sampled_from([PYPROJECT, INVOKEAI])))
    if document is None:
        return
    with contextlib.suppress(LockgenError):
        read_pyproject(document)
    (FOLDER / "pyproject.toml").write_text(tomlkit.dumps(document), encoding="utf-8")
    with contextlib.suppress(LockgenError):
        scaffold(FOLDER, Options(pythons=("3.12",), exclude_newer="2026-11-25"))


@FUZZ
@given(st.data())
def test_a_local_projects_tables_of_any_shape_read_leniently(data):
    document = _mutated_toml(data, PYPROJECT)
    if document is None:
        return
    (FOLDER / "pyproject.toml").write_text(tomlkit.dumps(document), encoding="utf-8")
    uvtables.brought(FOLDER, ["."])
    project_files(FOLDER)


@FUZZ
@given(st.data())
def test_a_pylock_of_any_shape_is_read_or_named(data):
    document = _mutated_toml(data, PYLOCK)
    if document is None:
        return
    try:
        pylock = pylockfile.loads(tomlkit.dumps(document), "locks/x/pylock.toml")
    except LockgenError:
        return
    pylockfile.main_only(pylock)
    for package in pylock.packages:
        pylockfile.sha256s(package)
        for _, artifact in pylockfile.artifacts(package):
            pylockfile.file_name(artifact)
    pylockfile.loads(pylockfile.dumps(pylock), "again")
