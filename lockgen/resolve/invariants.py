"""Step 7 of a cell's resolution: backend invariants (CASES C27) and extension ABI checks. Pure: data in, data out.

A cell's *flavor* (``cell.settings.flavor or cell.backend``) names the build it must get. The
first backend family (``[tool.lockgen.backends]``, defaults below) with a flavor pattern that
matches it gives the cell's :class:`Build`: ``cu126`` is cuda 12.6, ``rocm7.1`` rocm 7.1, ``cpu``
cpu. Each locked package then *shows* builds by its local label (``+cu126``), its name
(``nvidia-cublas-cu12``: cuda 12) or, for ``versioned`` names, its version
(``nvidia-cuda-runtime 13.0.96``: cuda 13). Versions are compared at the precision both sides
give: ``cu12`` agrees with ``cu126`` and ``cu128``.

Labels are read by the label grammar (:mod:`lockgen.resolve.labels`): a label it cannot read is
a warning (:func:`label_warnings`), never a reading. Whether a build shown goes into the cell is
the compatibility policy's (:mod:`lockgen.resolve.compat`): the torch family exactly, an
extension by the family's major and its ``minor`` policy.

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
   ``nvidia-*`` package; a ``cu130`` cell no ``+cpu`` torchvision), nor its own family at a version
   the policy refuses (``tensorrt-cu13`` in a ``cu124`` cell; a ``+cu126`` torchvision in a
   ``cu128`` cell; a ``+cu124`` extension in a ``cu128`` cell is fine by default). A label shows a
   build in the version or, for a release-page wheel whose metadata has the bare version, in the
   wheel's file name.
2. In a GPU cell each ``builds`` package that is locked is a build of the backend: its local
   label shows the cell's build, or (no label: PyPI's linux torch is the CUDA 13.0 build) another
   locked package shows the cell's family at an agreeing version. A bare torch with neither is a
   CPU build (C02's silent fallback to the default index). A torch with a label that names no
   backend (``2.7.0a0+git3f903c3``: no index of PyPI's serves a local label) is a warning.
3. Extension ABI: a package whose local label, wheel file name (version or build tag) or URL names
   a ``builds`` package with a version (``natten 0.21.7+torch2130cu130``,
   ``flash_attn-2.8.3+cu12torch2.6cxx11abiFALSE-…whl``) must match the locked one at the precision
   given (``torch2.6`` matches 2.6.x, ``torch2130`` is 2.13.0, ``torch2.9.0andhigher`` 2.9.0 or
   newer, ``torch210`` 2.1.0 or 2.10), and the backend it names must fit the cell's (the policy).
   A mismatch is what users meet at run time as ``undefined symbol`` import errors.

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
    InvalidName,
    InvalidSdistFilename,
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from lockgen.config.model import BackendFamily
from lockgen.locks.lock import Entry
from lockgen.resolve import labels
from lockgen.resolve.compat import TORCH_FAMILY, Build, fits

__all__ = [
    "Build",
    "Problem",
    "backend_build",
    "fits_cell",
    "label_build",
    "label_warnings",
    "mix_allowed",
    "problems",
    "pulled_in",
    "render",
]


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
    why: str = ""  # the evidence's other side, short: "the lock has torch 2.13.0+cu130"


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
    minor = next((f.minor for f in rules if cell is not None and f.name == cell.family), "exact")
    shown: dict[str, tuple[Package, list[_Shown]]] = {
        canonicalize_name(p.name): (p, list(_shows(p, rules))) for p in packages
    }
    found: list[Problem] = []

    if cell is not None:
        for name, (package, evidence) in sorted(shown.items()):
            bad = next((e for e in evidence if _conflicts(e, name, cell, gpu, minor)), None)
            if bad is not None:
                found.append(_mixed(name, package, bad, flavor, cell))
        family = next(f for f in rules if f.name == cell.family)
        if family.gpu:
            found += _bare_builds(family, shown, flavor, cell)

    builds = tuple(dict.fromkeys(b for family in rules for b in family.builds))
    locked = {b: shown[canonicalize_name(b)][0].version for b in builds if canonicalize_name(b) in shown}
    for name, (package, _) in sorted(shown.items()):
        if name not in {canonicalize_name(b) for b in builds}:
            problem = _extension(name, package, builds, locked, rules, flavor, cell, gpu, minor)
            if problem is not None:
                found.append(problem)

    return [p for p in found if not mix_allowed(p.package, allow_mix)]


def mix_allowed(name: str, allow_mix: Mapping[str, str] | None) -> bool:
    """Whether ``allow_mix`` (package glob -> reason) names package ``name`` (canonical)."""
    allowed = [re.sub(r"[-_.]+", "-", pattern).lower() for pattern in allow_mix or {}]
    return any(fnmatchcase(canonicalize_name(name), pattern) for pattern in allowed)


def label_warnings(packages: Sequence[Package], rules: Sequence[BackendFamily]) -> list[str]:
    """What the checks could not read: each label (in a version or a wheel's file name) that names
    a build but that the label grammar cannot read (its torch and backend go unchecked), and each
    ``builds`` package (torch) with a label that names no backend (no check can tell its build).
    One message per package, in name order."""
    builds = {canonicalize_name(b) for family in rules for b in family.builds}
    found = []
    for package in sorted(packages, key=lambda p: p.name):
        name = canonicalize_name(package.name)
        unread = [r for _, text in _label_texts(package) if isinstance(r := labels.read(text), labels.Unreadable)]
        if unread:
            found.append(unread[0].warning(_label(name, package)))
        elif name in builds and package.version is not None and package.version.local:
            label = labels.read(package.version.local)
            if label is None or (isinstance(label, labels.Label) and label.backend is None):
                found.append(
                    f"{_label(name, package)}: its local label names no backend; lockgen cannot tell which build it is "
                    "(it came from a source of the config: no PyPI index serves a local label)"
                )
    return found


# -- rules 1 and 2


def _conflicts(shown: _Shown, name: str, cell: Build, gpu: set[str], minor: str) -> bool:
    """Whether a build ``name`` shows is refused in a cell of ``cell`` (:mod:`lockgen.resolve.compat`)."""
    build = shown.build
    if build.family != cell.family:
        return build.family in gpu or cell.family in gpu
    return not fits(build, cell, family_member=name in TORCH_FAMILY, minor=minor)


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
        why=f"the cell's backend {flavor} is {cell}",
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
    known version. A package with a label that names no backend is :func:`label_warnings`'s."""
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
        if package.version is not None and package.version.local:
            continue  # labelled, but the label names no backend (or cannot be read): a warning
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
    """The builds ``package`` shows: by the backend its local label names (read by the label
    grammar: in its version, else in a wheel's file name), by name, by the version of a versioned
    name."""
    name = canonicalize_name(package.name)
    version = package.version
    for _, text in _label_texts(package)[:1]:
        label = labels.read(text)
        if isinstance(label, labels.Label) and label.backend is not None and label.torch is None:
            # a label that names a torch too is an extension's: rule 3 checks both together
            yield _Shown(_family_build(label.backend, rules), f"local label +{text}", "label")
    for family in rules:
        for pattern in family.packages:
            match = _regex(pattern).fullmatch(name)
            if match:
                major = match.groupdict().get("major")
                yield _Shown(Build(family.name, (int(major),) if major else ()), f"name ({pattern})", "name")
        for pattern in family.versioned:
            if version is not None and _regex(pattern).fullmatch(name):
                yield _Shown(Build(family.name, version.release[:1]), f"version {version} ({pattern})", "version")


def fits_cell(name: str, shown: Build, flavor: str, rules: Sequence[BackendFamily]) -> bool:
    """Whether package ``name`` showing build ``shown`` may go into a cell of ``flavor`` (rule 1
    and the compatibility policy; a flavor no family matches takes anything)."""
    cell = backend_build(flavor, rules)
    if cell is None:
        return True
    gpu = {family.name for family in rules if family.gpu}
    minor = next((f.minor for f in rules if f.name == cell.family), "exact")
    return not _conflicts(_Shown(shown, "", "label"), canonicalize_name(name), cell, gpu, minor)


def label_build(backend: labels.Backend, rules: Sequence[BackendFamily]) -> Build:
    """The build a label's backend is (see :func:`_family_build`)."""
    return _family_build(backend, rules)


def _family_build(backend: labels.Backend, rules: Sequence[BackendFamily]) -> Build:
    """The build a label's backend is, by the families (``cu130``: cuda 13.0; ``rocm`` without a
    version: the family whose flavors start so); a backend no family names keeps the grammar's
    name (``xpu`` without an xpu family: not the cell's family)."""
    found = backend_build(backend.flavor, rules)
    if found is not None:
        return found
    for family in rules:
        if any(pattern.lower().split("{", 1)[0] == backend.flavor.rstrip("0123456789.") for pattern in family.flavors):
            return Build(family.name, backend.version)
    return Build(backend.kind, backend.version)


def _label_texts(package: Package) -> list[tuple[str, str]]:
    """``(where, label)`` of the package's local label: its version's, else each of its wheels'
    file names' (release-page wheels whose metadata has the bare version, issue 16)."""
    if package.version is not None and package.version.local:
        return [("local label", package.version.local)]
    found = []
    for wheel in package.wheels or ():
        filename = wheel.name or basename(unquote(urlsplit(wheel.url or wheel.path or "").path))
        try:
            local = parse_wheel_filename(filename)[1].local
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if local and ("file " + filename, local) not in found:
            found.append((f"file {filename}", local))
    return found


# -- rule 3: extension ABI


@dataclass(frozen=True)
class _Abi:
    """What an extension says it was built for: ``build`` (``torch``) at ``versions`` (the
    readings of its label, :class:`lockgen.resolve.labels.Torch`), and the backend build if it
    names one; ``where`` is the text that says so."""

    build: str
    versions: labels.Torch
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
    minor: str,
) -> Problem | None:
    for abi in _abis(package, builds, rules):
        have = locked.get(abi.build)
        torch_ok = have is not None and abi.versions.matches(have)
        backend_ok = (
            abi.backend is None
            or cell is None
            or not _conflicts(_Shown(abi.backend, "", "label"), name, cell, gpu, minor)
        )
        if torch_ok and backend_ok:
            continue
        built = f"{abi.build} {abi.versions}" + (f" and {abi.backend}" if abi.backend else "")
        ours = f"{abi.build} {have}" if have is not None else f"no {abi.build}"
        evidence = f"{_label(name, package)}: {abi.where} says {built}"
        return Problem(
            package=name,
            evidence=evidence,
            why=f"the lock has {ours} in a {flavor} cell",
            message=(
                f"{evidence}, but the lock has {ours} in a {flavor} cell" + (f" ({cell})" if cell else "")
                + f": importing it would fail with `undefined symbol` errors; pick the {name} build for "
                f"{ours.removeprefix('no ')} and {flavor}, or declare it intended: allow-mix = {{ \"{name}\" = \"why\" }}"
            ),
        )  # fmt: skip
    return None


def _abis(package: Package, builds: Sequence[str], rules: Sequence[BackendFamily]) -> Iterator[_Abi]:
    """Each build statement of ``package`` in its local label, its artifacts' file names and URLs:
    torch's read by the label grammar; another ``builds`` package's (a custom family) by
    ``<name><version>``."""
    for where, text in _build_texts(package):
        for build in builds:
            key = canonicalize_name(build)
            if key == "torch":
                label = labels.read(text)
                if isinstance(label, labels.Label) and label.torch is not None:
                    backend = _family_build(label.backend, rules) if label.backend is not None else None
                    yield _Abi(key, label.torch, backend, where)
                continue
            token = re.search(rf"(?<![a-z]){re.escape(key)}(\d+(?:\.\d+)*)", text)
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
            yield _Abi(key, labels.Torch((_torch_digits(token.group(1)),)), backend, where)


def _build_texts(package: Package) -> Iterator[tuple[str, str]]:
    """``(where, lower-case text)`` of everything that may state an extension's build: the local
    label, each artifact's file name label and build tag (its build number dropped), the
    segments of its URL's path."""
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
                build_tag = tag[1].lstrip("0123456789") if tag else None
                yield from ((f"file {filename}", t) for t in (version.local, build_tag) if t)
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


def _label(name: str, package: Package) -> str:
    return f"{name} {package.version}" if package.version is not None else name


_SHOWS = re.compile(r"\bshows ([A-Za-z0-9_.-]+)")


def pulled_in(flavor: str, found: Sequence[Problem], entries: Sequence[Entry], rules: Sequence[BackendFamily]) -> str:
    """For a cell of a family without a GPU (``cpu``, ``mps``) whose lock would hold packages of a
    GPU family: which locked requirement pulled them in, walking the resolution's ``# via`` data
    up from each to its nearest requirer that is not one of them (PyPI's linux torch is a CUDA
    build that requires the ``nvidia-*`` runtime packages and ``cuda-toolkit``: CASES C27), and
    the two ways out: a CPU index for the cell, or the backend label of the build it really is.
    ``""`` for a GPU cell, or when no requirer is known. Pure."""
    cell = backend_build(flavor, rules)
    gpu = {family.name for family in rules if family.gpu}
    if cell is None or cell.family in gpu:
        return ""
    families = sorted({m.group(1) for p in found if (m := _SHOWS.search(p.evidence)) and m.group(1) in gpu})
    if not families:
        return ""
    by_name = {e.name: e for e in entries}
    bad = {canonicalize_name(p.package) for p in found}
    pullers: dict[NormalizedName, list[str]] = {}
    for name in sorted(bad):
        for parent in _nearest(name, by_name, bad):
            pullers.setdefault(parent, []).append(name)
    if not pullers:
        return ""
    builds = {b for family in rules for b in family.builds}
    said = "; ".join(
        f"{name} {by_name[name].version or ''} pulls in {', '.join(names)}".replace("  ", " ")
        for name, names in sorted(pullers.items())
    )
    torch = next((n for n in pullers if n in builds), None)
    what = (
        f"the {torch} it locks is a {'/'.join(families)} build" if torch else f"those are {'/'.join(families)} packages"
    )
    return (
        f"  {said}: {what}, not a {flavor} one (PyPI's linux torch is the CUDA build). Two ways out: give the cell "
        f'a CPU index for {torch or "it"} (a source with index = "https://download.pytorch.org/whl/cpu" '
        f'and packages = ["{torch or next(iter(pullers))}"], in the cell\'s `use`), or label the backend as the '
        f"{'/'.join(families)} build it is (the flavor its packages' version says, e.g. cu130 for CUDA 13.0)"
    )


def _nearest(
    name: NormalizedName, entries: Mapping[NormalizedName, Entry], bad: set[NormalizedName]
) -> list[NormalizedName]:
    """The nearest requirers of ``name`` up the ``# via`` data that are not in ``bad`` (breadth first)."""
    seen: set[NormalizedName] = {name}
    queue = [name]
    found: list[NormalizedName] = []
    while queue:
        current = queue.pop(0)
        entry = entries.get(current)
        for via in entry.via if entry is not None else ():
            parent = _requirer(via, entries)
            if parent is None or parent in seen:
                continue
            seen.add(parent)
            if parent in bad:
                queue.append(parent)
            elif parent not in found:
                found.append(parent)
    return found


def _requirer(via: str, entries: Mapping[NormalizedName, Entry]) -> NormalizedName | None:
    """The locked package a ``# via`` item names (``torch``, ``torch[cuda]``); None for an input."""
    head = re.split(r"[\s\[;(]", via.strip(), maxsplit=1)[0]
    try:
        name = canonicalize_name(head, validate=True)
    except InvalidName:
        return None
    return name if name in entries else None
