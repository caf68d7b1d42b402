"""Two ``lockgen all`` at once on one project, N times: every lock must be one run's output.

Each trial starts run A (the default index behind one mirror: ``alpha 1.0``) and run B (behind
another: ``alpha 2.0``, other bytes and hashes) on the same project, a random 0-0.5 s apart, each
with or without ``--wait`` at random. After both exit, every file under ``locks/`` must be
exactly what A or B writes alone (computed once beforehand), ``lockgen check`` must pass, and
every exit code must be 0, or 2 with the "another lockgen run" message. Issue 8 found 2 corrupt
locks in 60 such pairs before runs were exclusive.

Usage (from the repo root, after the README's setup)::

    python bench/concurrency.py [--trials 100] [--seed 0]

Prints one line per trial that went wrong, then the counts. Exit 1 if any trial went wrong.
Hermetic: fake hosts on loopback and the real uv; no network.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.faulthost import FaultHost
from tests.support.trials import TWO, World, copy_project, lockgen, snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        world = World.make(folder, TWO, cache=folder / "uv-cache")
        other = FaultHost(folder / "pypi2")
        try:
            for name, version in (("alpha", "2.0"), ("beta", "1.0")):
                other.wheel("files", name, version)
            other.index("simple", sorted((other.root / "files").glob("*.whl")))
            env_b = {**world.env, "LOCKGEN_MIRRORS": world.env["LOCKGEN_MIRRORS"].replace(world.pypi.url, other.url)}
            expected = []
            for n, env in enumerate((world.env, env_b)):
                copy = World(copy_project(world, folder / f"reference-{n}"), world.pypi, world.slow, env)
                assert copy.run("all", "--force", env=env).returncode == 0
                expected.append(snapshot(copy.root))
            assert world.run("all").returncode == 0
            return trials(world, env_b, expected, args.trials, rng)
        finally:
            other.stop()
            world.stop()


def trials(
    world: World, env_b: dict[str, str], expected: list[dict[str, bytes]], count: int, rng: random.Random
) -> int:
    outcomes: Counter[str] = Counter()
    bad = 0
    start = time.monotonic()
    for trial in range(1, count + 1):
        waits = (rng.random() < 0.5, rng.random() < 0.5)
        first = lockgen(world.root, "all", "--force", *(["--wait"] if waits[0] else []), env=world.env)
        time.sleep(rng.uniform(0, 0.5))
        second = lockgen(world.root, "all", "--force", *(["--wait"] if waits[1] else []), env=env_b)
        results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in (first, second)]
        final = snapshot(world.root)
        which = "A" if final == expected[0] else "B" if final == expected[1] else "MIXED"
        check = world.run("check").returncode
        codes = tuple(code for code, _ in results)
        refused_ok = all(code == 0 or (code == 2 and "another lockgen run" in err) for code, err in results)
        outcomes[f"exit {codes[0]}/{codes[1]}, locks of {which}"] += 1
        if which == "MIXED" or check != 0 or not refused_ok or 0 not in codes:
            bad += 1
            print(f"trial {trial}: exit codes {codes}, locks {which}, check exit {check}", flush=True)
            for code, err in results:
                print(f"  exit {code}: {err.strip().splitlines()[-3:]}")
    seconds = time.monotonic() - start
    print(f"{count} trials in {seconds:.0f} s; {bad} went wrong")
    for outcome, n in sorted(outcomes.items()):
        print(f"  {n:4d}  {outcome}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
