"""The environment ``lockgen install`` installs into: the interpreter, the venv, the processes.

One place runs the install processes (the installers the manifest names, ``uv python find``,
``uv venv``, the venv's Python for what it holds), each with ``shell=False``, an explicit
environment and working directory, and logged with ``-v``. Resolution never comes here: it runs
through :mod:`lockgen.resolve.uv`. Every Python lockgen starts here (the venv's for its probe,
``ensurepip`` and pip, lockgen's own for pip) runs in isolated mode (``-I``, :data:`ISOLATED`):
neither the working folder (the project or bundle root, where a ``select.py`` or ``json.py``
would hide the stdlib module of that name) nor ``PYTHONPATH`` nor the user's site-packages is on
its ``sys.path``; uv runs the interpreters it queries isolated itself.

* :func:`find_python` asks the pinned uv's discovery for a CPython of an exact minor and arch
  (``uv python find --system cpython-3.12-windows-x86_64`` with ``UV_PYTHON_DOWNLOADS=never``):
  never another minor, never a download.
* :class:`Venv` is a virtual environment: what its interpreter is (:meth:`Venv.inspect`) and
  which distributions it holds (:meth:`Venv.distributions`, ``importlib.metadata`` run inside it).
* :func:`install_env` is the environment every install command runs with: the venv active, the
  target's variables (``MACOSX_DEPLOYMENT_TARGET``), no uv or pip settings that would add sources:
  uv reads no ``uv.toml`` (``UV_NO_CONFIG=1``) and pip no ``pip.conf`` (``PIP_CONFIG_FILE`` is
  ``os.devnull``, which makes pip skip every configuration file, and it runs with ``--isolated``,
  which makes it ignore ``PIP_*`` variables; none is passed anyway, and the pip that installs
  build dependencies for an sdist or an editable project inherits that environment).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import NormalizedName

from lockgen.install.record import Installed, by_name, versions
from lockgen.locks.jsonfile import load_json
from lockgen.runtime import bounded
from lockgen.runtime.credentials import command_line, redact
from lockgen.runtime.errors import InputError, InstallRefused, LockgenError
from lockgen.runtime.uvbin import WIDE

__all__ = [
    "CREATING", "DROPPED", "ISOLATED", "LOCK_FILE", "PIP_OPTIONS", "Done", "Interpreter", "Venv", "base_env",
    "discovery_failure", "find_python",
    "install_env", "lockgen_has_pip", "pip_network_options", "probe", "probe_python", "run",
]  # fmt: skip

log = logging.getLogger("lockgen.install")

#: uv variables kept for install commands: where the cache is and how uv talks to the network.
#: Every other ``UV_*`` (an extra index, find-links, a resolution setting) is dropped.
_KEEP_UV = {
    "UV_CACHE_DIR", "UV_NATIVE_TLS", "UV_HTTP_TIMEOUT", "UV_HTTP_RETRIES", "UV_CONCURRENT_DOWNLOADS",
    "UV_CONCURRENT_BUILDS", "UV_CONCURRENT_INSTALLS", "UV_INSECURE_HOST", "UV_KEYRING_PROVIDER", "UV_LINK_MODE",
}  # fmt: skip
#: Dropped from the environment of every command besides ``UV_*`` (but :data:`_KEEP_UV`) and
#: every ``PIP_*``: Python path settings, the target's variables (set from the manifest) and
#: another active environment.
DROPPED = ("PYTHONPATH", "PYTHONHOME", "MACOSX_DEPLOYMENT_TARGET", "VIRTUAL_ENV", "CONDA_PREFIX")
#: The interpreter option of every Python lockgen starts (``python -I``): isolated mode, so the
#: working folder, ``PYTHONPATH`` and the user's site-packages are not on ``sys.path``. Without
#: it ``python -m ensurepip`` run in a bundle (whose ``select.py`` is the selector) failed with
#: "module 'select' has no attribute 'select'"; ``ensurepip`` passes it on to the pip it runs.
ISOLATED = "-I"
#: pip's general options for every pip command: ignore ``PIP_*`` variables and the user's
#: configuration (``--isolated``), no version check against PyPI, never prompt.
PIP_OPTIONS = ("--isolated", "--disable-pip-version-check", "--no-input")
#: pip's network settings a user gives as ``PIP_*`` variables, which ``--isolated`` would drop,
#: passed as their options instead (like :data:`_KEEP_UV` for uv): they cannot change what is
#: installed, and a company CA (``PIP_CERT``) or proxy may be what makes the index reachable.
_PIP_NETWORK = {
    "PIP_CERT": "--cert", "PIP_CLIENT_CERT": "--client-cert", "PIP_PROXY": "--proxy",
    "PIP_TIMEOUT": "--timeout", "PIP_DEFAULT_TIMEOUT": "--timeout", "PIP_RETRIES": "--retries",
}  # fmt: skip


def pip_network_options(environ: Mapping[str, str]) -> list[str]:
    """``--cert PATH``, ``--proxy URL``, … for the network settings in ``environ``'s ``PIP_*``
    variables (see :data:`_PIP_NETWORK`), in a stable order; ``[]`` when none is set."""
    options: dict[str, str] = {}
    for variable, option in _PIP_NETWORK.items():
        if environ.get(variable):
            options.setdefault(option, environ[variable])
    return [part for option, value in options.items() for part in (option, value)]


#: Run by the venv's interpreter with ``-I -S`` (no ``site``: no ``.pth`` file of the venv runs,
#: no user or environment setting applies): its interpreter, and the distributions under the venv
#: (``sys.argv[1]``; without it, the interpreter's own prefix) read as metadata files only.
_PROBE = """
import importlib.metadata as m, json, os, platform, sys, sysconfig
venv = sys.argv[1] if len(sys.argv) > 1 else sys.prefix
prefix = os.path.realpath(venv)
paths = sysconfig.get_paths(vars={"base": venv, "platbase": venv, "installed_base": venv, "installed_platbase": venv})
where = sorted({paths["purelib"], paths["platlib"]})
def inside(dist):
    try:
        return os.path.realpath(str(dist.locate_file(""))).startswith(prefix)
    except Exception:
        return False
dists = sorted({(d.metadata["Name"] or "", d.version or "", str(getattr(d, "_path", "") or ""))
                for d in m.distributions(path=where) if inside(d)})
print(json.dumps({"version": list(sys.version_info[:3]), "implementation": sys.implementation.name,
                  "machine": platform.machine(), "prefix": venv, "base_prefix": sys.base_prefix,
                  "distributions": dists}))
"""
#: What an interpreter a venv links to is called (``python3.12``, ``python``, ``pypy3.10``).
_INTERPRETER_NAME = re.compile(r"(python|pypy)[0-9.]*(\.exe)?")


#: Exit codes of a process stopped by Ctrl-C besides a negative one (POSIX): a shell's 130, and
#: Windows' STATUS_CONTROL_C_EXIT.
_INTERRUPTED = (130, 0xC000013A)


@dataclass(frozen=True)
class Done:
    """A finished process: its exit code and its output (stdout and stderr, interleaved as text)."""

    returncode: int
    output: str

    @property
    def signal(self) -> str | None:
        """The name of the signal that ended the process (``SIGKILL``: the kernel's OOM killer, a
        ``kill -9``), or None when it exited by itself."""
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    @property
    def interrupted(self) -> bool:
        """Stopped by Ctrl-C or a termination request (SIGINT, SIGTERM, SIGHUP), not by a failure."""
        return self.signal in ("SIGINT", "SIGTERM", "SIGHUP") or self.returncode in _INTERRUPTED

    def tail(self, lines: int = 12) -> str:
        """The last ``lines`` non-blank lines of the output (what a failure is explained by)."""
        kept = [line.rstrip() for line in self.output.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])

    def cause(self, limit: int = 80) -> str:
        """What a failure is explained by: the output from its first error line on (pip's
        ``ERROR:`` or ``error:``, its ``×`` block of a failed build with the build's own output,
        uv's ``error:``), at most ``limit`` lines (then its last ones); the :meth:`tail` when no
        line says error. A build's cause sits far above the output's last lines (issue 17: the
        message showed only the tail of it)."""
        kept = [line.rstrip() for line in self.output.splitlines() if line.strip()]
        first = next((i for i, line in enumerate(kept) if line.lstrip().startswith(_ERROR_STARTS)), None)
        if first is None:
            return self.tail()
        block = kept[first:]
        if len(block) > limit:
            block = [*block[: limit // 2], f"… ({len(block) - limit} lines)", *block[-(limit // 2) :]]
        return "\n".join(block)


#: How an error starts in pip's and uv's output (pip's failed-build block starts with ``×``).
_ERROR_STARTS = ("ERROR:", "error:", "× ")


def run(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> Done:
    """Run ``argv`` (no shell) in ``cwd`` with exactly ``env``; stdin closed, output captured
    (credentials removed: :func:`lockgen.runtime.credentials.redact`)."""
    log.debug("run in %s: %s", cwd, command_line(argv))
    try:
        done = subprocess.run(
            list(argv), env=dict(env), cwd=cwd, shell=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
        )  # fmt: skip
    except OSError as exc:
        return Done(127, f"cannot run {argv[0]}: {exc.strerror or exc}")
    log.debug("exit %s", done.returncode)
    return Done(done.returncode, redact(done.stdout or ""))


def base_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without uv's settings (but the cache and network ones, :data:`_KEEP_UV`), without
    every ``PIP_*`` variable and the :data:`DROPPED` ones; uv told never to download an
    interpreter and to read no ``uv.toml``/``[tool.uv]`` (``UV_NO_CONFIG``), pip to read no
    configuration file (``PIP_CONFIG_FILE=os.devnull``: pip skips them all, the global
    ``/etc/pip.conf`` included). A user's settings must not add an index, find-links, a constraint
    or ``no-binary`` to the recorded commands."""
    env = {
        key: value for key, value in base.items()
        if not (key.startswith("UV_") and key not in _KEEP_UV) and not key.startswith("PIP_") and key not in DROPPED
    }  # fmt: skip
    env.update(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1", UV_NO_CONFIG="1", PIP_CONFIG_FILE=os.devnull)
    env.update(WIDE)  # messages lockgen reads and repeats stay one line each
    return env


def install_env(base: Mapping[str, str], venv: Venv, target: Mapping[str, str]) -> dict[str, str]:
    """The environment of every install command: :func:`base_env`, the venv active
    (``VIRTUAL_ENV``, its scripts folder first on ``PATH``) and the target's variables (the
    manifest entry's ``environment``, e.g. ``MACOSX_DEPLOYMENT_TARGET``)."""
    env = base_env(base)
    env["VIRTUAL_ENV"] = str(venv.path)
    env["PATH"] = os.pathsep.join([str(venv.scripts), *([env["PATH"]] if env.get("PATH") else [])])
    env.update(target)
    return env


@dataclass(frozen=True)
class Interpreter:
    """A Python interpreter: its executable, ``X.Y`` minor, full version, implementation and arch
    (``x86_64``/``aarch64``, as the running process sees its machine)."""

    executable: str
    minor: str
    version: str
    implementation: str
    arch: str

    def describe(self) -> str:
        return f"{self.implementation} {self.version} {self.arch} ({self.executable})"


def find_python(uv: str, python: str, os_name: str, arch: str, cwd: Path) -> str:
    """The executable of a CPython ``python`` (``X.Y``) for ``arch`` that uv's discovery finds
    (``uv python find --system``: interpreters on PATH and uv-managed ones, not virtual
    environments; never a download). Raises :class:`InstallRefused` saying what was asked, what
    was searched, uv's answer on one line (:func:`discovery_failure`) and how to name one."""
    request = f"cpython-{python}-{os_name}-{arch}"
    done = run([uv, "python", "find", "--system", "--no-config", request], base_env(os.environ), cwd)
    found = done.output.strip().splitlines()
    if done.returncode != 0 or not found:
        raise InstallRefused(
            f"no CPython {python} ({arch}) interpreter found: {discovery_failure(done.output) or 'uv found none'} "
            f"(searched: the interpreters on PATH and uv-managed ones, `uv python find --system {request}`); pass "
            f"--python PATH with a CPython {python} for {arch}, install one (`uv python install {request}`), or pass "
            "--venv with a venv made from one"
        )
    return found[-1].strip()


def discovery_failure(output: str) -> str:
    """uv's answer to ``uv python find`` on one line: its ``error:`` and ``cause:`` lines, without
    what the interpreter it tried printed (the ``[stderr]`` block: a pyenv shim's "command not
    found … See 'pyenv help global'"). Pure; "" when there is nothing to say."""
    kept: list[str] = []
    quoting = False
    for line in output.splitlines():
        text = line.strip()
        if text in ("[stderr]", "[stdout]"):
            quoting = True
            continue
        head, sep, rest = text.partition(":")
        if sep and head in ("error", "cause", "Caused by"):
            quoting = False
            kept.append(rest.strip().replace("exit status exit status:", "exit status"))
        elif text and not quoting and not kept:
            kept.append(text)
    return "; ".join(kept)


def probe(python: str, cwd: Path, failure: str = "", venv: Path | None = None) -> dict[str, Any]:
    """What :data:`_PROBE` reports when ``python -I -S`` runs it: ``version`` ([3, 12, 4]),
    ``implementation``, ``machine``, ``prefix``, ``distributions`` ([[name, version], …] under
    ``venv``, else the interpreter's prefix). Raises :class:`InstallRefused` (``failure``, and
    the output) when it does not run."""
    done = run(
        [python, ISOLATED, "-S", "-c", _PROBE, *([str(venv)] if venv is not None else [])], base_env(os.environ), cwd
    )
    try:  # bounded: depth and numbers (what an interpreter printed)
        last = done.output.strip().splitlines()[-1] if done.returncode == 0 else ""
        data = load_json(last, python, "the probe's report", ours=False) if last else None
    except InputError:
        data = None
    if not isinstance(data, dict):
        raise InstallRefused(f"{failure or python + ' does not run'} ({done.tail(3) or 'no output'})")
    problem = _report_problem(data)
    if problem:
        raise InstallRefused(
            f"{failure or python + ' does not run as a Python'}: it printed a report lockgen's probe does not "
            f"write ({problem}); pass another --python or --venv"
        )
    return data


def _report_problem(data: Mapping[str, Any]) -> str | None:
    """What in a :data:`_PROBE` report is not the shape the probe prints (an interpreter, or a
    wrapper in its place, printed something else as its last line), or None."""
    version = data.get("version")
    if not isinstance(version, list) or len(version) != 3 or not all(type(v) is int for v in version):
        return "version: must be [major, minor, micro]"
    for key in ("implementation", "machine"):
        if not isinstance(data.get(key), str):
            return f"{key}: must be a string"
    found = data.get("distributions")
    if not isinstance(found, list) or not all(
        isinstance(d, list) and len(d) == 3 and all(isinstance(v, str) for v in d) for d in found
    ):
        return "distributions: must be [[name, version, path], …]"
    return None


def probe_python(executable: str, cwd: Path, failure: str = "") -> Interpreter:
    """The interpreter at ``executable`` (run once; ``failure``: see :func:`probe`)."""
    return _interpreter(executable, probe(executable, cwd, failure))


def _interpreter(executable: str, data: Mapping[str, Any]) -> Interpreter:
    from lockgen.cellselect import normalize_arch

    version = [int(part) for part in data["version"]]
    return Interpreter(
        executable=executable, minor=f"{version[0]}.{version[1]}", version=".".join(map(str, version)),
        implementation=str(data["implementation"]), arch=normalize_arch(str(data["machine"])),
    )  # fmt: skip


#: The install lock of a venv, inside it: one install per venv at a time.
LOCK_FILE = "lockgen-install.lock"
#: Inside a venv while lockgen creates it (removed when ``uv venv`` is done).
CREATING = "lockgen-creating"


@dataclass(frozen=True)
class Venv:
    """A virtual environment at ``path`` (it may not exist yet)."""

    path: Path

    @property
    def scripts(self) -> Path:
        return self.path / ("Scripts" if sys.platform == "win32" else "bin")

    @property
    def python(self) -> Path:
        return self.scripts / ("python.exe" if sys.platform == "win32" else "python")

    def exists(self) -> bool:
        """A venv is there: its ``pyvenv.cfg`` exists and no create of lockgen's was cut short."""
        return (self.path / "pyvenv.cfg").is_file() and not self.half_made()

    def half_made(self) -> bool:
        """An install was interrupted while it created this venv (:data:`CREATING` is still
        there): the next install clears it and creates it again."""
        return (self.path / CREATING).exists()

    def usable(self) -> bool:
        """Whether lockgen may install here: a venv, a half-made one of lockgen's, an empty
        folder (one holding only lockgen's lock file counts), or nothing yet."""
        if self.exists() or self.half_made() or not self.path.exists():
            return True
        return self.path.is_dir() and all(p.name == LOCK_FILE for p in self.path.iterdir())

    @contextmanager
    def held(self, wait: bool) -> Iterator[None]:
        """Hold this venv's install lock (:data:`LOCK_FILE` inside it; the folder is made when
        missing) for the ``with`` block: one install per venv at a time. Raises
        :class:`InstallRefused` naming the other install's pid, or with ``wait`` waits for it."""
        from lockgen.locks.store import FileLock

        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InstallRefused(f"cannot create the venv folder {self.path}: {exc.strerror or exc}") from None

        def busy(holder: str) -> InstallRefused:
            return InstallRefused(
                f"another lockgen install is working on the venv {self.path} ({holder}); wait for it to finish, "
                "or pass --wait to queue behind it"
            )

        with FileLock(self.path / LOCK_FILE, wait, busy, f"waiting for another lockgen install into {self.path}"):
            yield

    def clear(self) -> None:
        """Remove everything in the venv folder but its lock file (a half-made venv)."""
        for child in self.path.iterdir():
            if child.name == LOCK_FILE:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()

    def system_site_packages(self) -> bool:
        """Whether the venv sees its base interpreter's site-packages (``pyvenv.cfg``:
        ``include-system-site-packages = true``, as ``python -m venv --system-site-packages``
        writes it)."""
        return (self._config("include-system-site-packages") or "").lower() == "true"

    def base_interpreter(self, cwd: Path) -> Path:
        """The installed interpreter this venv was made from, which lockgen runs to inspect it.
        A venv found in a checkout may have been committed with a ``bin/python`` that is a
        script (issue 15), so lockgen runs no file of the venv: on POSIX ``bin/python`` must be
        a symlink (what ``uv venv`` and ``python -m venv`` make) to an interpreter (``python3.12``,
        …) outside the venv and outside the project (``cwd``); on Windows, where a venv holds a
        copied launcher, lockgen runs ``python.exe`` of ``pyvenv.cfg``'s ``home`` instead. The
        ``home`` must lie outside the project too. Raises :class:`InstallRefused` saying what to
        do (docs/untrusted-input.md)."""
        fix = "recreate it (lockgen install makes one when the folder is absent) or pass another --venv"
        home = self._config("home")
        if home is None:
            raise self._refused(f"{self.path / 'pyvenv.cfg'} has no home (the Python the venv was made from): {fix}")
        outside = [self.path.resolve(), cwd.resolve()]
        home_path = Path(home).resolve()
        if any(home_path == place or place in home_path.parents for place in outside):
            raise self._refused(
                f"{self.path / 'pyvenv.cfg'}: its home {home} lies inside the venv or the project: {fix}"
            )
        python = home_path / "python.exe" if sys.platform == "win32" else self.python
        if sys.platform != "win32" and not python.is_symlink():
            raise self._refused(
                f"{python} is not a link to an installed Python (a file committed with the checkout?): {fix}"
            )
        try:
            real = python.resolve(strict=True)
        except (OSError, RuntimeError):
            raise self._refused(f"{python} leads nowhere (a broken link): {fix}") from None
        if any(real == place or place in real.parents for place in outside):
            raise self._refused(
                f"{python} leads to {real}, inside the venv or the project, not to an installed Python: {fix}"
            )
        if not _INTERPRETER_NAME.fullmatch(real.name) or not real.is_file() or not os.access(real, os.X_OK):
            raise self._refused(f"{python} leads to {real}, which is not a Python interpreter: {fix}")
        return real

    def _refused(self, why: str) -> InstallRefused:
        return InstallRefused(f"the venv {self.path}: {why}; nothing was run or installed")

    def _config(self, key: str) -> str | None:
        """The value of ``key`` in the venv's ``pyvenv.cfg`` (``key = value`` lines), or None."""
        try:
            text = bounded.read_file(self.path / "pyvenv.cfg", "pyvenv.cfg", 65536).decode("utf-8", "replace")
        except (OSError, InputError):  # missing, a FIFO, larger than any pyvenv.cfg
            return None
        for line in text.splitlines():
            name, sep, value = line.partition("=")
            if sep and name.strip().lower() == key:
                return value.strip()
        return None

    def probe(self, cwd: Path) -> dict[str, Any]:
        """What :data:`_PROBE` reports about the venv (see :func:`probe`), run by the venv's
        :meth:`base_interpreter` (``-I -S``: nothing of the venv runs). Raises
        :class:`InstallRefused`."""
        return probe(
            str(self.base_interpreter(cwd)), cwd, f"{self.path}: its Python does not run; remove the venv or pass another --venv",
            self.path,
        )  # fmt: skip

    def inspect(self, cwd: Path) -> Interpreter:
        """The venv's interpreter."""
        return _interpreter(str(self.python), self.probe(cwd))

    def installed(self, cwd: Path) -> dict[NormalizedName, list[Installed]]:
        """``{canonical name: [Installed, …]}`` of the distributions under the venv's prefix, with
        their ``.dist-info`` folders (more than one means a broken install)."""
        found = self.probe(cwd)["distributions"]
        return by_name([(str(name), str(version), str(path)) for name, version, path in found])

    def distributions(self, cwd: Path) -> dict[NormalizedName, list[str]]:
        """``{canonical name: [version, …]}`` of the distributions installed under the venv's prefix
        (more than one version means a broken install)."""
        return versions(self.installed(cwd))

    def create(self, uv: str, interpreter: str, cwd: Path, complete: Callable[[], object] = lambda: None) -> None:
        """Create the venv with ``uv venv`` from ``interpreter`` (no pip in it: uv and lockgen's
        own pip install into it from outside), inside the folder :meth:`held` made, then call
        ``complete`` (what else the install needs of a new venv: pip, for ``--installer pip``).
        The :data:`CREATING` marker stays until both are done, so a create cut short (Ctrl-C, a
        kill) is recognised (:meth:`half_made`) and made again by the next install. When uv or
        ``complete`` refuses, what was created is removed (:meth:`clear`: the folder keeps only
        its lock file), so a refusal, exit 2, never leaves a venv lockgen could not complete.
        Raises :class:`InstallRefused`."""
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / CREATING).write_text(f"pid {os.getpid()}: lockgen install is creating this venv\n")
        try:
            done = run(
                [uv, "venv", "--no-config", "--quiet", "--allow-existing", "--python", interpreter, str(self.path)],
                base_env(os.environ), cwd,
            )  # fmt: skip
            if done.returncode != 0:
                raise InstallRefused(f"cannot create the venv {self.path}: {done.tail(5)}")
            complete()
        except LockgenError as exc:
            self.clear()
            raise InstallRefused(
                f"{exc}\nthe venv {self.path} lockgen had just created was removed again: nothing was installed"
            ) from None
        (self.path / CREATING).unlink()

    def has_pip(self) -> bool:
        """Whether pip is installed in the venv (its ``site-packages``, POSIX or Windows layout)."""
        if (self.path / "lib").is_dir() and any(self.path.glob("lib/python*/site-packages/pip/__init__.py")):
            return True
        return (self.path / "Lib" / "site-packages" / "pip" / "__init__.py").is_file()

    def existing_pip(self) -> list[str] | None:
        """The pip :meth:`pip` would run without changing anything (the venv's own, else
        lockgen's); None when it would first run ``ensurepip`` (a dry run changes nothing)."""
        options = [*PIP_OPTIONS, *pip_network_options(os.environ)]
        if self.has_pip():
            return [str(self.python), ISOLATED, "-m", "pip", *options]
        if lockgen_has_pip():
            return [sys.executable, ISOLATED, "-m", "pip", "--python", str(self.python), *options]
        return None

    def pip(self) -> list[str]:
        """How to run pip for this venv, with :data:`PIP_OPTIONS` and the user's network settings
        (:func:`pip_network_options`), its Python isolated (:data:`ISOLATED`): its own
        (``python -I -m pip``); else this interpreter's pip with ``--python`` (pip >= 22.3 installs
        into another environment so); else the venv gets pip from ``ensurepip`` (offline, run in
        the venv's folder). Raises :class:`InstallRefused` when ensurepip fails."""
        found = self.existing_pip()
        if found is not None:
            return found
        done = run([str(self.python), ISOLATED, "-m", "ensurepip", "--default-pip"], base_env(os.environ), self.path)
        if done.returncode != 0:
            raise InstallRefused(f"{self.path}: no pip in it and ensurepip failed:\n{done.cause()}")
        return [str(self.python), ISOLATED, "-m", "pip", *PIP_OPTIONS, *pip_network_options(os.environ)]


def lockgen_has_pip() -> bool:
    """Whether the environment lockgen runs in has pip (``pipx`` and ``uv tool`` installs may not)."""
    return importlib.util.find_spec("pip") is not None
