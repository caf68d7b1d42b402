"""Shared fixtures: a uv cache for the session, fake package hosts, project folders and the CLI.

Markers (registered in pyproject.toml):

* ``uv``: the test runs the real uv binary (directly, or through ``lockgen all``/``lock``). Added
  here to every test that uses a fake host (the fixtures in :data:`UV_FIXTURES` or anything built
  on them); a test that runs uv without one carries ``@pytest.mark.uv``. A test without the
  marker that starts uv fails and says so, so ``pytest -m "not uv"`` is the pure, fast loop.
* ``network``: the test needs real PyPI (opt-in: ``pytest -m network``); it runs uv too.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lockgen.cli import main
from tests.support.fakehost import FakeHost, Handler
from tests.support.faulthost import FaultHost

# pytest rewrites the asserts of every test module and keeps the result in __pycache__ (ignored by
# git) unless bytecode writing is off; with PYTHONDONTWRITEBYTECODE set (some CI images and this
# machine set it) every run parsed and rewrote all of them again: about 2 s of each worker's CPU.
sys.dont_write_bytecode = False

#: Fixtures that serve a fake host: a test using one (even through another fixture) runs uv.
UV_FIXTURES = frozenset({"fake_host", "shared_fake_host", "index", "pypi"})


def _needs_import_driver(item) -> bool:
    return "imported_alone" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items):
    for item in items:
        if UV_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.uv)
    items.sort(key=_needs_import_driver)  # last: their processes run beside the other tests


def pytest_collection_finish(session):
    """Start the fresh-interpreter import check (tests/repo/test_imports.py) now if a selected test
    needs it: it runs in its own processes beside the other tests."""
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: every worker collects every test; the one that runs them starts it
    if not session.config.option.collectonly and any(map(_needs_import_driver, session.items)):
        from tests.repo.test_imports import DRIVER_KEY, start_driver

        driver = start_driver()
        if driver is not None:
            session.config.stash[DRIVER_KEY] = driver


# -- environment ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def uv_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("uv-cache")


@contextlib.contextmanager
def uv_environment(uv_cache: Path) -> Iterator[pytest.MonkeyPatch]:
    """The session's uv cache, and no uv or lockgen settings from the developer's environment.
    For fixtures wider than a test (``with uv_environment(uv_cache): …``)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UV_CACHE_DIR", str(uv_cache))
        for name in ("UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS", "LOCKGEN_MIRRORS"):
            mp.delenv(name, raising=False)
        yield mp


SCHEMA = Path(__file__).parents[1] / "docs" / "manifest.schema.json"


@functools.cache
def _schema_validator():
    import json

    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))


def schema_problems(data: object) -> list[str]:
    """Where ``data`` breaks ``docs/manifest.schema.json`` (JSON Schema 2020-12): ``path: message``."""
    return [f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _schema_validator().iter_errors(data)]


@pytest.fixture(scope="session", autouse=True)
def _manifests_follow_the_schema():
    """Every manifest lockgen writes during the tests (all go through ``manifest.dumps``) is
    validated against docs/manifest.schema.json; a violation fails the run that wrote it."""
    from lockgen.locks import manifest

    original = manifest.dumps
    valid: set[str] = set()  # texts already validated (many runs write the same manifest)

    def checked(data):
        text = original(data)
        if text not in valid:
            problems = schema_problems(data)
            assert not problems, "manifest breaks docs/manifest.schema.json:\n" + "\n".join(problems)
            valid.add(text)
        return text

    checked.__wrapped__ = original
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest, "dumps", checked)
        yield


@pytest.fixture(scope="session", autouse=True)
def _no_sysfs_of_this_machine():
    """The selector's facts come from canned outputs in the tests: it reads no sysfs (the PCI
    bus, the amdgpu topology) of the machine that runs them, unless a test passes its own."""
    from lockgen import cellselect as select

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(select, "SYSFS", str(Path(__file__).parent / "data" / "detect" / "no-sysfs"))
        yield


@pytest.fixture(scope="session", autouse=True)
def _no_pause_between_retries():
    """``check --online`` pauses before retrying a failed request (0.5 s, then 1.5 s: a real
    host's hiccup passes). A fake host refusing a connection refuses it again at once: the tests
    keep every attempt and the finding it ends in, without the pauses (4 s of one test)."""
    from lockgen.rot import online

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(online, "_RETRIES", tuple(0.0 for _ in online._RETRIES))
        yield


#: TLS settings the hermetic tests never need: every fake host is plain HTTP on loopback. uv reads
#: every file in ``SSL_CERT_DIR`` when it starts (7 ms a run on a machine whose folder holds 290
#: certificates; the suite starts uv ~1,000 times). Tests marked ``network`` get them back.
_TLS_VARS = ("SSL_CERT_DIR", "SSL_CERT_FILE")


@pytest.fixture(scope="session", autouse=True)
def _session_env(uv_cache) -> Iterator[dict[str, str]]:
    """The whole session, module fixtures included: see :func:`uv_environment`; no TLS settings.
    Yields the TLS settings it removed."""
    removed = {name: os.environ[name] for name in _TLS_VARS if name in os.environ}
    with uv_environment(uv_cache) as mp:
        for name in _TLS_VARS:
            mp.delenv(name, raising=False)
        yield removed


@pytest.fixture(autouse=True)
def _isolated_env(request, _session_env, uv_cache):
    """Every test: see :func:`uv_environment` (undone after the test); a ``network`` test also
    gets the TLS settings back."""
    with uv_environment(uv_cache) as mp:
        if request.node.get_closest_marker("network"):
            for name, value in _session_env.items():
                mp.setenv(name, value)
        yield mp


@pytest.fixture(autouse=True)
def _uv_only_when_marked(request, monkeypatch):
    """A test not marked ``uv`` must not start uv: it would be slow in the pure loop."""
    if request.node.get_closest_marker("uv"):
        return

    class Guarded(subprocess.Popen):
        def __new__(cls, args, *rest, **kwargs):
            program = args if isinstance(args, (str, bytes, os.PathLike)) else args[0]
            if Path(os.fsdecode(program)).stem == "uv":
                raise AssertionError("this test starts uv: mark it @pytest.mark.uv (or use a fake-host fixture)")
            return super().__new__(cls)

    monkeypatch.setattr(subprocess, "Popen", Guarded)


def forbid_processes(monkeypatch) -> None:
    """From now on in this test, starting any process fails the test (a no-op run starts none)."""

    def no_process(*args, **kwargs):
        raise AssertionError(f"a no-op run started a process: {args}")

    monkeypatch.setattr(subprocess, "run", no_process)
    monkeypatch.setattr(subprocess, "Popen", no_process)


# -- fake hosts -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _host_factory(folder: Path):
    hosts: list[FakeHost] = []

    def make(name: str, handler: type[Handler] | None = None) -> FakeHost:
        host = FakeHost(folder / name, handler)
        hosts.append(host)
        return host

    try:
        yield make
    finally:
        for host in hosts:
            host.stop()


@pytest.fixture
def fake_host(tmp_path):
    """Make fake hosts for this test: ``fake_host("pypi")`` serves ``tmp_path/pypi``."""
    with _host_factory(tmp_path) as make:
        yield make


@pytest.fixture(scope="module")
def shared_fake_host(tmp_path_factory):
    """Like :func:`fake_host`, for the whole module: for worlds its tests only read."""
    with _host_factory(tmp_path_factory.mktemp("hosts")) as make:
        yield make


@pytest.fixture
def index(fake_host) -> FakeHost:
    """A running fake index of its own; ``index.add(...)`` wheels, then ``index.publish()``."""
    return fake_host("index")


@pytest.fixture
def pypi(tmp_path) -> Iterator[FaultHost]:
    """A fault-injecting host of its own (:class:`tests.support.faulthost.FaultHost`), serving ``tmp_path/pypi``."""
    host = FaultHost(tmp_path / "pypi")
    yield host
    host.stop()


# -- projects and the CLI ---------------------------------------------------------------------------


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


def run_ok(*args: str) -> Run:
    """:func:`run_cli` that must exit 0; a failure shows lockgen's output."""
    run = run_cli(*args)
    assert run.code == 0, f"lockgen {shlex.join(args)} exited {run.code}\n--- stderr\n{run.err}--- stdout\n{run.out}"
    return run


def lock_files(root: Path, locks: str = "locks") -> dict[str, bytes]:
    """Every file under ``root/locks`` (layer folders too), by relative path."""
    folder = root / locks
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_locked(root: Path, cells, locks: str = "locks") -> dict[str, bytes]:
    """Assert ``cells`` have non-empty lockgen locks and the manifest lists them; returns
    :func:`lock_files`."""
    files = lock_files(root, locks) if (root / locks).is_dir() else {}
    assert files.get("manifest.json"), f"no manifest in {root / locks}: {sorted(files)}"
    for cell in cells:
        text = files.get(f"{cell}.txt", b"")
        assert text.startswith(b"# This file is generated by lockgen"), (
            f"{cell}: no lock in {root / locks}: {sorted(files)}"
        )
        assert f'"{cell}"'.encode() in files["manifest.json"], f"{cell}: not in the manifest"
    return files


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


#: The running interpreter's minor version ("3.11"): the Python of cells whose locks a test installs.
HOST_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def one_cell(root: Path, index_url: str, requirements: str, *, python: str = "3.12", extra: str = "") -> Path:
    """A project with the single cell ``linux-x86_64-cpu-py<python>`` over ``index_url``;
    ``extra``: more lines for the top of ``[tool.lockgen]``."""
    config = f"""
        index-url = "{index_url}"
        {extra}
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["{python}"]
    """
    return write_project(root, config, {"requirements.in.j2": requirements})


def locked_versions(text: str) -> dict[str, str]:
    """``{name: version}`` of a lock's text (a lockgen lock, or a bare requirements body), read
    with lockgen's lock model."""
    from lockgen.locks.lock import Lock, parse_entries

    if text.startswith("# This file is generated by lockgen"):
        entries = Lock.parse(text, "lock").entries
    else:
        entries = parse_entries(text, "body")
    return {e.name: str(e.version) if e.version is not None else "" for e in entries}
