"""Ctrl-C at any moment of a command prints no traceback (issue 15, item 5): ``lockgen`` runs as a
real process, as a terminal starts it, and gets SIGINT after 0 to 300 ms, while its modules are
still being imported, while it parses its arguments and while it works. Each run ends with exit
130 (``interrupted``), by the signal itself (a second Ctrl-C while reporting), or with its
normal exit code when it finished first; never with a ``Traceback``.

The clock starts once the entry module (``lockgen/__main__.py``, three standard imports) is
loaded: the interpreter's own start-up before that is outside lockgen's reach
(docs/untrusted-input.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import one_cell, run_ok

#: Python as a terminal starts ``lockgen``: SIGINT raises KeyboardInterrupt even when the test
#: run ignores it; then the entry point, and a mark on stderr once it is loaded.
_ENTRY = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); sys.argv[0] = 'lockgen'; "
    "from lockgen.__main__ import run; sys.stderr.write('loaded\\n'); sys.stderr.flush(); run()"
)
DELAYS = [i * 0.015 for i in range(20)]  # 0 to 285 ms


def _env() -> dict[str, str]:
    """The environment, bytecode written and read as an installed lockgen has it."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _interrupted_at(delay: float, root: Path, *args: str) -> tuple[int, str]:
    env = _env()
    proc = subprocess.Popen(
        [sys.executable, "-c", _ENTRY, *args, "-C", str(root)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )  # fmt: skip
    assert proc.stderr is not None
    assert proc.stderr.readline() == "loaded\n"
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.slow
@pytest.mark.parametrize("command", [("check",), ("all",), ("matrix", "--json")], ids=lambda c: c[0])
def test_ctrl_c_at_any_moment_prints_no_traceback(tmp_path, index, command):
    index.add("alpha", "1.0")
    index.publish()
    root = one_cell(tmp_path / "p", index.index_url(), "alpha\n")
    run_ok("all", "-C", str(root))  # the commands below have nothing to resolve: all of their time is start-up
    subprocess.run(
        [sys.executable, "-c", "import lockgen.cli, lockgen.check, lockgen.pipeline"], check=True, env=_env()
    )
    seen = []
    for delay in DELAYS:
        code, err = _interrupted_at(delay, root, *command)
        assert "Traceback" not in err, f"at {delay * 1000:.0f} ms:\n{err}"
        assert code in (130, -signal.SIGINT, 0), f"at {delay * 1000:.0f} ms: exit {code}\n{err}"
        if code == 130:
            assert err.rstrip().endswith("interrupted"), err
        seen.append(code)
    assert 130 in seen  # the signal did land while lockgen ran
