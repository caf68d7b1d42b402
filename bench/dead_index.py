"""Issue 16, item 4: a dead backend index on 12 cells. Time and output lines.

Runs ``lockgen all`` (a fresh process, a cold uv cache) on a 12-cell project (linux and windows,
x86_64 and aarch64, cpu, Python 3.11-3.13) whose every cell pins ``torch`` to a backend ``index``
source on a host that refuses every connection, the default index being up. Prints lockgen's
output once, then per run the exit code, the seconds and the number of output lines.

Usage (from the repo root, after the README's setup)::

    python bench/dead_index.py [--runs 3]
    PYTHONPATH=/path/to/an/older/checkout python bench/dead_index.py   # the same with older code

Hermetic: fake hosts on loopback and the real uv; no network.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.faulthost import FaultHost, refusing_url

CONFIG = """\
[tool.lockgen]
index-url = "https://pypi.example/simple"
use = ["pytorch"]
[tool.lockgen.mirrors]
"https://pypi.example" = "{pypi}"
"https://download.example" = "{down}"
[tool.lockgen.sources.pytorch]
index = "https://download.example/whl/{{flavor}}"
packages = ["torch"]
[tool.lockgen.matrix]
os = ["linux", "windows"]
arch = ["x86_64", "aarch64"]
backend = ["cpu"]
python = ["3.11", "3.12", "3.13"]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pypi = FaultHost(folder / "pypi")
        try:
            pypi.wheel("files", "app", "1.0", requires=("torch",))
            pypi.index("simple", sorted((pypi.root / "files").glob("*.whl")))
            times, lines = [], []
            with refusing_url() as down:
                for run in range(args.runs):
                    root = folder / f"project-{run}"
                    (root / "templates").mkdir(parents=True)
                    (root / "templates" / "requirements.in.j2").write_text("app\ntorch\n")
                    (root / "pyproject.toml").write_text(CONFIG.format(pypi=pypi.url, down=down))
                    env = {**os.environ, "UV_CACHE_DIR": str(folder / f"cache-{run}")}
                    start = time.monotonic()
                    done = subprocess.run(
                        [sys.executable, "-m", "lockgen", "all", "-C", str(root)],
                        capture_output=True,
                        text=True,
                        env=env,
                    )
                    times.append(time.monotonic() - start)
                    lines.append(len((done.stdout + done.stderr).splitlines()))
                    if run == 0:
                        print(done.stdout + done.stderr)
                    print(
                        f"run {run + 1}: exit {done.returncode} in {times[-1]:.1f} s, {lines[-1]} lines of output",
                        flush=True,
                    )
        finally:
            pypi.stop()
    print(f"median {statistics.median(times):.1f} s, {statistics.median(lines):.0f} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
