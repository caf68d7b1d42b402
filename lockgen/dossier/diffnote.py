"""The advisories a lock change fixes or introduces, for ``lockgen diff --format markdown``.

Optional and offline-capable: the CLI adds the note only when an OSV source is configured
(``[audit] osv``) or given (``lockgen diff --osv SOURCE``); an export on disk needs no network.
Both sets of locks are audited against the one source (each package version asked once,
:class:`~lockgen.osv.Cached`), ignores applying as in ``lockgen audit``; an advisory
(by id and package) present only before is *fixed*, present only after *introduced*.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lockgen.dossier.audit import AuditReport, Finding, audit
from lockgen.locks.lockset import LockSet
from lockgen.project import Project
from lockgen.runtime.words import counted

__all__ = ["advisories_note", "compare"]


def compare(before: AuditReport, after: AuditReport) -> tuple[list[Finding], list[Finding]]:
    """``(fixed, introduced)``: findings only in ``before``, findings only in ``after``."""
    old = {(f.id, f.package): f for f in before.findings}
    new = {(f.id, f.package): f for f in after.findings}
    return [old[k] for k in sorted(old.keys() - new.keys())], [new[k] for k in sorted(new.keys() - old.keys())]


def advisories_note(project: Project, old: str | None, new: str | None, osv: str | None, mirrors: Sequence[str]) -> str:
    """A markdown section for the end of the diff comment (see the module docstring). OLD and NEW
    are read as ``lockgen diff`` reads them: a folder of locks, else a git revision (OLD's
    default ``HEAD``), else (NEW) the work tree."""
    from lockgen.dossier import inventory
    from lockgen.dossier.run import osv_source
    from lockgen.osv import open_source

    value, _ = osv_source(project, osv, mirrors)
    source = open_source(value, project.root, project.mirrors(mirrors))
    settings = project.config.audit
    sides = []
    for arg, default in ((old, "HEAD"), (new, None)):
        lockset = _side(project, arg, default)
        sides.append(audit(inventory.from_lockset(lockset, locks=project.config.locks), source, settings.ignore))
    fixed, introduced = compare(*sides)
    lines = ["", "### Advisories", ""]
    if not fixed and not introduced:
        lines.append(f"No advisory fixed or introduced ({source.where}).")
        return "\n".join(lines) + "\n"
    total = len(sides[1].cells) or len(sides[0].cells)
    lines += [
        f"This change fixes {counted(len(fixed), 'advisory')} and introduces {len(introduced)} ({source.where}).",
        "",
        "| | advisory | package | cells |",
        "|---|---|---|---|",
    ]
    for word, findings in (("✅ fixed", fixed), ("⚠️ introduced", introduced)):
        for f in findings:
            lines.append(
                f"| {word} | [{f.id}]({f.advisory.url}) {f.severity.label} | {f.package} {f.version} | {len(f.cells)} of {total} |"
            )
    return "\n".join(lines) + "\n"


def _side(project: Project, arg: str | None, default: str | None) -> LockSet:
    locks = project.config.locks
    if arg is None and default is None:
        return LockSet.from_folder(project.root / locks, locks, label=locks, pylocks=False)
    if arg is not None:
        for candidate in (Path(arg), project.root / arg):
            if candidate.is_dir():
                folder = candidate / locks if (candidate / locks).is_dir() else candidate
                return LockSet.from_folder(folder, locks, label=arg, pylocks=False)
    return LockSet.from_git(project.root, arg or str(default), locks)
