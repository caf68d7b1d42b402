"""Shared fixtures: a uv cache for the session, the fake index, project folders and the CLI."""

from __future__ import annotations

import contextlib
import io
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from lockgen.cli import main
from tests.fakeindex import FakeIndex


@pytest.fixture(scope="session")
def uv_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("uv-cache")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, uv_cache):
    """Every test: a private uv cache, and no uv settings from the developer's environment."""
    monkeypatch.setenv("UV_CACHE_DIR", str(uv_cache))
    monkeypatch.delenv("UV_INDEX_URL", raising=False)


@pytest.fixture
def index(tmp_path) -> FakeIndex:
    """A running fake index; add wheels, then ``index.publish()``."""
    fake = FakeIndex(tmp_path / "index").start()
    yield fake
    fake.stop()


@dataclass
class Run:
    code: int
    out: str
    err: str


def run_cli(*args: str) -> Run:
    """Run ``lockgen ARGS`` in-process and capture its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
    return Run(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli():
    return run_cli


def write_project(root: Path, config: str, templates: dict[str, str], name: str = "pyproject.toml") -> Path:
    """Write a project: a config file (``[tool.lockgen]`` body for pyproject.toml) and templates."""
    root.mkdir(parents=True, exist_ok=True)
    text = textwrap.dedent(config).strip() + "\n"
    (root / name).write_text(text if name != "pyproject.toml" else "[tool.lockgen]\n" + text)
    for rel, body in templates.items():
        path = root / "templates" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(body).lstrip())
    return root
