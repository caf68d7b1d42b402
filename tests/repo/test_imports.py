"""Every module of ``lockgen`` imports on its own, and the package has no import cycles.

An import that works only after another module was imported first (the usual sign of a cycle)
passes in a test process that has imported everything already. So each module is imported in a
fresh interpreter: one ``python`` process that imports nothing of lockgen or its dependencies
forks one child per module (a child is a copy of that pristine interpreter) and the child imports
the module. Where ``os.fork`` is missing, each module gets its own ``python -c``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.find_cycles import find_cycles, import_graph, modules
from tests.support.find_cycles import main as find_cycles_main

PACKAGE = Path(__file__).parents[2] / "lockgen"
MODULES = sorted(modules(PACKAGE))
#: Where the session keeps the driver it started early (see :func:`start_driver`).
DRIVER_KEY = pytest.StashKey[subprocess.Popen]()
#: ``python -m lockgen`` runs the CLI when imported: it runs with these arguments and must exit 0.
MAIN_ARGS = ["lockgen", "--version"]

# Runs as ``python -c DRIVER MODULE...`` and prints {module: "" or the error} as JSON. Before it
# forks, it has imported nothing of lockgen: only the interpreter's start-up modules and
# lockgen's third-party dependencies (PRELOAD). A cycle is among lockgen's own modules, and no
# dependency imports lockgen, so the preload hides none; it saves each child importing httpx,
# rich and jinja2 again (about 2 s of CPU per suite run).
PRELOAD = [
    "packaging.requirements",
    "packaging.tags",
    "packaging.utils",
    "httpx",
    "rich.console",
    "jinja2.sandbox",
    "tomlkit",
]
DRIVER = (
    textwrap.dedent(
        """
    import os, sys

    for dependency in PRELOAD:
        __import__(dependency)

    def child(name, write):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)  # what the module prints (python -m lockgen --version)
        error = ""
        try:
            if name.endswith(".__main__"):
                sys.argv = MAIN_ARGS
            __import__(name)
        except SystemExit as exc:
            if not name.endswith(".__main__") or exc.code not in (0, None):
                error = "SystemExit(%r)" % (exc.code,)
        except BaseException:
            import traceback
            error = traceback.format_exc()
        data = error.encode()
        while data:
            data = data[os.write(write, data):]
        os._exit(0)

    names, results, running = sys.argv[1:], {}, []

    def finish():
        pid, name, read = running.pop(0)
        chunks = []
        while True:
            chunk = os.read(read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read)
        _, status = os.waitpid(pid, 0)
        results[name] = b"".join(chunks).decode() or ("" if status == 0 else "child exited with status %d" % status)

    for name in names:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            child(name, write)
        os.close(write)
        running.append((pid, name, read))
        if len(running) >= (os.cpu_count() or 1):
            finish()
    while running:
        finish()
    import json
    print(json.dumps(results))
    """
    )
    .replace("MAIN_ARGS", repr(MAIN_ARGS))
    .replace("PRELOAD", repr(PRELOAD))
)


def _import_alone(name: str) -> str:
    """Without fork: import ``name`` in a ``python -c`` of its own; "" or the error."""
    if name.endswith(".__main__"):
        run = subprocess.run(
            [sys.executable, "-m", name.removesuffix(".__main__"), *MAIN_ARGS[1:]], capture_output=True, text=True
        )
    else:
        run = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True)
    return "" if run.returncode == 0 else run.stderr or f"exit {run.returncode}"


def start_driver() -> subprocess.Popen | None:
    """Start importing every module alone (see :data:`DRIVER`); None where ``os.fork`` is missing.
    ``tests/conftest.py`` starts it as soon as the session knows it will need it, so that it runs
    beside the other tests."""
    if not hasattr(os, "fork"):
        return None
    # The children share lockgen's compiled bytecode (__pycache__, ignored by git) rather than
    # each compiling every module again, even where PYTHONDONTWRITEBYTECODE is set.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cwd = PACKAGE.parent  # the lockgen under test, even without an editable install
    argv = [sys.executable, "-c", DRIVER, *MODULES]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def imported_alone(request) -> dict[str, str]:
    """Module -> "" when it imported in a fresh interpreter, else the error."""
    driver = request.config.stash.get(DRIVER_KEY, None) or start_driver()
    if driver is None:
        return {name: _import_alone(name) for name in MODULES}
    out, err = driver.communicate()
    assert driver.returncode == 0, err
    results = json.loads(out)
    assert sorted(results) == MODULES
    return results


def test_the_package_has_modules():
    assert {"lockgen", "lockgen.cli", "lockgen.run.lock", "lockgen.__main__"} <= set(MODULES)
    assert len(MODULES) > 20


@pytest.mark.parametrize("name", MODULES)
def test_each_module_imports_on_its_own(imported_alone, name):
    assert imported_alone[name] == "", imported_alone[name]


def test_a_broken_import_order_is_caught(tmp_path):
    """The driver tells a module that imports only after another one from one that works."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\nVALUE = 1\n")
    (package / "b.py").write_text("from pkg.a import VALUE\n")  # a <-> b at module level
    (package / "c.py").write_text("import json\n")
    run = subprocess.run(
        [sys.executable, "-c", DRIVER, "pkg.c", "pkg.a", "pkg.b"], capture_output=True, text=True, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert results["pkg.c"] == ""
    assert "ImportError" in results["pkg.a"] and "partially initialized module" in results["pkg.a"]
    assert results["pkg.b"] == ""  # b first, then a: fine, which is why each order must be tried


def test_find_cycles_reports_each_kind_of_cycle(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from pkg import b\n",  # a -> b at module level
        "b.py": "def f():\n    from . import a\n",  # b -> a in a function
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import X\n",  # c -> d for types only
        "d.py": "import pkg.c\n",
        "sub/__init__.py": "from pkg.sub.e import E\n",
        "sub/e.py": "E = 1\n",
        "f.py": "from pkg.sub.e import E\n",  # f -> sub.e and the package sub: no cycle
    }
    for name, text in files.items():
        (package / name).write_text(text)
    cycles = find_cycles(package)
    assert [c.modules for c in cycles] == [("pkg.a", "pkg.b")]
    assert [(e.source, e.target, e.kind) for e in cycles[0].path] == [
        ("pkg.a", "pkg.b", "at module level"),
        ("pkg.b", "pkg.a", "in a function"),
    ]
    assert "pkg/b.py:2, in a function" in str(cycles[0])
    assert [c.modules for c in find_cycles(package, type_checking=True)] == [("pkg.a", "pkg.b"), ("pkg.c", "pkg.d")]
    edges = {(e.source, e.target) for e in import_graph(package)}
    assert {("pkg.f", "pkg.sub.e"), ("pkg.f", "pkg.sub"), ("pkg.sub", "pkg.sub.e")} <= edges


@pytest.fixture(scope="module")
def cycles():
    return find_cycles(PACKAGE)


def test_find_cycles_command_line(capsys, cycles):
    assert find_cycles_main([str(PACKAGE)]) == (1 if cycles else 0)
    assert capsys.readouterr().out.count("import cycle among") == len(cycles)


def test_no_import_cycles(cycles):
    """No import cycle in lockgen/ (the report: ``python tests/support/find_cycles.py``)."""
    if cycles:
        pytest.fail(f"{len(cycles)} import cycle(s) in lockgen/:\n" + "\n".join(map(str, cycles)), pytrace=False)
