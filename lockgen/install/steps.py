"""The steps of ``lockgen install`` (see :mod:`lockgen.install`): choose the cell, refuse what
does not fit, reuse or create the venv, run each layer's recorded command, roll back a failed
optional layer, verify and record."""

from __future__ import annotations

import json
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
from lockgen.errors import InstallFailed, InstallRefused, LockFormatError, UsageError
from lockgen.install.checks import (
    Layer,
    expected,
    glibc,
    host_problems,
    installed_problems,
    macos,
    map_sources,
    read_state,
    write_state,
)
from lockgen.install.venv import Interpreter, Venv, find_python, install_env, probe_python, run
from lockgen.locks.lock import LayerKind, Lock, text_sha256
from lockgen.locks.manifest import MANIFEST_FORMAT, manifest_path
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
        mapped = text
        for entry in layer.lock.entries:
            if entry.url and "://" in entry.url and not entry.editable:
                mapped = mapped.replace(entry.url, self.mirrors.fetch_url(entry.url))
        if mapped == text:
            return layer.path
        copy = f"{WORK}/install/{self.cell}/{layer.name}.txt"
        if write:
            (self.root / copy).parent.mkdir(parents=True, exist_ok=True)
            (self.root / copy).write_text(mapped, encoding="utf-8")
        return copy

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
    manifest = _manifest(project)
    name, entry = _choose(manifest, options, say)
    layers = _layers(project.root, name, entry)
    facts = select.gather(probe_gpus=False)
    problems = host_problems(entry, facts.os, glibc(), macos())
    if problems:
        raise InstallRefused(f"cell {name} does not fit this machine:\n" + "\n".join(f"  - {p}" for p in problems))
    venv = Venv(Path(options.venv) if options.venv else project.root / ".venv")
    venv = Venv(venv.path if venv.path.is_absolute() else Path.cwd() / venv.path)
    mirrors = project.mirrors(options.mirrors)
    job = _Run(project.root, name, entry, layers, venv, options, mirrors, say, warn)
    interpreter = _interpreter(job)
    job.env = install_env(os.environ, venv, {str(k): str(v) for k, v in (entry.get("environment") or {}).items()})
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


def _manifest(project: Project) -> dict[str, Any]:
    path = project.root / manifest_path(project.config.locks)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{manifest_path(project.config.locks)}: no manifest; run `lockgen all` first") from None
    except (OSError, ValueError) as exc:
        raise InstallRefused(f"{manifest_path(project.config.locks)}: not a readable manifest ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT or not isinstance(data.get("cells"), dict):
        raise InstallRefused(
            f"{manifest_path(project.config.locks)}: not a format {MANIFEST_FORMAT} manifest; run `lockgen all`"
        )
    return data


def _choose(manifest: Mapping[str, Any], options: Options, say: Say) -> tuple[str, Mapping[str, Any]]:
    """The cell's name and manifest entry: named, or chosen by the selector on this machine."""
    cells: Mapping[str, Any] = manifest["cells"]
    if options.cell and options.detect:
        raise UsageError("give a CELL or --detect, not both")
    if options.detect:
        try:
            selection = select.select_cell(select.gather(), manifest, options.python, options.cpu)
        except select.Refused as exc:
            raise InstallRefused("\n".join([exc.message, *(f"note: {n}" for n in exc.notes)])) from None
        except select.SelectError as exc:
            raise InstallRefused(str(exc)) from None
        say(f"cell {selection.cell} (detected):" + "".join(f"\n  {reason}" for reason in selection.reasons))
        name = selection.cell
    elif options.cell:
        name = options.cell
        if name not in cells:
            raise UsageError(f"no cell {name!r} in the manifest; `lockgen matrix` lists the cells")
        say(f"cell {name}")
    else:
        raise UsageError("name the CELL to install, or pass --detect to pick this machine's")
    entry = cells[name]
    if (
        options.python
        and options.cell
        and select.version_key(options.python)[:2] != select.version_key(str(entry["python"]))[:2]
    ):
        raise InstallRefused(f"cell {name} is for Python {entry['python']}, not {options.python}")
    if entry.get("status") not in ("locked", "alias"):
        raise InstallRefused(f"cell {name} is {entry.get('status')}: {entry.get('reason') or 'it has no lock'}")
    return name, entry


def _layers(root: Path, name: str, entry: Mapping[str, Any]) -> list[Layer]:
    """The entry's layers in install order, each file checked against the manifest's sha256."""
    layers = []
    for data in entry.get("layers") or []:
        path = str(data["lock"])
        try:
            text = (root / path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InstallRefused(
                f"{path}: cannot read it ({exc.strerror}); the cell {name} is not installable from this checkout"
            ) from None
        if text_sha256(text) != data.get("sha256"):
            raise InstallRefused(
                f"{path}: its sha256 is not the manifest's (edited, or from another revision); run `lockgen check`"
            )
        try:
            layers.append(Layer(data, Lock.parse(text, path)))
        except LockFormatError as exc:
            raise InstallRefused(str(exc)) from None
    if not layers or layers[0].kind is not LayerKind.MAIN:
        raise InstallRefused(f"cell {name}: the manifest lists no main layer")
    return layers


def _interpreter(job: _Run) -> Interpreter:
    """The venv's interpreter (checked: Python minor, arch, CPython), or the one uv finds for a
    new venv. Raises :class:`InstallRefused`."""
    python, arch = (
        str(job.entry["python"]),
        str((job.entry.get("requires") or {}).get("interpreter") or job.entry["arch"]),
    )
    venv = job.venv
    if venv.path.resolve() == Path(sys.prefix).resolve():
        raise InstallRefused(
            f"{venv.path} is the environment lockgen runs in; an exact sync would uninstall lockgen: pass --venv"
        )
    if venv.exists():
        found, where = venv.inspect(job.root), f"the venv {venv.path} has"
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
        fix = "remove it or pass another --venv" if venv.exists() else "install the right Python"
        raise InstallRefused(f"{where} {'; '.join(wrong)} ({found.describe()}): nothing was installed; {fix}")
    return found


def _up_to_date(job: _Run) -> bool:
    state = read_state(job.venv.path)
    if not state or state.get("cell") != job.cell:
        return False
    recorded = state.get("layers") or []
    if [(r.get("name"), r.get("sha256")) for r in recorded] != [(layer.name, layer.sha256) for layer in job.layers]:
        return False
    skipped = {r["name"] for r in recorded if not r.get("installed")}
    wanted = expected([layer for layer in job.layers if layer.name not in skipped])
    if installed_problems(wanted, job.venv.distributions(job.root), _allowed(job)):
        return False
    for name in sorted(skipped):
        job.say(f"{name}: rolled back on the last install of these same locks (--reinstall retries it)")
    return True


def _allowed(job: _Run) -> frozenset[str]:
    return frozenset({"pip"}) if job.options.installer == "pip" else frozenset()


def _dry_run(job: _Run, interpreter: Interpreter) -> int:
    action = "reuse" if job.venv.exists() else "create"
    job.say(f"would {action} the venv {job.venv.path} ({interpreter.describe()})")
    for layer in job.layers:
        job.say(f"would run for {layer.name}: {job.shown(job.installer_argv(layer, write=False))}")
    job.say("dry run: nothing was changed")
    return 0


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
    problems = installed_problems(expected(installed), job.venv.distributions(job.root), _allowed(job))
    if problems:
        raise InstallFailed(
            f"{job.venv.path} does not match the locks of {job.cell}:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    names = {layer.name for layer in installed}
    for swap in [swap for swap in job.entry.get("replaces") or [] if swap.get("by") in names]:
        job.say(
            f"replaces: {swap['package']} {swap['main']} (main) -> {swap['layer']} ({swap.get('by', 'a layer')}), declared by `replace` in the config"
        )
    write_state(job.venv.path, job.cell, job.options.installer, outcome)
    count = len(expected(installed))
    job.say(
        f"verified: {count} package{'s' if count != 1 else ''} in {job.venv.path} at the locked versions (local labels included)"
    )
    return 0


def _pip_sync_rest(job: _Run, main: Layer) -> bool:
    """pip cannot sync: uninstall what main does not list (pip itself stays, it is the installer)."""
    names = set(main.versions())
    extra = [n for n in job.venv.distributions(job.root) if n not in names and n not in _allowed(job)]
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
    """Reinstall ``names`` at the versions the layers installed before set them (with hashes)."""
    if not names:
        return True
    entries = expected(layers)
    lines = [line for name in sorted(names) if name in entries for line in entries[name][1].lines()]
    path = f"{WORK}/install/{job.cell}/restore.txt"
    (job.root / path).parent.mkdir(parents=True, exist_ok=True)
    (job.root / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    sources = map_sources(_source_args(job.data_commands(job.layers[0])), job.mirrors, job.options.index_url)
    verb = ["pip", "install"] if job.options.installer == "uv" else ["install"]
    return job.run([*job.head(), *verb, "--require-hashes", "--no-deps", *sources, "-r", path])


def _source_args(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    for index, token in enumerate(argv):
        if token in ("--index-url", "--find-links") and index + 1 < len(argv):
            out += [token, argv[index + 1]]
    return out
