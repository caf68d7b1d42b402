"""One cell's resolution, top to bottom: the only module that runs its steps, each once, in order.

::

    1 inputs      inputs.write_main(plan)            -> Inputs      the files uv reads (.lockgen/<cell>/)
    2 uv argv     uv.compile_argv/compile_env(Inputs) -> argv, env  pure
    3 run uv      runner.run(argv, env)              -> Result      lockgen.resolve.uv.Runner (a test: a recording)
    4 parse       parse.read_pylock(output)          -> Pylock      target-only, canonical URLs
                  + the newer levels' wheels (newer.request -> uv -> parse.read_wheels -> newer.merged)
                  + its entries (describe.request -> uv -> describe.resolved)  -> Resolved
    5 verify      hashcheck.check, verify.problems(Resolved)        -> Checked, or the cell fails
                  (sources judged by the index uv named for each package: lockgen.plan.identity)
    6 layers      layers.jobs(Resolved) -> each job through steps 1-5 -> Built
    7 invariants  invariants.problems(main + layer packages)        -> the cell fails on a mix (C27)
    7b publishers provenance.attach(Pylock)                         -> Pylock with attestation-identities
    7c gate       gate.check(main + layer packages)                 -> the cell fails on a malicious or
                  quarantined release; archived/deprecated projects are notes
    8 files       files.cell_files(Resolved, Checked, Built)        -> CellFiles (written by lockgen.locks.store)

Per cell, one resolution: ``uv pip compile --format pylock.toml`` (the committed
``locks/<cell>/pylock.toml`` is handed to uv as its output file, so uv prefers the versions already
locked, as pip-compile does). From that one run come the versions, and per package the artifacts
the target may install, with hashes (:mod:`lockgen.locks.pylockfile`). A second uv process
renders the same versions, pinned exactly and offline, as a requirements file
(:mod:`lockgen.resolve.describe`): it only adds the extras a package was asked for (pip 23.2 needs
them on the locked line, CASES C19) and ``# via`` annotations. It costs ~50 ms against ~2.5 s for
a resolution (docs/benchmarks.md). The other modules of the stage decide (what to write, what an
output means); only this one sequences them, and none of them calls back into an earlier step.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from packaging.pylock import Pylock
from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.locks import pylockfile
from lockgen.locks.lock import Unavailable
from lockgen.plan.plan import Plan
from lockgen.resolve import describe, hashcheck, hints, inputs, invariants, layers, newer, offers, uv, uvout, verify
from lockgen.resolve.cellrun import Builds, CellRun
from lockgen.resolve.describe import Resolved
from lockgen.resolve.files import CellFiles, cell_files
from lockgen.resolve.freshness import OFFLINE, ONLINE, Freshness
from lockgen.resolve.inputs import Inputs
from lockgen.resolve.layers import Built, Job, LayerUnavailable
from lockgen.resolve.parse import read_pylock, read_wheels
from lockgen.runtime import trace
from lockgen.runtime.errors import CellFailed, LockgenError
from lockgen.runtime.words import cut

__all__ = ["CellFiles", "CellRun", "Resolution", "ask", "refused_path", "resolve_cell", "resolve_layers"]

log = logging.getLogger("lockgen")


@dataclass(frozen=True)
class Resolution:
    """The main resolution as uv gave it (steps 2-4): the pylock, whether it ran ``offline`` or
    ``online`` (:mod:`lockgen.resolve.freshness`) and uv's warnings (canonical URLs)."""

    pylock: Pylock
    mode: str
    warnings: tuple[str, ...]


def resolve_cell(run: CellRun, fresh: Freshness | None = None, prefer: bool = True) -> CellFiles:
    """Resolve, verify and lay out ``run.plan``'s files (nothing is written to the locks folder).

    The committed ``pylock.toml`` is uv's preference (not with ``prefer=False``: a hand-edited
    lock). With ``fresh``, uv goes through the run's page cache and may resolve offline
    (:mod:`lockgen.resolve.freshness`); a cell that fails while the cache saw upstream trouble is
    resolved again without it. Raises :class:`CellFailed` with uv's explanation, or with the
    verify problems; :class:`~lockgen.runtime.errors.Interrupted` when the run is stopped.
    """
    if fresh is None:
        return _resolve(run, None, prefer)
    try:
        return _resolve(replace(run, mirrors=fresh.mirrors), fresh, prefer)
    except CellFailed:
        if not fresh.retry_direct():
            raise
        log.info("cell %s failed through lockgen's page cache; resolving it again without it", run.plan.cell.name)
        return _resolve(replace(run, mirrors=fresh.base), None, prefer)


def _resolve(run: CellRun, fresh: Freshness | None, prefer: bool) -> CellFiles:
    plan = run.plan
    (run.root / refused_path(plan)).unlink(missing_ok=True)  # the last run's refusal no longer holds
    _refuse_project_uv_settings(run)
    with trace.span("inputs"):
        given = inputs.write_main(run.root, plan, run.mirrors, refresh=run.options.refresh, stop=run.stop)  # 1
    with trace.span("main") as detail:
        main = _main(run, given, fresh, prefer)  # 2-4
        detail["mode"] = main.mode
    with trace.span("newer"):
        pylock = _with_newer_wheels(run, main.pylock, given, "main")
    with trace.span("describe"):
        resolved = _described(run, given, pylock, "main")
    with trace.span("verify"):
        checked = _verified(run, resolved, main=True)  # 5
    with trace.span("layers"):
        built = resolve_layers(run, resolved)  # 6
    with trace.span("invariants"):
        notes = _invariants(run, pylock, built, resolved)  # 7
    if run.gate is not None:  # 7c
        with trace.span("gate"):
            notes = (*notes, *_gated(run, pylock, built))
    if run.provenance is not None:  # 7b: who published each main file (PEP 740), where the index says
        indexes = [plan.inputs.index_url, *plan.inputs.explicit_indexes.values()]
        with trace.span("provenance"):
            resolved = replace(resolved, pylock=run.provenance.attach(resolved.pylock, indexes))
    with trace.span("files"):
        return cell_files(  # 8
            run, resolved, checked, built, mode=main.mode, warned=main.warnings, prefer=prefer, notes=notes
        )


def _refuse_project_uv_settings(run: CellRun) -> None:
    """Before uv runs: a local project requirement whose ``pyproject.toml`` sends packages to
    its own indexes or URLs (``[tool.uv.sources]``, which uv reads when it builds the project)
    would bring them into the lock unannounced; the cell fails naming each entry and what to do
    (:mod:`lockgen.plan.uvtables`)."""
    from lockgen.plan import uvtables

    plan = run.plan
    found = uvtables.brought(run.root, plan.local_projects)
    if found:
        raise CellFailed(
            f"cell {plan.cell.name}: a local project requirement brings its own uv settings, which uv reads when it "
            "builds the project, whatever lockgen's config says:\n"
            + "\n".join(f"  - {line}" for line in found)
            + "\n  declare each index in lockgen's config as a source (a [tool.lockgen.sources.<name>] table with "
            "index = URL and packages = [...], in the cells' `use`) and remove the entries from the project's "
            "[tool.uv.sources], or require the packages from the index lockgen uses; nothing was locked from them"
        )


# -- step 7c: the lock-time gate


def _gated(run: CellRun, pylock: Pylock, built: Built) -> tuple[str, ...]:
    """Fail the cell when the gate refuses a package that main or a required layer would install
    (a malicious-package entry, a quarantined project); an optional layer that would install one
    is taken out as unavailable (optional never fails the cell). Returns the warnings (archived,
    deprecated, exempted) for the summary."""
    assert run.gate is not None
    plan = run.plan
    try:
        found = run.gate.check(
            [*pylock.packages, *built.packages], [plan.inputs.index_url, *plan.inputs.explicit_indexes.values()]
        )
    except LockgenError as exc:  # the [audit] osv source could not be read
        raise CellFailed(
            f"cell {plan.cell.name}: the lock-time gate could not ask the [audit] osv source: {exc}\n"
            "lockgen: nothing was locked; fix the source, or remove [audit] osv to lock without the malware check"
        ) from None
    refused = {f.name: f for f in found if f.refuse and f.ignored is None}
    optional = {name: packages for name, (entry, packages) in built.installs.items() if entry is not None}
    needed = {p.name for p in pylock.packages} | {
        p.name for name, (_, packages) in built.installs.items() if name not in optional for p in packages
    }
    fatal = [f for name, f in refused.items() if name in needed]
    if fatal:
        raise CellFailed(
            f"cell {plan.cell.name}: the lock would install a release the lock-time gate refuses:\n"
            + "\n".join(f"  - {f.line()}" for f in fatal)
            + "\nlockgen: pin another version or drop what pulls it in (lockgen why NAME --cell "
            + f"{plan.cell.name}); an [audit] ignore entry naming the id, with a reason and an until date, exempts it"
        )
    for name, packages in optional.items():
        bad = [refused[p.name] for p in packages if p.name in refused]
        if bad:
            entry = built.installs[name][0] or name
            why = cut("; ".join(f.line() for f in bad), layers.REASON_CHARS)
            built.withdraw(name, Unavailable(requirement=entry, reason=f"the lock-time gate refuses it: {why}"))
    return tuple(f"gate: {f.line()}" for f in found if not (f.refuse and f.ignored is None))


# -- step 7: the backend invariants


def refused_path(plan: Plan) -> str:
    """Where the main resolution a cell's backend invariants refused is kept (project-relative,
    in the cell's work folder, never in the locks folder): its entries as lock lines, with their
    ``# via``, for ``lockgen why NAME CELL`` after the cell failed. Removed when the cell resolves
    again."""
    return f"{plan.work}/refused-main.txt"


def _invariants(run: CellRun, pylock: Pylock, built: Built, resolved: Resolved) -> tuple[str, ...]:
    """Check the backend invariants (C27) of what the cell installs: main and the no-deps layer
    must keep them, or the cell fails (its refused resolution kept at :func:`refused_path`, and
    the packages of a GPU family in a cell of none traced to the requirement that pulled them
    in: :func:`invariants.pulled_in`); an optional layer that breaks them (with main) is taken out
    of ``built`` as unavailable, with the reason (issue 17: an optional layer never fails the
    cell). Returns the label warnings for the summary (labels the grammar cannot read)."""
    plan = run.plan
    optional = {name: packages for name, (entry, packages) in built.installs.items() if entry is not None}
    required = [p for name, (_, packages) in built.installs.items() if name not in optional for p in packages]
    allow = plan.cell.settings.allow_mix
    mixed = invariants.problems(plan.flavor, [*pylock.packages, *required], plan.backends, allow)
    if mixed:
        text = "".join(f"{line}\n" for entry in resolved.entries for line in entry.lines())
        run.write(
            refused_path(plan), f"# cell {plan.cell.name}: the main resolution its backend invariants refused\n{text}"
        )
        pulled = invariants.pulled_in(plan.flavor, mixed, resolved.entries, plan.backends)
        raise CellFailed(
            f"cell {plan.cell.name}: the lock would install a broken {plan.flavor} stack (backend invariants, C27):\n"
            + (f"{pulled}\n" if pulled else "")
            + "\n".join(f"  - {line}" for line in invariants.render(mixed))
            + '\n  declare an intended mix with allow-mix = { "<package>" = "why" } in the cell\'s settings'
            + f"\n  `lockgen why NAME {plan.cell.name}` shows what brought a package into this refused resolution"
        )
    for name, packages in optional.items():
        found = invariants.problems(plan.flavor, [*pylock.packages, *required, *packages], plan.backends, allow)
        if found:
            entry = built.installs[name][0] or name
            built.withdraw(name, layers.broken_stack(plan, entry, found))
    return tuple(invariants.label_warnings([*pylock.packages, *built.packages], plan.backends))


def ask(run: CellRun, output: str, *, no_deps: bool = False) -> uv.Result:
    """One question to uv about ``run.plan``'s inputs, steps 1-3 only: write them, run ``uv pip
    compile`` once (writing ``output``), return its result unread. For ``lockgen bump`` (does a
    version fit a cell, :mod:`lockgen.resolve.fit`) and ``--upgrade-package`` (what holds a
    package back, :mod:`lockgen.resolve.holdback`), each on a plan of its own work folder.
    Raises :class:`CellFailed` when the inputs cannot be written (a ``urls`` source's file)."""
    given = inputs.write_main(run.root, run.plan, run.mirrors, stop=run.stop)
    return _uv(run, output, given, no_deps=no_deps)


# -- steps 2 and 3: the uv command and its run


def _uv(
    run: CellRun,
    output: str,
    given: Inputs,
    *,
    plan: Plan | None = None,
    offline: bool = False,
    fmt: uv.Format = uv.Format.PYLOCK,
    no_deps: bool = False,
    excludes: str | None = None,
) -> uv.Result:
    """One ``uv pip compile`` of ``given`` writing ``output``: the command (pure), run by the
    cell's runner. ``plan``: another target's plan (the newer levels'); the ``allow-build``
    packages this cell learned must be built are built; ``excludes``: packages left out."""
    plan = plan or run.plan
    build = run.builds.names & run.plan.inputs.allow_build
    argv = uv.compile_argv(
        plan, output, run.options, mirrors=run.mirrors, inputs=given, offline=offline, fmt=fmt, no_deps=no_deps,
        no_binary=build, excludes=excludes,
    )  # fmt: skip
    env = uv.compile_env(os.environ, plan) | run.mirrors.uv_env(plan.inputs.explicit_indexes)
    return run.runner.run(argv, env, str(run.root))


def _learning(run: CellRun, output: str, given: Inputs, *, offline: bool = False, no_deps: bool = False) -> uv.Result:
    """:func:`_uv`, wheels first: when uv says an ``allow-build`` package has no wheel in any
    version it may pick, that package is built from source (remembered in ``run.builds``, this
    cell's only: issue 17, cells are independent) and uv runs again (field case C26: an older
    version with a wheel beats a newer sdist-only one; builds only where allowed and needed).
    A package without wheels that ``allow-build`` does not name is left out (uv ``--excludes``)
    and uv runs again, until it names no other: then :class:`NeedsBuilding` names them all, with
    the ``allow-build`` line to copy (issue 17: a project with 8 needed 7 runs). Offline, the
    failure is returned (the online run looks), and nothing is learned from a failure in which uv
    missed something in its cache (a newer version's wheel it could not read offline may be the
    one wheels-first picks: issue 24). Main and layer resolutions go through here."""
    left_out: list[str] = []
    first: uv.Result | None = None
    unusable: dict[NormalizedName, Version] = {}  # the version of each uv could not use, as uv said
    while True:
        excludes = _left_out(run, output, left_out)
        result = _uv(run, output, given, offline=offline, no_deps=no_deps, excludes=excludes)
        unusable = {**uvout.unusable(result.stderr), **unusable}
        if result.returncode == 0 and not left_out:
            return result
        needs = uvout.needs_wheels(result.stderr)
        wanted = {n for n in needs if n in run.plan.inputs.allow_build}
        if offline and uvout.missed_offline(result.stderr):
            break  # a version uv could not read offline may have the wheel: the online run learns
        if not wanted <= run.builds.names:
            run.builds.add(wanted)
            continue
        new = [n for n in needs if n not in run.plan.inputs.allow_build and n not in left_out]
        if new and not offline and result.returncode != 0:
            first = first or result
            left_out += new
            continue
        break
    if left_out and first is not None:
        asked = {n: v for n, v in unusable.items() if n in left_out}
        pythons = offers.other_pythons(run.plan, run.mirrors, asked)  # a pin made for other Pythons
        raise hints.NeedsBuilding(hints.needs_building(run, left_out, first.stderr, pythons))
    return result


def _left_out(run: CellRun, output: str, names: Sequence[str]) -> str | None:
    """The ``--excludes`` file of ``names`` beside ``output`` (None when there are none)."""
    if not names:
        return None
    path = str(PurePosixPath(output).with_name("left-out.txt"))
    run.write(path, "".join(f"{name}\n" for name in sorted(names)))
    return path


# -- steps 2 to 4 of the main resolution, then its newer levels' wheels and its entries


def _main(run: CellRun, given: Inputs, fresh: Freshness | None, prefer: bool) -> Resolution:
    """The cell's one resolution: offline when this run's pages cover it, else online; a yanked
    version kept only because the old lock preferred it is resolved again (issue 8). Raises
    :class:`CellFailed` with uv's explanation and lockgen's hints (:mod:`lockgen.resolve.hints`)."""
    plan = run.plan
    output = f"{plan.work}/{pylockfile.PYLOCK_NAME}"
    upgrading = run.options.upgrade or bool(run.options.upgrade_packages)  # offline would miss new versions' metadata
    if fresh is not None and prefer and not upgrading and fresh.worth_trying(plan):
        inputs.write_preferences(run.root, plan, output, run.locked, prefer)
        result = _learning(run, output, given, offline=True)
        if result.returncode == 0:
            pylock = read_pylock(run, output)
            if fresh.covers(plan, {p.name for p in pylock.packages}) and not uvout.yanked(result.stderr):
                fresh.tried(True)
                return Resolution(pylock, OFFLINE, _warnings(run, result))
        fresh.tried(False)
    hinted = _hinted(run, output, given, fresh, prefer)
    if hinted is None:
        inputs.write_preferences(run.root, plan, output, run.locked, prefer)
    result = hinted if hinted is not None else _learning(run, output, given)
    yanks = [y for y in uvout.yanked(result.stderr) if y.name not in plan.pinned]
    if result.returncode == 0 and yanks:
        names = (*run.options.upgrade_packages, *(y.name for y in yanks))
        result = _learning(replace(run, options=replace(run.options, upgrade_packages=names)), output, given)
    if result.returncode != 0:
        offered = offers.offers(plan, run.mirrors, hints.to_ask(plan, result.stderr))  # what the sources do have
        unbuilt = set(uvout.needs_wheels(result.stderr)) - set(plan.inputs.allow_build)
        asked = {n: v for n, v in uvout.unusable(result.stderr).items() if n in unbuilt}
        pythons = offers.other_pythons(plan, run.mirrors, asked) if asked else {}  # a pin made for other Pythons
        raise CellFailed(hints.explain(run, result.stderr, offered, pythons))
    return Resolution(read_pylock(run, output), ONLINE, _warnings(run, result))


def _hinted(run: CellRun, output: str, given: Inputs, fresh: Freshness | None, prefer: bool) -> uv.Result | None:
    """The online :func:`_learning` of the main resolution, its two uv runs in the other order,
    when the committed lock says which ``allow-build`` packages the cell builds (``run.hint``);
    None when that does not apply or does not hold (then :func:`_learning` runs as always).

    :func:`_learning` first runs uv wheels-only, which fails (``lycoris-lora`` has no wheel), then
    again with those packages built: the first run costs as much as the second online (~40 % of a
    cold cell, issue 24) and decides one thing, that a wheel-only resolution does not exist.
    Here the second run (the same command :func:`_learning` would run second) goes first, online;
    then the wheel-only run, offline, on what it just brought into uv's cache (this run's pages,
    served by the page cache, and immutable wheel metadata), to its own output file seeded with
    the same preferences. Its result is kept only if the wheel-only run fails naming exactly the
    hinted packages as needing a build, as the first online run would: every other outcome (it
    succeeds, it misses something in the cache, it names other packages) falls back to the usual
    order, from scratch. The lock is what :func:`_learning` gives, byte for byte."""
    plan = run.plan
    hint = run.hint & plan.inputs.allow_build
    if not hint or run.builds.names or fresh is None or not prefer:
        return None
    inputs.write_preferences(run.root, plan, output, run.locked, prefer)
    built = replace(run, builds=Builds())
    built.builds.add(hint)
    second = _uv(built, output, given)
    if second.returncode != 0 or not fresh.covers(plan, hint):
        return None
    probe = f"{plan.work}/wheels-only/{pylockfile.PYLOCK_NAME}"
    inputs.write_preferences(run.root, plan, probe, run.locked, prefer)
    first = _uv(run, probe, given, offline=True)
    wanted = {n for n in uvout.needs_wheels(first.stderr) if n in plan.inputs.allow_build}
    if first.returncode == 0 or wanted != hint or uvout.missed_offline(first.stderr):
        log.debug("cell %s: the wheel-only run offline named %s, not %s: usual order", plan.cell.name, wanted, hint)
        return None
    run.builds.add(hint)
    return second


def _warnings(run: CellRun, result: uv.Result) -> tuple[str, ...]:
    return tuple(hints.in_config_terms(run, run.mirrors.canonical(w)) for w in uvout.warnings(result.stderr))


def _with_newer_wheels(run: CellRun, pylock: Pylock, given: Inputs, name: str) -> Pylock:
    """``pylock`` with each package's wheels for newer levels of the cell's arch added
    (:mod:`lockgen.resolve.newer`), from one more uv run: offline, else online. ``name`` names the
    work files (``main``, ``layer-<name>``). Raises :class:`CellFailed` when uv cannot list them."""
    plan = run.plan
    asked = newer.request(plan, pylock, name, given)
    if asked is None:
        return pylock
    run.write(asked.pins, asked.pins_text)
    (run.root / asked.output).unlink(missing_ok=True)
    wide = replace(plan, target=asked.wide)
    result = _uv(run, asked.output, asked.inputs, plan=wide, no_deps=True, offline=True)
    if result.returncode != 0:
        result = _uv(run, asked.output, asked.inputs, plan=wide, no_deps=True)
    if result.returncode != 0:
        why = hints.in_config_terms(run, run.mirrors.canonical(uvout.explain(result.stderr)))
        raise CellFailed(f"cell {plan.cell.name}: uv could not list the wheels of newer {asked.levels} levels:\n{why}")
    return newer.merged(pylock, read_wheels(run, asked.output), plan.target, asked.wide)


def _described(run: CellRun, given: Inputs, pylock: Pylock, name: str, no_deps: bool = False) -> Resolved:
    """The entries of ``pylock``'s resolution (:mod:`lockgen.resolve.describe`): uv renders the
    same versions (pinned exactly; offline, else online) as a requirements file. Raises
    :class:`CellFailed` when uv cannot."""
    asked = describe.request(run.plan, given, pylock, name)
    run.write(asked.pins, asked.pins_text)
    (run.root / asked.output).unlink(missing_ok=True)
    fmt = uv.Format.REQUIREMENTS
    result = _uv(run, asked.output, asked.inputs, offline=True, fmt=fmt, no_deps=no_deps)
    if result.returncode != 0:
        result = _uv(run, asked.output, asked.inputs, fmt=fmt, no_deps=no_deps)
    if result.returncode != 0:
        why = hints.in_config_terms(run, run.mirrors.canonical(uvout.explain(result.stderr)))
        raise CellFailed(f"cell {run.plan.cell.name}: uv could not describe its resolution:\n{why}")
    return describe.resolved(run, asked, given, pylock, run.read(asked.output))


# -- step 5: verify


def _verified(run: CellRun, resolved: Resolved, *, main: bool, layer: str = "") -> hashcheck.Checked:
    """Check the hashes that are cheap to check and every rule of :mod:`lockgen.resolve.verify`
    (a layer: its artifacts; main: its pins too), sources judged by the index uv named for each
    package. Raises :class:`CellFailed` with the problems."""
    plan, pylock, indexes = run.plan, resolved.pylock, resolved.indexes
    checked = hashcheck.check(plan, pylock, run.root, run.mirrors, run.verified, run.stop, indexes)
    if main:
        found = verify.problems(plan, pylock, run.mirrors, indexes) + list(checked.problems)
        if found:
            raise CellFailed(f"cell {plan.cell.name}: verify failed:\n" + "\n".join(f"  - {p}" for p in found))
    else:
        found = verify.artifact_problems(plan, pylock, run.mirrors, indexes) + list(checked.problems)
        if found:
            # a source serving other bytes or another host's files: the cell fails, optional or not
            raise layers.Untrusted(f"cell {plan.cell.name}: layer {layer}: " + "; ".join(found))
    return checked


# -- step 6: the layers, each through steps 1 to 5


def resolve_layers(run: CellRun, main: Resolved) -> Built:
    """Resolve every layer of ``run.plan`` against the main resolution ``main`` (its versions are
    ``<work>/main-pins.txt``, written when main was described; the ``replace`` packages are left
    out of that constraint; uv prefers main's versions for those), in install order
    (:mod:`lockgen.resolve.layers`). An optional layer that cannot be had, for any reason (no
    resolution against main, a move of a main version, a build it may not make, a description uv
    cannot give) is recorded unavailable with the reason (issue 17). Raises :class:`CellFailed`
    when the no-deps layer cannot be had or would move a main version that ``replace`` does not
    name (C22), when uv was killed, when a layer's files fail verify (a hash that does not match
    its page, a file from another host than its source: a trust problem, never an optional
    outcome), or for an optional entry that names no project."""
    plan = run.plan
    known = layers.main_of(run, main)
    built = Built()
    for entry, job in layers.jobs(run, known):
        if isinstance(job, LayerUnavailable):
            built.unavailable.append(layers.unavailable(plan, entry, None, job))
            continue
        try:
            layer = _layer(run, job, known.mains)
        except LayerUnavailable as exc:
            built.unavailable.append(layers.unavailable(plan, entry, job, exc))
            continue
        except (layers.LayerKilled, layers.Untrusted):
            raise
        except CellFailed as exc:
            if entry is None:
                raise
            built.unavailable.append(layers.unavailable(plan, entry, job, layers.not_had(plan, job, exc)))
            continue
        built.skipped_urls += job.notes
        built.add(layer)
    unhashed = layers.unhashed_lock(run, main)
    if unhashed is not None:
        built.locks.append(unhashed)
    return built


def _layer(run: CellRun, job: Job, mains: Mapping[str, str]) -> layers.Layer:
    """One layer, through the steps of the main resolution. Raises :class:`LayerUnavailable`
    with uv's reason when it cannot be had, and :class:`CellFailed` when it would move a version
    of main that ``replace`` does not name (naming only what must move: the resolution without
    main's versions still prefers them, issue 17), or a step fails."""
    plan = run.plan
    given, output = layers.job_inputs(run, job, mains)  # 1
    result = _learning(run, output, given, no_deps=job.no_deps)  # 2-3
    if result.returncode != 0:
        retry = layers.failed(run, job, result.returncode, result.stderr)
        if retry is not None:
            raise retry
        free = replace(given, constraints=given.constraints[1:])  # without main's versions
        layers.refuse_moves(run, job.name, _unconstrained(run, job, free, mains), mains)
        raise layers.no_resolution(run, result.stderr)
    pylock = _with_newer_wheels(run, read_pylock(run, output), given, job.source)  # 4
    unbuilt = layers.unbuilt(plan, pylock)
    if unbuilt:
        raise hints.NeedsBuilding(hints.needs_building(run, unbuilt, ""))
    replaces = layers.replacements(run, job, pylock, mains)
    resolved = _described(run, given, pylock, job.source, job.no_deps)
    checked = _verified(run, resolved, main=False, layer=job.name)  # 5
    dateless = set(verify.without_upload_time(plan, pylock)) if plan.inputs.exclude_newer else set()
    lock = layers.layer_lock(run, job, given, resolved)
    return layers.Layer(
        job, lock, tuple(pylock.packages), tuple(replaces), frozenset(checked.unverified), frozenset(dateless)
    )


def _unconstrained(run: CellRun, job: Job, given: Inputs, mains: Mapping[str, str]) -> dict[str, str]:
    """``{name: version}`` the layer resolves to without main's versions as constraints, but with
    them as uv's preferences, so only what must move does ({} when it cannot be resolved even
    so): what it would set, to name both versions when it fights main (C22; issue 17: a hint
    that named every difference sent users to replace 17 packages where 3 had to move)."""
    output = f"{run.plan.work}/{job.source}-free/pylock.toml"
    layers.write_preferences(run, output, mains)
    if _learning(run, output, given, no_deps=job.no_deps).returncode != 0:
        return {}
    return {p.name: str(p.version) for p in read_pylock(run, output).packages if p.version is not None}
