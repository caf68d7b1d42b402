"""Follow one cell's resolution through lockgen's modules: how often it walks back to a module it left.

Runs :func:`lockgen.resolve.pipeline.resolve_cell` once, in this process, on a linux cell with a
pin, an index pin and a URL requirement, with uv answered by a recording (the test suite's seam,
``lockgen.resolve.uv.RunnerLike``), and follows it with :func:`sys.setprofile`. Only calls of
lockgen's own Python functions count (the stdlib, ``packaging`` and uv are not steps). Over the
first ``--steps`` (400) calls it prints:

* stays: runs of consecutive calls in one module;
* modules: how many distinct modules the runs are in;
* returns: runs in a module entered before (stays minus modules);
* the modules entered most often.

The target: at most 40 returns in the first 400 steps, no module entered more than twice.

Usage (from the repo root)::

    python bench/walk.py [--steps 400] [--show 12] [--json]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lockgen.config import Settings
from lockgen.plan.matrix import Cell
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.plan.render import Rendered
from lockgen.plan.target import target_for
from lockgen.resolve import uv
from lockgen.resolve.cellrun import CellRun
from lockgen.resolve.pipeline import resolve_cell

SHA = "a" * 64
WORK = ".lockgen/linux-x86_64-cpu-py3.12"
PACKAGES = (("app", "1.0"), ("numpy", "2.1.0"), ("torch", "2.5.0"))


class Replay:
    """Answers each uv run: a pylock for a resolution, a requirements file for a description."""

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []

    def run(self, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> uv.Result:
        self.argvs.append(list(argv))
        path = Path(cwd) / argv[argv.index("--output-file") + 1]
        path.parent.mkdir(parents=True, exist_ok=True)
        if argv[argv.index("--format") + 1] == "pylock.toml":
            text = 'lock-version = "1.0"\ncreated-by = "uv"\n'
            for name, version in PACKAGES:
                wheel = f"https://files.example/{name}-{version}-py3-none-any.whl"
                text += f'\n[[packages]]\nname = "{name}"\nversion = "{version}"\n'
                text += f'wheels = [{{ url = "{wheel}", hashes = {{ sha256 = "{SHA}" }} }}]\n'
        else:
            text = "".join(f"{name}=={version}\n    # via -r {WORK}/requirements.in\n" for name, version in PACKAGES)
        path.write_text(text)
        return uv.Result(0, "Resolved 3 packages")


def cell_run(root: Path) -> CellRun:
    settings = Settings(
        requirements="r.j2", index_url="https://pypi.org/simple", manylinux="2_28", macos="14.0",
        pins={"numpy": "2.1.0"},
    )  # fmt: skip
    cell = Cell(os="linux", arch="x86_64", backend="cpu", python="3.12", settings=settings)
    rendered = Rendered(files={"requirements": ("requirements.in.j2", "app\nnumpy\ntorch\n")})
    plan = Plan(
        cell=cell, target=target_for(cell), rendered=rendered, lock=f"locks/{cell.name}.txt",
        work=f".lockgen/{cell.name}", uv_version="0.13.9",
    )  # fmt: skip
    return CellRun(root, plan, uv.Options(), Mirrors(), Replay())


def walk(steps: int) -> list[str]:
    """The modules of the first ``steps`` lockgen calls of one ``resolve_cell``, in order."""
    seen: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or len(seen) >= steps:
            return
        module = frame.f_globals.get("__name__", "")
        if module.startswith("lockgen.") or module == "lockgen":
            seen.append(module)

    with tempfile.TemporaryDirectory() as folder:
        run = cell_run(Path(folder))
        sys.setprofile(profile)
        try:
            resolve_cell(run)
        finally:
            sys.setprofile(None)
    return seen


def figures(modules: Sequence[str]) -> dict[str, Any]:
    runs = [m for i, m in enumerate(modules) if i == 0 or modules[i - 1] != m]
    entered = collections.Counter(runs)
    return {
        "steps": len(modules),
        "stays": len(runs),
        "modules": len(entered),
        "returns": len(runs) - len(entered),
        "most_entered": entered.most_common(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--show", type=int, default=12, help="how many of the most entered modules to list")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--runs", action="store_true", help="print the runs in order")
    args = parser.parse_args(argv)
    modules = walk(args.steps)
    found = figures(modules)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    print(f"{found['steps']} steps: {found['stays']} stays in {found['modules']} modules, {found['returns']} returns")
    for module, count in found["most_entered"][: args.show]:
        print(f"  {count:3d}  {module}")
    if args.runs:
        runs = [m for i, m in enumerate(modules) if i == 0 or modules[i - 1] != m]
        print("\n".join(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
