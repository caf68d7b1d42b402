"""Whole ``lockgen`` processes against fake hosts: concurrent runs, Ctrl-C, SIGTERM, SIGKILL.

Shared by ``tests/e2e/test_runs.py`` (a few trials) and the bench scripts ``bench/concurrency.py``
and ``bench/interrupt.py`` (many, with timings). A :class:`World` is a project over fake hosts on
loopback: ``lockgen`` runs as a real process (``python -m lockgen``) in its own session, as in a
terminal, and the real uv resolves.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.faulthost import FaultHost

#: 12 cells: linux x86_64 and aarch64, windows x86_64, each for four Pythons.
TWELVE = """os = ["linux", "windows"]
arch = ["x86_64", "aarch64"]
backend = ["cpu"]
python = ["3.10", "3.11", "3.12", "3.13"]
exclude = [{ os = "windows", arch = "aarch64" }]"""
TWO = 'os = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12", "3.13"]'


#: ``python -m lockgen`` as a terminal starts it: Ctrl-C raises KeyboardInterrupt even when the
#: test run itself was started with SIGINT ignored (a shell's background job ignores it, and a
#: child inherits an ignored signal: Python then never installs its handler).
_AS_FROM_A_TERMINAL = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'lockgen'; runpy.run_module('lockgen', run_name='__main__', alter_sys=True)"
)


def lockgen(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``lockgen ARGS -C root`` in its own session (as a shell starts a job), stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-c", _AS_FROM_A_TERMINAL, *args, "-C", str(root)], env=env or dict(os.environ), text=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``locks/``, by project-relative path."""
    folder = root / "locks"
    return (
        {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        if folder.is_dir()
        else {}
    )


def uv_processes(root: Path) -> list[int]:
    """Pids of processes working in ``root`` (lockgen runs uv there), other than lockgen itself."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") == str(root) and b"uv" in (entry / "cmdline").read_bytes().split(b"\0")[0]:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@dataclass
class World:
    """A project over two fake hosts: ``pypi`` (the default index, behind the canonical
    ``https://pypi.example``) and ``slow`` (a find-links source serving the optional ``extra``
    layer only, behind ``https://slow.example``; set ``slow.delay`` to make it stall)."""

    root: Path
    pypi: FaultHost
    slow: FaultHost
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def make(cls, folder: Path, matrix: str = TWELVE, cache: Path | None = None) -> World:
        pypi, slow = FaultHost(folder / "pypi"), FaultHost(folder / "slow")
        for name, version in (("alpha", "1.0"), ("beta", "1.0")):
            pypi.wheel("files", name, version)
        pypi.index("simple", sorted((pypi.root / "files").glob("*.whl")))
        slow.flat("wheels", [slow.wheel("wheels", "extra", "1.0")])
        root = folder / "project"
        (root / "templates").mkdir(parents=True)
        (root / "templates" / "requirements.in.j2").write_text("alpha\n")
        (root / "pyproject.toml").write_text(textwrap.dedent("""\
            [tool.lockgen]
            index-url = "https://pypi.example/simple"
            use = ["slow"]
            optional = ["extra"]
            [tool.lockgen.sources.slow]
            find-links = "https://slow.example/wheels/"
            packages = ["extra"]
            [tool.lockgen.matrix]
            """) + matrix + "\n")  # fmt: skip
        env = {**os.environ, "LOCKGEN_MIRRORS": f"https://pypi.example={pypi.url} https://slow.example={slow.url}"}
        if cache is not None:
            env["UV_CACHE_DIR"] = str(cache)
        return cls(root=root, pypi=pypi, slow=slow, env=env)

    def stop(self) -> None:
        self.pypi.stop()
        self.slow.stop()

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        proc = lockgen(self.root, *args, env=env or self.env)
        out, err = proc.communicate(timeout=300)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def change_inputs(self, requirements: str = "alpha\nbeta\n") -> None:
        (self.root / "templates" / "requirements.in.j2").write_text(requirements)


@dataclass(frozen=True)
class Stopped:
    """One signalled run: its exit code, seconds from the signal to its exit, its stderr, and
    the pids of uv processes still alive after it exited."""

    code: int
    seconds: float
    err: str
    left: list[int]


def signal_mid_layer(
    world: World,
    signum: int = signal.SIGINT,
    args: tuple[str, ...] = ("all",),
    host: FaultHost | None = None,
    hang: float = 60,
) -> Stopped:
    """Run ``lockgen`` while ``host`` (default: the slow host, a cell's optional layer) stalls
    every file and page (its ``delay`` must be set), wait until it is asked for something, then
    send ``signum`` to lockgen's process group, as a terminal's Ctrl-C does. A run still going
    ``hang`` seconds after the signal hangs: ``subprocess.TimeoutExpired``."""
    host = host or world.slow
    host.requests.clear()
    host.asked.clear()
    proc = lockgen(world.root, *args, env=world.env)
    try:
        if not _wait_for_get(host, proc, 120):
            _out, err = proc.communicate(timeout=120)
            raise AssertionError(f"nothing reached the stalled host (exit {proc.returncode}):\n{err}")
        time.sleep(0.3)  # let the other workers start uv too
        start = time.monotonic()
        os.killpg(proc.pid, signum)
        _, err = proc.communicate(timeout=hang)
        seconds = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.1)
    return Stopped(proc.returncode, seconds, err, uv_processes(world.root))


def _wait_for_get(host: FaultHost, proc: subprocess.Popen[str], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if any(not r.startswith("HEAD ") for r in list(host.requests)):
            return True
        time.sleep(0.02)
    return False


def kill_mid_write(world: World, when: str) -> subprocess.CompletedProcess[str]:
    """Run ``lockgen all`` and SIGKILL it while it writes a cell's files (the journal's
    fault-injection seam, :data:`lockgen.locks.journal.fault`): ``when="replacing"`` after the
    first file of the cell was renamed over its lock (its unit committed), or ``"staging"`` after
    the first temporary file was written (the unit only prepared)."""
    driver = textwrap.dedent(f"""\
        import os, signal, sys
        from lockgen.locks import journal
        when, seen = {when!r}, []
        def fault(step):
            seen.append(step)
            if seen.count("apply" if when == "replacing" else "stage") == 2:
                os.kill(os.getpid(), signal.SIGKILL)
        journal.fault = fault
        from lockgen.cli import main
        sys.exit(main(sys.argv[1:]))
        """)  # fmt: skip
    args = [sys.executable, "-c", driver, "all", "-j", "1", "-C", str(world.root)]
    return subprocess.run(args, env=world.env, text=True, capture_output=True, timeout=300)


def copy_project(world: World, into: Path) -> Path:
    """A copy of the project (config, templates, locks; not the work folder)."""
    shutil.copytree(world.root, into, ignore=shutil.ignore_patterns(".lockgen"))
    return into
