"""The change report of a run: what ``lockgen all``/``lock`` moved, grouped across cells.

The pipeline reads the locks folder before and after the run (:meth:`LockSet.from_folder`) and
hands both to :func:`change_report` with the cells the run touched; the summary prints
:meth:`Report.lines` (``matplotlib 3.10.1 → 3.10.3 (12 of 12 cells)``) and ``--json`` embeds
:meth:`Report.to_json`. :func:`upgrade_outcome` says what ``--upgrade-package NAME`` did.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.utils import NormalizedName, canonicalize_name

from lockgen.locks import _origin
from lockgen.locks.diff import Group, diff, group
from lockgen.locks.diffformat import ARROW, text_lines
from lockgen.locks.lockset import CellLocks, LockSet

__all__ = ["Report", "change_report", "cutoff_lines", "cutoff_moves", "unchanged", "upgrade_outcome"]


@dataclass(frozen=True, kw_only=True)
class Report:
    """The grouped changes of a run over ``cells`` (sorted), flagged groups first."""

    cells: tuple[str, ...]
    groups: tuple[Group, ...]
    #: ``{(old cutoff, new cutoff): cells}``: the cells whose lock headers record another
    #: ``exclude-newer`` (a cooldown counted back from this run: ``--force`` re-resolved them).
    cutoffs: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.groups)

    def lines(self) -> list[str]:
        """Terminal lines, one per group (a flagged group's per-cell details indented under it);
        ``["no lock changes"]`` when nothing changed; a line per moved cutoff after them (the
        files changed in their headers, though no package did)."""
        moved = cutoff_lines(self.cutoffs, len(self.cells))
        if self.groups:
            return text_lines(self.groups) + moved
        return ["no package changes", *moved] if moved else ["no lock changes"]

    def to_json(self) -> list[dict[str, object]]:
        """JSON-ready list, one object per group: ``package``, ``kind``, ``old``, ``new``,
        ``layer``, ``flagged``, ``cells``, ``count``, ``total``, ``details``."""
        return [g.to_dict() for g in self.groups]


def change_report(before: LockSet, after: LockSet, cells: Collection[str]) -> Report:
    """The changes from ``before`` to ``after`` in ``cells`` only (the cells the run touched;
    "in N of M cells" counts among them)."""
    chosen = tuple(sorted(set(cells)))
    groups = group(diff(before.only(chosen), after.only(chosen)))
    return Report(cells=chosen, groups=tuple(groups), cutoffs=cutoff_moves(before, after, chosen))


def cutoff_moves(before: LockSet, after: LockSet, cells: Collection[str]) -> dict[tuple[str, str], tuple[str, ...]]:
    """``{(old, new): cells}``: the cells of ``cells`` locked on both sides whose main lock header
    records another ``exclude-newer`` ("" for none): a cooldown counted back from a later run."""
    moves: dict[tuple[str, str], list[str]] = {}
    for cell in sorted(cells):
        old, new = before.cells.get(cell), after.cells.get(cell)
        if old is not None and new is not None and old.main.header.exclude_newer != new.main.header.exclude_newer:
            moves.setdefault((old.main.header.exclude_newer or "", new.main.header.exclude_newer or ""), []).append(cell)
    return {key: tuple(value) for key, value in moves.items()}


def cutoff_lines(moves: Mapping[tuple[str, str], Sequence[str]], total: int) -> list[str]:
    """One line per moved cutoff: ``exclude-newer A → B in the headers (3 of 12 cells)``."""
    return [
        f"exclude-newer {old or 'none'} {ARROW} {new or 'none'} in the headers ({len(cells)} of {total} cells)"
        for (old, new), cells in sorted(moves.items())
    ]


def upgrade_outcome(
    name: str,
    before: LockSet,
    after: LockSet,
    cells: Collection[str] | None = None,
    held: Mapping[str, str] | None = None,
) -> str:
    """What ``--upgrade-package NAME`` did in ``cells`` (default: every cell of ``after``), e.g.
    ``numpy 2.4.5 → 2.4.6 in 12 cells``, ``numpy: kept at 2.4.5 in 12 cells, held by the pin
    templates/requirements.in.j2:3: numpy==2.4.5`` (``held``: cell -> what holds it there, from
    :mod:`lockgen.resolve.holdback`; parts for different outcomes joined by ``; ``), or
    ``numpy: not in any selected cell`` (the caller raises that as an error)."""
    key = canonicalize_name(name)
    held = held or {}
    if cells is not None:
        before, after = before.only(cells), after.only(cells)
    outcomes: dict[tuple[str, str, str], list[str]] = {}
    for cell, locks in sorted(after.cells.items()):
        new = _locked(locks, key)
        if new is None:
            continue
        earlier = before.cells.get(cell)
        was = _locked(earlier, key) if earlier is not None else None
        outcome = (was or "", new, held.get(cell, "") if was == new else "")
        outcomes.setdefault(outcome, []).append(cell)
    if not outcomes:
        return f"{key}: not in any selected cell"
    order = sorted(outcomes, key=lambda o: (o[0] == o[1], -len(outcomes[o]), o))
    parts = [_outcome(old, new, why, len(outcomes[(old, new, why)])) for old, new, why in order]
    colon = ":" if order[0][0] == order[0][1] else ""
    return f"{key}{colon} " + "; ".join(parts)


def unchanged(name: str, before: LockSet, after: LockSet, cells: Collection[str]) -> dict[str, str]:
    """``{cell: version}`` of the ``cells`` where ``name`` is locked at the same version (or URL)
    before and after."""
    key = canonicalize_name(name)
    found = {}
    for cell in sorted(cells):
        old, new = before.cells.get(cell), after.cells.get(cell)
        if old is not None and new is not None:
            was, now = _locked(old, key), _locked(new, key)
            if was is not None and was == now:
                found[cell] = now
    return found


def _outcome(old: str, new: str, why: str, count: int) -> str:
    cells = f"{count} cell{'' if count == 1 else 's'}"
    if old == new:
        return f"kept at {new} in {cells}" + (f", held by {why}" if why else "")
    if not old:
        return f"added at {new} in {cells}"
    return f"{old} {ARROW} {new} in {cells}"


def _locked(locks: CellLocks, name: NormalizedName) -> str | None:
    """The version (else the URL) of ``name`` in the cell's main lock, else in its first layer
    that has it; None when the cell does not have it."""
    package = next((p for p in locks.pylock.packages if p.name == name), None) if locks.pylock else None
    for lock in (locks.main, *locks.layers.values()):
        entry = lock.entry(name)
        if entry is not None:
            found = _origin.version(entry, package if lock is locks.main else None)
            return str(found) if found is not None else entry.url or ""
        package = None
    return None
