"""The pipeline: config -> matrix -> target -> render -> plan -> uv -> lock -> manifest.

:class:`Project` loads a configuration and expands its matrix once; :func:`lock` resolves the
selected, stale cells concurrently and rewrites the manifest; :func:`check` reports what a
``lock`` would change without resolving anything. Both take plain values (no CLI objects) and a
:class:`Reporter` for progress.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from lockgen.locks import manifest
from lockgen.plan import mirror
from lockgen.locks import stamp
from lockgen.resolve import uv
from lockgen.config import Config, find_config, load_config
from lockgen.errors import ConfigError, LockgenError, TemplateError
from lockgen.locks.lock import atomic_write, current, is_lock
from lockgen.plan.matrix import Cell, expand, select
from lockgen.plan.mirror import Mirrors
from lockgen.plan.target import target_for

if TYPE_CHECKING:
    from lockgen.plan.plan import Plan

log = logging.getLogger("lockgen")

#: Cell states, in the order a cell moves through them.
WAITING, RESOLVING, LOCKED, UNCHANGED, UP_TO_DATE, SKIPPED, FAILED, STALE, MISSING, ALIAS, EDITED = (
    "waiting", "resolving", "locked", "unchanged", "up to date", "skipped", "failed", "stale", "missing", "alias",
    "edited",
)  # fmt: skip
ORPHAN, REMOVED = "orphan", "removed"


def _not_resolved(name: str, skip: str | None, alias: str | None, interpreter: str | None) -> CellResult | None:
    """The result of a cell lockgen does not resolve itself: skipped, or an alias."""
    if skip:
        return CellResult(name, SKIPPED, message=skip)
    if alias:
        return CellResult(name, ALIAS, message=f"reuses {alias}" + (f"; interpreter {interpreter}" if interpreter else ""))
    return None


def _cell_not_resolved(cell: Cell) -> CellResult | None:
    return _not_resolved(cell.name, cell.settings.skip, cell.settings.alias, cell.settings.interpreter)


def default_jobs(cells: int) -> int:
    """Default concurrency: one cell per CPU core, at least 2 (a resolution also waits on the
    network), at most 8 and at most the number of cells. Measured on 2 cores: uv's parsing of
    index pages keeps each process busy, and 8 at once were slower than 2 (docs/benchmarks.md)."""
    return max(1, min(cells, 8, max(2, os.cpu_count() or 1)))


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How ``all``/``lock`` run: ``force`` re-resolves up-to-date cells; ``uv`` options pass to
    uv (upgrades); ``jobs`` cells at once (default :func:`default_jobs`); ``online`` turns off the
    reuse of pages refreshed in the run; ``mirrors`` are ``CANONICAL=MIRROR`` strings."""

    force: bool = False
    uv: uv.Options = uv.Options()
    jobs: int | None = None
    online: bool = False
    mirrors: tuple[str, ...] = ()

    @property
    def refresh(self) -> bool:
        return self.force or self.uv.upgrade or bool(self.uv.upgrade_packages)


@dataclass(frozen=True)
class CellResult:
    name: str
    status: str
    seconds: float = 0.0
    message: str = ""


@dataclass
class RunResult:
    """What a ``lock``/``check`` did. ``exit_code``: 0 ok, 1 when a cell failed or is stale."""

    results: list[CellResult] = field(default_factory=list)
    manifest_stale: bool = False  # check: the manifest on disk is not what the locks give

    @property
    def exit_code(self) -> int:
        bad = {FAILED, STALE, MISSING, EDITED, ORPHAN}
        return 1 if any(r.status in bad for r in self.results) or self.manifest_stale else 0


class Reporter(Protocol):
    """Receives progress. ``update`` may be called from worker threads."""

    def start(self, names: Sequence[str]) -> None: ...
    def update(self, result: CellResult) -> None: ...
    def finish(self, run: RunResult) -> None: ...


class Silent:
    def start(self, names):
        pass

    def update(self, result):
        pass

    def finish(self, run):
        pass


@dataclass(frozen=True)
class Project:
    """A loaded configuration and its expanded matrix."""

    config: Config
    cells: tuple[Cell, ...]

    @classmethod
    def load(cls, start: Path, config_path: str | None = None) -> Project:
        """Find (see :func:`~lockgen.config.find_config`), validate and expand the config."""
        config = load_config(find_config(start, config_path))
        return cls(config=config, cells=tuple(expand(config)))

    @property
    def root(self) -> Path:
        return self.config.root

    def plans(self, cells: Sequence[Cell]) -> list[Plan]:
        """Render and plan every non-skipped cell in ``cells``.

        Raises :class:`TemplateError` listing every template problem found.
        """
        from lockgen.plan.plan import make_plan
        from lockgen.plan.render import environment

        env = environment(self.config)
        version = uv.uv_version()
        plans, problems = [], []
        for cell in cells:
            if cell.settings.skip or cell.settings.alias:
                continue
            try:
                plans.append(make_plan(self.config, env, cell, target_for(cell), version))
            except (TemplateError, ConfigError) as exc:
                problems.append(str(exc))
        if problems:
            raise TemplateError(_merge_cells(problems))
        return plans

    def mirrors(self, cli: Sequence[str] = ()) -> Mirrors:
        """Mirrors from the config, then ``LOCKGEN_MIRRORS``, then ``--mirror`` (later wins)."""
        return Mirrors(self.config.mirrors).merged(mirror.from_env(os.environ.get(mirror.ENV_VAR)), mirror.parse(cli))

    def rows(self, plans: Sequence[Plan] = ()) -> list[manifest.Row]:
        """Every cell as a manifest row, with input hashes from ``plans`` where given."""
        hashes = {p.cell.name: p.input_hash for p in plans}
        by_name = {c.name: c for c in self.cells}
        rows = []
        for cell in self.cells:
            target = {**target_for(cell).to_dict(), "backend": cell.backend, "os": cell.os, "arch": cell.arch}
            alias = cell.settings.alias
            rows.append(
                manifest.Row(
                    **cell.axes, name=cell.name, lock=cell.lock_path(self.config), skip=cell.settings.skip,
                    target=target, input_hash=hashes.get(cell.name), alias=alias,
                    alias_lock=by_name[alias].lock_path(self.config) if alias else None,
                    interpreter=cell.settings.interpreter,
                )  # fmt: skip
            )
        return rows

    def manifest_text(self) -> str:
        return manifest.dumps(manifest.build(self.root, self.rows()))

    def plan_all(self, chosen: Sequence[Cell]) -> list[Plan]:
        """Plans of the ``chosen`` cells. Plans every cell when it can, to refresh the stamp
        (``.lockgen/stamp.json``) that lets the next no-op run skip rendering."""
        try:
            everything = self.plans(self.cells)
        except TemplateError:
            return self.plans(chosen)  # report only the selected cells' template errors
        config = self.config
        folders = sorted({s.local for s in config.sources.values() if s.local})
        key = stamp.key(self.root, config.source, config.templates, folders)
        stamp.write(self.root, key, config.templates, config.locks, self.rows(everything), folders)
        names = {c.name for c in chosen}
        return [p for p in everything if p.cell.name in names]


def _merge_cells(problems: list[str]) -> str:
    """One line per distinct problem, naming every cell it occurs in."""
    import re

    merged: dict[str, list[str]] = {}
    for problem in problems:
        match = re.search(r" \(cell ([^)]+)\)", problem)
        key = problem.replace(match.group(0), "") if match else problem
        merged.setdefault(key, []).append(match.group(1) if match else "")
    return "\n".join(
        f"{text} (cell{'s' if len(cells) > 1 else ''} {', '.join(c for c in cells if c)})" if any(cells) else text
        for text, cells in merged.items()
    )


def lock(
    project: Project,
    names: Sequence[str] = (),
    only: Sequence[str] = (),
    run_options: RunOptions = RunOptions(),
    reporter: Reporter = Silent(),
) -> RunResult:
    """Resolve the selected cells whose input hash differs from their lock's (all with ``force``
    or an upgrade option), then rewrite the manifest.

    Unless ``run_options.online``, cells after the first of their group reuse the index pages
    refreshed in this run (see :mod:`lockgen.resolve`).

    A failed cell keeps its old lock and does not stop the others. Raises ``UsageError`` for a bad
    selection and ``TemplateError`` for template problems, before anything is resolved.
    """
    from lockgen.resolve.resolve import Freshness, resolve_cell

    chosen = select(project.cells, names, only)
    plans = project.plan_all(chosen)
    root = project.root
    mirror_table = project.mirrors(run_options.mirrors)
    used = [u for p in plans for u in (p.index_url, *p.find_links, *(x for s in p.sources for x in s.urls))]
    for prefix in mirror_table.unused(used):
        log.warning("mirror for %s matches no URL of the selected cells; check its spelling", prefix)
    options = run_options.uv
    states = {p.cell.name: current(root, p.lock, p.input_hash) for p in plans}
    todo = [p for p in plans if run_options.refresh or states[p.cell.name] != UP_TO_DATE]
    run = RunResult()
    reporter.start([c.name for c in chosen])
    for cell in chosen:
        if (result := _cell_not_resolved(cell)) is not None:
            _report(run, reporter, result)
    todo_names = {p.cell.name for p in todo}
    for plan in plans:
        if plan.cell.name not in todo_names:
            _report(run, reporter, CellResult(plan.cell.name, UP_TO_DATE))

    def work(plan: Plan) -> CellResult:
        reporter.update(CellResult(plan.cell.name, RESOLVING))
        start = time.monotonic()
        try:
            edited = states[plan.cell.name] == EDITED  # its pins are not lockgen's: do not prefer them
            outcome = resolve_cell(root, plan, options, fresh, mirror_table, prefer=not edited)
            log.debug("cell %s resolved %s", plan.cell.name, outcome.mode)
        except LockgenError as exc:
            return CellResult(plan.cell.name, FAILED, time.monotonic() - start, str(exc))
        except Exception as exc:  # a bug or an OS error must not take the other cells down
            log.debug("cell %s crashed", plan.cell.name, exc_info=True)
            message = f"cell {plan.cell.name}: {type(exc).__name__}: {exc} (-v shows the traceback)"
            return CellResult(plan.cell.name, FAILED, time.monotonic() - start, message)
        status = LOCKED if outcome.changed else UNCHANGED
        return CellResult(plan.cell.name, status, time.monotonic() - start, "; ".join(outcome.notes))

    fresh = None if run_options.online or len(todo) < 2 else Freshness()
    if fresh is not None:
        todo = fresh.order(todo)
    if todo:
        uv.uv_binary()  # find it once, before the workers need it
        for plan in todo:
            reporter.update(CellResult(plan.cell.name, WAITING))
        from concurrent.futures import ThreadPoolExecutor, as_completed

        with ThreadPoolExecutor(max_workers=run_options.jobs or default_jobs(len(todo))) as pool:
            for future in as_completed([pool.submit(work, plan) for plan in todo]):  # report as they finish
                _report(run, reporter, future.result())
    order = {c.name: i for i, c in enumerate(chosen)}
    run.results.sort(key=lambda r: order[r.name])
    if not names and not only:  # a full run owns the locks folder: drop locks of removed cells
        for path in orphans(root, project.config.locks, {c.name for c in project.cells}):
            _remove_lock(root / path)
            _report(run, reporter, CellResult(path, REMOVED, message="its cell is no longer in the matrix"))
    path = root / manifest.manifest_path(project.config.locks)
    atomic_write(path, project.manifest_text())
    reporter.finish(run)
    return run


def _report(run: RunResult, reporter: Reporter, result: CellResult) -> None:
    run.results.append(result)
    reporter.update(result)


def check(project: Project, names: Sequence[str] = (), only: Sequence[str] = ()) -> RunResult:
    """Compare each selected cell's input hash with its lock, and the manifest with the locks.

    Resolves nothing and starts no process. A cell is ``stale`` when its inputs changed,
    ``missing`` when it has no lock; ``manifest_stale`` when the manifest on disk differs from
    the one the locks give (e.g. a lock was edited by hand).
    """
    chosen = select(project.cells, names, only)
    run = RunResult()
    for plan in project.plan_all(chosen):
        run.results.append(CellResult(plan.cell.name, current(project.root, plan.lock, plan.input_hash)))
    run.results += [r for r in map(_cell_not_resolved, chosen) if r is not None]
    path = project.root / manifest.manifest_path(project.config.locks)
    run.manifest_stale = manifest.read(path) != project.manifest_text()
    left = orphans(project.root, project.config.locks, {c.name for c in project.cells})
    run.results += [CellResult(p, ORPHAN, message="its cell is no longer in the matrix") for p in left]
    return run


def orphans(root: Path, locks: str, cells: set[str]) -> list[str]:
    """Project-relative lockgen locks (and layer folders) in the ``locks`` folder that belong to
    no cell in ``cells``, e.g. after a Python version was dropped."""
    folder = root / locks
    if not folder.is_dir():
        return []
    found = [p for p in sorted(folder.glob("*.txt")) if p.stem not in cells and is_lock(p)]
    found += [
        p for p in sorted(folder.iterdir()) if p.is_dir() and p.name not in cells and any(map(is_lock, p.glob("*.txt")))
    ]  # fmt: skip
    return [f"{locks}/{p.name}" for p in found]


def _remove_lock(path: Path) -> None:
    for file in [path] if path.is_file() else list(path.glob("*.txt")):
        if is_lock(file):
            file.unlink()
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()


def detect(project: Project, machine, python: str, allow_cpu: bool = False, python_given: bool = True) -> dict:
    """The cell for ``machine`` (a :class:`lockgen.detect.Machine`) by the config's detect rules:
    ``{"cell", "lock", "backend", "reason", "interpreter"}``. ``python`` is the target Python;
    when it was not given and the matrix has the cell for one Python only, that one is used.
    Raises ``Refused`` (exit 2) with the rule's message, ``UsageError`` when the config has no
    detect rules or the matrix has no such cell."""
    from lockgen.detect import DetectConfig, choose, pick_cell
    from lockgen.errors import UsageError

    config = project.config.detect
    if config is None or config == DetectConfig():
        raise UsageError(f"{project.config.source}: no detect rules; add a [detect] table (see the README's Detect section)")
    backend, reason = choose(machine, config, allow_cpu)
    cell = pick_cell(project.cells, machine, backend, python)
    if cell is None:
        pythons = sorted({c.python for c in project.cells if (c.os, c.arch, c.backend) == (machine.os, machine.arch, backend)})
        wanted = f"{machine.os}-{machine.arch}-{backend}"
        if len(pythons) == 1 and python_given is False:
            cell = pick_cell(project.cells, machine, backend, pythons[0])
        else:
            hint = f"; the matrix has it for Python {', '.join(pythons)} (pass --python)" if pythons else ""
            raise UsageError(f"this machine needs cell {wanted}-py{python} ({reason}), which the matrix does not have{hint}")
    if cell.settings.skip:
        raise UsageError(f"this machine needs cell {cell.name}, which is skipped: {cell.settings.skip}")
    alias = cell.settings.alias
    interpreter = cell.settings.interpreter or machine.arch
    if alias:
        reason += f"; {cell.name} reuses {alias}"
    if interpreter != machine.interpreter:
        reason += f"; install with an {interpreter} interpreter (this one is {machine.interpreter})"
    lock_of = next(c for c in project.cells if c.name == (alias or cell.name)).lock_path(project.config)
    return {"cell": cell.name, "lock": lock_of, "backend": backend, "reason": reason, "interpreter": interpreter}


def describe(project: Project, only: Sequence[str] = ()) -> list[dict]:
    """One plain dict per cell (``lockgen matrix --json``): ``name``, the four axes, ``lock``
    (project-relative), ``target`` (uv platform), ``python_tag`` and ``skip`` (reason or None)."""
    rows = []
    for cell in select(project.cells, only=only):
        target = target_for(cell)
        rows.append(
            {
                "name": cell.name,
                **cell.axes,
                "lock": cell.lock_path(project.config),
                "target": target.platform,
                "python_tag": target.python_tag,
                "skip": cell.settings.skip,
                "alias": cell.settings.alias,
                "interpreter": cell.settings.interpreter,
            }
        )
    return rows


def up_to_date(start: Path, config_path: str | None, names: Sequence[str] = (), only: Sequence[str] = ()) -> RunResult | None:
    """The no-op fast path: a :class:`RunResult` if the stamp (:mod:`lockgen.stamp`) still
    describes the project and every selected lock and the manifest match it; None otherwise
    (then a full run decides). Reads files only: no rendering, no process."""
    path = find_config(start, config_path)
    found = stamp.read(path.parent, path.name)
    if found is None:
        return None
    locks, rows = found
    root = path.parent
    run = RunResult()
    for row in select(rows, names, only):
        if (result := _not_resolved(row.name, row.skip, row.alias, row.interpreter)) is not None:
            run.results.append(result)
        elif current(root, row.lock, row.input_hash) == UP_TO_DATE:
            run.results.append(CellResult(row.name, UP_TO_DATE))
        else:
            return None
    if manifest.read(root / manifest.manifest_path(locks)) != manifest.dumps(manifest.build(root, rows)):
        return None
    if orphans(root, locks, {row.name for row in rows}):
        return None  # a lock of a removed cell: the full path reports or removes it
    return run


def lock_project(
    start: Path,
    config_path: str | None,
    names: Sequence[str] = (),
    only: Sequence[str] = (),
    run_options: RunOptions = RunOptions(),
    reporter: Reporter = Silent(),
) -> RunResult:
    """``lockgen all`` / ``lockgen lock``: the fast no-op check, else load the project and
    :func:`lock` it."""
    mirror.parse(run_options.mirrors)  # a malformed --mirror is a usage error even on a no-op
    mirror.from_env(os.environ.get(mirror.ENV_VAR))
    if not run_options.refresh:
        run = up_to_date(start, config_path, names, only)
        if run is not None:
            reporter.start([r.name for r in run.results])
            for result in run.results:
                reporter.update(result)
            reporter.finish(run)
            return run
    return lock(Project.load(start, config_path), names, only, run_options, reporter)


def check_project(start: Path, config_path: str | None, names: Sequence[str] = (), only: Sequence[str] = ()) -> RunResult:
    """``lockgen check``: the fast path when it proves everything current, else :func:`check`."""
    run = up_to_date(start, config_path, names, only)
    return run if run is not None else check(Project.load(start, config_path), names, only)
