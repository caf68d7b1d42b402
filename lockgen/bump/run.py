"""``lockgen bump NAME==VERSION…``: find every pin that binds, plan every edit, re-lock, write all or nothing.

The steps, all under the project's run lock (:class:`lockgen.locks.store.ProjectLock`, taken
before anything is read, so another run cannot interleave):

1. **Find** every place that pins a named package in some cell: the config's pins (top-level and
   rule pins, :mod:`lockgen.bump`), the config's ``optional`` and ``no-deps`` entries, template
   lines (:mod:`lockgen.bump.templates`) and the requirement strings of the project's metadata
   (``[project].dependencies``, ``optional-dependencies``, PEP 735 ``[dependency-groups]``). Each
   template and project line gets the cells whose rendered inputs it reaches (its marker evaluated
   against each cell's target).
2. **Decide** which move (:mod:`lockgen.bump`, :mod:`lockgen.bump.lines`); any refusal stops the
   bump before anything is written, naming the lines.
3. **Plan** the edits in memory (an overlay of the files' new texts: :class:`lockgen.project.Project`
   reads it instead of the files), render every cell with them, and compare input hashes: a config
   pin whose edit changes no cell's inputs is *read by no template* and said so; when no edit changes
   any cell, bump refuses (a "bump" with unchanged locks is the mistake issue 18 met).
4. **Re-lock** the cells whose inputs changed in a stage (:mod:`lockgen.locks.stage`: a copy of the
   locks folder in lockgen's work folder), then write the edited config, templates and project file
   and every changed lock as one journaled unit. When a cell fails (or Ctrl-C), nothing is written:
   every file of the project is as it was. ``--no-lock`` writes the edits alone (journaled too);
   ``--dry-run`` writes nothing and reports what would change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.bump import lines as bump_lines
from lockgen.bump import templates as bump_templates
from lockgen.bump import toml as bump_toml
from lockgen.bump.lines import LineMove, LineSite, State
from lockgen.bump.pins import Plan as ConfigPlan
from lockgen.bump.pins import Wanted, parse_wanted, pins_table, plan_bumps
from lockgen.config import find_config
from lockgen.config.load import parse_toml
from lockgen.locks import journal, store
from lockgen.plan import reqline
from lockgen.plan.plan import Plan
from lockgen.project import Project
from lockgen.run.values import SILENT, Reporter, RunOptions, RunResult
from lockgen.runtime import bounded
from lockgen.runtime.errors import ConfigError, InputError, UsageError

__all__ = ["BumpOptions", "BumpOutcome", "bump"]

_CONFIG_LISTS = ("optional", "no-deps")


@dataclass(frozen=True, kw_only=True)
class BumpOptions:
    """``run``: how the re-lock runs (``wait`` also for the run lock); ``no_lock``: write the
    edits only; ``dry_run``: write nothing, report what would change."""

    run: RunOptions = field(default_factory=RunOptions)
    no_lock: bool = False
    dry_run: bool = False


@dataclass(frozen=True, kw_only=True)
class PinLine:
    """One place looked at, as the report shows it: ``state`` (moved, already, kept, allows,
    unread), the versions, and a note."""

    name: NormalizedName
    place: str
    old: str
    new: str
    state: str
    note: str = ""
    line: bool = False  # a template or requirement line (its place does not name the package)

    def text(self) -> str:
        what = f"{self.place}: {self.name} " if self.line else f"{self.place}: "  # a key path names the package
        if self.state == "moved":
            return f"{what}{self.old} -> {self.new}" + (f" ({self.note})" if self.note else "")
        if self.state == "already":
            return f"{what}already {self.old}" + (f" ({self.note})" if self.note else "")
        if self.state == "allows":
            return f"{self.place}: {self.old} allows {self.new}: left as it is" + (
                f" ({self.note})" if self.note else ""
            )
        return f"{self.place}: {self.old}: {self.state} ({self.note})"

    def to_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "place": self.place,
            "old": self.old,
            "new": self.new,
            "state": self.state,
            "note": self.note,
        }


@dataclass
class BumpOutcome:
    """What a bump did: every pin looked at (``pins``), the project files it edits (``files``),
    the re-lock (``run``, None with ``--no-lock`` or when nothing moved), the paths written
    (none on failure and with ``--dry-run``), and ``would_write`` (what a dry run would write)."""

    pins: list[PinLine] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    run: RunResult | None = None
    written: list[str] = field(default_factory=list)
    would_write: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def failed(self) -> bool:
        return self.run is not None and self.run.exit_code != 0

    @property
    def exit_code(self) -> int:
        return self.run.exit_code if self.run is not None else 0

    def lines(self) -> list[str]:
        """The pins, then :meth:`final`."""
        return [*(p.text() for p in self.pins), self.final()]

    def final(self) -> str:
        """One line on what was (or would be) written."""
        if not self.files:
            return "bump: no pin moved; nothing written"
        if self.dry_run and self.failed:  # a bump that cannot re-lock would write nothing either
            return f"bump --dry-run: re-locking would fail (see above); the bump would write nothing ({_listed(self.files)} unchanged)"
        if self.dry_run:
            return f"bump --dry-run: would write {_listed(self.would_write or self.files)}; nothing written"
        if self.failed:
            what = "interrupted" if self.run is not None and self.run.interrupted else "re-locking failed (see above)"
            return f"bump: {what}; nothing written: {_listed(self.files)} and the locks are as they were"
        return f"bump: wrote {_listed(self.written)}"

    def to_dict(self) -> dict[str, Any]:
        """``lockgen bump --json``."""
        return {
            "exit_code": self.exit_code, "dry_run": self.dry_run, "pins": [p.to_dict() for p in self.pins],
            "files": self.files, "written": self.written, "would_write": self.would_write,
            "run": self.run.to_dict() if self.run is not None else None,
        }  # fmt: skip


def _listed(paths: Sequence[str], shown: int = 8) -> str:
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def bump(
    start: Path,
    config_arg: str | None,
    requirements: Sequence[str],
    options: BumpOptions = BumpOptions(),
    reporter: Reporter = SILENT,
    say: Callable[[str], None] | None = None,
) -> BumpOutcome:
    """The whole command (see the module docstring); ``say`` gets each pin's line as soon as
    the edits are planned (before the re-lock). Raises :class:`UsageError` for a malformed
    requirement, a name pinned nowhere, a refusal (lines bump will not move, edits that bind no
    cell), another run holding the project; :class:`ConfigError`/``TemplateError`` for a broken
    config or template. A failed re-lock is no exception: ``outcome.run`` says it."""
    wanted = parse_wanted(requirements)
    config_path = find_config(start, config_arg)
    root = config_path.parent
    with store.ProjectLock(root, wait=options.run.wait):
        _settle(root, options.dry_run)
        project = Project.load(start, config_arg)
        if not options.dry_run:
            journal.clean_temporaries(root, project.config.locks)
        return _bump(project, config_path, start, config_arg, wanted, options, reporter, say or (lambda line: None))


def _settle(root: Path, dry_run: bool) -> None:
    """Finish what a killed run left (a dry run touches nothing, so it refuses instead)."""
    journals = journal.pending(root)
    if dry_run and journals:
        raise UsageError(f"a killed run left {', '.join(journals)} half-written; run `lockgen all` to finish it first")
    if not dry_run:
        journal.recover(root)


def _bump(
    project: Project,
    config_path: Path,
    start: Path,
    config_arg: str | None,
    wanted: Mapping[NormalizedName, Wanted],
    options: BumpOptions,
    reporter: Reporter,
    say: Callable[[str], None],
) -> BumpOutcome:
    root, config = project.root, project.config
    before = project.plans(project.cells)
    reading = _Texts(root)
    config_rel = config_path.name
    config_plan = plan_bumps(config_path, reading.text(config_rel), {n: w.version for n, w in wanted.items()})
    sites = _line_sites(project, config_rel, reading, set(wanted))
    sites = _with_cells(project, before, sites)
    fits = _Fits(project, before, options.run)
    moves: list[LineMove] = []
    refused: list[str] = []
    for name, one in wanted.items():
        mine = [s for s in sites if s.name == name]
        marked = _marked(project, one) if one.marker is not None else None
        locked = _locked(project, name)
        decided, problems = bump_lines.decide(name, one, mine, marked, fits.callback(name, one.version), locked)
        moves += decided
        refused += problems or _moves_no_lock(name, one, decided, config_plan, locked)
    _refuse_nowhere(config_path, config, config_plan, sites, moves, wanted, refused)
    if refused:
        raise UsageError("cannot bump:\n" + "\n".join(f"  - {p}" for p in refused) + "\nnothing was written")
    overlay = _overlay(config_rel, reading, config_plan, moves)
    outcome = BumpOutcome(dry_run=options.dry_run)
    outcome.pins = _pin_lines(config_rel, config_plan, moves)
    if not overlay:
        for pin in outcome.pins:
            say(pin.text())
        return outcome
    edited = Project.load(start, config_arg, overlay)
    after = edited.plans(edited.cells)
    changed = _changed(before, after)
    unread = _unread(config_plan, config_rel, start, config_arg, reading, before, after, moves)
    outcome.pins = _pin_lines(config_rel, config_plan, moves, unread)
    for pin in outcome.pins:
        say(pin.text())
    if not changed:
        raise UsageError(
            "cannot bump: no cell's inputs change with these edits ("
            + "; ".join(p.text() for p in outcome.pins if p.state == "moved")
            + "); a config pin must be read by a template ({{ pins.NAME }}) or be pinned; nothing was written"
        )
    outcome.files = sorted(overlay)
    writes, links = _real_paths(root, overlay)
    if options.no_lock:
        if options.dry_run:
            outcome.would_write = outcome.files
        else:
            journal.replace_files(root, "bump", writes, keep_mode=True, links=links)
            outcome.written = outcome.files
        return outcome
    from lockgen.locks.stage import Stage
    from lockgen.run import lock as pipeline

    stage = Stage.create(root, config.locks)
    try:
        outcome.run = pipeline.lock(edited, (), (), options.run, reporter, stage=stage)
        if options.dry_run:
            locks_written, removed = stage.changes()
            outcome.would_write = [*outcome.files, *locks_written, *removed]
        elif not outcome.failed:
            paths = stage.commit(writes, links)
            outcome.written = [*outcome.files, *(p for p in paths if p not in writes)]
    finally:
        stage.discard()
    return outcome


# --------------------------------------------------------------------------- finding


class _Texts:
    """Project files read once (UTF-8), by project-relative path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._texts: dict[str, str] = {}

    def text(self, rel: str) -> str:
        if rel not in self._texts:
            try:
                self._texts[rel] = bounded.read_file(self.root / rel, rel).decode("utf-8")
            except (OSError, UnicodeDecodeError, InputError) as exc:
                raise ConfigError(rel, [f"cannot read: {exc}"]) from exc
        return self._texts[rel]


def _line_sites(project: Project, config_rel: str, reading: _Texts, names: set[NormalizedName]) -> list[LineSite]:
    """Template lines, the config's ``optional``/``no-deps`` entries and the project's requirement
    strings that name one of ``names`` (without cells yet)."""
    config = project.config
    sites = [
        LineSite(file=t.path, place=t.place, requirement=t.requirement, template=t)
        for t in bump_templates.find(project.root, config.templates, names)
    ]
    files = [config_rel]
    project_file = config.project.path if config.project is not None else None
    if project_file is None and (project.root / "pyproject.toml").is_file():
        project_file = "pyproject.toml"
    if project_file is not None and project_file not in files:
        files.append(project_file)
    for rel in files:
        data = parse_toml(reading.text(rel))
        found = bump_toml.requirement_strings(data) if rel == project_file else []
        if rel == config_rel:
            found += _config_entries(data, config.key_prefix)
        for item in found:
            line = reqline.parse(item.value)
            if line is not None and line.name in names:
                sites.append(LineSite(file=rel, place=f"{rel}: {item.key_path}", requirement=line, toml=item))
    return sites


def _config_entries(data: Mapping[str, Any], prefix: str) -> list[bump_toml.Requirement]:
    """The config's ``optional`` and ``no-deps`` entries, top-level and per rule."""
    table: Any = data
    where: bump_toml.Where = tuple(prefix.split(".")) if prefix else ()
    for key in where:
        table = table.get(key, {}) if isinstance(table, Mapping) else {}
    tables: list[tuple[bump_toml.Where, Any]] = [(where, table)]
    rules = table.get("rules", []) if isinstance(table, Mapping) else []
    if isinstance(rules, list):
        tables += [((*where, "rules", i), rule) for i, rule in enumerate(rules)]
    found = []
    for at, settings in tables:
        if not isinstance(settings, Mapping):
            continue
        for key in _CONFIG_LISTS:
            items = settings.get(key)
            for i, item in enumerate(items if isinstance(items, list) else []):
                if isinstance(item, str) and "{" not in item:  # a Jinja entry renders per cell: not a literal pin
                    path = (*at, key, i)
                    found.append(bump_toml.Requirement(where=path, key_path=bump_toml.key_path(path), value=item))
    return found


def _with_cells(project: Project, plans: Sequence[Plan], sites: list[LineSite]) -> list[LineSite]:
    """Each site with the cells whose rendered inputs it reaches (marker true for the cell)."""
    from lockgen.plan.render import LineMap, environment
    from lockgen.plan.sources import applies

    if not sites:
        return sites
    lines = LineMap(environment(project.config, project.template_overlay()), project.config.templates)
    names = {s.name for s in sites}
    cells: dict[str, set[str]] = {s.place: set() for s in sites}
    by_template = {(s.file, s.template.line): s for s in sites if s.template is not None}
    strings = [s for s in sites if s.toml is not None]
    for plan in plans:
        rendered = [(t, raw) for t, text in plan.rendered.files.values() for raw in text.splitlines()]
        rendered += [("", entry) for entry in (*plan.optional, *plan.no_deps)]
        for template, raw in rendered:
            line = reqline.parse(raw)
            if line is None or line.name not in names or not applies(line.requirement.marker, plan.target):
                continue
            origin = lines.origin(template, raw) if template else None
            site = by_template.get(origin) if origin is not None else None
            if site is not None:
                cells[site.place].add(plan.cell.name)
                continue
            for other in strings:
                if other.requirement.body == line.body:
                    cells[other.place].add(plan.cell.name)
    return [replace(s, cells=frozenset(cells[s.place])) for s in sites]


def _locked(project: Project, name: NormalizedName) -> dict[str, Version]:
    """``{cell: version}`` of ``name`` in the resolved cells' current main locks (public version;
    a cell without a lock, or whose lock cannot be read or lacks the package, is left out)."""
    from lockgen.locks.lock import Lock
    from lockgen.runtime.errors import LockgenError

    found = {}
    for cell in project.cells:
        if not cell.resolves:
            continue
        rel = cell.lock_path(project.config)
        try:
            lock = Lock.read(project.root / rel, rel)
        except LockgenError:
            continue
        version = lock.versions().get(name) if lock is not None else None
        if version is not None:
            found[cell.name] = Version(version.public)
    return found


def _moves_no_lock(
    name: NormalizedName,
    wanted: Wanted,
    moves: Sequence[LineMove],
    config_plan: ConfigPlan,
    locked: Mapping[str, Version],
) -> list[str]:
    """A refusal when nothing pins ``name`` to move and the lines that name it are ranges that
    already allow the version asked, while their cells lock another: the bump would change no
    lock (the mistake of a "bump" whose locks do not move, issue 18), so say what the locks hold
    and how to get the version."""
    if any(m.state in (State.MOVE, State.CURRENT) for m in moves) or any(e.name == name for e in config_plan.edits):
        return []
    if config_plan.current and any(c.name == name for c in config_plan.current):
        return []
    allows = [m for m in moves if m.state is State.ALLOWS]
    if not any(m.site.floor for m in allows):
        return []  # no floor: the package is pinned nowhere, which _refuse_nowhere says
    cells = {c for m in allows for c in m.site.cells}
    held = sorted({locked[c] for c in cells if c in locked})
    if not allows or held == [wanted.version]:
        return []
    lines = "; ".join(f"{m.site.place} {m.site.requirement.body!r}" for m in allows)
    holds = f"its cells lock {', '.join(map(str, held))}" if held else "no cell has a lock of it yet"
    return [
        f"{name}: no pin of it moves: {lines} {'is a range' if len(allows) == 1 else 'are ranges'} that "
        f"{'allows' if len(allows) == 1 else 'allow'} {wanted.version}, and {holds}, so no lock would change; to lock "
        f"exactly {wanted.version}, write {name}=={wanted.version} there (bump then moves it)"
    ]


def _marked(project: Project, wanted: Wanted) -> frozenset[str]:
    """The resolved cells the marker of ``wanted`` admits."""
    from lockgen.plan.sources import applies
    from lockgen.plan.target import target_for

    return frozenset(c.name for c in project.cells if c.resolves and applies(wanted.marker, target_for(c)))


class _Fits:
    """``fits(cell)`` answers for :func:`lockgen.bump.lines.decide`, asked of uv once per cell and version."""

    def __init__(self, project: Project, plans: Sequence[Plan], options: RunOptions) -> None:
        self.project = project
        self.plans = {p.cell.name: p for p in plans}
        self.options = options
        self.known: dict[tuple[str, str, str], bool | None] = {}

    def callback(self, name: NormalizedName, version: Version) -> bump_lines.Fits:
        def fits(cell: str) -> bool | None:
            key = (cell, name, str(version))
            if key not in self.known:
                self.known[key] = self._ask(cell, name, version)
            return self.known[key]

        return fits

    def _ask(self, cell: str, name: NormalizedName, version: Version) -> bool | None:
        from lockgen.resolve import uv
        from lockgen.resolve.fit import fits

        plan = self.plans.get(cell)
        if plan is None:
            return None
        return fits(self.project.root, plan, name, version, self.project.mirrors(self.options.mirrors), uv.Runner())


def _refuse_nowhere(
    config_path: Path,
    config: Any,
    config_plan: ConfigPlan,
    sites: Sequence[LineSite],
    moves: Sequence[LineMove],
    wanted: Mapping[NormalizedName, Wanted],
    refused: list[str],
) -> None:
    """A name no config pin and no line pins is a refusal naming where pins live."""
    pinned_lines = {s.name for s in sites if s.version is not None}
    nowhere = [n for n in wanted if n not in config_plan.configured and n not in pinned_lines]
    if not nowhere:
        return
    named = sorted({m.site.place for m in moves if m.site.name in nowhere})
    unpinned = f"; named without a pin in {', '.join(named)}" if named else ""
    pinned = ", ".join(sorted(config_plan.configured)) or "nothing"
    refused.insert(
        0,
        f"{', '.join(nowhere)}: pinned nowhere: not in {pins_table(config_path)} of {config_path.name} (nor a rule's "
        f"pins), nor by a line of {config.templates}/ or of the project's dependencies{unpinned}; bump only moves "
        f"existing pins; pinned in {config_path.name}: {pinned}"
        + "".join(f"; {how}" for how in _how_to_pin(config.templates, nowhere, moves, wanted)),
    )


def _how_to_pin(
    templates: str, names: Sequence[NormalizedName], moves: Sequence[LineMove], wanted: Mapping[NormalizedName, Wanted]
) -> list[str]:
    """Per name pinned nowhere, the exact edit that pins it (pip-compile's ``-P NAME==VERSION``
    locks a version without one; lockgen's locks follow their inputs, so the pin goes into the
    line that names it): each line's requirement with ``==VERSION`` in place of its range, its
    extras and marker kept; or, for a name no line names (a dependency of another package), a
    line to add to a template."""
    found = []
    for name in names:
        version = wanted[name].version
        lines = [m.site for m in moves if m.site.name == name]
        if not lines:
            found.append(
                f"to lock {name} {version}, add the line {name}=={version} to a template of {templates}/ "
                "(it pins a dependency of another package too), then run `lockgen all`"
            )
            continue
        edits = []
        for site in lines:
            requirement = Requirement(str(site.requirement.requirement))
            requirement.specifier = SpecifierSet(f"=={version}")
            edits.append(f"{site.place}: {site.requirement.body!r} -> {str(requirement)!r}")
        found.append(
            f"to lock {name} {version}, write the pin into the line{'s' if len(edits) > 1 else ''} that "
            f"name{'' if len(edits) > 1 else 's'} it ({'; '.join(edits)}), then run `lockgen all` (later bumps move it)"
        )
    return found


# --------------------------------------------------------------------------- planning


def _overlay(config_rel: str, reading: _Texts, config_plan: ConfigPlan, moves: Sequence[LineMove]) -> dict[str, str]:
    """``{project-relative path: new text}`` of every file an edit changes."""
    moving = [m for m in moves if m.state is State.MOVE]
    toml: dict[str, list[tuple[bump_toml.Where, str]]] = {}
    if config_plan.edits:
        toml[config_rel] = [(e.where, e.new) for e in config_plan.edits]
    templates: dict[str, list[tuple[bump_templates.TemplateLine, Version]]] = {}
    for move in moving:
        site = move.site
        if site.template is not None:
            templates.setdefault(site.file, []).append((site.template, move.version))
        elif site.toml is not None:
            toml.setdefault(site.file, []).append(
                (site.toml.where, reqline.with_version(site.requirement, move.version))
            )
    overlay: dict[str, str] = {}
    for rel, edits in toml.items():
        overlay[rel] = bump_toml.edit_strings(Path(rel), reading.text(rel), edits)
    for rel, template_moves in templates.items():
        try:
            overlay[rel] = bump_templates.edited(reading.text(rel), template_moves)
        except reqline.EditRefused as exc:
            raise UsageError(f"cannot bump: {rel}: {exc}; nothing was written") from None
    return {rel: text for rel, text in overlay.items() if text != reading.text(rel)}


def _changed(before: Sequence[Plan], after: Sequence[Plan]) -> set[str]:
    """The cells whose input hash differs (a cell in only one of them counts)."""
    old = {p.cell.name: p.input_hash for p in before}
    new = {p.cell.name: p.input_hash for p in after}
    return {cell for cell in old.keys() | new.keys() if old.get(cell) != new.get(cell)}


def _unread(
    config_plan: ConfigPlan,
    config_rel: str,
    start: Path,
    config_arg: str | None,
    reading: _Texts,
    before: Sequence[Plan],
    after: Sequence[Plan],
    moves: Sequence[LineMove],
) -> set[str]:
    """Key paths of the moved config pins whose edit changes no cell's inputs, per package (a
    package whose only edits are config pins, bumped alone, is judged by ``after`` itself)."""
    names = {e.name for e in config_plan.edits}
    lines_move = {m.site.name for m in moves if m.state is State.MOVE}
    unread: set[str] = set()
    for name in sorted(names):
        mine = [e for e in config_plan.edits if e.name == name]
        if len(names) == 1 and not lines_move:
            changed = _changed(before, after)
        else:
            text = bump_toml.edit_strings(Path(config_rel), reading.text(config_rel), [(e.where, e.new) for e in mine])
            alone = Project.load(start, config_arg, {config_rel: text})
            changed = _changed(before, alone.plans(alone.cells))
        if not changed:
            unread |= {e.key_path for e in mine}
    return unread


def _pin_lines(
    config_rel: str, config_plan: ConfigPlan, moves: Sequence[LineMove], unread: set[str] | None = None
) -> list[PinLine]:
    unread = unread or set()
    found = [
        PinLine(
            name=e.name, place=f"{config_rel}: {e.key_path}", old=e.old, new=e.new, state="moved",
            note="read by no template: no cell's inputs change with it" if e.key_path in unread else "",
        )
        for e in config_plan.edits
    ]  # fmt: skip
    found += [
        PinLine(name=s.name, place=f"{config_rel}: {s.key_path}", old=s.value, new=s.value, state="already")
        for s in config_plan.current
    ]
    found += [
        PinLine(
            name=k.name, place=f"{config_rel}: {k.key_path}", old=k.version, new=k.version, state="kept", note=k.reason
        )
        for k in config_plan.kept
    ]
    for move in moves:
        site = move.site
        old = str(site.version) if site.version is not None else site.requirement.body
        new = str(move.version)
        if move.state is State.KEPT:
            found.append(
                PinLine(
                    name=site.name, place=site.place, old=site.requirement.body, new=new, state="kept", note=move.reason
                )
            )
        elif move.state is State.ALLOWS:
            found.append(
                PinLine(
                    name=site.name, place=site.place, old=site.requirement.body, new=new, state="allows",
                    note=move.reason,
                )
            )  # fmt: skip
        else:
            if site.floor:  # a range: say the operator
                old, new = f">={old}", f">={new}"
            found.append(
                PinLine(
                    name=site.name,
                    place=site.place,
                    old=old,
                    new=new,
                    state=str(move.state),
                    note=move.reason,
                    line=True,
                )
            )
    return found


def _real_paths(root: Path, overlay: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The overlay keyed by the path to write: through a symlink, its target (relative to the
    project root when inside it, else absolute), and for each absolute one the project-relative
    path leading to it (the journal's record names that link: :func:`lockgen.locks.journal.recover`
    replays a write outside the project only while the link still leads there)."""
    out, links = {}, {}
    base = root.resolve()
    for rel, text in overlay.items():
        target = (root / rel).resolve()
        if target.is_relative_to(base):
            out[target.relative_to(base).as_posix()] = text
        else:
            out[str(target)] = text
            links[str(target)] = rel
    return out, links
