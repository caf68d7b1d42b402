"""Fake hosts for the ``lockgen init`` tests: every package a project's inputs name, served as
tiny wheels without dependencies, so a lock holds exactly the packages asked for.

The requirements are read here with ``packaging`` alone (independently of lockgen's readers):
:func:`file_requirements` for requirement files, :func:`string_requirements` for a pyproject's
lists and install commands' arguments. :func:`serve` puts them on fake hosts: PyPI (PEP 691 with
upload times) for plain versions, ``download.pytorch.org/whl/<label>`` for labelled ones (and
each torch package for each backend index a test names), any other host for a direct URL.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from lockgen.scaffold.inference import marker_env
from tests.support.fakehost import FakeHost

TIME = "2026-01-01T00:00:00Z"
#: The CUDA runtime PyPI's linux x86_64 torch requires, per torch release (its real
#: Requires-Dist; ``nvidia-cuda-runtime`` unsuffixed from CUDA 13). An unpinned torch is served
#: as a release newer than any here: CUDA 13's runtime.
PYPI_TORCH_RUNTIME = {"2.1": ("nvidia-cuda-runtime-cu12", "12.1.105"), "2.3": ("nvidia-cuda-runtime-cu12", "12.1.105"),
                      "2.7": ("nvidia-cuda-runtime-cu12", "12.6.77"), "2.8": ("nvidia-cuda-runtime-cu12", "12.8.90"),
                      "2.9": ("nvidia-cuda-runtime-cu12", "12.8.90")}  # fmt: skip
NEWEST_RUNTIME = ("nvidia-cuda-runtime", "13.0.96")
RUNTIMES = {name for name, _ in (*PYPI_TORCH_RUNTIME.values(), NEWEST_RUNTIME)}
TORCH = {"torch", "torchvision", "torchaudio"}
TORCH_FAMILY = TORCH | {"xformers", "triton", "triton-rocm", "triton-xpu", "torch-directml"}


@dataclass(frozen=True)
class Wanted:
    """One requirement: canonical ``name``, ``spec`` (specifier text), ``marker``, direct ``url``."""

    name: str
    spec: str
    marker: Marker | None
    url: str | None

    def holds(self, os_: str, arch: str, python: str) -> bool:
        return self.marker is None or self.marker.evaluate(marker_env(os_, arch, python))


def string_requirements(lines: Iterable[str]) -> list[Wanted]:
    """PEP 508 strings, or bare wheel URLs (``URL; marker``), as :class:`Wanted`."""
    found = []
    for line in lines:
        try:
            req = Requirement(line)
            found.append(Wanted(canonicalize_name(req.name), str(req.specifier), req.marker, req.url))
        except InvalidRequirement:
            url, _, marker = line.partition(";")
            name = parse_wheel_filename(unquote(PurePosixPath(urlsplit(url.strip()).path).name))[0]
            found.append(Wanted(name, "", Marker(marker) if marker.strip() else None, url.strip()))
    return found


def file_requirements(path: Path) -> list[Wanted]:
    """Every requirement of a requirement file, ``-r`` followed."""
    lines: list[str] = []
    for raw in path.read_text().splitlines():
        line = raw.split(" #")[0].strip() if not raw.lstrip().startswith("#") else ""
        if line.startswith("-r"):
            lines += [f"{w.name}{w.spec}" + (f"; {w.marker}" if w.marker else "") if not w.url else
                      (f"{w.url}; {w.marker}" if w.marker else w.url) for w in file_requirements(path.parent / line[2:].strip())]  # fmt: skip
        elif line and not line.startswith("-"):
            lines.append(line)
    return string_requirements(lines)


def command_requirements(arguments: str) -> list[Wanted]:
    """The packages of one ``pip install`` argument string (options and their values left out)."""
    takes_value = {"--index-url", "-i", "--extra-index-url", "-f", "--find-links"}
    tokens = shlex.split(arguments.replace(";", " ; "))
    found, skip = [], False
    for token in tokens:
        if skip or token in (";", "pip", "install", "python", "-m"):
            skip = False
            continue
        if token.startswith("-"):
            skip = token in takes_value
            continue
        found.append(token)
    return string_requirements(found)


def pick(specifier: str) -> str:
    """A version the specifier allows (the one it pins, when it pins one)."""
    spec = SpecifierSet(specifier)
    candidates = [s.version.removesuffix(".*") for s in spec] + ["1.0", "0.1", "99.0"]
    return next(c for c in candidates if spec.contains(c, prereleases=True))


def serve(wanted: Iterable[Wanted], make_host: Callable[[str], FakeHost], indexes: Sequence[str] = ()) -> list[str]:
    """Serve ``wanted`` on fake hosts; ``indexes``: backend index paths of download.pytorch.org
    (``whl/cu128``, ``whl/nightly/cu132``) that serve each torch-family package the tests ask
    for, labelled like the real ones. Returns the ``--mirror`` arguments."""
    pypi, pytorch = make_host("pypi"), make_host("pytorch")
    others: dict[str, FakeHost] = {}
    pypi_files: list[Path] = []
    index_files: dict[str, list[Path]] = {ix: [] for ix in indexes}
    done: set[tuple[str, str, str]] = set()

    def once(where: str, name: str, version: str) -> bool:
        key = (where, name, version)
        if key in done:
            return False
        done.add(key)
        return True

    for w in wanted:
        if w.url:
            parts = urlsplit(w.url)
            host = others.setdefault(parts.hostname or "", make_host(f"direct-{parts.hostname}"))
            filename = unquote(PurePosixPath(parts.path).name)
            _, version, _, tags = parse_wheel_filename(filename)
            folder = PurePosixPath(parts.path).parent.as_posix().lstrip("/")
            tag = "-".join(".".join(sorted({getattr(t, a) for t in tags})) for a in ("interpreter", "abi", "platform"))
            if once(f"direct/{folder}", w.name, filename):
                built = host.wheel(folder, w.name, str(version), tag)
                built.rename(built.parent / filename)
            continue
        version = pick(w.spec)
        local = Version(version).local
        if local:
            where = next((ix for ix in index_files if ix.rsplit("/", 1)[-1] == local), f"whl/{local}")
            if once(where, w.name, version):
                index_files.setdefault(where, []).append(pytorch.wheel(f"{where}/files", w.name, version))
            continue
        if once("pypi", w.name, version):
            requires: tuple[str, ...] = ()
            if w.name == "torch":  # PyPI's torch has the real shape: its linux x86_64 install pulls the CUDA runtime
                runtime, at = PYPI_TORCH_RUNTIME.get(".".join(version.split(".")[:2]), NEWEST_RUNTIME)
                requires = (f'{runtime}=={at}; platform_system == "Linux" and platform_machine == "x86_64"',)
                if once("pypi", runtime, at):
                    pypi_files.append(pypi.wheel("files", runtime, at, "py3-none-manylinux_2_28_x86_64"))
            pypi_files.append(pypi.wheel("files", w.name, version, requires=requires))
        if w.name in TORCH_FAMILY:
            for ix in indexes:
                label = ix.rsplit("/", 1)[-1]
                served = f"{version}+{label}" if w.name in TORCH else version
                if once(ix, w.name, served):
                    index_files[ix].append(pytorch.wheel(f"{ix}/files", w.name, served))
    pypi.index_page("simple", pypi_files, upload_time=TIME)
    for ix, files in index_files.items():
        pytorch.index_page(ix, files)
    mirrors = [f"https://pypi.org/simple={pypi.url}/simple", f"https://files.pythonhosted.org={pypi.url}/files",
               f"https://download.pytorch.org={pytorch.url}"]  # fmt: skip
    mirrors += [f"https://{name}={host.url}" for name, host in others.items()]
    return [arg for m in mirrors for arg in ("--mirror", m)]
