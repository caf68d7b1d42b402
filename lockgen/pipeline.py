"""``lockgen all`` / ``lockgen lock``: config -> matrix -> plan -> uv -> verify -> locks + manifest.

:func:`lock` holds the project's run lock (:mod:`lockgen.locks.store`), finishes what a killed
run left, resolves the selected stale cells concurrently, writes each cell's files together,
removes locks of cells the matrix no longer resolves, and writes the manifest. Ctrl-C or SIGTERM
stops it within about a second: running uv processes are ended, queued cells are not started, and
nothing interrupted is written. It takes plain values (no CLI objects) and a :class:`Reporter`.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from packaging.requirements import Requirement

from lockgen.check import orphan_cells, orphans, state_of
from lockgen.config import find_config
from lockgen.credentials import redact
from lockgen.errors import Interrupted, LockgenError, UsageError
from lockgen.locks import manifest, stamp, store
from lockgen.locks.changed import changed_cells, copy_cells, lockset_of
from lockgen.locks.lockset import LockSet
from lockgen.locks.report import change_report, upgrade_outcome
from lockgen.locks.shard import Shard, shard_manifest_text
from lockgen.locks.shard import select as select_shard
from lockgen.plan import mirror
from lockgen.plan.matrix import Cell, select, with_alias_sources
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.project import Project
from lockgen.resolve import uv
from lockgen.resolve.hashcheck import Verified
from lockgen.resolve.probe import Reach
from lockgen.states import CellState

if TYPE_CHECKING:
    from lockgen.resolve.resolve import CellFiles

__all__ = ["CellResult", "Reporter", "RunOptions", "RunResult", "Silent", "lock", "lock_project", "up_to_date"]

log = logging.getLogger("lockgen")


def default_jobs(cells: int) -> int:
    """Default concurrency: one cell more than CPU cores (a resolution mostly waits on the
    network: through the page cache, uv's reads are chains of round trips; on 2 cores a cold run
    took 15 s at 3 cells at once, 19 s at 2, and a warm one the same), at most 8 and at most
    the number of cells (docs/benchmarks.md)."""
    return max(1, min(cells, 8, max(2, (os.cpu_count() or 1) + 1)))


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How ``all``/``lock`` run: ``force`` re-resolves up-to-date cells and revalidates cached
    pages; ``uv`` options pass to uv (upgrades); ``jobs`` cells at once; ``online`` turns off the
    reuse of pages fetched in the run; ``mirrors`` are ``CANONICAL=MIRROR`` strings; ``wait``
    queues behind another run instead of refusing; ``retry_unavailable`` re-resolves cells whose
    optional source was unreachable; ``shard`` locks only that shard of the selected cells
    (:mod:`lockgen.locks.shard`) and writes a shard manifest."""

    force: bool = False
    uv: uv.Options = field(default_factory=uv.Options)
    jobs: int | None = None
    online: bool = False
    mirrors: tuple[str, ...] = ()
    wait: bool = False
    retry_unavailable: bool = False
    shard: Shard | None = None

    @property
    def refresh(self) -> bool:
        return self.force or self.uv.upgrade or bool(self.uv.upgrade_packages)


@dataclass(frozen=True)
class CellResult:
    """What happened to one cell (or a removed lock's path) in a run."""

    name: str
    state: CellState
    seconds: float = 0.0
    message: str = ""


@dataclass
class RunResult:
    """What a run did. ``exit_code``: 130 interrupted, 1 a cell failed (or the manifest could
    not be written), else 0."""

    results: list[CellResult] = field(default_factory=list)
    manifest_error: str | None = None
    report: list[str] = field(default_factory=list)  # the change report, one line per group
    changes: list[dict[str, object]] = field(default_factory=list)  # the same, for --json

    def to_dict(self) -> dict[str, object]:
        """``lockgen all --json``: each cell's state and message, the changes, the manifest error."""
        cells = [
            {"cell": r.name, "state": str(r.state), "seconds": round(r.seconds, 1), "message": r.message}
            for r in self.results
        ]
        return {
            "exit_code": self.exit_code,
            "cells": cells,
            "changes": self.changes,
            "report": self.report,
            "manifest_error": self.manifest_error,
        }

    @property
    def interrupted(self) -> bool:
        return any(r.state is CellState.INTERRUPTED for r in self.results)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 1 if self.manifest_error or any(r.state.bad for r in self.results) else 0


class Reporter(Protocol):
    """Receives progress. ``update`` may be called from worker threads."""

    def start(self, names: Sequence[str]) -> None: ...
    def update(self, result: CellResult) -> None: ...
    def finish(self, run: RunResult) -> None: ...


class Silent:
    def start(self, names: Sequence[str]) -> None:
        pass

    def update(self, result: CellResult) -> None:
        pass

    def finish(self, run: RunResult) -> None:
        pass


SILENT = Silent()


def lock(
    project: Project,
    names: Sequence[str] = (),
    only: Sequence[str] = (),
    options: RunOptions = RunOptions(),
    reporter: Reporter = SILENT,
) -> RunResult:
    """Resolve the selected cells whose locks are not up to date (all of them with ``force`` or
    an upgrade option) and rewrite the manifest. A failed cell keeps all its old files and does
    not stop the others. Raises ``UsageError`` (bad selection, another run holds the project)
    and ``TemplateError`` before anything is resolved."""
    chosen = with_alias_sources(project.cells, select(project.cells, names, only))
    if options.shard is not None:
        chosen = select_shard(chosen, options.shard)
    root = project.root
    mirrors = project.mirrors(options.mirrors)
    with store.ProjectLock(root, wait=options.wait):
        for name in store.recover(root):
            log.warning("finished writing cell %s, which a killed run had left half-written", name)
        store.clean_temporaries(root, project.config.locks)
        plans = _plan_all(project, chosen)
        locks = project.config.locks
        # every lock is read up front only for an upgrade (its names are checked, its outcome
        # counts every cell); otherwise each cell's files are read when needed (memory flat)
        before = LockSet.from_folder(root / locks, locks) if options.uv.upgrade_packages else None
        if before is not None:
            _check_upgrade_names(before, plans, options.uv.upgrade_packages)
        run = RunResult()
        reporter.start([c.name for c in chosen])
        todo = _stale(project, chosen, plans, options, run, reporter)
        todo, failed, reach = _unreachable(todo, mirrors, run, reporter)
        shared = {"reach": reach, "verified": Verified(root, fresh=options.refresh)}  # CellRun fields of the run
        touched = [p.cell.name for p, _ in todo]
        with tempfile.TemporaryDirectory(prefix="lockgen-run-") as tmp:
            old = Path(tmp, "old")
            copy_cells(root / locks, touched, old)  # the touched cells' files before the run
            failed.update(_resolve_all(project, todo, options, mirrors, run, reporter, shared=shared))
            if todo:
                _change_report(project, before, old, touched, options, run)
        if todo:
            for prefix in mirrors.never_used() if not run.interrupted else ():
                log.warning("mirror for %s served nothing in this run; check its spelling", prefix)
        order = {c.name: i for i, c in enumerate(chosen)}
        run.results.sort(key=lambda r: order.get(r.name, len(order)))
        if not names and not only and options.shard is None and not run.interrupted:
            _remove_orphans(project, run, reporter)
        _write_manifest(project, failed, run, options.shard, [c.name for c in chosen])
    reporter.finish(run)
    return run


def _plan_all(project: Project, chosen: Sequence[Cell]) -> list[Plan]:
    """Plans of the ``chosen`` cells; all cells when they render, to refresh the no-op stamp."""
    from lockgen.errors import TemplateError

    try:
        everything = project.plans(project.cells)
    except TemplateError:
        return project.plans(chosen)  # report only the selected cells' template errors
    config = project.config
    folders = sorted(
        {s.local for s in config.sources.values() if s.local} | {f for p in everything for f in p.local_files}
    )
    files = sorted({f for p in everything for f in p.read_files} | project.read_files())  # issue 9
    key = stamp.key(project.root, config.source, config.templates, folders, files=files)
    memo = stamp.Memo(config.locks, project.rows(everything), project.detect_rules())
    stamp.write(project.root, key, config.templates, memo, folders, files)
    names = {c.name for c in chosen}
    return [p for p in everything if p.cell.name in names]


def _check_upgrade_names(before: LockSet, plans: Sequence[Plan], names: Sequence[str]) -> None:
    """``--upgrade-package NAME`` (or ``NAME==VERSION``, as uv takes it) must name a package a
    selected cell locks or asks for (issue 6: a typo was accepted silently). Raises
    :class:`UsageError` naming it, with the closest known names."""
    import difflib

    from packaging.requirements import InvalidRequirement
    from packaging.utils import canonicalize_name

    selected = {p.cell.name for p in plans}
    known = {e.name for cell, locks in before.cells.items() if cell in selected for e in locks.main.entries}
    known |= {n for p in plans for n in p.requirement_names()}
    for text in names:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            raise UsageError(f"--upgrade-package {text!r}: write a package name, or NAME==VERSION") from None
        key = canonicalize_name(req.name)
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise UsageError(f"--upgrade-package {text}: no selected cell locks or requires it{hint}; check the name")


def _change_report(
    project: Project, before: LockSet | None, old: Path, touched: list[str], options: RunOptions, run: RunResult
) -> None:
    """What the run changed, grouped across cells, and what happened to each ``--upgrade-package``.
    Only the cells whose files changed are read (``old``: a copy of the touched cells' files
    from before the run), unless an upgrade was asked for (its outcome counts every touched
    cell: ``before`` holds every lock)."""
    locks = project.config.locks
    folder = project.root / locks
    cells = set(touched) if before is not None else changed_cells(old, folder, touched)
    after = lockset_of(folder, locks, cells)
    earlier = before.only(cells) if before is not None else lockset_of(old, locks, cells)
    report = change_report(earlier, after, touched)
    run.report = report.lines()
    run.changes = report.to_json()
    run.report += [
        upgrade_outcome(Requirement(spec).name, earlier, after, touched) for spec in options.uv.upgrade_packages
    ]


def _stale(
    project: Project,
    chosen: Sequence[Cell],
    plans: Sequence[Plan],
    options: RunOptions,
    run: RunResult,
    reporter: Reporter,
) -> list[tuple[Plan, CellState]]:
    """Report the cells that need nothing; return the plans to resolve."""
    for cell in chosen:
        if cell.settings.skip:
            _report(run, reporter, CellResult(cell.name, CellState.SKIPPED, message=cell.settings.skip))
        elif cell.settings.alias:
            _report(run, reporter, CellResult(cell.name, CellState.ALIAS, message=f"reuses {cell.settings.alias}"))
    todo = []
    for plan in plans:
        found = state_of(project.root, plan)
        retry = options.retry_unavailable and bool(found.reasons)
        if options.refresh or retry or found.state is not CellState.UP_TO_DATE:
            todo.append((plan, found.state))
        else:
            _report(run, reporter, CellResult(plan.cell.name, CellState.UP_TO_DATE))
    return todo


def _unreachable(
    todo: list[tuple[Plan, CellState]], mirrors: Mirrors, run: RunResult, reporter: Reporter
) -> tuple[list[tuple[Plan, CellState]], dict[str, str], Reach]:
    """Probe the hosts the ``todo`` cells need, once (CASES C28): a cell whose main resolution
    needs a host that is down fails at once, without uv, with one message per host. Returns the
    cells left to resolve, ``{cell: reason}`` of those failed, and the probe's findings (optional
    layers whose host is down are unavailable without running uv)."""
    from lockgen.resolve.probe import probe

    failed: dict[str, str] = {}
    if not todo:
        return todo, failed, Reach()
    try:
        reach = probe([plan for plan, _ in todo], mirrors)
    except Exception:  # a bug in a speed-up must not stop the run: uv then meets the host itself
        log.debug("the host probe failed", exc_info=True)
        reach = Reach()
    left: list[tuple[Plan, CellState]] = []
    for plan, state in todo:
        why = reach.main_failure(plan)
        if why is None:
            left.append((plan, state))
        else:
            _finish(run, reporter, CellResult(plan.cell.name, CellState.FAILED, message=why), failed)
    return left, failed, reach


def _resolve_all(
    project: Project,
    todo: list[tuple[Plan, CellState]],
    options: RunOptions,
    mirrors: Mirrors,
    run: RunResult,
    reporter: Reporter,
    *,
    shared: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Resolve ``todo`` concurrently, in matrix order, ``jobs`` cells at once; returns ``{cell:
    reason}`` of the failed cells. Unless ``online``, uv goes through the run's page cache and
    cells resolve offline where this run's pages cover them (:mod:`lockgen.resolve.freshness`);
    no cell waits for another."""
    from lockgen.resolve import freshness
    from lockgen.resolve.cellrun import committed
    from lockgen.resolve.resolve import CellRun, resolve_cell

    failed: dict[str, str] = {}
    if not todo:
        return failed
    uv.uv_binary()  # look it up once, before the workers (uv's own finder is not thread-safe)
    runner = uv.Runner()
    uv_options = replace_refresh(options)
    plans = [p for p, _ in todo]
    locked, builds = committed(project.root, plans)
    fresh = None if options.online else freshness.start(plans, mirrors, locked)
    states = {p.cell.name: s for p, s in todo}

    def work(plan: Plan) -> CellResult:
        reporter.update(CellResult(plan.cell.name, CellState.RESOLVING))
        start = time.monotonic()
        cell_run = CellRun(
            project.root, plan, uv_options, mirrors, runner, project.config.source, builds,
            locked=locked.get(plan.cell.name), **(shared or {}),
        )  # fmt: skip
        try:
            files = resolve_cell(cell_run, fresh, prefer=states[plan.cell.name] is not CellState.EDITED)
            changed = store.replace_files(
                project.root, plan.cell.name, files.texts(), _stale_layers(project.root, plan, files)
            )
        except Interrupted:
            return CellResult(plan.cell.name, CellState.INTERRUPTED, time.monotonic() - start)
        except LockgenError as exc:
            return CellResult(plan.cell.name, CellState.FAILED, time.monotonic() - start, str(exc))
        except Exception as exc:  # a bug or an OS error must not take the other cells down
            log.debug("cell %s crashed", plan.cell.name, exc_info=True)
            message = f"cell {plan.cell.name}: {type(exc).__name__}: {exc} (-v shows the traceback)"
            return CellResult(plan.cell.name, CellState.FAILED, time.monotonic() - start, message)
        state = CellState.LOCKED if changed else CellState.UNCHANGED
        log.debug("cell %s: main resolution %s", plan.cell.name, files.mode)
        return CellResult(plan.cell.name, state, time.monotonic() - start, "; ".join(files.notes))

    for plan in plans:
        reporter.update(CellResult(plan.cell.name, CellState.WAITING))
    pool = ThreadPoolExecutor(max_workers=options.jobs or default_jobs(len(plans)))
    futures: dict[Future[CellResult], str] = {pool.submit(work, plan): plan.cell.name for plan in plans}
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for future in done:
                _finish(run, reporter, future.result(), failed)
    except KeyboardInterrupt:
        runner.stop()
        pool.shutdown(wait=True, cancel_futures=True)
        for future in pending:
            result = future.result() if future.done() and not future.cancelled() else None
            result = result or CellResult(futures[future], CellState.INTERRUPTED, message="not started")
            _finish(run, reporter, result, failed)
    finally:
        pool.shutdown(wait=True)
        if fresh is not None:
            fresh.close()
    return failed


def replace_refresh(options: RunOptions) -> uv.Options:
    """The uv options of a run: ``--force`` and upgrades revalidate every cached page."""
    from dataclasses import replace

    return replace(options.uv, refresh=options.refresh)


def _finish(run: RunResult, reporter: Reporter, result: CellResult, failed: dict[str, str]) -> None:
    result = replace(result, message=redact(result.message))  # the summary and the manifest show it
    if result.state is CellState.FAILED:
        failed[result.name] = result.message.partition("\n")[0]
    _report(run, reporter, result)


def _stale_layers(root: Path, plan: Plan, files: CellFiles) -> list[str]:
    """Layer files of the cell's folder that this resolution no longer produces."""
    folder = root / plan.lock.removesuffix(".txt")
    keep = set(files.texts())
    return [
        p.relative_to(root).as_posix() for p in sorted(folder.glob("*.txt")) if p.relative_to(root).as_posix() not in keep
    ] if folder.is_dir() else []  # fmt: skip


def _remove_orphans(project: Project, run: RunResult, reporter: Reporter) -> None:
    """A full run owns the locks folder: drop locks of cells the matrix no longer resolves."""
    resolved = {c.name for c in project.cells if not (c.settings.skip or c.settings.alias)}
    for cell, paths in orphan_cells(project.root, project.config.locks, resolved).items():
        files: list[Path] = []
        for path in paths:
            target = project.root / path.rstrip("/")
            files += [target] if target.is_file() else [p for p in target.rglob("*") if p.is_file()]
        store.replace_files(project.root, cell, {}, [f.relative_to(project.root).as_posix() for f in files])
        message = f"its cell is not resolved by the matrix any more; removed {', '.join(paths)}"
        _report(run, reporter, CellResult(cell, CellState.REMOVED, message=message))


def _write_manifest(
    project: Project, failed: dict[str, str], run: RunResult, shard: Shard | None = None, cells: Sequence[str] = ()
) -> None:
    """Write the manifest (a shard run: the shard manifest of its ``cells``); a failure to write
    it is reported, not raised: every cell's result is still printed (issue 8)."""
    where = manifest.manifest_path(project.config.locks)
    path = project.root / where
    previous = manifest.failures(manifest.read(path))
    kept = {name: why for name, why in previous.items() if name not in {r.name for r in run.results} or name in failed}
    try:
        if shard is not None:
            store.write_text(path, shard_manifest_text(project, cells, {**kept, **failed}, shard), where)
            return
        store.write_text(path, project.manifest_text({**kept, **failed}), where)
    except LockgenError as exc:
        run.manifest_error = str(exc)


def _report(run: RunResult, reporter: Reporter, result: CellResult) -> None:
    run.results.append(result)
    reporter.update(result)


def up_to_date(
    start: Path, config_path: str | None, names: Sequence[str] = (), only: Sequence[str] = ()
) -> RunResult | None:
    """The no-op fast path: a :class:`RunResult` if the stamp (:mod:`lockgen.locks.stamp`) still
    describes the project and every selected lock and the manifest match it; None otherwise
    (then a full run decides). Reads files only: no rendering, no process."""
    from lockgen.check import edited
    from lockgen.locks.lock import Lock

    path = find_config(start, config_path)
    memo = stamp.read(path.parent, path.name)
    if memo is None:
        return None
    root = path.parent
    run = RunResult()
    locks = {r.name: r.lock for r in memo.rows}
    for row in select(memo.rows, names, only):
        if row.alias and not (root / locks.get(row.alias, "")).is_file():
            return None  # the cell it reuses has no lock: the full path locks it
        if row.skip or row.alias:
            state = CellState.SKIPPED if row.skip else CellState.ALIAS
            run.results.append(CellResult(row.name, state, message=row.skip or f"reuses {row.alias}"))
            continue
        try:
            main = Lock.read(root / row.lock, row.lock)
            if main is None or main.header.input_hash != row.input_hash or edited(root, row.lock, main):
                return None
        except (OSError, LockgenError):
            return None
        run.results.append(CellResult(row.name, CellState.UP_TO_DATE))
    text = manifest.read(root / manifest.manifest_path(memo.locks))
    if text is None or manifest.failures(text):
        return None
    try:
        expected = manifest.dumps(manifest.build(root, memo.rows, memo.detect))
    except LockgenError:
        return None
    if text != expected:
        return None
    resolved = {r.name for r in memo.rows if not (r.skip or r.alias)}
    if orphans(root, memo.locks, resolved):
        return None  # a lock of a removed cell: the full path reports or removes it
    return run


def lock_project(
    start: Path,
    config_path: str | None,
    names: Sequence[str] = (),
    only: Sequence[str] = (),
    options: RunOptions = RunOptions(),
    reporter: Reporter = SILENT,
) -> RunResult:
    """``lockgen all`` / ``lockgen lock``: the fast no-op check, else load the project and
    :func:`lock` it."""
    mirror.parse(options.mirrors)  # a malformed --mirror is a usage error even on a no-op
    mirror.from_env(os.environ.get(mirror.ENV_VAR))
    if not options.refresh and not options.retry_unavailable and options.shard is None:
        run = up_to_date(start, config_path, names, only)
        if run is not None:
            reporter.start([r.name for r in run.results])
            for result in run.results:
                reporter.update(result)
            reporter.finish(run)
            return run
    return lock(Project.load(start, config_path), names, only, options, reporter)
