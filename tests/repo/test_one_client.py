"""One owner of talking to package hosts: no module outside ``lockgen/index/`` opens a
connection (imports ``httpx``, ``urllib.request``, ``http.client`` or ``requests``) or parses an
index page (an HTML parser, a ``files``/``core-metadata`` reader of its own), and no module
borrows ``lockgen.resolve`` for network work (docs/architecture.md, "Package hosts")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2] / "lockgen"
INDEX = ROOT / "index"
#: Modules that talk to hosts; only lockgen/index/ may import them.
NETWORK = {"httpx", "urllib.request", "http.client", "requests", "urllib3", "socket"}
#: What parsing a page takes; only lockgen/index/ may use it.
PAGE_PARSERS = {"html.parser"}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def _outside() -> list[Path]:
    return [p for p in sorted(ROOT.rglob("*.py")) if INDEX not in p.parents]


def test_only_the_index_package_names_httpx():
    named = [str(p.relative_to(ROOT)) for p in _outside() if "httpx" in p.read_text(encoding="utf-8")]
    assert named == [], f"httpx outside lockgen/index/: {named}; reach hosts through lockgen.index.client"


def test_only_the_index_package_opens_connections_or_parses_pages():
    found = {
        str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if m in NETWORK | PAGE_PARSERS) for p in _outside()
    }
    assert {k: v for k, v in found.items() if v} == {}


def test_the_index_package_holds_the_client_the_parser_and_the_ranges():
    assert {p.name for p in INDEX.glob("*.py")} >= {"client.py", "pages.py", "files.py", "ranges.py", "pagecache.py"}
