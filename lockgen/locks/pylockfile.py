"""PEP 751 ``pylock.toml``: read uv's, keep what a cell's installer may pick, write lockgen's.

uv writes the resolution of a cell as ``pylock.toml`` (``uv pip compile --format pylock.toml``),
listing per package the sdist and the wheels that fit the target. lockgen reads it as a
:class:`packaging.pylock.Pylock` (validated by packaging), turns mirror URLs back into canonical
ones and local files into paths relative to the lock, keeps only the artifacts an installer on
the cell's target may pick (:func:`target_only`), and writes it byte-stably with :func:`dumps`
to ``locks/<cell>/pylock.toml`` (uv accepts only ``pylock.toml``/``pylock.<name>.toml``, so a
dotted cell name needs a folder).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import tomlkit
from packaging.markers import Marker
from packaging.pylock import Package, PackageArchive, PackageSdist, PackageWheel, Pylock, PylockValidationError
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, NormalizedName, parse_wheel_filename
from tomlkit.items import Item

from lockgen.runtime.errors import LockFormatError

if TYPE_CHECKING:
    from lockgen.plan.target import Target

__all__ = [
    "artifacts", "dumps", "file_name", "for_target", "loads", "map_artifacts", "pylock_path", "registry", "sha256s",
    "main_only", "target_environment", "target_only", "with_layers",
]  # fmt: skip

PYLOCK_NAME = "pylock.toml"


def pylock_path(lock: str) -> str:
    """``locks/<cell>/pylock.toml`` for the main lock ``locks/<cell>.txt`` (and a layer's folder)."""
    return f"{lock.removesuffix('.txt')}/{PYLOCK_NAME}"


def _same(url: str) -> str:
    return url


def loads(text: str, where: str, rewrite: Callable[[str], str] = _same) -> Pylock:
    """Parse pylock ``text`` (uv's or lockgen's) with every URL passed through ``rewrite``
    (mirror -> canonical). Raises :class:`LockFormatError` naming ``where`` when it is not valid
    PEP 751 (packaging's own validation, with the key path).

    Without ``rewrite``, each ``[[packages]]`` entry is parsed and validated once per process
    and shared (:func:`_by_package`): the cells of a matrix, and the two sides of a diff, mostly
    hold the same entries byte for byte, and parsing them was most of ``lockgen diff``'s time."""
    from lockgen.config import parse_toml

    if rewrite is _same:
        shared = _by_package(text)
        if shared is not None:
            return shared
    try:
        data = parse_toml(text)
        return Pylock.from_dict(_rewrite(data, rewrite))
    except PylockValidationError as exc:
        raise LockFormatError(f"{where}: not a valid pylock.toml: {exc}") from None
    except Exception as exc:  # TOML syntax
        raise LockFormatError(f"{where}: cannot read it as TOML: {exc}") from None


#: A line that opens a package entry, as uv and :func:`dumps` write it.
_PACKAGE = "\n[[packages]]\n"
#: Package entries parsed so far in this process, by their exact text (bounded: cleared when full).
_PACKAGES: dict[str, Package] = {}
_PACKAGES_MAX = 20_000
_MULTILINE = ("'" * 3, '"' * 3, "\r")


def _by_package(text: str) -> Pylock | None:
    """The :class:`Pylock` of ``text`` from its top-level keys and each package entry parsed
    apart (each entry looked up in :data:`_PACKAGES` first), or None when the text is not laid out
    so that this is sure to equal parsing it whole; then :func:`loads` parses it whole (and
    reports any error). Sure means: no multi-line string (so a ``[[packages]]`` line is a table
    header), no carriage return, no ``packages`` key before the first entry, and each entry's
    text holds exactly one package and nothing else (no table after the packages)."""
    from lockgen.config import parse_toml

    if any(mark in text for mark in _MULTILINE):
        return None
    head, *entries = text.split(_PACKAGE)
    if not entries:
        return None
    try:
        top = parse_toml(head)
        if "packages" in top:
            return None
        shell = Pylock.from_dict({**top, "packages": []})
        packages = []
        for entry in entries:
            package = _PACKAGES.get(entry)
            if package is None:
                data = parse_toml("[[packages]]\n" + entry)
                if list(data) != ["packages"] or len(data["packages"]) != 1:
                    return None
                package = Pylock.from_dict({"lock-version": "1.0", "created-by": "-", **data}).packages[0]
                if len(_PACKAGES) >= _PACKAGES_MAX:
                    _PACKAGES.clear()
                _PACKAGES[entry] = package
            packages.append(package)
    except Exception:  # TOML syntax or PEP 751 validation: parsed whole, for the error message
        return None
    return dataclasses.replace(shell, packages=packages)


def _rewrite(value: Any, rewrite: Callable[[str], str]) -> Any:
    if isinstance(value, dict):
        return {k: rewrite(v) if k == "url" and isinstance(v, str) else _rewrite(v, rewrite) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v, rewrite) for v in value]
    return value


def relative_files(pylock: Pylock, root: Path, folder: str) -> Pylock:
    """``file://`` artifacts under the project ``root`` (a local find-links folder) as ``path``
    entries relative to ``folder`` (the pylock's own project-relative folder), as PEP 751 wants:
    nothing machine-specific in a committed lock."""

    def fix(artifact: Any) -> Any:
        url = getattr(artifact, "url", None)
        if not url or not url.startswith("file://"):
            return artifact
        local = Path(unquote(urlsplit(url).path))
        try:
            rel = local.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return artifact  # outside the project: left as uv wrote it (verify reports it)
        return dataclasses.replace(
            artifact, url=None, path=posixpath.relpath(rel, folder), name=artifact.name or local.name
        )

    return map_artifacts(pylock, fix)


def map_artifacts(pylock: Pylock, fix: Callable[[Any], Any]) -> Pylock:
    """``pylock`` with every sdist, wheel and archive entry passed through ``fix``."""
    packages = []
    for package in pylock.packages:
        changes: dict[str, Any] = {}
        for key in ("sdist", "archive"):
            if getattr(package, key) is not None:
                changes[key] = fix(getattr(package, key))
        if package.wheels:
            changes["wheels"] = [fix(w) for w in package.wheels]
        packages.append(dataclasses.replace(package, **changes))
    return dataclasses.replace(pylock, packages=packages)


def file_name(artifact: Any) -> str:
    """The file name of a wheel/sdist/archive entry: its ``name``, else the last part of its URL
    or path (``%2B`` decoded)."""
    if getattr(artifact, "name", None):
        return str(artifact.name)
    where = artifact.url or artifact.path or ""
    return unquote(posixpath.basename(urlsplit(where).path))


def artifacts(package: Package) -> Iterator[tuple[str, PackageSdist | PackageWheel | PackageArchive]]:
    """``(kind, artifact)`` for the sdist, each wheel and a direct-URL archive of a package."""
    if package.sdist is not None:
        yield "sdist", package.sdist
    for wheel in package.wheels or ():
        yield "wheel", wheel
    if package.archive is not None:
        yield "archive", package.archive


def wheel_tags(wheel: PackageWheel | Any) -> frozenset[Tag]:
    """The tags of a wheel entry (``packaging.utils.parse_wheel_filename``); empty when its file
    name is not a wheel's."""
    try:
        return parse_wheel_filename(file_name(wheel))[3]
    except InvalidWheelFilename:
        return frozenset()


def target_only(pylock: Pylock, supported: frozenset[Tag], may_build: Iterable[NormalizedName]) -> Pylock:
    """Keep per package only what an installer on the target may pick: wheels with a tag in
    ``supported`` (the target's :meth:`~lockgen.plan.target.Target.supported_tags`), and the
    sdist only for packages in ``may_build`` (``allow-build``) or that have no fitting wheel (so
    verify can name them). Wheels of newer OS levels are added afterwards by
    :mod:`lockgen.resolve.newer`."""
    allowed = set(may_build)
    packages = []
    for package in pylock.packages:
        wheels = [w for w in package.wheels or () if wheel_tags(w) & supported]
        sdist = package.sdist if (package.name in allowed or not wheels) else None
        packages.append(dataclasses.replace(package, wheels=wheels or None, sdist=sdist))
    return dataclasses.replace(pylock, packages=packages)


def sha256s(package: Package) -> list[str]:
    """``sha256:<hex>`` of every artifact of a package, sorted (what the requirements lock's
    ``--hash`` options list)."""
    return sorted({f"sha256:{a.hashes['sha256']}" for _, a in artifacts(package) if a.hashes.get("sha256")})


def registry(package: Package) -> bool:
    """A package from an index or find-links page (not a direct URL, a VCS checkout or a local
    project), which an exact ``==`` pin can hold."""
    return package.version is not None and package.archive is None and package.vcs is None and package.directory is None


def by_name(pylock: Pylock) -> dict[NormalizedName, Package]:
    return {p.name: p for p in pylock.packages}


def target_environment(target: Target) -> Marker:
    """The PEP 508 marker of the machines ``target`` is for: ``sys_platform``, ``platform_machine``
    as each OS spells it (Linux ``x86_64``/``aarch64``, macOS ``x86_64``/``arm64``, Windows
    ``AMD64``/``ARM64``: :func:`lockgen.plan.sources.marker_environment`, which uv's
    ``--python-platform`` agrees with), the Python minor and CPython. An x64 Python under
    Windows-on-ARM emulation reports ``AMD64`` (CASES C15), so the alias cells that install the x64
    lock there fit; an x86_64 Python under Rosetta 2 does not fit an arm64 Mac's lock."""
    from lockgen.plan.sources import marker_environment

    env = marker_environment(target)
    keys = ("sys_platform", "platform_machine", "python_version", "implementation_name")
    return Marker(" and ".join(f'{key} == "{env[key]}"' for key in keys))


def for_target(pylock: Pylock, target: Target) -> Pylock:
    """``pylock`` limited to the machines of ``target``: ``requires-python`` the target's exact
    minor (``==3.11.*``; uv writes ``>=3.11``) and ``environments`` :func:`target_environment`
    (PEP 751: an installer must refuse a lock none of whose environments the target matches, so
    ``uv pip sync`` of a 3.11 cell's pylock into a 3.12 or a Windows venv is refused instead of
    installing wheels for another Python or platform)."""
    return dataclasses.replace(
        pylock, requires_python=SpecifierSet(f"=={target.python}.*"), environments=[target_environment(target)]
    )


def with_layers(main: Pylock, layers: Sequence[tuple[NormalizedName | None, Sequence[Package]]]) -> Pylock:
    """``main`` with the packages of the cell's install ``layers`` added, so that an installer
    that knows only PEP 751 installs what ``lockgen install`` installs: ``layers`` in install
    order, each ``(extra, packages)``; ``extra`` is an optional layer's name (PEP 751 top-level
    ``extras``; its packages get the marker ``'<extra>' in extras``), None a layer installed
    always (no-deps). A package at the version main (or an always-installed layer) has is listed
    once, as it is. Where a later layer sets a package to another version (``replace``), the
    version installed is the one of the last selected layer that sets it, as installing the
    ``.txt`` layers in order gives: each version's entry carries the marker that says when
    (``'x' not in extras`` on main's). Raises :class:`LockFormatError` when the result is not
    valid PEP 751 (packaging's validation)."""
    ordered: list[tuple[NormalizedName | None, Sequence[Package]]] = [(None, main.packages), *layers]
    by_name: dict[NormalizedName, list[tuple[int, NormalizedName | None, Package]]] = {}
    for position, (extra, packages) in enumerate(ordered):
        for package in packages:
            by_name.setdefault(package.name, []).append((position, extra, package))
    extras = sorted({extra for extra, _ in layers if extra is not None})
    if not extras and len(ordered) == 1:
        return main
    packages = []
    for claims in by_name.values():
        versions: dict[tuple[str, str], tuple[Package, list[str | None]]] = {}
        for position, extra, package in claims:
            key = (str(package.version), _identity(package))
            later = {e for p, e, other in claims if p > position and (str(other.version), _identity(other)) != key}
            if None in later:
                continue  # an always-installed layer sets another version afterwards
            term = [f"'{extra}' in extras"] if extra is not None else []
            term += [f"'{e}' not in extras" for e in sorted(e for e in later if e is not None)]
            entry = versions.setdefault(key, (package, []))
            entry[1].append(" and ".join(term) or None)
        for package, terms in versions.values():
            if None in terms:  # installed whatever the extras
                packages.append(package)
                continue
            when = list(dict.fromkeys(str(term) for term in terms))
            either = " or ".join(f"({term})" if len(when) > 1 and " and " in term else term for term in when)
            packages.append(dataclasses.replace(package, marker=_and(package.marker, either)))
    try:
        return Pylock.from_dict(dataclasses.replace(main, packages=packages, extras=extras).to_dict())
    except PylockValidationError as exc:
        raise LockFormatError(f"the cell's pylock.toml with its layers is not valid PEP 751: {exc}") from None


def main_only(pylock: Pylock) -> Pylock:
    """``pylock`` with only what installs when no extra is asked (main and no-deps, each package
    once: a main version a layer replaces is kept, the layer's left out): what the readers of a
    cell's main resolution (uv's preferences, the main layer's GPU wheels, the dossier's lookups
    by name) read, as before the layers were in the pylock (:func:`with_layers`)."""
    from packaging.markers import default_environment

    env: dict[str, str | frozenset[str]] = {key: str(value) for key, value in default_environment().items()}
    env.update(extras=frozenset(), dependency_groups=frozenset())
    kept = [
        p for p in pylock.packages if p.marker is None or "extras" not in str(p.marker) or p.marker.evaluate(env, "lock_file")
    ]
    return pylock if len(kept) == len(pylock.packages) else dataclasses.replace(pylock, packages=kept)


def _identity(package: Package) -> str:
    """What tells two entries of one name and version apart: a direct URL's or path's location."""
    for artifact in (package.archive, package.sdist, *(package.wheels or ())):
        if artifact is not None and package.version is None:
            return str(artifact.url or artifact.path or "")
    return ""


def _and(own: Marker | None, when: str) -> Marker:
    """``own`` (a package's marker, if any) and ``when``, as one PEP 508 marker."""
    return Marker(f"({own}) and ({when})" if own is not None else when)


# --------------------------------------------------------------------------- writing


def dumps(pylock: Pylock) -> str:
    """Stable TOML for ``pylock``: top-level keys, then one ``[[packages]]`` table per package
    (sorted by name) with inline tables for its artifacts, one wheel per line."""
    data = dict(pylock.to_dict())
    packages = sorted(data.pop("packages", []), key=lambda p: (p["name"], str(p.get("version", ""))))
    lines = [f"{key} = {_value(value)}" for key, value in data.items()]
    if not packages:  # PEP 751 requires the key: a cell that locks nothing still reads back
        lines.append("packages = []")
    for package in packages:
        lines += ["", "[[packages]]"]
        for key, value in package.items():
            if key == "wheels":
                lines.append("wheels = [")
                lines += [f"    {_value(wheel)}," for wheel in value]
                lines.append("]")
            else:
                lines.append(f"{key} = {_value(value)}")
    return "\n".join(lines) + "\n"


#: What a TOML literal string cannot hold: a quote, a control character but tab (TOML 1.0).
_UNLITERAL = re.compile(r"['\x00-\x08\x0a-\x1f\x7f]")


def _value(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, (str, Mapping)) for v in value):
        # each string as below (markers); tables inline (``attestation-identities``: PEP 751)
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        table = tomlkit.inline_table()
        table.update(value)
        return table.as_string()
    if isinstance(value, str) and '"' in value and not _UNLITERAL.search(value):
        return tomlkit.string(value, literal=True).as_string()  # markers read better unescaped
    item: Item = tomlkit.item(value)  # value: Any, so tomlkit's overloads give Any
    return item.as_string()
