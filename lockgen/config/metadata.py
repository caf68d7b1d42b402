"""The project's own metadata: ``[project]`` of a pyproject.toml (PEP 621), the ``project``
template variable (issue 9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockgen.config.fields import Checks
from lockgen.config.model import ProjectMetadata

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
            table = self.read_toml((root / name).read_text(encoding="utf-8-sig")).get("project")
        except Exception as exc:  # OSError, TOML syntax
            self.problem(("project",), f"{name}: cannot read it as TOML: {exc}")
            return None
        if not isinstance(table, dict):
            if required:
                self.problem(("project",), f"{name}: has no [project] table")
            return None
        dynamic = table.get("dynamic", [])
        dynamic = set(dynamic) if isinstance(dynamic, list) else set()
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
        )  # fmt: skip

    def requirement_list(self, value: Any, name: str, key: str) -> tuple[str, ...]:
        from packaging.requirements import InvalidRequirement, Requirement

        if not isinstance(value, list):
            self.problem(("project",), f"{name}: {key} must be a list of requirement strings")
            return ()
        result = []
        for i, item in enumerate(value):
            try:
                Requirement(item if isinstance(item, str) else "")
            except InvalidRequirement as exc:
                self.problem(("project",), f"{name}: {key}[{i}]: {item!r} is not a requirement: {exc}")
                continue
            result.append(item)
        return tuple(result)
