"""The template side of ``lockgen bump``: requirement lines in templates that name a package, and their edits.

Projects pin many packages right in their requirements templates (the repo's own
``templates/requirements.in.j2`` has ``matplotlib==3.10.1``), behind a marker for some cells
(``numpy==1.26.4; python_version < "3.12"``), with a local label (``torch==2.13.0+cpu``), or
inside a Jinja test (``{% if os == "linux" %}alpha==1.0{% endif %}``). :func:`find` reads every
file of the templates folder line by line; the text between Jinja markup on a line is read with
``packaging`` (:mod:`lockgen.plan.reqline`), so a line whose requirement is rendered from a variable
(``torch=={{ pins.torch }}``: the config pin is the binding one) names no version here.
:func:`edited` writes new versions into a template's text, every other byte kept (line endings
too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.plan import reqline
from lockgen.runtime import bounded
from lockgen.runtime.errors import InputError

__all__ = ["TemplateLine", "edited", "find"]

_MARKUP = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}")
_OPEN = ("{{", "{%", "{#")


@dataclass(frozen=True, kw_only=True)
class TemplateLine:
    """A requirement naming ``name`` on line ``line`` (1-based) of ``path`` (project-relative):
    ``offset`` is where the requirement's text (``line_text[offset:]``'s first ``len(segment)``
    characters: the text between Jinja markup) starts on the line."""

    path: str
    line: int
    offset: int
    segment: str
    requirement: reqline.Line

    @property
    def name(self) -> NormalizedName:
        return self.requirement.name

    @property
    def place(self) -> str:
        return f"{self.path}:{self.line}"


def find(root: Path, templates: str, names: Iterable[NormalizedName]) -> list[TemplateLine]:
    """Every requirement line under ``root/templates`` naming one of ``names``, files in sorted
    order, lines in order. Unreadable or non-UTF-8 files are skipped (rendering reports them)."""
    wanted = set(names)
    found: list[TemplateLine] = []
    folder = root / templates
    for path in sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []:
        try:
            text = bounded.read_in(folder, path.relative_to(folder).as_posix()).decode("utf-8").removeprefix("\ufeff")
        except (OSError, UnicodeDecodeError, InputError):
            continue
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(text.splitlines(), 1):
            for offset, segment in _segments(line):
                parsed = reqline.parse(segment)
                if parsed is not None and parsed.name in wanted:
                    found.append(
                        TemplateLine(path=rel, line=number, offset=offset, segment=segment, requirement=parsed)
                    )
    return found


def _segments(line: str) -> list[tuple[int, str]]:
    """``(offset, text)`` of the parts of ``line`` between Jinja markup; none when markup is left
    open on the line (it spans lines: the text is not what renders)."""
    parts: list[tuple[int, str]] = []
    at = 0
    for match in _MARKUP.finditer(line):
        parts.append((at, line[at : match.start()]))
        at = match.end()
    parts.append((at, line[at:]))
    if any(mark in text for _, text in parts for mark in _OPEN):
        return []
    return [(offset, text) for offset, text in parts if text.strip()]


def edited(text: str, moves: Sequence[tuple[TemplateLine, Version]]) -> str:
    """``text`` (a template file's contents) with each line of ``moves`` pinned to its version
    (:func:`lockgen.plan.reqline.with_version`: operator, label, marker, extras, comment kept); line
    endings and every other line as they were. Raises :class:`~lockgen.plan.reqline.EditRefused`."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    lines = text[len(bom) :].splitlines(keepends=True)
    by_line: dict[int, list[tuple[TemplateLine, Version]]] = {}
    for move in moves:
        by_line.setdefault(move[0].line, []).append(move)
    for number, here in by_line.items():
        raw = lines[number - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body) :]
        for site, version in sorted(here, key=lambda m: -m[0].offset):  # right to left: offsets stay valid
            new_segment = reqline.with_version(site.requirement, version)
            end = site.offset + len(site.segment)
            if body[site.offset : end] != site.segment:
                raise reqline.EditRefused(f"{site.place}: the line changed since it was read")
            body = body[: site.offset] + new_segment + body[end:]
        lines[number - 1] = body + ending
    return bom + "".join(lines)


def texts(root: Path, paths: Iterable[str]) -> Mapping[str, str]:
    """``{path: text}`` of the project-relative template ``paths`` (UTF-8)."""
    return {path: bounded.read_in(root, path).decode("utf-8") for path in paths}
