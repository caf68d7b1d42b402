"""``lockgen init``, step 2: what each requirement file is for. Pure.

A file's platforms come from the wheels it names by URL (their platform tags, under their
markers, evaluated with ``packaging`` for each candidate target) or else from its name
(``requirements_mac.txt``, ``apple_silicon``); a marker on a plain requirement
(``pywin32; sys_platform == "win32"``) is a conditional dependency, not a platform. Its backend
comes, first found wins, from its index lines (``…/whl/cu128`` -> ``cu128``), torch's local label
(``torch==2.3.1+cu121``), its name (``cuda131`` -> ``cu131``, ``amd`` -> rocm, ``cpu``), the local
labels of the wheels it names, the ``--index`` URLs given to ``lockgen init``, else ``cpu``
(``mps`` on Apple silicon). Words of the name that say neither are the file's variant words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from packaging.markers import default_environment

from lockgen.scaffold.reading import Line, ReqFile

__all__ = ["DEFAULT_PLATFORMS", "Facts", "backend_label", "infer"]

Platform = tuple[str, str]
PLATFORMS: tuple[Platform, ...] = (("linux", "x86_64"), ("linux", "aarch64"), ("windows", "x86_64"),
                                   ("windows", "aarch64"), ("macos", "x86_64"), ("macos", "aarch64"))  # fmt: skip
DEFAULT_PLATFORMS: tuple[Platform, ...] = (("linux", "x86_64"), ("windows", "x86_64"), ("macos", "aarch64"))
_DEFAULT_ARCH = {"linux": "x86_64", "windows": "x86_64", "macos": "aarch64"}
_OS_WORDS = {"linux": "linux", "windows": "windows", "win": "windows", "win32": "windows", "win64": "windows",
             "mac": "macos", "macos": "macos", "osx": "macos", "darwin": "macos", "apple": "macos"}  # fmt: skip
_ARCH_WORDS = {"arm64": "aarch64", "aarch64": "aarch64", "silicon": "aarch64", "x86_64": "x86_64", "x64": "x86_64",
               "amd64": "x86_64", "intel": "x86_64"}  # fmt: skip
_FILLER = {"requirements", "requirement", "reqs", "req", "txt", "in", "only", "deps", "dependencies"}
_LABEL = re.compile(r"^(cu\d+|rocm\d+(?:\.\d+)*|cpu|xpu|mps|vulkan|directml)$")
_GPU = re.compile(r"^(cu\d+|cuda|rocm[\d.]*|xpu|directml|vulkan)$")
_TORCH = {"torch", "torchvision", "torchaudio"}
_MARKER_OS = {
    "linux": ("Linux", "linux", "posix"),
    "windows": ("Windows", "win32", "nt"),
    "macos": ("Darwin", "darwin", "posix"),
}
_MACHINE = {("linux", "x86_64"): "x86_64", ("linux", "aarch64"): "aarch64", ("windows", "x86_64"): "AMD64",
            ("windows", "aarch64"): "ARM64", ("macos", "x86_64"): "x86_64", ("macos", "aarch64"): "arm64"}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What a file is for: ``platforms`` ((os, arch), None when nothing says), ``backends`` (one,
    or several from ``--index``), the ``sources`` URLs per backend label, variant ``words`` and
    the ``reasons`` (one line each) for the explanation."""

    platforms: tuple[Platform, ...] | None
    backends: tuple[str, ...]
    indexes: dict[str, str]  # backend label -> index URL
    words: tuple[str, ...]
    reasons: tuple[str, ...]
    mixed: tuple[tuple[str, str], ...] = ()  # (package, label) of wheels built for another backend


def backend_label(url: str) -> str | None:
    """The backend label an index URL ends in (``https://download.pytorch.org/whl/cu128`` ->
    ``cu128``; ``…/whl/nightly/rocm7.1/`` -> ``rocm7.1``), else None."""
    last = PurePosixPath(urlsplit(url).path.rstrip("/")).name.lower()
    return last if _LABEL.match(last) else None


def _words(path: str) -> list[str]:
    parts = [*PurePosixPath(path).parent.parts, PurePosixPath(path).stem]
    return [w for part in parts for w in re.split(r"[_\-\s]+", part.lower()) if w and w not in _FILLER]


def _marker_env(os_: str, arch: str, python: str) -> dict[str, str]:
    """PEP 508 marker variables of a CPython ``python`` on (``os_``, ``arch``)."""
    system, sys_platform, os_name = _MARKER_OS[os_]
    base: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    return {**base, "platform_system": system, "sys_platform": sys_platform, "os_name": os_name,
            "platform_machine": _MACHINE[(os_, arch)], "python_version": python, "python_full_version": f"{python}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}  # fmt: skip


def _tag_platforms(tag: str) -> set[Platform]:
    """The (os, arch) a wheel platform tag installs on (``any``: every one)."""
    if tag == "any":
        return set(PLATFORMS)
    found: set[Platform] = set()
    arches = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
    for part, arch in arches.items():
        if tag.endswith(part):
            os_ = "windows" if tag.startswith("win") else "macos" if tag.startswith("macosx") else "linux"
            found.add((os_, arch))
    if tag.startswith("macosx") and tag.endswith("universal2"):
        found |= {("macos", "x86_64"), ("macos", "aarch64")}
    return found


def _wheel_platforms(line: Line, pythons: Sequence[str]) -> set[Platform]:
    """Where a platform wheel named by URL installs: its tags, under its marker."""
    tagged = set().union(*(_tag_platforms(t) for t in line.wheel_platforms))
    if line.marker is None:
        return tagged
    return {p for p in tagged if any(line.marker.evaluate(_marker_env(*p, py)) for py in pythons)}


def _local_label(line: Line) -> str | None:
    if line.version is None or not line.version.local:
        return None
    match = re.match(r"(cu\d+|rocm\d+(?:\.\d+)*|cpu|xpu|vulkan)", line.version.local)
    return match.group(1) if match else None


def infer(file: ReqFile, pythons: Sequence[str], cli_indexes: Sequence[str]) -> Facts:
    """The :class:`Facts` of ``file`` for target Pythons ``pythons`` and ``lockgen init
    --index`` URLs ``cli_indexes``."""
    reasons: list[str] = []
    words = _words(file.path)
    rest: list[str] = []
    name_os = sorted({_OS_WORDS[w] for w in words if w in _OS_WORDS})
    name_arch = sorted({_ARCH_WORDS[w] for w in words if w in _ARCH_WORDS})
    name_backend: str | None = None
    for w in words:
        if w in _OS_WORDS or w in _ARCH_WORDS:
            continue
        cuda = re.fullmatch(r"cuda(\d+)", w)
        if cuda or _LABEL.match(w) or w in ("cuda", "nvidia", "amd", "rocm"):
            name_backend = (
                f"cu{cuda[1]}" if cuda else "rocm" if w in ("amd", "rocm") else "cuda" if w in ("cuda", "nvidia") else w
            )
            continue
        rest.append(w)
    # platforms
    seen: set[Platform] = set()
    shown: list[str] = []
    for line in file.lines:
        if line.wheel_platforms and line.wheel_platforms != {"any"}:
            where = _wheel_platforms(line, pythons)
            if where:
                seen |= where
                shown.append(line.origin)
    platforms: tuple[Platform, ...] | None
    if seen:
        platforms = tuple(p for p in PLATFORMS if p in seen)
        reasons.append(f"platforms {_show(platforms)}: the wheels it names by URL ({_lines(shown)})")
    elif name_os or name_arch:
        oses = name_os or ["linux"]
        platforms = tuple(p for p in PLATFORMS if p[0] in oses and p[1] in (name_arch or [_DEFAULT_ARCH[p[0]]]))
        reasons.append(f"platforms {_show(platforms)}: its name")
    else:
        platforms = None
    # backend
    indexes: dict[str, str] = {}
    backends: list[str] = []
    for index in file.indexes:
        label = backend_label(index.url)
        if label and index.kind != "find-links":
            indexes[label] = index.url
            backends.append(label)
            reasons.append(f"backend {label}: the index {index.url} ({index.origin})")
    if not backends:
        torch = [(label, line) for line in file.lines if line.name in _TORCH and (label := _local_label(line))]
        wheels = [(lb, ln) for ln in file.lines if (lb := _local_label(ln))]
        labels = Counter(label for label, _ in (torch or wheels))
        generic = name_backend in ("cuda", "rocm")
        if torch:
            backends = [torch[0][0]]
            reasons.append(f"backend {backends[0]}: the local label of {torch[0][1].text} ({torch[0][1].origin})")
        elif name_backend and not (generic and labels):
            backends = [name_backend]
            reasons.append(f"backend {name_backend}: its name")
        elif labels:
            family = {"cuda": "cu", "rocm": "rocm"}.get(name_backend or "", "")
            # an extension built against torch (+cu128torch2.9.0) shows torch's build: it counts first
            torch_built = Counter(lb for lb, ln in wheels if "torch" in str(ln.version and ln.version.local))
            ranked = [lb for lb, _ in (torch_built or labels).most_common()]
            label = next((lb for lb in ranked if lb.startswith(family)), ranked[0])
            backends = [label]
            reasons.append(f"backend {label}: the local label most of the wheels it names carry (+{label})")
        elif cli_indexes:
            for url in cli_indexes:
                label = backend_label(url)
                if label:
                    indexes[label] = url
                    backends.append(label)
            reasons.append(f"backends {', '.join(backends)}: the --index URLs")
    names_torch = any(ln.name == "torch" for ln in file.lines)
    mixed = tuple(
        dict.fromkeys(
            (str(ln.name), lb)
            for ln in file.lines
            if ln.name is not None and (lb := _local_label(ln)) and backends
            and ((lb not in backends and lb != "cpu") or ("torch" in str(ln.version and ln.version.local) and not names_torch))
        )
    )  # fmt: skip
    if mixed:
        reasons.append(
            f"allow-mix for {', '.join(n for n, _ in mixed)}: it names their {', '.join(sorted({lb for _, lb in mixed}))} "
            f"builds beside {', '.join(backends)} (or without the torch they were built for); the backend invariants "
            "would refuse that: review it"
        )
    return Facts(platforms=platforms, backends=tuple(backends), indexes=indexes, words=tuple(rest),
                 reasons=tuple(reasons), mixed=mixed)  # fmt: skip


def is_gpu(backend: str) -> bool:
    """Whether a backend label names a GPU build (no such build exists for macOS)."""
    return bool(_GPU.match(backend))


def _show(platforms: Sequence[Platform]) -> str:
    return ", ".join(f"{os_} {arch}" for os_, arch in platforms)


def _lines(origins: Sequence[str]) -> str:
    return ", ".join(origins[:3]) + (f" and {len(origins) - 3} more" if len(origins) > 3 else "")
