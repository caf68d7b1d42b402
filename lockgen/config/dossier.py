"""The supply-chain tables: ``[audit]`` (the OSV source, ``fail-on``, the ignore list) and
``[licenses]`` (the license policy), read by :mod:`lockgen.dossier`."""

from __future__ import annotations

import datetime
from typing import Any

from packaging.utils import canonicalize_name

from lockgen.config.fields import NAME_PATTERN, Checks, KeyPath
from lockgen.config.model import SEVERITIES, AuditIgnore, AuditSettings, CoverageSettings, LicensePolicy

__all__ = ["DossierChecks"]

_AUDIT_KEYS = {"osv", "fail-on", "ignore"}
_IGNORE_KEYS = {"id", "reason", "until", "packages"}
_LICENSE_KEYS = {"allow", "deny", "exceptions"}
_COVERAGE_KEYS = {"read", "budget-mb", "budget-seconds"}


class DossierChecks(Checks):
    def audit(self, value: Any) -> AuditSettings:
        """``[audit]``: ``osv`` (an ``https://`` OSV API, or a folder or ``.zip`` export: a path
        relative to the project), ``fail-on`` (one of :data:`SEVERITIES`) and ``ignore`` entries,
        each with an ``id``, a ``reason`` and an ``until`` date (issue 22: an ignore without an
        expiry would hide an advisory for good)."""
        if not isinstance(value, dict):
            self.problem(("audit",), "must be a table with osv, fail-on and/or ignore")
            return AuditSettings()
        self.unknown(value, _AUDIT_KEYS, ("audit",))
        osv = self.string(value["osv"], ("audit", "osv")) if "osv" in value else None
        if osv is not None and not osv.strip():
            self.problem(("audit", "osv"), "must name an OSV API URL or an export folder or zip")
            osv = None
        fail_on = value.get("fail-on", "any")
        if fail_on not in SEVERITIES:
            self.problem(("audit", "fail-on"), f"{fail_on!r} is not one of {', '.join(SEVERITIES)}")
            fail_on = "any"
        ignores = [
            self.ignore(entry, ("audit", "ignore", i))
            for i, entry in enumerate(self.table_list(value, "ignore", ("audit",)))
        ]
        return AuditSettings(osv=osv, fail_on=fail_on, ignore=tuple(i for i in ignores if i is not None))

    def ignore(self, entry: dict[str, Any], path: KeyPath) -> AuditIgnore | None:
        self.unknown(entry, _IGNORE_KEYS, path)
        missing = [key for key in ("id", "reason", "until") if key not in entry]
        if missing:
            self.problem(path, f"needs {', '.join(missing)} (an ignore says why, and until when it applies)")
            return None
        ident = self.string(entry["id"], (*path, "id"))
        reason = self.string(entry["reason"], (*path, "reason"))
        until = _date(entry["until"])
        if until is None:
            self.problem((*path, "until"), f"{entry['until']!r} is not a date; write it as 2026-12-31")
        if reason is not None and not reason.strip():
            self.problem((*path, "reason"), "must say why the advisory is ignored")
        packages = self.strings(entry.get("packages", []), (*path, "packages"))
        if ident is None or reason is None or until is None:
            return None
        return AuditIgnore(
            id=ident.strip(), reason=reason.strip(), until=until, key=self.key(*path),
            packages=tuple(canonicalize_name(p) for p in packages),
        )  # fmt: skip

    def coverage(self, value: Any) -> CoverageSettings:
        """``[coverage]``: ``read`` (true or false: the off switch), ``budget-mb`` (a positive
        integer of megabytes) and ``budget-seconds`` (a positive number)."""
        if not isinstance(value, dict):
            self.problem(("coverage",), "must be a table with read, budget-mb and/or budget-seconds")
            return CoverageSettings()
        self.unknown(value, _COVERAGE_KEYS, ("coverage",))
        default = CoverageSettings()
        read = value.get("read", default.read)
        if not isinstance(read, bool):
            self.problem(("coverage", "read"), f"{read!r} is not true or false")
            read = default.read
        budget = value.get("budget-mb", default.budget_mb)
        if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
            self.problem(("coverage", "budget-mb"), f"{budget!r} is not a positive number of megabytes (4000)")
            budget = default.budget_mb
        seconds = value.get("budget-seconds", default.budget_seconds)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < 10**7:
            self.problem(("coverage", "budget-seconds"), f"{seconds!r} is not a positive number of seconds (600)")
            seconds = default.budget_seconds
        return CoverageSettings(read=read, budget_mb=budget, budget_seconds=float(seconds))

    def licenses(self, value: Any) -> LicensePolicy:
        """``[licenses]``: ``allow`` and ``deny`` (SPDX license ids, ``LicenseRef-…`` too) and
        ``exceptions`` (package name or glob -> the reason it is accepted whatever its license)."""
        if not isinstance(value, dict):
            self.problem(("licenses",), "must be a table with allow, deny and/or exceptions")
            return LicensePolicy()
        self.unknown(value, _LICENSE_KEYS, ("licenses",))
        lists = {key: self.strings(value.get(key, []), ("licenses", key)) for key in ("allow", "deny")}
        both = sorted(set(lists["allow"]) & set(lists["deny"]))
        if both:
            self.problem(("licenses", "deny"), f"{', '.join(both)}: both allowed and denied; keep one")
        exceptions: dict[str, str] = {}
        table = value.get("exceptions", {})
        if not isinstance(table, dict):
            self.problem(("licenses", "exceptions"), 'must be a table of package = "reason"')
            table = {}
        for name, reason in table.items():
            where = ("licenses", "exceptions", name)
            if not NAME_PATTERN.match(name):
                self.problem(where, "must be a package name or a glob of names (letters, digits, . _ - * ?)")
            elif not isinstance(reason, str) or not reason.strip():
                self.problem(where, "must be a string saying why the package is accepted")
            else:
                exceptions[canonicalize_name(name) if "*" not in name and "?" not in name else name.lower()] = reason
        return LicensePolicy(allow=lists["allow"], deny=lists["deny"], exceptions=exceptions)


def _date(value: Any) -> str | None:
    """``until`` as ``YYYY-MM-DD``: a TOML date, or a string in that form."""
    if isinstance(value, datetime.datetime):
        return value.date().isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            return None
    return None
