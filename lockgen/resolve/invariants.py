"""Step 7 of a cell's resolution: backend invariants (CASES C27) and extension ABI checks. Pure: data in, data out.

A cell's *flavor* (``cell.settings.flavor or cell.backend``) names the build it must get. The
first backend family (``[tool.lockgen.backends]``, defaults below) with a flavor pattern that
matches it gives the cell's :class:`Build`: ``cu126`` is cuda 12.6, ``rocm7.1`` rocm 7.1, ``cpu``
cpu. Each locked package then *shows* builds by its local label (``+cu126``), its name
(``nvidia-cublas-cu12``: cuda 12) or, for ``versioned`` names, its version
(``nvidia-cuda-runtime 13.0.96``: cuda 13). Versions are compared at the precision both sides
give: ``cu12`` agrees with ``cu126`` and ``cu128``; ``+cu124`` does not agree with ``cu126``.

Default families (:data:`lockgen.config.model.DEFAULT_BACKENDS`); V marks a ``versioned`` name,
whose version's major is the family's:

======  =================  ===  =================================================================
family  flavors            gpu  names that show it
======  =================  ===  =================================================================
cuda    ``cu{version}``    yes  ``nvidia-*-cu{major}``, ``*-cu{major}``, ``*-cu{major}-*``,
                                ``cupy-cuda{major}x``, ``jax-cuda{major}-*``; CUDA 13's unsuffixed
                                ``nvidia-`` cublas V, cuda-* (runtime, nvrtc, cupti, nvcc V),
                                cudnn, cufft, cufile, curand, cusolver, cusparse, cusparselt,
                                nccl, nvjitlink V, nvshmem, nvtx V; ``cuda-toolkit`` V,
                                ``cuda-bindings`` V, ``cuda-python`` V
rocm    ``rocm{version}``  yes  ``pytorch-triton-rocm``, ``rocm``, ``rocm-*``
cpu     ``cpu``            no   none (the ``+cpu`` label shows it)
mps     ``mps``            no   none
======  =================  ===  =================================================================

Every default family's ``builds`` is ``["torch"]``. Rules, each a :class:`Problem` (CASES C27):

1. No package may show another family when either family is a GPU one (a ``cpu`` cell locks no
   ``nvidia-*`` package; a ``cu130`` cell no ``+cpu`` torchvision), nor its own family at another
   version (``tensorrt-cu13`` in a ``cu124`` cell).
2. In a GPU cell each ``builds`` package that is locked is a build of the backend: its local
   label shows the cell's build, or (no label: PyPI's linux torch is the CUDA 13.0 build) another
   locked package shows the cell's family at an agreeing version. A bare torch with neither is a
   CPU build (C02's silent fallback to the default index).
3. Extension ABI: a package whose local label, wheel file name (version or build tag) or URL names
   a ``builds`` package with a version (``natten 0.21.7+torch2130cu130``,
   ``flash_attn-2.8.3+cu12torch2.6cxx11abiFALSE-…whl``) must match the locked one at the precision
   given (``torch2.6`` matches 2.6.x, ``torch2130`` is 2.13.0), and the backend it names must agree
   with the cell's. A mismatch is what users meet at run time as ``undefined symbol`` import errors.

A problem is dropped when the cell's ``allow-mix`` names its package (a glob) with a reason: the
config declares that mix intended. Flavors no family matches (a custom ``xpu``) get rule 3's torch
version check only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from posixpath import basename
from urllib.parse import unquote, urlsplit

from packaging.pylock import Package, PackageArchive, PackageSdist, PackageWheel
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from lockgen.config.model import BackendFamily

__all__ = ["Build", "Problem", "backend_build", "problems", "render"]


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One broken invariant: the ``package`` (canonical name) it is about, the ``evidence`` (which
    package shows which build, and how) and the ``message`` for the user, which names the fix.
    ``cause``: the message without the package, the same for every package it hits (``{allow}``
    stands for the ``allow-mix`` entry to copy), so that :func:`render` says it once."""

    package: str
    evidence: str
    message: str
    cause: str = ""


@dataclass(frozen=True)
class Build:
    """A backend build: ``family`` with a ``version`` at the precision known (``()`` unknown,
    ``(12,)`` major only, ``(12, 6)``)."""

    family: str
    version: tuple[int, ...] = ()

    def __str__(self) -> str:
        return " ".join([self.family, ".".join(map(str, self.version))]).strip()

    def agrees(self, other: Build) -> bool:
        """Same family, and the same version at the precision both give."""
        n = min(len(self.version), len(other.version))
        return self.family == other.family and self.version[:n] == other.version[:n]


@dataclass(frozen=True)
class _Shown:
    """A build a package shows, and how: ``"local label +cu126"``, ``"name (nvidia-*-cu{major})"``."""

    build: Build
    how: str
    kind: str  # "label", "name" or "version"


def backend_build(flavor: str, rules: Sequence[BackendFamily]) -> Build | None:
    """The build a cell of ``flavor`` must get (``"cu130"`` -> cuda 13.0), by the first family
    with a flavor pattern that matches it; None when no family does."""
    for family in rules:
        for pattern in family.flavors:
            match = _regex(pattern).fullmatch(flavor.lower())
            if match:
                return Build(family.name, _digits(match.groupdict().get("version")))
    return None


def problems(
    flavor: str,
    packages: Sequence[Package],
    rules: Sequence[BackendFamily],
    allow_mix: Mapping[str, str] | None = None,
) -> list[Problem]:
    """Every backend invariant the locked ``packages`` break for a cell of ``flavor`` (the module
    docstring lists the rules), minus those whose package ``allow_mix`` names (glob -> reason).

    ``packages`` are what the install gets (the main lock and its layers; a layer alone lacks
    torch). Returns problems in package-name order, at most one per package and rule.
    """
    cell = backend_build(flavor, rules)
    gpu = {family.name for family in rules if family.gpu}
    shown: dict[str, tuple[Package, list[_Shown]]] = {
        canonicalize_name(p.name): (p, list(_shows(p, rules))) for p in packages
    }
    found: list[Problem] = []

    if cell is not None:
        for name, (package, evidence) in sorted(shown.items()):
            bad = next((e for e in evidence if _conflicts(e.build, cell, gpu)), None)
            if bad is not None:
                found.append(_mixed(name, package, bad, flavor, cell))
        family = next(f for f in rules if f.name == cell.family)
        if family.gpu:
            found += _bare_builds(family, shown, flavor, cell)

    builds = tuple(dict.fromkeys(b for family in rules for b in family.builds))
    locked = {b: shown[canonicalize_name(b)][0].version for b in builds if canonicalize_name(b) in shown}
    for name, (package, _) in sorted(shown.items()):
        if name not in {canonicalize_name(b) for b in builds}:
            problem = _extension(name, package, builds, locked, rules, flavor, cell, gpu)
            if problem is not None:
                found.append(problem)

    allowed = [re.sub(r"[-_.]+", "-", pattern).lower() for pattern in allow_mix or {}]
    return [p for p in found if not any(fnmatchcase(p.package, pattern) for pattern in allowed)]


# -- rules 1 and 2


def _conflicts(build: Build, cell: Build, gpu: set[str]) -> bool:
    if build.family != cell.family:
        return build.family in gpu or cell.family in gpu
    return not build.agrees(cell)


def _mixed(name: str, package: Package, shown: _Shown, flavor: str, cell: Build) -> Problem:
    evidence = f"{_label(name, package)}: {shown.how} shows {shown.build}"
    cause = (
        f"{shown.how} shows {shown.build}, but the cell's backend {flavor} is {cell}: no package of another backend "
        f"may be locked (a mixed runtime fails at import or run time); find what pulls it in (`# via` in the lock) "
        f"and pin a build for {flavor}, or declare the mix intended: allow-mix = {{allow}} (C27)"
    )
    return Problem(
        package=name,
        evidence=evidence,
        message=f"{_label(name, package)}: {cause.replace('{allow}', _allow([name]))}",
        cause=cause,
    )


def _allow(names: Sequence[str]) -> str:
    """The ``allow-mix`` table to copy for ``names``: one glob when they share a ``prefix-``
    (``nvidia-*``), else one entry each."""
    if len(names) > 1:
        prefix = names[0].rsplit("-", 1)[0] + "-" if "-" in names[0] else ""
        while prefix and not all(n.startswith(prefix) for n in names):
            prefix = prefix[:-1].rsplit("-", 1)[0] + "-" if "-" in prefix[:-1] else ""
        if prefix:
            return f'{{ "{prefix}*" = "why" }}'
    return "{ " + ", ".join(f'"{n}" = "why"' for n in names) + " }"


#: At most this many packages are named in a line :func:`render` merges.
SHOWN = 5


def render(problems: Sequence[Problem]) -> list[str]:
    """One line per cause (in first-seen order): a problem alone as its message; a cause shared
    by several packages once, naming them (the first :data:`SHOWN`) with one ``allow-mix`` entry
    to copy (issue 16: one broken invariant printed 15 near-identical 300-character lines)."""
    groups: dict[str, list[Problem]] = {}
    for problem in problems:
        groups.setdefault(problem.cause or problem.message, []).append(problem)
    lines = []
    for cause, members in groups.items():
        if len(members) == 1:
            lines.append(members[0].message)
            continue
        names = [m.package for m in members]
        subjects = ", ".join(m.evidence.split(":", 1)[0] for m in members[:SHOWN])
        more = f" and {len(members) - SHOWN} more" if len(members) > SHOWN else ""
        lines.append(f"{len(members)} packages ({subjects}{more}): {cause.replace('{allow}', _allow(names))}")
    return lines


def _bare_builds(
    family: BackendFamily, shown: Mapping[str, tuple[Package, list[_Shown]]], flavor: str, cell: Build
) -> Iterator[Problem]:
    """Rule 2: each locked ``builds`` package shows the cell's build itself (label) or through
    runtime packages (by name or version, not label) that show the cell's family at an agreeing,
    known version."""
    runtime = {
        name: [e.build for e in evidence if e.kind != "label" and e.build.family == cell.family and e.build.version]
        for name, (_, evidence) in sorted(shown.items())
    }
    if any(build.agrees(cell) for builds in runtime.values() for build in builds):
        return
    other = [f"{_label(name, shown[name][0])}" for name, builds in runtime.items() if builds][:3]
    for build_name in family.builds:
        key = canonicalize_name(build_name)
        if key not in shown or any(e.kind == "label" for e in shown[key][1]):
            continue  # a label that conflicts is rule 1's; one that agrees is the build
        package = shown[key][0]
        if other:
            what = f"its runtime in the lock is another {cell.family} ({', '.join(other)}): it is a build for another backend"
        else:
            what = f"the lock has no {cell} runtime package: it is a CPU build, likely from the default index (C02)"
        patterns = ", ".join((*family.packages[:2], *family.versioned[:1]))
        yield Problem(
            package=key,
            evidence=f"{_label(key, package)} has no local label, and no locked package shows {cell} ({patterns}, …)",
            message=(
                f"{_label(key, package)}: a {flavor} cell must lock a {build_name} build of its backend (a +{flavor} "
                f"local label, or runtime packages that show {cell}), but this {build_name} has no label and {what}. "
                f'Serve {build_name} from the backend\'s index (a source with index = "…/{{flavor}}" that the cell '
                f'uses) and pin it, or declare it intended: allow-mix = {{ "{key}" = "why" }} (C27)'
            ),
        )


def _shows(package: Package, rules: Sequence[BackendFamily]) -> Iterator[_Shown]:
    """The builds ``package`` shows: by local label, by name, by the version of a versioned name."""
    name = canonicalize_name(package.name)
    version = package.version
    if version is not None and version.local:
        for family in rules:
            for pattern in family.flavors:
                match = _label_regex(pattern).fullmatch(version.local)
                if match:
                    build = Build(family.name, _digits(match.groupdict().get("version")))
                    yield _Shown(build, f"local label +{version.local}", "label")
    for family in rules:
        for pattern in family.packages:
            match = _regex(pattern).fullmatch(name)
            if match:
                major = match.groupdict().get("major")
                yield _Shown(Build(family.name, (int(major),) if major else ()), f"name ({pattern})", "name")
        for pattern in family.versioned:
            if version is not None and _regex(pattern).fullmatch(name):
                yield _Shown(Build(family.name, version.release[:1]), f"version {version} ({pattern})", "version")


# -- rule 3: extension ABI


@dataclass(frozen=True)
class _Abi:
    """What an extension says it was built for: ``build`` (``torch``) at ``version``, and the
    backend build if it names one; ``where`` is the text that says so."""

    build: str
    version: tuple[int, ...]
    backend: Build | None
    where: str


def _extension(
    name: str,
    package: Package,
    builds: Sequence[str],
    locked: Mapping[str, Version | None],
    rules: Sequence[BackendFamily],
    flavor: str,
    cell: Build | None,
    gpu: set[str],
) -> Problem | None:
    for abi in _abis(package, builds, rules):
        have = locked.get(abi.build)
        torch_ok = have is not None and _release(have, len(abi.version)) == abi.version
        backend_ok = abi.backend is None or cell is None or not _conflicts(abi.backend, cell, gpu)
        if torch_ok and backend_ok:
            continue
        built = f"{abi.build} {'.'.join(map(str, abi.version))}" + (f" and {abi.backend}" if abi.backend else "")
        ours = f"{abi.build} {have}" if have is not None else f"no {abi.build}"
        evidence = f"{_label(name, package)}: {abi.where} says {built}"
        return Problem(
            package=name,
            evidence=evidence,
            message=(
                f"{evidence}, but the lock has {ours} in a {flavor} cell" + (f" ({cell})" if cell else "")
                + f": importing it would fail with `undefined symbol` errors; pick the {name} build for "
                f"{ours.removeprefix('no ')} and {flavor}, or declare it intended: allow-mix = {{ \"{name}\" = \"why\" }}"
            ),
        )  # fmt: skip
    return None


def _abis(package: Package, builds: Sequence[str], rules: Sequence[BackendFamily]) -> Iterator[_Abi]:
    """Each build statement of ``package`` in its local label, its artifacts' file names and URLs."""
    for where, text in _build_texts(package):
        for build in builds:
            token = re.search(rf"(?<![a-z]){re.escape(canonicalize_name(build))}(\d+(?:\.\d+)*)", text)
            if token is None:
                continue
            rest = (text[: token.start()], text[token.end() :])
            backend = next(
                (
                    Build(family.name, _digits(m.groupdict().get("version")))
                    for family in rules
                    for pattern in family.flavors
                    for part in rest
                    if (m := re.search(r"(?<![a-z])" + _regex(pattern).pattern, part))
                ),
                None,
            )
            yield _Abi(canonicalize_name(build), _torch_digits(token.group(1)), backend, where)


def _build_texts(package: Package) -> Iterator[tuple[str, str]]:
    """``(where, lower-case text)`` of everything that may state an extension's build."""
    if package.version is not None and package.version.local:
        yield "local label", package.version.local
    artifacts: list[PackageWheel | PackageSdist | PackageArchive] = [*(package.wheels or ())]
    artifacts += [a for a in (package.sdist, package.archive) if a is not None]
    for artifact in artifacts:
        location = artifact.url or artifact.path or ""
        path = unquote(urlsplit(location).path)
        filename = getattr(artifact, "name", None) or basename(path)
        try:
            if filename.endswith(".whl"):
                _, version, tag, _ = parse_wheel_filename(filename)
                yield from ((f"file {filename}", t) for t in (version.local, tag[1] if tag else None) if t)
            elif filename:
                _, version = parse_sdist_filename(filename)
                if version.local:
                    yield f"file {filename}", version.local
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            pass
        for segment in path.split("/")[:-1]:
            if segment:
                yield f"URL {location}", segment.lower()


# -- small parts


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    """A name or flavor pattern as a regex: ``*`` any text, ``?`` one character, ``{major}`` digits,
    ``{version}`` digits or a dotted version."""
    parts = re.split(r"(\*|\?|\{major\}|\{version\})", pattern.lower())
    special = {"*": ".*", "?": ".", "{major}": r"(?P<major>\d+)", "{version}": r"(?P<version>\d+(?:\.\d+)*)"}
    return re.compile("".join(special.get(part, re.escape(part)) for part in parts))


@functools.cache
def _label_regex(pattern: str) -> re.Pattern[str]:
    """A flavor pattern as a local label may write it: with a build suffix after a dot and a
    letter (repo.radeon.com's ``+rocm7.2.0.lw.git7e1940d4`` is a rocm 7.2.0 build)."""
    return re.compile(_regex(pattern).pattern + r"(?:\.[a-z][a-z0-9.]*)?")


def _digits(text: str | None) -> tuple[int, ...]:
    """A backend version: dotted (``7.1``), or digits with the minor last (``126`` -> 12.6); one or
    two digits are a major only (``cu12`` -> 12), as extension labels write it."""
    if not text:
        return ()
    if "." in text:
        return Version(text).release
    return (int(text),) if len(text) <= 2 else (int(text[:-1]), int(text[-1]))


def _torch_digits(text: str) -> tuple[int, ...]:
    """A framework version in an extension label: dotted (``2.6``), or digits major-minor-patch
    with one-digit major and patch (``2130`` -> 2.13.0, ``260`` -> 2.6.0, ``26`` -> 2.6)."""
    if "." in text:
        return Version(text).release
    if len(text) <= 2:
        return tuple(int(c) for c in text)
    return (int(text[0]), int(text[1:-1]), int(text[-1]))


def _release(version: Version, n: int) -> tuple[int, ...]:
    """The first ``n`` parts of ``version``'s release, padded with zeros (2.13 -> (2, 13, 0))."""
    return (version.release + (0,) * n)[:n]


def _label(name: str, package: Package) -> str:
    return f"{name} {package.version}" if package.version is not None else name
