"""Options in rendered requirements files: which ones uv may see (issue "Trust", item 6). Pure.

A rendered template goes to uv as a requirements, constraints or overrides file, and uv honours
index and include options in each of them. An ``--extra-index-url`` line there bypasses sources
and verify (one cu130 lock pinned a stale ``numpy==1.26.0`` from a backend index and exited 0); a
``-r`` line names a file relative to ``.lockgen/<cell>/``. So :func:`refused` reports every option
line but a few, in every spelling pip or uv accepts:

* lines as uv reads them: a comment starts at a ``#`` at the start of a line or after whitespace
  and ends at the end of the line; a line ending in ``\\`` continues on the next one; leading
  whitespace does not matter;
* options as pip's parser reads them: ``--name value``, ``--name=value``, any unambiguous prefix
  of a long name (``--extra-index``), short ones with their value attached (``-rfile``,
  ``-ihttps://…``, uv's ``-r=file``), and options after a requirement on the same line.

Allowed, because uv honours them and they change nothing outside the rendered file:
``-e/--editable`` (a path is relative to the project root, where uv runs), ``--no-binary`` and
``--only-binary``. Refused, with the fix each :class:`Refused` names:

* ``-r/--requirement``, ``-c/--constraint``: use ``{% include "file" %}``;
* ``-i/--index-url``, ``--extra-index-url``, ``--no-index``, ``-f/--find-links``,
  ``--trusted-host``: declare a source in ``[tool.lockgen.sources]`` and ``use`` it (or set
  ``index-url``);
* ``--hash``: lockgen hashes every artifact of the resolution (C04); a hash in a template covers
  one file of one platform;
* ``--pre``, ``--prefer-binary``, ``--require-hashes``, ``--use-feature``: uv ignores them in a
  requirements file, so they would look effective and do nothing;
* ``-C/--config-settings``, ``--global-option`` and options neither pip nor uv knows: uv rejects them.

A requirement that is not PEP 508 (``beta >= >= 1``) is refused here too, naming its template
line, rather than by uv at resolve time naming a work file in ``.lockgen/<cell>/``. Paths, URLs
and archive file names (anything with a ``/``, ``\\`` or ``://``, or ending like an archive)
are left to uv, which reads more forms than PEP 508.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["ALLOWED", "REQUIREMENT_FIX", "Refused", "logical_lines", "malformed", "option", "refused"]

_SOURCES = "declare a source in [tool.lockgen.sources] and `use` it"
#: pip's requirements-file options (long name -> why refused and the fix; None: allowed).
_LONG: dict[str, tuple[str, str] | None] = {
    "--requirement": ("includes a file", 'use {% include "file" %}: rendered inputs live in .lockgen/<cell>/'),
    "--constraint": ("includes a file", 'use {% include "file" %}, or the constraints setting'),
    "--index-url": ("sets an index, bypassing sources and verify", f"set index-url in the config, or {_SOURCES}"),
    "--extra-index-url": ("adds an index that may serve any package, bypassing sources and verify", _SOURCES),
    "--no-index": ("turns the index off, bypassing sources and verify", f"set index-url in the config, or {_SOURCES}"),
    "--find-links": ("adds find-links, bypassing sources and verify", _SOURCES),
    "--trusted-host": ("trusts a host outside sources and verify", _SOURCES),
    "--hash": (
        "pins an artifact hash",
        "remove it: lockgen hashes every artifact of the resolution (C04); pin the version instead",
    ),
    "--pre": (
        "is ignored by uv in requirements files",
        'name the pre-release in the requirement (torch==2.14.0.dev20260727), or set prerelease = "allow" for the cell (prerelease-package for one package)',
    ),
    "--prefer-binary": ("is ignored by uv in requirements files", "remove it"),
    "--require-hashes": ("is ignored by uv in requirements files", "remove it: every lock has hashes"),
    "--use-feature": ("is ignored by uv in requirements files", "remove it"),
    "--config-settings": ("is not accepted by uv in requirements files", "remove it"),
    "--global-option": ("is not accepted by uv in requirements files", "remove it"),
    "--editable": None,
    "--no-binary": None,
    "--only-binary": None,
}
_SHORT = {
    "-r": "--requirement",
    "-c": "--constraint",
    "-i": "--index-url",
    "-f": "--find-links",
    "-e": "--editable",
    "-C": "--config-settings",
}
#: Options that take no value (every other one takes the next token when none is attached).
_FLAGS = {"--no-index", "--pre", "--prefer-binary", "--require-hashes"}
#: The options a template may use.
ALLOWED = tuple(name for name, why in _LONG.items() if why is None)
_COMMENT = re.compile(r"(^|\s)#.*$")


@dataclass(frozen=True, kw_only=True)
class Refused:
    """An option uv must not see: rendered ``line`` (1-based) holding it, the line's ``text``, the
    ``option`` as written, its long ``name``, what it does (``why``) and the ``fix``."""

    line: int
    text: str
    option: str
    name: str
    why: str
    fix: str

    @property
    def detail(self) -> str:
        """What is wrong and the fix: ``-r (--requirement) includes a file; use …``."""
        spelled = self.option if self.option == self.name else f"{self.option} ({self.name})"
        return (f"{spelled} " if spelled else "") + f"{self.why}; {self.fix}"

    def __str__(self) -> str:
        return f"rendered line {self.line} {self.text.strip()!r}: {self.detail}"


def refused(text: str) -> list[Refused]:
    """Every refused option in the rendered requirements file ``text``, in line order."""
    lines = text.splitlines()
    found = []
    for tokens in _logical_lines(lines):
        found += _malformed(tokens, lines)
        skip_value = False
        for number, token in tokens:
            if skip_value:
                skip_value = False
                continue
            if not token.startswith("-") or token == "-":
                continue
            written, name, attached = _option(token)
            if name in _LONG and _LONG[name] is None:
                skip_value = not attached and name not in _FLAGS
                continue
            why, fix = _LONG.get(name) or ("is not a requirements-file option pip or uv knows", "remove it")
            if name.startswith("--") and name not in _LONG and "," in name:
                why, fix = f"is ambiguous ({name})", "write the option in full"
            found.append(Refused(line=number, text=lines[number - 1], option=written, name=name, why=why, fix=fix))
            skip_value = not attached and name not in _FLAGS
    return found


_ARCHIVES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar")


#: How to write a requirement, for a line :func:`malformed` refuses.
REQUIREMENT_FIX = "write name[extras] specifier ; marker, such as beta>=1.0 ; python_version < '3.13'"


def malformed(requirement: str) -> str | None:
    """Why ``requirement`` (the words of a line before its options) is no requirement, when it
    is meant as PEP 508 (it starts with a name) and ``packaging`` cannot parse it
    (``not a requirement (Expected end or semicolon …)``); None when it parses, or when it is a
    path, URL or archive file name, which uv reads in more forms than PEP 508. ``lockgen init``
    reads requirement files by the same rule, so a line it copies renders."""
    from packaging.requirements import InvalidRequirement, Requirement

    if not requirement or any(c in requirement for c in "/\\") or requirement.lower().endswith(_ARCHIVES):
        return None
    if not requirement[0].isalnum():
        return None
    try:
        Requirement(requirement)
    except InvalidRequirement as exc:
        return f"not a requirement ({str(exc).splitlines()[0]})"
    return None


def _malformed(tokens: list[tuple[int, str]], lines: list[str]) -> list[Refused]:
    """The requirement a logical line starts with, when :func:`malformed` refuses it."""
    words = []
    for _, token in tokens:
        if token.startswith("-"):
            break
        words.append(token)
    why = malformed(" ".join(words))
    if why is None:
        return []
    number = tokens[0][0]
    return [Refused(line=number, text=lines[number - 1], option="", name="", why=why, fix=REQUIREMENT_FIX)]


def logical_lines(text: str) -> Iterator[list[tuple[int, str]]]:
    """The tokens of each logical line of a requirements file, as pip and uv read them: comments
    removed, ``\\``-continued lines joined, each token with the (1-based) line it starts on
    (``lockgen init`` reads a project's requirement files with this)."""
    return _logical_lines(text.splitlines())


def option(token: str) -> tuple[str, str, bool]:
    """``(option as written, its long name, value attached)`` of an option token (``-rfile``:
    ``("-r", "--requirement", True)``; an unambiguous prefix names its option)."""
    return _option(token)


def _logical_lines(lines: list[str]) -> Iterator[list[tuple[int, str]]]:
    """Tokens of each logical line with the (1-based) physical line each starts on: comments
    removed per physical line, ``\\``-continued lines joined (a token may span the join)."""
    tokens: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None  # a token cut by a continuation
    for number, raw in enumerate(lines, 1):
        line = _COMMENT.sub("", raw)
        stripped = line.rstrip()
        continued = stripped.endswith("\\")
        body = stripped[:-1] if continued else stripped
        parts = [(number, m.group()) for m in re.finditer(r"\S+", body)]
        if pending is not None:
            if parts and body[:1] not in (" ", "\t"):
                parts[0] = (pending[0], pending[1] + parts[0][1])
            else:
                parts.insert(0, pending)
            pending = None
        if continued and parts and not body[-1:].isspace():
            pending = parts.pop()
        tokens += parts
        if not continued:
            yield tokens
            tokens = []
    if pending is not None:
        tokens.append(pending)
    if tokens:
        yield tokens


def _option(token: str) -> tuple[str, str, bool]:
    """``(option as written, long name, value attached)`` of an option token, resolving pip's
    spellings: short options with attached values, ``--name=value`` and unambiguous long prefixes
    (an ambiguous prefix gets the candidates, comma-separated, as its name)."""
    if not token.startswith("--"):
        return token[:2], _SHORT.get(token[:2], token[:2]), len(token) > 2
    written, eq, _ = token.partition("=")
    name = written
    if name not in _LONG:
        matches = [long for long in _LONG if long.startswith(name)]
        name = ", ".join(matches) if matches else name
    return written, name, bool(eq)
