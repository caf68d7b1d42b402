"""``lockgen diff [OLD [NEW]] [--format text|markdown|json] [--exit-code]``: the core of the command.

OLD and NEW are git revisions of the repository holding the project, or folders of locks (an
argument naming an existing folder is a folder: a locks folder, a copy of one such as a CI shard
artifact, or a project folder holding ``<locks>/``; :func:`_folder` tells them apart). OLD defaults to ``HEAD``, NEW to the work
tree's locks folder. The CLI parses the arguments and prints what :func:`diff_command` returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from lockgen.config import find_config
from lockgen.runtime.errors import LockgenError, UsageError
from lockgen.locks.diff import Group, diff, group
from lockgen.locks.diffformat import render_json, render_markdown, render_text
from lockgen.locks.lock import decode, is_lock_file
from lockgen.locks.lockset import LockSet, is_git_repository
from lockgen.locks.manifest import MANIFEST_NAME
from lockgen.locks.report import cutoff_lines, cutoff_moves
from lockgen.runtime.bounded import read_file
from lockgen.runtime.errors import InputError, LockFormatError

__all__ = ["FORMATS", "diff_command", "folders_only"]

WORK_TREE = "work tree"


def _markdown(groups: Sequence[Group], title: str) -> str:
    return render_markdown(groups, title=title)


FORMATS: dict[str, Callable[[Sequence[Group], str], str]] = {
    "text": lambda groups, _title: render_text(groups),
    "markdown": _markdown,
    "json": lambda groups, _title: render_json(groups),
}


def diff_command(
    root: Path, locks: str, old: str | None, new: str | None, fmt: str, exit_code: bool, stale: str | None = None
) -> tuple[str, int]:
    """``(output, exit status)`` of ``lockgen diff OLD NEW --format FMT [--exit-code]`` for the
    project at ``root`` whose locks folder is ``locks`` (project-relative). The status is 1 with
    ``exit_code`` when anything changed (like ``git diff --exit-code``), else 0.

    ``stale``: why the work tree's locks are not what the config gives now (a template or the
    config edited since they were locked: :func:`lockgen.run.check.stale_note`). When NEW is the
    work tree, the text and markdown outputs say it: a diff of lock files cannot show an edit
    that no lock holds yet, so "no changes" would mislead.

    Raises :class:`UsageError` for an unknown format, a revision that names no commit, or git
    revisions asked for (OLD's default ``HEAD`` included) outside a git repository."""
    render = FORMATS.get(fmt)
    if render is None:
        raise UsageError(f"unknown --format {fmt!r}; use one of {', '.join(FORMATS)}")
    before, old_name = _side(root, locks, old, "HEAD")
    after, new_name = _side(root, locks, new, None)
    groups = group(diff(before, after))
    output = render(groups, f"Lock changes: {old_name} → {new_name}")
    spread_lines = _spread_changes(before, after, root / locks if new is None else None, locks)
    both = set(before.cells) & set(after.cells)
    cutoffs = cutoff_lines(cutoff_moves(before, after, both), len(both))  # headers changed, packages maybe not
    if fmt == "text":
        output += "".join(f"{line}\n" for line in spread_lines + cutoffs)
    elif fmt == "markdown":
        if spread_lines:
            output += "\n**Versions across cells**\n\n" + "".join(f"- {_md_text(line)}\n" for line in spread_lines)
        if cutoffs:
            output += "\n**Cooldown cutoffs**\n\n" + "".join(f"- {_md_text(line)}\n" for line in cutoffs)
    if stale and new is None and fmt != "json":
        output = _with_stale(output, groups, stale, fmt)
    return output, 1 if exit_code and (groups or spread_lines or cutoffs) else 0


def _md_text(line: str) -> str:
    return line.replace("|", "\\|").replace("<", "&lt;")


def _spread_changes(before: LockSet, after: LockSet, folder: Path | None, locks: str) -> list[str]:
    """Each package whose versions started or stopped differing across the cells between the two
    sides (:func:`lockgen.locks.spread.changes`), said with the new side's recorded cause when
    the new side is the work tree (its ``differences.json``)."""
    from lockgen.locks import spread

    def versions(side: LockSet) -> dict[str, dict[str, tuple[str, ...]]]:
        return spread.spread(
            {name: {e.name: str(e.version) for e in cell.main.entries if e.version} for name, cell in side.cells.items()}
        )

    explained: dict[str, spread.Difference] = {}
    if folder is not None and (folder / spread.DIFFERENCES_NAME).is_file():
        where = spread.differences_path(locks)
        try:
            found = spread.loads(decode(read_file(folder / spread.DIFFERENCES_NAME, where), where), where)
            explained = {d.name: d for d in found}
        except (OSError, InputError, LockFormatError):
            explained = {}
    return spread.changes(versions(before), versions(after), explained)


def _with_stale(output: str, groups: Sequence[Group], stale: str, fmt: str) -> str:
    """``output`` saying that the work tree's locks are ``stale``: in place of "no changes", or
    after the changes it lists."""
    if fmt == "markdown":
        return output.rstrip("\n") + f"\n\n> ⚠️ {stale}\n"
    if not groups:
        return f"no changes in the lock files, but {stale}\n"
    return output.rstrip("\n") + f"\nnote: {stale}\n"


def folders_only(cwd: Path, old: str | None, new: str | None) -> bool:
    """Whether ``lockgen diff OLD NEW`` compares two folders (then it needs no project config)."""
    return old is not None and new is not None and all((cwd / arg).is_dir() for arg in (old, new))


def _side(root: Path, locks: str, arg: str | None, default: str | None) -> tuple[LockSet, str]:
    """The lock set ``arg`` names and how to call it: a folder, a git revision (``default``
    when ``arg`` is None), or the work tree's locks folder (no ``arg``, no ``default``). A
    folder that holds no locks is an error naming it (it is not an empty set of locks: every
    cell would read as added)."""
    if arg is None and default is None:
        return _from_folder(root / locks, locks, locks), WORK_TREE
    folder = _folder(root, locks, arg) if arg is not None else None
    if folder is not None:
        return _from_folder(folder, locks, str(arg)), str(arg)
    rev = arg if arg is not None else str(default)
    if not is_git_repository(root):
        what = f"{arg!r} is not a folder and " if arg is not None else ""
        raise UsageError(
            f"{what}{root} is not in a git repository, so there are no revisions to compare; "
            "pass two folders of locks instead: lockgen diff OLD_FOLDER NEW_FOLDER"
        )
    return LockSet.from_git(root, rev, locks), rev


def _from_folder(folder: Path, locks: str, label: str) -> LockSet:
    """:meth:`LockSet.from_folder`, refusing a folder with neither a lock lockgen wrote nor a
    manifest (:class:`UsageError` naming it)."""
    found = folder.is_dir() and ((folder / MANIFEST_NAME).is_file() or any(map(is_lock_file, folder.glob("*.txt"))))
    if not found:
        what = "does not exist" if not folder.exists() else "holds no locks (no lock lockgen wrote, no manifest.json)"
        shown = label if folder.name == Path(label).name else str(folder)  # a project folder stands for <locks>/
        raise UsageError(
            f"{shown}: {what}; name a locks folder (or a project folder holding one), or run `lockgen all` first"
        )
    return LockSet.from_folder(folder, locks, label=label)


def _folder(root: Path, locks: str, arg: str) -> Path | None:
    """The locks folder ``arg`` names (relative to the current folder, else to ``root``), or None
    when ``arg`` is not a folder. A *project* folder (one holding a lockgen config) stands for
    its ``<locks>`` subfolder; a *locks* folder (one holding ``manifest.json`` or a lock lockgen
    wrote, i.e. a ``*.txt`` whose first line is lockgen's header) for itself; any other folder
    for its ``<locks>`` subfolder when it has one, else for itself. A project's own
    ``requirements.txt`` or ``LICENSE.txt`` says nothing either way."""
    for candidate in (Path(arg), root / arg):
        if candidate.is_dir():
            inner = candidate / locks
            if _holds_config(candidate):
                return inner
            if (candidate / MANIFEST_NAME).is_file() or any(map(is_lock_file, candidate.glob("*.txt"))):
                return candidate
            return inner if inner.is_dir() else candidate
    return None


def _holds_config(folder: Path) -> bool:
    """Whether ``folder`` holds a lockgen config (``lockgen.toml``, or ``pyproject.toml`` with
    ``[tool.lockgen]``); a pyproject.toml that is not valid TOML holds none."""
    try:
        find_config(folder, ".")
    except LockgenError:
        return False
    return True
