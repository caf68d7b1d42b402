"""Import cycles between the modules of a package, and imports up its layers, read from the source with :mod:`ast`.

Usage: ``python tests/support/find_cycles.py [--type-checking] [--layers] [PACKAGE_DIR]`` (default:
``lockgen/``). Prints each cycle (with ``--layers``: each import up a layer too) and exits 1 when
there is one, else prints a one-line summary and exits 0.

The graph has an edge for every import of one of the package's modules: at module level (class
bodies and ``try`` blocks included) and inside functions (lazy imports, which hide a cycle from
import order but not from the design). Imports under ``if TYPE_CHECKING:`` never run; they count
only with ``--type-checking``. ``from p import x`` is an edge to ``p.x`` when that is a module, else
to ``p``. Importing ``a.b.c`` from outside package ``a.b`` also runs ``a/b/__init__.py``: that is an
edge to ``a.b`` too.

A cycle is reported as its strongly connected component (every module in it) and one shortest
cycle through it, each edge with the file, line and kind of the import that makes it.

Layers (:func:`read_layers`) are the ``LAYERS`` tuple of the package's ``__init__.py``: units (a
subpackage or a module, by dotted name) bottom to top, several units to a layer. A module belongs
to the unit with the longest name that is it or contains it (:func:`unit_of`). An import is
allowed within a unit and from a unit down to a lower layer; :func:`layer_violations` lists the
others (every kind of import counts: a type-only import up a layer is still a dependency on it).
"""

from __future__ import annotations

import argparse
import ast
import functools
import sys
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MODULE, FUNCTION, TYPE_CHECKING = "at module level", "in a function", "under TYPE_CHECKING"
_STRENGTH = {MODULE: 0, FUNCTION: 1, TYPE_CHECKING: 2}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    file: str
    line: int
    kind: str

    def __str__(self) -> str:
        return f"{self.source} -> {self.target}  ({self.file}:{self.line}, {self.kind})"


@dataclass(frozen=True)
class Cycle:
    modules: tuple[str, ...]  # the strongly connected component, sorted
    path: tuple[Edge, ...]  # one shortest cycle through it

    @property
    def runs_at_import(self) -> bool:
        """Every edge of :attr:`path` is a module-level import: some import orders fail."""
        return all(edge.kind == MODULE for edge in self.path)

    def __str__(self) -> str:
        if self.runs_at_import:
            how = "every import at module level: some import orders fail"
        else:
            how = "closed by an import " + " and ".join(sorted({e.kind for e in self.path} - {MODULE}))
        lines = [f"import cycle among {', '.join(self.modules)} ({how}):"]
        return "\n".join(lines + [f"  {edge}" for edge in self.path])


def modules(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package at ``package_dir``."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterable[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement in ``tree`` with its kind."""

    def walk(node: ast.AST, kind: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, kind
            elif isinstance(child, ast.expr):  # an expression holds no import statement
                continue
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from walk(child, TYPE_CHECKING if kind == TYPE_CHECKING else FUNCTION)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), TYPE_CHECKING)
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), kind)
            else:
                yield from walk(child, kind)

    yield from walk(tree, MODULE)


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(package_dir: Path) -> list[Edge]:
    """Every import between the package's modules, one :class:`Edge` per (statement, target).
    Read once per process and folder (the tests ask for the package's graph several times)."""
    return list(_import_graph(package_dir.resolve()))


@functools.cache
def _import_graph(package_dir: Path) -> tuple[Edge, ...]:
    known = modules(package_dir)
    root = package_dir.parent
    edges = []
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        here = name if is_package else name.rpartition(".")[0]
        for node, kind in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parent = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join(parent + ([base] if base else []))
                wanted = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
            for target in dict.fromkeys(wanted):
                while target and target not in known:  # ``import lockgen.x.y`` of an attribute path
                    target = target.rpartition(".")[0]
                if not target or target == name:
                    continue
                own = set(_ancestors(name)) | ({name} if is_package else set())
                for module in [*_ancestors(target), target]:
                    if module in known and module not in own and module != name:
                        edges.append(Edge(name, module, path.relative_to(root).as_posix(), node.lineno, kind))
    return tuple(edges)


def _components(nodes: list[str], graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found


def _shortest_cycle(component: list[str], best: dict[tuple[str, str], Edge]) -> tuple[Edge, ...]:
    """One shortest cycle through the strongly connected ``component`` (breadth-first from each
    member back to itself; ties go to the first member by name)."""
    members = set(component)
    out: dict[str, list[Edge]] = {}
    for (source, target), edge in sorted(best.items()):
        if source in members and target in members:
            out.setdefault(source, []).append(edge)
    shortest: tuple[Edge, ...] = ()
    for start in component:
        reached_by: dict[str, Edge] = {}
        queue = deque([start])
        while queue and start not in reached_by:
            node = queue.popleft()
            for edge in out.get(node, ()):
                if edge.target not in reached_by:
                    reached_by[edge.target] = edge
                    queue.append(edge.target)
        if start in reached_by:
            path = [reached_by[start]]
            while path[0].source != start:
                path.insert(0, reached_by[path[0].source])
            if not shortest or len(path) < len(shortest):
                shortest = tuple(path)
    return shortest


def find_cycles(package_dir: Path, *, type_checking: bool = False) -> list[Cycle]:
    """The import cycles of the package at ``package_dir`` (see the module's docstring)."""
    best: dict[tuple[str, str], Edge] = {}  # per (source, target): the import that runs earliest
    for edge in import_graph(package_dir):
        if edge.kind == TYPE_CHECKING and not type_checking:
            continue
        key = (edge.source, edge.target)
        if key not in best or _STRENGTH[edge.kind] < _STRENGTH[best[key].kind]:
            best[key] = edge
    graph: dict[str, set[str]] = {}
    for source, target in best:
        graph.setdefault(source, set()).add(target)
    cycles = []
    for component in _components(sorted(modules(package_dir)), graph):
        if len(component) > 1:
            cycles.append(Cycle(tuple(component), _shortest_cycle(component, best)))
    return sorted(cycles, key=lambda c: c.modules)


def read_layers(package_dir: Path) -> tuple[tuple[str, ...], ...]:
    """The ``LAYERS = (...)`` literal of ``package_dir/__init__.py`` (read, not imported).
    Raises ``LookupError`` when it has none."""
    tree = ast.parse((package_dir / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else (node.targets[0] if isinstance(node, ast.Assign) else None)
        )
        if isinstance(target, ast.Name) and target.id == "LAYERS" and node.value is not None:
            return tuple(tuple(layer) for layer in ast.literal_eval(node.value))
    raise LookupError(f"{package_dir}/__init__.py defines no LAYERS")


def unit_of(module: str, layers: tuple[tuple[str, ...], ...]) -> tuple[int, str] | None:
    """``(layer index, unit)`` of ``module``: the longest unit that is it or contains it; None
    when no unit does."""
    found = [
        (index, unit)
        for index, units in enumerate(layers)
        for unit in units
        if module == unit or module.startswith(unit + ".")
    ]
    return max(found, key=lambda item: len(item[1])) if found else None


def layer_violations(package_dir: Path, layers: tuple[tuple[str, ...], ...]) -> list[Edge]:
    """Every import (of any kind) from one unit to another that is not in a lower layer, sorted."""
    found = set()
    for edge in import_graph(package_dir):
        source, target = unit_of(edge.source, layers), unit_of(edge.target, layers)
        if source is None or target is None or source[1] == target[1]:
            continue
        if target[0] >= source[0]:
            found.add(edge)
    return sorted(found, key=lambda e: (e.source, e.target, e.file, e.line))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Report import cycles between a package's modules.")
    parser.add_argument("package", nargs="?", type=Path, default=Path(__file__).parents[2] / "lockgen")
    parser.add_argument("--type-checking", action="store_true", help="count imports under `if TYPE_CHECKING:` too")
    parser.add_argument("--layers", action="store_true", help="report imports up the package's LAYERS too")
    args = parser.parse_args(argv)
    cycles = find_cycles(args.package, type_checking=args.type_checking)
    for cycle in cycles:
        print(cycle)
    if not cycles:
        count = len(modules(args.package))
        print(f"no import cycles among the {count} modules of {args.package.name}")
    up = layer_violations(args.package, read_layers(args.package)) if args.layers else []
    for edge in up:
        print(f"import up a layer: {edge}")
    if args.layers and not up:
        print(f"no import up a layer of {args.package.name}'s LAYERS")
    return 1 if cycles or up else 0


if __name__ == "__main__":
    sys.exit(main())
