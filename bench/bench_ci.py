"""The commands a CI runs on every PR, on the repo's default matrix (12 cells), against their target.

Issue 24 (item 4): ``lockgen check``, ``lockgen diff`` of two lock sets and ``lockgen audit`` from a
local OSV export must each take under a second. Each is run as a user runs it (the console
script, interpreter start included) in a scratch copy of the project (config, templates, committed
locks), rounds interleaved with the order rotating; the medians of wall time and of the process's
CPU time (user + system: on a shared machine wall time also counts waiting for a core) are
printed beside the target, with the load average before and after.

* ``check``: every lock up to date (renders every cell, compares input hashes);
* ``diff git``: ``lockgen diff OLD HEAD`` in this repository (``--old``, default ``7267c04``: the
  matrix re-locked in an older format, where six cells differ in files);
* ``diff folders``: the same two lock sets as folders (OLD exported with ``git archive``);
* ``audit zip`` / ``audit folder``: ``lockgen audit --osv EXPORT --format json`` against a
  synthetic export of ``--records`` records (default 20,000, about OSV's PyPI ecosystem; see
  ``bench_audit.py``), *cold* (no derived index in ``.lockgen/osv/``, as on a fresh CI runner)
  and *warm* (the index of the previous run, as with a cached ``.lockgen/``).

Usage (from the repo root)::

    .venv/bin/python bench/bench_ci.py [--repeat 3] [--old REV] [--records N] [--json FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_audit's synthetic records

from bench_audit import locked_versions, records  # noqa: E402

TARGET_S = 1.0  # issue 24, item 4: each under a second


def lockgen(args: Sequence[str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s) of the ``lockgen`` console script beside this interpreter."""
    script = Path(sys.executable).with_name("lockgen")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "lockgen"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*command, *args], cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"lockgen {' '.join(args)}: exit {done.returncode}\n{done.stderr.decode()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def scratch(into: Path) -> Path:
    """A copy of the repo's project: config, templates, committed locks (no ``.lockgen/``)."""
    into.mkdir()
    shutil.copy2(ROOT / "pyproject.toml", into / "pyproject.toml")
    shutil.copytree(ROOT / "templates", into / "templates")
    shutil.copytree(ROOT / "locks", into / "locks")
    return into


def old_locks(rev: str, into: Path) -> Path:
    """The ``locks/`` folder of revision ``rev``, exported into ``into``."""
    data = subprocess.run(["git", "archive", rev, "locks"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "locks"


def exports(tmp: Path, total: int, hits: int) -> tuple[Path, Path, str]:
    """A zip export (``PyPI/all.zip``) and a folder export of the same records; their size."""
    data = records(total, hits, locked_versions())
    archive = tmp / "PyPI" / "all.zip"
    archive.parent.mkdir()
    folder = tmp / "osv"
    folder.mkdir()
    size = 0
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for item in data:
            text = json.dumps(item, indent=2)
            size += len(text)
            zf.writestr(f"{item['id']}.json", text)
            (folder / f"{item['id']}.json").write_text(text)
    return archive, folder, f"{total} records, {size / 1e6:.0f} MB of JSON, zip {archive.stat().st_size / 1e6:.1f} MB"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (medians)")
    parser.add_argument("--old", default="7267c04", help="the older lock set of the diffs (a git revision)")
    parser.add_argument("--records", type=int, default=20_000, help="records of the OSV export")
    parser.add_argument("--hits", type=int, default=300, help="records naming a locked package")
    parser.add_argument("--json", default=None, help="also write every sample to this file")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="lockgen-bench-ci-") as tmp_name:
        tmp = Path(tmp_name)
        project = scratch(tmp / "project")
        old = old_locks(args.old, tmp / "old")
        archive, folder, described = exports(tmp, args.records, args.hits)
        cache = project / ".lockgen" / "osv"
        audit = ["audit", "--format", "json", "--osv"]
        runs: dict[str, tuple[list[str], Path, bool]] = {  # name: (args, cwd, cold)
            "check": (["check"], project, False),
            "diff git": (["diff", args.old, "HEAD"], ROOT, False),
            "diff folders": (["diff", str(old), str(project / "locks")], project, False),
            "audit zip cold": ([*audit, str(archive)], project, True),
            "audit zip warm": ([*audit, str(archive)], project, False),
            "audit folder cold": ([*audit, str(folder)], project, True),
            "audit folder warm": ([*audit, str(folder)], project, False),
        }
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        names = list(runs)
        for round_ in range(args.repeat):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                command, cwd, cold = runs[name]
                if cold:
                    shutil.rmtree(cache, ignore_errors=True)
                else:  # warm audit: the index of a run on this same export
                    if name.startswith("audit"):
                        lockgen(command, cwd)
                samples[name].append(lockgen(command, cwd))
    load_after = os.getloadavg()
    print(f"default matrix, OSV export: {described}; {args.repeat} rounds (medians)")
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f}"
    )
    print(f"{'command':20}{'wall':>8}{'CPU':>8}{'target':>8}  met (wall / CPU)   samples (wall)")
    for name, values in samples.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        met = f"{'yes' if wall < TARGET_S else 'NO'} / {'yes' if cpu < TARGET_S else 'NO'}"
        shown = ", ".join(f"{w:.2f}" for w, _ in values)
        print(f"{name:20}{wall:7.2f}s{cpu:7.2f}s{TARGET_S:7.2f}s  {met:17}  {shown}")
    if args.json:
        Path(args.json).write_text(json.dumps({"load": [load_before, load_after], "samples": samples}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
