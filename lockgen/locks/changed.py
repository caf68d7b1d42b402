"""Which cells a run changed, and their locks before and after, parsed only for those cells.

A run copies the files of the cells it will resolve to a scratch folder first (bytes, no
parsing); afterwards the change report compares them with the files on disk and parses, before
and after, only the cells whose files differ (:func:`lockset_of`), so a run never holds every lock
in memory (issue 10: memory flat in the number of cells).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import Requirement

from lockgen.runtime.bounded import read_file
from lockgen.runtime.errors import InputError, UsageError
from lockgen.locks.lockset import LockSet
from lockgen.locks.manifest import MANIFEST_NAME
from lockgen.locks.report import change_report, unchanged, upgrade_outcome

if TYPE_CHECKING:
    from lockgen.plan.plan import Plan

log = logging.getLogger("lockgen")

__all__ = ["changed_cells", "check_upgrade_names", "copy_cells", "files_of", "lockset_of", "run_report"]


def files_of(folder: Path, names: Sequence[str]) -> list[str]:
    """Paths, relative to the locks ``folder``, of the cells' files (main lock, the files of its
    folder) that exist."""
    found: list[str] = []
    for cell in names:
        inside = sorted(p for p in (folder / cell).iterdir() if p.is_file()) if (folder / cell).is_dir() else []
        found += [p.relative_to(folder).as_posix() for p in [folder / f"{cell}.txt", *inside] if p.is_file()]
    return found


def copy_cells(folder: Path, names: Sequence[str], into: Path) -> bool:
    """Copy the cells' files and the manifest of the locks ``folder`` into ``into``. False (and
    a warning) when they could not be copied (a full disk, a file-size limit): the run goes on,
    only its change report is left out."""
    rels = files_of(folder, names) + ([MANIFEST_NAME] if (folder / MANIFEST_NAME).is_file() else [])
    try:
        for rel in rels:
            try:  # committed files are input from elsewhere: read with the one bounded reader
                data = read_file(folder / rel, rel) if not (folder / rel).is_symlink() else None
            except InputError:  # huge, or not a regular file: left out (its reader names it)
                data = None
            if data is not None:
                (into / rel).parent.mkdir(parents=True, exist_ok=True)
                (into / rel).write_bytes(data)
    except OSError as exc:
        log.warning("no change report for this run: the locks before it could not be copied (%s)", exc.strerror or exc)
        return False
    return True


def changed_cells(old: Path, folder: Path, names: Sequence[str]) -> set[str]:
    """The cells among ``names`` whose files differ between ``old`` (a :func:`copy_cells` copy)
    and the locks ``folder``: one added, removed or changed file is enough."""
    return {
        _cell_of(rel)
        for rel in set(files_of(old, names)) | set(files_of(folder, names))
        if not _same(old / rel, folder / rel)
    }


def lockset_of(folder: Path, locks: str, names: Collection[str]) -> LockSet:
    """A :class:`LockSet` of the cells ``names`` of the locks ``folder`` (with its manifest), read
    from a scratch copy so only those cells are parsed. ``locks``: the project-relative name of
    the locks folder (header paths start with it)."""
    with tempfile.TemporaryDirectory(prefix="lockgen-report-") as tmp:
        copy_cells(folder, sorted(names), Path(tmp))  # with the manifest
        return LockSet.from_folder(Path(tmp), locks, label=locks)


def check_upgrade_names(before: LockSet, plans: Sequence[Plan], names: Sequence[str]) -> None:
    """``--upgrade-package NAME`` (or ``NAME==VERSION``, as uv takes it) must name a package a
    selected cell locks or asks for (issue 6: a typo was accepted silently). Raises
    :class:`UsageError` naming it, with the closest known names."""
    import difflib

    from packaging.requirements import InvalidRequirement
    from packaging.utils import canonicalize_name

    selected = {p.cell.name for p in plans}
    known = {e.name for cell, locks in before.cells.items() if cell in selected for e in locks.main.entries}
    known |= {n for p in plans for n in p.requirement_names()}
    for text in names:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            raise UsageError(f"--upgrade-package {text!r}: write a package name, or NAME==VERSION") from None
        key = canonicalize_name(req.name)
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise UsageError(f"--upgrade-package {text}: no selected cell locks or requires it{hint}; check the name")


#: ``held(name, {cell: locked version})`` -> ``{cell: what holds it}`` (:mod:`lockgen.resolve.holdback`).
Held = Callable[[str, Mapping[str, str]], Mapping[str, str]]


def run_report(
    folder: Path,
    locks: str,
    before: LockSet | None,
    old: Path | None,
    touched: list[str],
    upgrades: Sequence[str],
    held: Held | None = None,
) -> tuple[list[str], list[dict[str, object]]]:
    """What the run changed, grouped across cells, and what happened to each ``--upgrade-package``.
    Only the cells whose files changed are read (``old``: a copy of the touched cells' files
    from before the run), unless an upgrade was asked for (its outcome counts every touched
    cell: ``before`` holds every lock; ``held`` says what kept a package where it was).
    ``folder``: the locks folder, ``locks`` its project-relative name. Returns the summary
    lines and the ``--json`` changes; no lines when the files before the run were not copied
    (``old`` None) or cannot be read back now."""
    if old is None and before is None:
        return [], []
    try:
        cells = set(touched) if before is not None else changed_cells(old or folder, folder, touched)
        after = lockset_of(folder, locks, cells)
        earlier = before.only(cells) if before is not None else lockset_of(old or folder, locks, cells)
    except OSError as exc:
        log.warning("no change report for this run: %s", exc.strerror or exc)
        return [], []
    report = change_report(earlier, after, touched)
    outcomes = []
    for spec in upgrades:
        name = Requirement(spec).name
        kept = unchanged(name, earlier, after, touched)
        reasons = held(name, kept) if held is not None and kept else {}
        outcomes.append(upgrade_outcome(name, earlier, after, touched, reasons))
    return report.lines() + outcomes, report.to_json()


def _same(a: Path, b: Path) -> bool:
    try:
        return read_file(a, str(a)) == read_file(b, str(b))
    except InputError:  # huge, or not a regular file: not the same as anything
        return False
    except OSError:
        return a.exists() == b.exists()


def _cell_of(rel: str) -> str:
    return rel.split("/", 1)[0].removesuffix(".txt")
