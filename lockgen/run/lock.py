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
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import replace
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING

from lockgen.locks import manifest, stamp, store
from lockgen.locks.folder import orphan_cells
from lockgen.plan import mirror
from lockgen.plan.matrix import Cell, select, with_alias_sources
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.project import Project
from lockgen.resolve import uv
from lockgen.run.check import state_of
from lockgen.run.noop import up_to_date
from lockgen.run.values import SILENT, CellResult, Reporter, RunOptions, RunResult, Silent, default_jobs
from lockgen.runtime.credentials import redact
from lockgen.runtime.errors import Interrupted, LockgenError
from lockgen.runtime.states import CellState

if TYPE_CHECKING:  # the no-op path (lockgen.run.noop) imports this module: heavy imports are lazy
    from lockgen.locks.shard import Shard
    from lockgen.resolve.cellrun import CellRun
    from lockgen.resolve.files import CellFiles
    from lockgen.resolve.freshness import Freshness
    from lockgen.resolve.hashcheck import Verified
    from lockgen.resolve.probe import Reach

# the run's values live in lockgen.run.values and the no-op path in lockgen.run.noop; named here too, as
# the pipeline's interface
__all__ = [
    "CellResult", "Reporter", "RunOptions", "RunResult", "Silent", "default_jobs", "lock", "lock_project", "up_to_date",
]  # fmt: skip

log = logging.getLogger("lockgen")


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
    from lockgen.locks.changed import check_upgrade_names, copy_cells, run_report
    from lockgen.locks.lockset import LockSet
    from lockgen.locks.shard import select as select_shard
    from lockgen.resolve.hashcheck import Verified

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
            check_upgrade_names(before, plans, options.uv.upgrade_packages)
        run = RunResult()
        reporter.start([c.name for c in chosen])
        todo = _stale(project, chosen, plans, options, run, reporter)
        todo, failed, reach = _unreachable(todo, mirrors, run, reporter)
        if todo:
            verified = Verified(root, fresh=options.refresh)
            touched = [p.cell.name for p, _ in todo]
            with tempfile.TemporaryDirectory(prefix="lockgen-run-") as tmp:
                old = Path(tmp, "old")
                copy_cells(root / locks, touched, old)  # the touched cells' files before the run
                failed.update(_resolve_all(project, todo, options, mirrors, run, reporter, reach, verified))
                run.report, run.changes = run_report(
                    root / locks, locks, before, old, touched, options.uv.upgrade_packages
                )
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
    """Plans of the ``chosen`` cells; all cells when they plan, to refresh the no-op stamp. A
    problem in a cell that was not chosen (a template error, or a per-cell config problem such
    as a placeholder that cell lacks) does not stop locking the chosen ones."""
    from lockgen.runtime.errors import ConfigError, TemplateError

    try:
        everything = project.plans(project.cells)
    except (TemplateError, ConfigError):
        return project.plans(chosen)  # report only the selected cells' problems
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
    from lockgen.resolve.probe import Reach, probe

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
    reach: Reach,
    verified: Verified,
) -> dict[str, str]:
    """Resolve ``todo`` concurrently, in matrix order, ``jobs`` cells at once; returns ``{cell:
    reason}`` of the failed cells. Unless ``online``, uv goes through the run's page cache and
    cells resolve offline where this run's pages cover them (:mod:`lockgen.resolve.freshness`);
    no cell waits for another."""
    from lockgen.resolve import freshness
    from lockgen.resolve.cellrun import CellRun, committed

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
        if runner.stopped.is_set():  # taken from the queue as the run was interrupted
            return CellResult(plan.cell.name, CellState.INTERRUPTED, message="not started")
        cell_run = CellRun(
            project.root, plan, uv_options, mirrors, runner, project.config.source, builds,
            locked=locked.get(plan.cell.name), reach=reach, verified=verified,
        )  # fmt: skip
        return _resolve_one(cell_run, fresh, states[plan.cell.name], reporter)

    for plan in plans:
        reporter.update(CellResult(plan.cell.name, CellState.WAITING))
    futures = _start(work, plans, options.jobs or default_jobs(len(plans)))
    pending = set(futures)
    try:
        _collect(pending, run, reporter, failed)
    except KeyboardInterrupt:
        for future in pending:
            future.cancel()  # queued cells first: none starts now
        runner.stop()  # uv ended; lockgen's own downloads stop at their next chunk
        wait(pending, timeout=_GRACE)
        for future in pending:
            _finish(run, reporter, _stopped(future, futures[future]), failed)
    finally:
        if fresh is not None:
            fresh.close()
    return failed


#: Seconds an interrupted run waits for its cells to notice (uv is ended within 0.5 s); a cell
#: still busy then (a host that stopped sending, a DNS lookup) is left behind, unwritten.
_GRACE = 1.0


def _start(work: Callable[[Plan], CellResult], plans: Sequence[Plan], jobs: int) -> dict[Future[CellResult], str]:
    """Run ``work`` over ``plans`` in matrix order, ``jobs`` at once, on daemon threads: a cell
    stuck in I/O after Ctrl-C does not hold the process's exit, as a thread pool's workers would
    (the interpreter joins those at exit). Returns each cell's future; a cancelled one never runs."""
    futures: dict[Future[CellResult], str] = {Future(): plan.cell.name for plan in plans}
    queue: SimpleQueue[tuple[Future[CellResult], Plan]] = SimpleQueue()
    for future, plan in zip(futures, plans):
        queue.put((future, plan))

    def worker() -> None:
        while True:
            try:
                future, plan = queue.get_nowait()
            except Empty:
                return
            if not future.set_running_or_notify_cancel():
                continue  # cancelled by Ctrl-C before it started
            try:
                future.set_result(work(plan))
            except BaseException as exc:  # reported by _collect, as a pool would
                future.set_exception(exc)

    for i in range(min(jobs, len(plans))):
        threading.Thread(target=worker, name=f"cell worker {i}", daemon=True).start()
    return futures


def _stopped(future: Future[CellResult], name: str) -> CellResult:
    """What an interrupted run reports for a cell it had not collected yet."""
    if future.done() and not future.cancelled():
        return future.result()
    message = "not started" if future.cancelled() else "still waiting on the network; left behind, nothing written"
    return CellResult(name, CellState.INTERRUPTED, message=message)


def _collect(pending: set[Future[CellResult]], run: RunResult, reporter: Reporter, failed: dict[str, str]) -> None:
    """Report each cell as it finishes, removing it from ``pending`` (polled, so that Ctrl-C is
    seen within 0.2 s; what is left in ``pending`` then was not reported)."""
    while pending:
        done, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
        for future in done:
            pending.discard(future)
            _finish(run, reporter, future.result(), failed)


def _resolve_one(cell_run: CellRun, fresh: Freshness | None, found: CellState, reporter: Reporter) -> CellResult:
    """Resolve one cell and write its files together; every outcome is a :class:`CellResult`
    (a crash in one cell must not take the others down; a hand-edited lock's pins are not
    preferred)."""
    from lockgen.resolve.pipeline import resolve_cell

    plan, root = cell_run.plan, cell_run.root
    reporter.update(CellResult(plan.cell.name, CellState.RESOLVING))
    start = time.monotonic()
    try:
        files = resolve_cell(cell_run, fresh, prefer=found is not CellState.EDITED)
        if cell_run.stop is not None and cell_run.stop.is_set():  # finished after Ctrl-C: not written
            return CellResult(plan.cell.name, CellState.INTERRUPTED, time.monotonic() - start)
        changed = store.replace_files(root, plan.cell.name, files.texts(), _stale_layers(root, plan, files))
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


def replace_refresh(options: RunOptions) -> uv.Options:
    """The uv options of a run: ``--force`` and upgrades revalidate every cached page."""
    return replace(options.uv, refresh=options.refresh)


def _finish(run: RunResult, reporter: Reporter, result: CellResult, failed: dict[str, str]) -> None:
    result = replace(result, message=redact(result.message))  # the summary and the manifest show it
    if result.state is CellState.FAILED:
        failed[result.name] = result.reason()
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
    resolved = {c.name for c in project.cells if c.resolves}
    for cell, paths in orphan_cells(project.root, project.config.locks, resolved).items():
        store.remove_cell(project.root, cell, paths)
        message = f"its cell is not resolved by the matrix any more; removed {', '.join(paths)}"
        _report(run, reporter, CellResult(cell, CellState.REMOVED, message=message))


def _write_manifest(
    project: Project, failed: dict[str, str], run: RunResult, shard: Shard | None = None, cells: Sequence[str] = ()
) -> None:
    """Write the manifest (a shard run: the shard manifest of its ``cells``); a failure to write
    it is reported, not raised: every cell's result is still printed (issue 8)."""
    from lockgen.locks.shard import shard_manifest_text

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
