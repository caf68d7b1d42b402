"""Lock changes as a reviewer reads them: terminal text, a pull-request comment, JSON.

Pure functions of the :class:`~lockgen.locks.diff.Group` list :func:`~lockgen.locks.diff.group`
returns (flagged first); no I/O.

* :func:`render_text`: one line per group, ``matplotlib 3.10.1 → 3.10.3 (12 of 12 cells)``;
  flagged groups first, marked ``!``, under "Needs a look:"; ``no changes`` when empty.
* :func:`render_markdown`: a heading, a one-line summary, a table (package | change | cells),
  flagged rows first with ⚠️, then per-cell ``<details>`` (cells with identical changes share
  one: ``12 cells: …``); cut with a note before GitHub's
  65,536-character comment limit.
* :func:`render_json`: a list of :meth:`Group.to_dict` objects, keys sorted.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

from lockgen.locks.diff import Group, Kind
from lockgen.locks.lockset import MAIN
from lockgen.runtime.words import counted, cut

__all__ = ["COMMENT_LIMIT", "headline", "render_json", "render_markdown", "render_text", "summary", "text_lines"]

#: GitHub refuses an issue or pull-request comment longer than this (characters; lockgen counts
#: UTF-8 bytes, which is never less, so either reading of the limit holds).
COMMENT_LIMIT = 65_536
#: Kept free below :data:`COMMENT_LIMIT` (a bot may add a footer).
MARGIN = 2_048
ARROW = "→"
WARN = "⚠️"
_CELL_LEVEL = (Kind.CELL_ADDED, Kind.CELL_REMOVED)


def describe(g: Group) -> str:
    """What changed, without the package name: ``3.10.1 → 3.10.3``, ``source a → b``."""
    k, old, new = g.kind, g.old, g.new
    texts = {
        Kind.UPGRADE: f"{old} {ARROW} {new}",
        Kind.DOWNGRADE: f"{old} {ARROW} {new} (downgrade)",
        Kind.LABEL: f"{old} {ARROW} {new} (local label)",
        Kind.ADDED: f"{new} added",
        Kind.REMOVED: f"{old} removed",
        Kind.SOURCE: f"source {old} {ARROW} {new}",
        Kind.HASH: f"{new}: hashes changed, same version and source (suspicious: a re-uploaded file or a tampered index)",
        Kind.FILES: f"{new}: more files hashed, every old hash kept (e.g. a wheel for newer machines)",
        Kind.VCS: f"commit {_short(old)} {ARROW} {_short(new)}",
        Kind.CELL_ADDED: "cell added" + (f" (was {old})" if old else ""),
        Kind.CELL_REMOVED: "cell removed" + (f" (now {new})" if new else ""),
        Kind.LAYER_ADDED: f"layer {g.layer} ({new}) added",
        Kind.LAYER_REMOVED: f"layer {g.layer} ({old}) removed",
        Kind.UNAVAILABLE: (f"{old} " if old else "") + f"now unavailable (optional layer {g.layer}): {cut(new, 300)}",
        Kind.AVAILABLE: f"{new} available again (optional layer {g.layer}; was: {cut(old, 80)})",
        Kind.PUBLISHER: f"publisher {old} {ARROW} {new}" if new else f"publisher {old} is gone (no attestation now)",
        Kind.UNREADABLE: f"cannot read the {_file(g.layer)}: {new}"
        if new
        else f"the old {_file(g.layer)} could not be read: {old}",
    }
    text = texts[k]
    if g.package is not None and g.layer != MAIN and k not in (Kind.UNAVAILABLE, Kind.AVAILABLE):
        text += f" [{g.layer}]"
    return text


def headline(g: Group) -> str:
    """The change with its package: ``matplotlib 3.10.1 → 3.10.3``."""
    return f"{g.package} {describe(g)}" if g.package is not None else describe(g)


def cells_note(g: Group, names: int = 3) -> str:
    """``12 of 12 cells``; with the names when few (always for cells added or removed)."""
    note = f"{g.count} of {counted(g.total, 'cell')}"
    shown = 5 if g.kind in _CELL_LEVEL else (names if g.count < g.total else 0)
    if shown and g.count:
        more = f", +{g.count - shown} more" if g.count > shown else ""
        note += ": " + ", ".join(g.cells[:shown]) + more
    return note


def summary(groups: Sequence[Group]) -> str:
    """``3 packages changed in 12 cells; 1 flagged`` (K counts flagged groups)."""
    packages = len({g.package for g in groups if g.package is not None})
    cells = len({c for g in groups for c in g.cells})
    flagged = sum(1 for g in groups if g.flagged)
    return f"{counted(packages, 'package')} changed in {counted(cells, 'cell')}; {flagged} flagged"


def text_lines(groups: Sequence[Group]) -> list[str]:
    """The lines of :func:`render_text` (``["no changes"]`` when there are none). A flagged
    group's per-cell details follow it, indented."""
    if not groups:
        return ["no changes"]
    flagged = [g for g in groups if g.flagged]
    rest = [g for g in groups if not g.flagged]
    indent = "  " if flagged else ""
    lines = ["Needs a look:"] if flagged else []
    for g in flagged:
        lines.append(f"{indent}! {headline(g)} ({cells_note(g)})")
        lines += [f"{indent}    {cell}: {detail}" for cell, detail in g.details[:3]]
        lines += [f"{indent}    … {len(g.details) - 3} more cells"] if len(g.details) > 3 else []
    if flagged and rest:
        lines.append("Changes:")
    lines += [f"{indent}{headline(g)} ({cells_note(g)})" for g in rest]
    return lines


def render_text(groups: Sequence[Group]) -> str:
    """Terminal text: :func:`text_lines`, newline-terminated."""
    return "\n".join(text_lines(groups)) + "\n"


def render_json(groups: Sequence[Group]) -> str:
    """A JSON list of :meth:`Group.to_dict` objects in group order, keys sorted."""
    return json.dumps([g.to_dict() for g in groups], indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_markdown(groups: Sequence[Group], title: str = "Lock changes", limit: int = COMMENT_LIMIT - MARGIN) -> str:
    """A pull-request comment of at most ``limit`` UTF-8 bytes: heading, summary line, table of
    groups (flagged first, ⚠️), then each cell's changes in ``<details>`` (one block for the cells
    whose changes are identical). What does not fit is
    left out with a note saying how much and to run ``lockgen diff`` locally."""
    head = [f"## {_md(title)}", ""]
    if not groups:
        return "\n".join([*head, "No changes."]) + "\n"
    head += [f"**{_md(summary(groups))}.**", "", "| package | change | cells |", "|---|---|---|"]
    rows = [_row(g) for g in groups]
    blocks = _cell_blocks(groups)
    out = _Budget(limit, head)
    shown = out.take(rows)
    if shown < len(rows):
        return out.close(f"… {len(rows) - shown} more groups not shown; see `lockgen diff` locally.")
    out.add("")
    taken = out.take([block for block, _ in blocks])
    if taken < len(blocks):
        left = sum(len(cells) for _, cells in blocks[taken:])
        return out.close(f"… details of {counted(left, 'more cell')} not shown; see `lockgen diff` locally.")
    return out.close(None)


class _Budget:
    """Lines joined by newlines, never past ``limit`` UTF-8 bytes once closed with a note."""

    NOTE_ROOM = 200

    def __init__(self, limit: int, lines: list[str]) -> None:
        self.limit, self.lines = limit, list(lines)
        self.size = sum(_size(line) + 1 for line in self.lines)

    def add(self, piece: str) -> None:
        self.lines.append(piece)
        self.size += _size(piece) + 1

    def take(self, pieces: Sequence[str]) -> int:
        """Add pieces while they fit with room for a note; how many were added."""
        for i, piece in enumerate(pieces):
            if self.size + _size(piece) + 1 + self.NOTE_ROOM > self.limit:
                return i
            self.add(piece)
        return len(pieces)

    def close(self, note: str | None) -> str:
        if note is not None:
            self.lines += ["", f"_{note}_"]
        text = "\n".join(self.lines) + "\n"
        while _size(text) > self.limit and len(self.lines) > 2:  # cannot happen; the limit is a promise
            del self.lines[-3]
            text = "\n".join(self.lines) + "\n"
        return text


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _row(g: Group) -> str:
    package = f"**{g.package}**" if g.package is not None else "—"
    if g.flagged:
        package = f"{WARN} {package}"
    return f"| {package} | {_md(describe(g))} | {_md(cells_note(g))} |"


def _cell_blocks(groups: Sequence[Group]) -> list[tuple[str, list[str]]]:
    """``<details>`` blocks of the cells' changes, each with the cells it covers: cells whose
    lists of changes are identical share one block (``12 cells: a, b, …``; one change that hits
    every cell is one block, not twelve), in the order of their first cell, cells sorted."""
    per_cell: dict[str, list[str]] = {}
    for g in groups:
        details = dict(g.details)
        for cell in g.cells:
            line = f"- {WARN + ' ' if g.flagged else ''}{_md(headline(g))}"
            if cell in details:
                line += f" — {_md(details[cell])}"
            per_cell.setdefault(cell, []).append(line)
    shared: dict[tuple[str, ...], list[str]] = {}
    for cell, lines in sorted(per_cell.items()):
        shared.setdefault(tuple(lines), []).append(cell)
    blocks = []
    for same, cells in shared.items():
        changes = counted(len(same), "change") + (" each" if len(cells) > 1 else "")
        names = _md(", ".join(cells)) if len(cells) == 1 else f"{len(cells)} cells: {_md(', '.join(cells))}"
        text = "\n".join([f"<details><summary>{names} ({changes})</summary>", "", *same, "", "</details>", ""])
        blocks.append((text, cells))
    return blocks


def _md(text: str) -> str:
    """Text safe in a table cell or list item: HTML escaped, pipes escaped, one line."""
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def _file(layer: str) -> str:
    return {MAIN: "main lock", "pylock": "pylock.toml", "manifest.json": "manifest"}.get(layer, f"layer lock {layer}")


def _short(commit: str) -> str:
    return commit[:12] if len(commit) == 40 and all(c in "0123456789abcdef" for c in commit) else commit
