"""The project's own metadata: ``[project]`` of a pyproject.toml (PEP 621) and its
``[dependency-groups]`` (PEP 735), the ``project`` template variable (issues 9 and 20)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lockgen.config.fields import Checks
from lockgen.config.model import ProjectMetadata
from lockgen.runtime import keyed

__all__ = ["MetadataChecks"]


class MetadataChecks(Checks):
    def project(self, value: Any, root: Path) -> ProjectMetadata | None:
        """The ``project`` template variable: ``[project]`` of the pyproject.toml that the
        ``project`` key names (a path inside the project), else of the config's own
        ``pyproject.toml`` (or the one beside ``lockgen.toml``) when it has a ``[project]`` table."""
        if value is None:
            if not (root / "pyproject.toml").is_file():
                return None
            return self.project_file(root, "pyproject.toml", required=False)
        name = self.string(value, ("project",))
        if name is None:
            return None
        if not name.strip() or Path(name).is_absolute() or ".." in Path(name).parts:
            self.problem(("project",), f"{name!r} must be the path of a pyproject.toml inside the project")
            return None
        if not (root / name).is_file():
            self.problem(("project",), f"{name}: no such file; name the project's pyproject.toml")
            return None
        return self.project_file(root, name, required=True)

    def project_file(self, root: Path, name: str, required: bool) -> ProjectMetadata | None:
        """Read ``[project]`` of ``root/name`` (PEP 621): static dependency lists, each entry a
        PEP 508 requirement; problems name the file and the key."""
        if self.read_toml is None:
            return None
        try:
            document = self.read_toml(self.read_text(root / name))
        except Exception as exc:  # OSError, TOML syntax
            self.problem(("project",), f"{name}: cannot read it as TOML: {exc}")
            return None
        table = document.get("project")
        groups_table = document.get("dependency-groups")
        if not isinstance(table, dict):
            if groups_table is None:
                if required:
                    self.problem(("project",), f"{name}: has no [project] table")
                return None
            # PEP 735: dependency groups need no [project] table (a project that is no package)
            return ProjectMetadata(
                path=name, dependencies=None, optional_dependencies=None,
                dependency_groups=self.dependency_groups(groups_table, name),
            )  # fmt: skip
        dynamic = {field for field in keyed.listed(table.get("dynamic")) if isinstance(field, str)}
        deps = (
            None
            if "dependencies" in dynamic
            else self.requirement_list(table.get("dependencies", []), name, "project.dependencies")
        )
        raw = table.get("optional-dependencies", {})
        if not isinstance(raw, dict):
            self.problem(("project",), f"{name}: project.optional-dependencies must be a table of lists")
            raw = {}
        groups = {
            group: self.requirement_list(reqs, name, f"project.optional-dependencies.{group}")
            for group, reqs in raw.items()
        }
        strings = {
            k: table[k] if isinstance(table.get(k), str) else None for k in ("name", "version", "requires-python")
        }
        return ProjectMetadata(
            path=name, name=strings["name"], version=strings["version"], requires_python=strings["requires-python"],
            dependencies=deps, optional_dependencies=None if "optional-dependencies" in dynamic else groups,
            dependency_groups=self.dependency_groups(groups_table, name),
        )  # fmt: skip

    def dependency_groups(self, value: Any, name: str) -> dict[str, tuple[str, ...]]:
        """``[dependency-groups]`` of ``name`` (PEP 735): group name as written -> its requirement
        strings, each ``{include-group = "other"}`` replaced by the other group's (expanded)
        entries in place. Group names compare normalized (PEP 503: ``Test_Group`` is
        ``test-group``); two names that normalize alike, an include of an unknown group and an
        include cycle are problems naming the file and the key path
        (``dependency-groups.test[1]``). Absent: ``{}``."""
        from packaging.utils import canonicalize_name

        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(("project",), f"{name}: dependency-groups must be a table of lists")
            return {}
        by_normal: dict[str, str] = {}
        for group in value:
            if not _GROUP_NAME.match(group):
                self.problem(
                    ("project",),
                    f"{name}: dependency-groups.{group}: not a valid group name (PEP 735: letters, digits, '.', '_', '-', starting and ending with a letter or digit)",
                )
            normal = canonicalize_name(group)
            if normal in by_normal:
                self.problem(
                    ("project",),
                    f"{name}: dependency-groups.{group}: the same group as {by_normal[normal]!r} (names compare normalized, PEP 735)",
                )
                continue
            by_normal[normal] = group
        expanded: dict[str, tuple[str, ...] | None] = {}  # None: a problem was reported for it

        def expand(group: str, stack: tuple[str, ...]) -> tuple[str, ...] | None:
            if group in expanded:
                return expanded[group]
            expanded[group] = result = _expand(group, stack)
            return result

        def _expand(group: str, stack: tuple[str, ...]) -> tuple[str, ...] | None:
            entries = value[group]
            if not isinstance(entries, list):
                self.problem(
                    ("project",),
                    f'{name}: dependency-groups.{group} must be a list of requirement strings and {{include-group = "…"}} tables',
                )
                return None
            result: list[str] = []
            for i, entry in enumerate(entries):
                key = f"dependency-groups.{group}[{i}]"
                if isinstance(entry, str):
                    if self.requirement(entry, name, key):
                        result.append(entry)
                    continue
                if not (
                    isinstance(entry, dict)
                    and set(entry) == {"include-group"}
                    and isinstance(entry["include-group"], str)
                ):
                    self.problem(
                        ("project",),
                        f'{name}: {key}: {entry!r} is neither a requirement string nor a table {{include-group = "name"}}',
                    )
                    continue
                target = by_normal.get(canonicalize_name(entry["include-group"]))
                if target is None:
                    self.problem(
                        ("project",),
                        f"{name}: {key}: include-group {entry['include-group']!r} names no group of [dependency-groups] (groups: {', '.join(value) or 'none'})",
                    )
                    continue
                if target in stack:
                    cycle = " -> ".join((*stack[stack.index(target) :], target))
                    self.problem(
                        ("project",),
                        f"{name}: {key}: include-group {entry['include-group']!r} makes a cycle ({cycle}); PEP 735 forbids it",
                    )
                    return None
                included = expand(target, (*stack, target))
                if included is None:
                    return None
                result += included
            return tuple(result)

        for group in by_normal.values():
            expand(group, (group,))
        return {group: reqs for group in by_normal.values() if (reqs := expanded.get(group)) is not None}

    def requirement_list(self, value: Any, name: str, key: str) -> tuple[str, ...]:

        if not isinstance(value, list):
            self.problem(("project",), f"{name}: {key} must be a list of requirement strings")
            return ()
        return tuple(item for i, item in enumerate(value) if self.requirement(item, name, f"{key}[{i}]"))

    def requirement(self, item: Any, name: str, key: str) -> bool:
        """Whether ``item`` is a PEP 508 requirement string; a problem naming ``key`` if not."""
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            Requirement(item if isinstance(item, str) else "")
        except InvalidRequirement as exc:
            self.problem(("project",), f"{name}: {key}: {item!r} is not a requirement: {exc}")
            return False
        return True


#: A valid dependency group name (PEP 735, the same rule as a project name's; case-insensitive).
_GROUP_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)
