"""The settings a config's top level and each rule may give (``requirements``, ``pins``, ``vars``, …).

:meth:`SettingsChecks.settings` reads them into :class:`~lockgen.config.model.Settings`; each problem
names its key path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lockgen.config.fields import NAME_PATTERN, VAR_NAME, Checks, KeyPath
from lockgen.config.model import ARCHES, EXTENDABLE, MANYLINUX_LEVELS, PRERELEASE_MODES, RESERVED_NAMES, Settings

__all__ = ["SETTING_KEYS", "SettingsChecks"]

_MACOS = re.compile(r"^\d{2}\.\d{1,2}$")

SETTING_KEYS = {
    "requirements", "constraints", "overrides", "vars", "index-url", "find-links",
    "manylinux", "macos", "skip", "exclude-newer", "pins", "use", "flavor", "pinned",
    "optional", "no-deps", "allow-build", "alias", "interpreter", "allow-mix", "replace", "prerelease", "prerelease-package",
    "exclude-newer-package", *(f"extend-{key}" for key in EXTENDABLE),
}  # fmt: skip


class SettingsChecks(Checks):
    def settings(self, table: dict[str, Any], path: KeyPath) -> Settings:
        values: dict[str, Any] = {}
        for key in ("requirements", "constraints", "overrides"):
            if key in table:
                values[key] = self.template_name(table[key], (*path, key))
        if "vars" in table:
            values["vars"] = self.vars(table["vars"], (*path, "vars"))
        if "index-url" in table:
            values["index_url"] = self.url(table["index-url"], (*path, "index-url"))
        if "find-links" in table:
            values["find_links"] = self.find_links(table["find-links"], (*path, "find-links"))
        if "manylinux" in table:
            level = self.string(table["manylinux"], (*path, "manylinux"))
            if level is not None and level not in MANYLINUX_LEVELS:
                self.problem(
                    (*path, "manylinux"), f"unsupported level {level!r}; use one of {', '.join(MANYLINUX_LEVELS)}"
                )
            values["manylinux"] = level
        if "macos" in table:
            macos = self.string(table["macos"], (*path, "macos"))
            if macos is not None and not _MACOS.match(macos):
                self.problem((*path, "macos"), f'bad macOS version {macos!r}; write it like "14.0" or "10.15"')
            values["macos"] = macos
        if "skip" in table:
            reason = self.string(table["skip"], (*path, "skip"))
            if reason is not None and not reason.strip():
                self.problem((*path, "skip"), "give the reason the cell is skipped")
            values["skip"] = reason
        if "exclude-newer" in table:
            values["exclude_newer"] = self.timestamp(table["exclude-newer"], (*path, "exclude-newer"))
        if "pins" in table:
            values["pins"] = self.pins(table["pins"], (*path, "pins"))
        if "use" in table:
            values["sources"] = self.strings(table["use"], (*path, "use"))
        for key in ("pinned", "optional", "no-deps", "allow-build"):
            if key in table:
                values[key.replace("-", "_")] = self.strings(table[key], (*path, key))
        for key in ("flavor", "alias", "interpreter"):
            if key in table:
                values[key] = self.string(table[key], (*path, key))
        if "allow-mix" in table:
            values["allow_mix"] = self.allow_mix(table["allow-mix"], (*path, "allow-mix"))
        if "replace" in table:
            values["replace"] = self.package_names(table["replace"], (*path, "replace"))
        values.update(self.prerelease(table, path))
        if "exclude-newer-package" in table:
            values["exclude_newer_package"] = self.exclude_newer_package(
                table["exclude-newer-package"], (*path, "exclude-newer-package")
            )
        extend = {}
        for key, name in EXTENDABLE.items():
            if f"extend-{key}" in table:
                where = (*path, f"extend-{key}")
                raw = table[f"extend-{key}"]
                extend[name] = self.package_names(raw, where) if key == "replace" else self.strings(raw, where)
        if extend:
            values["extend"] = extend
        if values.get("interpreter") is not None and values["interpreter"] not in ARCHES:
            self.problem(
                (*path, "interpreter"), f"unknown arch {values['interpreter']!r}; use one of {', '.join(ARCHES)}"
            )
        return Settings(**values)

    def package_names(self, value: Any, path: KeyPath) -> tuple[str, ...]:
        """An array of package names (``replace``), canonical; each bad one named by its index."""
        from packaging.utils import InvalidName, canonicalize_name

        names = []
        for index, name in enumerate(self.strings(value, path)):
            try:
                names.append(canonicalize_name(name, validate=True))
            except InvalidName:
                self.problem((*path, index), f"{name!r} is not a package name")
        return tuple(names)

    def exclude_newer_package(self, value: Any, path: KeyPath) -> dict[str, str]:
        """``exclude-newer-package``: package -> ``false`` (the ``exclude-newer`` cutoff does not
        apply to it) or a date or timestamp of its own (uv ``--exclude-newer-package``)."""
        from packaging.utils import InvalidName, canonicalize_name

        if not isinstance(value, dict):
            self.problem(path, 'must be a table of package = false, "2026-01-01T00:00:00Z" or "3 days"')
            return {}
        result = {}
        for name, cutoff in value.items():
            try:
                key = canonicalize_name(name, validate=True)
            except InvalidName:
                self.problem((*path, name), "not a valid package name")
                continue
            if cutoff is False:
                result[key] = "false"
            elif cutoff is True:
                self.problem((*path, name), "use false (no cutoff for it) or a date or timestamp of its own")
            else:
                stamp = self.timestamp(cutoff, (*path, name))
                if stamp is not None:
                    result[key] = stamp
        return dict(sorted(result.items()))

    def allow_mix(self, value: Any, path: tuple[str | int, ...]) -> dict[str, str]:
        """``allow-mix``: package (glob) -> why this cell's backend mix is intended (C27)."""
        if not isinstance(value, dict):
            self.problem(path, 'must be a table of package = "why the mix is intended"')
            return {}
        result = {}
        for name, reason in value.items():
            if not NAME_PATTERN.match(name):
                self.problem((*path, name), "not a package name or pattern (letters, digits, '.', '_', '-', * and ?)")
            elif not isinstance(reason, str) or not reason.strip():
                self.problem((*path, name), "give the reason the mix is intended")
            else:
                result[name] = reason
        return result

    def template_name(self, value: Any, path: KeyPath) -> str | None:
        name = self.string(value, path)
        if name is not None and (name.startswith("/") or ".." in Path(name).parts or not name):
            self.problem(path, f"{name!r} must be a path inside the templates folder")
        return name

    def vars(self, value: Any, path: KeyPath) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.problem(path, "must be a table")
            return {}
        for name in value:
            if not VAR_NAME.match(name):
                self.problem((*path, name), "not a valid template variable name (letters, digits, _)")
            elif name in RESERVED_NAMES:
                self.problem((*path, name), f"{name!r} is a built-in template variable; pick another name")
            elif name in self.extra:
                self.problem(
                    (*path, name), f"{name!r} is a matrix axis (a template variable of its own); pick another name"
                )
        return dict(value)

    def find_links(self, value: Any, path: KeyPath) -> dict[str, tuple[str, ...]]:
        """``find-links`` is a table: package (or any label) -> URL/folder or list of them."""
        if not isinstance(value, dict):
            self.problem(path, 'must be a table such as { torch = "https://…/torch/" }')
            return {}
        result = {}
        for name, links in value.items():
            items = links if isinstance(links, list) else [links]
            if not all(isinstance(item, str) and item for item in items):
                self.problem((*path, name), "must be a URL or folder, or a list of them")
                continue
            result[name] = tuple(items)
        return result

    def pins(self, value: Any, path: KeyPath = ("pins",)) -> dict[str, str]:
        """``pins``: package -> a version (``"2.13.0"``) or a PEP 440 specifier (``"==2.8.0.*"``,
        ``">=2.7,<2.8"``; see :meth:`lockgen.plan.plan.Plan.pin_requirements` for what ``pinned``
        makes of each)."""
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.utils import InvalidName, canonicalize_name
        from packaging.version import InvalidVersion, Version

        if not isinstance(value, dict):
            self.problem(path, 'must be a table of package = "version" or "specifier"')
            return {}
        pins = {}
        for name, version in value.items():
            try:
                canonicalize_name(name, validate=True)
            except InvalidName:
                self.problem((*path, name), "not a valid package name")
                continue
            if not isinstance(version, str):
                self.problem((*path, name), "must be a version string")
                continue
            try:
                Version(version)
            except InvalidVersion:
                try:
                    if not str(SpecifierSet(version)):
                        raise InvalidSpecifier(version)
                except InvalidSpecifier:
                    self.problem(
                        (*path, name),
                        f'{version!r} is not a valid version or version specifier (PEP 440), such as "2.8.0" or "==2.8.0.*"',
                    )
                    continue
            pins[name] = version
        return pins

    def prerelease(self, table: dict[str, Any], path: KeyPath) -> dict[str, Any]:
        """``prerelease`` (uv ``--prerelease``) and ``prerelease-package`` (package -> mode, uv
        ``--prerelease-package``), as :class:`Settings` fields."""
        from packaging.utils import InvalidName, canonicalize_name

        values: dict[str, Any] = {}
        modes = ", ".join(PRERELEASE_MODES)
        if "prerelease" in table:
            mode = self.string(table["prerelease"], (*path, "prerelease"))
            if mode is not None and mode not in PRERELEASE_MODES:
                self.problem((*path, "prerelease"), f"unknown mode {mode!r}; use one of {modes}")
            values["prerelease"] = mode
        if "prerelease-package" in table:
            raw = table["prerelease-package"]
            key = (*path, "prerelease-package")
            if not isinstance(raw, dict):
                self.problem(key, 'must be a table of package = "mode", such as { torch = "allow" }')
                return values
            packages = {}
            for name, mode in raw.items():
                try:
                    canonical = canonicalize_name(name, validate=True)
                except InvalidName:
                    self.problem((*key, name), "not a valid package name")
                    continue
                if mode not in PRERELEASE_MODES:
                    self.problem((*key, name), f"unknown mode {mode!r}; use one of {modes}")
                    continue
                packages[canonical] = mode
            values["prerelease_package"] = packages
        return values
