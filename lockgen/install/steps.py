"""The steps of ``lockgen install`` (see :mod:`lockgen.install`): choose the cell, refuse what
does not fit, hold the venv, reuse or create it, run each layer's command (built by lockgen from
the manifest's typed fields, never the recorded one), roll back a failed optional layer, verify
versions and hashes (:mod:`lockgen.install.record`), record."""

from __future__ import annotations

import os
import posixpath
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import NormalizedName
from packaging.version import InvalidVersion, Version

from lockgen import cellselect
from lockgen.config import WORK
from lockgen.install.checks import SEED, Expected, Layer, expected, installed_problems, map_sources
from lockgen.install.choose import choose, load_layers, read_manifest, refuse_host
from lockgen.install.record import (
    LayerState,
    State,
    Traced,
    clear_state,
    read_state,
    trace,
    traced_all,
    traced_now,
    versions,
    write_state,
)
from lockgen.install.venv import (
    PIP_OPTIONS,
    Interpreter,
    Venv,
    base_env,
    find_python,
    install_env,
    probe_python,
    run,
)
from lockgen.locks.lock import Entry, LayerKind
from lockgen.locks.manifestfile import CellEntry, url_problem
from lockgen.plan.mirror import Mirrors
from lockgen.project import Project
from lockgen.runtime import bounded
from lockgen.runtime.credentials import command_line, redact
from lockgen.runtime.errors import InstallFailed, InstallRefused, Interrupted, LockgenError, UsageError

__all__ = ["FORMATS", "INSTALLERS", "Options", "install", "install_bundle", "restore_sources"]

#: The installers lockgen runs (docs/manifest.md, "The commands"): no other program is started
#: for an install, whatever a manifest records.
INSTALLERS = ("uv", "pip")
#: What ``--format`` may name: the layers' requirements locks, or the cell's PEP 751 pylock.
FORMATS = ("txt", "pylock")

Say = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class Options:
    """What ``lockgen install`` was asked. ``mirrors``: ``CANONICAL=MIRROR`` pairs of the command
    line (merged over ``LOCKGEN_MIRRORS`` and the config's table); ``index_url`` replaces the
    index URL the layers name outright; ``wait``: queue behind another install into the venv."""

    cell: str | None = None
    detect: bool = False
    venv: str | None = None
    cpu: bool = False
    python: str | None = None  # --python: X.Y, or the path of the interpreter to create the venv from
    dry_run: bool = False
    installer: str = "uv"
    mirrors: tuple[str, ...] = ()
    index_url: str | None = None
    force: bool = False
    wait: bool = False
    axes: tuple[tuple[str, str], ...] = ()  # --axis NAME=VALUE for --detect (extra matrix axes)
    #: what main, the optional layers and no-deps install from: their ``.txt`` locks, layer by
    #: layer ("txt"), or the cell's ``pylock.toml`` in one command, the layers as extras ("pylock")
    format: str = "txt"


@dataclass
class _Run:
    """Everything one install uses: the project, the choice, the venv and how to say things."""

    root: Path
    locks: str
    entry: CellEntry
    layers: list[Layer]
    venv: Venv
    options: Options
    mirrors: Mirrors
    say: Say
    warn: Say
    env: dict[str, str] = field(default_factory=dict)
    pip: list[str] = field(default_factory=list)
    given: Interpreter | None = None  # --python PATH: the interpreter a new venv is made from

    @property
    def cell(self) -> str:
        return self.entry.name

    def installer_argv(self, layer: Layer, write: bool = True) -> list[str]:
        """The layer's command for the chosen installer, built from its typed fields
        (:meth:`Layer.commands`): the pinned uv binary or a pip for the venv, URLs mapped through
        mirrors (with logins inline: never shown, see :meth:`shown`), the lock replaced by a copy
        when it names wheel URLs a mirror serves."""
        built = layer.commands()[self.options.installer]
        path = self.mirrored_copy(layer, write)
        mapped = map_sources(built[1:], self.mirrors, self.options.index_url)
        return [*self.head(), *(path if token == layer.path else token for token in mapped)]

    def pylock_argv(self, extras: Sequence[str], write: bool = True) -> list[str]:
        """The one command that installs the cell's ``pylock.toml`` (``--format pylock``) with
        the optional layers ``extras`` (PEP 751 extras: :func:`lockgen.locks.pylockfile.with_layers`):
        uv ``pip sync PYLOCK --extra X``; pip (26.3 or newer) ``install --no-deps -r 'PYLOCK[X,…]'``
        (pip reads a pylock as requirements and would resolve dependencies again). Its URLs go
        through the mirrors in a copy under ``.lockgen/install/<cell>/``."""
        path = self.mirrored_pylock(write)
        if self.options.installer == "uv":
            return [*self.head(), "pip", "sync", path, *(token for extra in extras for token in ("--extra", extra))]
        return [*self.head(), "install", "--no-deps", "-r", f"{path}[{','.join(extras)}]" if extras else path]

    def pylock(self) -> tuple[str, str]:
        """``(project-relative path, text)`` of the cell's ``pylock.toml``, confined to the locks
        folder and checked against the sha256 the manifest records. Raises
        :class:`InstallRefused` when the manifest names none or the file is not the one it names."""
        from lockgen.locks.lock import decode, text_sha256
        from lockgen.locks.paths import confine

        if self.entry.pylock is None:
            raise InstallRefused(
                f"cell {self.cell} has no pylock.toml in the manifest: re-lock it (lockgen all --force {self.cell}) "
                "or install with --format txt; nothing was installed"
            )
        path, digest = self.entry.pylock
        data = bounded.read_file(confine(self.root, self.locks, path, f"cells.{self.cell}.pylock.path"), path)
        text = decode(data, path)
        if text_sha256(text) != digest:
            raise InstallRefused(
                f"{path}: its sha256 is not the one the manifest records (sha256:{digest}): the file was changed "
                "after it was locked; check it out again or re-lock; nothing was installed"
            )
        return path, text

    def mirrored_pylock(self, write: bool) -> str:
        """The pylock's path, or a copy under ``.lockgen/install/<cell>/pylock.toml`` whose URLs
        point at the mirrors (and whose local paths still name the same files), without the
        packages of the unhashed layer."""
        from dataclasses import replace

        from lockgen.locks import pylockfile

        path, text = self.pylock()
        original = pylockfile.loads(text, path)
        copy = f"{WORK}/install/{self.cell}/{pylockfile.PYLOCK_NAME}"

        def mirrored(artifact: Any) -> Any:
            return replace(artifact, url=self.mirrors.file_url(artifact.url)) if artifact.url else artifact

        mapped = pylockfile.map_artifacts(original, mirrored)
        if any(layer.kind is LayerKind.UNHASHED for layer in self.layers):
            # the unhashed layer installs the local folders and VCS checkouts from its own lock
            # after (pip refuses an editable entry among hashed ones)
            kept = [p for p in mapped.packages if p.directory is None and p.vcs is None]
            mapped = replace(mapped, packages=kept)
        if mapped == original:
            return path

        def moved(artifact: Any) -> Any:
            if not artifact.path:
                return artifact
            where = posixpath.normpath(posixpath.join(posixpath.dirname(path), artifact.path))
            return replace(artifact, path=posixpath.relpath(where, posixpath.dirname(copy)))

        if write:
            self.write_work(copy, pylockfile.dumps(pylockfile.map_artifacts(mapped, moved)))
        return copy

    def head(self) -> list[str]:
        from lockgen.runtime.uvbin import pinned_uv_binary

        return [pinned_uv_binary()] if self.options.installer == "uv" else list(self.pip or ["pip"])

    def mirrored_copy(self, layer: Layer, write: bool) -> str:
        """``layer.path``, or a copy under ``.lockgen/install/<cell>/`` whose ``name @ URL`` lines
        point at the mirror (the hashes are the same bytes' hashes; a login is an environment
        reference, ``${LOCKGEN_CREDENTIALS_0}@``, that pip and uv expand: no work file holds one)."""
        mapped = self.mirrored_text(layer.text, layer.lock.entries)
        if mapped == layer.text:
            return layer.path
        copy = f"{WORK}/install/{self.cell}/{layer.name}.txt"
        if write:
            self.write_work(copy, mapped)
        return copy

    def write_work(self, path: str, text: str) -> None:
        """Write a project-relative file under the work folder (``.lockgen/``, with its
        ``.gitignore``): its folder (``.lockgen/install/<cell>``) made, and refused (exit 2,
        :class:`~lockgen.locks.store.LinkedWork`) when it or anything on the way or in it is a
        symbolic link."""
        from lockgen.locks.store import work_folder, write_text

        work_folder(self.root, posixpath.dirname(path), depth=-1)
        write_text(self.root / path, text, path)

    def mirrored_text(self, text: str, entries: Sequence[Entry]) -> str:
        """``text`` (lock lines) with the direct URLs of ``entries`` mapped through the mirrors."""
        for entry in entries:
            if entry.url and "://" in entry.url and not entry.editable:
                text = text.replace(entry.url, self.mirrors.file_url(entry.url))
        return text

    def shown(self, argv: Sequence[str]) -> str:
        """``argv`` as the manifest spells it (``uv …`` / ``pip …``, not the binary's path),
        without credentials (:func:`lockgen.runtime.credentials.command_line`)."""
        return command_line([self.options.installer, *argv[len(self.head()) :]])

    def run(self, argv: Sequence[str]) -> bool:
        """Run one install command; on failure, warn with the end of its output. An installer
        stopped by a signal stops the install: Ctrl-C or SIGTERM raise :class:`Interrupted`
        (exit 130), any other signal (SIGKILL from the out-of-memory killer) :class:`InstallFailed`
        (exit 1); nothing is rolled back then and no record is written, so the next run
        installs again."""
        done = run(argv, self.env, self.root)
        if done.interrupted:
            raise Interrupted(
                f"{self.shown(argv)} was stopped ({done.signal or f'exit {done.returncode}'}); the venv "
                f"{self.venv.path} may be half-installed: run `lockgen install` again"
            )
        if done.signal is not None:
            why = " (the kernel's out-of-memory killer sends it, as does kill -9)" if done.signal == "SIGKILL" else ""
            raise InstallFailed(
                f"{self.shown(argv)} was killed by {done.signal}{why}; the install stopped without rolling anything "
                f"back, and {self.venv.path} may be half-installed: run `lockgen install` again"
            )
        if done.returncode != 0:
            self.warn(f"{self.shown(argv)} failed (exit {done.returncode}):\n{done.cause()}")
        return done.returncode == 0

    def uninstall(self, names: Sequence[str]) -> bool:
        if not names:
            return True
        if self.options.installer == "uv":
            return self.run([*self.head(), "pip", "uninstall", *sorted(names)])
        return self.run([*self.head(), "uninstall", "--yes", *sorted(names)])


def _redacting(say: Say) -> Say:
    """``say`` with every line passed through :func:`lockgen.runtime.credentials.redact` first."""
    return lambda text: say(redact(text))


def install(project: Project, options: Options, say: Say = print, warn: Say | None = None) -> int:
    """Install one cell into a venv (see the module docstring); 0 when the venv matches the lock
    (optional layers that failed are warnings). Raises :class:`InstallRefused` or
    :class:`~lockgen.runtime.errors.InputError` before anything is installed, :class:`InstallFailed`
    after, :class:`UsageError` for a bad request, :class:`Interrupted` when an installer was
    stopped. Whatever it says, warns or raises holds no credential."""
    venv = Path(options.venv) if options.venv else project.root / ".venv"
    return _install(
        project.root, project.config.locks, lambda: project.mirrors(options.mirrors), venv, options, say, warn
    )


def install_bundle(folder: Path, options: Options, say: Say = print, warn: Say | None = None) -> int:
    """Install one cell of a bundle (``lockgen bundle``: :mod:`lockgen.rot.bundle`) from the
    folder ``folder``: its ``locks/manifest.json`` and the locks it names, whose index is the
    bundle's own ``index/`` folder, so nothing is fetched. No project is read and no mirror
    applies; the venv defaults to ``.venv`` in the current folder (the bundle may be read-only).
    Raises :class:`UsageError` when ``folder`` is not a bundle, else as :func:`install`."""
    from lockgen.rot.bundle import is_bundle, refuse_half_written

    refuse_half_written(folder)
    if not is_bundle(folder):
        raise UsageError(
            f"{folder} is not a lockgen bundle (no {folder / 'bundle.json'}); make one with lockgen bundle"
        )
    if options.mirrors or options.index_url:
        raise UsageError("--mirror and --index-url do not apply to a bundle: it installs from its own files")
    venv = Path(options.venv) if options.venv else Path.cwd() / ".venv"
    return _install(folder.absolute(), "locks", Mirrors, venv, options, say, warn, bundle=True)


def _install(
    root: Path, locks: str, mirrors_of: Callable[[], Mirrors], venv_path: Path, options: Options, say: Say,
    warn: Say | None, bundle: bool = False,
) -> int:  # fmt: skip
    say = _redacting(say)
    warn = _redacting(warn or (lambda text: print(f"warning: {text}", file=sys.stderr, flush=True)))
    if options.installer not in INSTALLERS:
        raise UsageError(f"--installer {options.installer!r}: use one of {', '.join(INSTALLERS)}")
    if options.format not in FORMATS:
        raise UsageError(f"--format {options.format!r}: use one of {', '.join(FORMATS)}")
    if options.index_url is not None and url_problem(options.index_url):
        raise UsageError(
            f"--index-url: {url_problem(options.index_url)}; give the index's URL, e.g. https://pypi.org/simple "
            "(nothing was installed)"
        )
    manifest = read_manifest(root, locks)
    python, given = _python_option(options.python, root)
    venv = Venv(venv_path.absolute())
    _refuse_venv(venv)
    present = venv.inspect(root) if venv.exists() else None
    entry, said, left_out = choose(
        manifest, options.cell, options.detect, python, options.cpu,
        (venv.path, present) if present is not None else None, dict(options.axes),
    )  # fmt: skip
    for line in said:
        say(line)
    layers = load_layers(root, locks, entry, bundle=bundle)
    if bundle:  # its index pages are read like its locks: confined, hashes verified
        from lockgen.rot.bundle import check_index

        check_index(root, [layer.lock for layer in layers])
    for layer in [layer for layer in layers if layer.name in left_out and layer.kind is LayerKind.OPTIONAL]:
        warn(f"{layer.name}: not installed on this machine, its kernels do not run here "
             f"({left_out[layer.name]}); an optional layer: the install goes on without it")  # fmt: skip
    layers = [layer for layer in layers if layer.name not in left_out or layer.kind is not LayerKind.OPTIONAL]
    refuse_host(entry, cellselect.gather(probe_gpus=False))
    main_lock = next((layer.lock for layer in layers if layer.kind is LayerKind.MAIN), None)
    for gap in main_lock.header.unavailable if main_lock is not None else ():  # before anything runs (issue 17)
        say(f"not available for {entry.name}: optional {gap.requirement} ({gap.reason})")
    mirrors = mirrors_of()
    job = _Run(root, locks, entry, layers, venv, options, mirrors, say, warn, given=given)
    interpreter = _interpreter(job, present)  # found before anything is written
    if options.dry_run:
        return _prepare(job) or _dry_run(job, interpreter)
    with venv.held(options.wait):
        if venv.half_made():
            say(f"venv {venv.path}: left half-made by an interrupted install; making it again")
            venv.clear()
        if venv.exists() != (present is not None):  # another install made or removed it meanwhile
            interpreter = _interpreter(job, venv.inspect(root) if venv.exists() else None)
        done = _prepare(job)
        if done is not None:
            return done
        if not venv.exists():  # with pip for --installer pip: a venv lockgen cannot complete is removed again
            venv.create(_uv(), interpreter.executable, root, lambda: _pip(job))
            say(f"venv {venv.path}: created from {interpreter.describe()}")
        else:
            say(f"venv {venv.path}: {interpreter.describe()}")
            _pip(job)
        return _install_layers(job)


def _pip(job: _Run) -> None:
    """For ``--installer pip``: how pip runs for the venv (:meth:`Venv.pip`). With ``--format
    pylock``, a pip older than :data:`PYLOCK_PIP` is refused here, before anything is installed
    (for a venv this run created, :meth:`Venv.create` removes it again). Raises
    :class:`InstallRefused`."""
    if job.options.installer == "pip":
        job.pip = job.venv.pip()
        problem = _pylock_pip_problem(job, job.pip)
        if problem:
            raise InstallRefused(problem)


#: The first pip that installs from a PEP 751 ``pylock.toml`` (``pip install -r pylock.toml``,
#: extras in brackets): pip 26.3's release notes. ``python -m venv`` and ``ensurepip`` ship older.
PYLOCK_PIP = Version("26.3")


def _pylock_pip_problem(job: _Run, pip: Sequence[str]) -> str | None:
    """Why the pip ``pip`` (a command line) cannot install the cell's pylock, or None: its
    ``--version`` is older than :data:`PYLOCK_PIP` (pip 23.2.1 reads the pylock as a
    requirements file and fails on its first line), or does not answer."""
    if job.options.format != "pylock":
        return None
    done = run([*pip, "--version"], job.env or base_env(os.environ), job.root)
    words = done.output.split()
    try:  # "pip 23.2.1 from /…/site-packages/pip (python 3.11)"
        found = Version(words[1]) if done.returncode == 0 and len(words) > 1 and words[0] == "pip" else None
    except InvalidVersion:
        found = None
    if found is not None and found >= PYLOCK_PIP:
        return None
    said = f"pip {found}" if found is not None else "the pip found (its --version did not answer)"
    return (
        f"{said} cannot install {job.cell}'s pylock.toml: pip reads PEP 751 files from {PYLOCK_PIP} on; "
        f"upgrade the venv's pip ({job.venv.python} -m pip install 'pip>={PYLOCK_PIP}'), or install with "
        "--installer uv or --format txt; nothing was installed"
    )


def _prepare(job: _Run) -> int | None:
    """Set the commands' environment, warn about unused mirrors, and say "up to date" (0) when
    the venv already holds what the locks say; None when there is work to do."""
    job.env = {**install_env(os.environ, job.venv, job.entry.environment), **job.mirrors.uv_env()}
    _warn_unused_mirrors(job)
    if job.venv.exists() and not job.options.force and _up_to_date(job):
        job.say(f"up to date: {job.venv.path} holds exactly what the locks of {job.cell} say; nothing to do")
        return 0
    return None


def _uv() -> str:
    from lockgen.runtime.uvbin import pinned_uv_binary

    return pinned_uv_binary()


def _refuse_venv(venv: Venv) -> None:
    """Refuse lockgen's own environment (an exact sync would uninstall lockgen), a folder that
    is not a venv (nor empty, nor one lockgen left half-made), and a venv that sees the system's
    site-packages (``--system-site-packages``): what the locks do not list would still be
    importable, so "nothing outside the lock" could not hold."""
    if venv.path.resolve() == Path(sys.prefix).resolve():
        raise InstallRefused(
            f"{venv.path} is the environment lockgen runs in; an exact sync would uninstall lockgen: pass --venv"
        )
    if not venv.usable():
        raise InstallRefused(f"{venv.path} exists and is not a virtual environment; pass another --venv")
    if venv.exists() and venv.system_site_packages():
        raise InstallRefused(
            f"{venv.path} sees the system's site-packages (pyvenv.cfg: include-system-site-packages = true), "
            "so packages the locks do not list would still be importable: nothing was installed; recreate it "
            "without --system-site-packages, or pass another --venv"
        )


def _python_option(value: str | None, cwd: Path) -> tuple[str | None, Interpreter | None]:
    """``--python``: ``(the Python minor, the interpreter named)``. ``X.Y`` (checked as the
    config's ``matrix.python`` values are) is the cell's Python: ``--detect`` picks by it, a named
    cell must have it. A path (it holds a ``/`` or names a file) is an interpreter to create the
    venv from, as uv's own ``--python`` takes one; it is run once, and its minor counts as the
    Python. Raises :class:`UsageError` for a value that is neither, :class:`InstallRefused` for a
    path that does not run."""
    from lockgen.config.validate import is_python

    if value is None:
        return None, None
    if is_python(value):
        return value, None
    path = Path(value).expanduser()
    if "/" in value or os.sep in value or path.is_file():
        if not path.is_file():
            raise UsageError(
                f"--python {value}: no such file; give the path of a CPython interpreter (/usr/bin/python3.12) or a "
                "Python version X.Y (nothing was installed)"
            )
        found = probe_python(str(path.absolute()), cwd, f"--python {value}: it does not run as a Python")
        return found.minor, found
    raise UsageError(
        f"--python {value}: give a Python version X.Y such as 3.12, or the path of an interpreter such as "
        "/usr/bin/python3.12 (nothing was installed)"
    )


def _interpreter(job: _Run, present: Interpreter | None) -> Interpreter:
    """The venv's interpreter (``present``, checked: Python minor, arch, CPython), or for a new
    venv the one ``--python PATH`` names or else the one uv finds. Raises :class:`InstallRefused`."""
    python, arch = job.entry.python, job.entry.requires.interpreter
    venv = job.venv
    if present is not None:
        found, where = present, f"the venv {venv.path} has"
    elif job.given is not None:
        found, where = job.given, f"--python {job.given.executable} is"
    else:
        found, where = probe_python(find_python(_uv(), python, job.entry.os, arch, job.root), job.root), "uv found"
    wrong = []
    if found.minor != python:
        wrong.append(f"Python {found.minor}, and the cell's locks are for Python {python} only")
    if found.arch != arch:
        wrong.append(f"an {found.arch} interpreter, and the cell needs {arch} (requires.interpreter)")
    if found.implementation != "cpython":
        wrong.append(f"{found.implementation}, and the locks are for CPython")
    if wrong:
        fix = (
            "remove it or pass another --venv" if present is not None
            else "pass another --python" if job.given is not None else "install the right Python, or pass --python PATH"
        )  # fmt: skip
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
    if job.mirrors.never_used() and job.entry.pylock is not None:
        from lockgen.locks import pylockfile
        from lockgen.locks.lock import decode
        from lockgen.locks.paths import confine

        path, _ = job.entry.pylock
        try:
            data = bounded.read_file(confine(job.root, job.locks, path, f"cells.{job.cell}.pylock.path"), path)
            packages = pylockfile.loads(decode(data, path), path).packages
        except (OSError, LockgenError):
            packages = []
        for package in packages:
            for _, artifact in pylockfile.artifacts(package):
                job.mirrors.mirrored(artifact.url or "")
    for prefix in job.mirrors.never_used():
        job.warn(f"mirror for {prefix} matched no URL of cell {job.cell}'s install commands; check its spelling")


def _hashed(wanted: Expected) -> dict[NormalizedName, Sequence[str]]:
    """``{name: the lock entry's hashes}`` of ``wanted``'s entries that have any (all but the
    unhashed layer's)."""
    return {name: entry.hashes for name, (_, entry, _) in wanted.items() if entry.hashes}


def _up_to_date(job: _Run) -> bool:
    """The venv holds what the last install (of these same layer files) left: the record says
    so, every version matches and every hashed distribution is still traced to the locks. A
    layer rolled back with another command than now (another ``--index-url``, other mirrors) is
    tried again, not skipped."""
    state = read_state(job.venv.path)
    if state is None or state.cell != job.cell:
        return False
    if [(r.name, r.sha256) for r in state.layers] != [(layer.name, layer.sha256) for layer in job.layers]:
        return False
    by_name = {layer.name: layer for layer in job.layers}
    skipped = {r.name for r in state.layers if not r.installed}
    for name in skipped:
        if next(r.command for r in state.layers if r.name == name) != job.shown(
            job.installer_argv(by_name[name], False)
        ):
            return False
    wanted = expected([layer for layer in job.layers if layer.name not in skipped])
    installed = job.venv.installed(job.root)
    if (
        installed_problems(wanted, versions(installed), SEED)
        or traced_all(_hashed(wanted), installed, state, job.venv.path)[1]
    ):
        return False
    for name in sorted(skipped):
        job.say(f"{name}: rolled back on the last install of these same locks (--reinstall retries it)")
    return True


def _dry_run(job: _Run, interpreter: Interpreter) -> int:
    """Say what an install would do: the venv, the environment of the commands, what would be
    reinstalled first (distributions lockgen cannot trace to the locks' hashes), each command
    (and pip's uninstall step after main), without running anything."""
    action = "reuse" if job.venv.exists() else "create"
    job.say(f"would {action} the venv {job.venv.path} ({interpreter.describe()})")
    job.say(f"would run with: {_shown_env(job)}")
    present = job.venv.installed(job.root) if job.venv.exists() else {}
    untraced = traced_all(_hashed(expected(job.layers)), present, read_state(job.venv.path), job.venv.path)[1]
    for line in _untraced_lines(untraced):
        job.say(f"would first be {line}")
    if job.options.format == "pylock":
        argv = job.pylock_argv(_extras(job.layers), write=False)
        names = ", ".join(layer.name for layer in job.layers if layer.kind is not LayerKind.UNHASHED)
        pip = job.venv.existing_pip() if job.options.installer == "pip" else None
        problem = _pylock_pip_problem(job, pip) if pip else None
        if problem:
            job.say(f"would refuse: {problem}")
        job.say(f"would run for {names}: {job.shown(argv)}")
    for layer in job.layers:
        if job.options.format == "pylock" and layer.kind is not LayerKind.UNHASHED:
            continue
        job.say(f"would run for {layer.name}: {job.shown(job.installer_argv(layer, write=False))}")
        if layer.kind is LayerKind.MAIN and job.options.installer == "pip":
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
    keys += sorted(job.entry.environment)
    shown = " ".join(f"{key}={shlex.quote(job.env[key])}" for key in keys if key in job.env)
    if job.options.installer == "pip":
        shown += f"; pip runs with {' '.join(PIP_OPTIONS)}"
    return shown + "; without PIP_*, UV_* (but cache and network settings), PYTHONPATH, PYTHONHOME, CONDA_PREFIX"


def _install_layers(job: _Run) -> int:
    """Remove what lockgen cannot trace to the locks' hashes, install every layer in order, then
    check the venv against the locks (versions, and each hashed distribution's files against
    its RECORD); write the record."""
    state = read_state(job.venv.path)
    clear_state(job.venv.path)  # a run killed from here on leaves no record to trust
    kept, untraced = traced_all(_hashed(expected(job.layers)), job.venv.installed(job.root), state, job.venv.path)
    for line in _untraced_lines(untraced):
        job.say(line)
    if untraced and not job.uninstall(untraced):
        raise InstallFailed(f"could not uninstall {', '.join(untraced)} from {job.venv.path}; recreate the venv")
    outcome = _from_pylock(job) if job.options.format == "pylock" else _layer_by_layer(job)
    installed = [layer for layer, ok, _ in outcome if ok]
    wanted = expected(installed)
    after = job.venv.installed(job.root)
    problems = installed_problems(wanted, versions(after), SEED)
    traced: dict[str, Traced] = {}
    for name, hashes in sorted(_hashed(wanted).items()):
        dists = after.get(name, [])
        if len(dists) != 1:
            continue  # a version problem already
        found = trace(dists[0], kept.get(name), hashes, job.venv.path) if name in kept else None
        if found is None:
            found, mismatched = traced_now(dists[0], hashes, job.venv.path)
            problems += mismatched
        if found is not None:
            traced[name] = found
    if problems:
        hint = _HINTS[job.options.installer] if any("is not the file it installed" in p for p in problems) else ""
        raise InstallFailed(
            f"{job.venv.path} does not match the locks of {job.cell}:\n"
            + "\n".join(f"  - {p}" for p in problems)
            + hint
        )
    names = {layer.name for layer in installed}
    for swap in [swap for swap in job.entry.replaces if swap.by in names]:
        job.say(
            f"replaces: {swap.package} {swap.main} (main) -> {swap.layer} ({swap.by}), declared by `replace` in the config"
        )
    layers = tuple(LayerState(name=l.name, sha256=l.sha256, installed=ok, command=shown) for l, ok, shown in outcome)  # noqa: E741
    write_state(
        job.venv.path, State(cell=job.cell, installer=job.options.installer, layers=layers, distributions=traced)
    )
    count, hashed = len(wanted), len(traced)
    job.say(
        f"verified: {count} package{'s' if count != 1 else ''} in {job.venv.path} at the locked versions (local labels "
        f"included); {hashed} from archives with the locks' hashes, their files as installed"
    )
    return 0


#: What a file that differs from its RECORD right after an install means, per installer.
_HINTS = {
    "uv": "\nThe installer was uv: a file that is not the one installed right after an install usually comes from "
    "uv's cache: uv links the files of its cache into venvs (hard links on Linux), so an edit in a venv changes the "
    "cache too; run `uv cache clean NAME` and install again",
    "pip": "\nThe installer was pip, which unpacks each checked archive afresh (bytecode it compiles and scripts it "
    "writes are accepted): a file that differs right after it ran was written by something else in the venv at the "
    "same time, or the wheel's RECORD does not describe its own files; install again with --reinstall, and if the "
    "same file differs, the wheel is at fault",
}


def _untraced_lines(untraced: Sequence[NormalizedName]) -> list[str]:
    """What an install says before it reinstalls ``untraced`` (distributions a hashed layer locks
    that lockgen cannot trace to the locks' hashes): the venv's seed packages (:data:`SEED`:
    ``python -m venv`` and ensurepip put pip and setuptools, per Python version, into a venv;
    none of them came from the locks) are replaced as a matter of course, the others were
    installed another way or changed since."""
    seed = [name for name in untraced if name in SEED]
    other = [name for name in untraced if name not in SEED]
    lines = []
    if seed:
        lines.append(
            f"replacing the venv's own {', '.join(seed)} (put there when the venv was made, not from the locks) "
            "with the locked build"
        )
    if other:
        lines.append(
            f"reinstalling {len(other)} distribution{'s' if len(other) != 1 else ''} lockgen cannot trace to the "
            f"locks' hashes (installed another way, or changed since): {', '.join(other)}"
        )
    return lines


def _layer_by_layer(job: _Run) -> list[tuple[Layer, bool, str]]:
    """Install each layer's ``.txt`` lock in order (``--format txt``): ``(layer, installed, command)``
    each. Raises :class:`InstallFailed` when main, no-deps or unhashed fails."""
    outcome: list[tuple[Layer, bool, str]] = []
    for layer in job.layers:
        shown = job.shown(job.installer_argv(layer, write=False))
        job.say(f"{layer.name}: {shown}")
        if layer.kind is LayerKind.OPTIONAL:
            outcome.append((layer, _optional(job, layer, [done for done, ok, _ in outcome if ok]), shown))
            continue
        ok = job.run(job.installer_argv(layer))
        if ok and layer.kind is LayerKind.MAIN and job.options.installer == "pip":
            ok = _pip_sync_rest(job, layer)
        if not ok:
            raise InstallFailed(
                f"{layer.name} of cell {job.cell} did not install into {job.venv.path}; see the installer's output above"
            )
        outcome.append((layer, True, shown))
    return outcome


def _extras(layers: Sequence[Layer]) -> list[str]:
    """The PEP 751 extras of the optional ``layers`` (``optional-<package>`` is ``<package>``)."""
    return [layer.name.removeprefix("optional-") for layer in layers if layer.kind is LayerKind.OPTIONAL]


def _from_pylock(job: _Run) -> list[tuple[Layer, bool, str]]:
    """Install the cell's ``pylock.toml`` in one command with every optional layer still wanted
    as an extra (``--format pylock``), then the unhashed layer from its lock; ``(layer,
    installed, command)`` each. When that command fails and optional layers were asked, it runs
    without them, then adds them back one at a time in install order, keeping each that
    installs (a failed optional layer is a warning, as layer by layer). pip cannot sync: what
    the pylock does not install is uninstalled after. Raises :class:`InstallFailed` when the
    pylock does not install even without its optional layers."""
    extras = _extras(job.layers)
    argv = job.pylock_argv(extras)
    names = ", ".join(layer.name for layer in job.layers if layer.kind is not LayerKind.UNHASHED)
    job.say(f"{names}: {job.shown(argv)}")
    kept = list(extras)
    ok = job.run(argv)
    if not ok and extras:
        kept = []
        argv = job.pylock_argv(kept)
        job.warn(f"installing again without the optional layers, then adding them one at a time: {job.shown(argv)}")
        ok = job.run(argv)
        for extra in extras if ok else ():
            trial = job.pylock_argv([*kept, extra])
            if job.run(trial):
                kept.append(extra)
                argv = trial
            else:
                job.warn(f"optional layer optional-{extra} failed and was left out; the install goes on without it")
                argv = job.pylock_argv(kept)
                ok = job.run(argv)  # back to the last set that installed
                if not ok:
                    break
    chosen = [
        layer
        for layer in job.layers
        if layer.kind is not LayerKind.UNHASHED
        and (layer.kind is not LayerKind.OPTIONAL or layer.name.removeprefix("optional-") in kept)
    ]
    if ok and job.options.installer == "pip":
        listed = {name for layer in chosen for name in layer.versions()}
        surplus = [n for n in job.venv.distributions(job.root) if n not in listed and n not in SEED]
        ok = job.uninstall(surplus)
    if not ok:
        raise InstallFailed(
            f"the pylock.toml of cell {job.cell} did not install into {job.venv.path}; see the installer's output above"
        )
    shown = job.shown(argv)
    outcome = []
    for layer in job.layers:
        if layer.kind is LayerKind.UNHASHED:
            command = job.shown(job.installer_argv(layer, write=False))
            job.say(f"{layer.name}: {command}")
            if not job.run(job.installer_argv(layer)):
                raise InstallFailed(
                    f"{layer.name} of cell {job.cell} did not install into {job.venv.path}; see the installer's output above"
                )
            outcome.append((layer, True, command))
        else:
            outcome.append((layer, layer in chosen, shown))
    return outcome


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
    job.write_work(path, text)
    sources = map_sources(restore_sources([layer.sources for layer in layers]), job.mirrors, job.options.index_url)
    verb = ["pip", "install"] if job.options.installer == "uv" else ["install"]
    return job.run([*job.head(), *verb, "--require-hashes", "--no-deps", *sources, "-r", path])


def restore_sources(sources: Sequence[tuple[str | None, Sequence[str]]]) -> list[str]:
    """The sources of a rollback's reinstall, from the ``(index URL, find-links)`` of the layers
    installed before (main first): the first index URL, then each find-links value of any of
    them, once, in order of appearance."""
    index = next((url for url, _ in sources if url), None)
    links = dict.fromkeys(link for _, found in sources for link in found)
    return (["--index-url", index] if index else []) + [token for link in links for token in ("--find-links", link)]
