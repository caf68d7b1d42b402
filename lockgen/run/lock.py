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
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import replace
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING, Any

from lockgen.locks import journal, manifest, stamp, store
from lockgen.locks.folder import orphan_cells
from lockgen.locks.paths import resolving_once
from lockgen.plan import mirror
from lockgen.plan.matrix import Cell, select, with_alias_sources
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.project import Project
from lockgen.resolve import uv
from lockgen.run.check import current_locks, state_of
from lockgen.run.noop import up_to_date
from lockgen.run.values import SILENT, CellResult, Reporter, RunOptions, RunResult, Silent, default_jobs
from lockgen.runtime import trace
from lockgen.runtime.credentials import redact
from lockgen.runtime.errors import Interrupted, LockgenError, UsageError
from lockgen.runtime.states import CellState

if TYPE_CHECKING:  # the no-op path (lockgen.run.noop) imports this module: heavy imports are lazy
    from lockgen.index.pages import PageReader
    from lockgen.locks.changed import Held
    from lockgen.locks.shard import Shard
    from lockgen.locks.stage import Stage
    from lockgen.resolve.cellrun import CellRun
    from lockgen.resolve.files import CellFiles
    from lockgen.resolve.freshness import Freshness
    from lockgen.resolve.gate import Gate
    from lockgen.resolve.hashcheck import Verified
    from lockgen.resolve.probe import Reach

# the run's values live in lockgen.run.values and the no-op path in lockgen.run.noop; named here too, as
# the pipeline's interface
__all__ = [
    "CellResult", "Reporter", "RunOptions", "RunResult", "Silent", "default_jobs", "dry_run", "lock", "lock_project",
    "up_to_date",
]  # fmt: skip

log = logging.getLogger("lockgen")


def lock(
    project: Project,
    names: Sequence[str] = (),
    only: Sequence[str] = (),
    options: RunOptions = RunOptions(),
    reporter: Reporter = SILENT,
    stage: Stage | None = None,
) -> RunResult:
    """Resolve the selected cells whose locks are not up to date (all of them with ``force`` or
    an upgrade option) and rewrite the manifest. A failed cell keeps all its old files and does
    not stop the others. Raises ``UsageError`` (bad selection, another run holds the project)
    and ``TemplateError`` before anything is resolved.

    With a ``stage`` (:mod:`lockgen.locks.stage`: ``--dry-run``, ``lockgen bump``) every lock
    file and the manifest are written to the stage's copy of the locks folder, nothing in the
    project; the caller holds the project's run lock (and finished a killed run's journals), and
    the no-op stamp is left alone (it describes the files on disk)."""
    if stage is not None:
        return _run(project, names, only, options, reporter, stage)
    with store.ProjectLock(project.root, wait=options.wait):
        journal.recover(project.root)
        journal.clean_temporaries(project.root, project.config.locks)
        return _run(project, names, only, options, reporter, None)


def _run(
    project: Project,
    names: Sequence[str],
    only: Sequence[str],
    options: RunOptions,
    reporter: Reporter,
    stage: Stage | None,
) -> RunResult:
    """:func:`lock`, holding the project's run lock; lock files go under ``stage.out`` when staged."""
    from lockgen.locks.changed import check_upgrade_names, copy_cells, run_report
    from lockgen.locks.lockset import LockSet
    from lockgen.locks.shard import select as select_shard
    from lockgen.resolve.hashcheck import Verified

    chosen = with_alias_sources(project.cells, select(project.cells, names, only))
    if options.shard is not None:
        chosen = select_shard(chosen, options.shard)
    root = project.root
    out = stage.out if stage is not None else root  # where lock files are written
    mirrors = project.mirrors(options.mirrors)
    every: list[Plan] = []  # every resolving cell's plan (harmonizing weighs them all)
    with trace.span("plan", cells=len(chosen)):
        plans = _plan_all(project, chosen, stamp_it=stage is None, every=every)
    mirrors.refuse_shadowed(_configured_urls(plans))
    locks = project.config.locks
    # every lock is read up front only for an upgrade (its names are checked, its outcome
    # counts every cell); otherwise each cell's files are read when needed (memory flat)
    before = LockSet.from_folder(root / locks, locks) if options.uv.upgrade_packages else None
    if before is not None:
        check_upgrade_names(before, plans, options.uv.upgrade_packages)
    run = RunResult()
    step = _CoverageStep(project, mirrors, options, reporter)  # the kernel coverage: beside the cells, then all
    reporter.start([c.name for c in chosen])
    with trace.span("stale"), resolving_once():  # reads only: each folder resolved, each lock parsed, once
        todo = _stale(project, chosen, plans, options, run, reporter)
    with trace.span("probe"):
        todo, failed, reach = _unreachable(todo, mirrors, run, reporter)
    if todo:  # a read-only lock or manifest is refused before anything is resolved (exit 2)
        journal.refuse_read_only(out, [manifest.manifest_path(locks)], [p.lock.removesuffix(".txt") for p, _ in todo])
    for plan, _ in todo:  # uv and lockgen write a cell's inputs and outputs there: no link is followed (exit 2)
        store.work_folder(root, plan.work, depth=-1)
    if todo:
        verified = Verified(root, fresh=options.refresh)
        touched = [p.cell.name for p, _ in todo]
        with tempfile.TemporaryDirectory(prefix="lockgen-run-") as tmp:
            old = Path(tmp, "old")
            with trace.span("copy old"):
                copied = copy_cells(root / locks, touched, old)  # the touched cells' files before the run
            left = _egg_info(root, [p for p, _ in todo])
            try:
                failed.update(
                    _resolve_all(project, todo, options, mirrors, run, reporter, reach, verified, out, step, every)
                )
            finally:
                _remove_new(root, left, [p for p, _ in todo])
            held = _holders(project, [p for p, _ in todo], mirrors) if options.uv.upgrade_packages else None
            with trace.span("report"):
                run.report, run.changes = run_report(
                    out / locks,
                    locks,
                    before,
                    old if copied else None,
                    touched,
                    options.uv.upgrade_packages,
                    None if run.interrupted else held,
                )
        for prefix in mirrors.never_used() if not run.interrupted else ():
            log.warning("mirror for %s served nothing in this run; check its spelling", prefix)
    if run.differences is not None and not run.interrupted:
        _record_differences(project, run, out)
    order = {c.name: i for i, c in enumerate(chosen)}
    run.results.sort(key=lambda r: order.get(r.name, len(order)))
    if not names and not only and options.shard is None and not run.interrupted:
        _remove_orphans(project, run, reporter, out)
    with trace.span("manifest"):
        stopped = _write_manifest(
            project, failed, run, options.shard, [c.name for c in chosen], out, mirrors, plans, step
        )
    reporter.finish(run)
    if stopped:  # Ctrl-C while reading kernel coverage: the manifest is written, then the run ends
        raise Interrupted(
            "interrupted while reading the GPU wheels' kernel coverage; the manifest lists the locks written, "
            "their coverage recorded as incomplete (the next lockgen all reads the rest)"
        )
    return run


def _record_differences(project: Project, run: RunResult, out: Path) -> None:
    """Write ``<locks>/differences.json`` under ``out`` and add the differences to the run's
    report, one line per package (:mod:`lockgen.locks.spread`); a failure to write is reported
    as the manifest's is, never raised."""
    from lockgen.locks.spread import differences_path, dumps

    differences = run.differences or []
    where = differences_path(project.config.locks)
    try:
        store.write_text(out / where, dumps(differences), where)
    except LockgenError as exc:
        run.manifest_error = str(exc)
    if differences:
        forced = sum(1 for d in differences if d.forced)
        run.report.append(
            f"versions differ across cells: {len(differences)} package{'s' if len(differences) != 1 else ''}, "
            f"{forced} forced ({where})"
        )
        run.report.extend(f"  {d.sentence()}" for d in differences)


def _egg_info(root: Path, plans: Sequence[Plan]) -> set[Path]:
    """The ``*.egg-info`` folders in the cells' local projects (setuptools writes one into the
    project when uv reads a ``setup.py`` project's metadata)."""
    folders = {root / folder for plan in plans for folder in plan.local_projects}
    return {
        p for folder in folders if folder.is_dir() for p in (*folder.glob("*.egg-info"), *folder.glob("src/*.egg-info"))
    }


def _remove_new(root: Path, before: set[Path], plans: Sequence[Plan]) -> None:
    """Remove the ``*.egg-info`` folders the run's builds left in local projects (issue 17: a
    resolution leaves nothing in the project); those that were there before stay. Run when every
    uv process of the run has ended (a cell's cleanup could pull one from under another's build)."""
    import shutil

    for path in sorted(_egg_info(root, plans) - before):
        log.debug("removing %s, left by a build", path.relative_to(root))
        shutil.rmtree(path, ignore_errors=True)


def _holders(project: Project, plans: Sequence[Plan], mirrors: Mirrors) -> Held:
    """For the change report: what holds each ``--upgrade-package`` that kept its version, per
    cell (:mod:`lockgen.resolve.holdback`); a failure of that look-up is logged, never raised."""
    from packaging.version import InvalidVersion, Version

    from lockgen.plan.render import LineMap, environment
    from lockgen.resolve.holdback import holder

    by_cell = {p.cell.name: p for p in plans}
    lines = LineMap(environment(project.config, project.template_overlay()), project.config.templates)

    def held(name: str, kept: Mapping[str, str]) -> dict[str, str]:
        found = {}
        for cell, version in kept.items():
            try:
                why = holder(project.config, lines, by_cell[cell], name, Version(version), mirrors)
            except (KeyError, InvalidVersion):
                continue
            except Exception:  # a bug in an explanation must not fail a run that locked
                log.debug("could not say what holds %s in %s", name, cell, exc_info=True)
                continue
            if why:
                found[cell] = why
        return found

    return held


def _plan_all(
    project: Project, chosen: Sequence[Cell], stamp_it: bool = True, every: list[Plan] | None = None
) -> list[Plan]:
    """Plans of the ``chosen`` cells; all cells when they plan, to refresh the no-op stamp
    (unless not ``stamp_it``: a staged run plans files that are not on disk). A problem in a
    cell that was not chosen (a template error, or a per-cell config problem such as a
    placeholder that cell lacks) does not stop locking the chosen ones. The digests of local
    inputs hashed meanwhile are kept for the next run (:mod:`lockgen.plan.content`)."""
    from lockgen.plan.content import Digests
    from lockgen.runtime.errors import ConfigError, TemplateError

    digests = Digests(project.root)
    try:
        everything = project.plans(project.cells, digests)
    except (TemplateError, ConfigError):
        found = project.plans(chosen, digests)  # report only the selected cells' problems
        if every is not None:
            every.extend(found)
        return found
    finally:
        digests.save()
    if every is not None:
        every.extend(everything)
    names = {c.name for c in chosen}
    if not stamp_it:
        return [p for p in everything if p.cell.name in names]
    config = project.config
    folders = sorted(
        {s.local for s in config.sources.values() if s.local} | {f for p in everything for f in p.local_files}
    )
    files = sorted({f for p in everything for f in p.read_files} | project.read_files())  # issue 9
    key = stamp.key(project.root, config.source, config.templates, folders, files=files, digests=digests)
    digests.save()
    memo = stamp.Memo(config.locks, project.rows(everything), project.detect_rules())
    stamp.write(project.root, key, config.templates, memo, folders, files)
    return [p for p in everything if p.cell.name in names]


def _configured_urls(plans: Sequence[Plan]) -> dict[str, str]:
    """Every canonical URL the plans' config names, and what names it (for messages)."""
    named: dict[str, str] = {}
    for plan in plans:
        named.setdefault(plan.index_url, "index-url")
        for link in plan.find_links:
            named.setdefault(link, "find-links")
        for source in plan.sources:
            for url in source.urls:
                named[url] = f"source {source.name!r}"
    return {url: what for url, what in named.items() if url}


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
    for down in reach.down.values():  # the mirror's URL, which the cells' (committed) reasons leave out
        said = down.warning()
        if said is not None:
            log.warning("%s", said)
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
    out: Path,
    step: _CoverageStep | None = None,
    every: Sequence[Plan] = (),
) -> dict[str, str]:
    """Resolve ``todo`` concurrently, in matrix order, ``jobs`` cells at once, writing each
    cell's files under ``out`` (the project root, or a stage), each cell's GPU wheels read for
    kernel coverage by ``step`` on its thread as it finishes; returns ``{cell: reason}`` of
    the failed cells. Unless ``online``, uv goes through the run's page cache and
    cells resolve offline where this run's pages cover them (:mod:`lockgen.resolve.freshness`);
    no cell waits for another. Then, unless interrupted or upgrading every package, the harmonizing pass
    (:func:`_harmonize`) weighs the versions of ``every`` cell and resolves again the cells of
    ``todo`` it moves, preferring the versions it chose."""
    from lockgen.resolve import freshness
    from lockgen.resolve.cellrun import CellRun, read_committed
    from lockgen.resolve.provenance import Provenance

    failed: dict[str, str] = {}
    if not todo:
        return failed
    uv.uv_binary()  # look it up once, before the workers (uv's own finder is not thread-safe)
    runner = uv.Runner()
    uv_options = replace_refresh(options)
    plans = [p for p, _ in todo]
    with trace.span("committed"):
        locked, built = read_committed(project.root, plans)
    with trace.span("page cache"):
        fresh = None if options.online else freshness.start(plans, mirrors, locked)
    states = {p.cell.name: s for p, s in todo}
    provenance = Provenance(project.root, mirrors)  # publishers (PEP 740): shared by the cells
    gate, gate_pages = _gate(project, mirrors, fresh)

    def work(plan: Plan) -> CellResult:
        if runner.stopped.is_set():  # taken from the queue as the run was interrupted
            return CellResult(plan.cell.name, CellState.INTERRUPTED, message="not started")
        cell_run = CellRun(  # what a cell learns (its builds) is its own: cells are independent (issue 17)
            project.root, plan, uv_options, mirrors, runner, project.config.source,
            locked=locked.get(plan.cell.name), reach=reach, verified=verified, provenance=provenance,
            hint=built.get(plan.cell.name, frozenset()), gate=gate,
        )  # fmt: skip
        result = _resolve_one(cell_run, fresh, states[plan.cell.name], reporter, out)
        if step is not None and result.state in (CellState.LOCKED, CellState.UNCHANGED):
            step.beside(plan.cell.name, out, runner.stopped)
        return result

    for plan in plans:
        reporter.update(CellResult(plan.cell.name, CellState.WAITING))
    futures = _start(work, plans, options.jobs or default_jobs(len(plans)))
    pending = set(futures)
    try:
        _collect(pending, run, reporter, failed)
        if not options.uv.upgrade and not runner.stopped.is_set():
            with trace.span("harmonize"):
                try:
                    again = _harmonize(project, every or plans, plans, options, run, fresh, locked, out)
                except Exception:  # a bug in the explanation must not fail a run that locked
                    log.warning("could not weigh the differences across cells; nothing harmonized (-v shows why)")
                    log.debug("harmonizing failed", exc_info=True)
                    again, run.differences = {}, None
            if again:
                redo = [p for p in plans if p.cell.name in again and p.cell.name not in failed]
                states.update({p.cell.name: CellState.STALE for p in redo})  # their new lock is preferred
                futures = _start(work, redo, options.jobs or default_jobs(len(redo)))
                pending = set(futures)
                first = {r.name: r for r in run.results}
                second = RunResult()
                _collect(pending, second, reporter, {})
                _merge_second(run, first, second, again)
                try:
                    run.differences = _explained(project, every or plans, options, fresh, out, again)
                except Exception:
                    log.warning("could not explain the differences across cells after harmonizing (-v shows why)")
                    log.debug("explaining the differences failed", exc_info=True)
                    run.differences = None
    except KeyboardInterrupt:
        for future in pending:
            future.cancel()  # queued cells first: none starts now
        runner.stop()  # uv ended; lockgen's own downloads stop at their next chunk
        wait(pending, timeout=_GRACE)
        reported = {r.name for r in run.results}  # in the harmonizing pass: the first pass's cells
        for future in pending:
            result = _stopped(future, futures[future])
            if result.name in reported:  # one row per cell: the interruption replaces the first pass's
                run.results = [result if r.name == result.name else r for r in run.results]
                reporter.update(result)
            else:
                _finish(run, reporter, result, failed)
    finally:
        if fresh is not None:
            fresh.close()
        provenance.close()
        gate_pages.close()
    return failed


def _gate(project: Project, mirrors: Mirrors, fresh: Freshness | None) -> tuple[Gate, PageReader]:
    """The run's lock-time gate (:mod:`lockgen.resolve.gate`): PEP 792 statuses of the index
    pages (as the run's page cache fetched them for uv, else read once per run through
    ``mirrors``) and, when ``[audit] osv`` names a source, its malicious-package entries;
    ``[audit] ignore`` exempts. Raises :class:`~lockgen.osv.AuditFailed` when the configured
    export does not exist."""
    from lockgen import osv
    from lockgen.index.pages import PageReader, Status
    from lockgen.resolve.gate import Gate

    settings = project.config.audit
    source = osv.open_source(settings.osv, project.root, mirrors) if settings.osv else None
    reader = PageReader(mirrors)

    def status(url: str) -> Status:
        cached = fresh.pages.status(mirrors.fetch_url(url)) if fresh is not None else None
        if cached is not None:
            return cached
        page = reader.page(url)
        return page.status if page.error is None else Status()

    return Gate(source, status, settings.ignore), reader


def _evidence(fresh: Freshness | None) -> Any:
    """The page evidence of :mod:`lockgen.run.harmonize` from the run's page cache, each page
    parsed once; None without a page cache (``--online``): no page evidence."""
    if fresh is None:
        return None
    from lockgen.resolve.releases import releases, version_map

    seen: dict[tuple[str, str], Any] = {}
    lock = threading.Lock()

    def evidence(plan: Plan, name: str) -> Any:
        if any(name in source.packages for source in plan.sources):
            return {}  # locked from a source of its own, not the index page read here: no evidence
        index = fresh.base.fetch_url(plan.index_url).rstrip("/")
        key = (index, name)
        with lock:
            found = seen.get(key)
        if found is None:
            try:
                found = version_map(releases(fresh.pages, index, name))
            except Exception:  # evidence, never a failed run
                log.debug("could not read the page of %s", name, exc_info=True)
                found = {}
            with lock:
                seen[key] = found
        return found

    return evidence


def _versions(out: Path, plans: Sequence[Plan]) -> dict[str, dict[str, str]]:
    """``{cell: {name: version}}`` of the cells' ``pylock.toml`` files under ``out``."""
    from lockgen.resolve.cellrun import committed

    return committed(out, plans)


def _harmonize(
    project: Project,
    every: Sequence[Plan],
    resolved: Sequence[Plan],
    options: RunOptions,
    run: RunResult,
    fresh: Freshness | None,
    locked: dict[str, dict[str, str]],
    out: Path,
) -> dict[str, dict[str, str]]:
    """The cells of ``resolved`` to resolve again and the versions to prefer there
    (:func:`lockgen.run.harmonize.moves`; the preferences are put into ``locked``, which the
    cells' work reads); sets ``run.differences`` to the explained differences as they are now."""
    from lockgen.run.harmonize import explain, moves

    by_cell = {p.cell.name: p for p in every}
    evidence = _evidence(fresh)
    now = _versions(out, every)
    differences = explain(now, by_cell, evidence)
    run.differences = differences
    movable = {p.cell.name for p in resolved} - {r.name for r in run.results if r.state is CellState.FAILED}
    from packaging.utils import canonicalize_name

    upgrade = {canonicalize_name(n) for n in options.uv.upgrade_packages}
    wanted = moves(differences, project.config.harmonize, by_cell, movable, evidence, upgrade)
    for cell, prefer in wanted.items():  # what the first pass locked, and the versions chosen
        locked[cell] = {**now.get(cell, {}), **prefer}
    return wanted


def _explained(
    project: Project,
    every: Sequence[Plan],
    options: RunOptions,
    fresh: Freshness | None,
    out: Path,
    asked: Mapping[str, Mapping[str, str]],
) -> Any:
    """The differences after the harmonizing pass: a cell uv did not move to the version it was
    asked to prefer is ``held`` there."""
    from lockgen.run.harmonize import explain

    now = _versions(out, every)
    held = {
        (cell, name): f"uv kept {now.get(cell, {}).get(name, '?')} when asked to prefer {version}: "
        "the cell's other requirements hold it"
        for cell, prefer in asked.items()
        for name, version in prefer.items()
        if now.get(cell, {}).get(name) != version
    }
    return explain(now, {p.cell.name: p for p in every}, _evidence(fresh), held)


def _merge_second(
    run: RunResult, first: Mapping[str, CellResult], second: RunResult, asked: Mapping[str, Mapping[str, str]]
) -> None:
    """Fold the harmonizing pass's results into the run's: a cell it changed is ``locked``; one
    it failed keeps the first pass's files and result, with a note (its lock is valid)."""
    for result in second.results:
        before = first.get(result.name)
        if before is None:
            continue
        moved = ", ".join(f"{name} {version}" for name, version in asked.get(result.name, {}).items())
        if result.state is CellState.FAILED:
            merged = replace(
                before,
                message="; ".join(filter(None, [before.message, f"harmonizing to {moved} failed: {result.message}"])),
            )
        elif result.state in (CellState.LOCKED, CellState.UNCHANGED):
            state = CellState.LOCKED if CellState.LOCKED in (before.state, result.state) else result.state
            merged = replace(
                result,
                state=state,
                seconds=before.seconds + result.seconds,
                message="; ".join(filter(None, [result.message, f"harmonized: preferred {moved}"])),
            )
        else:
            merged = before
        run.results[run.results.index(before)] = merged


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


def _resolve_one(
    cell_run: CellRun, fresh: Freshness | None, found: CellState, reporter: Reporter, out: Path
) -> CellResult:
    """Resolve one cell and write its files together under ``out``; every outcome is a :class:`CellResult`
    (a crash in one cell must not take the others down; a hand-edited lock's pins are not
    preferred)."""
    from lockgen.resolve.pipeline import resolve_cell

    plan = cell_run.plan
    reporter.update(CellResult(plan.cell.name, CellState.RESOLVING))
    start = time.monotonic()
    trace.cell(plan.cell.name)
    try:
        with trace.span("cell"):
            files = resolve_cell(cell_run, fresh, prefer=found is not CellState.EDITED)
        if cell_run.stop is not None and cell_run.stop.is_set():  # finished after Ctrl-C: not written
            return CellResult(plan.cell.name, CellState.INTERRUPTED, time.monotonic() - start)
        with trace.span("write"):
            changed = journal.replace_files(out, plan.cell.name, files.texts(), _stale_layers(out, plan, files))
    except Interrupted:
        return CellResult(plan.cell.name, CellState.INTERRUPTED, time.monotonic() - start)
    except LockgenError as exc:
        return CellResult(plan.cell.name, CellState.FAILED, time.monotonic() - start, str(exc))
    except Exception as exc:  # a bug or an OS error must not take the other cells down
        log.debug("cell %s crashed", plan.cell.name, exc_info=True)
        message = f"cell {plan.cell.name}: {type(exc).__name__}: {exc} (-v shows the traceback)"
        return CellResult(plan.cell.name, CellState.FAILED, time.monotonic() - start, message)
    finally:
        trace.cell("")
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


def _remove_orphans(project: Project, run: RunResult, reporter: Reporter, out: Path) -> None:
    """A full run owns the locks folder: drop locks of cells the matrix no longer resolves
    (under ``out``: the project root, or a stage)."""
    resolved = {c.name for c in project.cells if c.resolves}
    for cell, paths in orphan_cells(out, project.config.locks, resolved).items():
        journal.remove_cell(out, cell, paths)
        message = f"its cell is not resolved by the matrix any more; removed {', '.join(paths)}"
        _report(run, reporter, CellResult(cell, CellState.REMOVED, message=message))


def _write_manifest(
    project: Project,
    failed: dict[str, str],
    run: RunResult,
    shard: Shard | None = None,
    cells: Sequence[str] = (),
    out: Path | None = None,
    mirrors: Mirrors | None = None,
    plans: Sequence[Plan] = (),
    step: _CoverageStep | None = None,
) -> bool:
    """Write the manifest under ``out`` (default: the project root; a shard run: the shard
    manifest of its ``cells``); a failure to write it is reported, not raised: every cell's
    result is still printed (issue 8).

    The manifest describes the locks, not the run (issue 16): a cell whose lock is current and
    intact stays ``locked`` though this run failed to re-resolve it (a network blip under
    ``--force``); ``failed`` is for a cell without such a lock. The run still fails and says so.

    Returns whether Ctrl-C stopped the kernel-coverage step (the manifest is written all the same,
    that coverage recorded as incomplete: :func:`_coverage`)."""
    from lockgen.locks.shard import shard_manifest_text

    where = manifest.manifest_path(project.config.locks)
    out = out or project.root
    path = out / where
    previous = manifest.failures(manifest.read(path))
    kept = {name: why for name, why in previous.items() if name not in {r.name for r in run.results} or name in failed}
    recorded = {**kept, **failed}
    current = set(current_locks(project, recorded, plans, root=out))
    gated = sorted(name for name in current & set(failed) if "lock-time gate" in failed[name])
    kept_cells = sorted(current & set(failed) - set(gated))
    if kept_cells:
        run.report.append(
            f"kept: {', '.join(kept_cells)} failed to re-resolve, but {'their locks are' if len(kept_cells) > 1 else 'its lock is'} "
            "current and intact: the manifest lists them as locked, installable as before"
        )
    if gated:
        run.report.append(
            f"kept: {', '.join(gated)}: the lock-time gate refused what a re-resolution would lock; the committed "
            f"{'locks stay' if len(gated) > 1 else 'lock stays'} as written, not re-checked: run lockgen audit to see "
            "whether they hold the refused release (it names the fix)"
        )
    recorded = {name: why for name, why in recorded.items() if name not in current}
    try:
        if shard is not None:
            coverage = _coverage(project, mirrors, run, cells, root=out, step=step)
            journal.replace_files(
                out, "manifest", {where: shard_manifest_text(project, cells, recorded, shard, coverage)}
            )
            return bool(step and step.stopped)
        text = project.manifest_text(recorded, out, _coverage(project, mirrors, run, root=out, step=step))
        journal.replace_files(out, "manifest", {where: text})
    except LockgenError as exc:
        run.manifest_error = str(exc)
    return bool(step and step.stopped)


class _CoverageStep:
    """How a run reads kernel coverage (docs/select.md, "Kernel coverage"): on or off
    (``--no-coverage``, ``[coverage] read = false``), one :class:`~lockgen.wheels.reading.Budget`
    for the run (the options over the config), one reader shared by the cells' threads (each cell's
    wheels are read :meth:`beside` it, as it finishes; the manifest step then finds them in the
    cache), progress through the reporter's ``coverage`` (when it has one), and ``stopped``:
    Ctrl-C came while the manifest step read."""

    def __init__(self, project: Project, mirrors: Mirrors | None, options: RunOptions, reporter: Reporter) -> None:
        from lockgen.wheels.reading import Budget

        config = project.config.coverage
        self.project, self.mirrors, self.reporter, self.stopped = project, mirrors, reporter, False
        self.mb = options.coverage_mb if options.coverage_mb is not None else config.budget_mb
        self.seconds = options.coverage_seconds if options.coverage_seconds is not None else config.budget_seconds
        self.on = options.coverage and config.read and mirrors is not None
        self.budget = Budget(self.mb * 1_000_000, self.seconds)
        self._reader: Any = None
        self._lock = threading.Lock()

    def reader(self, stop: threading.Event | None = None) -> Any:
        from lockgen.wheels.reading import Reader

        with self._lock:
            if self._reader is None:
                self._reader = Reader(self.project.root, self.mirrors, stop=stop, budget=self.budget,
                                      progress=self.progress)  # fmt: skip
            return self._reader

    def read(self, wheels: Sequence[Any]) -> Any:
        """What :meth:`lockgen.project.Project.coverage` reads with: the reader, warning of each
        wheel that could not be read (not of those past the budget: one warning says that)."""
        done = self.reader()(wheels)
        for wheel in wheels:
            reason = done.unread.get(wheel.sha256)
            if reason is not None and not reason.startswith("not measured"):
                log.warning("kernel coverage of %s %s not read: %s", wheel.name, wheel.version, reason)
        return done

    def beside(self, cell: str, root: Path, stop: threading.Event) -> None:
        """Read the GPU wheels of ``cell``, just locked under ``root``, into the cache, on the
        cell's own thread while other cells resolve. Best effort: anything that goes wrong here
        is met again (and reported) by the manifest step."""
        if not self.on or stop.is_set():
            return
        try:
            self.reader(stop)
            with trace.span("coverage"):
                self.project.coverage(self.read, names=[cell], root=root)
        except Exception as exc:  # Interrupted, an unreadable lock: the manifest step says so
            log.debug("kernel coverage of %s beside the cells: %s", cell, exc)

    def progress(self, done: int, fetched: int, wheel: str) -> None:
        show = getattr(self.reporter, "coverage", None)
        if show is not None:
            show(done, fetched, wheel)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.__exit__(None, None, None)
            self._reader = None


def _coverage(
    project: Project,
    mirrors: Mirrors | None,
    run: RunResult,
    names: Sequence[str] | None = None,
    root: Path | None = None,
    step: _CoverageStep | None = None,
) -> dict[str, Any] | None:
    """The GPU cells' kernel coverage (:mod:`lockgen.wheels.cells`): carried while their GPU
    wheels are the same, else read from the wheels (range requests through the mirrors, cached
    by sha256; most were read beside their cells already); a wheel that cannot be read is
    recorded as unread and warned about, never a failed cell. An interrupted run reads nothing.
    With the step off (``--no-coverage``) records are only carried; past its budget the wheels
    left are "not measured: budget"; Ctrl-C while reading marks the wheels left "not measured:
    interrupted" and the records are still returned (``step.stopped``), so the manifest of the
    locks written is written."""
    if mirrors is None or run.interrupted:
        if step is not None:
            step.close()  # the reader the cells used
        return None
    from lockgen.wheels.reading import BUDGET

    step = step or _CoverageStep(project, mirrors, RunOptions(), SILENT)
    if not step.on:
        with trace.span("coverage"):
            return project.coverage(None, names=names, root=root)
    reader = step.reader()
    try:
        with trace.span("coverage"):
            try:
                records = project.coverage(step.read, names=names, root=root)
            except KeyboardInterrupt:  # the manifest of the locks written comes first
                step.stopped = reader.interrupt = True
                records = project.coverage(step.read, names=names, root=root)
            except Exception as exc:  # a bug in a reader must not cost the run its manifest
                log.warning("kernel coverage not read (%s: %s); the manifest keeps the records it has",
                            type(exc).__name__, exc, exc_info=log.isEnabledFor(logging.DEBUG))  # fmt: skip
                records = project.coverage(None, names=names, root=root)
    finally:
        step.close()
    if step.budget.spent() and not step.stopped:
        log.warning("kernel coverage: the budget (%d MB, %.0f s) is spent; the wheels left are recorded '%s' "
                    "(raise [coverage] budget-mb or budget-seconds, or --coverage-budget)",
                    step.mb, step.seconds, BUDGET)  # fmt: skip
    if reader.fetched:
        log.info("read the GPU code of the cells' wheels: %.0f MB", reader.fetched / 1e6)
    _warn_unloadable(records)
    return records


def _warn_unloadable(records: dict[str, Any]) -> None:
    """Warn once per wheel none of whose GPU code can load in its cell: each of its objects is
    linked against a GPU runtime the cell does not install (docs/select.md, "Code that cannot load")."""
    seen: set[tuple[str, str, str]] = set()
    for record in records.values():
        have = set(record.get("runtimes", []))
        for part in [record, *record.get("layers", [])]:
            for wheel in part.get("wheels", []):
                groups = wheel.get("linked", [])
                if not groups or any(set(g.get("needs", ())) <= have for g in groups):
                    continue
                missing = sorted({n for g in groups for n in g.get("needs", ()) if n not in have})
                key = (wheel["name"], wheel["version"], ", ".join(missing))
                if key not in seen:
                    seen.add(key)
                    log.warning("%s %s: its GPU code is linked against %s, which its cells do not install "
                                "(they have %s): it cannot load there", wheel["name"], wheel["version"],
                                key[2], ", ".join(sorted(have)) or "no GPU runtime")  # fmt: skip


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
    journal.settle_project(start, config_path)  # before the no-op check reads anything
    if not options.refresh and not options.retry_unavailable and options.shard is None:
        run = up_to_date(start, config_path, names, only)
        if run is not None:
            reporter.start([r.name for r in run.results])
            for result in run.results:
                reporter.update(result)
            reporter.finish(run)
            return run
    return lock(Project.load(start, config_path), names, only, options, reporter)


def dry_run(
    start: Path,
    config_path: str | None,
    names: Sequence[str] = (),
    only: Sequence[str] = (),
    options: RunOptions = RunOptions(),
    reporter: Reporter = SILENT,
) -> RunResult:
    """``lockgen all --dry-run`` / ``lock --dry-run``: resolve what :func:`lock` would, writing
    every lock file and the manifest to a stage in lockgen's work folder
    (:mod:`lockgen.locks.stage`), never into the project; ``RunResult.would_write`` lists the
    project files the run would write or remove. Holds the run lock (the work folder is shared);
    refuses when a killed run left a journal (finishing it would write). From the command line the
    entry settles such a journal first (:func:`lockgen.locks.journal.settle`, for every command),
    so the refusal is met only by a caller of this function."""
    from lockgen.locks.stage import Stage

    if options.shard is not None:
        raise UsageError("--dry-run does not take --shard: try lockgen lock CELL… --dry-run for the cells of a shard")
    mirror.parse(options.mirrors)
    project = Project.load(start, config_path)
    root = project.root
    with store.ProjectLock(root, wait=options.wait):
        journals = journal.pending(root)
        if journals:
            raise UsageError(
                f"a killed run left {', '.join(journals)} half-written; run `lockgen all` to finish it first"
            )
        stage = Stage.create(root, project.config.locks)
        try:
            run = lock(project, names, only, options, reporter, stage=stage)
            written, removed = stage.changes()
        finally:
            stage.discard()
    run.would_write = [*written, *removed]
    return run
