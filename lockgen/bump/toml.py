"""The TOML side of ``lockgen bump``: where the pins are in the document, and writing the edited file.

:func:`find_sites` lists every pin of the config (the top-level ``pins`` table and each rule's,
under the file's :class:`Layout`); :func:`check_only_pins_changed` refuses an edit that changed
more than the pin values; :func:`write_atomic` replaces the file. The policy (which pins move)
is in :mod:`lockgen.bump.pins`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from lockgen.runtime.errors import ConfigError

__all__ = ["Layout", "Site", "Where", "check_only_pins_changed", "find_sites", "key_path", "loads", "write_atomic"]

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
    path: Path, old: str, new: str, data: dict[str, Any], edits: Sequence[tuple[Site, Version]], tokens: Collection[str]
) -> None:
    """Refuse (rather than write) when the edited text differs from the old one anywhere but in the
    pin values: the same lines, each equal once the old and new values (``tokens``, as TOML,
    quotes included) are blanked, and the old ``data`` with the new versions in place. Changes
    ``data``."""
    blanked = re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))

    def blank(line: str) -> str:
        return blanked.sub("\0", line)

    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    same_shape = len(old_lines) == len(new_lines) and all(
        a == b or blank(a) == blank(b) for a, b in zip(old_lines, new_lines, strict=True)
    )
    for site, version in edits:
        _set(data, site.where, str(version))
    try:
        same_data = loads(new) == data
    except ValueError:
        same_data = False
    if not same_shape or not same_data:
        keys = ", ".join(site.key_path for site, _ in edits)
        message = f"{keys}: cannot be moved without changing other parts of the file; edit the pins by hand"
        raise ConfigError(path.name, [message])


def loads(text: str) -> dict[str, Any]:
    text = text.removeprefix("\ufeff")
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)
    return tomlkit.parse(text).unwrap()  # pragma: no cover - Python 3.10


def _set(data: Any, where: Where, value: str) -> None:
    for part in where[:-1]:
        data = data[part]
    assert isinstance(data, MutableMapping)
    data[where[-1]] = value


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


def write_atomic(path: Path, text: str) -> bool:
    """Replace ``path`` (through a symlink: its target) with ``text`` via a temporary file in
    the same folder and :func:`os.replace`, keeping the file's permission bits. The bytes are
    written as they are (no newline translation: a CRLF file stays CRLF)."""
    target = path.resolve()
    data = text.encode("utf-8")
    if target.read_bytes() == data:
        return False
    mode = target.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
