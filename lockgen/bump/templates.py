"""``lockgen bump`` for pins written in templates: a plain ``NAME==VERSION`` line.

Projects pin many packages right in their requirements template (the repo's own
``templates/requirements.in.j2`` has ``matplotlib==3.10.1``). When a name is pinned nowhere in the
config, :func:`find` looks for template lines that are exactly one requirement of that name with
one ``==`` specifier (parsed with ``packaging``; lines holding Jinja markup are left alone, since
their rendered text is not on the line) and :func:`apply` rewrites only the version text, every
other byte of the file kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from lockgen.bump.toml import write_atomic
from lockgen.runtime.writing import writing

__all__ = ["TemplatePin", "apply", "find"]

_JINJA = ("{{", "{%", "{#")


@dataclass(frozen=True, kw_only=True)
class TemplatePin:
    """A template line pinning ``name`` to ``version`` exactly: ``path`` (relative to the project
    root, as reported), 1-based ``line``."""

    path: str
    line: int
    name: NormalizedName
    version: Version

    def describe(self, new: Version | None = None) -> str:
        moved = f"{self.version} -> {new}" if new is not None and new != self.version else f"already {self.version}"
        return f"{self.path}:{self.line}: {self.name} {moved}"


def find(root: Path, templates: str, names: Iterable[NormalizedName]) -> dict[NormalizedName, list[TemplatePin]]:
    """Template lines under ``root/templates`` pinning one of ``names`` exactly, by name (files
    in sorted order, lines in order). Unreadable or non-UTF-8 files are skipped."""
    wanted = set(names)
    found: dict[NormalizedName, list[TemplatePin]] = {}
    folder = root / templates
    for path in sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(lines, 1):
            pin = _pin(line)
            if pin is not None and pin[0] in wanted:
                rel = path.relative_to(root).as_posix()
                found.setdefault(pin[0], []).append(TemplatePin(path=rel, line=number, name=pin[0], version=pin[1]))
    return found


def _pin(line: str) -> tuple[NormalizedName, Version] | None:
    text = line.split(" #", 1)[0].strip()
    if not text or text.startswith(("#", "-")) or any(mark in text for mark in _JINJA):
        return None
    try:
        req = Requirement(text)
        (spec,) = req.specifier
        if spec.operator != "==" or "*" in spec.version or req.url:
            return None
        return canonicalize_name(req.name), Version(spec.version)
    except (InvalidRequirement, InvalidVersion, ValueError):
        return None


def apply(root: Path, pins: Iterable[TemplatePin], wanted: Mapping[NormalizedName, Version]) -> list[TemplatePin]:
    """Rewrite each pin's version to ``wanted[name]`` in its file (only the version text moves;
    line endings and every other byte are kept), atomically per file. Returns the pins that moved.
    Raises :class:`~lockgen.runtime.errors.WriteError` naming a file that cannot be written."""
    by_file: dict[str, list[TemplatePin]] = {}
    for pin in pins:
        if wanted[pin.name] != pin.version:
            by_file.setdefault(pin.path, []).append(pin)
    for rel, moving in by_file.items():
        path = root / rel
        lines = path.read_bytes().decode("utf-8").splitlines(keepends=True)
        for pin in moving:
            lines[pin.line - 1] = _with_version(lines[pin.line - 1], wanted[pin.name])
        with writing(rel):
            write_atomic(path, "".join(lines))
    return [pin for moving in by_file.values() for pin in moving]


def _with_version(line: str, version: Version) -> str:
    """``line`` with the version after its ``==`` replaced (spacing and comment kept)."""
    return re.sub(r"(==\s*)([^\s;#\\]+)", lambda m: m.group(1) + str(version), line, count=1)
