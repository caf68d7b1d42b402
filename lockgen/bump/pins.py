"""``lockgen bump NAME==VERSION…``: move pins in the config file, keeping every other byte.

Pins live in ``[tool.lockgen.pins]`` of ``pyproject.toml`` (or ``tool.lockgen.pins = {…}``,
``pins.torch = …`` under ``[tool.lockgen]``, …) or in ``[pins]`` of a standalone
``lockgen.toml``; a rule (``[[tool.lockgen.rules]]`` / ``[[rules]]``) may set its own ``pins``.
Names match canonically (``Flash_Attn`` in the file is ``flash-attn``); the file keeps its own
spelling of every key.

Which pins move (``NAME==VERSION``):

* the top-level pin of NAME, and every rule pin of NAME at the **same** version as the top-level
  one (it was following the default);
* a rule pin of NAME at a **different** version is a deliberate exception (the ai-toolkit
  example's Spark rule with torch dev builds): it is kept, and reported as kept;
* when only rules pin NAME, all of them move if they agree on one version; when they disagree
  there is no default to tell the exceptions from, and bump refuses (edit them by hand);
* a pin already at VERSION (``2.14`` equals ``2.14.0``) is reported, not rewritten;
* a pin written as a specifier (``"==2.8.0.*"``) rather than a bare version is refused for now;
* a NAME pinned nowhere is an error naming the file, where pins live, and the pinned names.

The edit goes through tomlkit, which replaces only the string (its quote style, the key's own
spelling, spacing, comments, order and line endings stay); a check then compares the old and new
text line by line and refuses to write if anything but the pin values changed. The file is
written once, atomically, and only when a pin moved.

:func:`bump` is the whole command minus re-locking; :func:`parse_requirements` and
:func:`plan_bumps` are its pure halves. Finding the pins in the document, checking the edit and
writing the file are in :mod:`lockgen.bump.toml`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import String

from lockgen.bump import templates as bump_templates
from lockgen.bump.templates import TemplatePin
from lockgen.bump.toml import Layout, Site, Where, check_only_pins_changed, find_sites, key_path, loads, write_atomic
from lockgen.runtime.errors import ConfigError, UsageError

__all__ = ["BumpResult", "Edit", "Kept", "Plan", "Site", "bump", "parse_requirements", "plan_bumps"]

_FORM = "write each pin as NAME==VERSION, e.g. torch==2.14.0"


@dataclass(frozen=True, kw_only=True)
class Edit:
    """A pin that moves: ``key_path`` from ``old`` to ``new`` (both as written in the file)."""

    name: NormalizedName
    key_path: str
    old: str
    new: str


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
class BumpResult:
    """What :func:`bump` changed in ``path``; ``written`` is False when no pin moved."""

    path: Path
    edits: tuple[Edit, ...]
    kept: tuple[Kept, ...]
    current: tuple[Site, ...]
    written: bool
    template_pins: tuple[tuple[TemplatePin, Version], ...] = ()  # template lines looked at, and the version asked

    @property
    def names(self) -> frozenset[NormalizedName]:
        """The packages whose pins moved."""
        return frozenset(edit.name for edit in self.edits) | {p.name for p, v in self.template_pins if p.version != v}

    @property
    def changed(self) -> bool:
        """Whether any file was written (the config or a template)."""
        return self.written or any(p.version != v for p, v in self.template_pins)

    @property
    def files(self) -> list[Path]:
        """The files written: the config (when a pin moved there), then each template with a
        moved pin, in order, each once."""
        moved = [self.path.parent / p.path for p, v in self.template_pins if p.version != v]
        return list(dict.fromkeys(([self.path] if self.written else []) + moved))

    def kept_after_failure(self, cwd: Path) -> str:
        """What to tell the user when re-locking after the edit failed: the edits stay, in which
        files (relative to ``cwd`` when under it), and how to undo them with git."""
        names = [_shown(path, cwd) for path in self.files]
        return (
            f"the pin edits are kept in {', '.join(names)} although re-locking did not succeed; fix what is "
            f"reported above and run `lockgen all`, or undo the edits: git checkout -- {shlex.join(names)}"
        )

    def lines(self) -> list[str]:
        """A short summary for the terminal, one line per pin looked at."""
        file = self.path.name
        lines = [f"{file}: {e.key_path}: {e.old} -> {e.new}" for e in self.edits]
        lines += [f"{file}: {s.key_path}: already {s.value}" for s in self.current]
        lines += [f"{file}: {k.name} also pinned in {k.rule_path} to {k.version}: kept ({k.reason})" for k in self.kept]
        lines += [pin.describe(version) for pin, version in self.template_pins]
        if not self.changed:
            lines.append(f"{file}: no pin moved; nothing written")
        return lines


def bump(config_path: Path, requirements: Sequence[str], templates: str | None = None) -> BumpResult:
    """Move the pins ``requirements`` (``NAME==VERSION`` strings) name in ``config_path`` (a
    ``pyproject.toml`` or ``lockgen.toml``) and write the file if one moved. A name the config
    pins nowhere is looked for in the ``templates`` folder (relative to the config's folder), as
    a plain ``NAME==VERSION`` line (:mod:`lockgen.bump.templates`), and moved there.

    Raises :class:`UsageError` for a malformed requirement, a name pinned nowhere or rule pins
    that disagree; :class:`ConfigError` when the file cannot be read or edited in place.
    """
    wanted = parse_requirements(requirements)
    try:
        text = config_path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(config_path.name, [f"cannot read: {exc}"]) from exc
    configured = plan_bumps(config_path, text, {}).configured
    elsewhere = [name for name in wanted if name not in configured]
    found = bump_templates.find(config_path.parent, templates, elsewhere) if templates and elsewhere else {}
    plan = plan_bumps(config_path, text, {n: v for n, v in wanted.items() if n not in found}, templates=templates)
    written = bool(plan.edits) and write_atomic(config_path, plan.text)
    pins = [pin for name in found for pin in found[name]]
    bump_templates.apply(config_path.parent, pins, wanted)
    return BumpResult(
        path=config_path, edits=plan.edits, kept=plan.kept, current=plan.current, written=written,
        template_pins=tuple((pin, wanted[pin.name]) for pin in pins),
    )  # fmt: skip


def parse_requirements(requirements: Sequence[str]) -> dict[NormalizedName, Version]:
    """``["torch==2.14.0", …]`` -> ``{"torch": Version("2.14.0"), …}``.

    Each must be a bare name with exactly one ``==`` and a version without wildcard or local label
    (lockgen adds the backend's label itself). Raises one :class:`UsageError` listing every bad one.
    """
    problems: list[str] = []
    wanted: dict[NormalizedName, Version] = {}
    if not requirements:
        raise UsageError(f"name the pins to move; {_FORM}")
    for text in requirements:
        parsed = _parse_one(text)
        if isinstance(parsed, str):
            problems.append(f"{text!r}: {parsed}")
            continue
        name, version = parsed
        if name in wanted and wanted[name] != version:
            problems.append(f"{text!r}: {name} is also asked for as {wanted[name]}; give one version")
            continue
        wanted[name] = version
    if problems:
        raise UsageError(_lines("cannot bump", problems) + f"\n{_FORM}")
    return wanted


def _parse_one(text: str) -> tuple[NormalizedName, Version] | str:
    """``NAME==VERSION`` -> (name, version), or what is wrong with it."""
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return "not a requirement"
    specs = list(req.specifier)
    if req.url or req.extras or req.marker or len(specs) != 1 or specs[0].operator != "==":
        return "not of the form NAME==VERSION"
    try:
        version = Version(specs[0].version)
    except InvalidVersion:
        return f"{specs[0].version!r} is not a single version (no wildcards)"
    if version.local is not None:
        return f"write the version without its local label (+{version.local}); lockgen adds the backend's"
    return canonicalize_name(req.name), version


def plan_bumps(path: Path, text: str, wanted: Mapping[NormalizedName, Version], templates: str | None = None) -> Plan:
    """Decide and make the edits ``wanted`` asks for in ``text``, the contents of ``path``
    (whose name says the layout: ``pyproject.toml`` or a standalone ``lockgen.toml``). Pure.

    Raises :class:`UsageError` for a name pinned nowhere (or only in rules that disagree), and
    :class:`ConfigError` for a pin of a wanted name that is not a bare version, or when the
    edit would change more than the pin values.
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    try:
        data = loads(text)  # the parser load_config uses: the file must be valid for it too
        doc = tomlkit.parse(text[len(bom) :])
    except (TOMLKitError, ValueError) as exc:  # ValueError: tomllib.TOMLDecodeError
        raise ConfigError(path.name, [f"cannot read TOML: {exc}"]) from exc
    layout = Layout.of(path)
    sites = find_sites(doc, layout, path.name)
    edits, kept, current = _choose(path, layout, sites, wanted, templates)
    done: list[Edit] = []
    new_text = text
    if edits:
        done, new_text = _edit(path, text, bom, doc, data, edits)
    return Plan(
        edits=tuple(done),
        kept=tuple(kept),
        current=tuple(current),
        text=new_text,
        configured=frozenset(s.name for s in sites),
    )


def _choose(
    path: Path, layout: Layout, sites: Sequence[Site], wanted: Mapping[NormalizedName, Version], templates: str | None
) -> tuple[list[tuple[Site, Version]], list[Kept], list[Site]]:
    """The pins that move (with their new version), the rule pins kept, and the pins already at
    their wanted version; raises as :func:`plan_bumps` says."""
    edits: list[tuple[Site, Version]] = []
    kept: list[Kept] = []
    current: list[Site] = []
    config_problems: list[str] = []
    usage_problems: list[str] = []
    nowhere: list[str] = []
    for name, version in wanted.items():
        mine = [(s, _pin_version(s, config_problems)) for s in sites if s.name == name]
        if not mine:
            nowhere.append(name)
            continue
        pinned = [(s, v) for s, v in mine if v is not None]
        if len(pinned) < len(mine):
            continue  # a pin that is not a bare version: reported above
        moving, keep, problem = _decide(name, version, pinned, layout)
        if problem:
            usage_problems.append(problem)
            continue
        kept += keep
        current += [s for s, v in moving if v == version]
        edits += [(s, version) for s, v in moving if v != version]
    if config_problems:
        raise ConfigError(path.name, config_problems)
    if nowhere:
        names = sorted({s.name for s in sites})
        usage_problems.insert(
            0,
            f"{', '.join(nowhere)}: pinned nowhere in {path.name}"
            + (f" nor as a NAME==VERSION line in {templates}/" if templates else "")
            + f"; pins live in {layout.pins_table} (a rule may also set its own pins) and bump only moves "
            f"existing pins; pinned in {path.name}: " + (", ".join(names) or "nothing"),
        )
    if usage_problems:
        raise UsageError(_lines(f"{path.name}: cannot bump", usage_problems))
    return edits, kept, current


def _edit(
    path: Path, text: str, bom: str, doc: Any, data: dict[str, Any], edits: Sequence[tuple[Site, Version]]
) -> tuple[list[Edit], str]:
    """Set each pin of ``edits`` in ``doc`` (tomlkit, parsed from ``text`` without its ``bom``)
    and check that nothing else changed; the edits made and the new text."""
    tokens: set[str] = set()
    done: list[Edit] = []
    for site, version in edits:
        old_token, new_token = _replace(doc, site.where, str(version))
        tokens |= {old_token, new_token}
        done.append(Edit(name=site.name, key_path=site.key_path, old=site.value, new=str(version)))
    new_text = bom + doc.as_string()
    check_only_pins_changed(path, text, new_text, data, edits, tokens)
    return done, new_text


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


def _replace(doc: Any, where: Where, version: str) -> tuple[str, str]:
    """Replace the string at ``where`` by ``version`` in the same string style (tomlkit keeps the
    key as written and the value's trivia: spacing, comment, line ending). Returns the old and
    the new value as TOML (``"2.13.0"``, ``"2.14.0"``)."""
    container: Any = doc
    for part in where[:-1]:
        container = container[part]
    key = where[-1]
    old = container[key]
    assert isinstance(old, String)
    new = String(old.type, version, version, old.trivia)
    container[key] = new
    return old.as_string(), new.as_string()


def _shown(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd`` when it is under it, else as given."""
    try:
        return path.resolve().relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return str(path)


def _lines(head: str, problems: Sequence[str]) -> str:
    if len(problems) == 1:
        return f"{head}: {problems[0]}"
    return "\n".join([f"{head}:", *(f"  - {p}" for p in problems)])
