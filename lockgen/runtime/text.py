"""Plain-text helpers every stage uses (no lockgen imports)."""

from __future__ import annotations

import re

__all__ = ["cut"]

#: Where a sentence (or a clause of a list) ends: a period, semicolon or colon before a space or
#: the end, not inside a version (``2.13.0``), a URL or a path.
_END = re.compile(r"[.;:](?=\s|$)")


def cut(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace as one space), whole when it has at most ``limit``
    characters; else cut after the last sentence end that fits, with `` …`` (so a reason never
    stops mid-word or inside a version number); failing that, at the last word that fits."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    ends = [m.end() for m in _END.finditer(text, 0, limit - 1)]
    if ends and ends[-1] > limit // 3:
        return text[: ends[-1]].rstrip(";:").rstrip() + " …"
    head = text[: limit - 1]
    head = head.rsplit(" ", 1)[0] if " " in head else head
    return head.rstrip(",;: ") + " …"
