"""Stage 6: resolve one cell with uv, verify it, resolve its layers, and write its locks.

Per cell: the main resolution (requirements format, hashed), then the same resolution once more
offline as PEP 751 ``pylock.toml`` for :mod:`lockgen.verify`, then one layer per optional
package (each constrained to the main lock's pins, so it cannot move them) and the no-deps
layer (:mod:`lockgen.layers`). Only when all of that succeeded are the locks replaced.

Reuse within a run: every ``uv pip compile`` revalidates each index page it reads, so a loop
over N cells fetches the same pages N times. Per group of cells that share their sources (index
URL, find-links, ``exclude-newer``) and os, a *seed* cell resolves online first; the other cells
of the group then try ``--offline`` against the pages the seeds just refreshed. An offline result
is kept only if every package it locked had its page refreshed online earlier in this run (file
metadata is immutable, so the cache holds exactly what the network would give); otherwise the
cell is resolved online as usual. ``--online`` turns this off.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lockgen.resolve import uv
from lockgen.config import parse_toml
from lockgen.errors import CellFailed
from lockgen.locks.lock import atomic_write, lock_text, locked_versions, set_hashes
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan

ONLINE, OFFLINE = "online", "offline"


@dataclass(frozen=True)
class Outcome:
    """What :func:`resolve_cell` did: whether any lock's bytes changed, how uv resolved the main
    layer (``online``/``offline``), and notes for the summary (optional layers not had)."""

    changed: bool
    mode: str
    notes: tuple[str, ...] = ()


def _sources(plan: Plan) -> tuple:
    return (plan.index_url, plan.find_links, plan.exclude_newer)


class Freshness:
    """Which packages' index pages an online resolution refreshed in this run, per source group.

    Thread-safe. :meth:`order` puts one seed per (sources, os) first; :meth:`wait` blocks a
    non-seed cell until its seed has finished, so it can reuse what the seed fetched.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fresh: dict[tuple, set[str]] = {}
        self._seeds: dict[tuple, tuple[str, threading.Event]] = {}
        self._cold: set[tuple] = set()  # groups whose cache lacked what an offline try needed

    def order(self, plans: Sequence[Plan]) -> list[Plan]:
        """``plans`` with the seeds first (first plan of each (sources, os), in order)."""
        seeds, rest = [], []
        for plan in plans:
            key = (_sources(plan), plan.cell.os)
            if key not in self._seeds:
                self._seeds[key] = (plan.cell.name, threading.Event())
                seeds.append(plan)
            else:
                rest.append(plan)
        return seeds + rest

    def is_seed(self, plan: Plan) -> bool:
        return self._seeds.get((_sources(plan), plan.cell.os), ("",))[0] == plan.cell.name

    def wait(self, plan: Plan) -> None:
        """Block until this plan's seed finished (seeds are scheduled before the others)."""
        entry = self._seeds.get((_sources(plan), plan.cell.os))
        if entry and entry[0] != plan.cell.name:
            entry[1].wait()

    def seed_done(self, plan: Plan) -> None:
        entry = self._seeds.get((_sources(plan), plan.cell.os))
        if entry and entry[0] == plan.cell.name:
            entry[1].set()

    def record(self, plan: Plan, names: set[str]) -> None:
        with self._lock:
            self._fresh.setdefault(_sources(plan), set()).update(names)

    def mark_cold(self, plan: Plan) -> None:
        """An offline try failed for want of cached data (a cold cache): later cells of the group
        go online straight away instead of trying."""
        with self._lock:
            self._cold.add((_sources(plan), plan.cell.os))

    def worth_trying(self, plan: Plan) -> bool:
        with self._lock:
            return (_sources(plan), plan.cell.os) not in self._cold

    def covers(self, plan: Plan, names: set[str]) -> bool:
        with self._lock:
            return bool(names) and names <= self._fresh.get(_sources(plan), set())


@dataclass(frozen=True)
class Context:
    """What every uv run of one cell shares."""

    root: Path
    plan: Plan
    options: uv.Options
    mirrors: Mirrors

    def run(self, output: str, **kwargs) -> uv.Result:
        argv = uv.compile_argv(self.plan, output, self.options, mirrors=self.mirrors, **kwargs)
        return uv.run(argv, uv.compile_env(os.environ, self.plan), str(self.root))

    def read(self, path: str) -> str:
        return self.mirrors.canonical((self.root / path).read_text(encoding="utf-8"))


def resolve_cell(
    root: Path,
    plan: Plan,
    options: uv.Options = uv.Options(),
    fresh: Freshness | None = None,
    mirrors: Mirrors = Mirrors(),
    prefer: bool = True,
) -> Outcome:
    """Resolve, verify and write ``plan``'s locks.

    The existing lock
    is handed to uv as its output file, so uv prefers its pins (as pip-compile does) and a changed
    input moves only what it must (not with ``prefer=False``: a hand-edited lock). Raises
    :class:`CellFailed` with uv's explanation, or with the
    verify problems, when the cell cannot be locked; the existing locks are then left untouched.
    """
    from lockgen.resolve import layers
    from lockgen.resolve import verify

    ctx = Context(root, plan, options, mirrors)
    for role, (_, text) in plan.rendered.files.items():
        atomic_write(root / plan.input_path(role), text)
    try:
        body, mode = _main(ctx, fresh, prefer)
    finally:
        if fresh is not None:
            fresh.seed_done(plan)
    versions = locked_versions(body)
    described, pins = pylock(ctx, uv.main_inputs(plan), versions, "main")
    body, unhashed = set_hashes(body, described)
    found = verify.problems(plan, described, mirrors) + [f"{r}: no sha256 for any of its artifacts" for r in unhashed]
    if found:
        raise CellFailed(f"cell {plan.cell.name}: verify failed:\n" + "\n".join(f"  - {p}" for p in found))
    built = layers.resolve(ctx, pins)
    dateless = sorted(set(verify.without_upload_time(plan, described, mirrors) if plan.exclude_newer else []) | built.dateless)
    extra = [*built.header_lines(), *(f"no-upload-time: {name}" for name in dateless)]
    changed = False
    for path, text in built.files.items():
        changed |= atomic_write(root / path, text)
    changed |= atomic_write(root / plan.lock, lock_text(plan, body, (f"# {line}" for line in extra)))
    layers.remove_stale(root, plan, built)
    notes = ("unavailable: " + ", ".join(r for r, _ in built.unavailable),) if built.unavailable else ()
    if not prefer:
        notes += ("the lock had been edited by hand: re-resolved without preferring its pins",)
    return Outcome(changed, mode, notes)


def _main(ctx: Context, fresh: Freshness | None, prefer: bool = True) -> tuple[str, str]:
    plan, root = ctx.plan, ctx.root
    output = f"{plan.work}/resolved.txt"
    if fresh is not None and not fresh.is_seed(plan):
        fresh.wait(plan)
        if fresh.worth_trying(plan):
            _seed_output(root, plan, output, prefer)
            if ctx.run(output, offline=True).returncode == 0:
                body = ctx.read(output)
                if fresh.covers(plan, set(locked_versions(body))):
                    return body, OFFLINE
            else:
                fresh.mark_cold(plan)
    _seed_output(root, plan, output, prefer)
    result = ctx.run(output)
    if result.returncode != 0:
        why = ctx.mirrors.canonical(uv.explain(result.stderr))
        raise CellFailed(f"cell {plan.cell.name}: uv could not resolve it:\n{why}{blame(root, plan, result.stderr)}")
    body = ctx.read(output)
    if fresh is not None:
        fresh.record(plan, set(locked_versions(body)))
    return body, ONLINE


def pylock(ctx: Context, given: uv.Inputs, versions: dict[str, str], name: str, no_deps: bool = False) -> tuple[dict, str]:
    """The same resolution as PEP 751 data: offline (the cache is warm), its versions fixed by
    ``.lockgen/<cell>/<name>-pins.txt``. Returns the data and that constraints file's path."""
    plan = ctx.plan
    pins = f"{plan.work}/{name}-pins.txt"
    atomic_write(ctx.root / pins, "".join(f"{n}=={v}\n" for n, v in sorted(versions.items()) if v))
    inputs = uv.Inputs(given.requirements, (*given.constraints, pins), given.overrides, given.find_links)
    output = f"{plan.work}/pylock.{name}.toml"  # uv accepts only pylock.toml / pylock.<name>.toml
    result = ctx.run(output, offline=True, inputs=inputs, pylock=True, no_deps=no_deps)
    if result.returncode != 0:
        result = ctx.run(output, inputs=inputs, pylock=True, no_deps=no_deps)
    if result.returncode != 0:
        raise CellFailed(f"cell {plan.cell.name}: uv could not describe its resolution:\n{uv.explain(result.stderr)}")
    return parse_toml((ctx.root / output).read_text(encoding="utf-8")), pins


def _seed_output(root: Path, plan: Plan, output: str, prefer: bool = True) -> None:
    """Put the existing lock's requirements where uv writes, so uv reads its pins as preferences:
    without its ``--find-links`` lines (a local folder it names may be gone) and without its
    hashes (uv would copy them for the versions it keeps, even when a file changed). With
    ``prefer=False`` (a hand-edited lock) uv starts from nothing."""
    (root / output).parent.mkdir(parents=True, exist_ok=True)
    try:
        if not prefer:
            raise FileNotFoundError
        text = (root / plan.lock).read_text(encoding="utf-8")
    except OSError:
        (root / output).unlink(missing_ok=True)
        return
    keep = (line for line in text.splitlines(True) if not line.startswith(("--", "    --hash")))
    (root / output).write_text("".join(line.replace(" \\\n", "\n") for line in keep))


def blame(root: Path, plan: Plan, stderr: str) -> str:
    """When uv's error names a pin that cannot move, name the requirement lines that fought it:
    the template, line and text of every requirement whose package uv's explanation mentions
    (CASES C08: ``setuptools<77`` next to torch 2.13)."""
    from packaging.utils import canonicalize_name

    words = set(re.findall(r"[a-z0-9][a-z0-9._-]*", stderr.lower()))
    mentioned = {canonicalize_name(w) for w in words}
    fought = [name for name in plan.pinned if name in mentioned]
    if not fought:
        return ""
    lines = []
    for role in ("requirements", "overrides"):
        if role not in plan.rendered.files:
            continue
        template, text = plan.rendered.files[role]
        for line in text.splitlines():
            name = _requirement_name(line)
            if name and name in mentioned and name not in plan.pinned:
                lines.append((template, line.strip(), name))
    if not lines:
        return ""
    pins = ", ".join(f"{n}=={plan.pinned[n]}" for n in fought)
    out = [f"\nlockgen: the pin(s) {pins} cannot move; requirement(s) that fought them:"]
    for template, line, name in lines:
        out.append(f"  {_template_line(root, plan, template, name, line)}: {line}")
    out.append("change or drop that requirement; lockgen never lets uv move a pinned package")
    return "\n".join(out)


def _requirement_name(line: str) -> str | None:
    """The canonical project name of a requirement line (``packaging``), None if it is not one
    (a comment, an option, a line with Jinja in it)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return canonicalize_name(Requirement(line.split("#")[0].strip()).name)
    except InvalidRequirement:
        return None


def _template_line(root: Path, plan: Plan, template: str, name: str, line: str) -> str:
    """``templates/<file>:<line>`` of the template line that rendered ``line``: the cell's
    template first, then every other template (it may have been ``{% include %}``d)."""
    folder = root / plan.templates
    paths = [folder / template] + sorted(p for p in folder.rglob("*") if p.is_file() and p != folder / template)
    for match in (lambda text: text.strip() == line, lambda text: _requirement_name(text) == name):
        for path in paths:
            try:
                source = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for number, text in enumerate(source, 1):
                if match(text):
                    return f"{path.relative_to(root).as_posix()}:{number}"
    return f"{plan.templates}/{template}"
