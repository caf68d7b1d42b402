"""What the uv runs of one cell share, and the reading of one resolution.

A :class:`CellRun` builds and runs a cell's uv commands (through a runner, the seam for tests).
:func:`read_pylock` reads uv's PEP 751 output back as target-only data with canonical URLs;
:func:`describe` turns a resolution into lock entries: uv renders the same versions, pinned
exactly and offline, as a requirements file, which adds what PEP 751 data does not carry: the
extras a package was asked for (pip 23.2 needs them on the locked line, CASES C19) and ``# via``
annotations; hashes come from the PEP 751 data.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.pylock import Package, Pylock

from lockgen.errors import CellFailed, LockgenError
from lockgen.locks import pylockfile
from lockgen.locks.lock import Entry, Header, LayerKind, parse_entries
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.resolve import uv, uvout

__all__ = ["Builds", "CellRun", "Resolved", "committed", "describe", "pylock_path", "read_pylock"]


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
                builds.add(p.name for p in pylock.packages if p.name in plan.allow_build and p.sdist and not p.wheels)
        return builds


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
    locked: Mapping[str, str] | None = None  # name -> version of the committed pylock.toml, if read already

    def compile(self, output: str, **kwargs: Any) -> uv.Result:
        build = self.builds.names & self.plan.allow_build
        argv = uv.compile_argv(self.plan, output, self.options, mirrors=self.mirrors, no_binary=build, **kwargs)
        return self.runner.run(argv, uv.compile_env(os.environ, self.plan), str(self.root))

    def read(self, path: str) -> str:
        return self.mirrors.canonical((self.root / path).read_text(encoding="utf-8"))

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def header(self, kind: LayerKind, path: str, **fields) -> Header:
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
    pylock = pylockfile.relative_files(pylock, run.root, folder)
    return pylockfile.target_only(pylock, plan.target.supported_tags(), plan.allow_build)



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
    run.write(pins, "".join(f"{p.name}=={p.version}\n" for p in pylock.packages if _registry(p)))
    given = uv.Inputs(inputs.requirements, (*inputs.constraints, pins), inputs.overrides, inputs.find_links)
    output = f"{plan.work}/{name}.requirements.txt"
    (run.root / output).unlink(missing_ok=True)
    result = run.compile(output, offline=True, inputs=given, fmt=uv.Format.REQUIREMENTS, no_deps=no_deps)
    if result.returncode != 0:
        result = run.compile(output, inputs=given, fmt=uv.Format.REQUIREMENTS, no_deps=no_deps)
    if result.returncode != 0:
        why = run.mirrors.canonical(uvout.explain(result.stderr))
        raise CellFailed(f"cell {plan.cell.name}: uv could not describe its resolution:\n{why}")
    entries = parse_entries(run.read(output), output)
    hashes = {p.name: pylockfile.sha256s(p) for p in pylock.packages}
    versions = {p.name: p.version for p in pylock.packages}
    via = _via_names(run, inputs, pins)
    fixed = []
    for entry in entries:
        if entry.name in versions and entry.version is not None and entry.version != versions[entry.name]:
            raise CellFailed(f"cell {plan.cell.name}: uv described {entry.name} {entry.version}, not {versions[entry.name]}")
        notes = tuple(dict.fromkeys(via.get(v, v) for v in entry.via if via.get(v, v)))
        fixed.append(replace(entry, hashes=tuple(hashes.get(entry.name, ())), via=notes))
    return Resolved(pylock=pylock, entries=tuple(sorted(fixed, key=lambda e: e.name)))


def _registry(package: Package) -> bool:
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
        names[f"-r {inputs.requirements}"] = f"{run.config} ({inputs.requirements.rsplit('/', 1)[-1].removesuffix('.in')})"
    for constraint in inputs.constraints:
        if constraint.endswith("-pins.txt"):
            names[f"-c {constraint}"] = plan.lock
    return names
