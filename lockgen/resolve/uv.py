"""Steps 2 and 3 of a cell's resolution: the ``uv pip compile`` command, and running it. The only place lockgen starts uv.

:func:`compile_argv` and :func:`compile_env` are pure (unit-tested): an
:class:`~lockgen.resolve.inputs.Inputs` and the plan in, argv and environment out. A
:class:`Runner` executes with ``shell=False``, an explicit environment and working directory,
logs the joined command, and can stop every process it started (Ctrl-C, SIGTERM). Tests can hand
the pipeline another runner that replays recorded outputs (the seam of :class:`RunnerLike`).

uv is the binary of the pinned ``uv`` PyPI package, never whatever is on PATH, and its version is
read from that package's metadata, so a no-op run starts no process.
"""

from __future__ import annotations

import functools
import itertools
import logging
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.runtime import trace
from lockgen.runtime.credentials import command_line
from lockgen.runtime.errors import Interrupted

if TYPE_CHECKING:  # the no-op path imports this module (run options): what only resolving needs is lazy
    from lockgen.resolve.inputs import Inputs

__all__ = [
    "Format",
    "Options",
    "Result",
    "Runner",
    "RunnerLike",
    "compile_argv",
    "compile_env",
    "uv_version",
]

log = logging.getLogger("lockgen.uv")

#: Every other ``UV_*`` variable is dropped: it could let a user's uv settings leak into a lock.
#: These are kept: where the cache lives and how uv talks to the network cannot change a lock.
_KEEP_UV_VARS = {
    "UV_CACHE_DIR", "UV_NATIVE_TLS", "UV_HTTP_TIMEOUT", "UV_HTTP_RETRIES", "UV_CONCURRENT_DOWNLOADS",
    "UV_CONCURRENT_BUILDS", "UV_INSECURE_HOST", "UV_KEYRING_PROVIDER",
}  # fmt: skip


@functools.cache
def uv_binary() -> str:
    """Path of the uv binary shipped by the pinned ``uv`` package (looked up once)."""
    from lockgen.runtime.uvbin import pinned_uv_binary

    return pinned_uv_binary()


def uv_version() -> str:
    """Version of the pinned ``uv`` package (:func:`lockgen.runtime.uvbin.uv_version`), e.g. ``"0.13.9"``."""
    from lockgen.runtime.uvbin import uv_version as version

    return version()


class Format(str, Enum):
    """What ``uv pip compile`` writes: PEP 751 data (the resolution) or a requirements file
    (lockgen reads its extras and ``# via`` annotations)."""

    PYLOCK = "pylock.toml"
    REQUIREMENTS = "requirements.txt"


@dataclass(frozen=True, kw_only=True)
class Options:
    """Resolution options that are not part of the input hash: upgrades (passed to uv) and
    ``refresh`` (revalidate every cached page: ``--force``/``--upgrade``)."""

    upgrade: bool = False
    upgrade_packages: tuple[str, ...] = ()
    refresh: bool = False


def compile_argv(
    plan: Plan,
    output: str,
    options: Options = Options(),
    python: str = sys.executable,
    *,
    offline: bool = False,
    mirrors: Mirrors | None = None,
    inputs: Inputs | None = None,
    fmt: Format = Format.PYLOCK,
    no_deps: bool = False,
    no_binary: Iterable[str] = (),
    excludes: str | None = None,
) -> list[str]:
    """The ``uv pip compile`` arguments (after the binary) for ``plan``, writing ``fmt`` to
    ``output``.

    Paths are relative to the project root, so uv's ``# via -r …`` annotations stay
    project-relative. ``--python`` is the running interpreter (uv must not download one; the
    target Python comes from ``--python-version``) and ``--no-config`` keeps ``uv.toml`` out.
    Index and find-links URLs go through ``mirrors``. Nothing is built from source except the
    ``no_binary`` packages (``--only-binary :all:`` with ``--no-binary`` for them: ``allow-build``
    packages that have no wheel for the target), so uv prefers an older version with a wheel to a
    newer sdist-only one (CASES C26). ``excludes``: a file of packages uv leaves out of the
    resolution (``--excludes``: lockgen looks past a package without wheels for the next one).
    A requirements file says which index or find-links page
    served each package (``# from …``: the source identity of :mod:`lockgen.plan.identity`).
    """
    if inputs is None:
        from lockgen.resolve.inputs import main_inputs

        inputs = main_inputs(plan)
    mirrors = Mirrors() if mirrors is None else mirrors  # a fresh one: Mirrors records what it served
    argv = ["pip", "compile", inputs.requirements, *inputs.extra]
    for constraints in inputs.constraints:
        argv += ["--constraint", constraints]
    if inputs.overrides:
        argv += ["--override", inputs.overrides]
    if excludes:
        argv += ["--excludes", excludes]
    argv += [
        "--output-file", output,
        "--format", fmt.value,
        "--python", python,
        "--python-version", plan.target.python,
        "--python-platform", plan.target.platform,
        "--index-url", mirrors.fetch_url(plan.inputs.index_url),
    ]  # fmt: skip
    argv += _source_args(plan, inputs, mirrors)
    argv += _resolution_args(plan, no_binary)
    if fmt is Format.REQUIREMENTS:  # the extras asked for (C19), and the index each package came from
        argv += ["--no-strip-extras", "--emit-index-annotation"]
    argv += ["--no-header", "--no-config"]
    return argv + _run_args(options, offline=offline, no_deps=no_deps)


def _source_args(plan: Plan, inputs: Inputs, mirrors: Mirrors) -> list[str]:
    """``--find-links`` (through ``mirrors``) and the ``--exclude-newer`` cutoff."""
    argv: list[str] = []
    for link in plan.inputs.main_find_links if inputs.find_links is None else inputs.find_links:
        argv += ["--find-links", mirrors.fetch_url(link)]
    if plan.inputs.exclude_newer:
        argv += ["--exclude-newer", plan.inputs.exclude_newer]
    # Backend indexes and find-links pages publish no upload times, and uv drops an artifact
    # without one under a cutoff: the cutoff applies to what the default index serves, and a
    # source's packages get the source's own exclude-newer or none. The config's
    # exclude-newer-package exempts a package or gives it its own cutoff.
    for package, cutoff in sorted(plan.inputs.cutoffs.items()):
        argv += ["--exclude-newer-package", f"{package}={cutoff}"]
    return argv


def _resolution_args(plan: Plan, no_binary: Iterable[str]) -> list[str]:
    """Wheels only (but ``no_binary``) and the cell's prerelease settings (issue 9)."""
    argv = ["--only-binary", ":all:"]
    for package in sorted(no_binary):
        argv += ["--no-binary", package]
    if plan.inputs.prerelease:
        argv += ["--prerelease", plan.inputs.prerelease]
    for package, mode in sorted(plan.inputs.prerelease_package.items()):
        argv += ["--prerelease-package", f"{package}={mode}"]
    return argv


def _run_args(options: Options, *, offline: bool, no_deps: bool) -> list[str]:
    """``--no-deps``, ``--offline`` or ``--refresh``, and the upgrades of ``options``."""
    argv: list[str] = []
    if no_deps:
        argv.append("--no-deps")
    if offline:
        argv.append("--offline")
    elif options.refresh:
        argv.append("--refresh")
    if options.upgrade:
        argv.append("--upgrade")
    for name in options.upgrade_packages:
        argv += ["--upgrade-package", name]
    return argv


def compile_env(base: Mapping[str, str], plan: Plan) -> dict[str, str]:
    """The environment uv runs with: ``base`` without ``UV_*`` settings and
    ``MACOSX_DEPLOYMENT_TARGET``, plus ``UV_PYTHON_DOWNLOADS=never``, :data:`~lockgen.runtime.uvbin.WIDE` and the
    target's variables."""
    from lockgen.runtime.uvbin import WIDE  # the no-op path imports this module, not the metadata reader

    env = {
        k: v
        for k, v in base.items()
        if not (k.startswith("UV_") and k not in _KEEP_UV_VARS) and k != "MACOSX_DEPLOYMENT_TARGET"
    }
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env["UV_NO_PROGRESS"] = "1"
    env.update(WIDE)
    env.update(plan.target.env())
    return env


@dataclass(frozen=True)
class Result:
    """What a uv process did: its exit code and standard error (warnings included)."""

    returncode: int
    stderr: str


class RunnerLike(Protocol):
    """Runs one uv command; the seam through which tests replay recorded uv outputs."""

    def run(self, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> Result: ...


#: What ends a process with a signal, when nobody asked it to stop (the cause to name).
_SIGNAL_CAUSES = {
    "SIGKILL": "the kernel's out-of-memory killer sends it, as does kill -9",
    "SIGXFSZ": "a file-size limit (`ulimit -f`) stopped one of its writes; raise the limit",
    "SIGSEGV": "a crash",
    "SIGBUS": "a crash, or a file of its cache was truncated",
}


def killed_by(number: int) -> str:
    """``uv was killed by SIGXFSZ (a file-size limit …)``: the line that names why a uv process
    ended by signal ``number``."""
    import signal

    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    cause = _SIGNAL_CAUSES.get(name)
    return f"uv was killed by {name}" + (f" ({cause})" if cause else "")


def _traced(argv: Sequence[str]) -> dict[str, str]:
    """What a trace says of a uv command: the output it writes (its folder and name name the
    step: ``main``, ``main-newer``, ``main.requirements.txt``, a layer), offline or not."""
    output = ""
    for flag, value in itertools.pairwise(argv):
        if flag == "--output-file":
            output = "/".join(value.split("/")[-2:])
    return {"what": output, "mode": "offline" if "--offline" in argv else "online"}


@dataclass
class Runner:
    """Runs uv and keeps track of the running processes, so :meth:`stop` can end them all
    (Ctrl-C, SIGTERM): a stopped runner starts nothing more and raises :class:`Interrupted`."""

    _procs: set[subprocess.Popen[str]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    stopped: threading.Event = field(default_factory=threading.Event)

    def run(self, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> Result:
        binary = uv_binary()
        with trace.span("uv", **(_traced(argv) if trace.enabled() else {})) as detail:
            result = self._run(binary, argv, env, cwd)
            detail["exit"] = result.returncode
        return result

    def _run(self, binary: str, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> Result:
        with self._lock:
            if self.stopped.is_set():
                raise Interrupted("interrupted before uv started")
            log.debug("run in %s: %s", cwd, command_line([binary, *argv]))
            proc = subprocess.Popen(
                [binary, *argv], env=dict(env), cwd=cwd, shell=False, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
            )  # fmt: skip
            self._procs.add(proc)
        try:
            _, stderr = proc.communicate()
        finally:
            with self._lock:
                self._procs.discard(proc)
        log.debug("exit %s: %s", proc.returncode, argv[2] if len(argv) > 2 else argv)
        if self.stopped.is_set():
            raise Interrupted("interrupted while uv ran")
        if proc.returncode < 0:  # ended by a signal: uv wrote nothing that says why
            stderr = f"{stderr.rstrip()}\n{killed_by(-proc.returncode)}".lstrip()
        return Result(proc.returncode, stderr)

    def stop(self, grace: float = 0.5) -> None:
        """Start nothing more; terminate running uv processes, killing those still alive after
        ``grace`` seconds."""
        self.stopped.set()
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
