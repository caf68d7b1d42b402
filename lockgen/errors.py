"""The one exception root of lockgen and its user-facing kinds.

Every error a user can cause derives from :class:`LockgenError`; the CLI prints its message as
``error: …`` (traceback only with ``-v``) and exits with :attr:`LockgenError.exit_code`.
"""

from __future__ import annotations


class LockgenError(Exception):
    """Root of every lockgen error. ``exit_code`` is what the CLI exits with."""

    exit_code = 2


class ConfigError(LockgenError):
    """The configuration is invalid. Carries every problem found, each naming its key path.

    ``problems`` is a list of strings such as ``"tool.lockgen.rules[2].match.backend: …"``.
    """

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = list(problems)
        lines = [f"{source}: {len(self.problems)} configuration problem(s):"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


class UsageError(LockgenError):
    """The command line asks for something that does not exist (an unknown cell, a bad selector)."""


class TemplateError(LockgenError):
    """A template failed to render for a cell; the message names template, line and cell."""


class TemplateLinesError(TemplateError):
    """A rendered template holds lines uv must not see (an index, find-links, a file include; issue
    "Trust", item 6). A record: ``where`` (``templates/requirements.in.j2``), the ``cell`` and one
    ``problems`` string per line (``rendered line 2 '…': … ; <fix>``). The message ends with
    ``(cell <name>)`` once, so the same problem in many cells merges into one line."""

    #: At most this many lines are listed; the rest are counted.
    SHOWN = 5

    def __init__(self, where: str, cell: str, problems: list[str]):
        self.where, self.cell, self.problems = where, cell, list(problems)
        shown = self.problems[: self.SHOWN]
        more = len(self.problems) - len(shown)
        if len(self.problems) == 1:
            text = f"{where}: {shown[0]}"
        else:
            text = "\n".join([f"{where}: {len(self.problems)} lines uv must not see:", *(f"  {p}" for p in shown)])
            text += f"\n  … and {more} more" if more else ""
        super().__init__(f"{text} (cell {cell})")


class CellFailed(LockgenError):
    """A cell could not be resolved or written; other cells are unaffected. Exit code 1."""

    exit_code = 1


class LockFormatError(LockgenError):
    """A file in the locks folder is not a lock lockgen can read (hand-edited beyond repair, or
    another tool's file); the message names the file and line. Exit code 1: re-lock the cell."""

    exit_code = 1


class Interrupted(LockgenError):
    """Ctrl-C or SIGTERM stopped the run: running uv processes were ended, queued cells were not
    started, nothing interrupted was recorded. Exit code 130."""

    exit_code = 130


def merge_cells(problems: list[str]) -> str:
    """One line per distinct problem, naming every cell it occurs in (``… (cells a, b)``)."""
    import re

    merged: dict[str, list[str]] = {}
    for problem in problems:
        match = re.search(r" \(cell ([^)]+)\)", problem)
        key = problem.replace(match.group(0), "") if match else problem
        merged.setdefault(key, []).append(match.group(1) if match else "")
    return "\n".join(
        f"{text} (cell{'s' if len(cells) > 1 else ''} {', '.join(c for c in cells if c)})" if any(cells) else text
        for text, cells in merged.items()
    )


class UvMissing(LockgenError):
    """The pinned ``uv`` package's binary is not installed (lockgen never falls back to PATH)."""


class WriteError(LockgenError):
    """A file lockgen must write could not be written: ``path``, the system's ``reason`` and a
    ``hint`` (what to do). Exit code 1: the run failed, the command line was fine. Built from an
    ``OSError`` by :func:`lockgen.writing.write_error`."""

    exit_code = 1

    def __init__(self, path: str, reason: str, hint: str):
        self.path, self.reason, self.hint = path, reason, hint
        super().__init__(f"cannot write {path}: {reason}; {hint}")


class InstallRefused(LockgenError):  # noqa: N818 - a kind named like CellFailed (what happened), as the others
    """``lockgen install`` will not start: the cell does not fit this machine (another Python
    minor or interpreter arch, an older glibc or macOS, another OS), its lock files do not match
    the manifest, or no interpreter was found. Nothing was installed. Exit code 2."""


class InstallFailed(LockgenError):  # noqa: N818 - a kind named like CellFailed (what happened), as the others
    """``lockgen install`` started and a required layer (main, no-deps, unhashed) failed, a
    rollback failed, or the installed versions do not match the lock. Exit code 1."""

    exit_code = 1
