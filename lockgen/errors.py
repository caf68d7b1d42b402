"""The one exception root of lockgen, its kinds, and user errors as records.

Every error a user can cause derives from :class:`LockgenError` and carries its problems as
:class:`Problem` records (file, key path or line, cells, message, hint), formatted in one place
(:func:`render`). The same problem met in several cells is merged into one record naming every
cell (:func:`merged`): a config mistake shared by twelve cells is one line, not twelve. The CLI
prints ``error: …`` (traceback only with ``-v``) and exits with :attr:`LockgenError.exit_code`::

    LockgenError (exit 2)                 usage and config errors, nothing resolved
    ├── ConfigError                       the configuration (key paths)
    ├── UsageError                        the command line (an unknown cell, a bad selector)
    │   └── (lockgen.locks.store.Busy)    another run holds the project
    ├── TemplateError                     a template, for a cell (template line)
    │   └── TemplateLinesError            lines uv must not see (an index, -r)
    ├── UvMissing                         the pinned uv binary is not installed
    ├── InstallRefused                    lockgen install will not start
    ├── InputError                        a file lockgen reads but did not write is not what
    │                                     lockgen writes (a manifest field, a shard, a path)
    ├── CellFailed (exit 1)               a cell could not be locked; the others go on
    ├── LockFormatError (exit 1)          a file in locks/ is not a lock lockgen can read
    ├── WriteError (exit 1)               a file could not be written (lockgen.writing)
    ├── InstallFailed (exit 1)            lockgen install failed part way
    └── Interrupted (exit 130)            Ctrl-C or SIGTERM
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

__all__ = [
    "CellFailed", "ConfigError", "InputError", "InstallFailed", "InstallRefused", "Interrupted", "LockFormatError",
    "LockgenError", "Problem", "TemplateError", "TemplateLinesError", "UsageError", "UvMissing", "WriteError",
    "merged", "render",
]  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One user error as data: what is wrong (``message``), where (``file``, a ``key`` path such
    as ``tool.lockgen.rules[2].use``, a 1-based ``line``), in which ``cells``, and what to do
    (``hint``)."""

    message: str
    file: str | None = None
    key: str | None = None
    line: int | None = None
    cells: tuple[str, ...] = ()
    hint: str | None = None

    def where(self) -> str:
        """``file:line``, ``file: key``, ``key`` or ``file``; empty when unknown."""
        place = f"{self.file}:{self.line}" if self.file and self.line else self.file or ""
        if self.key:
            place = f"{place}: {self.key}" if place else self.key
        return place

    def text(self, with_file: bool = True) -> str:
        """The problem on one line (cells and hint included)."""
        where = self.where() if with_file else (self.key or "")
        text = f"{where}: {self.message}" if where else self.message
        if self.cells:
            text += f" (cell{'s' if len(self.cells) > 1 else ''} {', '.join(self.cells)})"
        return f"{text}; {self.hint}" if self.hint else text

    def in_cell(self, cell: str) -> Problem:
        return replace(self, cells=(*self.cells, cell)) if cell not in self.cells else self


def merged(problems: Iterable[Problem]) -> list[Problem]:
    """The problems with identical ones (all but their cells) merged into one naming every cell,
    in first-seen order."""
    out: dict[Problem, Problem] = {}
    for problem in problems:
        key = replace(problem, cells=())
        seen = out.get(key)
        out[key] = (
            problem
            if seen is None
            else replace(seen, cells=(*seen.cells, *(c for c in problem.cells if c not in seen.cells)))
        )
    return list(out.values())


def render(problems: Iterable[Problem], heading: str | None = None) -> str:
    """Every problem (merged), one line each; under ``heading`` as a list when given."""
    items = merged(problems)
    if heading is None:
        return "\n".join(p.text() for p in items)
    return "\n".join([heading, *(f"  - {p.text(with_file=False)}" for p in items)])


class LockgenError(Exception):
    """Root of every lockgen error. ``exit_code`` is what the CLI exits with; ``problems`` the
    records (a plain message becomes one record)."""

    exit_code = 2

    def __init__(self, *problems: Problem | str) -> None:
        self.problems: tuple[Problem, ...] = tuple(
            p if isinstance(p, Problem) else Problem(message=p) for p in problems
        )
        super().__init__(self.render())

    def render(self) -> str:
        return render(self.problems)


class ConfigError(LockgenError):
    """The configuration is invalid. Carries every problem found, each naming its key path
    (``tool.lockgen.rules[2].match.backend``); ``source`` is the config file's name. Plain
    strings ``"key.path: message"`` become records."""

    def __init__(self, source: str, problems: Iterable[Problem | str]) -> None:
        self.source = source
        records = []
        for problem in problems:
            if isinstance(problem, str):
                key, sep, message = problem.partition(": ")
                dotted = sep and " " not in key.strip() and key[:1].isalpha()
                problem = (
                    Problem(file=source, key=key, message=message) if dotted else Problem(file=source, message=problem)
                )
            records.append(problem if problem.file else replace(problem, file=source))
        super().__init__(*records)

    def render(self) -> str:
        count = len(merged(self.problems))
        return render(self.problems, f"{self.source}: {count} configuration problem{'s' if count != 1 else ''}:")

    @property
    def messages(self) -> list[str]:
        """Each problem as ``key.path: message`` (the form tests and tools read)."""
        return [p.text(with_file=False) for p in merged(self.problems)]


class UsageError(LockgenError):
    """The command line asks for something that does not exist (an unknown cell, a bad selector)."""


class TemplateError(LockgenError):
    """A template failed to render for a cell; the message names template, line and cell."""


class TemplateLinesError(TemplateError):
    """A rendered template holds lines uv must not see (an index, find-links, a file include; issue
    "Trust", item 6): ``where`` (``templates/requirements.in.j2``), the ``cell`` and one string per
    line in ``lines`` (``rendered line 2 '…': … ; <fix>``); ``line``: the template line of a
    single refused line, when known (the record then reads ``templates/x.j2:3: …``, as Jinja's
    errors do). One record, so the same lines in many cells merge into one message naming every
    cell."""

    #: At most this many lines are listed; the rest are counted.
    SHOWN = 5

    def __init__(self, where: str, cell: str, lines: list[str], line: int | None = None) -> None:
        self.where, self.cell, self.lines = where, cell, list(lines)
        shown = self.lines[: self.SHOWN]
        more = len(self.lines) - len(shown)
        if len(self.lines) == 1:
            text = shown[0]
        else:
            text = "\n".join([f"{len(self.lines)} lines uv must not see:", *(f"  {line}" for line in shown)])
            text += f"\n  … and {more} more" if more else ""
        super().__init__(Problem(file=where, line=line, message=text, cells=(cell,)))


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


class InstallRefused(LockgenError):
    """``lockgen install`` will not start: the cell does not fit this machine (another Python
    minor or interpreter arch, an older glibc or macOS, another OS), its lock files do not match
    the manifest, or no interpreter was found. Nothing was installed. Exit code 2."""


class InputError(LockgenError):
    """A file lockgen reads but did not just write (a manifest, a lock, a shard's files, a
    journal) is not what lockgen writes: a field of the wrong type or shape, a path outside the
    locks folder, a name that is not plain, a digest that does not match. Each problem names the
    file and the field (``cells.linux-x86_64-cpu-py3.12.layers[1].lock``); nothing was acted on.
    Exit code 2 (docs/untrusted-input.md)."""


class InstallFailed(LockgenError):
    """``lockgen install`` started and a required layer (main, no-deps, unhashed) failed, a
    rollback failed, or the installed versions do not match the lock. Exit code 1."""

    exit_code = 1
