"""The layers of ``lockgen`` (``LAYERS`` in ``lockgen/__init__.py``, the map in docs/architecture.md)
hold: every module is in one, no import goes up a layer or sideways to another package of its
layer, no import cycle even for types, processes start only where the map says, only the lock
model reads lock text, and the map names what exists."""

from __future__ import annotations

import ast
import functools
import importlib
import re
from pathlib import Path

import lockgen
from lockgen.cli import COMMANDS
from tests.support.find_cycles import find_cycles, import_graph, layer_violations, modules, read_layers, unit_of

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "lockgen"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
LAYERS = read_layers(PACKAGE)
#: The modules that start processes, and what they start (docs/architecture.md, "Rules").
PROCESSES = {
    "lockgen.resolve.uv": "uv pip compile: the runner, the only place uv runs to resolve",
    "lockgen.install.venv": "the installers (uv pip, pip) and the venv's Python",
    "lockgen.locks.lockset": "git, to read the locks of a revision",
    "lockgen.cellselect": "the hardware probes (nvidia-smi, rocminfo, sysctl)",
}
#: The lock model: the one reader and writer of lock text (its header markers, its parser).
LOCK_MODEL = {"lockgen.locks.lock", "lockgen.locks.header", "lockgen.locks._parse", "lockgen.locks.entry"}


def test_the_layers_read_from_the_source_are_the_package_s():
    assert read_layers(PACKAGE) == lockgen.LAYERS


def test_every_module_is_in_one_layer_and_every_unit_exists():
    known = set(modules(PACKAGE))
    units = [unit for layer in LAYERS for unit in layer]
    assert len(units) == len(set(units)), "a unit is listed twice"
    assert [u for u in units if u not in known] == []
    assert [m for m in sorted(known) if unit_of(m, LAYERS) is None] == [], "add these to LAYERS in lockgen/__init__.py"


def test_no_import_goes_up_a_layer():
    """Every kind of import counts: a type-only import up a layer is a dependency on it too."""
    found = layer_violations(PACKAGE, LAYERS)
    assert not found, "imports up (or across) a layer:\n" + "\n".join(map(str, found))


def test_no_import_cycle_even_for_types():
    cycles = find_cycles(PACKAGE, type_checking=True)
    assert not cycles, "\n".join(map(str, cycles))


def test_the_checker_finds_imports_up_and_across_a_layer(tmp_path):
    package = tmp_path / "pkg"
    (package / "low").mkdir(parents=True)
    files = {
        "__init__.py": 'LAYERS = (("pkg.low",), ("pkg.mid", "pkg.side"), ("pkg.top",))\n',
        "low/__init__.py": "",
        "low/a.py": "from pkg.low import b\n",  # within a unit: fine
        "low/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.top import X\n",  # up, for types
        "mid.py": "import pkg.low.a\nfrom pkg import side\n",  # down: fine; across its layer: not
        "side.py": "",
        "top.py": "X = 1\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    found = {(e.source, e.target) for e in layer_violations(package, read_layers(package))}
    assert found == {("pkg.low.b", "pkg.top"), ("pkg.mid", "pkg.side")}
    assert unit_of("pkg.low.a", read_layers(package)) == (0, "pkg.low")


def test_the_selector_imports_nothing_of_lockgen():
    """Installers vendor lockgen/cellselect.py as one file; its old name, lockgen/select.py, is a
    shim that only imports it."""
    graph = import_graph(PACKAGE)
    assert [e for e in graph if e.source == "lockgen.cellselect"] == []
    assert {e.target for e in graph if e.source == "lockgen.select"} <= {"lockgen.cellselect"}
    assert [e.source for e in graph if e.target == "lockgen.select"] == []


@functools.cache
def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in modules(PACKAGE).items()}


def _imported(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_processes_start_only_where_the_map_says():
    """Only the modules of :data:`PROCESSES` import ``subprocess``: uv resolves only through
    lockgen.resolve.uv's runner (the seam the recorded-output tests replace)."""
    starting = {name for name, tree in _trees().items() if {"subprocess", "multiprocessing"} & _imported(tree)}
    assert starting == set(PROCESSES)


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def test_only_the_lock_model_reads_lock_text():
    """Outside the lock model nothing imports its reader or header markers, nor writes the
    markers itself (lockgen.resolve.cellrun once split a lock at its blank line to read an older
    lock's pins: the lock model's body_entries does that now)."""
    from lockgen.locks.header import DIGEST, FIRST_PREFIX

    markers = (FIRST_PREFIX, f"# {DIGEST}:")
    found = []
    for name, tree in _trees().items():
        if name in LOCK_MODEL:
            continue
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in LOCK_MODEL - {
                "lockgen.locks.lock",
                "lockgen.locks.entry",
            }:
                found.append(f"{name}: imports {node.module}")
            if isinstance(node, ast.ImportFrom) and {"FIRST_PREFIX", "DIGEST", "Parser"} & {a.name for a in node.names}:
                found.append(f"{name}: imports the lock model's reader or markers")
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if text.startswith(markers) and id(node) not in docs:
                found.append(f"{name}: writes a lock header marker")
    assert found == []


# -- docs/architecture.md names what exists


def _backticked(text: str) -> list[str]:
    return re.findall(r"`([^`\s]+)`", text)


def test_the_map_lists_every_layer_unit():
    table = ARCHITECTURE.read_text(encoding="utf-8").split("## Layers", 1)[1].split("\n## ", 1)[0]
    named = {f"lockgen.{w}" if not w.startswith("lockgen") else w for w in _backticked(table)}
    units = {unit for layer in LAYERS for unit in layer} - {"lockgen"}
    assert units <= named, f"docs/architecture.md's layer table lacks {sorted(units - named)}"


def _resolves(dotted: str) -> bool:
    parts = f"lockgen.{dotted}".split(".")
    for i in range(len(parts), 1, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attribute in parts[i:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return False
        return True
    return False


def test_the_map_names_every_command_where_it_lives():
    """Each command of the CLI has a row: its handler module exists, and every core it names is
    importable (``run.lock.lock_project``)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("## Where each command lives", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in _backticked(row.split("|")[1])}
    assert listed == set(COMMANDS)
    problems = []
    for row in rows:
        _, _, handlers, cores, _ = row.split("|")
        for handler in _backticked(handlers):
            if not (PACKAGE / handler).is_file():
                problems.append(f"no lockgen/{handler}")
        for core in _backticked(cores):
            if re.fullmatch(r"[a-z_]+(\.[A-Za-z_]+)+", core) and not _resolves(core):
                problems.append(f"{core} does not exist")
    for command in COMMANDS:
        if not (PACKAGE / "commands" / f"{command}.py").is_file():
            problems.append(f"no lockgen/commands/{command}.py")
    assert problems == []


def test_the_paths_the_map_names_exist():
    """Every ``…/….py`` path in docs/architecture.md (but a pattern: ``commands/<name>.py``) is a file
    of lockgen/ or of the repository."""
    missing = [
        path
        for path in _backticked(ARCHITECTURE.read_text(encoding="utf-8"))
        if path.endswith(".py")
        and "/" in path
        and "<" not in path
        and not ((PACKAGE / path).is_file() or (ROOT / path).is_file())
    ]
    assert missing == []
