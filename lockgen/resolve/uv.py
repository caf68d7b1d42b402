"""Stage 6: run ``uv pip compile`` for a plan. The only place lockgen starts a process.

:func:`compile_argv` and :func:`compile_env` are pure (unit-tested); :func:`run` executes with
``shell=False``, an explicit environment and working directory, and logs the joined command.

uv is the binary of the pinned ``uv`` PyPI package (``uv.find_uv_bin()``), never whatever is on
PATH, and its version is read from that package's metadata, so a no-op run starts no process.
"""

from __future__ import annotations

import functools
import logging
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan

log = logging.getLogger("lockgen.uv")

#: Every other ``UV_*`` variable is dropped: it could let a user's uv settings leak into a lock.
#: These are kept: where the cache lives and how uv talks to the network cannot change a lock.
_KEEP_UV_VARS = {
    "UV_CACHE_DIR", "UV_NATIVE_TLS", "UV_HTTP_TIMEOUT", "UV_HTTP_RETRIES", "UV_CONCURRENT_DOWNLOADS",
    "UV_CONCURRENT_BUILDS", "UV_INSECURE_HOST", "UV_KEYRING_PROVIDER",
}  # fmt: skip


@functools.cache
def uv_binary() -> str:
    """Path of the uv binary shipped by the pinned ``uv`` package (looked up once: uv's finder
    is not thread-safe)."""
    from uv import find_uv_bin

    return find_uv_bin()


def uv_version() -> str:
    """Version of the pinned ``uv`` package (its binary reports the same), e.g. ``"0.13.9"``."""
    from importlib import metadata

    return metadata.version("uv")


@dataclass(frozen=True, kw_only=True)
class Options:
    """Resolution options from the command line that are not part of the input hash."""

    upgrade: bool = False
    upgrade_packages: tuple[str, ...] = ()


@dataclass(frozen=True)
class Inputs:
    """Project-relative input files of one ``uv pip compile``."""

    requirements: str
    constraints: tuple[str, ...] = ()
    overrides: str | None = None
    find_links: tuple[str, ...] | None = None  # None: the plan's main find-links


def main_inputs(plan: Plan) -> Inputs:
    """The rendered requirements, constraints and overrides of ``plan``."""
    files = plan.rendered.files
    return Inputs(
        requirements=plan.input_path("requirements"),
        constraints=(plan.input_path("constraints"),) if "constraints" in files else (),
        overrides=plan.input_path("overrides") if "overrides" in files else None,
    )


def compile_argv(
    plan: Plan,
    output: str,
    options: Options = Options(),
    python: str = sys.executable,
    *,
    offline: bool = False,
    mirrors: Mirrors = Mirrors(),
    inputs: Inputs | None = None,
    pylock: bool = False,
    no_deps: bool = False,
) -> list[str]:
    """The ``uv pip compile`` arguments (after the binary) for ``plan``, writing to ``output``.

    Paths are relative to the project root, so uv's ``# via -r …`` annotations stay
    project-relative. ``--python`` is the running interpreter (uv must not download one; the
    target Python comes from ``--python-version``) and ``--no-config`` keeps ``uv.toml`` out.
    Index and find-links URLs go through ``mirrors``. ``inputs`` defaults to the plan's rendered
    files (layers pass their own); ``pylock`` writes PEP 751 ``pylock.toml`` instead of
    requirements format.
    """
    inputs = inputs or main_inputs(plan)
    argv = ["pip", "compile", inputs.requirements]
    for constraints in inputs.constraints:
        argv += ["--constraint", constraints]
    if inputs.overrides:
        argv += ["--override", inputs.overrides]
    argv += [
        "--output-file", output,
        "--python", python,
        "--python-version", plan.target.python,
        "--python-platform", plan.target.platform,
        "--index-url", mirrors.fetch_url(plan.index_url),
    ]  # fmt: skip
    for link in plan.main_find_links if inputs.find_links is None else inputs.find_links:
        argv += ["--find-links", mirrors.fetch_url(link)]
    if plan.exclude_newer:
        argv += ["--exclude-newer", plan.exclude_newer]
        # Backend indexes and find-links pages publish no upload times, and uv drops an artifact
        # without one under a cutoff: the cutoff applies to what the default index serves.
        for package in sorted({p for source in plan.sources for p in source.packages}):
            argv += ["--exclude-newer-package", f"{package}=false"]
    if pylock:
        argv += ["--format", "pylock.toml"]
    else:
        argv += ["--generate-hashes", "--emit-index-url", "--emit-find-links"]
    argv += ["--no-header", "--no-config", "--quiet"]
    if no_deps:
        argv.append("--no-deps")
    if offline:
        argv.append("--offline")
    if options.upgrade:
        argv.append("--upgrade")
    for name in options.upgrade_packages:
        argv += ["--upgrade-package", name]
    return argv


def compile_env(base: Mapping[str, str], plan: Plan) -> dict[str, str]:
    """The environment uv runs with: ``base`` without ``UV_*`` settings and
    ``MACOSX_DEPLOYMENT_TARGET``, plus ``UV_PYTHON_DOWNLOADS=never`` and the target's variables."""
    env = {
        k: v
        for k, v in base.items()
        if not (k.startswith("UV_") and k not in _KEEP_UV_VARS) and k != "MACOSX_DEPLOYMENT_TARGET"
    }
    env["UV_PYTHON_DOWNLOADS"] = "never"
    env["UV_NO_PROGRESS"] = "1"
    env.update(plan.target.env())
    return env


@dataclass(frozen=True)
class Result:
    returncode: int
    stderr: str


def run(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> Result:
    """Run uv with ``argv`` in ``cwd``; returns its exit code and standard error."""
    import subprocess

    binary = uv_binary()
    log.debug("run in %s: %s", cwd, shlex.join([binary, *argv]))
    proc = subprocess.run(
        [binary, *argv], env=dict(env), cwd=cwd, shell=False, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    log.debug("exit %s: %s", proc.returncode, argv[2])
    return Result(proc.returncode, proc.stderr)


def explain(stderr: str) -> str:
    """uv's error text, trimmed of blank lines, for showing under a failed cell."""
    return "\n".join(line.rstrip() for line in stderr.strip().splitlines() if line.strip())

