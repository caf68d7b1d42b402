"""``locks/manifest.json`` read back into typed values, strictly, before anything acts on it.

:mod:`lockgen.locks.manifest` writes the manifest; this module reads it for ``lockgen install``
(and the shard manifests ``lockgen merge`` reads). A manifest comes from a checkout, a fork or a
download, so :func:`load` takes bytes and returns frozen values or raises
:class:`~lockgen.runtime.errors.InputError` listing *every* problem with its key path
(``locks/manifest.json: cells.linux-x86_64-cpu-py3.12.layers[1].lock: '../x.txt' has … '..'``),
exit 2, never a traceback:

* the text is UTF-8 JSON of at most :data:`MAX_BYTES`, an object with an integer ``format``
  (another one than :data:`~lockgen.locks.manifest.MANIFEST_FORMAT` is named as older or newer);
* every cell name and layer name is a plain name, every path a path inside the locks folder at
  the place lockgen writes it (:mod:`lockgen.locks.paths`), every sha256 64 hex digits, every
  URL an ``http``/``https``/``file`` URL, every enum one of its values;
* a layer's flags are the ones its kind gives; the first layer is ``main`` and is the cell's lock;
* ``environment`` sets nothing but ``MACOSX_DEPLOYMENT_TARGET`` (a manifest that set
  ``LD_PRELOAD`` or ``PYTHONPATH`` would run code in every install command).

Keys this lockgen does not know are ignored (docs/manifest.md, Stability). The ``detect`` rules
are passed through as data to :mod:`lockgen.cellselect`, which reads them itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgen.runtime.errors import InputError, Problem
from lockgen.runtime.keyed import Checks, KeyPath
from lockgen.locks.lock import LayerKind, install_commands
from lockgen.locks.manifest import MANIFEST_FORMAT, flags
from lockgen.locks.paths import folder_problem, name_problem, path_problem

__all__ = ["MAX_BYTES", "CellEntry", "LayerEntry", "Manifest", "Requires", "Swap", "load", "parse", "url_problem"]

#: A manifest larger than this is refused unread (the seed's 12 cells take 60 KiB).
MAX_BYTES = 64 * 1024 * 1024
#: What ``status`` may say, and which statuses have installable lock files.
STATUSES = ("locked", "alias", "failed", "skipped", "missing")
INSTALLABLE = ("locked", "alias")
_OSES = ("linux", "windows", "macos")
_ARCHES = ("x86_64", "aarch64")
_PYTHON = re.compile(r"3\.[0-9]{1,3}")
_VERSION = re.compile(r"[0-9]{1,6}(\.[0-9]{1,6}){0,3}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_INPUT_HASH = re.compile(r"sha256:[0-9a-f]{64}")
#: The only variable a manifest's ``environment`` may set for install commands (Target.env).
ENVIRONMENT = frozenset({"MACOSX_DEPLOYMENT_TARGET"})
_URL_SCHEMES = ("http", "https", "file")
#: A value starting like a URL (``scheme:``) is judged as one, never as a folder name.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def url_problem(value: object) -> str | None:
    """Why ``value`` is not an index or find-links URL (None: it is one): a string with an
    ``http``/``https`` scheme and a host, or a ``file`` URL; no whitespace or control
    characters. Used for the manifest's URLs and ``lockgen install --index-url``."""
    from urllib.parse import urlsplit

    if not isinstance(value, str):
        return f"expected a URL (a string), got {type(value).__name__}"
    if not value or any(c.isspace() or ord(c) < 32 for c in value):
        return f"{value!r} is not a URL (empty, or it holds whitespace)"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        return f"{value!r} is not a URL ({exc})"
    if parts.scheme.lower() not in _URL_SCHEMES:
        return f"{value!r} is not an http, https or file URL"
    if parts.scheme.lower() != "file" and not parts.hostname:
        return f"{value!r} has no host"
    return None


@dataclass(frozen=True, kw_only=True)
class LayerEntry:
    """A layer object: its flags follow from ``kind`` (checked when read). ``index_url`` and
    ``find_links`` are None when the manifest predates them (the layer's lock header then says);
    ``commands``: as recorded, for comparison only: lockgen never runs them."""

    name: str
    kind: LayerKind
    lock: str
    sha256: str
    index_url: str | None = None
    find_links: tuple[str, ...] | None = None
    commands: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def optional(self) -> bool:
        return self.kind is LayerKind.OPTIONAL

    @property
    def require_hashes(self) -> bool:
        return self.kind is not LayerKind.UNHASHED

    def built(self, index_url: str | None, find_links: Sequence[str]) -> dict[str, list[str]]:
        """The commands lockgen builds for this layer from these sources (see
        :func:`lockgen.locks.header.install_commands`)."""
        return install_commands(self.kind, self.lock, index_url, find_links)


@dataclass(frozen=True, kw_only=True)
class Requires:
    """What the installing machine needs (docs/manifest.md, Requirements of the machine)."""

    python: str
    interpreter: str
    glibc: str | None = None
    macos: str | None = None


@dataclass(frozen=True, kw_only=True)
class Swap:
    """A declared replacement: layer ``by`` sets ``package`` from ``main`` to ``layer``."""

    package: str
    main: str
    layer: str
    by: str


@dataclass(frozen=True, kw_only=True)
class CellEntry:
    """One cell of the manifest. The lock fields (``lock`` … ``replaces``) are set for the
    installable statuses (:data:`INSTALLABLE`), and for ``failed`` when an old lock remains."""

    name: str
    os: str
    arch: str
    backend: str
    python: str
    status: str
    requires: Requires
    reason: str | None = None
    alias_of: str | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    lock: str | None = None
    sha256: str | None = None
    index_url: str | None = None
    find_links: tuple[str, ...] = ()
    layers: tuple[LayerEntry, ...] = ()
    pylock: tuple[str, str] | None = None  # (path, sha256)
    replaces: tuple[Swap, ...] = ()

    @property
    def installable(self) -> bool:
        return self.status in INSTALLABLE


@dataclass(frozen=True)
class Manifest:
    """A manifest read by :func:`parse`: its cells, the ``shard`` of a shard run's manifest, and
    ``data``, the JSON as read (for the selector, which reads ``detect`` itself)."""

    format: int
    cells: Mapping[str, CellEntry]
    shard: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict, repr=False)


def load(data: bytes, where: str, locks: str) -> Manifest:
    """Parse a manifest's bytes (read from ``where``, the project-relative path shown in
    errors; ``locks``: the project's locks folder). Raises :class:`InputError` (exit 2) naming
    ``where`` and each bad field, or the format when it is not this lockgen's."""
    from lockgen.locks.jsonfile import load_json

    return parse(load_json(data, where, "a manifest"), where, locks)


def parse(value: object, where: str, locks: str) -> Manifest:
    """The manifest ``value`` (parsed JSON) as typed values; see :func:`load`."""
    if not isinstance(value, dict):
        raise InputError(Problem(file=where, message="not a lockgen manifest (not a JSON object)"))
    fmt = value.get("format")
    if isinstance(fmt, bool) or not isinstance(fmt, int):
        raise InputError(Problem(file=where, key="format", message='not a lockgen manifest (no integer "format")'))
    if fmt > MANIFEST_FORMAT:
        raise InputError(Problem(
            file=where, key="format",
            message=f"manifest format {fmt} was written by a newer lockgen (this one reads format {MANIFEST_FORMAT})",
            hint="use a newer lockgen to install it",
        ))  # fmt: skip
    if fmt < MANIFEST_FORMAT:
        raise InputError(Problem(
            file=where, key="format", message=f"manifest format {fmt} is older than this lockgen reads ({MANIFEST_FORMAT})",
            hint="run `lockgen all` to rewrite it",
        ))  # fmt: skip
    reader = _Reader(where, locks)
    cells: dict[str, CellEntry] = {}
    raw_cells = value.get("cells")
    if not isinstance(raw_cells, dict):
        reader.problem(("cells",), f"expected an object of cells, got {_kind(raw_cells)} (not a format {fmt} manifest)")
    else:
        reader.names = frozenset(str(name) for name in raw_cells)
        for name, entry in raw_cells.items():
            cell = reader.cell(str(name), entry)
            if cell is not None:
                cells[cell.name] = cell
    shard = value.get("shard")
    if shard is not None and not (isinstance(shard, str) and re.fullmatch(r"[1-9][0-9]{0,5}/[1-9][0-9]{0,5}", shard)):
        reader.problem(("shard",), f"expected I/N, got {shard!r}")
    if "detect" in value and not isinstance(value["detect"], dict):
        reader.problem(("detect",), f"expected an object, got {_kind(value['detect'])}")
    reader.raise_any()
    return Manifest(format=fmt, cells=cells, shard=shard if isinstance(shard, str) else None, data=value)


class _Reader(Checks):
    """Collects every problem of one manifest, each with its key path (the one keyed validator,
    :class:`lockgen.runtime.keyed.Checks`)."""

    #: At most this many problems are listed (a manifest of garbage is one error, not thousands).
    SHOWN = 20

    def __init__(self, where: str, locks: str) -> None:
        super().__init__(where)
        self.locks = locks
        self.names: frozenset[str] = frozenset()  # every cell the manifest lists

    def raise_any(self) -> None:
        if self.problems:
            raise InputError(*self.shown(self.SHOWN))

    # -- fields -----------------------------------------------------------------------------------

    def text(self, data: Mapping[str, Any], key: str, path: KeyPath, *, required: bool = True) -> str | None:
        value = data.get(key)
        if value is None and not required and key not in data:
            return None
        if not isinstance(value, str) or not value:
            self.problem(
                (*path, key), f"expected a non-empty string, got {'an empty one' if value == '' else _kind(value)}"
            )
            return None
        return value

    def choice(self, data: Mapping[str, Any], key: str, path: KeyPath, choices: Sequence[str]) -> str | None:
        value = self.text(data, key, path)
        if value is not None and value not in choices:
            self.problem((*path, key), f"{value!r} is not one of {', '.join(choices)}")
            return None
        return value

    def matching(self, data: Mapping[str, Any], key: str, path: KeyPath, pattern: re.Pattern[str], what: str, *, required: bool = True) -> str | None:  # fmt: skip
        value = self.text(data, key, path, required=required)
        if value is not None and not pattern.fullmatch(value):
            self.problem((*path, key), f"{value!r} is not {what}")
            return None
        return value

    def url(self, data: Mapping[str, Any], key: str, path: KeyPath) -> str | None:
        """An index URL, or a folder relative to the project root (a bundle's ``index``)."""
        if data.get(key) is None:
            return None
        value = data[key]
        problem = url_problem(value) if _SCHEME.match(str(value)) else folder_problem(value)
        if problem:
            self.problem((*path, key), problem)
            return None
        return str(data[key])

    def links(self, data: Mapping[str, Any], key: str, path: KeyPath) -> tuple[str, ...] | None:
        """A find-links list: URLs, or folders relative to the project root."""
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            self.problem((*path, key), f"expected a list of URLs and folders, got {_kind(value)}")
            return None
        links = []
        for i, link in enumerate(value):
            problem = url_problem(link) if _SCHEME.match(str(link)) else folder_problem(link)
            if problem:
                self.problem((*path, key, i), problem)
            else:
                links.append(str(link))
        return tuple(links)

    def lock_path(self, data: Mapping[str, Any], key: str, path: KeyPath, expected: str | None = None) -> str | None:
        value = data.get(key)
        problem = path_problem(value, self.locks)
        if problem is None and expected is not None and value != expected:
            problem = f"{value!r} is not {expected}, where lockgen writes it"
        if problem:
            self.problem((*path, key), problem)
            return None
        return str(value)

    # -- objects ----------------------------------------------------------------------------------

    def cell(self, name: str, data: object) -> CellEntry | None:
        path: KeyPath = ("cells", name)
        problem = name_problem(name)
        if problem:
            self.problem(path, f"the cell name {problem}")
            return None
        if not isinstance(data, dict):
            self.problem(path, f"expected an object, got {_kind(data)}")
            return None
        count = len(self.problems)
        status = self.choice(data, "status", path, STATUSES)
        alias_of = data.get("alias_of")
        if alias_of is not None and name_problem(alias_of):
            self.problem((*path, "alias_of"), f"the cell name {name_problem(alias_of)}")
            return None
        if alias_of is not None and alias_of not in self.names:
            self.problem((*path, "alias_of"), f"names {alias_of!r}, which is not a cell of the manifest")
            return None
        reason = self.text(data, "reason", path, required=False)
        entry: dict[str, Any] = {
            "name": name, "status": status, "reason": reason, "alias_of": alias_of,
            "os": self.choice(data, "os", path, _OSES), "arch": self.choice(data, "arch", path, _ARCHES),
            "backend": self.text(data, "backend", path),
            "python": self.matching(data, "python", path, _PYTHON, "a Python minor such as 3.12"),
            "requires": self.requires(data.get("requires"), (*path, "requires")),
            "environment": self.environment(data.get("environment"), (*path, "environment")),
        }  # fmt: skip
        lock_fields = status in INSTALLABLE or (status == "failed" and "lock" in data)
        if lock_fields:
            entry.update(self.lock_fields(data, path, alias_of or name))
        if len(self.problems) > count:
            return None
        return CellEntry(**entry)

    def requires(self, data: object, path: KeyPath) -> Requires | None:
        if not isinstance(data, dict):
            self.problem(path, f"expected an object, got {_kind(data)}")
            return None
        python = self.matching(data, "python", path, _PYTHON, "a Python minor such as 3.12")
        interpreter = self.choice(data, "interpreter", path, _ARCHES)
        glibc = self.matching(data, "glibc", path, _VERSION, "a version such as 2.28", required=False)
        macos = self.matching(data, "macos", path, _VERSION, "a version such as 14.0", required=False)
        if python is None or interpreter is None:
            return None
        return Requires(python=python, interpreter=interpreter, glibc=glibc, macos=macos)

    def environment(self, data: object, path: KeyPath) -> dict[str, str]:
        if data is None:
            return {}
        if not isinstance(data, dict):
            self.problem(path, f"expected an object, got {_kind(data)}")
            return {}
        env = {}
        for key, value in data.items():
            if key not in ENVIRONMENT:
                self.problem(
                    (*path, key),
                    f"lockgen sets only {', '.join(sorted(ENVIRONMENT))} for install commands; a manifest may not set {key}",
                )
            elif not isinstance(value, str) or not _VERSION.fullmatch(value):
                self.problem((*path, key), f"expected a version such as 14.0, got {value!r}")
            else:
                env[key] = value
        return env

    def lock_fields(self, data: Mapping[str, Any], path: KeyPath, owner: str) -> dict[str, Any]:
        """The lock fields of a cell whose files are ``owner``'s (the cell, or the one it aliases)."""
        main = f"{self.locks}/{owner}.txt"
        lock = self.lock_path(data, "lock", path, main)
        sha256 = self.matching(data, "sha256", path, _SHA256, "a sha256 (64 lower-case hex digits)")
        layers = self.layers(data.get("layers"), (*path, "layers"), main)
        if layers and (lock, sha256) != (layers[0].lock, layers[0].sha256):
            self.problem((*path, "sha256"), "the cell's lock and sha256 are not its main layer's")
        pylock = None
        if data.get("pylock") is not None:
            raw = data["pylock"]
            if not isinstance(raw, dict):
                self.problem((*path, "pylock"), f"expected an object, got {_kind(raw)}")
            else:
                where = self.lock_path(raw, "path", (*path, "pylock"), f"{main.removesuffix('.txt')}/pylock.toml")
                digest = self.matching(raw, "sha256", (*path, "pylock"), _SHA256, "a sha256 (64 lower-case hex digits)")
                pylock = (where, digest) if where and digest else None
        self.recorded(data, path)
        return {
            "lock": lock, "sha256": sha256, "layers": layers, "pylock": pylock,
            "index_url": self.url(data, "index_url", path), "find_links": self.links(data, "find_links", path) or (),
            "replaces": self.replaces(data.get("replaces"), (*path, "replaces")),
        }  # fmt: skip

    def recorded(self, data: Mapping[str, Any], path: KeyPath) -> None:
        """The fields a cell records for reviewers and ``check`` but ``install`` does not act on,
        typed all the same (a manifest that holds ``"uv": [1]`` is not one lockgen wrote):
        ``input_hash`` (``sha256:`` and 64 hex digits), ``uv`` (a version), ``exclude_newer`` and
        ``exclude_newer_span`` (text), ``target`` (an object), ``unverified_hashes`` (strings)."""
        self.matching(data, "input_hash", path, _INPUT_HASH, "sha256: and 64 lower-case hex digits", required=False)
        self.matching(data, "uv", path, _VERSION, "a version such as 0.13.9", required=False)
        self.text(data, "exclude_newer", path, required=False)
        self.text(data, "exclude_newer_span", path, required=False)
        if data.get("target") is not None and not isinstance(data["target"], dict):
            self.problem((*path, "target"), f"expected an object, got {_kind(data['target'])}")
        hashes = data.get("unverified_hashes")
        if hashes is not None and not (isinstance(hashes, list) and all(isinstance(h, str) for h in hashes)):
            self.problem((*path, "unverified_hashes"), f"expected a list of strings, got {_kind(hashes)}")

    def layers(self, data: object, path: KeyPath, main: str) -> tuple[LayerEntry, ...]:
        if not isinstance(data, list) or not data:
            self.problem(path, f"expected a non-empty list of layers, got {_kind(data)}")
            return ()
        layers = []
        seen: set[str] = set()
        for i, raw in enumerate(data):
            layer = self.layer(raw, (*path, i), main, first=i == 0)
            if layer is not None:
                if layer.name in seen:
                    self.problem((*path, i, "name"), f"a second layer named {layer.name!r}")
                seen.add(layer.name)
                layers.append(layer)
        return tuple(layers)

    def layer(self, data: object, path: KeyPath, main: str, first: bool) -> LayerEntry | None:
        if not isinstance(data, dict):
            self.problem(path, f"expected an object, got {_kind(data)}")
            return None
        count = len(self.problems)
        name = data.get("name")
        if name_problem(name):
            self.problem((*path, "name"), f"the layer name {name_problem(name)}")
        kind_text = self.choice(data, "kind", path, [str(k) for k in LayerKind])
        kind = LayerKind(kind_text) if kind_text else None
        if kind is not None and first != (kind is LayerKind.MAIN):
            self.problem(
                (*path, "kind"), "the first layer, and only it, is main" if first else "only the first layer is main"
            )
        if kind is LayerKind.MAIN and name != "main":
            self.problem((*path, "name"), f"the main layer is named 'main', not {name!r}")
        expected = main if first else f"{main.removesuffix('.txt')}/{name}.txt"
        lock = self.lock_path(data, "lock", path, expected)
        sha256 = self.matching(data, "sha256", path, _SHA256, "a sha256 (64 lower-case hex digits)")
        if kind is not None:
            for flag, want in flags(kind).items():
                if data.get(flag) is not want:
                    self.problem(
                        (*path, flag), f"a {kind} layer has {flag} {str(want).lower()}, not {data.get(flag)!r}"
                    )
        commands = self.commands(data.get("commands"), (*path, "commands"))
        index_url = self.url(data, "index_url", path)
        find_links = self.links(data, "find_links", path)
        if len(self.problems) > count or kind is None or lock is None or sha256 is None:
            return None
        return LayerEntry(
            name=str(name), kind=kind, lock=lock, sha256=sha256, index_url=index_url, find_links=find_links,
            commands=commands,
        )  # fmt: skip

    def commands(self, data: object, path: KeyPath) -> dict[str, tuple[str, ...]]:
        if not isinstance(data, dict):
            self.problem(path, f"expected an object with uv and pip argv lists, got {_kind(data)}")
            return {}
        commands = {}
        for installer in ("uv", "pip"):
            argv = data.get(installer)
            if not isinstance(argv, list) or not argv or not all(isinstance(token, str) for token in argv):
                self.problem((*path, installer), f"expected a list of strings, got {_kind(argv)}")
            else:
                commands[installer] = tuple(argv)
        return commands

    def replaces(self, data: object, path: KeyPath) -> tuple[Swap, ...]:
        if data is None:
            return ()
        if not isinstance(data, list):
            self.problem(path, f"expected a list, got {_kind(data)}")
            return ()
        swaps = []
        for i, raw in enumerate(data):
            if not isinstance(raw, dict):
                self.problem((*path, i), f"expected an object, got {_kind(raw)}")
                continue
            values = {key: self.text(raw, key, (*path, i)) for key in ("package", "main", "layer", "by")}
            if all(values.values()):
                swaps.append(Swap(**{k: str(v) for k, v in values.items()}))
        return tuple(swaps)


def _kind(value: object) -> str:
    """How a JSON value is named in messages."""
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)
