"""The documentation's links hold: every relative link of the README, docs/ and examples/ pages names a
file that exists and, with ``#anchor``, a heading of that page (GitHub's heading ids); every
``docs/<page>.md`` that code, tests, workflows and the action name exists; docs/index.md lists every
page."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")
NAMED = re.compile(r"docs/([A-Za-z0-9_.-]+\.(?:md|json))(#[a-z0-9_-]+)?")


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted((ROOT / "examples").rglob("*.md"))]


def _prose(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def _anchors(page: Path) -> set[str]:
    """GitHub's ids of a page's headings: lower case, punctuation dropped, spaces to hyphens, a
    repeated id numbered."""
    seen: dict[str, int] = {}
    ids = set()
    for line in _prose(page.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6} (.*)", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        ids.add(slug if n == 0 else f"{slug}-{n}")
    return ids


def test_every_relative_link_of_the_pages_resolves():
    broken = []
    for page in _pages():
        for line in _prose(page.read_text(encoding="utf-8")):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                dest = (page.parent / path).resolve() if path else page
                if not dest.exists():
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
                elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_every_docs_page_named_in_code_tests_and_pages_exists():
    roots = [ROOT / "lockgen", ROOT / "tests", ROOT / "bench", ROOT / "examples", ROOT / "docs"]
    files = [p for r in roots for p in r.rglob("*") if p.suffix in {".py", ".md", ".yml", ".yaml", ".toml", ".j2"}]
    files += [ROOT / "action.yml", ROOT / "README.md"]
    missing = []
    for f in files:
        for name, anchor in NAMED.findall(f.read_text(encoding="utf-8", errors="replace")):
            page = DOCS / name
            if not page.exists():
                missing.append(f"{f.relative_to(ROOT)}: docs/{name}")
            elif anchor and anchor[1:] not in _anchors(page):
                missing.append(f"{f.relative_to(ROOT)}: docs/{name}{anchor} (no such heading)")
    assert missing == []


def test_the_index_lists_every_page_in_its_groups():
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    assert [h for h in _prose(text) if h.startswith("## ")] == ["## Usage", "## Reference", "## Development"]
    listed = {t.partition("#")[0] for t in LINK.findall(text)}
    pages = {p.name for p in DOCS.glob("*.md")} - {"index.md"}
    assert pages <= listed, f"docs/index.md does not list {sorted(pages - listed)}"


def test_the_readme_stays_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 130
