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


class WriteError(LockgenError):
    """A file lockgen must write could not be written (read-only folder, disk full); the message
    names it. Exit code 1: the cells whose files could not be written failed."""

    exit_code = 1


def write_error(path: object, exc: OSError) -> WriteError:
    """The user error for an ``OSError`` while writing ``path``."""
    why = exc.strerror or str(exc)
    return WriteError(f"{path}: cannot write it ({why}); check the folder's permissions and free space")


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
