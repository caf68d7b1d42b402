"""Ctrl-C (or SIGTERM) on a 12-cell ``lockgen all``: seconds from the signal to the exit.

Each trial makes every cell stale, lets the optional layer's host stall (uv hangs on it), sends
the signal to lockgen's process group once uv asks that host for a page, as a terminal's Ctrl-C
does, and times the exit. Every trial must exit 130 with no uv process left and no lock file
changed. Issue 8 asks for 2 s; before, lockgen started every queued cell (29 s in a terminal).

Usage (from the repo root, after the README's setup)::

    python bench/interrupt.py [--trials 10] [--signal INT|TERM]

Hermetic: fake hosts on loopback and the real uv; no network.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.trials import TWELVE, World, signal_mid_layer, snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    args = parser.parse_args()
    signum = signal.Signals[f"SIG{args.signal}"]
    with tempfile.TemporaryDirectory() as tmp:
        world = World.make(Path(tmp), TWELVE, cache=Path(tmp) / "uv-cache")
        try:
            assert world.run("all").returncode == 0
            before = snapshot(world.root)
            world.change_inputs()
            world.slow.delay = 600
            times, bad = [], 0
            for trial in range(1, args.trials + 1):
                stopped = signal_mid_layer(world, signum)
                ok = stopped.code == 130 and not stopped.left and snapshot(world.root) == before
                bad += not ok
                times.append(stopped.seconds)
                print(
                    f"trial {trial}: exit {stopped.code} in {stopped.seconds:.2f} s, uv left {stopped.left}{'' if ok else '  WRONG'}",
                    flush=True,
                )
        finally:
            world.stop()
    print(
        f"{args.trials} trials, SIG{args.signal}: median {statistics.median(times):.2f} s, max {max(times):.2f} s; {bad} went wrong"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
