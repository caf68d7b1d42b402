"""An :class:`~lockgen.dossier.audit.AuditReport` as terminal text, a pull-request comment
(markdown), JSON, or SARIF 2.1.0 for GitHub code scanning. Pure functions; no I/O.

SARIF: one rule per advisory (its id, summary, help link, ``security-severity`` as GitHub reads
it: the CVSS score, else 9.5/8.0/5.5/2.0 for critical/high/medium/low), one result per lock file
that locks the package (pointing at the package's line in the lock, project-relative), so code
scanning shows the advisory once per lock and closes it when the lock no longer has it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lockgen import __version__
from lockgen.dossier.audit import AuditReport, Finding, fails
from lockgen.locks.diffformat import COMMENT_LIMIT, MARGIN
from lockgen.osv import Severity
from lockgen.runtime.words import counted

__all__ = ["FORMATS", "render_json", "render_markdown", "render_sarif", "render_text"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: GitHub's ``security-severity`` for a rating without a CVSS score (its own bands: over 9.0
#: critical, 7.0–8.9 high, 4.0–6.9 medium, 0.1–3.9 low).
_BAND = {Severity.CRITICAL: "9.5", Severity.HIGH: "8.0", Severity.MEDIUM: "5.5", Severity.LOW: "2.0"}


def headline(f: Finding, total: int) -> str:
    """``GHSA-… in jinja2 3.1.4: 9 of 12 cells; fixed in 3.1.5``."""
    fix = f"fixed in {f.fixed[0]}" if f.fixed else "no fixed version published"
    return f"{f.id} in {f.package} {f.version}: {len(f.cells)} of {counted(total, 'cell')}; {fix}"


def _severity(f: Finding) -> str:
    text = f.severity.label if f.severity is not Severity.UNKNOWN else "severity unknown"
    return f"{text} {f.score}" if f.score is not None else text


def _where(f: Finding) -> list[str]:
    """The builds and layers of a finding, when they say more than its headline."""
    lines = []
    builds = f.builds
    if len(builds) > 1 or any(v != str(f.version) for v in builds):
        lines += [f"{version}: {_cells(cells)}" for version, cells in builds.items()]
    elif len(f.cells) < 6:
        lines.append(_cells(list(f.cells)))
    layers = [layer for layer in f.layers if layer != "main"]
    for layer in layers:
        cells = sorted({h.cell for h in f.hits if h.layer == layer})
        lines.append(f"layer {layer}: {_cells(cells)}")
    return lines


def _cells(cells: list[str], shown: int = 4) -> str:
    more = f", +{len(cells) - shown} more" if len(cells) > shown else ""
    return ", ".join(cells[:shown]) + more


def render_text(report: AuditReport) -> str:
    total = len(report.cells)
    lines = [f"audited {counted(total, 'cell')} ({counted(report.queried, 'package version')}) against {report.source}"]
    for f in report.findings:
        mark = "!" if fails(f.severity, report.fail_on) else "-"
        aliases = f" ({', '.join(f.aliases)})" if f.aliases else ""
        lines.append(f"{mark} {headline(f, total)} [{_severity(f)}]{aliases}")
        if f.advisory.summary:
            lines.append(f"    {f.advisory.summary}")
        lines += [f"    {line}" for line in _where(f)]
    for entry, covered in report.expired:
        what = f"; {', '.join(sorted({f.id for f in covered}))} reported again" if covered else ""
        lines.append(f"ignore {entry.id} ({entry.key}) expired on {entry.until}: it no longer applies{what}")
    for f in report.ignored:
        assert f.ignored is not None
        lines.append(f"ignored until {f.ignored.until}: {headline(f, total)} ({f.ignored.reason})")
    for entry in report.unused:
        lines.append(f"ignore {entry.id} ({entry.key}) matches no finding; remove it when it is not needed")
    for w in report.withdrawn:
        lines.append(f"withdrawn, not counted: {w.id} in {w.package} {w.version} (withdrawn {w.withdrawn})")
    failing = len(report.failing)
    if not report.findings:
        lines.append("no known vulnerabilities")
    else:
        lines.append(
            f"{counted(len(report.findings), 'finding')}, {failing} at or above --fail-on {report.fail_on}"
            + ("" if failing else ": exit 0")
        )
    return "\n".join(lines) + "\n"


def render_markdown(report: AuditReport, limit: int = COMMENT_LIMIT - MARGIN) -> str:
    """A pull-request comment: a heading, a summary, a table of findings (worst first), notes on
    ignores; cut before GitHub's comment limit with a note."""
    total = len(report.cells)
    lines = ["## Vulnerability audit", ""]
    if not report.findings:
        lines.append(
            f"No known vulnerabilities in {counted(total, 'cell')} ({counted(report.queried, 'package version')}, {report.source})."
        )
    else:
        lines += [
            f"**{counted(len(report.findings), 'finding')} in {counted(total, 'cell')}; {len(report.failing)} at or above "
            f"`--fail-on {report.fail_on}`.**",
            "",
            "| severity | advisory | package | cells | fixed in |",
            "|---|---|---|---|---|",
        ]
        for f in report.findings:
            link = f"[{f.id}]({f.advisory.url})"
            cells = f"{len(f.cells)} of {total}" + "".join(f"<br>{_md(w)}" for w in _where(f))
            fixed = str(f.fixed[0]) if f.fixed else "—"
            mark = "⚠️ " if fails(f.severity, report.fail_on) else ""
            lines.append(
                f"| {mark}{_severity(f)} | {link} {_md(f.advisory.summary)} | {f.package} {f.version} | {cells} | {fixed} |"
            )
    notes = [f"- ignore `{e.id}` expired on {e.until}: it no longer applies" for e, _ in report.expired]
    notes += [f"- ignored until {f.ignored.until}: {f.id} in {f.package} {f.version} ({_md(f.ignored.reason)})"
              for f in report.ignored if f.ignored is not None]  # fmt: skip
    notes += [f"- withdrawn, not counted: {w.id} in {w.package} {w.version}" for w in report.withdrawn]
    if notes:
        lines += ["", *notes]
    text = "\n".join(lines) + "\n"
    if len(text.encode()) > limit:
        cut = text.encode()[: limit - 200].decode("utf-8", "ignore").rsplit("\n", 1)[0]
        text = cut + "\n\n_… cut to fit a comment; run `lockgen audit` locally for the rest._\n"
    return text


def _md(text: str) -> str:
    import html

    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def as_dict(report: AuditReport) -> dict[str, Any]:
    def finding(f: Finding) -> dict[str, Any]:
        return {
            "id": f.id, "aliases": list(f.aliases), "package": f.package, "version": str(f.version),
            "summary": f.advisory.summary, "url": f.advisory.url, "severity": f.severity.label,
            "score": str(f.score) if f.score is not None else None, "fixed": [str(v) for v in f.fixed],
            "fails": fails(f.severity, report.fail_on), "cells": list(f.cells), "builds": f.builds,
            "locations": [{"cell": h.cell, "layer": h.layer, "lock": h.lock, "line": h.line, "version": str(h.version)}
                          for h in f.hits],
            "ignored": {"reason": f.ignored.reason, "until": f.ignored.until} if f.ignored else None,
        }  # fmt: skip

    return {
        "source": report.source, "cells": list(report.cells), "queried": report.queried,
        "fail_on": report.fail_on, "findings": [finding(f) for f in report.findings],
        "ignored": [finding(f) for f in report.ignored],
        "expired_ignores": [{"id": e.id, "until": e.until, "reason": e.reason, "key": e.key,
                             "findings": sorted({f.id for f in c})} for e, c in report.expired],
        "unused_ignores": [{"id": e.id, "key": e.key} for e in report.unused],
        "withdrawn": [{"id": w.id, "package": w.package, "version": str(w.version), "withdrawn": w.withdrawn}
                      for w in report.withdrawn],
        "not_checked": sorted({f"{p.name} ({p.entry.url or 'no version'})" for p in report.skipped}),
        "exit_code": report.exit_code,
    }  # fmt: skip


def render_json(report: AuditReport) -> str:
    return json.dumps(as_dict(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_sarif(report: AuditReport) -> str:
    """SARIF 2.1.0 (the subset GitHub code scanning reads): see the module docstring."""
    total = len(report.cells)
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for f in report.findings:
        if f.id not in rules:
            rules[f.id] = {
                "id": f.id,
                "name": f.id.replace("-", ""),
                "shortDescription": {"text": f.advisory.summary or f.id},
                "fullDescription": {"text": (f.advisory.details or f.advisory.summary or f.id)[:1000]},
                "helpUri": f.advisory.url,
                "help": {
                    "text": f"{f.advisory.summary or f.id}\n\nAliases: {', '.join(f.aliases) or 'none'}. {f.advisory.url}"
                },
                "properties": {"tags": ["security", "vulnerability"], "security-severity": _security_severity(f)},
            }
        for lock, line, versions in _per_lock(f):
            fix = f"; fixed in {f.fixed[0]}" if f.fixed else "; no fixed version published"
            results.append({
                "ruleId": f.id,
                "level": "error" if fails(f.severity, report.fail_on) else "warning",
                "message": {"text": f"{f.package} {versions} is affected by {f.id} ({len(f.cells)} of {counted(total, 'cell')}){fix}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": lock}, "region": {"startLine": line}}}],
                "partialFingerprints": {"lockgenFinding/v1": f"{f.id}:{f.package}:{f.version}:{lock}"},
            })  # fmt: skip
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "lockgen audit", "informationUri": "https://osv.dev",
                                "semanticVersion": __version__, "rules": [rules[k] for k in sorted(rules)]}},
            "results": results,
        }],
    }  # fmt: skip
    return json.dumps(log, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _per_lock(f: Finding) -> list[tuple[str, int, str]]:
    seen: dict[str, tuple[int, set[str]]] = {}
    for hit in f.hits:
        seen.setdefault(hit.lock, (hit.line, set()))[1].add(str(hit.version))
    return [(lock, line, ", ".join(sorted(v))) for lock, (line, v) in sorted(seen.items())]


def _security_severity(f: Finding) -> str:
    if f.score is not None:
        return str(f.score)
    return _BAND.get(f.severity, "5.5")


FORMATS: dict[str, Callable[[AuditReport], str]] = {
    "text": render_text,
    "markdown": render_markdown,
    "json": render_json,
    "sarif": render_sarif,
}
