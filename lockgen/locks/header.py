"""A lock's header: the ``# key: value`` fields under the install commands, as typed values.

Each value type writes its field (``field()``) and reads it back (``parse()``); :class:`Header`
lists them in file order (:meth:`Header.fields`). :mod:`lockgen.locks.lock` describes the whole
layout and is where every other module gets these names.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from packaging.utils import NormalizedName, canonicalize_name

__all__ = [
    "DIGEST", "MULTI_FIELDS", "SINGLE_FIELDS", "UNREACHABLE", "FileRef", "Header", "LayerKind", "LayerRef",
    "Replacement", "Unavailable",
]  # fmt: skip

#: The reason of an optional layer whose source could not be reached starts with this: its cell
#: stays stale until a run reaches it (an outage must not drop a layer for good).
UNREACHABLE = "source unreachable:"
#: The field that holds the sha256 of the rest of the file (the last header line).
DIGEST = "content-sha256"


class LayerKind(str, enum.Enum):
    """What a lock file is to its cell, in install order: ``main``, then each ``optional`` layer
    (may fail; rolled back), then ``no-deps`` (installed without dependencies), then ``unhashed``
    (editable, local-path and VCS requirements, which have no hash to require)."""

    MAIN = "main"
    OPTIONAL = "optional"
    NO_DEPS = "no-deps"
    UNHASHED = "unhashed"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, kw_only=True)
class LayerRef:
    """A layer as the main lock lists it: kind, name, the layer file's ``content-sha256`` (so a
    main lock and its layers can only go together) and its project-relative path."""

    kind: LayerKind
    name: str
    sha256: str
    path: str

    def field(self) -> str:
        return f"{self.kind} {self.name} sha256:{self.sha256} {self.path}"

    @classmethod
    def parse(cls, value: str) -> LayerRef:
        kind, name, digest, path = value.split(" ", 3)
        return cls(kind=LayerKind(kind), name=name, sha256=digest.removeprefix("sha256:"), path=path)


@dataclass(frozen=True, kw_only=True)
class FileRef:
    """Another file the main lock vouches for (its ``pylock.toml``): the sha256 of its text (LF
    line endings) and its project-relative path, so ``check`` notices an edited or stray one."""

    sha256: str
    path: str

    def field(self) -> str:
        return f"sha256:{self.sha256} {self.path}"

    @classmethod
    def parse(cls, value: str) -> FileRef:
        digest, path = value.split(" ", 1)
        return cls(sha256=digest.removeprefix("sha256:"), path=path)


@dataclass(frozen=True, kw_only=True)
class Unavailable:
    """An optional entry the cell could not have, and why. ``retry``: the reason was an outage
    (:data:`UNREACHABLE`), so the cell stays stale until a run reaches the source."""

    requirement: str
    reason: str

    @property
    def retry(self) -> bool:
        return self.reason.startswith(UNREACHABLE)

    def field(self) -> str:
        return f"{self.requirement}: {' '.join(self.reason.split())}"

    @classmethod
    def parse(cls, value: str) -> Unavailable:
        requirement, _, reason = value.partition(": ")
        return cls(requirement=requirement, reason=reason)


@dataclass(frozen=True, kw_only=True)
class Replacement:
    """A package a layer sets to another version than the main lock, declared in the config
    (``replace``, CASES C22): ``main`` and ``layer`` are the two versions, ``by`` the layer's name
    (``no-deps``, ``optional-torchao``). Field: ``typer 0.27.1 -> 0.29.2 no-deps``."""

    name: NormalizedName
    main: str
    layer: str
    by: str

    def field(self) -> str:
        return f"{self.name} {self.main} -> {self.layer} {self.by}"

    @classmethod
    def parse(cls, value: str) -> Replacement:
        name, main, _, layer, by = value.split(" ")
        return cls(name=canonicalize_name(name), main=main, layer=layer, by=by)


@dataclass(frozen=True, kw_only=True)
class Header:
    """The ``# key: value`` fields of a lock. ``path`` is the lock's own project-relative path
    (it is what the install commands name). ``find_links`` entries are URLs, or folders relative
    to the project root."""

    cell: str
    kind: LayerKind
    path: str
    target: str
    uv: str
    input_hash: str
    input_parts: Mapping[str, str] = field(default_factory=dict)
    config: str = "pyproject.toml"
    exclude_newer: str | None = None
    index_url: str | None = None
    find_links: tuple[str, ...] = ()
    layer_of: str | None = None
    layers: tuple[LayerRef, ...] = ()
    pylock: FileRef | None = None  # the cell's pylock.toml (main locks only)
    unavailable: tuple[Unavailable, ...] = ()
    replaces: tuple[Replacement, ...] = ()
    skipped_urls: tuple[str, ...] = ()
    no_upload_time: tuple[str, ...] = ()
    unverified_hashes: tuple[str, ...] = ()  # sources whose page hashes lockgen did not check

    def install_commands(self) -> dict[str, list[str]]:
        """``{"uv": argv, "pip": argv}`` that install this file, run from the project root with
        the target environment active. main: an exact sync with hashes (pip cannot sync: an
        installer removes what the lock does not list); optional: an install that may fail;
        no-deps: without dependencies; unhashed: without hashes, without dependencies."""
        sources = ["--index-url", self.index_url] if self.index_url else []
        for link in self.find_links:
            sources += ["--find-links", link]
        hashes = [] if self.kind is LayerKind.UNHASHED else ["--require-hashes"]
        no_deps = ["--no-deps"] if self.kind in (LayerKind.NO_DEPS, LayerKind.UNHASHED) else []
        if self.kind is LayerKind.MAIN:
            uv = ["uv", "pip", "sync", *hashes, *sources, self.path]
        else:
            uv = ["uv", "pip", "install", *hashes, *no_deps, *sources, "-r", self.path]
        pip = ["pip", "install", *hashes, *no_deps, *sources, "-r", self.path]
        return {"uv": uv, "pip": pip}

    def fields(self) -> Iterator[tuple[str, str]]:
        """``(key, value)`` pairs in file order."""
        yield "cell", self.cell
        yield "kind", str(self.kind)
        if self.layer_of:
            yield "layer-of", self.layer_of
        yield "target", self.target
        if self.exclude_newer:
            yield "exclude-newer", self.exclude_newer
        if self.index_url:
            yield "index-url", self.index_url
        for link in self.find_links:
            yield "find-links", link
        yield "uv", self.uv
        yield "input-hash", self.input_hash
        if self.input_parts:
            yield "input-parts", " ".join(f"{k}={v}" for k, v in sorted(self.input_parts.items()))
        if self.pylock is not None:
            yield "pylock", self.pylock.field()
        for item in self.layers:
            yield "layer", item.field()
        for gap in self.unavailable:
            yield "unavailable", gap.field()
        for swap in self.replaces:
            yield "replaces", swap.field()
        for note in self.skipped_urls:
            yield "skipped-url", note
        for source in self.no_upload_time:
            yield "no-upload-time", source
        for source in self.unverified_hashes:
            yield "unverified-hashes", source


#: Fields a header has at most once, and fields it may repeat (in file order).
SINGLE_FIELDS = {
    "cell",
    "kind",
    "layer-of",
    "target",
    "exclude-newer",
    "index-url",
    "uv",
    "input-hash",
    "input-parts",
    "pylock",
    DIGEST,
}
MULTI_FIELDS = {"find-links", "layer", "unavailable", "replaces", "skipped-url", "no-upload-time", "unverified-hashes"}
