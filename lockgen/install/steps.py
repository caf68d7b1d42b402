"""The steps of ``lockgen install`` (see :mod:`lockgen.install`): choose the cell, refuse what
does not fit, reuse or create the venv, run each layer's recorded command, roll back a failed
optional layer, verify and record."""

from __future__ import annotations

import itertools
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import NormalizedName

from lockgen import select
from lockgen.config import WORK
from lockgen.errors import InstallFailed, InstallRefused, LockgenError, UsageError
from lockgen.install.checks import SEED, Layer, expected, installed_problems, map_sources, read_state, write_state
from lockgen.install.choose import choose, load_layers, read_manifest, refuse_host
from lockgen.install.venv import PIP_OPTIONS, Interpreter, Venv, find_python, install_env, probe_python, run
from lockgen.locks.lock import Entry, LayerKind
from lockgen.plan.mirror import Mirrors
from lockgen.project import Project

__all__ = ["INSTALLERS", "Options", "install"]

INSTALLERS = ("uv", "pip")

Say = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class Options:
    """What ``lockgen install`` was asked. ``mirrors``: ``CANONICAL=MIRROR`` pairs of the command
    line (merged over ``LOCKGEN_MIRRORS`` and the config's table); ``index_url`` replaces the
    recorded index URL outright."""

    cell: str | None = None
    detect: bool = False
    venv: str | None = None
    cpu: bool = False
    python: str | None = None
    dry_run: bool = False
    installer: str = "uv"
    mirrors: tuple[str, ...] = ()
    index_url: str | None = None
    force: bool = False
    axes: tuple[tuple[str, str], ...] = ()  # --axis NAME=VALUE for --detect (extra matrix axes)


@dataclass
class _Run:
    """Everything one install uses: the project, the choice, the venv and how to say things."""

    root: Path
    cell: str
    entry: Mapping[str, Any]
    layers: list[Layer]
    venv: Venv
    options: Options
    mirrors: Mirrors
    say: Say
    warn: Say
    env: dict[str, str] = field(default_factory=dict)
    pip: list[str] = field(default_factory=list)

    def installer_argv(self, layer: Layer, write: bool = True) -> list[str]:
        """The layer's recorded command for the chosen installer: the pinned uv binary or a pip
        for the venv, URLs mapped through mirrors (a copy of the lock when it names wheel URLs a
        mirror serves)."""
        recorded = list(self.data_commands(layer))
        path = self.mirrored_copy(layer, write)
        argv = [
            path if token == layer.path else token
            for token in map_sources(recorded[1:], self.mirrors, self.options.index_url)
        ]
        return [*self.head(), *argv]

    def data_commands(self, layer: Layer) -> list[str]:
        commands = layer.data.get("commands") or {}
        if self.options.installer not in commands:
            raise InstallRefused(f"{layer.path}: the manifest records no {self.options.installer} command for it")
        return [str(token) for token in commands[self.options.installer]]

    def head(self) -> list[str]:
        from lockgen.resolve.uv import uv_binary

        return [uv_binary()] if self.options.installer == "uv" else list(self.pip or ["pip"])

    def mirrored_copy(self, layer: Layer, write: bool) -> str:
        """``layer.path``, or a copy under ``.lockgen/install/<cell>/`` whose ``name @ URL`` lines
        point at the mirror (the hashes are the same bytes' hashes)."""
        text = (self.root / layer.path).read_text(encoding="utf-8")
        mapped = self.mirrored_text(text, layer.lock.entries)
        if mapped == text:
            return layer.path
        copy = f"{WORK}/install/{self.cell}/{layer.name}.txt"
        if write:
            (self.root / copy).parent.mkdir(parents=True, exist_ok=True)
            (self.root / copy).write_text(mapped, encoding="utf-8")
        return copy

    def mirrored_text(self, text: str, entries: Sequence[Entry]) -> str:
        """``text`` (lock lines) with the direct URLs of ``entries`` mapped through the mirrors."""
        for entry in entries:
            if entry.url and "://" in entry.url and not entry.editable:
                text = text.replace(entry.url, self.mirrors.fetch_url(entry.url))
        return text

    def shown(self, argv: Sequence[str]) -> str:
        """``argv`` as the manifest spells it: ``uv …`` / ``pip …`` (not the binary's path)."""
        return shlex.join([self.options.installer, *argv[len(self.head()) :]])

    def run(self, argv: Sequence[str]) -> bool:
        """Run one install command; on failure, warn with the end of its output."""
        done = run(argv, self.env, self.root)
        if done.returncode != 0:
            self.warn(f"{self.shown(argv)} failed (exit {done.returncode}):\n{done.tail()}")
        return done.returncode == 0

    def uninstall(self, names: Sequence[str]) -> bool:
        if not names:
            return True
        if self.options.installer == "uv":
            return self.run([*self.head(), "pip", "uninstall", *sorted(names)])
        return self.run([*self.head(), "uninstall", "--yes", *sorted(names)])


def install(project: Project, options: Options, say: Say = print, warn: Say | None = None) -> int:
    """Install one cell into a venv (see the module docstring); 0 when the venv matches the lock
    (optional layers that failed are warnings). Raises :class:`InstallRefused` before anything is
    installed, :class:`InstallFailed` after, :class:`UsageError` for a bad request."""
    warn = warn or (lambda text: print(f"warning: {text}", file=sys.stderr, flush=True))
    if options.installer not in INSTALLERS:
        raise UsageError(f"--installer {options.installer!r}: use one of {', '.join(INSTALLERS)}")
    manifest = read_manifest(project)
    venv = Venv((Path(options.venv) if options.venv else project.root / ".venv").absolute())
    _refuse_venv(venv)
    present = venv.inspect(project.root) if venv.exists() else None
    name, entry, said, left_out = choose(
        manifest, options.cell, options.detect, options.python, options.cpu,
        (venv.path, present) if present is not None else None, dict(options.axes),
    )  # fmt: skip
    for line in said:
        say(line)
    layers = load_layers(project.root, name, entry)
    for layer in [layer for layer in layers if layer.name in left_out]:
        warn(f"{layer.name}: not installed on this machine, its kernels do not run here "
             f"({left_out[layer.name]}); an optional layer: the install goes on without it")  # fmt: skip
    layers = [layer for layer in layers if layer.name not in left_out or layer.kind is not LayerKind.OPTIONAL]
    refuse_host(name, entry, select.gather(probe_gpus=False))
    mirrors = project.mirrors(options.mirrors)
    job = _Run(project.root, name, entry, layers, venv, options, mirrors, say, warn)
    interpreter = _interpreter(job, present)
    job.env = install_env(os.environ, venv, {str(k): str(v) for k, v in (entry.get("environment") or {}).items()})
    _warn_unused_mirrors(job)
    if venv.exists() and not options.force and _up_to_date(job):
        say(f"up to date: {venv.path} holds exactly what the locks of {name} say; nothing to do")
        return 0
    if options.dry_run:
        return _dry_run(job, interpreter)
    if not venv.exists():
        venv.create(_uv(), interpreter.executable, project.root)
        say(f"venv {venv.path}: created from {interpreter.describe()}")
    else:
        say(f"venv {venv.path}: {interpreter.describe()}")
    if options.installer == "pip":
        job.pip = venv.pip(project.root)
    return _install_layers(job)


def _uv() -> str:
    from lockgen.resolve.uv import uv_binary

    return uv_binary()


def _refuse_venv(venv: Venv) -> None:
    """Refuse lockgen's own environment (an exact sync would uninstall lockgen) and a venv that
    sees the system's site-packages (``--system-site-packages``): what the locks do not list
    would still be importable, so "nothing outside the lock" could not hold."""
    if venv.path.resolve() == Path(sys.prefix).resolve():
        raise InstallRefused(
            f"{venv.path} is the environment lockgen runs in; an exact sync would uninstall lockgen: pass --venv"
        )
    if venv.exists() and venv.system_site_packages():
        raise InstallRefused(
            f"{venv.path} sees the system's site-packages (pyvenv.cfg: include-system-site-packages = true), "
            "so packages the locks do not list would still be importable: nothing was installed; recreate it "
            "without --system-site-packages, or pass another --venv"
        )


def _interpreter(job: _Run, present: Interpreter | None) -> Interpreter:
    """The venv's interpreter (``present``, checked: Python minor, arch, CPython), or the one uv
    finds for a new venv. Raises :class:`InstallRefused`."""
    python, arch = (
        str(job.entry["python"]),
        str((job.entry.get("requires") or {}).get("interpreter") or job.entry["arch"]),
    )
    venv = job.venv
    if present is not None:
        found, where = present, f"the venv {venv.path} has"
    elif venv.path.exists() and (not venv.path.is_dir() or any(venv.path.iterdir())):
        raise InstallRefused(f"{venv.path} exists and is not a virtual environment; pass another --venv")
    else:
        found, where = (
            probe_python(find_python(_uv(), python, str(job.entry["os"]), arch, job.root), job.root),
            "uv found",
        )
    wrong = []
    if found.minor != python:
        wrong.append(f"Python {found.minor}, and the cell's locks are for Python {python} only")
    if found.arch != arch:
        wrong.append(f"an {found.arch} interpreter, and the cell needs {arch} (requires.interpreter)")
    if found.implementation != "cpython":
        wrong.append(f"{found.implementation}, and the locks are for CPython")
    if wrong:
        fix = "remove it or pass another --venv" if present is not None else "install the right Python"
        raise InstallRefused(f"{where} {'; '.join(wrong)} ({found.describe()}): nothing was installed; {fix}")
    return found


def _warn_unused_mirrors(job: _Run) -> None:
    """Warn about each mirror that maps no URL of the cell: of its install commands and lock
    lines (what the installer fetches itself), or of the artifacts its ``pylock.toml`` lists (the
    files an index page links to, e.g. on ``files.pythonhosted.org``, which the installer fetches
    from wherever the mirrored page says). A typo would silently bypass an air-gapped mirror; lock
    runs warn the same way."""
    for layer in job.layers:
        job.installer_argv(layer, write=False)
    pylock = job.entry.get("pylock") or {}
    if job.mirrors.never_used() and pylock.get("path"):
        from lockgen.locks import pylockfile

        try:
            text = (job.root / str(pylock["path"])).read_text(encoding="utf-8")
            packages = pylockfile.loads(text, str(pylock["path"])).packages
        except (OSError, LockgenError):
            packages = []
        for package in packages:
            for _, artifact in pylockfile.artifacts(package):
                job.mirrors.mirrored(artifact.url or "")
    for prefix in job.mirrors.never_used():
        job.warn(f"mirror for {prefix} matched no URL of cell {job.cell}'s install commands; check its spelling")


def _up_to_date(job: _Run) -> bool:
    state = read_state(job.venv.path)
    if not state or state.get("cell") != job.cell:
        return False
    recorded = state.get("layers") or []
    if [(r.get("name"), r.get("sha256")) for r in recorded] != [(layer.name, layer.sha256) for layer in job.layers]:
        return False
    skipped = {r["name"] for r in recorded if not r.get("installed")}
    wanted = expected([layer for layer in job.layers if layer.name not in skipped])
    if installed_problems(wanted, job.venv.distributions(job.root), SEED):
        return False
    for name in sorted(skipped):
        job.say(f"{name}: rolled back on the last install of these same locks (--reinstall retries it)")
    return True


def _dry_run(job: _Run, interpreter: Interpreter) -> int:
    """Say what an install would do: the venv, the environment of the commands, each command
    (and pip's uninstall step after main), without running anything."""
    action = "reuse" if job.venv.exists() else "create"
    job.say(f"would {action} the venv {job.venv.path} ({interpreter.describe()})")
    job.say(f"would run with: {_shown_env(job)}")
    for layer in job.layers:
        job.say(f"would run for {layer.name}: {job.shown(job.installer_argv(layer, write=False))}")
        if layer.kind is LayerKind.MAIN and job.options.installer == "pip":
            present = job.venv.distributions(job.root) if job.venv.exists() else {}
            extra = sorted(n for n in present if n not in layer.versions() and n not in SEED)
            listed = f": now {', '.join(extra)}" if extra else ""
            job.say(f"would then uninstall (pip cannot sync) every distribution main does not list{listed}")
    job.say("dry run: nothing was changed")
    return 0


def _shown_env(job: _Run) -> str:
    """The variables the commands run with that matter to what they install (the venv, the
    installer's config switched off, the target's), and what was dropped."""
    keys = ["VIRTUAL_ENV"] + (
        ["UV_NO_CONFIG", "UV_PYTHON_DOWNLOADS"] if job.options.installer == "uv" else ["PIP_CONFIG_FILE"]
    )
    keys += sorted(str(k) for k in job.entry.get("environment") or {})
    shown = " ".join(f"{key}={shlex.quote(job.env[key])}" for key in keys if key in job.env)
    if job.options.installer == "pip":
        shown += f"; pip runs with {' '.join(PIP_OPTIONS)}"
    return shown + "; without PIP_*, UV_* (but cache and network settings), PYTHONPATH, PYTHONHOME, CONDA_PREFIX"


def _install_layers(job: _Run) -> int:
    """Install every layer in order, then check the venv against the locks; write the state."""
    outcome: list[tuple[Layer, bool]] = []
    for layer in job.layers:
        job.say(f"{layer.name}: {job.shown(job.installer_argv(layer, write=False))}")
        if layer.kind is LayerKind.OPTIONAL:
            outcome.append((layer, _optional(job, layer, [done for done, ok in outcome if ok])))
            continue
        ok = job.run(job.installer_argv(layer))
        if ok and layer.kind is LayerKind.MAIN and job.options.installer == "pip":
            ok = _pip_sync_rest(job, layer)
        if not ok:
            raise InstallFailed(
                f"{layer.name} of cell {job.cell} did not install into {job.venv.path}; see the installer's output above"
            )
        outcome.append((layer, True))
    installed = [layer for layer, ok in outcome if ok]
    wanted = expected(installed)
    problems = installed_problems(wanted, job.venv.distributions(job.root), SEED)
    if problems:
        raise InstallFailed(
            f"{job.venv.path} does not match the locks of {job.cell}:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    names = {layer.name for layer in installed}
    for swap in [swap for swap in job.entry.get("replaces") or [] if swap.get("by") in names]:
        job.say(
            f"replaces: {swap['package']} {swap['main']} (main) -> {swap['layer']} ({swap['by']}), declared by `replace` in the config"
        )
    write_state(job.venv.path, job.cell, job.options.installer, outcome)
    count = len(wanted)
    job.say(
        f"verified: {count} package{'s' if count != 1 else ''} in {job.venv.path} at the locked versions (local labels included)"
    )
    return 0


def _pip_sync_rest(job: _Run, main: Layer) -> bool:
    """pip cannot sync: uninstall what main does not list, except the venv's seed packages (pip
    is the installer; uv's sync keeps them too)."""
    names = set(main.versions())
    extra = [n for n in job.venv.distributions(job.root) if n not in names and n not in SEED]
    return job.uninstall(extra)


def _optional(job: _Run, layer: Layer, before_layers: list[Layer]) -> bool:
    """Install an optional layer; on failure warn and put the venv back as it was before it."""
    before = job.venv.distributions(job.root)
    if job.run(job.installer_argv(layer)):
        return True
    after = job.venv.distributions(job.root)
    added = [n for n in after if n not in before]
    changed = {n for n in before if after.get(n) != before[n]}
    restored = job.uninstall(added + sorted(n for n in changed if n in after)) and _restore(job, changed, before_layers)
    if not restored or job.venv.distributions(job.root) != before:
        raise InstallFailed(
            f"optional layer {layer.name} failed and could not be rolled back; recreate {job.venv.path}"
        )
    undone = [f"removed {', '.join(sorted(added))}"] if added else []
    undone += [f"restored {', '.join(sorted(changed))}"] if changed else []
    job.warn(
        f"optional layer {layer.name} failed and was rolled back to the state before it"
        f"{' (' + '; '.join(undone) + ')' if undone else ''}; the install goes on without it"
    )
    return False


def _restore(job: _Run, names: set[NormalizedName], layers: list[Layer]) -> bool:
    """Reinstall ``names`` at the versions the ``layers`` installed before set them: their lock
    lines (hashes included; direct URLs through the mirrors) in ``.lockgen/install/<cell>/restore.txt``,
    installed with ``--require-hashes --no-deps`` from the index and every find-links of those
    layers (a package an earlier optional layer brought may come from its own find-links)."""
    if not names:
        return True
    entries = expected(layers)
    chosen = [entries[name][1] for name in sorted(names) if name in entries]
    text = job.mirrored_text("".join(f"{line}\n" for entry in chosen for line in entry.lines()), chosen)
    path = f"{WORK}/install/{job.cell}/restore.txt"
    (job.root / path).parent.mkdir(parents=True, exist_ok=True)
    (job.root / path).write_text(text, encoding="utf-8")
    sources = map_sources(
        restore_sources([job.data_commands(layer) for layer in layers]), job.mirrors, job.options.index_url
    )
    verb = ["pip", "install"] if job.options.installer == "uv" else ["install"]
    return job.run([*job.head(), *verb, "--require-hashes", "--no-deps", *sources, "-r", path])


def restore_sources(commands: Sequence[Sequence[str]]) -> list[str]:
    """The sources of a rollback's reinstall, from the recorded commands of the layers installed
    before (main first): main's ``--index-url``, then each ``--find-links`` value of any of
    them, once, in order of appearance."""
    index: list[str] = []
    links: list[str] = []
    for argv in commands:
        for flag, value in itertools.pairwise(argv):
            if flag == "--index-url" and not index:
                index = [flag, value]
            elif flag == "--find-links" and value not in links:
                links.append(value)
    return index + [token for link in links for token in ("--find-links", link)]
