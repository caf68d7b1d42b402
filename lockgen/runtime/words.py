"""How counts, suggestions and long reasons are said, the same in every message. Pure.

* :func:`counted`: ``1 cell``, ``2 cells``, ``1 package version``, ``3 entries`` (English plural
  rules for the nouns lockgen counts);
* :func:`did_you_mean`: `` (did you mean linux-x86_64-cu130-py3.12?)`` for a misspelt name, from
  the names that exist (``difflib``'s close matches, as the config's unknown keys get);
* :func:`first_sentence`: the first sentence of a reason that is repeated elsewhere (a change
  report's ``cell removed (was failed: …)``), the whole reason being in the manifest;
* :func:`cut`: a reason on one line within a width, cut at a sentence or clause end.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["counted", "cut", "did_you_mean", "first_sentence", "plural"]

#: Nouns whose plural is not the noun and an ``s``.
_IRREGULAR = {"index": "indexes", "match": "matches"}


def plural(count: int, noun: str) -> str:
    """``noun`` for a count of one, else its plural (the last word is made plural:
    ``package version`` -> ``package versions``, ``advisory`` -> ``advisories``)."""
    if count == 1:
        return noun
    head, _, last = noun.rpartition(" ")
    if last in _IRREGULAR:
        many = _IRREGULAR[last]
    elif last.endswith("y") and last[-2:-1] not in ("a", "e", "o", "u", ""):
        many = last[:-1] + "ies"  # advisory -> advisories; key -> keys
    else:
        many = last if last.endswith("s") else last + "s"
    return f"{head} {many}" if head else many


def counted(count: int, noun: str) -> str:
    """``"1 cell"``, ``"12 cells"``: the count and :func:`plural` of ``noun``."""
    return f"{count} {plural(count, noun)}"


def did_you_mean(name: str, known: Iterable[str], n: int = 3) -> str:
    """`` (did you mean a, b?)`` naming up to ``n`` of ``known`` close to ``name``, or ``""``."""
    close = difflib.get_close_matches(name, list(known), n=n)
    return f" (did you mean {', '.join(close)}?)" if close else ""


#: A sentence ends at ``.``, ``!`` or ``?`` followed by white space, except after a version's
#: digits run into the next word (``2.13.0.`` still ends one) or an abbreviation (``e.g.``).
_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?](?=\s)")


def first_sentence(text: str, limit: int = 200) -> str:
    """The first line of ``text`` up to the end of its first sentence (its final ``.`` dropped),
    cut to ``limit`` characters with ``…``; the text unchanged when it is one short sentence."""
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    end = _END.search(line)
    if end is not None:
        line = line[: end.start()]
    line = line.rstrip(".")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


#: Where a sentence (or a clause of a list) ends: a period, semicolon or colon before a space or
#: the end, not inside a version (``2.13.0``), a URL or a path.
_CLAUSE_END = re.compile(r"[.;:](?=\s|$)")


def cut(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace as one space), whole when it has at most ``limit``
    characters; else cut after the last sentence end that fits, with `` …`` (so a reason never
    stops mid-word or inside a version number); failing that, at the last word that fits."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    ends = [m.end() for m in _CLAUSE_END.finditer(text, 0, limit - 1)]
    if ends and ends[-1] > limit // 3:
        return text[: ends[-1]].rstrip(";:").rstrip() + " …"
    head = text[: limit - 1]
    head = head.rsplit(" ", 1)[0] if " " in head else head
    return head.rstrip(",;: ") + " …"
