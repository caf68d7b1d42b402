"""What ``lockgen install`` checks, as pure functions over data: the layers of a cell and the
versions they set, whether a machine fits a cell, whether a venv's distributions are the locks',
how sources map through mirrors (the record of the last install and the distributions' RECORD
files: :mod:`lockgen.install.record`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from packaging.utils import NormalizedName
from packaging.version import InvalidVersion, Version

from lockgen import cellselect
from lockgen.index.files import Kind, artifact, filename_of
from lockgen.locks.lock import Entry, LayerKind, Lock
from lockgen.locks.manifestfile import CellEntry, LayerEntry
from lockgen.plan.mirror import Mirrors

__all__ = [
    "SEED", "Expected", "Layer", "expected", "glibc", "host_problems", "installed_problems", "macos", "map_sources",
    "runs",
]  # fmt: skip

#: name -> (version or None, the lock entry, the layer's name)
Expected = dict[NormalizedName, tuple[str | None, Entry, str]]


@dataclass(frozen=True)
class Layer:
    """One layer of the chosen cell: the manifest's object, its lock file parsed, the text the
    sha256 was checked on (what lockgen reads again is this text, never the file), and the
    sources it installs from (``(index URL, find-links)``, agreed by the manifest and the lock)."""

    entry: LayerEntry
    lock: Lock
    text: str
    sources: tuple[str | None, tuple[str, ...]]

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def kind(self) -> LayerKind:
        return self.entry.kind

    @property
    def path(self) -> str:
        return self.entry.lock

    @property
    def sha256(self) -> str:
        return self.entry.sha256

    def commands(self) -> dict[str, list[str]]:
        """The layer's commands as lockgen builds them from its typed fields (never the recorded
        ones): ``{"uv": argv, "pip": argv}``, canonical URLs."""
        return self.entry.built(*self.sources)

    def versions(self) -> dict[NormalizedName, tuple[str | None, Entry]]:
        """``{name: (version or None, entry)}``: the version of a ``name @ URL`` wheel is in its
        file name; an editable or a local folder has none to check."""
        return {entry.name: (_entry_version(entry), entry) for entry in self.lock.entries}


def _entry_version(entry: Entry) -> str | None:
    if entry.version is not None:
        return str(entry.version)
    found = artifact(filename_of(entry.url)) if entry.url and not entry.editable else None
    return str(found.version) if found is not None and found.kind is Kind.WHEEL else None


def map_sources(argv: Sequence[str], mirrors: Mirrors, index_url: str | None) -> list[str]:
    """``argv`` with the value after each ``--index-url`` (``index_url`` when given, else through
    ``mirrors``) and each ``--find-links`` URL mapped; folders stay as they are."""
    out: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        out.append(token)
        if token in ("--index-url", "--find-links"):
            value = next(tokens, "")
            if token == "--index-url" and index_url:
                value = index_url
            elif "://" in value:
                value = mirrors.fetch_url(value)
            out.append(value)
    return out


def host_problems(
    entry: CellEntry, os_name: str, glibc: str | None, macos: str | None, arch: str | None = None
) -> list[str]:
    """Why this host cannot run the cell's lock (pure): another OS; another host ``arch``, unless
    the cell is an alias whose ``requires.interpreter`` this machine runs (:func:`runs`: the x64
    stack of a Windows-on-ARM alias on an x86_64 PC); a glibc older than ``requires.glibc`` (or
    none: musl); a macOS older than ``requires.macos``. ``arch`` None: not checked."""
    requires = entry.requires
    if entry.os != os_name:
        return [f"the cell is for {entry.os}; this machine runs {os_name}"]
    problems = []
    alias_fits = entry.status == "alias" and requires.interpreter in runs(os_name, arch or "")
    if arch is not None and entry.arch != arch and not alias_fits:
        problems.append(
            f"the cell is for {entry.arch} machines; this machine is {arch} (pick the cell of this machine's arch, "
            "or `lockgen install --detect`)"
        )
    if requires.glibc and os_name == "linux":
        if glibc is None:
            problems.append(f"its wheels need glibc {requires.glibc} or newer (manylinux); this system has no glibc")
        elif cellselect.version_key(glibc) < cellselect.version_key(requires.glibc):
            problems.append(f"its wheels need glibc {requires.glibc} or newer (manylinux); this system has {glibc}")
    if (
        requires.macos
        and os_name == "macos"
        and macos
        and cellselect.version_key(macos) < cellselect.version_key(requires.macos)
    ):
        problems.append(f"its wheels need macOS {requires.macos} or newer; this is macOS {macos}")
    return problems


def runs(os_name: str, host: str) -> frozenset[str]:
    """The interpreter arches a machine of ``host`` arch runs: its own, and x86_64 on an arm64
    Windows (emulation) or Mac (Rosetta 2)."""
    emulated = {"x86_64"} if host == "aarch64" and os_name in ("windows", "macos") else set()
    return frozenset({host, *emulated})


def glibc() -> str | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        return None
    return text.split()[-1] if text.startswith("glibc") else None


def macos() -> str | None:
    import platform

    return platform.mac_ver()[0] or None


#: The packages ``python -m venv`` seeds a venv with. uv's exact sync keeps them (``uv pip sync``
#: leaves pip and setuptools in a venv made by ``python -m venv``), so they may stay after main's
#: sync unless a lock lists them; lockgen's pip path leaves them too, for the same end state.
SEED = frozenset({"pip", "setuptools", "wheel"})


def expected(layers: Sequence[Layer]) -> Expected:
    """``{name: (version, entry, layer name)}`` after installing ``layers`` in order (a later
    layer's version wins: a declared replacement)."""
    result: Expected = {}
    for layer in layers:
        for name, (version, entry) in layer.versions().items():
            result[name] = (version, entry, layer.name)
    return result


def installed_problems(
    expected: Mapping[NormalizedName, tuple[str | None, Entry, str]],
    installed: Mapping[NormalizedName, Sequence[str]],
    allowed: frozenset[str] = frozenset(),
) -> list[str]:
    """What differs between the locks (``expected``) and a venv's distributions (pure): a missing
    package, another version (``2.13.0`` is not ``2.13.0+cu130``), several versions, or a package
    no layer lists (``allowed``: the venv's seed packages, :data:`SEED`)."""
    problems = []
    for name, (version, _, layer) in sorted(expected.items()):
        have = list(installed.get(name, ()))
        if not have:
            problems.append(f"{name} is not installed ({layer} locks {name}{'==' + version if version else ''})")
        elif len(have) > 1:
            problems.append(f"{name} is installed more than once ({', '.join(have)})")
        elif version is not None and not _same(have[0], version, url=expected[name][1].url is not None):
            problems.append(f"{name} {have[0]} is installed; {layer} locks {name}=={version}")
    problems += [
        f"{name} {', '.join(versions)} is installed but no layer of the cell lists it"
        for name, versions in sorted(installed.items()) if name not in expected and name not in allowed
    ]  # fmt: skip
    return problems


def _same(have: str, want: str, url: bool = False) -> bool:
    """Whether installed ``have`` is the locked ``want``. A direct URL's wheel may have a local
    label only in its file name, its metadata the bare version (flash-attn's release-page builds,
    ``flash_attn-2.8.3+cu130torch2.13-…whl`` installs as 2.8.3; issue 16): that is the same, and so
    for a hashed build from a find-links page or index whose label names a torch (only extension
    builds carry one; ``torch 2.13.0`` for a locked ``2.13.0+cu130`` stays a difference)."""
    try:
        installed, locked = Version(have), Version(want)
    except InvalidVersion:
        return have == want
    if installed == locked:
        return True
    if installed.local is not None or installed != Version(locked.public):
        return False
    # a URL pins the file; so does the hash of a build whose label names its torch (an extension's
    # release-page build from a find-links page or index: the label is in its file name only)
    return url or _names_torch(locked.local or "")


def _names_torch(local: str) -> bool:
    from lockgen.resolve import labels

    label = labels.read(local)
    return isinstance(label, labels.Label) and label.torch is not None
