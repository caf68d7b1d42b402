"""``lockgen licenses``: each locked package's license, per cell and merged, and the policy.

The license comes from the package's core metadata (:mod:`.metadata`): PEP 639's
``License-Expression`` (an SPDX expression, normalized by ``packaging.licenses``), else the
``License`` field when it is an SPDX expression, else the ``License ::`` classifiers that name one
license (:data:`CLASSIFIERS`; several are read as a choice, ``A OR B``), else the ``License``
text as a name. A license is *proprietary* when its expression names a ``LicenseRef-…Proprietary``,
its classifier is ``Other/Proprietary License`` or its text says so (NVIDIA's CUDA runtime wheels:
``LicenseRef-NVIDIA-Proprietary``): shown as such, for whoever redistributes the locks.

The policy (``[licenses]``): ``deny`` ids fail a package whose expression cannot avoid them;
with ``allow``, every license a package needs must be allowed (``OR``: one alternative is
enough; ``AND``: all); a package without a known license fails when ``allow`` is set;
``exceptions`` (name or glob -> reason) accept a package whatever its license. The expression
is parsed with ``license-expression`` (the library cyclonedx-python-lib uses).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.metadata import RawMetadata
from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.config.model import LicensePolicy
from lockgen.dossier.inventory import Inventory
from lockgen.dossier.metadata import Fetched, MetadataCache
from lockgen.runtime.words import counted

__all__ = ["CLASSIFIERS", "License", "LicenseReport", "Violation", "check", "license_of", "render_json", "render_text"]

#: Trove classifiers that name exactly one SPDX license (ambiguous ones, "BSD License" or a GPL
#: without a version, are kept as their name).
CLASSIFIERS = {
    "License :: OSI Approved :: MIT License": "MIT",
    "License :: OSI Approved :: MIT No Attribution License (MIT-0)": "MIT-0",
    "License :: OSI Approved :: Apache Software License": "Apache-2.0",
    "License :: OSI Approved :: ISC License (ISCL)": "ISC",
    "License :: OSI Approved :: Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "License :: OSI Approved :: Python Software Foundation License": "PSF-2.0",
    "License :: OSI Approved :: The Unlicense (Unlicense)": "Unlicense",
    "License :: OSI Approved :: zlib/libpng License": "Zlib",
    "License :: OSI Approved :: Boost Software License 1.0 (BSL-1.0)": "BSL-1.0",
    "License :: OSI Approved :: Historical Permission Notice and Disclaimer (HPND)": "HPND",
    "License :: OSI Approved :: GNU General Public License v2 (GPLv2)": "GPL-2.0-only",
    "License :: OSI Approved :: GNU General Public License v2 or later (GPLv2+)": "GPL-2.0-or-later",
    "License :: OSI Approved :: GNU General Public License v3 (GPLv3)": "GPL-3.0-only",
    "License :: OSI Approved :: GNU General Public License v3 or later (GPLv3+)": "GPL-3.0-or-later",
    "License :: OSI Approved :: GNU Lesser General Public License v2 (LGPLv2)": "LGPL-2.0-only",
    "License :: OSI Approved :: GNU Lesser General Public License v2 or later (LGPLv2+)": "LGPL-2.0-or-later",
    "License :: OSI Approved :: GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0-only",
    "License :: OSI Approved :: GNU Lesser General Public License v3 or later (LGPLv3+)": "LGPL-3.0-or-later",
    "License :: OSI Approved :: GNU Affero General Public License v3": "AGPL-3.0-only",
    "License :: OSI Approved :: GNU Affero General Public License v3 or later (AGPLv3+)": "AGPL-3.0-or-later",
    "License :: OSI Approved :: Eclipse Public License 2.0 (EPL-2.0)": "EPL-2.0",
    "License :: CC0 1.0 Universal (CC0 1.0) Public Domain Dedication": "CC0-1.0",
}
PROPRIETARY_CLASSIFIER = "License :: Other/Proprietary License"


@dataclass(frozen=True, kw_only=True)
class License:
    """A package's license: an SPDX ``expression`` when one is known, else a ``name`` (free
    text, a classifier); ``source`` says which metadata field it came from; ``missing`` why none
    is known; ``proprietary`` as the module docstring says."""

    expression: str | None = None
    name: str | None = None
    source: str = ""
    proprietary: bool = False
    missing: str | None = None

    @property
    def shown(self) -> str:
        text = self.expression or self.name or f"unknown: {self.missing}"
        return f"{text} (proprietary)" if self.proprietary else text


def license_of(raw: RawMetadata) -> License:
    """The license core metadata ``raw`` gives (see the module docstring)."""
    classifiers = [c for c in raw.get("classifiers", []) if c.startswith("License ::")]
    proprietary = PROPRIETARY_CLASSIFIER in classifiers
    expression = raw.get("license_expression")
    if expression:
        spdx = _spdx(expression)
        return License(
            expression=spdx, name=None if spdx else expression, source="License-Expression",
            proprietary=proprietary or ("licenseref-" in expression.lower() and "proprietary" in expression.lower()),
        )  # fmt: skip
    text = (raw.get("license") or "").strip()
    short = bool(text) and "\n" not in text and len(text) < 100  # a name, not a license's whole text
    # only a name says "proprietary" (a license's full text may use the word about other code)
    said = short and "proprietary" in text.lower()
    if short:
        spdx = _spdx(text)
        if spdx:
            return License(expression=spdx, source="License", proprietary=proprietary or said)
    mapped = sorted({CLASSIFIERS[c] for c in classifiers if c in CLASSIFIERS})
    if mapped:
        return License(expression=" OR ".join(mapped), source="classifiers", proprietary=proprietary)
    if short:
        return License(name=text, source="License", proprietary=proprietary or said)
    if classifiers:
        name = classifiers[0].rsplit(" :: ", 1)[-1]
        return License(name=name, source="classifiers", proprietary=proprietary)
    if text:
        return License(name=text.splitlines()[0].strip()[:100], source="License", proprietary=proprietary)
    return License(missing="its metadata names no license")


def _spdx(text: str) -> str | None:
    from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression

    try:
        return str(canonicalize_license_expression(text))
    except InvalidLicenseExpression:
        return None


# --------------------------------------------------------------------------- the policy


@dataclass(frozen=True, kw_only=True)
class Violation:
    cell: str
    layer: str
    package: NormalizedName
    version: Version
    license: License
    why: str

    def text(self) -> str:
        where = f"{self.cell}" + (f" (layer {self.layer})" if self.layer != "main" else "")
        return f"{where}: {self.package} {self.version}: {self.license.shown}: {self.why}"


@dataclass(frozen=True, kw_only=True)
class Row:
    """One package version across the matrix: its license and the cells (and layers) locking it."""

    package: NormalizedName
    version: Version
    license: License
    cells: tuple[str, ...]
    layers: tuple[str, ...]
    exception: str | None = None


@dataclass(frozen=True, kw_only=True)
class LicenseReport:
    cells: tuple[str, ...]
    rows: tuple[Row, ...]
    per_cell: Mapping[str, tuple[Row, ...]]
    violations: tuple[Violation, ...]
    policy: LicensePolicy

    @property
    def exit_code(self) -> int:
        return 1 if self.violations else 0


def check(inventory: Inventory, cache: MetadataCache, policy: LicensePolicy) -> LicenseReport:
    """Every package's license (one metadata file per package version), and ``policy``'s
    violations, each naming cell, package and license."""
    fetched = cache.fetch(inventory.packages)
    licenses = {key: _license(value) for key, value in fetched.items()}
    rows: dict[tuple[NormalizedName, Version], dict[str, Any]] = {}
    violations = []
    for item in inventory.packages:
        if item.version is None:
            continue
        key = (item.name, item.version)
        found = licenses.get(key, License(missing="not looked up"))
        row = rows.setdefault(key, {"cells": set(), "layers": set(), "license": found})
        row["cells"].add(item.cell)
        row["layers"].add(item.layer)
        exception = _exception(policy, item.name)
        why = None if exception is not None else _verdict(policy, found)
        if why is not None:
            violations.append(Violation(cell=item.cell, layer=item.layer, package=item.name, version=item.version,
                                        license=found, why=why))  # fmt: skip
    table = tuple(
        Row(package=n, version=v, license=r["license"], cells=tuple(sorted(r["cells"])),
            layers=tuple(sorted(r["layers"])), exception=_exception(policy, n))
        for (n, v), r in sorted(rows.items())
    )  # fmt: skip
    per_cell = {
        cell: tuple(r for r in table if cell in r.cells) for cell in inventory.cells
    }  # a row per package version of the cell
    return LicenseReport(
        cells=inventory.cells, rows=table, per_cell=per_cell, violations=tuple(violations), policy=policy
    )


def _license(value: Fetched) -> License:
    if value.raw is None:
        return License(missing=value.missing or "no metadata")
    return license_of(value.raw)


def _exception(policy: LicensePolicy, name: str) -> str | None:
    for pattern, reason in policy.exceptions.items():
        if pattern == name or fnmatch.fnmatchcase(name, pattern):
            return reason
    return None


def _verdict(policy: LicensePolicy, found: License) -> str | None:
    """Why ``found`` breaks ``policy`` (None: it does not)."""
    if not policy.configured:
        return None
    text = found.expression or found.name
    if text is None:
        return "no license is known, and [licenses] allow lists the accepted ones" if policy.allow else None
    ok, keys = _evaluate(text, set(policy.allow), set(policy.deny))
    if ok:
        return None
    denied = sorted(k for k in keys if k in policy.deny)
    if denied:
        return f"{', '.join(denied)} denied by [licenses] deny"
    return "not allowed by [licenses] allow"


def _evaluate(text: str, allow: set[str], deny: set[str]) -> tuple[bool, set[str]]:
    """Whether the expression ``text`` can be met by allowed, undenied licenses, and every key it
    names. A text that is no expression is one key (a name)."""
    from license_expression import (  # type: ignore[import-untyped]  # the library ships no type hints
        ExpressionError,
        LicenseSymbol,
        LicenseWithExceptionSymbol,
        Licensing,
    )

    licensing = Licensing()  # no license database: the ids are SPDX already (packaging normalized them)
    try:
        parsed = licensing.parse(text, validate=False, strict=False)
    except ExpressionError:
        parsed = None
    if parsed is None:
        return (text not in deny and (not allow or text in allow)), {text}
    keys: set[str] = set()

    def ok(node: Any) -> bool:
        if isinstance(node, LicenseWithExceptionSymbol):
            whole = f"{node.license_symbol.key} WITH {node.exception_symbol.key}"
            keys.update({whole, node.license_symbol.key})
            if whole in deny or node.license_symbol.key in deny:
                return False
            return not allow or whole in allow or node.license_symbol.key in allow
        if isinstance(node, LicenseSymbol):
            keys.add(node.key)
            return node.key not in deny and (not allow or node.key in allow)
        results = [ok(arg) for arg in node.args]
        return all(results) if isinstance(node, licensing.AND) else any(results)

    return ok(parsed), keys


# --------------------------------------------------------------------------- output


def render_text(report: LicenseReport) -> str:
    total = len(report.cells)
    width = max((len(f"{r.package} {r.version}") for r in report.rows), default=10) + 2
    lines = [f"licenses of {counted(len(report.rows), 'package version')} in {counted(total, 'cell')}"]
    for r in report.rows:
        cells = "" if len(r.cells) == total else f"  [{len(r.cells)} of {counted(total, 'cell')}]"
        layers = "" if r.layers == ("main",) else f"  (layer {', '.join(x for x in r.layers if x != 'main')})"
        note = f"  exception: {r.exception}" if r.exception else ""
        proprietary = "  redistribution needs the vendor's terms" if r.license.proprietary else ""
        lines.append(f"{f'{r.package} {r.version}':<{width}}{r.license.shown}{cells}{layers}{proprietary}{note}")
    vendors = sorted({r.package for r in report.rows if r.license.proprietary})
    if vendors:
        lines.append(f"proprietary: {', '.join(vendors)} (NVIDIA's runtime packages among them: read their EULA before redistributing)"
                     if any(v.startswith("nvidia-") for v in vendors) else f"proprietary: {', '.join(vendors)}")  # fmt: skip
    if report.policy.configured:
        if report.violations:
            lines.append(f"{counted(len(report.violations), 'license problem')}:")
            lines += [f"  {v.text()}" for v in report.violations]
        else:
            lines.append("every license meets [licenses]")
    return "\n".join(lines) + "\n"


def _license_dict(found: License) -> dict[str, Any]:
    return {"expression": found.expression, "name": found.name, "source": found.source,
            "proprietary": found.proprietary, "missing": found.missing}  # fmt: skip


def render_json(report: LicenseReport) -> str:
    def row(r: Row) -> dict[str, Any]:
        return {"package": r.package, "version": str(r.version), "license": _license_dict(r.license),
                "cells": list(r.cells), "layers": list(r.layers), "exception": r.exception}  # fmt: skip

    data = {
        "cells": {cell: [row(r) for r in rows] for cell, rows in report.per_cell.items()},
        "merged": [row(r) for r in report.rows],
        "violations": [{"cell": v.cell, "layer": v.layer, "package": v.package, "version": str(v.version),
                        "license": v.license.shown, "why": v.why} for v in report.violations],
        "exit_code": report.exit_code,
    }  # fmt: skip
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
