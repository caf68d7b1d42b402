"""``lockgen audit --fix``: move each affected package to the smallest fixed version the cell's
pins, templates and constraints allow, re-lock, and say what is left.

For each open finding (not ignored) the target is the smallest ``fixed`` version of its records
above the locked one that no other advisory of the source affects (the source is asked about each
candidate). Then, per cell that locks it:

* a pin (``pins`` in the config, a plain ``NAME==VERSION`` template line) moves the way
  ``lockgen bump`` moves it (line-aware: every other byte kept; refused as a whole when the edit
  would change more), and the cells whose inputs changed re-lock;
* an unpinned package is re-locked with ``--upgrade-package NAME==TARGET`` in the cells that lock
  it (uv's own form: exactly that version, the rest of the lock kept);
* a rendered requirement, constraint or override whose specifier excludes the target (a
  specifier pin, ``markupsafe<2.2``), or no published fix, blocks it: reported with the file and
  the line that blocks it; a re-lock uv refuses (a dependent that requires the old version)
  keeps the cell's old lock and is reported with uv's reason.

The re-locks go through :mod:`lockgen.run.lock` (the run lock, all files of a cell replaced
together, the change report); afterwards the locks are audited again.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from lockgen.dossier.audit import AuditReport, Finding, audit
from lockgen.osv import Source
from lockgen.project import Project
from lockgen.run.values import Reporter, RunOptions, RunResult
from lockgen.runtime import bounded
from lockgen.runtime.words import counted

if TYPE_CHECKING:
    from lockgen.dossier.inventory import Inventory
    from lockgen.index.pages import PageReader
    from lockgen.plan.plan import Plan

__all__ = ["Blocked", "FixPlan", "fix_command", "plan_fixes"]

_ROLES = ("requirements", "constraints", "overrides")


@dataclass(frozen=True, kw_only=True)
class Blocked:
    """A finding that cannot be fixed in ``cells``, and why (``why`` names the file or setting)."""

    finding: Finding
    cells: tuple[str, ...]
    why: str


@dataclass(kw_only=True)
class FixPlan:
    """What :func:`plan_fixes` decided: pins to bump (name -> version), per-cell upgrades
    (cell -> ``NAME==VERSION`` specs), and what is blocked."""

    bumps: dict[NormalizedName, Version] = field(default_factory=dict)
    upgrades: dict[str, list[str]] = field(default_factory=dict)
    blocked: list[Blocked] = field(default_factory=list)
    moves: list[str] = field(default_factory=list)  # one line per decided fix, for the report


def target_version(
    finding: Finding,
    others: Sequence[Finding],
    source: Source,
    skip: frozenset[Version] = frozenset(),
    published: frozenset[Version] = frozenset(),
) -> Version | None:
    """The smallest version above the locked one that the finding's records fix and no other
    advisory affects, leaving out ``skip`` (the yanked ones, PEP 592); when a fixed version is
    yanked, the ``published`` releases above it are candidates too (the next release carries the
    fix). Each candidate is asked of ``source`` (once), the next fix of whatever affects it tried
    after. None when no fixed version is published (or every one is skipped)."""
    candidates = sorted(set(finding.fixed) | {v for f in others for v in f.fixed if v > finding.version})
    pulled = [c for c in candidates if c in skip]
    if pulled:
        candidates = sorted(set(candidates) | {v for v in published if v > min(pulled) and not v.is_prerelease})
    for candidate in [c for c in candidates if c not in skip][:10]:
        if candidate <= finding.version or not _fixes(finding, others, candidate):
            continue
        answer = source.advisories([(finding.package, candidate)]).get((finding.package, candidate), [])
        if not [a for a in answer if a.withdrawn is None]:
            return candidate
    return None


def _fixes(finding: Finding, others: Sequence[Finding], candidate: Version) -> bool:
    return all(not f.advisory.affects(finding.package, candidate) for f in [finding, *others])


def plan_fixes(project: Project, report: AuditReport, source: Source, reader: PageReader | None = None) -> FixPlan:
    """Decide every fix (see the module docstring); pure but for asking ``source`` about
    candidates and, with ``reader``, each cell's index for the fix's upload time (a fix uploaded
    after the cell's ``exclude-newer`` cutoff is blocked by it: :mod:`lockgen.dossier.cutoff`)."""
    from lockgen.bump.pins import plan_bumps
    from lockgen.bump.templates import find
    from lockgen.config import find_config
    from lockgen.dossier.cutoff import late, yanked

    config = project.config
    path = find_config(config.root, config.source)
    configured = plan_bumps(path, bounded.read_text(path, path.name), {}).configured
    by_key: dict[tuple[NormalizedName, Version], list[Finding]] = {}
    for finding in report.findings:
        by_key.setdefault((finding.package, finding.version), []).append(finding)
    names = {name for name, _ in by_key}
    template_pins = {t.name for t in find(config.root, config.templates, names) if _exact(t.requirement.requirement)}
    cells = {c.name: c for c in project.cells}
    plans = {p.cell.name: p for p in project.plans([cells[n] for n in report.cells if n in cells])}
    plan = FixPlan()
    for (name, version), findings in sorted(by_key.items()):
        hit_cells = sorted({h.cell for f in findings for h in f.hits})
        skip: set[Version] = set()
        listed: set[Version] = set()
        unknown = None
        for cell in hit_cells if reader is not None else ():
            if cell in plans:
                assert reader is not None
                versions, found, error = yanked(reader, plans[cell], name)
                listed |= versions
                skip |= found
                unknown = unknown or error
        if unknown is not None:  # a page that cannot be read is no proof that nothing is yanked
            plan.blocked += [
                Blocked(finding=f, cells=tuple(hit_cells), why=f"cannot tell which versions are yanked: {unknown}")
                for f in findings
            ]
            continue
        target = None
        for finding in findings:
            others = [f for f in findings if f is not finding]
            candidate = target_version(finding, others, source, frozenset(skip), frozenset(listed))
            if candidate is None:
                target = None
                break
            target = max(target, candidate) if target is not None else candidate
        if target is None:
            published = [v for f in findings for v in f.fixed if v > version]
            reason = (
                "every fixed version is yanked from the index ("
                + ", ".join(str(v) for v in sorted(set(published)))
                + ")"
                if published and all(v in skip for v in published)
                else "no fixed version is published"
            )
            for finding in findings:
                plan.blocked.append(Blocked(finding=finding, cells=tuple(hit_cells), why=reason))
            continue
        movable = name in configured or name in template_pins
        for cell in hit_cells:
            cell_plan = plans.get(cell)
            why = _blocker(cell_plan, name, target, movable) if cell_plan is not None else None
            if why is None and cell_plan is not None and reader is not None:
                after = late(reader, cell_plan, name, target)
                why = after.why(name, target) if after is not None else None
            if why is not None:
                plan.blocked += [Blocked(finding=f, cells=(cell,), why=why) for f in findings if cell in f.cells]
            elif movable:
                plan.bumps[name] = max(plan.bumps.get(name, target), target)
            else:
                plan.upgrades.setdefault(cell, []).append(f"{name}=={target}")
        fixed_cells = [c for c in hit_cells if not any(b.finding in findings and c in b.cells for b in plan.blocked)]
        if fixed_cells:
            how = "move its pin (as lockgen bump)" if movable else f"re-lock with --upgrade-package {name}=={target}"
            ids = ", ".join(sorted({f.id for f in findings}))
            plan.moves.append(f"{name} {version} -> {target} ({ids}; {counted(len(fixed_cells), 'cell')}): {how}")
    return plan


def _exact(req: Requirement) -> bool:
    """Whether a template line pins exactly (``==``, ``===``): a lower bound is no pin a fix moves
    (bump would move ``jinja2>=3.1`` to ``>=3.1.5``, and uv then takes the newest)."""
    from lockgen.plan.reqline import pin_of

    spec = pin_of(req)
    return spec is not None and spec.operator in ("==", "===")


def _blocker(plan: Plan, name: NormalizedName, target: Version, movable: bool) -> str | None:
    """What in the cell's rendered inputs keeps ``name`` from ``target``: a requirement,
    constraint or override line whose specifier excludes it (a pin bump moves the pin lines), a
    pin written as a specifier."""
    if name in plan.pinned_specifiers and not SpecifierSet(plan.pinned_specifiers[name]).contains(
        target, prereleases=True
    ):
        return f"its pin is the specifier {plan.pinned_specifiers[name]!r} (pins.{name}), which excludes {target}; edit it by hand"
    for role in _ROLES:
        if role not in plan.rendered.files:
            continue
        template, text = plan.rendered.files[role]
        for line in text.splitlines():
            try:
                req = Requirement(line.split(" #", 1)[0].strip())
            except InvalidRequirement:
                continue
            if canonicalize_name(req.name) != name or req.url:
                continue
            if req.specifier.contains(target, prereleases=True):
                continue
            exact = [s for s in req.specifier if s.operator == "=="]
            if movable and (exact or name in plan.pinned):
                continue  # the pin that bump moves (config pins render into these lines)
            return f"{plan.templates}/{template} renders {str(req)!r} ({role}), which excludes {target}"
    return None


def fix_command(
    project: Project,
    cells: Sequence[str],
    osv: str | None,
    fail_on: str | None,
    options: RunOptions,
    reporter: Reporter,
    today: datetime.date | None = None,
) -> int:
    """``lockgen audit --fix``: plan, bump, re-lock, audit again; prints what it did (stdout) and
    returns 0 when no finding at or above ``fail_on`` is left, else 1."""
    from lockgen.bump.run import BumpOptions, bump
    from lockgen.dossier import inventory
    from lockgen.dossier.auditformat import headline
    from lockgen.dossier.run import osv_source
    from lockgen.osv import open_source
    from lockgen.run import lock as pipeline

    value, _ = osv_source(project, osv, options.mirrors)
    source = open_source(value, project.root, project.mirrors(options.mirrors))
    settings = project.config.audit
    threshold = fail_on or settings.fail_on
    from lockgen.index.pages import PageReader

    old = inventory.read(project.root, project.config.locks, cells, artifacts=False)
    before = audit(old, source, settings.ignore, threshold, today)
    with PageReader(project.mirrors(options.mirrors)) as reader:
        fixes = plan_fixes(project, before, source, reader)
    out = [f"fix: {line}" for line in fixes.moves]
    failed: dict[str, str] = {}
    if fixes.bumps:
        pins = [f"{n}=={v}" for n, v in sorted(fixes.bumps.items())]
        # the pins' edits and the re-locks they need are one unit (lockgen bump): an interrupted or
        # failed fix leaves the templates, the config and the locks as they were
        result = bump(project.root, project.config.source, pins, BumpOptions(run=options), reporter,
                      say=lambda line: print(line, file=sys.stderr))  # fmt: skip
        print(result.final(), file=sys.stderr)
        if result.run is not None:
            if result.run.interrupted:
                raise KeyboardInterrupt
            failed.update(_failures(result.run))
        project = Project.load(project.root, project.config.source)  # the pins moved
    groups: dict[tuple[str, ...], list[str]] = {}
    for cell, wanted in sorted(fixes.upgrades.items()):
        groups.setdefault(tuple(sorted(wanted)), []).append(cell)
    for specs, names in groups.items():
        upgraded = dataclasses.replace(options, uv=dataclasses.replace(options.uv, upgrade_packages=specs))
        failed.update(_failures(pipeline.lock(project, names, (), upgraded, reporter)))
    new = inventory.read(project.root, project.config.locks, cells, artifacts=False)
    after = audit(new, source, settings.ignore, threshold, today)
    total = len(after.cells)
    for blocked in fixes.blocked:
        out.append(f"cannot fix {blocked.finding.id} in {blocked.finding.package} {blocked.finding.version} "
                   f"({', '.join(blocked.cells)}): {blocked.why}")  # fmt: skip
    for cell, why in sorted(failed.items()):
        out.append(f"cannot fix in {cell}: re-locking failed, its old lock is kept: {why}")
    left = after.failing
    out += [f"still affected: {headline(f, total)}" for f in left]
    out += _collateral(old, new)
    fixed = [f for f in before.findings if _verified(f, new)]
    out.append(
        f"{len(fixed)} of {counted(len(before.findings), 'finding')} fixed; {len(left)} at or above --fail-on {threshold} left"
    )
    print("\n".join(out))
    return 1 if left else 0


def _verified(finding: Finding, new: Inventory) -> bool:
    """Whether the new locks hold, in every lock that had the finding's package, a version the
    advisory does not affect (checked, never assumed: a re-lock may drop the package instead)."""
    for hit in finding.hits:
        now = [p for p in new.packages if (p.cell, p.layer, p.name) == (hit.cell, hit.layer, finding.package)]
        if not now or any(p.public is None or finding.advisory.affects(finding.package, p.public) for p in now):
            return False
    return True


def _collateral(old: Inventory, new: Inventory) -> list[str]:
    """What the re-locks did besides the fixes: packages removed from a lock, or downgraded."""
    then = {(p.cell, p.layer, p.name): p.version for p in old.packages}
    now = {(p.cell, p.layer, p.name): p.version for p in new.packages}
    out = []
    for (cell, layer, name), version in sorted(then.items()):
        where = cell if layer == "main" else f"{cell} (layer {layer})"
        if (cell, layer, name) not in now:
            out.append(f"warning: the re-lock removed {name} {version} from {where}")
        elif version is not None and (moved := now[(cell, layer, name)]) is not None and moved < version:
            out.append(f"warning: the re-lock downgraded {name} {version} -> {moved} in {where}")
    return out


def _failures(run: RunResult) -> Mapping[str, str]:
    from lockgen.runtime.states import CellState

    return {r.name: r.message or "failed" for r in run.results if r.state is CellState.FAILED}
