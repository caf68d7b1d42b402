"""``lockgen matrix``: the cells of the matrix as rows, the cells of a shard as ``lockgen all --shard`` locks them."""

from __future__ import annotations

from collections.abc import Sequence

from lockgen.locks.shard import Shard
from lockgen.locks.shard import select as select_shard
from lockgen.plan.matrix import select, with_alias_sources
from lockgen.plan.target import target_for
from lockgen.project import Project

__all__ = ["rows"]


def rows(project: Project, only: Sequence[str] = (), shard: Shard | None = None) -> list[dict[str, object]]:
    """One row per selected cell (``--only``), in matrix order: its name, axes, lock path, target
    platform and Python tag, and why it is skipped or which cell it is an alias of. With ``shard``,
    the cells ``lockgen all --shard`` locks: an alias's cell goes with it. Raises ``UsageError``
    for a bad selector."""
    cells = select(project.cells, only=only)
    if shard is not None:
        cells = select_shard(with_alias_sources(project.cells, cells), shard)
    found: list[dict[str, object]] = []
    for cell in cells:
        target = target_for(cell)
        found.append({
            "name": cell.name, **cell.values, "lock": cell.lock_path(project.config), "target": target.platform,
            "python_tag": target.python_tag, "skip": cell.settings.skip, "alias": cell.settings.alias,
            "interpreter": cell.settings.interpreter,
        })  # fmt: skip
    return found
