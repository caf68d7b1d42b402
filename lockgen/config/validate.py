"""Turn a TOML document into :class:`~lockgen.config.model.Config`, collecting every problem.

Each problem names its key path (``tool.lockgen.rules[2].match.backend``); all of them are raised
together as one :class:`~lockgen.errors.ConfigError`.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lockgen.config.model import (
    ARCHES, AXES, DEFAULT_BACKENDS, DEFAULT_INDEX_URL, DEFAULT_MACOS, DEFAULT_MANYLINUX, MANYLINUX_LEVELS, OSES,
    PRERELEASE_MODES, RESERVED_NAMES, BackendFamily, Config, Include, ProjectMetadata, Rule, Settings, Source,
)  # fmt: skip
from lockgen.errors import ConfigError
from lockgen.select import DetectRules, RulesError

_LABEL = re.compile(r"^[a-z0-9][a-z0-9._]*$")
_MACOS = re.compile(r"^\d{2}\.\d{1,2}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$")
_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_URL = re.compile(r"^(https?://[^\s/]|file://)")
#: Package-name patterns of ``backends`` and ``allow-mix``: name characters, ``*``, ``?``.
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9._*?-]+$")
_BACKEND_KEYS = {"flavors", "packages", "versioned", "gpu", "builds"}
#: A key path below the config's prefix: ``("rules", 2, "match", "backend")``.
KeyPath = tuple[str | int, ...]

_SETTING_KEYS = {
    "requirements", "constraints", "overrides", "vars", "index-url", "find-links",
    "manylinux", "macos", "skip", "exclude-newer", "pins", "use", "flavor", "pinned",
    "optional", "no-deps", "allow-build", "alias", "interpreter", "allow-mix", "replace", "prerelease", "prerelease-package",
}  # fmt: skip
_TOP_KEYS = {"templates", "locks", "matrix", "rules", "mirrors", "sources", "detect", "backends", "project"} | _SETTING_KEYS
_MATRIX_KEYS = ("include", "exclude")
_SOURCE_KINDS = ("index", "find-links", "urls")
#: What every cell fills in source URLs (lockgen.plan.sources.placeholders); rule variables too.
_SOURCE_PLACEHOLDERS = ("backend", "flavor", "python_tag", "os", "arch", "python")


def _is_version(value: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        Version(value)
    except InvalidVersion:
        return False
    return bool(value)


def _is_python(value: str) -> bool:
    """A target Python written major.minor, 3.x (``packaging`` parses it)."""
    from packaging.version import InvalidVersion, Version

    try:
        version = Version(value)
    except InvalidVersion:
        return False
    return str(version) == value and len(version.release) == 2 and version.major == 3


class Validator:
    def __init__(self, source: str, prefix: str, read_toml: Callable[[str], dict[str, Any]] | None = None):
        self.source = source
        self.prefix = prefix
        self.read_toml = read_toml  # TOML text -> table, for the project's pyproject.toml (load.parse_toml)
        self.problems: list[str] = []
        self.extra: tuple[str, ...] = ()  # the matrix's extra axes, once read

    @property
    def axis_names(self) -> tuple[str, ...]:
        return (*AXES, *self.extra)

    def key(self, *parts: str | int) -> str:
        text = self.prefix
        for part in parts:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text

    def problem(self, path: KeyPath, message: str) -> None:
        self.problems.append(f"{self.key(*path)}: {message}")

    def config(self, table: dict[str, Any], root: Path) -> Config:
        self.unknown(table, _TOP_KEYS, ())
        matrix = table.get("matrix", {})
        if not isinstance(matrix, dict):
            self.problem(("matrix",), "must be a table")
            matrix = {}
        self.extra = self.extra_axes(matrix)
        axes = {axis: self.axis_values(matrix, axis) for axis in self.axis_names}
        exclude = tuple(
            self.selector(entry, ("matrix", "exclude", i))
            for i, entry in enumerate(self.table_list(matrix, "exclude", ("matrix",)))
        )
        include = tuple(
            self.include(entry, ("matrix", "include", i))
            for i, entry in enumerate(self.table_list(matrix, "include", ("matrix",)))
        )
        rules = tuple(
            self.rule(entry, ("rules", i))
            for i, entry in enumerate(self.table_list(table, "rules", ()))
        )
        defaults = Settings(
            requirements="requirements.in.j2",
            index_url=DEFAULT_INDEX_URL,
            manylinux=DEFAULT_MANYLINUX,
            macos=DEFAULT_MACOS,
        ).merged(self.settings(table, ()))
        config = Config(
            root=root,
            source=self.source,
            key_prefix=self.prefix,
            templates=self.folder(root, table, "templates"),
            locks=self.folder(root, table, "locks"),
            defaults=defaults,
            axes=axes,
            exclude=exclude,
            include=include,
            rules=rules,
            sources=self.sources(table.get("sources", {})),
            mirrors=self.mirrors(table.get("mirrors", {})),
            detect=self.detect(table.get("detect")),
            backends=self.backends(table.get("backends", {})),
            extra_axes=self.extra,
            project=self.project(table.get("project"), root),
        )
        config = self.credentials(config)
        self.source_placeholders(config)
        self.references(config)
        self.matrix_values(config)
        if self.problems:
            raise ConfigError(self.source, self.problems)
        return config

    # -- pieces

    def unknown(self, table: dict[str, Any], allowed: set[str] | frozenset[str], path: KeyPath) -> None:
        for key in table:
            if key not in allowed:
                self.problem((*path, key), f"unknown key; expected one of {', '.join(sorted(allowed))}")

    def table_list(self, table: dict[str, Any], key: str, path: KeyPath) -> list[dict[str, Any]]:
        value = table.get(key, [])
        if not isinstance(value, list):
            self.problem((*path, key), "must be an array of tables")
            return []
        good = []
        for i, entry in enumerate(value):
            if isinstance(entry, dict):
                good.append(entry)
            else:
                self.problem((*path, key, i), "must be a table")
                good.append({})
        return good

    def axis_value(self, axis: str, value: Any, path: KeyPath) -> str | None:
        if not isinstance(value, str):
            self.problem(path, f"must be a string, not {type(value).__name__}")
            return None
        if axis == "os" and value not in OSES:
            self.problem(path, f"unknown os {value!r}; use one of {', '.join(OSES)}")
        elif axis == "arch" and value not in ARCHES:
            self.problem(path, f"unknown arch {value!r}; use one of {', '.join(ARCHES)}")
        elif axis == "backend" and not _LABEL.match(value):
            self.problem(path, f"bad backend label {value!r}; use lower-case letters, digits, '.' or '_'")
        elif axis == "python" and not _is_python(value):
            self.problem(path, f"bad python version {value!r}; write major.minor such as \"3.12\"")
        elif axis not in AXES and not _LABEL.match(value):
            self.problem(path, f"bad {axis} value {value!r}; use lower-case letters, digits, '.' or '_' (cell names join values with '-')")
        else:
            return value
        return None

    def axis_values(self, matrix: dict[str, Any], axis: str) -> tuple[str, ...]:
        raw = matrix.get(axis, [])
        if not isinstance(raw, list):
            self.problem(("matrix", axis), "must be an array of strings")
            return ()
        values = [self.axis_value(axis, v, ("matrix", axis, i)) for i, v in enumerate(raw)]
        return tuple(dict.fromkeys(v for v in values if v is not None))

    def selector(self, table: dict[str, Any], path: KeyPath, empty_ok: bool = False) -> dict[str, tuple[str, ...]]:
        """A table of axis -> value or list of values (exclude entries, rule matches); the axes
        are the four built-in ones and the matrix's extra axes."""
        self.unknown(table, frozenset(self.axis_names), path)
        if not empty_ok and not any(axis in table for axis in self.axis_names):
            self.problem(path, f"names no axis, so it would match every cell; give {_listed(self.axis_names)}")
        result = {}
        for axis in self.axis_names:
            if axis not in table:
                continue
            raw = table[axis]
            items = raw if isinstance(raw, list) else [raw]
            if not items:
                self.problem((*path, axis), "must not be empty")
            values = [self.axis_value(axis, v, (*path, axis)) for v in items]
            result[axis] = tuple(v for v in values if v is not None)
        return result

    def include(self, table: dict[str, Any], path: KeyPath) -> Include:
        self.unknown(table, set(self.axis_names) | {"vars"}, path)
        axes = {}
        for axis in self.axis_names:
            if axis in table:
                value = self.axis_value(axis, table[axis], (*path, axis))
                if value is not None:
                    axes[axis] = value
        if not any(axis in table for axis in self.axis_names):
            self.problem(path, f"names no axis; give {_listed(self.axis_names)}")
        return Include(axes=axes, vars=self.vars(table.get("vars", {}), (*path, "vars")))

    def rule(self, table: dict[str, Any], path: KeyPath) -> Rule:
        self.unknown(table, _SETTING_KEYS | {"match"}, path)
        match = table.get("match", {})
        if not isinstance(match, dict):
            self.problem((*path, "match"), "must be a table of axis = value or [values]")
            match = {}
        return Rule(match=self.selector(match, (*path, "match"), empty_ok=True), settings=self.settings(table, path))

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
                self.problem((*path, "manylinux"), f"unsupported level {level!r}; use one of {', '.join(MANYLINUX_LEVELS)}")
            values["manylinux"] = level
        if "macos" in table:
            macos = self.string(table["macos"], (*path, "macos"))
            if macos is not None and not _MACOS.match(macos):
                self.problem((*path, "macos"), f"bad macOS version {macos!r}; write it like \"14.0\" or \"10.15\"")
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
            values["sources"] = self.strings(table["use"], (*path, "use"), allow_empty=True)
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
        if values.get("interpreter") is not None and values["interpreter"] not in ARCHES:
            self.problem((*path, "interpreter"), f"unknown arch {values['interpreter']!r}; use one of {', '.join(ARCHES)}")
        return Settings(**values)

    def strings(self, value: Any, path: KeyPath, allow_empty: bool = True) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.problem(path, "must be an array of non-empty strings")
            return ()
        return tuple(value)

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

    def sources(self, value: Any) -> dict[str, Source]:
        from packaging.utils import canonicalize_name

        if not isinstance(value, dict):
            self.problem(("sources",), "must be a table of named sources")
            return {}
        result = {}
        for name, table in value.items():
            path = ("sources", name)
            if not isinstance(table, dict):
                self.problem(path, "must be a table")
                continue
            self.unknown(table, {*_SOURCE_KINDS, "packages", "local", "local-if", "labels"}, path)
            kinds = [k for k in _SOURCE_KINDS if k in table]
            if len(kinds) != 1:
                self.problem(path, "give exactly one of index = URL, find-links = URL, urls = [URL, …]")
                continue
            kind = kinds[0]
            raw = table[kind]
            urls = self.strings(raw, (*path, kind)) if kind == "urls" else (self.string(raw, (*path, kind)),)
            packages = self.strings(table.get("packages", []), (*path, "packages"))
            if not packages:
                self.problem((*path, "packages"), "name the packages this source may serve")
            local = self.string(table["local"], (*path, "local")) if "local" in table else None
            if local is not None and kind != "find-links":
                self.problem((*path, "local"), "only a find-links source can have a local folder")
            if local is not None and (Path(local).is_absolute() or ".." in Path(local).parts or not local.strip()):
                self.problem((*path, "local"), f"{local!r} must be a folder inside the project")
            if "local-if" in table and (local is None or not table["local-if"]):
                self.problem((*path, "local-if"), "needs a non-empty glob and a local folder to look in")
            for url in (u for u in urls if u):
                if kind != "find-links" and not _URL.match(url):
                    self.problem((*path, kind), f"{url!r} is not a URL; write it with its scheme, such as https://{url.split('://')[-1]}")
            result[name] = Source(
                name=name, kind=kind, urls=tuple(u for u in urls if u), local=local,
                packages=tuple(canonicalize_name(p) for p in packages),
                local_if=self.string(table.get("local-if", "*.whl"), (*path, "local-if")) or "*.whl",
                labels=self.source_labels(table, path, kind, packages),
            )  # fmt: skip
        return result

    def detect(self, value: Any) -> DetectRules | None:
        """``[detect]``: the seed's hardware rules, validated by the stdlib-only selector that
        installers vendor (:class:`lockgen.select.DetectRules`), so both read them alike."""
        if value is None:
            return None
        try:
            return DetectRules.from_dict(value, self.key("detect"))
        except RulesError as exc:
            self.problems += [f"{path}: {message}" for path, message in exc.problems]
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
                self.problem(path, "must be a table with flavors, packages, versioned, gpu and/or builds")
                continue
            self.unknown(table, _BACKEND_KEYS, path)
            changes: dict[str, Any] = {}
            for key, placeholder in (("flavors", "{version}"), ("packages", "{major}"), ("versioned", None), ("builds", None)):
                if key in table:
                    changes[key] = self.patterns(table[key], (*path, key), placeholder, globs=key != "builds")
            if "gpu" in table:
                if isinstance(table["gpu"], bool):
                    changes["gpu"] = table["gpu"]
                else:
                    self.problem((*path, "gpu"), "must be true or false")
            if name in families:
                families[name] = dataclasses.replace(families[name], **changes)
            elif not changes.get("flavors"):
                self.problem((*path, "flavors"), 'a new backend family needs flavors, such as ["xpu"] or ["cu{version}"]')
            else:
                families[name] = BackendFamily(name=name, **changes)
        return tuple(families.values())

    def patterns(self, value: Any, path: tuple[str | int, ...], placeholder: str | None, globs: bool = True) -> tuple[str, ...]:
        """An array of package-name (or flavor) patterns; ``placeholder`` may appear once in each."""
        items = self.strings(value, path)
        for item in items:
            bare = item.replace(placeholder, "", 1) if placeholder else item
            if not _NAME_PATTERN.match(bare) or "{" in bare or (not globs and ("*" in bare or "?" in bare)):
                allowed = "letters, digits, '.', '_', '-'" + (", * and ?" if globs else "")
                once = f", and {placeholder} at most once" if placeholder else ""
                self.problem(path, f"{item!r} is not a pattern of {allowed}{once}")
        return items

    def allow_mix(self, value: Any, path: tuple[str | int, ...]) -> dict[str, str]:
        """``allow-mix``: package (glob) -> why this cell's backend mix is intended (C27)."""
        if not isinstance(value, dict):
            self.problem(path, 'must be a table of package = "why the mix is intended"')
            return {}
        result = {}
        for name, reason in value.items():
            if not _NAME_PATTERN.match(name):
                self.problem((*path, name), "not a package name or pattern (letters, digits, '.', '_', '-', * and ?)")
            elif not isinstance(reason, str) or not reason.strip():
                self.problem((*path, name), "give the reason the mix is intended")
            else:
                result[name] = reason
        return result

    def matrix_values(self, config: Config) -> None:
        """Axis values named by exclude entries, rule matches and includes that only extend cells
        must be values of their axis (an include naming every axis may add values): a misspelt
        value would silently add or miss cells (issue "Trust", item 8)."""
        names = config.axis_names
        known = {axis: list(config.axes[axis]) for axis in names}
        for inc in config.include:
            if len(inc.axes) == len(names):
                for axis, value in inc.axes.items():
                    if value not in known[axis]:
                        known[axis].append(value)
        named: list[tuple[tuple[str | int, ...], Mapping[str, Sequence[str]]]] = [
            (("matrix", "exclude", i), sel) for i, sel in enumerate(config.exclude)
        ]
        named += [(("matrix", "include", i), {a: (v,) for a, v in inc.axes.items()}) for i, inc in enumerate(config.include) if len(inc.axes) < len(names)]
        named += [(("rules", i, "match"), rule.match) for i, rule in enumerate(config.rules)]
        for path, selector in named:
            for axis, values in selector.items():
                for value in values:
                    if value not in known[axis]:
                        listed = ", ".join(known[axis]) or "none"
                        missing = ", ".join(a for a in names if a not in selector)
                        every = "all four axes" if not config.extra_axes else f"every axis ({', '.join(names)})"
                        hint = f"; an include adds a cell only when it names {every} (missing {missing})" if path[1] == "include" else ""
                        self.problem((*path, axis), f"{value!r} is not a value of the {axis} axis ({listed}){hint}")

    def mirrors(self, value: Any) -> dict[str, str]:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            self.problem(("mirrors",), 'must be a table of "canonical URL prefix" = "mirror URL prefix"')
            return {}
        for canonical, mirror in value.items():
            if not (_URL.match(canonical) and _URL.match(mirror)):
                self.problem(("mirrors", canonical), f"{canonical!r} = {mirror!r}: both must be URL prefixes, such as \"https://pypi.org/simple\" = \"https://mirror.corp.example/pypi/simple\"")
        return dict(value)

    # -- credentials in URL fields (issue 9, item 8)

    def credentials(self, config: Config) -> Config:
        """``config`` with every URL field public (``user:password@`` split off by
        :func:`lockgen.credentials.split`) and the logins in ``Config.credentials`` (realm ->
        userinfo as written). ``${VAR}`` may appear only in the userinfo, and a URL with a login
        needs a fixed host; two different logins for one realm are a problem."""
        logins: dict[str, str] = {}

        def public(url: str, path: KeyPath) -> str:
            from lockgen.credentials import env_references, realm, split

            bare, userinfo = split(url)
            if env_references(bare):
                self.problem(path, "${VAR} references are expanded only in the user:password@ part of a URL; move it there")
            if userinfo is None:
                return url
            where = realm(bare)
            if "{" in where:
                self.problem(path, "a URL with a login needs a fixed host (no {placeholder} in it)")
            elif logins.setdefault(where, userinfo) != userinfo:
                self.problem(path, f"another URL gives a different login for {where}; give one login per host")
            return bare

        def settings(value: Settings, path: KeyPath) -> Settings:
            index = public(value.index_url, (*path, "index-url")) if value.index_url else value.index_url
            links = {k: tuple(public(u, (*path, "find-links", k)) for u in v) for k, v in value.find_links.items()}
            return dataclasses.replace(value, index_url=index, find_links=links)

        defaults = settings(config.defaults, ())
        rules = tuple(dataclasses.replace(r, settings=settings(r.settings, ("rules", i))) for i, r in enumerate(config.rules))
        sources = {
            name: dataclasses.replace(s, urls=tuple(public(u, ("sources", name, s.kind)) for u in s.urls))
            for name, s in config.sources.items()
        }
        mirrors = {public(k, ("mirrors", k)): public(v, ("mirrors", k)) for k, v in config.mirrors.items()}
        return dataclasses.replace(
            config, defaults=defaults, rules=rules, sources=sources, mirrors=mirrors, credentials=logins
        )  # fmt: skip

    def source_labels(self, table: dict[str, Any], path: KeyPath, kind: str, packages: Sequence[str]) -> dict[str, str]:
        """``labels`` of an index source: package -> the local version label its versions carry
        on that index (``"{flavor}"``, ``""`` for none, ``"*"`` for whatever the index serves;
        issue 9, C25). Keys must be packages the source names."""
        from packaging.utils import canonicalize_name

        if "labels" not in table:
            return {}
        value, key = table["labels"], (*path, "labels")
        if kind != "index":
            self.problem(key, "only an index source has labels")
            return {}
        if not isinstance(value, dict):
            self.problem(key, 'must be a table of package = "{flavor}" (the label), "" (none) or "*" (as served)')
            return {}
        named = {canonicalize_name(p) for p in packages}
        labels: dict[str, str] = {}
        for name, label in value.items():
            if canonicalize_name(name) not in named:
                self.problem((*key, name), "not one of the source's packages; add it to packages")
            elif not isinstance(label, str) or (label != "*" and not re.fullmatch(r"[A-Za-z0-9._{}]*", label)):
                self.problem((*key, name), 'must be a label such as "{flavor}" or "cu128", "" (none) or "*" (as served)')
            else:
                labels[canonicalize_name(name)] = label
        return labels

    def source_placeholders(self, config: Config) -> None:
        """Source URLs, ``local-if`` and ``labels`` may use ``{backend}``, ``{flavor}``,
        ``{python_tag}``, ``{os}``, ``{arch}``, ``{python}`` and any rule or include variable
        (``{wheel_set}``, issue 9): a name no ``vars`` table defines is a problem here; one a
        cell lacks is an error when that cell is planned (:func:`lockgen.plan.sources.cell_sources`)."""
        import string

        names = {*_SOURCE_PLACEHOLDERS, *config.extra_axes, *config.defaults.vars}
        names.update(v for rule in config.rules for v in rule.settings.vars)
        names.update(v for include in config.include for v in include.vars)
        listed = ", ".join(f"{{{n}}}" for n in (*_SOURCE_PLACEHOLDERS, *config.extra_axes))
        for name, source in config.sources.items():
            texts = [(source.kind, u) for u in source.urls] + [("local-if", source.local_if)]
            texts += [(f"labels.{package}", label) for package, label in source.labels.items() if label != "*"]
            for key, text in texts:
                try:
                    fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
                except ValueError as exc:
                    self.problem(("sources", name, key), f"bad placeholder in {text!r} ({exc}); write {{name}}, and {{{{ for a brace")
                    continue
                for field in fields:
                    if field not in names:
                        self.problem(
                            ("sources", name, key),
                            f"bad placeholder '{field}' in {text!r}; use {listed} or a variable of vars",
                        )

    def references(self, config: Config) -> None:
        """Names used in settings must exist: sources, pinned pins."""
        for path, settings in [((), config.defaults)] + [(("rules", i), r.settings) for i, r in enumerate(config.rules)]:
            for name in settings.sources or ():
                if name not in config.sources:
                    known = ", ".join(sorted(config.sources)) or "none defined"
                    self.problem((*path, "use"), f"unknown source {name!r} (sources: {known})")

    def string(self, value: Any, path: KeyPath) -> str | None:
        if isinstance(value, str):
            return value
        self.problem(path, f"must be a string, not {type(value).__name__}")
        return None

    def template_name(self, value: Any, path: KeyPath) -> str | None:
        name = self.string(value, path)
        if name is not None and (name.startswith("/") or ".." in Path(name).parts or not name):
            self.problem(path, f"{name!r} must be a path inside the templates folder")
        return name

    def url(self, value: Any, path: KeyPath) -> str | None:
        """A URL with its scheme (uv would read ``pypi.org/simple`` as a folder)."""
        text = self.string(value, path)
        if text is not None and not _URL.match(text):
            self.problem(path, f"{text!r} is not a URL; write it with its scheme, such as https://{text.split('://')[-1]}")
        return text

    def folder(self, root: Path, table: dict[str, Any], key: str) -> str:
        """The ``templates``/``locks`` folder: inside the project, and not a file."""
        value = self.rel_path(table, key, key)
        if (root / value).exists() and not (root / value).is_dir():
            self.problem((key,), f"{value!r} is a file; name a folder")
        return value

    def rel_path(self, table: dict[str, Any], key: str, default: str) -> str:
        value = self.string(table.get(key, default), (key,))
        if not value or not value.strip(" ./"):
            self.problem((key,), "must name a folder inside the project")
            return default
        if Path(value).is_absolute() or ".." in Path(value).parts:
            self.problem((key,), f"{value!r} must be a relative path inside the project")
        return value

    def vars(self, value: Any, path: KeyPath) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.problem(path, "must be a table")
            return {}
        for name in value:
            if not _VAR_NAME.match(name):
                self.problem((*path, name), "not a valid template variable name (letters, digits, _)")
            elif name in RESERVED_NAMES:
                self.problem((*path, name), f"{name!r} is a built-in template variable; pick another name")
            elif name in self.extra:
                self.problem((*path, name), f"{name!r} is a matrix axis (a template variable of its own); pick another name")
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

    def timestamp(self, value: Any, path: KeyPath) -> str | None:
        text = value.isoformat() if isinstance(value, (_dt.date, _dt.datetime)) else value
        text = self.string(text, path)
        if text is None:
            return None
        try:
            if not (_DATE.match(text) or _TIMESTAMP.match(text)):
                raise ValueError(text)
            parsed = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            self.problem(path, f"{text!r} is not a date or RFC 3339 timestamp (2026-11-25T00:00:00Z)")
            return None
        if _DATE.match(text):  # uv reads a bare date in the local time zone: pin it to UTC midnight
            return f"{text}T00:00:00Z"
        if parsed.tzinfo is None:
            self.problem(path, f"{text!r} needs a time zone (end it with Z) so it means the same everywhere")
            return None
        return text

    def pins(self, value: Any, path: KeyPath = ("pins",)) -> dict[str, str]:
        """``pins``: package -> a version (``"2.13.0"``) or a PEP 440 specifier (``"==2.8.0.*"``,
        ``">=2.7,<2.8"``; see :func:`lockgen.plan.plan.pin_requirements` for what ``pinned``
        makes of each)."""
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.utils import InvalidName, canonicalize_name
        from packaging.version import InvalidVersion, Version

        if not isinstance(value, dict):
            self.problem(path, "must be a table of package = \"version\" or \"specifier\"")
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
                    self.problem((*path, name), f"{version!r} is not a valid version or version specifier (PEP 440), such as \"2.8.0\" or \"==2.8.0.*\"")
                    continue
            pins[name] = version
        return pins

    # -- extra axes, prereleases, the project's metadata (issue 9)

    def extra_axes(self, matrix: dict[str, Any]) -> tuple[str, ...]:
        """The matrix keys beyond os, arch, backend, python, include and exclude: extra named axes
        (``variant = ["full", "portable"]``), in declaration order. An axis name must be a template
        variable name that is not built in; one close to a built-in key is taken for a typo."""
        import difflib

        extra = []
        for name in matrix:
            if name in AXES or name in _MATRIX_KEYS:
                continue
            close = difflib.get_close_matches(name, (*AXES, *_MATRIX_KEYS), n=1, cutoff=0.75)
            if close:
                self.problem(("matrix", name), f"unknown key; did you mean {close[0]!r}? (another name adds an axis)")
            elif not _VAR_NAME.match(name) or name in RESERVED_NAMES:
                self.problem(("matrix", name), "an extra axis needs a template variable name (letters, digits, _) that is not built in")
            else:
                extra.append(name)
        return tuple(extra)

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

    def project(self, value: Any, root: Path) -> ProjectMetadata | None:
        """The ``project`` template variable: ``[project]`` of the pyproject.toml that the
        ``project`` key names (a path inside the project), else of the config's own
        ``pyproject.toml`` (or the one beside ``lockgen.toml``) when it has a ``[project]`` table."""
        if value is None:
            if not (root / "pyproject.toml").is_file():
                return None
            return self.project_file(root, "pyproject.toml", required=False)
        name = self.string(value, ("project",))
        if name is None:
            return None
        if not name.strip() or Path(name).is_absolute() or ".." in Path(name).parts:
            self.problem(("project",), f"{name!r} must be the path of a pyproject.toml inside the project")
            return None
        if not (root / name).is_file():
            self.problem(("project",), f"{name}: no such file; name the project's pyproject.toml")
            return None
        return self.project_file(root, name, required=True)

    def project_file(self, root: Path, name: str, required: bool) -> ProjectMetadata | None:
        """Read ``[project]`` of ``root/name`` (PEP 621): static dependency lists, each entry a
        PEP 508 requirement; problems name the file and the key."""
        if self.read_toml is None:
            return None
        try:
            table = self.read_toml((root / name).read_text(encoding="utf-8")).get("project")
        except Exception as exc:  # OSError, TOML syntax
            self.problem(("project",), f"{name}: cannot read it as TOML: {exc}")
            return None
        if not isinstance(table, dict):
            if required:
                self.problem(("project",), f"{name}: has no [project] table")
            return None
        dynamic = table.get("dynamic", [])
        dynamic = set(dynamic) if isinstance(dynamic, list) else set()
        deps = None if "dependencies" in dynamic else self.requirement_list(table.get("dependencies", []), name, "project.dependencies")
        raw = table.get("optional-dependencies", {})
        if not isinstance(raw, dict):
            self.problem(("project",), f"{name}: project.optional-dependencies must be a table of lists")
            raw = {}
        groups = {group: self.requirement_list(reqs, name, f"project.optional-dependencies.{group}") for group, reqs in raw.items()}
        strings = {k: table[k] if isinstance(table.get(k), str) else None for k in ("name", "version", "requires-python")}
        return ProjectMetadata(
            path=name, name=strings["name"], version=strings["version"], requires_python=strings["requires-python"],
            dependencies=deps, optional_dependencies=None if "optional-dependencies" in dynamic else groups,
        )  # fmt: skip

    def requirement_list(self, value: Any, name: str, key: str) -> tuple[str, ...]:
        from packaging.requirements import InvalidRequirement, Requirement

        if not isinstance(value, list):
            self.problem(("project",), f"{name}: {key} must be a list of requirement strings")
            return ()
        result = []
        for i, item in enumerate(value):
            try:
                Requirement(item if isinstance(item, str) else "")
            except InvalidRequirement as exc:
                self.problem(("project",), f"{name}: {key}[{i}]: {item!r} is not a requirement: {exc}")
                continue
            result.append(item)
        return tuple(result)


def _listed(names: Sequence[str]) -> str:
    """``os, arch, backend and/or python`` (every axis, for messages)."""
    return f"{', '.join(names[:-1])} and/or {names[-1]}"
