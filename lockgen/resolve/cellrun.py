"""What the uv runs of one cell share, and the reading of one resolution.

A :class:`CellRun` builds and runs a cell's uv commands (through a runner, the seam for tests).
:func:`read_pylock` reads uv's PEP 751 output back as target-only data with canonical URLs;
:func:`describe` turns a resolution into lock entries: uv renders the same versions, pinned
exactly and offline, as a requirements file, which adds what PEP 751 data does not carry: the
extras a package was asked for (pip 23.2 needs them on the locked line, CASES C19) and ``# via``
annotations; hashes come from the PEP 751 data. Direct references (a local project folder,
editable or not, a local archive, a VCS checkout) are described from the PEP 751 data too: the
package's own name, its path relative to the project root, a VCS URL at the commit uv resolved
(issue 9; the lines are those of :mod:`lockgen.locks.lock`).
"""

from __future__ import annotations

import os
import posixpath
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.pylock import Package, PackageArchive, PackageDirectory, Pylock

from lockgen.errors import CellFailed, LockgenError
from lockgen.locks import pylockfile
from lockgen.locks.lock import Entry, Header, LayerKind, is_local, parse_entries
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.plan.sources import INDEX_PROJECT_NAME, explicit_indexes
from lockgen.resolve import uv, uvout
from lockgen.resolve.hashcheck import Verified
from lockgen.resolve.inputs import URL_PINS
from lockgen.resolve.probe import Reach

__all__ = ["Builds", "CellRun", "Resolved", "committed", "describe", "pylock_path", "read_pylock", "registry"]


@dataclass
class Builds:
    """The ``allow-build`` packages that must be built from source because no version they may
    have offers a wheel for the target; learned once, shared by the cells of a run. Every other
    package is locked from wheels only (``--only-binary :all:``): uv prefers an older version
    with a wheel to a newer sdist-only one (CASES C26)."""

    _names: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def names(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._names)

    def add(self, names: Iterable[str]) -> None:
        with self._lock:
            self._names.update(names)

    @classmethod
    def learned(cls, root: Path, plans: Iterable[Plan]) -> Builds:
        """What the committed ``pylock.toml`` files show: ``allow-build`` packages locked from an
        sdist alone (so a warm run does not learn them again)."""
        pylocks = {}
        for plan in plans:
            path = root / pylock_path(plan.lock)
            try:
                pylocks[plan.cell.name] = pylockfile.loads(path.read_text(encoding="utf-8"), str(path))
            except (OSError, LockgenError):
                continue
        return cls.from_pylocks(plans, pylocks)

    @classmethod
    def from_pylocks(cls, plans: Iterable[Plan], pylocks: Mapping[str, Pylock]) -> Builds:
        """:meth:`learned` from already read committed pylocks (cell name -> pylock)."""
        builds = cls()
        for plan in plans:
            pylock = pylocks.get(plan.cell.name)
            if pylock is not None:
                builds.add(p.name for p in pylock.packages if p.name in plan.allow_build and _built(p))
        return builds


def _built(package: Package) -> bool:
    """Whether installing ``package`` builds it: an sdist alone, a VCS checkout, a project folder."""
    return bool(package.sdist and not package.wheels) or package.vcs is not None or package.directory is not None


@dataclass(frozen=True)
class CellRun:
    """What every uv run of one cell shares. ``config`` is the config file's name (locks say
    which file generated them)."""

    root: Path
    plan: Plan
    options: uv.Options
    mirrors: Mirrors
    runner: uv.RunnerLike
    config: str = "pyproject.toml"
    builds: Builds = field(default_factory=Builds)
    reach: Reach | None = None  # hosts the run's probe found down (C28); None: not probed
    verified: Verified = field(default_factory=Verified)  # file hashes computed in this run (and kept)
    locked: Mapping[str, str] | None = None  # name -> version of the committed pylock.toml, if read already

    @property
    def stop(self) -> threading.Event | None:
        """Set when the run is interrupted (the runner's event): downloads check it between
        chunks. None for a runner without one (a test's replaying runner)."""
        stopped: threading.Event | None = getattr(self.runner, "stopped", None)
        return stopped

    def compile(self, output: str, **kwargs: Any) -> uv.Result:
        build = self.builds.names & self.plan.allow_build
        argv = uv.compile_argv(self.plan, output, self.options, mirrors=self.mirrors, no_binary=build, **kwargs)
        env = uv.compile_env(os.environ, self.plan) | self.mirrors.uv_env(explicit_indexes(self.plan))
        return self.runner.run(argv, env, str(self.root))

    def compile_learning(self, output: str, **kwargs: Any) -> uv.Result:
        """:meth:`compile`, wheels first: when uv says an ``allow-build`` package has no wheel in
        any version it may pick, that package is built from source (remembered in
        :attr:`builds` for the run's other cells) and uv runs again (field case C26: an older
        version with a wheel beats a newer sdist-only one; builds only where allowed and needed).
        Main and layer resolutions both go through here."""
        while True:
            tried = self.builds.names  # another cell may learn one while this one resolves
            result = self.compile(output, **kwargs)
            wanted = {n for n in uvout.needs_wheels(result.stderr) if n in self.plan.allow_build}
            if result.returncode == 0 or wanted <= tried:
                return result
            self.builds.add(wanted)

    def read(self, path: str) -> str:
        """uv's output at ``path``, canonical; a login uv wrote into it is removed from the file too."""
        raw = (self.root / path).read_text(encoding="utf-8")
        clean = self.mirrors.scrub(raw)
        if clean != raw:
            (self.root / path).write_text(clean, encoding="utf-8")
        return self.mirrors.canonical(clean)

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def header(self, kind: LayerKind, path: str, **fields: Any) -> Header:
        """The header of one of this cell's lock files."""
        plan = self.plan
        target = plan.target
        macos = f", macOS >= {target.macos}" if target.macos else ""
        return Header(
            cell=plan.cell.name, kind=kind, path=path, config=self.config, uv=plan.uv_version,
            target=f"{target.platform}, Python {target.python}{macos}, backend {plan.cell.backend}",
            input_hash=plan.input_hash, exclude_newer=plan.exclude_newer, index_url=plan.index_url, **fields,
        )  # fmt: skip


@dataclass(frozen=True)
class Resolved:
    """One uv resolution read back: target-only PEP 751 data and the entries of the lock."""

    pylock: Pylock
    entries: tuple[Entry, ...]
    warnings: tuple[str, ...] = ()


def committed(root: Path, plans: Sequence[Plan]) -> tuple[dict[str, dict[str, str]], Builds]:
    """Each cell's committed ``pylock.toml``, read once: ``{cell: {name: version}}`` (uv's
    preferences, the pages to prefetch) and the ``allow-build`` packages locked from an sdist.
    Only these small tables are kept (memory flat in cells)."""
    import sys

    locked: dict[str, dict[str, str]] = {}
    builds = Builds()
    for plan in plans:
        path = root / pylock_path(plan.lock)
        try:
            pylock = pylockfile.loads(path.read_text(encoding="utf-8"), str(path))
        except (OSError, LockgenError):
            continue
        locked[plan.cell.name] = {sys.intern(p.name): sys.intern(str(p.version)) for p in pylock.packages if p.version}
        builds.add(Builds.from_pylocks([plan], {plan.cell.name: pylock}).names)
    return locked, builds


def pylock_path(lock: str) -> str:
    """``locks/<cell>/pylock.toml`` for the main lock ``locks/<cell>.txt``."""
    return f"{lock.removesuffix('.txt')}/{pylockfile.PYLOCK_NAME}"


def read_pylock(run: CellRun, output: str) -> Pylock:
    """uv's pylock at ``output``: canonical URLs, local files relative to the cell's committed
    pylock, only the artifacts the target may install."""
    plan = run.plan
    pylock = pylockfile.loads(run.read(output), output)
    folder = pylock_path(plan.lock).rsplit("/", 1)[0]
    pylock = _local_paths(run, pylock, posixpath.dirname(output), folder)
    pylock = pylockfile.relative_files(pylock, run.root, folder)
    return pylockfile.target_only(pylock, plan.target.supported_tags(), plan.allow_build)


def _local_paths(run: CellRun, pylock: Pylock, written: str, folder: str) -> Pylock:
    """uv's local paths (project folders, local archives; relative to the folder of the file it
    ``written``, or absolute for a ``name @ file:`` requirement) as paths relative to the lock's
    ``folder``, as PEP 751 wants. Raises :class:`CellFailed` for a path outside the project: a
    committed lock names nothing of one machine."""
    root = run.root.resolve()

    def move(path: str, name: str) -> str:
        where = Path(path) if Path(path).is_absolute() else run.root / written / path
        try:
            rel = Path(os.path.normpath(where.resolve())).relative_to(root).as_posix()
        except ValueError:
            raise CellFailed(
                f"cell {run.plan.cell.name}: {name}: the local path {path} is outside the project folder; "
                "a lock names local projects relative to the project root: move it inside the project"
            ) from None
        return posixpath.relpath(rel, folder)

    packages = []
    for package in pylock.packages:
        changes: dict[str, Any] = {}
        if package.directory is not None:
            changes["directory"] = replace(package.directory, path=move(package.directory.path, package.name))
        if package.archive is not None and package.archive.path is not None:
            changes["archive"] = replace(package.archive, path=move(package.archive.path, package.name))
        packages.append(replace(package, **changes) if changes else package)
    return replace(pylock, packages=packages)


def seed_preferences(run: CellRun, output: str, prefer: bool) -> None:
    """Put the versions the cell has locked where uv writes, as a minimal ``pylock.toml`` (uv
    reads an existing output file's names and versions as preferences, as pip-compile does), so a
    changed input moves only what it must. From the committed ``pylock.toml``, else the main
    lock's entries (a lock of an older lockgen format). ``prefer=False`` (a hand-edited lock):
    start from nothing."""
    target = run.root / output
    target.parent.mkdir(parents=True, exist_ok=True)
    versions = _locked_versions(run) if prefer else {}
    if not versions:
        target.unlink(missing_ok=True)
        return
    lines = ['lock-version = "1.0"', 'created-by = "lockgen"']
    for name, version in sorted(versions.items()):
        lines += ["", "[[packages]]", f'name = "{name}"', f'version = "{version}"']
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _locked_versions(run: CellRun) -> dict[str, str]:
    plan = run.plan
    if run.locked is not None:
        return dict(run.locked)
    try:
        committed = (run.root / pylock_path(plan.lock)).read_text(encoding="utf-8")
        return {p.name: str(p.version) for p in pylockfile.loads(committed, plan.lock).packages if p.version}
    except (OSError, LockgenError):
        pass
    try:
        text = (run.root / plan.lock).read_text(encoding="utf-8")
        body = text.replace("\r\n", "\n").partition("\n\n")[2]
        return {e.name: str(e.version) for e in parse_entries(body, plan.lock) if e.version and not e.url}
    except (OSError, UnicodeDecodeError, LockgenError):
        return {}


def describe(run: CellRun, inputs: uv.Inputs, pylock: Pylock, name: str, no_deps: bool = False) -> Resolved:
    """The entries of ``pylock``'s resolution: uv renders the same versions (pinned exactly,
    offline) as a requirements file, for the extras asked of each package and its ``# via``;
    hashes come from ``pylock``. Raises :class:`CellFailed` when uv cannot."""
    plan = run.plan
    pins = f"{plan.work}/{name}-pins.txt"
    run.write(pins, "".join(f"{p.name}=={p.version}\n" for p in pylock.packages if registry(p)))
    given = replace(inputs, constraints=(*inputs.constraints, pins))
    output = f"{plan.work}/{name}.requirements.txt"
    (run.root / output).unlink(missing_ok=True)
    result = run.compile(output, offline=True, inputs=given, fmt=uv.Format.REQUIREMENTS, no_deps=no_deps)
    if result.returncode != 0:
        result = run.compile(output, inputs=given, fmt=uv.Format.REQUIREMENTS, no_deps=no_deps)
    if result.returncode != 0:
        why = run.mirrors.canonical(uvout.explain(result.stderr))
        raise CellFailed(f"cell {plan.cell.name}: uv could not describe its resolution:\n{why}")
    entries = _direct_entries(run, parse_entries(run.read(output), output), pylock)
    hashes = {p.name: pylockfile.sha256s(p) for p in pylock.packages}
    versions = {p.name: p.version for p in pylock.packages}
    via = _via_names(run, inputs, pins)
    fixed = []
    for entry in entries:
        if entry.name in versions and entry.version is not None and entry.version != versions[entry.name]:
            raise CellFailed(
                f"cell {plan.cell.name}: uv described {entry.name} {entry.version}, not {versions[entry.name]}"
            )
        notes = tuple(dict.fromkeys(via.get(v, v) for v in entry.via if via.get(v, v)))
        fixed.append(replace(entry, hashes=tuple(hashes.get(entry.name, ())), via=notes))
    return Resolved(pylock=pylock, entries=tuple(sorted(fixed, key=lambda e: e.name)))


def _direct_entries(run: CellRun, entries: Iterable[Entry], pylock: Pylock) -> list[Entry]:
    """``entries`` with each direct reference uv wrote as requested (``-e ./sub``, ``./sub``,
    ``pkg @ file:///…``, ``pkg @ git+…@main``) rewritten from its pylock package: its real name,
    a project-relative path, the VCS commit (issue 9)."""
    folder = pylock_path(run.plan.lock).rsplit("/", 1)[0]
    by_name = {p.name: p for p in pylock.packages}
    by_path = {_project_path(folder, p): p for p in pylock.packages if _local_path(p) is not None}
    result = []
    for entry in entries:
        package = by_name.get(entry.name)
        if entry.url is not None and (is_local(entry.url) or entry.url.startswith("/")):
            package = by_path.get(_normalized(run, entry.url))
        if package is None or not (package.vcs is not None or _local_path(package) is not None):
            result.append(entry)
            continue
        url = _reference(folder, package, entry.url)
        result.append(replace(entry, name=package.name, version=package.version, url=url,
                              editable=bool(package.directory is not None and package.directory.editable)))  # fmt: skip
    return result


def _local_path(package: Package) -> str | None:
    """The lock-relative path of a project folder or local archive package."""
    if isinstance(package.directory, PackageDirectory):
        return package.directory.path
    if isinstance(package.archive, PackageArchive) and package.archive.path is not None:
        return package.archive.path
    return None


def _project_path(folder: str, package: Package) -> str:
    return posixpath.normpath(posixpath.join(folder, _local_path(package) or ""))


def _normalized(run: CellRun, url: str) -> str:
    """A path uv wrote as requested (``./sub``, ``/abs/sub``) relative to the project root."""
    path = Path(url)
    if path.is_absolute():
        try:
            return path.resolve().relative_to(run.root.resolve()).as_posix()
        except ValueError:
            return url
    return posixpath.normpath(url)


def _reference(folder: str, package: Package, written: str | None) -> str:
    """The lock's direct reference of a package: ``./sub`` (a project-relative path) or
    ``git+<url>@<commit>[#subdirectory=…]``: the repository as uv ``written`` it (the user's
    spelling; uv's PEP 751 data normalizes it), at the commit of the resolution."""
    if package.vcs is not None:
        vcs = package.vcs
        if written is not None and written.startswith(f"{vcs.type}+"):
            base, sep, fragment = written.partition("#")
            if "@" in base.rsplit("/", 1)[-1]:  # a revision after the path (never the user@ of the host)
                base = base[: base.rindex("@")]
            return f"{base}@{vcs.commit_id}{sep}{fragment}"
        url = f"{vcs.type}+{vcs.url or vcs.path}@{vcs.commit_id}"
        return url + (f"#subdirectory={vcs.subdirectory}" if vcs.subdirectory else "")
    rel = _project_path(folder, package)
    return "." if rel == "." else f"./{rel}"


def registry(package: Package) -> bool:
    """A package from an index or find-links page (not a direct URL, a VCS checkout or a local
    project), which an exact ``==`` pin can hold."""
    return package.version is not None and package.archive is None and package.vcs is None and package.directory is None


def _via_names(run: CellRun, inputs: uv.Inputs, pins: str) -> Mapping[str, str]:
    """uv's ``# via`` items that name lockgen's work files, mapped to what a reviewer can open:
    the committed template that rendered them (issue 6), or nothing (the exact pins)."""
    plan = run.plan
    files = plan.rendered.files
    names: dict[str, str] = {f"-c {pins}": ""}
    for role, flag in (("requirements", "-r"), ("constraints", "-c"), ("overrides", "--override")):
        if role in files:
            names[f"{flag} {plan.input_path(role)}"] = f"{plan.templates}/{files[role][0]}"
    if inputs.requirements != plan.input_path("requirements"):
        names[f"-r {inputs.requirements}"] = (
            f"{run.config} ({inputs.requirements.rsplit('/', 1)[-1].removesuffix('.in')})"
        )
    for constraint in inputs.constraints:
        if constraint.endswith(URL_PINS):
            names[f"-c {constraint}"] = ""
        elif constraint.endswith("-pins.txt"):
            names[f"-c {constraint}"] = plan.lock
    for extra in inputs.extra:  # the index pins project repeats the requirements' own lines
        names[f"{INDEX_PROJECT_NAME} ({extra})"] = ""
    return names
