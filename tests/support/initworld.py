"""Fake hosts for the ``lockgen init`` tests: every package a project's inputs name, served as
tiny wheels without dependencies, so a lock holds exactly the packages asked for; or, with
``shaped=True``, with the shapes of the real packages (the acceptance tests on real projects).

The requirements are read here with ``packaging`` alone (independently of lockgen's readers):
:func:`file_requirements` for requirement files, :func:`string_requirements` for a pyproject's
lists and install commands' arguments. :func:`serve` puts them on fake hosts: PyPI (PEP 691 with
upload times) for plain versions, ``download.pytorch.org/whl/<label>`` for labelled ones (and
each torch package for each backend index a test names), any other host for a direct URL.

The shapes (``shaped=True``) come from ``tests/data/realworld/shapes.json``, recorded from real
PyPI METADATA and file lists: torch's wheels require the CUDA runtime packages
(``nvidia-cublas-cu12`` …) and triton under ``platform_system == "Linux" and platform_machine ==
"x86_64"``, and those exist for linux only; packages that need torch (accelerate, timm, peft)
require it, as the real ones do; numpy's and scipy's wheels are cp-tagged for a range
of Pythons with ``Requires-Python`` (numpy 1.26.4: 3.9–3.12; 2.2.6: 3.10–3.13) and list bytecode
in RECORD; the pins PyPI has only a source distribution of are served so (``lycoris-lora==1.8.3``);
a GitHub release asset (``github.com/…/releases/download/…``) is a redirect to its
storage URL, and HEAD is refused with 403 (:class:`ReleaseAssets`), as GitHub's are.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from lockgen.scaffold.inference import marker_env
from tests.support.fakehost import FakeHost, Handler

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
SHAPES: dict[str, dict] = {
    name: shape
    for name, shape in json.loads(
        (Path(__file__).parents[1] / "data" / "realworld" / "shapes.json").read_text()
    ).items()
    if not name.startswith("_")
}
CUDA_ONLY = ("nvidia-", "triton")  # what torch's CUDA build requires and a cpu or rocm build does not


class ReleaseAssets(Handler):
    """GitHub release downloads: ``…/releases/download/…`` answers 302 to the asset's storage path
    (``/release-assets/…`` on the same host, where the file is), and the storage path refuses
    HEAD with 403, as the signed storage URLs (signed for GET) do."""

    def _redirected(self) -> bool:
        if "/releases/download/" not in self.path or self.path.startswith("/release-assets/"):
            return False
        self.send_response(302)
        self.send_header("Location", "/release-assets" + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def do_HEAD(self):  # noqa: N802 - http.server names its handlers so
        if not self._redirected():
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def do_GET(self):  # noqa: N802 - http.server names its handlers so
        if not self._redirected():
            super().do_GET()


def shape_of(name: str) -> dict | None:
    """The recorded shape of a canonical ``name`` (``nvidia-*-cu12`` covers the CUDA runtime packages)."""
    return SHAPES.get(name) or next((s for pattern, s in SHAPES.items() if fnmatch(name, pattern)), None)


def recorded(shape: dict | None) -> list[str]:
    """The versions a shape records (the one served by preference first)."""
    if shape is None:
        return []
    return [v for v in (shape.get("version"), *shape.get("releases", {})) if v]


def _tags(shape: dict, version: str) -> tuple[str | None, list[str], list[str]]:
    """``(requires_python, pythons, wheel tags)`` of a shaped release."""
    release = shape.get("releases", {}).get(version, {})
    pythons = release.get("pythons", shape["pythons"])
    platforms = release.get("platforms", shape["platforms"])
    if not pythons:
        return release.get("requires_python", shape["requires_python"]), [], [f"py3-none-{p}" for p in platforms]
    tags = [f"cp{py.replace('.', '')}-cp{py.replace('.', '')}-{p}" for py in pythons for p in platforms]
    return release.get("requires_python", shape["requires_python"]), pythons, tags


def shaped_wheels(host: FakeHost, folder: str, name: str, version: str, requires: Sequence[str]) -> list[Path]:
    """The wheels of one shaped release (one per Python and platform), bytecode in RECORD where
    the real ones list it."""
    shape = shape_of(name)
    assert shape is not None, name
    requires_python, _, tags = _tags(shape, version)
    made = []
    for tag in tags:
        files = None
        if shape.get("bytecode"):
            abi = tag.split("-")[1].removeprefix("cp")
            dist = name.replace("-", "_")
            files = {f"{dist}/__pycache__/__init__.cpython-{abi}.pyc": b"\x00" * 16}
        made.append(host.wheel(folder, name, version, tag, requires, requires_python, files=files))
    return made


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


def pick(specifier: str, preferred: Sequence[str] = ()) -> str:
    """A version the specifier allows: the first ``preferred`` one it does, else the one it pins,
    when it pins one."""
    spec = SpecifierSet(specifier)
    candidates = list(preferred)
    candidates += [s.version.removesuffix(".*") for s in spec] + ["1.0", "0.1", "99.0"]
    return next(c for c in candidates if spec.contains(c, prereleases=True))


def serve(wanted: Iterable[Wanted], make_host: Callable[..., FakeHost], indexes: Sequence[str] = (),
          shaped: bool = False) -> list[str]:  # fmt: skip
    """Serve ``wanted`` on fake hosts; ``indexes``: backend index paths of download.pytorch.org
    (``whl/cu128``, ``whl/nightly/cu132``) that serve each torch-family package the tests ask
    for, labelled like the real ones; ``shaped``: packages with a recorded shape get it, their
    dependencies are served too (on PyPI, and on each index that serves the package that needs
    them), and GitHub is served as :class:`ReleaseAssets`. Returns the ``--mirror`` arguments."""
    pypi, pytorch = make_host("pypi"), make_host("pytorch")
    others: dict[str, FakeHost] = {}
    releases: set[str] = set()  # hosts served as GitHub's release downloads
    pypi_files: list[Path] = []
    index_files: dict[str, list[Path]] = {ix: [] for ix in indexes}
    done: set[tuple[str, str, str]] = set()
    queue = list(wanted)

    def once(where: str, name: str, version: str) -> bool:
        key = (where, name, version)
        if key in done:
            return False
        done.add(key)
        return True

    def publish(host: FakeHost, where: str, name: str, version: str, label: str | None = None) -> list[Path]:
        shape = shape_of(name) if shaped else None
        folder = "files" if where == "pypi" else f"{where}/files"
        if shape is None:
            requires: tuple[str, ...] = ()
            if name == "torch" and where == "pypi":  # PyPI's torch: its linux x86_64 install pulls the CUDA runtime
                runtime, at = PYPI_TORCH_RUNTIME.get(".".join(version.split(".")[:2]), NEWEST_RUNTIME)
                requires = (f'{runtime}=={at}; platform_system == "Linux" and platform_machine == "x86_64"',)
                if once("pypi", runtime, at):
                    pypi_files.append(host.wheel("files", runtime, at, "py3-none-manylinux_2_28_x86_64"))
            return [host.wheel(folder, name, version, requires=requires)]
        if shape.get("sdist"):
            return [host.sdist(folder, name, version)]
        requires = (
            list(shape.get("requires", ())) if shape.get("every_version") or version == shape.get("version") else []
        )
        if label is not None and not label.startswith("cu"):
            requires = [r for r in requires if not Requirement(r).name.startswith(CUDA_ONLY)]
        for r in map(Requirement, requires):  # dependencies: where the package is
            dep = Wanted(canonicalize_name(r.name), str(r.specifier), None, None)
            if where == "pypi":
                queue.append(dep)
                continue
            dep_version = pick(dep.spec, recorded(shape_of(dep.name)))
            if once(where, dep.name, dep_version):
                index_files[where] += publish(pytorch, where, dep.name, dep_version, label)
        return shaped_wheels(host, folder, name, version, requires)

    while queue:
        w = queue.pop(0)
        if w.url:
            parts = urlsplit(w.url)
            hostname = parts.hostname or ""
            if hostname not in others:
                if shaped and hostname == "github.com":
                    releases.add(hostname)
                others[hostname] = make_host(f"direct-{hostname}", *([ReleaseAssets] if hostname in releases else []))
            host = others[hostname]
            filename = unquote(PurePosixPath(parts.path).name)
            _, version, _, tags = parse_wheel_filename(filename)
            folder = PurePosixPath(parts.path).parent.as_posix().lstrip("/")
            if hostname in releases:
                folder = f"release-assets/{folder}"
            tag = "-".join(".".join(sorted({getattr(t, a) for t in tags})) for a in ("interpreter", "abi", "platform"))
            if once(f"direct/{folder}", w.name, filename):
                built = host.wheel(folder, w.name, str(version), tag)
                built.rename(built.parent / filename)
            continue
        shape = shape_of(w.name) if shaped else None
        version = pick(w.spec, recorded(shape))
        local = Version(version).local
        if local:
            where = next((ix for ix in index_files if ix.rsplit("/", 1)[-1] == local), f"whl/{local}")
            if once(where, w.name, version):
                index_files.setdefault(where, []).extend(publish(pytorch, where, w.name, version, local))
            continue
        older = [v for v in shape.get("also", ()) if SpecifierSet(w.spec).contains(v)] if shape else []
        for served in (version, *older):
            if once("pypi", w.name, served):
                pypi_files.extend(publish(pypi, "pypi", w.name, served))
        if w.name in TORCH_FAMILY:
            for ix in indexes:
                label = ix.rsplit("/", 1)[-1]
                served = f"{version}+{label}" if w.name in TORCH else version
                if once(ix, w.name, served):
                    index_files[ix].extend(publish(pytorch, ix, w.name, served, label))
    pypi.index_page("simple", pypi_files, upload_time=TIME)
    for ix, files in index_files.items():
        pytorch.index_page(ix, files)
    mirrors = [f"https://pypi.org/simple={pypi.url}/simple", f"https://files.pythonhosted.org={pypi.url}/files",
               f"https://download.pytorch.org={pytorch.url}"]  # fmt: skip
    mirrors += [f"https://{name}={host.url}" for name, host in others.items()]
    return [arg for m in mirrors for arg in ("--mirror", m)]
