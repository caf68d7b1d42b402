"""``lockgen init``, reading a ``pyproject.toml``: the project's lists and uv's tables. Pure.

What init reads: ``[project]`` (PEP 621: ``dependencies``, ``optional-dependencies``,
``requires-python``) and ``[dependency-groups]`` (PEP 735, ``include-group`` expanded), read and
checked by lockgen's own reader of them (:mod:`lockgen.config.metadata`, the one the ``project``
template variable comes from); and uv's settings, as uv documents them: ``[[tool.uv.index]]``
(``name``, ``url``, ``explicit``, ``default``, ``format = "flat"``), ``[tool.uv.sources]``
(``index``, ``extra``, ``group``, ``marker``; one table or a list of them), and in ``[tool.uv]``
``conflicts`` (sets of ``{extra = …}`` / ``{group = …}`` that cannot be installed together),
``environments``, ``override-dependencies``, ``constraint-dependencies`` and ``prerelease``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.markers import InvalidMarker, Marker
from packaging.utils import NormalizedName, canonicalize_name

from lockgen.runtime import keyed
from lockgen.runtime.errors import UsageError
from lockgen.scaffold.reading import hide_login

__all__ = ["Member", "PyProject", "UvIndex", "UvSource", "read_pyproject"]


@dataclass(frozen=True, kw_only=True)
class UvIndex:
    """One ``[[tool.uv.index]]`` table."""

    name: str
    url: str
    explicit: bool = False
    default: bool = False
    flat: bool = False  # format = "flat": a find-links page


@dataclass(frozen=True, kw_only=True)
class UvSource:
    """One entry of ``[tool.uv.sources].<package>``: where the package comes from (``index``
    names a :class:`UvIndex`; ``kind`` is ``index``, ``url``, ``git``, ``path`` or
    ``workspace``), for which ``extra`` or ``group`` and under which ``marker``."""

    kind: str
    index: str | None = None
    extra: NormalizedName | None = None
    group: NormalizedName | None = None
    marker: Marker | None = None


@dataclass(frozen=True, order=True)
class Member:
    """An extra (``kind`` ``extra``) or a dependency group (``group``), its name as written."""

    kind: str
    name: str

    @property
    def key(self) -> tuple[str, NormalizedName]:
        return self.kind, canonicalize_name(self.name)

    def __str__(self) -> str:
        return f"{'[project.optional-dependencies]' if self.kind == 'extra' else '[dependency-groups]'} {self.name}"


@dataclass(frozen=True, kw_only=True)
class PyProject:
    """What init reads of a ``pyproject.toml`` (``dependencies`` None: none, or dynamic)."""

    dependencies: tuple[str, ...] | None
    requires_python: str | None
    members: dict[Member, tuple[str, ...]]  # every extra and group: its requirement strings
    conflicts: tuple[tuple[Member, ...], ...]
    indexes: tuple[UvIndex, ...]
    sources: dict[NormalizedName, tuple[UvSource, ...]]
    environments: tuple[Marker, ...]
    overrides: tuple[str, ...]
    constraints: tuple[str, ...]
    prerelease: str | None
    notes: tuple[str, ...]

    def index(self, name: str) -> UvIndex | None:
        return next((ix for ix in self.indexes if ix.name == name), None)


def read_pyproject(document: Mapping[str, Any]) -> PyProject:
    """The :class:`PyProject` of a parsed ``pyproject.toml``. Raises :class:`~lockgen.runtime.errors.UsageError` naming the key of
    the first problem (a list that is no list, an entry that is no requirement, a bad marker, a
    name, index, extra, group or marker that is no string, ``sources`` that is no table). The
    tables above them (``tool = 5``, ``[tool] uv = "x"``) and ``dynamic`` read leniently, a
    wrong type as absent (:func:`~lockgen.runtime.keyed.dig`), as uv's keys init does not use."""
    from lockgen.config.metadata import MetadataChecks

    checks = MetadataChecks("pyproject.toml", "")
    project = keyed.table(document.get("project"))
    dynamic = keyed.listed(project.get("dynamic"))
    dependencies = None
    if "dependencies" in project and "dependencies" not in dynamic:
        dependencies = checks.requirement_list(project["dependencies"], "pyproject.toml", "project.dependencies")
    members: dict[Member, tuple[str, ...]] = {}
    extras = project.get("optional-dependencies", {})
    if isinstance(extras, dict) and "optional-dependencies" not in dynamic:
        for name, reqs in extras.items():
            key = f"project.optional-dependencies.{name}"
            members[Member("extra", name)] = checks.requirement_list(reqs, "pyproject.toml", key)
    for name, reqs in checks.dependency_groups(document.get("dependency-groups"), "pyproject.toml").items():
        members[Member("group", name)] = reqs
    if checks.problems:
        raise UsageError(checks.problems[0].text(with_file=False).removeprefix("project: "))
    uv = keyed.table(keyed.dig(document, "tool", "uv"))
    notes: list[str] = []
    by_key = {m.key: m for m in members}
    conflicts = []
    for i, group in enumerate(_list(uv.get("conflicts"), "tool.uv.conflicts")):
        found = []
        for j, item in enumerate(_list(group, f"tool.uv.conflicts[{i}]")):
            if not isinstance(item, dict) or not ({"extra", "group"} & set(item)):
                raise UsageError(f"pyproject.toml: tool.uv.conflicts[{i}][{j}]: a table {{extra = …}} or {{group = …}}")
            kind = "extra" if "extra" in item else "group"
            _string(item[kind], f"tool.uv.conflicts[{i}][{j}].{kind}")
            member = by_key.get((kind, canonicalize_name(item[kind])))
            if member is None:
                notes.append(f"pyproject.toml: tool.uv.conflicts[{i}][{j}]: no {kind} {item[kind]!r}; left out")
                continue
            found.append(member)
        conflicts.append(tuple(found))
    indexes = []
    for i, table in enumerate(_list(uv.get("index"), "tool.uv.index")):
        if not isinstance(table, dict) or not isinstance(table.get("url"), str):
            raise UsageError(f"pyproject.toml: tool.uv.index[{i}]: a table with a url")
        url, hidden = hide_login(table["url"])
        if hidden:
            notes.append(f"pyproject.toml: tool.uv.index[{i}].url: {hidden}")
        name = _string(table.get("name", f"index-{i + 1}"), f"tool.uv.index[{i}].name")
        indexes.append(UvIndex(name=name, url=url,
                               explicit=bool(table.get("explicit")), default=bool(table.get("default")),
                               flat=table.get("format") == "flat"))  # fmt: skip
    sources: dict[NormalizedName, tuple[UvSource, ...]] = {}
    raw_sources = uv.get("sources", {})
    if not isinstance(raw_sources, dict):
        raise UsageError("pyproject.toml: tool.uv.sources: must be a table of package = { index = … }")
    for package, value in raw_sources.items():
        entries = value if isinstance(value, list) else [value]
        sources[canonicalize_name(package)] = tuple(
            _source(entry, f"tool.uv.sources.{package}" + (f"[{i}]" if isinstance(value, list) else ""))
            for i, entry in enumerate(entries)
        )
    environments = tuple(
        _marker(m, f"tool.uv.environments[{i}]")
        for i, m in enumerate(_list(uv.get("environments"), "tool.uv.environments"))
    )
    strings = {}
    for key in ("override-dependencies", "constraint-dependencies"):
        strings[key] = checks.requirement_list(uv.get(key, []), "pyproject.toml", f"tool.uv.{key}")
    if checks.problems:
        raise UsageError(checks.problems[0].text(with_file=False).removeprefix("project: "))
    prerelease = uv.get("prerelease") if isinstance(uv.get("prerelease"), str) else None
    requires = project.get("requires-python")
    return PyProject(dependencies=dependencies, requires_python=requires if isinstance(requires, str) else None,
                     members=members, conflicts=tuple(c for c in conflicts if c), indexes=tuple(indexes),
                     sources=sources, environments=environments, overrides=strings["override-dependencies"],
                     constraints=strings["constraint-dependencies"], prerelease=prerelease, notes=tuple(notes))  # fmt: skip


def _list(value: object, key: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise UsageError(f"pyproject.toml: {key}: must be a list")
    return value


def _string(value: object, key: str) -> str:
    """``value`` if it is a string; else a refusal naming ``key`` (uv refuses the file too)."""
    if not isinstance(value, str):
        raise UsageError(f"pyproject.toml: {key}: must be a string, not {type(value).__name__}")
    return value


def _marker(value: object, key: str) -> Marker:
    try:
        return Marker(_string(value, key))
    except InvalidMarker as exc:
        raise UsageError(f"pyproject.toml: {key}: {value!r} is not a PEP 508 marker: {exc}") from None


def _source(entry: object, key: str) -> UvSource:
    if not isinstance(entry, dict):
        raise UsageError(f'pyproject.toml: {key}: a table such as {{ index = "name" }}')
    kind = next((k for k in ("index", "url", "git", "path", "workspace") if k in entry), "other")
    marker = _marker(entry["marker"], f"{key}.marker") if "marker" in entry else None
    extra, group = (
        canonicalize_name(_string(entry[k], f"{key}.{k}")) if k in entry else None for k in ("extra", "group")
    )
    return UvSource(kind=kind, index=_string(entry["index"], f"{key}.index") if kind == "index" else None,
                    extra=extra, group=group, marker=marker)  # fmt: skip
