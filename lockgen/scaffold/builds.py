"""``lockgen init``: which torch build a cell really locks when no backend index serves it.

PyPI's linux torch is not a CPU build: its manylinux wheels require the CUDA runtime packages
(``nvidia-cuda-runtime-cu12==12.8.90`` for torch 2.8 to 2.10 on x86_64, ``cuda-toolkit[…]==13.0.2``
from 2.11), so a linux cell that takes torch from the default index locks CUDA packages, and a
cell labelled ``cpu`` would be refused by the backend invariants (CASES C27, rule 1). Windows and
macOS wheels on PyPI are CPU (and MPS) builds.

:class:`PypiTorch` says, for a torch requirement and a platform, the label of the build the
default index serves there: read from the index where it can be read (the project page, PEP 691
JSON or PEP 503 HTML, the newest wheel the requirement, the target Python and ``exclude-newer``
allow, then its core metadata as a PEP 658 ``<wheel>.metadata`` file: the ``Requires-Dist`` that
hold there, markers evaluated with ``packaging``), else from :data:`PYPI_LINUX_CUDA`, a kept table
of what PyPI's releases require (read from their metadata files), else, for a release newer than
the table, the newest entry's family, said as a guess. Nothing read here is written down but the
label, and the reason is printed with it; the lock's own verification checks what was locked.
"""

from __future__ import annotations

import contextlib
import datetime
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from packaging.markers import default_environment
from packaging.metadata import parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from lockgen.index.pages import PageFile
from lockgen.scaffold.reading import holds as marker_holds

__all__ = [
    "CPU_INDEX",
    "PYPI",
    "PYPI_LINUX_CUDA",
    "Build",
    "PypiTorch",
    "Survey",
    "cuda_label",
    "survey",
]

PYPI = "https://pypi.org/simple"
#: download.pytorch.org's CPU builds (``+cpu`` on linux and windows; macOS wheels carry no label).
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

#: The CUDA build of PyPI's linux torch wheels per release (major.minor) and arch, from the
#: ``Requires-Dist`` of each release's manylinux wheel: ``nvidia-cuda-runtime-cu11==11.7.99``
#: (2.0), ``-cu12==12.1.105`` (2.1 to 2.4), ``12.4.127`` (2.5, 2.6), ``12.6.77`` (2.7),
#: ``12.8.90`` (2.8 to 2.10), ``cuda-toolkit[…]==13.0.x`` (2.11 to 2.13), ``13.2.2`` (2.15). The
#: aarch64 wheels were CPU builds up to 2.8 (2.8's CUDA requirements carry ``platform_machine ==
#: "x86_64"``); 2.12's require ``cuda-toolkit==13.0.2`` on every linux arch. A release missing
#: here is read from the index, or taken as its nearest older release's build (said so).
PYPI_LINUX_CUDA: dict[tuple[str, str], str] = {
    **{(v, "x86_64"): "cu117" for v in ("1.13", "2.0")},
    **{(v, "x86_64"): "cu121" for v in ("2.1", "2.2", "2.3", "2.4")},
    **{(v, "x86_64"): "cu124" for v in ("2.5", "2.6")},
    ("2.7", "x86_64"): "cu126",
    **{(v, "x86_64"): "cu128" for v in ("2.8", "2.9", "2.10")},
    **{(v, "x86_64"): "cu130" for v in ("2.11", "2.12", "2.13")},
    ("2.15", "x86_64"): "cu132",
    **{(v, "aarch64"): "cpu" for v in ("1.13", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8")},
    ("2.12", "aarch64"): "cu130",
}

_MACHINE = {"x86_64": "x86_64", "aarch64": "aarch64"}
#: Packages whose exact version is the CUDA version of the build (CUDA 12's ``-cu12`` runtime, CUDA
#: 13's unsuffixed runtime and toolkit meta-package).
_CUDA_VERSIONED = re.compile(r"^(nvidia-cuda-runtime(-cu\d+)?|cuda-toolkit)$")
_CUDA_NAMED = re.compile(r"^nvidia-.*-cu(\d+)$")


@dataclass(frozen=True)
class Build:
    """The build a platform gets from the default index: ``label`` (``cu128``, ``cpu``) and
    ``why`` (where that was read, for the explanation)."""

    label: str
    why: str


def cuda_label(requires: Sequence[Requirement]) -> str | None:
    """The CUDA label a wheel's requirements (those that hold on its platform) show: the exact
    version of its CUDA runtime or toolkit (``==12.8.90`` -> ``cu128``), else the major of a
    ``nvidia-*-cu12`` name (``cu12``), else ``cuda`` for any ``nvidia-`` package; None: no CUDA
    package (a CPU build)."""
    for r in requires:
        name = canonicalize_name(r.name)
        specs = list(r.specifier)
        if _CUDA_VERSIONED.match(name) and len(specs) == 1 and specs[0].operator in ("==", "==="):
            release = Version(specs[0].version.rstrip(".*")).release
            if len(release) >= 2:
                return f"cu{release[0]}{release[1]}"
    for r in requires:
        found = _CUDA_NAMED.match(canonicalize_name(r.name))
        if found:
            return f"cu{found[1]}"
    if any(canonicalize_name(r.name).startswith(("nvidia-", "cuda-")) for r in requires):
        return "cuda"
    return None


@dataclass
class PypiTorch:
    """What the default index serves as torch per platform (see the module docstring).

    ``files(url)`` lists the files of a project page (canonical URLs; empty when it cannot be
    read: a :class:`~lockgen.index.pages.PageReader` through the mirrors), ``read(url)``
    returns the bytes at a canonical URL, or None (both None: no reading, the table only);
    ``index``: the default index; ``exclude_newer``: the
    config's cutoff (``YYYY-MM-DD`` or RFC 3339), so the release read is the one a lock takes."""

    read: Callable[[str], bytes | None] | None = None
    files: Callable[[str], Sequence[PageFile]] | None = None
    index: str = PYPI
    exclude_newer: str | None = None
    _pages: dict[str, list[tuple[Version, str, frozenset[str], datetime.datetime | None]]] = field(default_factory=dict)
    _cache: dict[tuple[str, str, str, str], Build] = field(default_factory=dict)

    def build(self, spec: SpecifierSet, os_: str, arch: str, python: str) -> Build:
        """The build of torch ``spec`` the default index serves on (``os_``, ``arch``) for CPython
        ``python``: ``cpu`` off linux (PyPI's windows and macOS wheels carry no CUDA)."""
        if os_ != "linux":
            return Build("cpu", "PyPI's windows and macOS torch wheels are CPU builds")
        key = (str(spec), os_, arch, python)
        if key not in self._cache:
            build = self._read(spec, arch, python) or self._table(spec, arch)
            pinned = any(s.operator in ("==", "===") for s in spec)
            found = re.fullmatch(r"cu(\d+)(\d)", build.label)
            if not pinned and found:  # which release a lock takes moves with exclude-newer: the major holds
                build = Build(f"cu{found[1]}", f"{build.why}; torch is not pinned, so the label is the CUDA major "
                                               f"(cu{found[1]}), which every release of that build agrees with")  # fmt: skip
            self._cache[key] = build
        return self._cache[key]

    def _read(self, spec: SpecifierSet, arch: str, python: str) -> Build | None:
        if self.read is None or self.files is None:
            return None
        wheel = self._newest(spec, arch, python)
        if wheel is None:
            return None
        version, url = wheel
        got = self.read(url + ".metadata")
        if got is None:
            return None
        try:
            raw, _ = parse_email(got)
        except (ValueError, UnicodeDecodeError):
            return None
        env = {**{k: str(v) for k, v in default_environment().items()}, "sys_platform": "linux",
               "platform_system": "Linux", "os_name": "posix", "platform_machine": _MACHINE[arch],
               "python_version": python, "python_full_version": f"{python}.0", "extra": ""}  # fmt: skip
        holds = []
        for text in raw.get("requires_dist") or []:
            try:
                r = Requirement(text)
            except InvalidRequirement:
                continue
            if marker_holds(r.marker, env):
                holds.append(r)
        label = cuda_label(holds) or "cpu"
        shown = "CUDA packages" if label != "cpu" else "no CUDA package"
        return Build(label, f"the default index's torch {version} for linux {arch} requires {shown} "
                            f"(its core metadata, {url.rsplit('/', 1)[-1]}.metadata)")  # fmt: skip

    def _newest(self, spec: SpecifierSet, arch: str, python: str) -> tuple[Version, str] | None:
        """(version, URL) of the newest linux ``arch`` wheel of torch for ``python`` that ``spec``
        and ``exclude-newer`` allow, from the index's project page."""
        from lockgen.index.pages import project_url

        url = project_url(self.index, "torch")
        if url not in self._pages:
            entries = []
            for f in self.files(url) if self.files else ():
                if f.yanked is not False or not f.filename.endswith(".whl"):
                    continue
                try:
                    _, version, _, tags = parse_wheel_filename(f.filename)
                except InvalidWheelFilename:
                    continue
                entries.append((version, f.url, frozenset(str(t) for t in tags), f.upload_time))
            self._pages[url] = entries
        cutoff = _cutoff(self.exclude_newer)
        interpreter = f"cp{python.replace('.', '')}"
        found = [
            (v, u) for v, u, tags, when in self._pages[url]
            if spec.contains(v, prereleases=False) and not v.local
            and any(t.startswith(f"{interpreter}-") and "manylinux" in t and t.endswith(f"_{arch}") for t in tags)
            and (cutoff is None or when is None or when <= cutoff)
        ]  # fmt: skip
        return max(found, default=None)

    def _table(self, spec: SpecifierSet, arch: str) -> Build:
        """The table's answer: the release ``spec`` pins (``==2.9.1``, ``==2.9.*``), else the newest
        release of the table it allows, else the table's newest; a release the table lacks takes
        its nearest older entry's build, said as a guess."""
        releases = sorted({v for v, a in PYPI_LINUX_CUDA if a == arch}, key=_minor)
        pinned = [s.version for s in spec if s.operator in ("==", "===")]
        if pinned:
            release = ".".join(pinned[0].rstrip(".*").split("+")[0].split(".")[:2])
        else:
            allowed = [v for v in releases if any(spec.contains(f"{v}.{patch}") for patch in range(10))]
            release = (allowed or releases)[-1]
        older = [v for v in releases if _minor(v) <= _minor(release)] or releases[:1]
        unread = "the index's metadata could not be read" if self.read and self.files else "nothing read: --offline"
        known = (release, arch) in PYPI_LINUX_CUDA
        label = PYPI_LINUX_CUDA[(release if known else older[-1], arch)]
        if known:
            return Build(label, f"PyPI's linux {arch} torch {release} is a {_family(label)} build (init's table; "
                                f"{unread})")  # fmt: skip
        return Build(label, f"init's table has no torch {release} for linux {arch}; its nearest older release, "
                            f"{older[-1]}, is a {_family(label)} build: check it ({unread})")  # fmt: skip


def _family(label: str) -> str:
    return "CPU" if label == "cpu" else f"CUDA ({label})"


def _minor(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _cutoff(value: str | None) -> datetime.datetime | None:
    """The end of ``exclude-newer``: a date means up to its end (UTC), as uv reads it."""
    if not value:
        return None
    try:
        if len(value) == 10:
            day = datetime.date.fromisoformat(value)
            return datetime.datetime.combine(day, datetime.time.max, datetime.timezone.utc)
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Survey:
    """What the default index says of a project's requirements (:meth:`PypiTorch.survey`):
    ``sources_only`` maps each pinned package the index has only as a source distribution at
    that version to the reason; ``pulls_torch`` maps each package whose newest allowed wheel
    requires torch to the requirement it states."""

    sources_only: dict[str, str] = field(default_factory=dict)
    pulls_torch: dict[str, str] = field(default_factory=dict)


def _survey_one(
    torch: PypiTorch, requirement: Requirement, python: str, via: str | None = None
) -> tuple[str | None, str | None, list[Requirement]]:
    """(why it is source-only, the torch requirement it states, its linux requirements) for one
    requirement: source-only when the index has source distributions and no wheel of any version
    it allows (a pin: that version); ``via``: the package that requires it."""
    from packaging.utils import parse_sdist_filename

    from lockgen.index.pages import project_url

    name = canonicalize_name(requirement.name)
    files = list(torch.files(project_url(torch.index, name))) if torch.files else []
    cutoff = _cutoff(torch.exclude_newer)
    wheels: list[tuple[Version, str]] = []
    sdists: set[Version] = set()
    for f in files:
        if f.yanked is not False or (cutoff is not None and f.upload_time is not None and f.upload_time > cutoff):
            continue
        if f.filename.endswith(".whl"):
            try:
                _, version, _, _ = parse_wheel_filename(f.filename)
            except InvalidWheelFilename:
                continue
            wheels.append((version, f.url))
        else:
            with contextlib.suppress(ValueError):
                sdists.add(parse_sdist_filename(f.filename)[1])
    allowed = [(v, u) for v, u in wheels if requirement.specifier.contains(v, prereleases=True)]
    only_sources = None
    if not allowed and any(requirement.specifier.contains(v, prereleases=True) for v in sdists):
        shown = f"{name}{requirement.specifier}" if str(requirement.specifier) else name
        only_sources = f"{shown} is published only as source distributions (the default index)" + (
            f"; {via} requires it" if via else ""
        )
    if not allowed or torch.read is None:
        return only_sources, None, []
    _, url = max(allowed)
    got = torch.read(url + ".metadata")
    if got is None:
        return only_sources, None, []
    try:
        raw, _ = parse_email(got)
    except (ValueError, UnicodeDecodeError):
        return only_sources, None, []
    env = {**{k: str(v) for k, v in default_environment().items()}, "sys_platform": "linux", "platform_system": "Linux",
           "os_name": "posix", "platform_machine": "x86_64", "python_version": python,
           "python_full_version": f"{python}.0", "extra": ""}  # fmt: skip
    needs: list[Requirement] = []
    pulls = None
    for text in raw.get("requires_dist") or []:
        with contextlib.suppress(InvalidRequirement):
            r = Requirement(text)
            if marker_holds(r.marker, env):
                needs.append(r)
                if canonicalize_name(r.name) == "torch":
                    pulls = str(r)
    return only_sources, pulls, needs


def survey(torch: PypiTorch, requirements: Sequence[Requirement], python: str) -> Survey:
    """Ask the default index, for each requirement and each of their own requirements (one level
    down: at most 8 requests at a time, each page and metadata file once), whether a version it
    allows has wheels, and whether its newest allowed linux wheel requires torch. Nothing is
    asked offline (an empty :class:`Survey`)."""
    from concurrent.futures import ThreadPoolExecutor

    if torch.files is None:
        return Survey()
    found = Survey()
    unique = list({canonicalize_name(r.name): r for r in requirements if not r.url}.values())
    seen = {canonicalize_name(r.name) for r in unique}
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda r: _survey_one(torch, r, python), unique))
        below: dict[str, tuple[Requirement, str]] = {}
        for r, (only, pulls, needs) in zip(unique, answers, strict=True):
            name = canonicalize_name(r.name)
            if only:
                found.sources_only[name] = only
            if pulls and name not in ("torch", "torchvision", "torchaudio"):
                found.pulls_torch[name] = pulls
            for need in needs:
                key = canonicalize_name(need.name)
                if key not in seen and not need.url:
                    below.setdefault(key, (need, name))
        deeper = list(pool.map(lambda item: _survey_one(torch, item[0], python, item[1]), below.values()))
    for (need, _), (only, _, _) in zip(below.values(), deeper, strict=True):
        if only:
            found.sources_only[canonicalize_name(need.name)] = only
    return found
