"""The configuration as data: frozen dataclasses and the constants of the schema.

Pure data: nothing here reads files or imports a pipeline stage; the stages import this module
(never the reverse). :mod:`lockgen.config.load` finds and reads the file,
:mod:`lockgen.config.validate` turns its TOML into these values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockgen.cellselect import DetectRules

__all__ = [
    "ARCHES",
    "AXES",
    "DEFAULT_BACKENDS",
    "DEFAULT_INDEX_URL",
    "DEFAULT_MACOS",
    "DEFAULT_MANYLINUX",
    "DEFAULT_OSV",
    "EXTENDABLE",
    "MANYLINUX_LEVELS",
    "MINOR_POLICIES",
    "OSES",
    "PRERELEASE_MODES",
    "RESERVED_NAMES",
    "SEVERITIES",
    "WORK",
    "AuditIgnore",
    "AuditSettings",
    "BackendFamily",
    "Config",
    "CoverageSettings",
    "Include",
    "LicensePolicy",
    "ProjectMetadata",
    "Rule",
    "Settings",
    "Source",
    "selector_matches",
]  # fmt: skip

AXES = ("os", "arch", "backend", "python")
OSES = ("linux", "windows", "macos")
ARCHES = ("x86_64", "aarch64")
#: manylinux levels uv's ``--python-platform`` accepts (uv 0.13 ``--help``).
MANYLINUX_LEVELS = ("2_17", "2_28", *(f"2_{n}" for n in range(31, 41)))
DEFAULT_INDEX_URL = "https://pypi.org/simple"
DEFAULT_MANYLINUX = "2_28"
#: torch 2.13 ships only ``macosx_14_0_arm64`` wheels; uv's own default is 13.0.
DEFAULT_MACOS = "14.0"
#: Rendered inputs and lockgen's local state, relative to the project root (never committed).
WORK = ".lockgen"

#: Built-in template variables; rule ``vars`` and extra matrix axes may not reuse these names.
RESERVED_NAMES = frozenset(
    {"os", "arch", "backend", "flavor", "python", "python_tag", "target", "cell", "pins", "vars", "macos", "manylinux",
     "project"}
)  # fmt: skip
#: uv's ``--prerelease`` strategies (uv 0.13 ``pip compile --help``); uv's default is the last.
PRERELEASE_MODES = ("disallow", "allow", "if-necessary", "explicit", "if-necessary-or-explicit")
#: ``harmonize`` modes (docs/configuration.md, "Harmonizing"); the default is the first.
HARMONIZE_MODES = ("unforced", "common", "off")


@dataclass(frozen=True)
class Harmonize:
    """``harmonize`` and ``harmonize-package``: how a package whose versions differ across the
    matrix's cells is brought to one version. ``mode`` is one of :data:`HARMONIZE_MODES`;
    ``packages`` maps a canonical name to its own mode (an exception)."""

    mode: str = HARMONIZE_MODES[0]
    packages: Mapping[str, str] = field(default_factory=dict)

    def of(self, name: str) -> str:
        """The mode of package ``name`` (canonical)."""
        return self.packages.get(name, self.mode)

    @property
    def default(self) -> bool:
        """The default setting (nothing written): no part of the input hash, so that adding the
        setting left every lock's hash as it was."""
        return self.mode == HARMONIZE_MODES[0] and not self.packages

    def to_dict(self) -> dict[str, object]:
        return {"mode": self.mode, "packages": dict(sorted(self.packages.items()))}


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Per-cell settings. ``None`` (or empty) means "not set here"; see :meth:`merged`."""

    requirements: str | None = None
    constraints: str | None = None
    overrides: str | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    index_url: str | None = None
    find_links: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    manylinux: str | None = None
    macos: str | None = None
    skip: str | None = None
    exclude_newer: str | None = None
    pins: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] | None = None  # `use`: the named sources this cell uses
    flavor: str | None = None  # fills {flavor} in source URLs and local labels; default: backend
    pinned: tuple[str, ...] | None = None  # pins that cannot move
    optional: tuple[str, ...] | None = None  # one layer each, Jinja strings
    no_deps: tuple[str, ...] | None = None  # the no-deps layer, Jinja strings
    allow_build: tuple[str, ...] | None = None  # packages that may lock without a wheel
    alias: str | None = None  # reuse another cell's lock
    interpreter: str | None = None  # the interpreter arch an install must use, when not the cell's
    allow_mix: Mapping[str, str] = field(default_factory=dict)  # package glob -> why the backend mix is intended
    replace: tuple[str, ...] | None = None  # packages a layer may set to another version than main (C22)
    prerelease: str | None = None  # uv --prerelease for every package (one of PRERELEASE_MODES)
    prerelease_package: Mapping[str, str] = field(
        default_factory=dict
    )  # canonical name -> mode (uv --prerelease-package)
    #: canonical name -> "false" (no cutoff for it) or its own RFC 3339 cutoff (uv --exclude-newer-package)
    exclude_newer_package: Mapping[str, str] = field(default_factory=dict)
    #: field name -> items a table adds to the list it inherits (``extend-use``, ``extend-allow-build``, …)
    extend: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def merged(self, later: Settings) -> Settings:
        """Return these settings with ``later``'s set values on top.

        Scalars and lists are replaced; ``vars``, ``pins``, ``find-links``, ``allow-mix``,
        ``prerelease-package`` and ``exclude-newer-package`` are merged key by key (a later key
        wins, an empty list removes a find-links entry). A list ``later`` extends
        (``extend-use = [...]``, as ruff's ``extend-select``: :data:`EXTENDABLE`) gets those
        items after the list it has so far (issue 17: rules that restated a whole ``use`` list to
        add one source).
        """
        values: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(later, f.name)
            if f.name == "extend":
                continue
            if f.name in _KEYED:
                combined = {**mine, **theirs}
                values[f.name] = {k: v for k, v in combined.items() if v != ()}
            else:
                values[f.name] = theirs if theirs is not None else mine
            if f.name in later.extend:
                values[f.name] = tuple(dict.fromkeys((*(values[f.name] or ()), *later.extend[f.name])))
        return Settings(**values)


#: Settings merged key by key (see :meth:`Settings.merged`).
_KEYED = ("vars", "find_links", "pins", "allow_mix", "prerelease_package", "exclude_newer_package")
#: List settings a table may add to with ``extend-<key>``: key as written -> field.
EXTENDABLE = {
    "use": "sources", "optional": "optional", "no-deps": "no_deps", "allow-build": "allow_build",
    "pinned": "pinned", "replace": "replace",
}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Include:
    """A ``matrix.include`` entry: axis values (naming every axis adds a cell) plus variables."""

    axes: Mapping[str, str]
    vars: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Rule:
    """An ordered rule: ``match`` maps axis -> accepted values; ``settings`` apply on a match."""

    match: Mapping[str, tuple[str, ...]]
    settings: Settings

    def matches(self, values: Mapping[str, str]) -> bool:
        return selector_matches(self.match, values)


def selector_matches(selector: Mapping[str, Sequence[str]], values: Mapping[str, str]) -> bool:
    """Whether ``values`` (axis -> value) has an accepted value for every axis the selector
    names (exclude entries, rule and detect matches)."""
    return all(values[axis] in accepted for axis, accepted in selector.items())


@dataclass(frozen=True, kw_only=True)
class Source:
    """A named source of packages (``[tool.lockgen.sources.<name>]``).

    ``kind`` is ``index`` (a backend index: each package it serves that a cell requires is pinned
    to it as a uv explicit index), ``find-links`` (a flat page or folder) or ``urls`` (direct wheel
    URLs, pinned by constraints).
    URLs may use ``{backend}``, ``{flavor}``, ``{python_tag}``, ``{os}``, ``{arch}``, ``{python}``
    and rule variables. URLs are public: a login is in ``Config.credentials``.
    """

    name: str
    kind: str
    urls: tuple[str, ...]
    packages: tuple[str, ...]  # canonical names it may serve
    local: str | None = None  # find-links: a project folder used instead of the URL ...
    local_if: str = "*.whl"  # ... when it holds a file matching this glob
    #: index: package -> the local label its versions carry there ("{flavor}"; "" none; "*" as served).
    #: Unlisted packages: DEFAULT_LABELLED carry "{flavor}", the others "*" (lockgen.plan.sources).
    labels: Mapping[str, str] = field(default_factory=dict)
    #: the cutoff of the packages it serves (a timestamp or a duration, as ``exclude-newer``); None:
    #: no cutoff for them (a backend index or a flat page states no upload times: uv would drop all)
    exclude_newer: str | None = None


@dataclass(frozen=True, kw_only=True)
class BackendFamily:
    """A backend family for the backend invariants (``[tool.lockgen.backends.<name>]``, CASES C27).

    Patterns match canonical package names (``*`` any text, ``?`` one character). A flavor
    pattern may hold ``{version}``: digits with the minor last (``cu126`` -> 12.6, ``cu12`` -> 12)
    or a dotted version (``rocm7.1``); a package pattern may hold ``{major}`` (``nvidia-*-cu{major}``).
    The defaults, :data:`DEFAULT_BACKENDS`, are tabled in :mod:`lockgen.resolve.invariants`.
    """

    name: str
    flavors: tuple[str, ...]  # cell flavors (and torch local labels) of this family: "cu{version}"
    packages: tuple[str, ...] = ()  # names that show the family: "nvidia-*-cu{major}", "nvidia-cufft"
    versioned: tuple[str, ...] = ()  # names whose version's major is the family's: "nvidia-cuda-runtime"
    gpu: bool = False  # a cell of this family must lock a GPU build of each of `builds`
    builds: tuple[str, ...] = ("torch",)  # framework packages built per backend (extensions name them)
    #: how an extension's minor version may differ from the cell's (MINOR_POLICIES; lockgen.resolve.compat)
    minor: str = "exact"


#: How an extension's backend minor version may differ from its cell's (lockgen.resolve.compat).
MINOR_POLICIES = ("any", "older", "exact")


_NVIDIA_LIBS = (
    "cublas", "cuda-*", "cudnn", "cufft", "cufile", "curand", "cusolver", "cusparse", "cusparselt", "nccl",
    "nvjitlink", "nvshmem", "nvtx",
)  # fmt: skip
#: The built-in families (C27). A ``[tool.lockgen.backends.<name>]`` table replaces the keys it
#: names of the family of that name, or adds a family.
DEFAULT_BACKENDS: tuple[BackendFamily, ...] = (
    BackendFamily(
        name="cuda",
        flavors=("cu{version}",),
        packages=(
            "nvidia-*-cu{major}", "*-cu{major}", "*-cu{major}-*", "cupy-cuda{major}x", "jax-cuda{major}-*",
            *(f"nvidia-{lib}" for lib in _NVIDIA_LIBS), "cuda-toolkit", "cuda-bindings", "cuda-python",
        ),
        versioned=(
            "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-cuda-cupti", "nvidia-cuda-nvcc", "nvidia-cublas",
            "nvidia-nvjitlink", "nvidia-nvtx", "cuda-toolkit", "cuda-bindings", "cuda-python",
        ),
        gpu=True,
        minor="any",  # NVIDIA's minor version compatibility (lockgen.resolve.compat)
    ),
    BackendFamily(name="rocm", flavors=("rocm{version}",), packages=("pytorch-triton-rocm", "rocm", "rocm-*"), gpu=True),
    BackendFamily(name="cpu", flavors=("cpu",)),
    BackendFamily(name="mps", flavors=("mps",)),
)  # fmt: skip


#: The OSV API lockgen audit asks when no ``osv`` source is configured or given (osv.dev).
DEFAULT_OSV = "https://api.osv.dev"
#: ``fail-on`` thresholds, lowest first (``any``: every finding; ``none``: never fail).
SEVERITIES = ("any", "low", "medium", "high", "critical", "none")


@dataclass(frozen=True, kw_only=True)
class AuditIgnore:
    """An ``[audit] ignore`` entry: advisory ``id`` (or an alias such as a CVE id), why it is
    ignored, and the last day it applies (``until``, ISO ``YYYY-MM-DD``). ``packages``: the
    canonical names it is limited to (empty: any package). ``key``: its key path, for messages."""

    id: str
    reason: str
    until: str
    packages: tuple[str, ...] = ()
    key: str = ""


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    """``[audit]``: the OSV source (``osv``: an API URL, or a folder or zip export, project-relative;
    None when not configured), the ``fail-on`` threshold and the ignore list."""

    osv: str | None = None
    fail_on: str = "any"
    ignore: tuple[AuditIgnore, ...] = ()


@dataclass(frozen=True, kw_only=True)
class CoverageSettings:
    """``[coverage]``: whether ``lockgen all`` reads the GPU wheels' kernel coverage (``read``),
    and its budget: at most ``budget_mb`` megabytes (10^6 bytes) downloaded and ``budget_seconds``
    spent per run; past either, the wheels left are recorded "not measured: budget" and the run goes
    on (defaults: 16,000 MB and 1,800 s, above the 11.3 GB a cold 14-cell GPU project read)."""

    read: bool = True
    budget_mb: int = 16_000
    budget_seconds: float = 1800.0


@dataclass(frozen=True, kw_only=True)
class LicensePolicy:
    """``[licenses]``: SPDX ids allowed (empty: any not denied) and denied, and per-package
    exceptions (canonical name or glob -> reason)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    exceptions: Mapping[str, str] = field(default_factory=dict)

    @property
    def configured(self) -> bool:
        return bool(self.allow or self.deny)


@dataclass(frozen=True, kw_only=True)
class ProjectMetadata:
    """The ``[project]`` table of the project's ``pyproject.toml`` as templates see it (the
    ``project`` template variable): the dependency lists live in one place (PEP 621).

    ``path`` is project-relative; ``optional_dependencies`` keeps the group names as written.
    Only static lists are read: a list named in ``[project].dynamic`` is None, and a template that
    uses it fails naming it (StrictUndefined), never renders an empty list.
    """

    path: str
    name: str | None = None
    version: str | None = None
    requires_python: str | None = None
    dependencies: tuple[str, ...] | None = ()
    optional_dependencies: Mapping[str, tuple[str, ...]] | None = field(default_factory=dict)
    #: ``[dependency-groups]`` (PEP 735), names as written, each ``include-group`` expanded.
    dependency_groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def context(self) -> dict[str, Any]:
        """The template variable: ``name``, ``version``, ``requires_python``, ``dependencies``
        (a list of requirement strings), ``optional_dependencies`` (extra -> list) and
        ``dependency_groups`` (PEP 735 group -> list, includes expanded); a dynamic list is left out."""
        context: dict[str, Any] = {"name": self.name, "version": self.version, "requires_python": self.requires_python}
        if self.dependencies is not None:
            context["dependencies"] = list(self.dependencies)
        if self.optional_dependencies is not None:
            context["optional_dependencies"] = {group: list(reqs) for group, reqs in self.optional_dependencies.items()}
        context["dependency_groups"] = {group: list(reqs) for group, reqs in self.dependency_groups.items()}
        return context


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated configuration. Paths are relative to ``root`` (the config file's folder)."""

    root: Path
    source: str  # config file name, relative to root (for messages)
    key_prefix: str  # "tool.lockgen" for pyproject.toml, "" for lockgen.toml
    templates: str
    locks: str
    defaults: Settings
    axes: Mapping[str, tuple[str, ...]]
    exclude: tuple[Mapping[str, tuple[str, ...]], ...]
    include: tuple[Include, ...]
    rules: tuple[Rule, ...]
    sources: Mapping[str, Source] = field(default_factory=dict)
    mirrors: Mapping[str, str] = field(default_factory=dict)
    detect: DetectRules | None = None  # [detect], as the manifest carries it
    backends: tuple[BackendFamily, ...] = DEFAULT_BACKENDS  # backend invariants (C27), in match order
    #: Logins split off the URL fields (realm -> ``user:password`` as written, ``${VAR}`` unexpanded):
    #: every URL above is public (lockgen.runtime.credentials); never part of an input hash.
    credentials: Mapping[str, str] = field(default_factory=dict)
    extra_axes: tuple[str, ...] = ()  # matrix axes beyond AXES, in declaration order; values in `axes`
    project: ProjectMetadata | None = None  # the `project` template variable
    audit: AuditSettings = AuditSettings()  # [audit]: lockgen audit's source, threshold, ignores
    licenses: LicensePolicy = LicensePolicy()  # [licenses]: lockgen licenses' policy
    coverage: CoverageSettings = CoverageSettings()  # [coverage]: the kernel-coverage step's switch and budget
    harmonize: Harmonize = Harmonize()  # harmonize, harmonize-package: one version across the cells

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Every axis of the matrix: :data:`AXES`, then the extra axes in declaration order."""
        return (*AXES, *self.extra_axes)

    def key(self, *parts: str | int) -> str:
        """The key path of a setting as the user wrote it: ``tool.lockgen.rules[2].use`` in a
        pyproject.toml, ``rules[2].use`` in a lockgen.toml."""
        text = self.key_prefix
        for part in parts:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text

    def setting_key(self, values: Mapping[str, str], field_name: str, key: str) -> str:
        """Where the value of setting ``field_name`` (``key`` as written, e.g. ``use``) of the
        cell with axis ``values`` comes from: the last matching rule that sets it, else the
        top level (for error messages)."""
        for i in range(len(self.rules) - 1, -1, -1):
            rule = self.rules[i]
            if rule.matches(values) and getattr(rule.settings, field_name) not in (None, {}, ()):
                return self.key("rules", i, key)
        return self.key(key)

    @property
    def pins(self) -> Mapping[str, str]:
        """The top-level ``pins`` table (rules may change pins per cell)."""
        return self.defaults.pins
