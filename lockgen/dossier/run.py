"""The cores of ``lockgen audit``, ``lockgen sbom`` and ``lockgen licenses``: plain values in,
``(output, exit code)`` out; the CLI only prints. Nothing is sent anywhere unless the command
asks for it: ``audit`` asks its OSV source (the API, or nothing for an export on disk),
``licenses`` and ``sbom`` fetch metadata files from the indexes the locks came from (none with
``offline``, which reads only the cache)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path

from lockgen.config.model import DEFAULT_OSV
from lockgen.project import Project
from lockgen.runtime.errors import UsageError

__all__ = ["audit_command", "licenses_command", "osv_source", "sbom_command"]


def osv_source(project: Project, given: str | None, mirrors: Sequence[str]) -> tuple[str, bool]:
    """The OSV source to read: ``--osv`` when given, else ``[audit] osv``, else the public API.
    Returns it and whether the user named one (``lockgen diff`` asks only then)."""
    configured = given or project.config.audit.osv
    return (configured or DEFAULT_OSV), configured is not None


def audit_command(
    project: Project,
    cells: Sequence[str],
    *,
    osv: str | None = None,
    fail_on: str | None = None,
    fmt: str = "text",
    mirrors: Sequence[str] = (),
    today: datetime.date | None = None,
) -> tuple[str, int]:
    """``lockgen audit [CELL…]``: the report in ``fmt`` and the exit code (1 at or above
    ``fail_on``, default ``[audit] fail-on``). Raises :class:`UsageError` for an unknown format or
    cell, :class:`~lockgen.osv.AuditFailed` when the source cannot be read."""
    from lockgen.dossier import inventory
    from lockgen.dossier.audit import audit
    from lockgen.dossier.auditformat import FORMATS
    from lockgen.osv import open_source

    render = FORMATS.get(fmt)
    if render is None:
        raise UsageError(f"unknown --format {fmt!r}; use one of {', '.join(FORMATS)}")
    items = inventory.read(project.root, project.config.locks, cells, artifacts=False)
    value, _ = osv_source(project, osv, mirrors)
    source = open_source(value, project.root, project.mirrors(mirrors))
    settings = project.config.audit
    report = audit(items, source, settings.ignore, fail_on or settings.fail_on, today)
    return render(report), report.exit_code


def licenses_command(
    project: Project, cells: Sequence[str], *, fmt: str = "text", mirrors: Sequence[str] = (), offline: bool = False
) -> tuple[str, int]:
    """``lockgen licenses [CELL…]``: each package's license per cell and merged, checked against
    ``[licenses]`` (exit 1 naming cell, package and license for each violation)."""
    from lockgen.dossier import inventory
    from lockgen.dossier.licenses import check, render_json, render_text
    from lockgen.dossier.metadata import MetadataCache

    if fmt not in ("text", "json"):
        raise UsageError(f"unknown --format {fmt!r}; use text or json")
    items = inventory.read(project.root, project.config.locks, cells)
    with MetadataCache(project.root, project.mirrors(mirrors), offline=offline) as cache:
        report = check(items, cache, project.config.licenses)
    return (render_json(report) if fmt == "json" else render_text(report)), report.exit_code


def sbom_command(
    project: Project,
    cells: Sequence[str],
    *,
    output: str | None,
    mirrors: Sequence[str] = (),
    offline: bool = False,
    serial: str | None = None,
    timestamp: bool = False,
) -> tuple[str, int]:
    """``lockgen sbom [CELL…] [-o DIR]``: a CycloneDX 1.6 JSON SBOM per cell and one merged. With
    ``output``, the files ``<cell>.cdx.json`` and ``matrix.cdx.json`` are written into that folder
    (a summary is returned); without, the merged SBOM is returned (one cell's when one is named)."""
    from lockgen.dossier import inventory
    from lockgen.dossier.metadata import MetadataCache
    from lockgen.dossier.sbom import build_all

    items = inventory.read(project.root, project.config.locks, cells)
    with MetadataCache(project.root, project.mirrors(mirrors), offline=offline) as cache:
        documents = build_all(project, items, cache, serial=serial, timestamp=timestamp)
    if output is None:
        key = items.cells[0] if len(cells) == 1 else "matrix"
        return documents[key], 0
    folder = Path(output)
    folder = folder if folder.is_absolute() else Path.cwd() / folder
    from lockgen.runtime.writing import write_error

    lines = []
    for name, text in documents.items():
        path = folder / f"{name}.cdx.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise write_error(str(path), exc) from None
        lines.append(f"wrote {path}")
    return "\n".join(lines) + "\n", 0
