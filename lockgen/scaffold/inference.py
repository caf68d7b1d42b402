"""``lockgen init``, step 2: what each requirement file is for. Pure.

A file's platforms come from the wheels it names by URL (their platform tags, under their
markers, evaluated with ``packaging`` for each candidate target) or else from its name
(``requirements_mac.txt``, ``apple_silicon``); a marker on a plain requirement
(``pywin32; sys_platform == "win32"``) is a conditional dependency, not a platform. Its backend
comes, first found wins, from its index lines (``…/whl/cu128`` -> ``cu128``), torch's local label
(``torch==2.3.1+cu121``), its name (``cuda131`` -> ``cu131``, ``amd`` -> rocm, ``cpu``), the local
labels of the wheels it names, the ``--index`` URLs given to ``lockgen init``, else ``cpu``
(``mps`` on Apple silicon). Words of the name that say neither are the file's variant words.
What the user says of a file (``FILE:os=linux,arch=aarch64``, :func:`parse_given`) comes first.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from lockgen.scaffold.builds import CPU_INDEX
from lockgen.scaffold.reading import Line, ReqFile, holds

__all__ = [
    "DEFAULT_PLATFORMS",
    "PLATFORMS",
    "Facts",
    "Given",
    "Platform",
    "backend_label",
    "default_torch",
    "family",
    "infer",
    "is_gpu",
    "label_word",
    "local_label",
    "parse_given",
]

Platform = tuple[str, str]
PLATFORMS: tuple[Platform, ...] = (("linux", "x86_64"), ("linux", "aarch64"), ("windows", "x86_64"),
                                   ("windows", "aarch64"), ("macos", "x86_64"), ("macos", "aarch64"))  # fmt: skip
DEFAULT_PLATFORMS: tuple[Platform, ...] = (("linux", "x86_64"), ("windows", "x86_64"), ("macos", "aarch64"))
_DEFAULT_ARCH = {"linux": "x86_64", "windows": "x86_64", "macos": "aarch64"}
_OS_WORDS = {"linux": "linux", "windows": "windows", "win": "windows", "win32": "windows", "win64": "windows",
             "mac": "macos", "macos": "macos", "osx": "macos", "darwin": "macos", "apple": "macos"}  # fmt: skip
_ARCH_WORDS = {"arm64": "aarch64", "aarch64": "aarch64", "silicon": "aarch64", "x86_64": "x86_64", "x64": "x86_64",
               "amd64": "x86_64", "intel": "x86_64"}  # fmt: skip
#: Devices that are only ever Linux on 64-bit ARM (NVIDIA Jetson and its L4T, Grace: GH200,
#: GB200, GB10 / DGX Spark's chip, SBSA builds), and NVIDIA DGX machines, which run DGX OS (an
#: Ubuntu Linux) on x86_64 (DGX A100, H100, B200) and on aarch64 (DGX Spark, GB200). ``spark``
#: alone is not among them: "Spark" names Windows-on-ARM sets too (ai-toolkit's, whose comments
#: name the ``win_arm64`` wheel tag: :func:`comment_platforms`).
_DEVICE_WORDS: dict[str, tuple[Platform, ...]] = {
    "jetson": (("linux", "aarch64"),), "l4t": (("linux", "aarch64"),), "grace": (("linux", "aarch64"),),
    "gh200": (("linux", "aarch64"),), "gb200": (("linux", "aarch64"),), "gb10": (("linux", "aarch64"),),
    "sbsa": (("linux", "aarch64"),), "dgx": (("linux", "x86_64"), ("linux", "aarch64")),
}  # fmt: skip
#: Wheel platform tags (PEP 425, PEP 600, PEP 656; macOS's ``macosx_X_Y_ARCH``) as a file's
#: comments write them, and the platform each is for.
_TAG = re.compile(
    r"\b(?:(?P<win>win_(?:amd64|arm64))|(?:many|musl)?linux(?:_\d+)*_(?P<linux>x86_64|aarch64)"
    r"|macosx(?:_\d+)+_(?P<mac>x86_64|arm64))\b"
)
_FILLER = {"requirements", "requirement", "reqs", "req", "txt", "in", "only", "deps", "dependencies"}
#: Builds no index's local label spells, known by their name.
_NAMED_BUILDS = ("mps", "vulkan", "directml")
_GPU = re.compile(r"^(cu\d+|cuda|rocm[\d.]*|xpu|directml|vulkan)$")
_TORCH = {"torch", "torchvision", "torchaudio"}
#: Packages built per backend that backend indexes serve (download.pytorch.org's).
TORCH_FAMILY = re.compile(r"^(torch|torchvision|torchaudio|xformers|triton|pytorch-triton(-.+)?|triton-(rocm|xpu))$")
_MARKER_OS = {
    "linux": ("Linux", "linux", "posix"),
    "windows": ("Windows", "win32", "nt"),
    "macos": ("Darwin", "darwin", "posix"),
}
_MACHINE = {("linux", "x86_64"): "x86_64", ("linux", "aarch64"): "aarch64", ("windows", "x86_64"): "AMD64",
            ("windows", "aarch64"): "ARM64", ("macos", "x86_64"): "x86_64", ("macos", "aarch64"): "arm64"}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Given:
    """What is said of a file from outside it, first before anything inferred: its
    ``platforms``, its ``backend`` and the ``flavor`` of that backend's index (``cu132`` for a
    ``cu132_nightly`` backend), and ``why`` (``given on the command line``)."""

    platforms: tuple[Platform, ...] | None = None
    backend: str | None = None
    flavor: str | None = None
    index: str | None = None  # the backend's index URL
    why: str = "given on the command line"


def parse_given(argument: str, exists: Callable[[str], bool]) -> tuple[str, Given | None]:
    """``FILE`` or ``FILE:KEY=VALUE,…`` (keys ``os``, ``arch``, ``backend``; repeat a key for
    several values: ``reqs.txt:os=linux,os=windows,arch=x86_64``) -> (file, what it says).
    Platforms are the product of the oses (all three when none is given) and the arches (each
    os's usual one when none is given). An argument naming an existing file is that file, colon
    or not. Raises :class:`~lockgen.runtime.errors.UsageError` for an unknown key or value."""
    from lockgen.runtime.errors import UsageError

    if exists(argument) or ":" not in argument:
        return argument, None
    name, _, spec = argument.rpartition(":")
    values: dict[str, list[str]] = {"os": [], "arch": [], "backend": []}
    for item in spec.split(","):
        key, _, value = item.partition("=")
        key, value = key.strip(), value.strip().lower()
        if key not in values or not value:
            raise UsageError(
                f"{argument}: say a file's platform as FILE:os=linux,arch=aarch64 (keys: os, arch, backend)"
            )
        if key == "os" and value not in _MARKER_OS:
            raise UsageError(f"{argument}: os {value!r}: use linux, windows or macos")
        if key == "arch":
            value = _ARCH_WORDS.get(value, value)
            if value not in ("x86_64", "aarch64"):
                raise UsageError(f"{argument}: arch {value!r}: use x86_64 or aarch64")
        if key == "backend" and not re.fullmatch(r"[a-z0-9][a-z0-9._]*", value):
            raise UsageError(f"{argument}: backend {value!r}: a label of lower-case letters, digits, '.' and '_'")
        values[key].append(value)
    platforms = None
    if values["os"] or values["arch"]:
        oses = values["os"] or list(_MARKER_OS)
        platforms = tuple(p for p in PLATFORMS if p[0] in oses and p[1] in (values["arch"] or [_DEFAULT_ARCH[p[0]]]))
    backend = values["backend"][-1] if values["backend"] else None
    return name, Given(platforms=platforms, backend=backend, why=f"given as {argument}")


def family(label: str) -> str:
    """The build family of a backend label: ``cu128`` and ``cuda`` -> ``cuda``, ``rocm6.3`` ->
    ``rocm``, ``cu132_nightly`` -> ``cuda``, ``mps`` -> ``cpu`` (Apple's GPU needs no other
    build), else the label (``xpu``, ``directml``, ``vulkan``)."""
    label = label.split("_")[0]
    if label.startswith("cu"):
        return "cuda"
    if label.startswith("rocm") or label == "amd":
        return "rocm"
    return "cpu" if label == "mps" else label


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
    flavors: dict[str, str] = field(default_factory=dict)  # backend -> its flavor, where they differ
    #: whether ``platforms`` are the file's alone, so a file that names none leaves them to it: not
    #: so for a device's (``dgx``: one kind of linux machine among others, its file a variant)
    claims: bool = True


def backend_label(url: str) -> str | None:
    """The backend label an index URL ends in (``https://download.pytorch.org/whl/cu128`` ->
    ``cu128``; ``…/whl/nightly/rocm7.1/`` -> ``rocm7.1``), else None. Read by lockgen's label
    grammar (:mod:`lockgen.resolve.labels`): the last path segment must be a backend and nothing
    else (``mps``, ``vulkan`` and ``directml``, which no index label spells, by name)."""
    last = PurePosixPath(urlsplit(url).path.rstrip("/")).name.lower()
    return label_word(last)


def label_word(word: str) -> str | None:
    """``word`` when it is a backend label and nothing else (``cu128``, ``rocm6.3``, ``cpu``,
    ``xpu``, by :func:`lockgen.resolve.labels.read`; ``mps``, ``vulkan``, ``directml``), else None."""
    from lockgen.resolve import labels

    if word in _NAMED_BUILDS:
        return word
    read = labels.read(word)
    if not isinstance(read, labels.Label) or read.backend is None or read.torch or read.build or read.python:
        return None
    if read.backend.kind in ("cuda", "rocm") and not read.backend.version:
        return None
    return read.backend.flavor if read.backend.flavor == word else None


def _words(path: str) -> list[str]:
    parts = [*PurePosixPath(path).parent.parts, PurePosixPath(path).stem]
    return [w for part in parts for w in re.split(r"[_\-\s]+", part.lower()) if w and w not in _FILLER]


def marker_env(os_: str, arch: str, python: str) -> dict[str, str]:
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
    return {p for p in tagged if any(holds(line.marker, marker_env(*p, py)) for py in pythons)}


def local_label(line: Line) -> str | None:
    """The backend label a line's exact version carries, read by lockgen's label grammar
    (:mod:`lockgen.resolve.labels`): ``torch==2.7.1+cu118`` -> ``cu118``; ``+rocm7.2.0.lw.git…``
    -> ``rocm7.2`` (download.pytorch.org's ROCm labels drop a last ``.0``); ``+vulkan…`` ->
    ``vulkan`` (llama.cpp's builds, which the grammar does not read)."""
    from lockgen.resolve import labels

    if line.version is None or not line.version.local:
        return None
    local = str(line.version.local)
    if local.startswith("vulkan"):
        return "vulkan"
    read = labels.read(local)
    if not isinstance(read, labels.Label) or read.backend is None:
        return None
    if read.backend.kind in ("cuda", "rocm") and not read.backend.version:
        return None
    return re.sub(r"^(rocm\d+\.\d+)\.0$", r"\1", read.backend.flavor)


def infer(file: ReqFile, pythons: Sequence[str], cli_indexes: Sequence[str], given: Given | None = None) -> Facts:
    """The :class:`Facts` of ``file`` for target Pythons ``pythons`` and ``lockgen init
    --index`` URLs ``cli_indexes``; what ``given`` says wins over what init would infer."""
    reasons: list[str] = []
    lines = (*file.lines, *file.rendered)
    words = _words(file.stem or file.path)
    rest: list[str] = []
    name_os = sorted({_OS_WORDS[w] for w in words if w in _OS_WORDS})
    name_arch = sorted({_ARCH_WORDS[w] for w in words if w in _ARCH_WORDS})
    devices = sorted({p for w in words if w in _DEVICE_WORDS for p in _DEVICE_WORDS[w]})
    name_backend: str | None = None
    for w in words:
        if w in _OS_WORDS or w in _ARCH_WORDS or (w in _DEVICE_WORDS and len(_DEVICE_WORDS[w]) == 1):
            continue  # a device that is one platform says only that; "dgx" also names a variant
        cuda = re.fullmatch(r"cuda(\d+)", w)
        if cuda or label_word(w) or w in ("cuda", "nvidia", "amd", "rocm"):
            name_backend = (
                f"cu{cuda[1]}" if cuda else "rocm" if w in ("amd", "rocm") else "cuda" if w in ("cuda", "nvidia") else w
            )
            continue
        rest.append(w)
    # platforms
    seen: set[Platform] = set()
    shown: list[str] = []
    claims = True
    for line in lines:
        if line.wheel_platforms and line.wheel_platforms != {"any"}:
            where = _wheel_platforms(line, pythons)
            if where:
                seen |= where
                shown.append(line.origin)
    platforms: tuple[Platform, ...] | None
    if given is not None and given.platforms is not None:
        platforms = given.platforms
        reasons.append(f"platforms {_show(platforms)}: {given.why}")
    elif seen:
        platforms = tuple(p for p in PLATFORMS if p in seen)
        reasons.append(f"platforms {_show(platforms)}: the wheels it names by URL ({_lines(shown)})")
    elif name_os or name_arch:
        oses = name_os or ["linux"]
        platforms = tuple(p for p in PLATFORMS if p[0] in oses and p[1] in (name_arch or [_DEFAULT_ARCH[p[0]]]))
        reasons.append(f"platforms {_show(platforms)}: its name")
    elif tagged := comment_platforms(file):
        platforms = tuple(p for p in PLATFORMS if p in tagged)
        shown_tags = ", ".join(f"{tag} ({where})" for tag, where in tagged.values())
        reasons.append(f"platforms {_show(platforms)}: the wheel platform its comments name: {shown_tags}")
    elif devices:
        platforms = tuple(p for p in PLATFORMS if p in devices)
        claims = False
        reasons.append(f"platforms {_show(platforms)}: its name (a device that is only ever {_show(platforms)})")
    else:
        platforms = None
    torch_lines = [ln for ln in lines if ln.name in _TORCH]
    if platforms is None and torch_lines and all(ln.marker is not None for ln in torch_lines):
        # markers on its torch lines say where its build installs (a linux-only line: no windows cells)
        held = tuple(p for p in PLATFORMS if p in DEFAULT_PLATFORMS or p in name_platforms(words)
                     if any(_holds(ln, p, pythons) for ln in torch_lines))  # fmt: skip
        if held:
            platforms = held
            reasons.append(
                f"platforms {_show(platforms)}: the markers of its torch lines ({_lines([ln.origin for ln in torch_lines])})"
            )
    # backend
    indexes: dict[str, str] = {}
    backends: list[str] = []
    flavors: dict[str, str] = {}
    if given is not None and given.backend is not None:
        backends = [given.backend]
        if given.flavor and given.flavor != given.backend:
            flavors[given.backend] = given.flavor
        if given.index:
            indexes[given.backend] = given.index
        else:  # a labelled index line of the file for that backend
            for index in file.indexes:
                if index.kind != "find-links" and backend_label(index.url) == (given.flavor or given.backend):
                    indexes[given.backend] = index.url
        reasons.append(f"backend {given.backend}: {given.why}")
    for index in file.indexes if not backends else ():
        label = backend_label(index.url)
        if label and index.kind != "find-links":
            indexes[label] = index.url
            backends.append(label)
            reasons.append(f"backend {label}: the index {index.url} ({index.origin})")
    if not backends:
        torch = [(label, line) for line in lines if line.name in _TORCH and (label := local_label(line))]
        wheels = [(lb, ln) for ln in lines if (lb := local_label(ln))]
        labels = Counter(label for label, _ in (torch or wheels))
        generic = name_backend in ("cuda", "rocm")
        if torch:
            backends = [torch[0][0]]
            reasons.append(f"backend {backends[0]}: the local label of {torch[0][1].text} ({torch[0][1].origin})")
        elif name_backend and not (generic and labels):
            backends = [name_backend]
            reasons.append(f"backend {name_backend}: its name")
        elif labels:
            prefix = {"cuda": "cu", "rocm": "rocm"}.get(name_backend or "", "")
            # an extension built against torch (+cu128torch2.9.0) shows torch's build: it counts first
            torch_built = Counter(lb for lb, ln in wheels if "torch" in str(ln.version and ln.version.local))
            ranked = [lb for lb, _ in (torch_built or labels).most_common()]
            label = next((lb for lb in ranked if lb.startswith(prefix)), ranked[0])
            backends = [label]
            reasons.append(f"backend {label}: the local label most of the wheels it names carry (+{label})")
        elif cli_indexes:
            for url in cli_indexes:
                label = backend_label(url)
                if label:
                    indexes[label] = url
                    backends.append(label)
            reasons.append(f"backends {', '.join(backends)}: the --index URLs")
    if (
        backends == ["cpu"]
        and name_backend == "cpu"
        and not indexes
        and torch_lines
        and not any(local_label(ln) or ln.wheel_platforms for ln in torch_lines)
    ):
        indexes["cpu"] = CPU_INDEX
        reasons.append(f"the CPU index {CPU_INDEX} for its torch packages: its name says cpu and it names no index, "
                       "and PyPI's linux torch is a CUDA build")  # fmt: skip
    names_torch = any(ln.name == "torch" for ln in lines)
    torch_pin = next((ln.version.public for ln in lines if ln.name == "torch" and ln.version), None)
    builds = {flavors.get(b, b) for b in backends}
    mixed = tuple(
        dict.fromkeys(
            (str(ln.name), lb)
            for ln in lines
            if ln.name is not None and (lb := local_label(ln)) and backends
            and ((lb not in builds and lb != "cpu") or ("torch" in str(ln.version and ln.version.local) and not names_torch)
                 or _other_torch(ln, torch_pin))
        )
    )  # fmt: skip
    # torch from a wheel URL whose version carries no backend label (AMD's +gitfc14c65): the
    # invariants cannot see its build, so they would refuse a GPU cell
    unseen = [ln for ln in lines if ln.name == "torch" and ln.wheel_platforms and not local_label(ln)]
    if unseen and any(is_gpu(b) for b in backends):
        mixed += (
            (
                str(unseen[0].name),
                f"+{unseen[0].version.local}" if unseen[0].version and unseen[0].version.local else "unlabelled",
            ),
        )
    if mixed:
        reasons.append(
            f"allow-mix for {', '.join(n for n, _ in mixed)}: it names their {', '.join(sorted({lb for _, lb in mixed}))} "
            f"builds beside {', '.join(backends)} (or builds for another torch, or without the torch they were built "
            "for); the backend invariants would refuse that: review it"
        )
    return Facts(platforms=platforms, backends=tuple(backends), indexes=indexes, words=tuple(rest),
                 reasons=tuple(reasons), mixed=mixed, flavors=flavors, claims=claims)  # fmt: skip


def default_torch(
    file: ReqFile, pythons: Sequence[str], pulls: Mapping[str, str] | None = None
) -> tuple[SpecifierSet, str | None] | None:
    """The torch requirement of a file whose torch comes from the default index and what brings
    it in: its ``torch`` lines' specifiers (``SpecifierSet()`` when only torchvision or
    torchaudio is named: they require torch), else, from ``pulls`` (:func:`survey`), the torch
    requirement of a package it names that requires torch (``pytorch-lightning``) and that
    package; None when nothing brings torch in, it names a labelled build (``+cu121``) or a wheel
    URL, or its torch lines' markers leave linux out."""
    found: SpecifierSet | None = None
    for line in (*file.lines, *file.rendered):
        if line.name not in ("torch", "torchvision", "torchaudio"):
            continue
        if local_label(line) or line.wheel_platforms:
            return None
        if line.marker is not None and not any(
            holds(line.marker, marker_env("linux", arch, py)) for arch in ("x86_64", "aarch64") for py in pythons
        ):
            continue
        found = found or SpecifierSet()
        if line.name == "torch":
            with contextlib.suppress(InvalidRequirement):
                found &= Requirement(line.text).specifier
    if found is not None:
        return found, None
    for line in (*file.lines, *file.rendered):
        if line.name is not None and line.name in (pulls or {}):
            with contextlib.suppress(InvalidRequirement):
                return Requirement((pulls or {})[line.name]).specifier, str(line.name)
    return None


def comment_platforms(file: ReqFile) -> dict[Platform, tuple[str, str]]:
    """The platforms the wheel platform tags in ``file``'s own comments name (``# native
    Windows-on-ARM (win_arm64) requirement set``: windows aarch64), each with the first tag and
    the ``file:line`` it is on; empty where its comments name none, or name no platform only
    (a comment that names two platforms names them both)."""
    found: dict[Platform, tuple[str, str]] = {}
    for where, text in file.comments:
        for m in _TAG.finditer(text):
            if m["win"]:
                p: Platform = ("windows", "aarch64" if m["win"].endswith("arm64") else "x86_64")
            elif m["linux"]:
                p = ("linux", m["linux"])
            else:
                p = ("macos", "aarch64" if m["mac"] == "arm64" else "x86_64")
            found.setdefault(p, (m[0], where))
    return found


def name_platforms(words: Sequence[str]) -> set[Platform]:
    """The platforms the words of a file's name say, if any (none: every default one)."""
    oses = {_OS_WORDS[w] for w in words if w in _OS_WORDS}
    arches = {_ARCH_WORDS[w] for w in words if w in _ARCH_WORDS}
    return (
        {p for p in PLATFORMS if (not oses or p[0] in oses) and (not arches or p[1] in arches)}
        if oses or arches
        else set()
    )


def _holds(line: Line, p: Platform, pythons: Sequence[str]) -> bool:
    return line.marker is None or any(holds(line.marker, marker_env(*p, py)) for py in pythons)


def _other_torch(line: Line, torch: str | None) -> bool:
    """Whether an extension's local label names a torch release (``+cu128torch2.9.0``) other
    than the torch the file pins, at the precision the label gives."""
    found = re.search(r"torch(\d+\.\d+(?:\.\d+)?)", str(line.version.local) if line.version else "")
    if torch is None or found is None:
        return False
    return torch.split(".")[: found[1].count(".") + 1] != found[1].split(".")


def is_gpu(backend: str) -> bool:
    """Whether a backend label names a GPU build (no such build exists for macOS); a suffix
    (``cu132_nightly``) does not change the build."""
    return bool(_GPU.match(backend.split("_")[0]))


def _show(platforms: Sequence[Platform]) -> str:
    return ", ".join(f"{os_} {arch}" for os_, arch in platforms)


def _lines(origins: Sequence[str]) -> str:
    return ", ".join(origins[:3]) + (f" and {len(origins) - 3} more" if len(origins) > 3 else "")
