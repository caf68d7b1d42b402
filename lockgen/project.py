"""A loaded project: its configuration, its expanded matrix, and what the stages need of them.

Reading a project has no side effects: ``matrix``, ``check`` and ``detect`` load one and write
nothing. Only :mod:`lockgen.run.lock` writes (locks, manifest, lockgen's work folder).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockgen.config import Config, find_config, load_config
from lockgen.locks import manifest
from lockgen.plan import mirror
from lockgen.plan.matrix import Cell, expand
from lockgen.plan.mirror import Mirrors
from lockgen.plan.target import Target, target_for
from lockgen.runtime.errors import ConfigError, Problem, TemplateError, merged

if TYPE_CHECKING:
    from lockgen.plan.plan import Plan

__all__ = ["Project", "requires"]


@dataclass(frozen=True)
class Project:
    """A validated configuration and its expanded matrix (in matrix order)."""

    config: Config
    cells: tuple[Cell, ...]

    @classmethod
    def load(cls, start: Path, config_path: str | None = None) -> Project:
        """Find (see :func:`~lockgen.config.find_config`), validate and expand the config.
        Raises ``UsageError`` (no config) or ``ConfigError`` (every problem, with key paths)."""
        config = load_config(find_config(start, config_path))
        return cls(config=config, cells=tuple(expand(config)))

    @property
    def root(self) -> Path:
        return self.config.root

    def cell(self, name: str) -> Cell:
        return next(c for c in self.cells if c.name == name)

    def plans(self, cells: Sequence[Cell]) -> list[Plan]:
        """Render and plan every resolved (not skipped, not alias) cell in ``cells``.

        Raises :class:`TemplateError` listing every template problem found, each once with the
        cells it occurs in."""
        from lockgen.plan.plan import make_plan
        from lockgen.plan.render import environment
        from lockgen.runtime.uvbin import uv_version

        env = environment(self.config)
        version = uv_version()
        plans: list[Plan] = []
        config_problems: list[Problem] = []
        template_problems: list[Problem] = []
        for cell in cells:
            if not cell.resolves:
                continue
            try:
                plans.append(make_plan(self.config, env, cell, target_for(cell), version))
            except ConfigError as exc:
                config_problems += [p.in_cell(cell.name) for p in exc.problems]
            except TemplateError as exc:
                template_problems += [p.in_cell(cell.name) for p in exc.problems]
        if config_problems:  # one record per problem, naming every cell it occurs in
            raise ConfigError(self.config.source, [*config_problems, *template_problems])
        if template_problems:
            raise TemplateError(*merged(template_problems))
        return plans

    def read_files(self) -> set[str]:
        """Project files besides the config and the templates that every plan reads: the
        pyproject.toml whose ``[project]`` templates see, when it is not the config file."""
        project = self.config.project
        return {project.path} if project is not None and project.path != self.config.source else set()

    def mirrors(self, cli: Sequence[str] = ()) -> Mirrors:
        """Mirrors from the config, then ``LOCKGEN_MIRRORS``, then ``--mirror`` (later wins), with
        the logins of every URL field expanded from the environment (``UsageError`` when unset)."""
        tables = [self.config.mirrors, mirror.from_env(os.environ.get(mirror.ENV_VAR)), mirror.parse(cli)]
        return mirror.build(tables, self.config.credentials)

    def rows(self, plans: Sequence[Plan] = ()) -> list[manifest.Row]:
        """Every cell as a manifest row, with input hashes from ``plans`` where given."""
        hashes = {p.cell.name: p.input_hash for p in plans}
        rows = []
        for cell in self.cells:
            target = target_for(cell)
            row = manifest.Row(
                **cell.axes, name=cell.name, lock=cell.lock_path(self.config), skip=cell.settings.skip,
                alias=cell.settings.alias, target=target.to_dict(), requires=requires(cell, target),
                environment=target.env(), input_hash=hashes.get(cell.name), extra=dict(cell.extra),
            )  # fmt: skip
            rows.append(row)
        return rows

    def detect_rules(self) -> dict[str, Any] | None:
        """The ``[detect]`` rules as the manifest carries them (normalized), or None."""
        rules = self.config.detect
        return rules.to_dict() if rules is not None else None

    def manifest_text(self, failed: dict[str, str] | None = None) -> str:
        """The manifest the locks on disk give, with ``failed`` cells (cell -> reason)."""
        return manifest.dumps(manifest.build(self.root, self.rows(), self.detect_rules(), failed))


def requires(cell: Cell, target: Target) -> dict[str, str]:
    """What a machine needs to install the cell's lock: the Python minor, the interpreter arch
    (an alias may require another one than the host's: the seed's x64 stack on Windows ARM), and
    the glibc (manylinux) or macOS minimum of its target."""
    needs = {"python": cell.python, "interpreter": cell.settings.interpreter or cell.arch}
    if cell.os == "linux":
        needs["glibc"] = (cell.settings.manylinux or "2_28").replace("_", ".")
    if target.macos:
        needs["macos"] = target.macos
    return needs
