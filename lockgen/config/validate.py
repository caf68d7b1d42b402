"""Turn a TOML document into :class:`~lockgen.config.model.Config`, collecting every problem.

Each problem names its key path (``tool.lockgen.rules[2].match.backend``); all of them are raised
together as one :class:`~lockgen.runtime.errors.ConfigError`. This module reads the matrix (axes, exclude,
include) and the rules; the other subjects are mixins of :class:`Validator`: settings
(:mod:`.settings`), sources, mirrors and credentials (:mod:`.sources`), ``[detect]`` and
``[backends]`` (:mod:`.backends`), the project's metadata (:mod:`.metadata`), ``[audit]`` and ``[licenses]`` (:mod:`.dossier`), over the shared base
(:mod:`.fields`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lockgen.config.backends import BackendChecks
from lockgen.config.dossier import DossierChecks
from lockgen.config.fields import VAR_NAME, KeyPath
from lockgen.config.metadata import MetadataChecks
from lockgen.config.model import (
    ARCHES,
    AXES,
    DEFAULT_INDEX_URL,
    DEFAULT_MACOS,
    DEFAULT_MANYLINUX,
    HARMONIZE_MODES,
    OSES,
    RESERVED_NAMES,
    Config,
    Harmonize,
    Include,
    Rule,
    Settings,
)
from lockgen.config.settings import SETTING_KEYS, SettingsChecks
from lockgen.config.sources import SourceChecks
from lockgen.runtime.errors import ConfigError, UsageError

__all__ = ["KeyPath", "Validator", "check_option", "is_python"]

_LABEL = re.compile(r"^[a-z0-9][a-z0-9._]*$")
#: Keys only the top level has; it takes every setting too.
_TOP_ONLY = {
    "templates", "locks", "matrix", "rules", "mirrors", "sources", "detect", "backends", "project", "audit", "licenses",
    "coverage",
    "harmonize", "harmonize-package",
}  # fmt: skip
_TOP_KEYS = _TOP_ONLY | SETTING_KEYS
_MATRIX_KEYS = ("include", "exclude")


def is_python(value: str) -> bool:
    """A target Python written major.minor, 3.x (``packaging`` parses it)."""
    from packaging.version import InvalidVersion, Version

    try:
        version = Version(value)
    except InvalidVersion:
        return False
    return str(version) == value and len(version.release) == 2 and version.major == 3


class Validator(SettingsChecks, SourceChecks, BackendChecks, MetadataChecks, DossierChecks):
    """Validate one config table (see :meth:`config`); ``problems`` collects the records."""

    matrix_given = True  # the config has a [matrix] table (set by config())

    def config(self, table: dict[str, Any], root: Path) -> Config:
        self.unknown(table, _TOP_KEYS, ())
        matrix = table.get("matrix", {})
        if not isinstance(matrix, dict):
            self.problem(("matrix",), "must be a table")
            matrix = {}
        self.matrix_given = isinstance(table.get("matrix"), dict)
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
        rules = tuple(self.rule(entry, ("rules", i)) for i, entry in enumerate(self.table_list(table, "rules", ())))
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
            audit=self.audit(table.get("audit", {})),
            licenses=self.licenses(table.get("licenses", {})),
            coverage=self.coverage(table.get("coverage", {})),
            harmonize=self.harmonize(table),
        )
        config = self.credentials(config)
        self.source_placeholders(config)
        self.references(config)
        self.matrix_values(config)
        if self.problems:
            raise ConfigError(self.source, self.problems)
        return config

    def harmonize(self, table: dict[str, Any]) -> Harmonize:
        """``harmonize`` (one of :data:`HARMONIZE_MODES`) and ``harmonize-package`` (package ->
        mode: the exceptions)."""
        from packaging.utils import InvalidName, canonicalize_name

        modes = ", ".join(f'"{m}"' for m in HARMONIZE_MODES)
        mode = HARMONIZE_MODES[0]
        if "harmonize" in table:
            given = self.string(table["harmonize"], ("harmonize",))
            if given is not None and given not in HARMONIZE_MODES:
                self.problem(("harmonize",), f"unknown mode {given!r}; use one of {modes}")
            elif given is not None:
                mode = given
        packages: dict[str, str] = {}
        raw = table.get("harmonize-package", {})
        if not isinstance(raw, dict):
            self.problem(("harmonize-package",), 'must be a table of package = "mode", such as { numpy = "off" }')
            raw = {}
        for name, value in raw.items():
            try:
                canonical = canonicalize_name(name, validate=True)
            except InvalidName:
                self.problem(("harmonize-package", name), "not a valid package name")
                continue
            if value not in HARMONIZE_MODES:
                self.problem(("harmonize-package", name), f"unknown mode {value!r}; use one of {modes}")
                continue
            packages[canonical] = value
        return Harmonize(mode, dict(sorted(packages.items())))

    # -- the matrix and the rules

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
            elif not VAR_NAME.match(name) or name in RESERVED_NAMES:
                self.problem(
                    ("matrix", name),
                    "an extra axis needs a template variable name (letters, digits, _) that is not built in",
                )
            else:
                extra.append(name)
        return tuple(extra)

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
        elif axis == "python" and not is_python(value):
            self.problem(path, f'bad python version {value!r}; write major.minor such as "3.12"')
        elif axis not in AXES and not _LABEL.match(value):
            self.problem(
                path,
                f"bad {axis} value {value!r}; use lower-case letters, digits, '.' or '_' (cell names join values with '-')",
            )
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
        self.unknown(table, SETTING_KEYS | {"match"}, path)
        match = table.get("match", {})
        if not isinstance(match, dict):
            self.problem((*path, "match"), "must be a table of axis = value or [values]")
            match = {}
        return Rule(match=self.selector(match, (*path, "match"), empty_ok=True), settings=self.settings(table, path))

    def matrix_values(self, config: Config) -> None:
        """Axis values named by exclude entries, rule matches and includes that only extend cells
        must be values of their axis (an include naming every axis may add values): a misspelt
        value would silently add or miss cells (issue "Trust", item 8). Without a matrix table
        nothing is judged: a misspelt table is its own problem, named once (issue 16: ``[matrx]``
        also reported a false ``rules[0]`` error for every rule value)."""
        names = config.axis_names
        if not self.matrix_given:
            return  # no matrix table (misspelt, or not a table: said once): its values cannot be judged
        known = {axis: list(config.axes[axis]) for axis in names}
        for inc in config.include:
            if len(inc.axes) == len(names):
                for axis, value in inc.axes.items():
                    if value not in known[axis]:
                        known[axis].append(value)
        named: list[tuple[tuple[str | int, ...], Mapping[str, Sequence[str]]]] = [
            (("matrix", "exclude", i), sel) for i, sel in enumerate(config.exclude)
        ]
        named += [
            (("matrix", "include", i), {a: (v,) for a, v in inc.axes.items()})
            for i, inc in enumerate(config.include)
            if len(inc.axes) < len(names)
        ]
        named += [(("rules", i, "match"), rule.match) for i, rule in enumerate(config.rules)]
        for path, selector in named:
            for axis, values in selector.items():
                for value in values:
                    if value not in known[axis]:
                        listed = ", ".join(known[axis]) or "none"
                        missing = ", ".join(a for a in names if a not in selector)
                        every = "all four axes" if not config.extra_axes else f"every axis ({', '.join(names)})"
                        hint = (
                            f"; an include adds a cell only when it names {every} (missing {missing})"
                            if path[1] == "include"
                            else ""
                        )
                        self.problem((*path, axis), f"{value!r} is not a value of the {axis} axis ({listed}){hint}")

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


def _listed(names: Sequence[str]) -> str:
    """``os, arch, backend and/or python`` (every axis, for messages)."""
    return f"{', '.join(names[:-1])} and/or {names[-1]}"


def check_option(option: str, key: str, value: Any) -> None:
    """Check the value of a command-line ``option`` that stands for the config key ``key``
    (``exclude-newer``, ``index-url``, or an axis value ``matrix.python``, ``matrix.os``, …) with
    the validator the config's own value gets, so a command that writes a config (``lockgen init``)
    or reads such a value (``lockgen install --python``) never takes what the config would refuse.
    Raises :class:`~lockgen.runtime.errors.UsageError` naming the option and what to write."""
    checks = Validator("", "")
    path: KeyPath = tuple(key.split("."))
    if key == "exclude-newer":
        checks.timestamp(value, path)
    elif key == "index-url":
        checks.url(value, path)
    elif key.startswith("matrix."):
        checks.axis_value(key.removeprefix("matrix."), value, path)
    else:  # pragma: no cover - a caller's mistake
        raise ValueError(f"no check for the config key {key!r}")
    if checks.problems:
        said = checks.problems[0].message
        raise UsageError(f"{option} {value}: {said}")
