"""The hardware tables: ``[detect]`` (read by the vendored selector) and ``[backends.<family>]``
(the backend invariants' families, CASES C27)."""

from __future__ import annotations

import dataclasses
from typing import Any

from lockgen.cellselect import DetectRules, RulesError
from lockgen.config.fields import NAME_PATTERN, Checks
from lockgen.config.model import DEFAULT_BACKENDS, MINOR_POLICIES, BackendFamily

__all__ = ["BackendChecks"]

_BACKEND_KEYS = {"flavors", "packages", "versioned", "gpu", "builds", "minor"}


class BackendChecks(Checks):
    def detect(self, value: Any) -> DetectRules | None:
        """``[detect]``: the seed's hardware rules, validated by the stdlib-only selector that
        installers vendor (:class:`lockgen.cellselect.DetectRules`), so both read them alike."""
        if value is None:
            return None
        try:
            return DetectRules.from_dict(value, self.key("detect"))
        except RulesError as exc:
            for path, message in exc.problems:
                self.problem_at(path, message)
            return None

    def backends(self, value: Any) -> tuple[BackendFamily, ...]:
        """``[backends.<family>]``: the backend invariants' families (CASES C27). A table named
        like a default family replaces the keys it gives; another name adds a family (it needs
        ``flavors``). Patterns are checked here; :mod:`lockgen.resolve.invariants` applies them."""
        families = {family.name: family for family in DEFAULT_BACKENDS}
        if not isinstance(value, dict):
            self.problem(("backends",), "must be a table of backend families, such as [backends.cuda]")
            return tuple(families.values())
        for name, table in value.items():
            path = ("backends", name)
            if not isinstance(table, dict):
                self.problem(path, "must be a table with flavors, packages, versioned, gpu, builds and/or minor")
                continue
            self.unknown(table, _BACKEND_KEYS, path)
            changes: dict[str, Any] = {}
            for key, placeholder in (
                ("flavors", "{version}"),
                ("packages", "{major}"),
                ("versioned", None),
                ("builds", None),
            ):
                if key in table:
                    changes[key] = self.patterns(table[key], (*path, key), placeholder, globs=key != "builds")
            if "gpu" in table:
                if isinstance(table["gpu"], bool):
                    changes["gpu"] = table["gpu"]
                else:
                    self.problem((*path, "gpu"), "must be true or false")
            if "minor" in table:  # lockgen.resolve.compat: how an extension's minor may differ
                if table["minor"] in MINOR_POLICIES:
                    changes["minor"] = table["minor"]
                else:
                    self.problem(
                        (*path, "minor"),
                        f"must be one of {', '.join(repr(m) for m in MINOR_POLICIES)} (docs/layers-labels-builds.md)",
                    )
            if name in families:
                families[name] = dataclasses.replace(families[name], **changes)
            elif not changes.get("flavors"):
                self.problem(
                    (*path, "flavors"), 'a new backend family needs flavors, such as ["xpu"] or ["cu{version}"]'
                )
            else:
                families[name] = BackendFamily(name=name, **changes)
        return tuple(families.values())

    def patterns(
        self, value: Any, path: tuple[str | int, ...], placeholder: str | None, globs: bool = True
    ) -> tuple[str, ...]:
        """An array of package-name (or flavor) patterns; ``placeholder`` may appear once in each."""
        items = self.strings(value, path)
        for item in items:
            bare = item.replace(placeholder, "", 1) if placeholder else item
            if not NAME_PATTERN.match(bare) or "{" in bare or (not globs and ("*" in bare or "?" in bare)):
                allowed = "letters, digits, '.', '_', '-'" + (", * and ?" if globs else "")
                once = f", and {placeholder} at most once" if placeholder else ""
                self.problem(path, f"{item!r} is not a pattern of {allowed}{once}")
        return items
