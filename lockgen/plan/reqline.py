"""One requirement on one line of a requirements-style text, read and edited through ``packaging``.

Templates, ``[project]`` dependency strings and PEP 735 dependency groups hold requirement lines
that lockgen reads (which packages a cell asks for, which line pins what) and ``lockgen bump``
edits. Every such reading and edit goes through here, so all of them agree on what a line says:

* :func:`strip_comment` cuts a comment as pip does: a ``#`` at the start or after whitespace
  (``pkg @ https://host/pkg.whl#sha256=…`` keeps its fragment), and a trailing ``\\`` line
  continuation;
* :func:`parse` reads what is left with :class:`packaging.requirements.Requirement`; options
  (``-e``, ``-c``, ``--index-url``), blank and comment-only lines are no requirement;
* :func:`pin_of` says whether a requirement pins a version bump can move: one specifier clause with
  ``==``, ``===``, ``~=`` or ``>=`` and a version without a wildcard;
* :func:`with_version` writes a new version into a line and keeps every other byte: the operator,
  the local version label (``torch==2.13.0+cpu`` stays a ``+cpu`` build), extras, the marker, the
  URL, spacing and the comment. It re-reads the result with ``packaging`` and refuses
  (:class:`EditRefused`) unless only the version changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import Specifier, SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

__all__ = [
    "MOVABLE", "EditRefused", "Line", "parse", "pin_of", "pinned_version", "requirement", "strip_comment", "with_version",
]  # fmt: skip

#: Operators of a single-clause specifier that bump moves (the version after it is the pin).
MOVABLE = ("==", "===", "~=", ">=")
#: pip's comment rule: ``#`` at the start of the line or after whitespace.
_COMMENT = re.compile(r"(^|\s+)#.*$")


class EditRefused(ValueError):
    """A line cannot take a new version without changing more than the version (the message says why)."""


@dataclass(frozen=True)
class Line:
    """A requirement read from ``text`` (one line, no line ending): ``start``/``end`` delimit
    the requirement in it (what is left without the comment, the continuation and surrounding
    spaces); ``requirement`` is packaging's reading of that part."""

    text: str
    start: int
    end: int
    requirement: Requirement

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.requirement.name)

    @property
    def body(self) -> str:
        """The requirement as written (``numpy==1.26.4; python_version < "3.12"``)."""
        return self.text[self.start : self.end]


def strip_comment(text: str) -> str:
    """``text`` without its comment (pip's rule) and a trailing ``\\`` continuation, stripped."""
    return _COMMENT.sub("", text).rstrip().removesuffix("\\").strip()


def parse(text: str) -> Line | None:
    """The requirement on the line ``text``, or None for an option, a comment, a blank line or
    text that is not a PEP 508 requirement."""
    body = strip_comment(text)
    if not body or body.startswith("-"):
        return None
    try:
        requirement = Requirement(body)
    except InvalidRequirement:
        return None
    start = text.index(body)
    return Line(text=text, start=start, end=start + len(body), requirement=requirement)


def requirement(text: str) -> Requirement | None:
    """:func:`parse`'s requirement alone."""
    line = parse(text)
    return line.requirement if line is not None else None


def pin_of(req: Requirement) -> Specifier | None:
    """The one specifier clause of ``req`` that bump can move (:data:`MOVABLE`, no wildcard, no
    URL), or None: no version (``numpy``), a range (``>=1.26,<2``), an upper bound, a URL."""
    specs = list(req.specifier)
    if req.url or len(specs) != 1:
        return None
    (spec,) = specs
    if spec.operator not in MOVABLE or spec.version.endswith(".*"):
        return None
    if spec.operator != "===":
        try:
            Version(spec.version)
        except InvalidVersion:
            return None
    return spec


def pinned_version(req: Requirement) -> Version | None:
    """The version :func:`pin_of` finds, public part only (``2.13.0`` of ``==2.13.0+cpu``); None
    when there is none (or an ``===`` version that is no PEP 440 version)."""
    spec = pin_of(req)
    if spec is None:
        return None
    try:
        return Version(Version(spec.version).public)
    except InvalidVersion:
        return None


def with_version(line: Line, version: Version) -> str:
    """``line.text`` with its pin moved to ``version``: the operator, a local label on ``==`` /
    ``===`` (``+cpu``), extras, marker, spacing and comment kept. ``version`` must carry no
    local label (lockgen adds the backend's; a label on the line is the line's own).

    Raises :class:`EditRefused` when the line has no movable pin, or when the edited line would
    read differently from the old one in anything but the version."""
    spec = pin_of(line.requirement)
    if spec is None:
        raise EditRefused(f"{line.body!r} pins no single version (==, ===, ~=, >=) bump can move")
    old = spec.version
    label = old.partition("+")[2] if spec.operator in ("==", "===") else ""
    new = str(version) + (f"+{label}" if label else "")
    body = line.body
    marker_at = body.find(";")
    head = body if marker_at < 0 else body[:marker_at]
    found = list(re.finditer(re.escape(spec.operator) + r"(\s*)" + re.escape(old) + r"(?![\w.+!-])", head))
    if len(found) != 1:
        raise EditRefused(f"{body!r}: cannot tell where its version is written")
    match = found[0]
    at = line.start + match.start()
    edited = line.text[:at] + f"{spec.operator}{match.group(1)}{new}" + line.text[at + len(match.group(0)) :]
    check = parse(edited)
    if check is None or not _same_but_version(line.requirement, check.requirement, spec.operator, new):
        raise EditRefused(f"{body!r}: moving its version to {new} would change more than the version")
    return edited


def _same_but_version(old: Requirement, new: Requirement, operator: str, version: str) -> bool:
    """Whether ``new`` is ``old`` with the specifier ``<operator><version>`` instead of its own."""
    return (
        canonicalize_name(old.name) == canonicalize_name(new.name)
        and old.extras == new.extras
        and old.url == new.url
        and str(old.marker) == str(new.marker)
        and new.specifier == SpecifierSet(f"{operator}{version}")
    )
