"""The TOML side of ``lockgen bump``: where the pins and requirement strings are in a document, and the edit.

:func:`find_sites` lists every pin of the config (the top-level ``pins`` table and each rule's,
under the file's :class:`Layout`); :func:`requirement_strings` the requirement strings of the
project's metadata (``[project]`` dependencies and optional dependencies, PEP 735 groups);
:func:`edit_strings` replaces strings in the same style and :func:`check_only_pins_changed`
refuses an edit that changed more than the values. The policy (which pins move) is in
:mod:`lockgen.bump` and :mod:`lockgen.bump.lines`; the files are written by
:mod:`lockgen.bump.run`, together with the locks, through :mod:`lockgen.locks.store`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from packaging.utils import NormalizedName, canonicalize_name
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import String

from lockgen.config.load import parse_toml
from lockgen.runtime.errors import ConfigError

__all__ = [
    "Layout", "Requirement", "Site", "Where", "check_only_pins_changed", "edit_strings", "find_sites", "key_path",
    "requirement_strings",
]  # fmt: skip

#: A key path inside the TOML document: table keys and array indexes.
Where = tuple[str | int, ...]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True, kw_only=True)
class Site:
    """One place the config pins a package."""

    name: NormalizedName
    where: Where  # from the document root: ("tool", "lockgen", "rules", 7, "pins", "torch")
    key_path: str  # as messages write it: "tool.lockgen.rules[7].pins.torch"
    rule: int | None  # the rule's index, None for the top-level pins table
    value: str  # the pin as written


@dataclass(frozen=True)
class Layout:
    prefix: tuple[str, ...]  # where the lockgen table is in the document
    pins_table: str  # for messages

    @staticmethod
    def of(path: Path) -> Layout:
        """``pyproject.toml`` keeps the config in ``[tool.lockgen]``; any other name (``lockgen.toml``)
        at the top level, as :func:`lockgen.config.load_config` reads them."""
        if path.name == "pyproject.toml":
            return Layout(("tool", "lockgen"), "[tool.lockgen.pins]")
        return Layout((), "[pins]")


def find_sites(doc: Any, layout: Layout, file: str) -> list[Site]:
    """Every pin in the top-level pins table and in the rules' pins tables."""
    table: Any = doc
    for key in layout.prefix:
        table = table.get(key) if isinstance(table, Mapping) else None
    if not isinstance(table, Mapping):
        raise ConfigError(file, [f"{'.'.join(layout.prefix)}: missing; add a [{'.'.join(layout.prefix)}] table"])
    problems: list[str] = []
    sites = _table_sites(table, (*layout.prefix, "pins"), None, problems)
    rules = table.get("rules", [])
    if isinstance(rules, Sequence) and not isinstance(rules, str):
        for i, rule in enumerate(rules):
            if isinstance(rule, Mapping):
                sites += _table_sites(rule, (*layout.prefix, "rules", i, "pins"), i, problems)
    if problems:
        raise ConfigError(file, problems)
    return sites


def _table_sites(parent: Mapping[str, Any], where: Where, rule: int | None, problems: list[str]) -> list[Site]:
    if "pins" not in parent:
        return []
    pins = parent["pins"]
    if not isinstance(pins, Mapping):
        problems.append(f'{key_path(where)}: must be a table of package = "version"')
        return []
    sites: list[Site] = []
    seen: dict[NormalizedName, str] = {}
    for key, value in pins.items():
        name = canonicalize_name(key)
        path = key_path((*where, key))
        if name in seen:
            problems.append(f"{path}: {name} is already pinned in this table as {seen[name]}; keep one")
            continue
        seen[name] = key
        if not isinstance(value, str):
            problems.append(f"{path}: must be a version string")
            continue
        sites.append(Site(name=name, where=(*where, key), key_path=path, rule=rule, value=str(value)))
    return sites


def check_only_pins_changed(
    path: Path, old: str, new: str, data: dict[str, Any], edits: Sequence[tuple[Where, str]], tokens: Collection[str]
) -> None:
    """Refuse (rather than write) when the edited text differs from the old one anywhere but in the
    edited values: the same lines, each equal once the old and new values (``tokens``, as TOML,
    quotes included) are blanked, and the old ``data`` with the new values in place
    (``edits``: key path -> new value). Changes ``data``."""
    blanked = re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))

    def blank(line: str) -> str:
        return blanked.sub("\0", line)

    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    same_shape = len(old_lines) == len(new_lines) and all(
        a == b or blank(a) == blank(b) for a, b in zip(old_lines, new_lines, strict=True)
    )
    for where, value in edits:
        _set(data, where, value)
    try:
        same_data = parse_toml(new) == data
    except ValueError:
        same_data = False
    if not same_shape or not same_data:
        keys = ", ".join(key_path(where) for where, _ in edits)
        message = f"{keys}: cannot be moved without changing other parts of the file; edit the pins by hand"
        raise ConfigError(path.name, [message])


def edit_strings(path: Path, text: str, edits: Sequence[tuple[Where, str]]) -> str:
    """``text`` (the contents of ``path``) with the string at each key path of ``edits`` replaced
    by its new value, in the same string style: tomlkit keeps the key as written and the value's
    trivia (spacing, comment, line ending), and :func:`check_only_pins_changed` refuses an edit
    that changed anything else. Raises :class:`ConfigError` naming the file."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    try:
        data = copy.deepcopy(
            parse_toml(text)
        )  # load_config's parser (the file must be valid for it too); a copy: changed below
        doc = tomlkit.parse(text[len(bom) :])
    except (TOMLKitError, ValueError) as exc:  # ValueError: tomllib.TOMLDecodeError
        raise ConfigError(path.name, [f"cannot read TOML: {exc}"]) from exc
    tokens: set[str] = set()
    for where, value in edits:
        tokens |= set(_replace(doc, where, value))
    new = bom + doc.as_string()
    check_only_pins_changed(path, text, new, data, edits, tokens)
    return new


def _replace(doc: Any, where: Where, value: str) -> tuple[str, str]:
    """Replace the string at ``where`` by ``value`` in the same string style. Returns the old
    and the new value as TOML (``"2.13.0"``, ``"2.14.0"``)."""
    container: Any = doc
    for part in where[:-1]:
        container = container[part]
    key = where[-1]
    old = container[key]
    if not isinstance(old, String):
        raise ConfigError("config", [f"{key_path(where)}: not a string"])
    new = String.from_raw(value, old.type)
    new.trivia.__dict__.update(old.trivia.__dict__)
    container[key] = new
    return old.as_string(), new.as_string()


@dataclass(frozen=True, kw_only=True)
class Requirement:
    """A requirement string of the project's metadata: ``[project].dependencies``,
    ``[project].optional-dependencies.<extra>`` or a PEP 735 ``[dependency-groups]`` group
    (its ``{include-group = …}`` tables are no requirement)."""

    where: Where  # ("project", "dependencies", 3)
    key_path: str  # "project.dependencies[3]"
    value: str


def requirement_strings(data: Mapping[str, Any]) -> list[Requirement]:
    """Every requirement string of ``data`` (a parsed pyproject.toml) in file order of the keys
    above; entries that are not strings are skipped (validation reports them)."""
    found: list[Requirement] = []
    project = data.get("project")
    lists: list[tuple[Where, Any]] = []
    if isinstance(project, Mapping):
        lists.append((("project", "dependencies"), project.get("dependencies")))
        extras = project.get("optional-dependencies")
        if isinstance(extras, Mapping):
            lists += [(("project", "optional-dependencies", str(k)), v) for k, v in extras.items()]
    groups = data.get("dependency-groups")
    if isinstance(groups, Mapping):
        lists += [(("dependency-groups", str(k)), v) for k, v in groups.items()]
    for where, items in lists:
        if not isinstance(items, Sequence) or isinstance(items, str):
            continue
        for i, item in enumerate(items):
            if isinstance(item, str):
                found.append(Requirement(where=(*where, i), key_path=key_path((*where, i)), value=str(item)))
    return found


def _set(data: Any, where: Where, value: str) -> None:
    for part in where[:-1]:
        data = data[part]
    key = where[-1]
    if isinstance(data, list):
        assert isinstance(key, int)
        data[key] = value
    else:
        assert isinstance(data, MutableMapping)
        data[key] = value


def key_path(where: Where) -> str:
    """``("tool", "lockgen", "rules", 7, "pins", "zope.interface")`` ->
    ``tool.lockgen.rules[7].pins."zope.interface"`` (TOML quoting where a key needs it)."""
    text = ""
    for part in where:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            key = part if _BARE_KEY.match(part) else json.dumps(part)
            text += f".{key}" if text else key
    return text
