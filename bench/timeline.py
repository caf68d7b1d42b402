"""Render a ``LOCKGEN_TRACE`` file (:mod:`lockgen.runtime.trace`) as a per-cell timeline and a table of steps.

Run lockgen with the trace on, then render it::

    LOCKGEN_TRACE=/tmp/run.trace lockgen all --force
    python bench/timeline.py /tmp/run.trace [--width 100]

One row per cell: its uv runs drawn as letters on the time axis (``M`` the main resolution online,
``o`` offline, ``F``/``x`` a main run online/offline that failed (a build to learn, a cold cache), ``n`` the newer levels' wheels, ``d`` the description, ``L`` a layer, ``.`` the
cell's own Python work between them); rows for the run's own steps (plan, probe, report, coverage,
manifest) and for the page cache (``#`` upstream requests in flight, ``w`` a uv waiting for a page
the prefetch had not brought). Then per step: count, summed and longest seconds, and per cell the
seconds of each step, so what waits on what can be read off.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The letter of a uv run, by what it writes (``uv`` spans' ``what``).
_UV_LETTERS = (("-newer/", "n"), (".requirements.txt", "d"))
_RUN_STEPS = ("plan", "stale", "probe", "committed", "page cache", "copy old", "report", "coverage", "manifest")


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def letter(span: dict[str, Any]) -> str:
    what = span["detail"].get("what", "")
    for key, mark in _UV_LETTERS:
        if key in what:
            return mark
    if what == f"{span['cell']}/pylock.toml":  # the main resolution: <work>/pylock.toml
        failed = span["detail"].get("exit", 0) != 0
        if span["detail"].get("mode") == "offline":
            return "x" if failed else "o"
        return "F" if failed else "M"
    return "L"


def render(spans: Sequence[dict[str, Any]], width: int = 100) -> str:
    if not spans:
        return "(empty trace)"
    t0 = min(s["start"] for s in spans)
    t1 = max(s["end"] for s in spans)
    scale = max(t1 - t0, 1e-6) / width

    def col(t: float) -> int:
        return min(width - 1, int((t - t0) / scale))

    def bar(items: Sequence[tuple[float, float, str]], fill: str = " ") -> str:
        row = [fill] * width
        for start, end, mark in items:
            for i in range(col(start), col(end) + 1):
                row[i] = mark
        return "".join(row)

    lines = [f"0 s{' ' * (width - 10)}{t1 - t0:6.2f} s", ""]
    cells = sorted(
        {s["cell"] for s in spans if s["cell"]}, key=lambda c: min(s["start"] for s in spans if s["cell"] == c)
    )
    name_width = max([len(c) for c in cells] + [12])
    for step in _RUN_STEPS:
        mine = [(s["start"], s["end"], "=") for s in spans if s["step"] == step and not s["cell"]]
        if mine:
            lines.append(f"{step:>{name_width}} |{bar(mine)}|")
    for name in cells:
        whole = [s for s in spans if s["cell"] == name and s["step"] == "cell"]
        uv = [(s["start"], s["end"], letter(s)) for s in spans if s["cell"] == name and s["step"] == "uv"]
        body = bar([(s["start"], s["end"], ".") for s in whole])
        row = list(body)
        for i, ch in enumerate(bar(uv)):
            if ch != " ":
                row[i] = ch
        lines.append(f"{name:>{name_width}} |{''.join(row)}|")
    upstream = [s for s in spans if s["step"].startswith("upstream")]
    if upstream:
        counts = [0] * width
        for s in upstream:
            for i in range(col(s["start"]), col(s["end"]) + 1):
                counts[i] += 1
        lines.append(f"{'upstream':>{name_width}} |{''.join(_level(n) for n in counts)}|")
    waits = [(s["start"], s["end"], "w") for s in spans if s["step"] == "page wait"]
    if waits:
        lines.append(f"{'page waits':>{name_width}} |{bar(waits)}|")
    lines += ["", "upstream: requests in flight per column (1-9, # for 10 or more)", "", _table(spans, cells)]
    return "\n".join(lines)


def _level(n: int) -> str:
    return " " if n == 0 else str(n) if n < 10 else "#"


def _table(spans: Sequence[dict[str, Any]], cells: Sequence[str]) -> str:
    by_step: dict[str, list[float]] = defaultdict(list)
    for s in spans:
        key = s["step"] if s["step"] != "uv" else f"uv {letter(s)}"
        by_step[key].append(s["end"] - s["start"])
    out = [f"{'step':<16}{'count':>7}{'sum s':>9}{'median s':>10}{'max s':>8}"]
    for key in sorted(by_step, key=lambda k: -sum(by_step[k])):
        values = by_step[key]
        out.append(f"{key:<16}{len(values):>7}{sum(values):>9.2f}{statistics.median(values):>10.3f}{max(values):>8.2f}")
    steps = ("main", "newer", "describe", "verify", "layers", "invariants", "provenance", "files", "write")
    out += ["", "per cell (s): " + "  ".join(steps) + "  | cell total, start-end"]
    for name in cells:
        mine = [s for s in spans if s["cell"] == name]
        parts = [sum(s["end"] - s["start"] for s in mine if s["step"] == step) for step in steps]
        whole = [s for s in mine if s["step"] == "cell"]
        if whole:
            w = whole[0]
            mode = next((s["detail"].get("mode", "") for s in mine if s["step"] == "main"), "")
            out.append(
                f"{name:<28} " + " ".join(f"{p:6.2f}" for p in parts)
                + f" | {w['end'] - w['start']:6.2f}  {w['start']:6.2f}-{w['end']:6.2f} {mode}"
            )  # fmt: skip
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--width", type=int, default=100)
    args = parser.parse_args(argv)
    print(render(load(args.trace), args.width))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
