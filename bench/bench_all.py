"""Benchmark ``lockgen all`` against the loop a user would write by hand.

Both run in the same process run, over the same cells, with the same ``uv pip compile`` flags
(lockgen's own argv builder), each from an empty uv cache of its own ("cold"):

1. baseline: a plain sequential loop, one ``uv pip compile`` per cell;
2. ``lockgen all --force`` in a scratch copy of the project;
3. both again on their now warm caches (what a maintainer's second release PR sees);
4. a no-op ``lockgen all`` right after (every lock up to date: no uv process).

Usage (from the repo root, after the README's setup)::

    python bench/bench_all.py [-C PATH] [--only KEY=VALUE ...] [-j N] [--repeat N]

Prints the times and the ratio lockgen / loop. Needs the network the project's matrix uses.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lockgen import pipeline
from lockgen.resolve import uv


def scratch_copy(project: pipeline.Project, into: Path) -> Path:
    """Copy the config file and templates (not locks, not the work folder) into ``into``."""
    config = project.config
    shutil.copy2(config.root / config.source, into / config.source)
    shutil.copytree(config.root / config.templates, into / config.templates)
    return into


def sequential_loop(project: pipeline.Project, cells, cache: Path) -> float:
    """The hand-written baseline: one ``uv pip compile`` after another, same flags as lockgen."""
    root = project.root
    plans = project.plans(cells)
    start = time.perf_counter()
    for plan in plans:
        for role, (_, text) in plan.rendered.files.items():
            path = root / plan.input_path(role)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        output = f"{plan.work}/bench-loop.txt"
        (root / output).unlink(missing_ok=True)
        env = {**uv.compile_env(os.environ, plan), "UV_CACHE_DIR": str(cache)}
        argv = [uv.uv_binary(), *uv.compile_argv(plan, output)]
        subprocess.run(argv, env=env, cwd=root, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    return time.perf_counter() - start


def lockgen_cli(root: Path, args: list[str], cache: Path) -> float:
    """Run the ``lockgen`` console script installed beside this interpreter, as a user would."""
    env = {**os.environ, "UV_CACHE_DIR": str(cache)}
    script = Path(sys.executable).with_name("lockgen")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "lockgen"]
    start = time.perf_counter()
    subprocess.run([*command, *args], cwd=root, env=env, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-C", "--config", default=None)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("-j", "--jobs", type=int, default=None)
    parser.add_argument("--online", action="store_true", help="pass --online to lockgen all")
    parser.add_argument("--repeat", type=int, default=1, help="repeat both measurements, report medians")
    args = parser.parse_args()

    project = pipeline.Project.load(Path.cwd(), args.config)
    cells = [c for c in pipeline.select(project.cells, only=args.only) if not c.settings.skip]
    only = [f"name={c.name}" for c in cells]
    jobs = (["-j", str(args.jobs)] if args.jobs else []) + (["--online"] if args.online else [])
    loops, alls, warm_loops, warm_alls, noops = [], [], [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="lockgen-bench-") as tmp:
            tmp = Path(tmp)
            (tmp / "cache-loop").mkdir()
            (tmp / "cache-lockgen").mkdir()
            work = tmp / "project"
            work.mkdir()
            scratch_copy(project, work)
            copy = pipeline.Project.load(work)
            names = {c.name for c in cells}
            loops.append(sequential_loop(copy, [c for c in copy.cells if c.name in names], tmp / "cache-loop"))
            all_args = ["all", "--force", *jobs, *[f"--only={o}" for o in only]]
            alls.append(lockgen_cli(work, all_args, tmp / "cache-lockgen"))
            warm_loops.append(sequential_loop(copy, [c for c in copy.cells if c.name in names], tmp / "cache-loop"))
            warm_alls.append(lockgen_cli(work, all_args, tmp / "cache-lockgen"))
            noops.append(lockgen_cli(work, ["all", *[f"--only={o}" for o in only]], tmp / "cache-lockgen"))
    loop, full, wloop, wfull, noop = (statistics.median(x) for x in (loops, alls, warm_loops, warm_alls, noops))
    print(f"cells:                       {len(cells)}")
    print(f"uv pip compile loop (cold):  {loop:7.2f} s")
    print(f"lockgen all --force (cold):  {full:7.2f} s")
    print(f"ratio lockgen / loop, cold:  {full / loop:7.2f}")
    print(f"uv pip compile loop (warm):  {wloop:7.2f} s")
    print(f"lockgen all --force (warm):  {wfull:7.2f} s")
    print(f"ratio lockgen / loop, warm:  {wfull / wloop:7.2f}")
    print(f"lockgen all, no-op rerun:    {noop:7.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
