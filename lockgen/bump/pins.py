"""``lockgen bump``'s command line and the config side of its policy: which config pins move.

Pins live in ``[tool.lockgen.pins]`` of ``pyproject.toml`` (or ``tool.lockgen.pins = {…}``,
``pins.torch = …`` under ``[tool.lockgen]``, …) or in ``[pins]`` of a standalone
``lockgen.toml``; a rule (``[[tool.lockgen.rules]]`` / ``[[rules]]``) may set its own ``pins``.
Names match canonically (``Flash_Attn`` in the file is ``flash-attn``); the file keeps its own
spelling of every key.

Which config pins move (``NAME==VERSION``):

* the top-level pin of NAME, and every rule pin of NAME at the **same** version as the top-level
  one (it was following the default);
* a rule pin of NAME at a **different** version is a deliberate exception (the ai-toolkit
  example's Spark rule with torch dev builds): it is kept, and reported as kept;
* when only rules pin NAME, all of them move if they agree on one version; when they disagree
  there is no default to tell the exceptions from, and bump refuses (edit them by hand);
* a pin already at VERSION (``2.14`` equals ``2.14.0``) is reported, not rewritten;
* a pin written as a specifier (``"==2.8.0.*"``) rather than a bare version is refused for now.

Template and project lines that pin NAME follow the same rule, judged by their markers against the
cells (:mod:`lockgen.bump.lines`); :mod:`lockgen.bump.run` puts it together: every binding pin
found, every edit planned before any is written, re-locked in the work folder, written all at
once or not at all.

The edit goes through tomlkit, which replaces only the string (its quote style, the key's own
spelling, spacing, comments, order and line endings stay); a check then compares the old and new
text line by line and refuses if anything but the pin values changed (:mod:`lockgen.bump.toml`).
:func:`parse_wanted` and :func:`plan_bumps` are pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import tomlkit
from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version
from tomlkit.exceptions import TOMLKitError

from lockgen.bump.toml import Layout, Site, Where, edit_strings, find_sites, key_path
from lockgen.runtime.errors import ConfigError, UsageError

__all__ = ["Edit", "Kept", "Plan", "Site", "Wanted", "parse_requirements", "parse_wanted", "pins_table", "plan_bumps"]

_FORM = "write each pin as NAME==VERSION, e.g. torch==2.14.0"


@dataclass(frozen=True, kw_only=True)
class Edit:
    """A config pin that moves: ``key_path`` (``where`` in the document) from ``old`` to ``new``
    (both as written in the file)."""

    name: NormalizedName
    key_path: str
    old: str
    new: str
    where: Where = ()


@dataclass(frozen=True, kw_only=True)
class Kept:
    """A rule's pin of a bumped package that stays as it is, and why (``reason``)."""

    name: NormalizedName
    key_path: str
    rule_path: str  # "tool.lockgen.rules[7]"
    version: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What :func:`plan_bumps` decided. ``text`` is the new file text (the old one when
    ``edits`` is empty); ``current`` lists the pins already at their wanted version."""

    edits: tuple[Edit, ...]
    kept: tuple[Kept, ...]
    current: tuple[Site, ...]
    text: str
    configured: frozenset[NormalizedName] = frozenset()  # every name the config pins somewhere


@dataclass(frozen=True, kw_only=True)
class Wanted:
    """One ``NAME==VERSION[; MARKER]`` of the command line: the version, and the marker that says
    which cells it is meant for when several lines pin NAME to different versions (None: let
    bump tell them apart)."""

    version: Version
    marker: Marker | None = None


def parse_requirements(requirements: Sequence[str]) -> dict[NormalizedName, Version]:
    """``["torch==2.14.0", …]`` -> ``{"torch": Version("2.14.0"), …}`` (see :func:`parse_wanted`)."""
    return {name: wanted.version for name, wanted in parse_wanted(requirements).items()}


def parse_wanted(requirements: Sequence[str]) -> dict[NormalizedName, Wanted]:
    """``["torch==2.14.0", 'numpy==2.2.0; python_version >= "3.12"']`` -> ``{name: Wanted}``.

    Each must be a bare name with exactly one ``==`` and a version without wildcard or local label
    (lockgen adds the backend's label itself; a template line keeps its own), and may carry a
    PEP 508 marker naming the cells it is for. Raises one :class:`UsageError` listing every bad one.
    """
    problems: list[str] = []
    wanted: dict[NormalizedName, Wanted] = {}
    if not requirements:
        raise UsageError(f"name the pins to move; {_FORM}")
    for text in requirements:
        parsed = _parse_one(text)
        if isinstance(parsed, str):
            problems.append(f"{text!r}: {parsed}")
            continue
        name, one = parsed
        if name in wanted and wanted[name] != one:
            problems.append(f"{text!r}: {name} is also asked for as {wanted[name].version}; give one version")
            continue
        wanted[name] = one
    if problems:
        raise UsageError(_lines("cannot bump", problems) + f"\n{_FORM}")
    return wanted


def _parse_one(text: str) -> tuple[NormalizedName, Wanted] | str:
    """``NAME==VERSION[; MARKER]`` -> (name, wanted), or what is wrong with it."""
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return "not a requirement"
    specs = list(req.specifier)
    if req.url or req.extras or len(specs) != 1 or specs[0].operator != "==":
        return "not of the form NAME==VERSION"
    try:
        version = Version(specs[0].version)
    except InvalidVersion:
        return f"{specs[0].version!r} is not a single version (no wildcards)"
    if version.local is not None:
        return f"write the version without its local label (+{version.local}); lockgen adds the backend's"
    return canonicalize_name(req.name), Wanted(version=version, marker=req.marker)


def plan_bumps(path: Path, text: str, wanted: Mapping[NormalizedName, Version]) -> Plan:
    """Decide and make the edits ``wanted`` asks for among the config's pins in ``text``, the
    contents of ``path`` (whose name says the layout: ``pyproject.toml`` or a standalone
    ``lockgen.toml``). Pure. A name the config does not pin is left to the template and project
    lines (:mod:`lockgen.bump.lines`); ``Plan.configured`` lists the names it pins.

    Raises :class:`UsageError` for a name pinned only in rules that disagree, and
    :class:`ConfigError` for a pin of a wanted name that is not a bare version, or when the
    edit would change more than the pin values.
    """
    try:
        doc = tomlkit.parse(text.removeprefix("\ufeff"))
    except (TOMLKitError, ValueError) as exc:
        raise ConfigError(path.name, [f"cannot read TOML: {exc}"]) from exc
    layout = Layout.of(path)
    sites = find_sites(doc, layout, path.name)
    edits, kept, current = _choose(path, layout, sites, wanted)
    done = [Edit(name=s.name, key_path=s.key_path, old=s.value, new=str(v), where=s.where) for s, v in edits]
    new_text = edit_strings(path, text, [(e.where, e.new) for e in done]) if done else text
    return Plan(
        edits=tuple(done),
        kept=tuple(kept),
        current=tuple(current),
        text=new_text,
        configured=frozenset(s.name for s in sites),
    )


def pins_table(path: Path) -> str:
    """Where the config file ``path`` keeps its pins, for messages: ``[tool.lockgen.pins]``."""
    return Layout.of(path).pins_table


def _choose(
    path: Path, layout: Layout, sites: Sequence[Site], wanted: Mapping[NormalizedName, Version]
) -> tuple[list[tuple[Site, Version]], list[Kept], list[Site]]:
    """The pins that move (with their new version), the rule pins kept, and the pins already at
    their wanted version; raises as :func:`plan_bumps` says."""
    edits: list[tuple[Site, Version]] = []
    kept: list[Kept] = []
    current: list[Site] = []
    config_problems: list[str] = []
    usage_problems: list[str] = []
    for name, version in wanted.items():
        mine = [(s, _pin_version(s, config_problems)) for s in sites if s.name == name]
        pinned = [(s, v) for s, v in mine if v is not None]
        if not mine or len(pinned) < len(mine):
            continue  # not pinned here, or a pin that is not a bare version: reported above
        moving, keep, problem = _decide(name, version, pinned, layout)
        if problem:
            usage_problems.append(problem)
            continue
        kept += keep
        current += [s for s, v in moving if v == version]
        edits += [(s, version) for s, v in moving if v != version]
    if config_problems:
        raise ConfigError(path.name, config_problems)
    if usage_problems:
        raise UsageError(_lines(f"{path.name}: cannot bump", usage_problems))
    return edits, kept, current


def _decide(
    name: NormalizedName, version: Version, pins: Sequence[tuple[Site, Version]], layout: Layout
) -> tuple[list[tuple[Site, Version]], list[Kept], str | None]:
    """The module's policy for one package: which of its pins move, which are kept, or why
    neither can be decided."""
    top = next(((s, v) for s, v in pins if s.rule is None), None)
    rules = [(s, v) for s, v in pins if s.rule is not None]
    if top is None:
        if len({v for _, v in rules}) == 1:
            return rules, [], None
        listed = ", ".join(f"{s.key_path} = {s.value!r}" for s, _ in rules)
        return [], [], (
            f"{name} is pinned only in rules, to different versions ({listed}); bump cannot tell which "
            f"to move: edit them by hand, or add the default to {layout.pins_table}"
        )  # fmt: skip
    default = top[1]
    kept = [
        Kept(name=name, key_path=s.key_path, rule_path=key_path(s.where[:-2]), version=s.value,
             reason=f"already {version}" if v == version else f"differs from the top-level {top[0].value}")
        for s, v in rules if v != default
    ]  # fmt: skip
    return [top, *((s, v) for s, v in rules if v == default)], kept, None


def _pin_version(site: Site, problems: list[str]) -> Version | None:
    """The pin's version, or None (with a problem) when it is not written as a bare version."""
    try:
        return Version(site.value)
    except InvalidVersion:
        pass
    try:
        SpecifierSet(site.value)
    except InvalidSpecifier:
        problems.append(f"{site.key_path}: {site.value!r} is not a valid version (PEP 440)")
    else:
        problems.append(
            f"{site.key_path}: {site.value!r} is a version specifier; lockgen bump only moves pins written "
            'as a bare version ("2.13.0") for now: edit it by hand'
        )
    return None


def _lines(head: str, problems: Sequence[str]) -> str:
    if len(problems) == 1:
        return f"{head}: {problems[0]}"
    return "\n".join([f"{head}:", *(f"  - {p}" for p in problems)])
