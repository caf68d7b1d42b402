"""The one validator base for data read by key path: the config's tables and the manifest's JSON.

:class:`Checks` is one validation run over one file (``source``): it writes key paths the way
messages show them (``tool.lockgen.rules[2].match.backend``,
``cells.linux-x86_64-cu130-py3.12.layers[0].sha256``), collects every problem as a
:class:`~lockgen.runtime.errors.Problem` record naming the file and the key, and reads the plain
values both readers need (a string, an array of strings, an array of tables, unknown keys). The
config's validator (:mod:`lockgen.config.fields` and its mixins) and the manifest reader
(:mod:`lockgen.locks.manifestfile`) are subclasses; each raises its own error from
:attr:`Checks.problems` (``ConfigError``, ``InputError``).

Documents that are *read leniently* rather than validated (an index's PEP 691 page, a local
project's ``[tool.uv]`` tables, OSV answers, PyPI's JSON API) are walked with :func:`dig`,
:func:`table` and :func:`listed`: a value of the wrong type reads as absent, never as a
``TypeError`` or ``AttributeError`` (``tool = 5``, ``"files": true``).
"""

from __future__ import annotations

import difflib
from typing import Any

from lockgen.runtime.errors import Problem

__all__ = ["Checks", "KeyPath", "dig", "key_text", "listed", "table"]

#: A key path below a prefix: ``("rules", 2, "match", "backend")``; ints are array indexes.
KeyPath = tuple[str | int, ...]


def key_text(prefix: str, *parts: str | int) -> str:
    """``key_text("tool.lockgen", "rules", 2, "use")`` -> ``tool.lockgen.rules[2].use``; keys are
    joined as written (a cell name ``…-py3.12`` stays one key)."""
    text = prefix
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def dig(value: object, *keys: str) -> object:
    """The value at ``keys`` below ``value``, stepping through tables only; None where a step is
    not a table or lacks its key (``dig(doc, "tool", "uv")`` of ``tool = 5`` is None)."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def table(value: object) -> dict[str, Any]:
    """``value`` if it is a table (a JSON object), else an empty one."""
    return value if isinstance(value, dict) else {}


def listed(value: object) -> list[Any]:
    """``value`` if it is an array, else an empty one (``"files": true`` lists nothing)."""
    return value if isinstance(value, list) else []


class Checks:
    """One validation run over the file ``source`` whose data sits at ``prefix`` (``tool.lockgen``
    in a ``pyproject.toml``, ``""`` in a ``lockgen.toml`` or a manifest). ``problems``: every
    problem found so far, in the order found."""

    def __init__(self, source: str, prefix: str = "") -> None:
        self.source = source
        self.prefix = prefix
        self.problems: list[Problem] = []

    def key(self, *parts: str | int) -> str:
        return key_text(self.prefix, *parts)

    def problem(self, path: KeyPath, message: str) -> None:
        self.problem_at(self.key(*path), message)

    def problem_at(self, key: str | None, message: str) -> None:
        """A problem at ``key`` as already written (None: the file as a whole)."""
        self.problems.append(Problem(file=self.source, key=key or None, message=message))

    def shown(self, limit: int) -> list[Problem]:
        """At most ``limit`` problems, then one saying how many more (a file of garbage is one
        error, not thousands)."""
        shown = self.problems[:limit]
        more = len(self.problems) - len(shown)
        if more:
            shown.append(Problem(file=self.source, message=f"… and {more} more problems"))
        return shown

    def unknown(self, table: dict[str, Any], allowed: set[str] | frozenset[str], path: KeyPath) -> None:
        """A problem for each key of ``table`` not in ``allowed``: ``did you mean 'pins'?`` when
        one allowed key is close (``difflib``, as for matrix keys), else the keys the table takes,
        listed once per table (a second far-off key refers to the first's list)."""
        listed_at: str | None = None
        for key in table:
            if key in allowed:
                continue
            close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.75)
            if close:
                self.problem((*path, key), f"unknown key; did you mean {close[0]!r}?")
            elif listed_at is None:
                listed_at = self.key(*path, key)
                self.problem((*path, key), f"unknown key; expected one of {', '.join(sorted(allowed))}")
            else:
                self.problem((*path, key), f"unknown key; not one of the keys listed for {listed_at}")

    def table_list(self, table: dict[str, Any], key: str, path: KeyPath) -> list[dict[str, Any]]:
        """``table[key]`` as an array of tables (missing: empty); a non-table entry is a problem
        and reads as an empty table, so indexes stay those of the file."""
        value = table.get(key, [])
        if not isinstance(value, list):
            self.problem((*path, key), "must be an array of tables")
            return []
        good = []
        for i, entry in enumerate(value):
            if isinstance(entry, dict):
                good.append(entry)
            else:
                self.problem((*path, key, i), "must be a table")
                good.append({})
        return good

    def string(self, value: Any, path: KeyPath) -> str | None:
        if isinstance(value, str):
            return value
        self.problem(path, f"must be a string, not {type(value).__name__}")
        return None

    def strings(self, value: Any, path: KeyPath) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.problem(path, "must be an array of non-empty strings")
            return ()
        return tuple(value)
