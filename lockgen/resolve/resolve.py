"""Stage 6: resolve one cell with uv, verify it, resolve its layers: the cell's files, in memory.

Per cell, one resolution: ``uv pip compile --format pylock.toml`` (the committed
``locks/<cell>/pylock.toml`` is handed to uv as its output file, so uv prefers the versions already
locked, as pip-compile does). From that one run come the versions, and per package the artifacts
the target may install, with hashes (:mod:`lockgen.locks.pylockfile`). A second uv process
renders the same versions, pinned exactly and offline, as a requirements file: it only adds what
PEP 751 data does not carry, the extras a package was asked for (pip 23.2 needs them on the locked
line, CASES C19) and ``# via`` annotations. It costs ~50 ms against ~2.5 s for a resolution
(docs/benchmarks.md). Nothing here writes a lock: :mod:`lockgen.locks.store` does, all files of a
cell together.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from packaging.pylock import Pylock
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.errors import CellFailed
from lockgen.locks import pylockfile
from lockgen.locks.lock import FileRef, LayerKind, Lock, text_sha256
from lockgen.plan.plan import Plan, exact_pin
from lockgen.resolve import blame, hashcheck, inputs, invariants, layers, uv, uvout, verify
from lockgen.resolve.cellrun import CellRun, describe, pylock_path, read_pylock, seed_preferences
from lockgen.resolve.freshness import OFFLINE, ONLINE, Freshness
from lockgen.resolve.newer import add_newer_wheels

__all__ = ["CellFiles", "CellRun", "resolve_cell"]

log = logging.getLogger("lockgen")


@dataclass(frozen=True)
class CellFiles:
    """Everything a resolved cell writes, as text: the main lock, its ``pylock.toml`` and its
    layers, plus notes for the summary (``mode``: the main resolution ran online or offline)."""

    main: Lock
    pylock: str
    layers: tuple[Lock, ...] = ()
    notes: tuple[str, ...] = ()
    mode: str = ONLINE

    def texts(self) -> dict[str, str]:
        """``{project-relative path: text}`` of every file, the main lock last."""
        files = {layer.header.path: layer.render() for layer in self.layers}
        files[pylock_path(self.main.header.path)] = self.pylock
        files[self.main.header.path] = self.main.render()
        return files


def resolve_cell(run: CellRun, fresh: Freshness | None = None, prefer: bool = True) -> CellFiles:
    """Resolve, verify and lay out ``run.plan``'s files (nothing is written to the locks folder).

    The committed ``pylock.toml`` is uv's preference (not with ``prefer=False``: a hand-edited
    lock). With ``fresh``, uv goes through the run's page cache and may resolve offline
    (:mod:`lockgen.resolve.freshness`); a cell that fails while the cache saw upstream trouble is
    resolved again without it. Raises :class:`CellFailed` with uv's explanation, or with the
    verify problems; :class:`~lockgen.errors.Interrupted` when the run is stopped.
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
    inputs.write_main(run)
    pylock, mode, warned = _main(run, fresh, prefer)
    pylock = add_newer_wheels(run, pylock)
    resolved = describe(run, uv.main_inputs(plan), pylock, "main")
    checked = hashcheck.check(plan, pylock, run.root, run.mirrors, run.verified, run.stop)
    found = verify.problems(plan, pylock, run.mirrors) + list(checked.problems)
    if found:
        raise CellFailed(f"cell {plan.cell.name}: verify failed:\n" + "\n".join(f"  - {p}" for p in found))
    built = layers.resolve(run, resolved)
    mixed = invariants.problems(
        plan.flavor, [*pylock.packages, *built.packages], plan.backends, plan.cell.settings.allow_mix
    )
    if mixed:
        raise CellFailed(
            f"cell {plan.cell.name}: the lock would install a broken {plan.flavor} stack (backend invariants, C27):\n"
            + "\n".join(f"  - {p.message}" for p in mixed)
            + '\n  declare an intended mix with allow-mix = { "<package>" = "why" } in the cell\'s settings'
        )
    text = pylockfile.dumps(pylockfile.for_target(replace(pylock, created_by="lockgen"), plan.target))
    main = Lock(
        header=run.header(
            LayerKind.MAIN,
            plan.lock,
            find_links=inputs.install_links(plan, plan.main_find_links, pylock.packages),
            input_parts=plan.input_parts,
            pylock=FileRef(sha256=text_sha256(text), path=pylock_path(plan.lock)),
            layers=built.refs(),
            unavailable=tuple(built.unavailable),
            replaces=tuple(built.replaces),
            skipped_urls=tuple(built.skipped_urls),
            no_upload_time=tuple(sorted(set(verify.without_upload_time(plan, pylock)) | built.dateless))
            if plan.exclude_newer
            else (),
            unverified_hashes=hashcheck.merge(checked.unverified, built.unverified),
        ),
        entries=tuple(e for e in resolved.entries if not e.unhashed),
    )
    notes = [f"unavailable: {', '.join(u.requirement for u in built.unavailable)}"] if built.unavailable else []
    notes += [f"uv: {w}" for w in warned]
    if not prefer:
        notes.append("the lock had been edited by hand: re-resolved without preferring its pins")
    return CellFiles(main=main, pylock=text, layers=tuple(built.locks), notes=tuple(notes), mode=mode)


def _build_hint(run: CellRun, stderr: str) -> str:
    """Say what to do when uv needed to build a package lockgen may not build (CASES C26)."""
    names = [n for n in uvout.needs_wheels(stderr) if n not in run.plan.allow_build]
    if not names:
        return ""
    target = run.plan.target
    listed = ", ".join(names)
    return (
        f"\nlockgen: {listed}: no wheel for {target.platform} {target.python_tag} in any version the "
        f"requirements allow; add {'them' if len(names) > 1 else 'it'} to allow-build to build from source"
    )


def _pin_hint(run: CellRun, stderr: str) -> str:
    """Tie a version the index does not have back to the config when the config's ``pins`` give
    it (uv's text names only the requirement; a fresh-eyes review had to guess where it came
    from)."""
    pins = {canonicalize_name(k): exact_pin(v) for k, v in run.plan.cell.settings.pins.items()}
    return "".join(
        f"\nlockgen: {name}=={version} is the version the pins give {name} (the pins table of {run.config}, or a "
        f"rule's pins, for this cell); the index has no such version: change the pin"
        for name, version in uvout.no_such_version(stderr).items()
        if (pinned := pins.get(name)) is not None and Version(pinned) == Version(version)
    )


def _cutoff_hint(run: CellRun, stderr: str) -> str:
    """Name the ``exclude-newer`` setting when uv says the versions asked for are newer than it
    (uv's text names only "the exclude newer time")."""
    names = uvout.too_new(stderr)
    if not names or not run.plan.exclude_newer:
        return ""
    return (
        f"\nlockgen: {', '.join(names)}: the versions required were published after exclude-newer "
        f"({run.plan.exclude_newer}, set in {run.config}): move the cutoff or the requirement"
    )


def _where_hint(plan: Plan, stderr: str) -> str:
    """Name the pages uv read for a package it found nowhere (a typo, or a page that lists
    nothing: an empty or garbled index page), canonical URLs only."""
    lines = []
    for name in uvout.not_found(stderr):
        source = plan.served_by(name)
        if source is not None:
            pages = ", ".join(source.find_links() or source.urls)
            lines.append(
                f"\nlockgen: {name}: source {source.name!r} lists no usable file of it ({pages}); check the name, or those pages"
            )
        else:
            page = f"{plan.index_url.rstrip('/')}/{name}/"
            lines.append(
                f"\nlockgen: {name}: the index {plan.index_url} lists no usable file of it ({page}); check the name, or that page"
            )
    return "".join(lines)


def _main(run: CellRun, fresh: Freshness | None, prefer: bool) -> tuple[Pylock, str, tuple[str, ...]]:
    """The cell's one resolution: offline when this run's pages cover it, else online."""
    plan = run.plan
    output = f"{plan.work}/{pylockfile.PYLOCK_NAME}"
    upgrading = run.options.upgrade or bool(run.options.upgrade_packages)  # offline would miss new versions' metadata
    if fresh is not None and prefer and not upgrading and fresh.worth_trying(plan):
        seed_preferences(run, output, prefer)
        result = run.compile_learning(output, offline=True)
        if result.returncode == 0:
            pylock = read_pylock(run, output)
            if fresh.covers(plan, {p.name for p in pylock.packages}) and not uvout.yanked(result.stderr):
                fresh.tried(True)
                return pylock, OFFLINE, tuple(run.mirrors.canonical(w) for w in uvout.warnings(result.stderr))
        fresh.tried(False)
    seed_preferences(run, output, prefer)
    result = run.compile_learning(output)
    yanks = [y for y in uvout.yanked(result.stderr) if y.name not in plan.pinned]
    if result.returncode == 0 and yanks:  # kept only because the old lock preferred it (issue 8)
        names = (*run.options.upgrade_packages, *(y.name for y in yanks))
        result = replace(run, options=replace(run.options, upgrade_packages=names)).compile_learning(output)
    if result.returncode != 0:
        why = run.mirrors.canonical(uvout.without_build_hints(uvout.explain(result.stderr)))
        fought = blame.blame(run.root, plan, result.stderr)
        # a fought pin explains the failure: uv's "wheels are required" hints about the versions it
        # backtracked through would point the user at the wrong fix (a review found that)
        built = "" if fought else _build_hint(run, result.stderr)
        hint = built + _pin_hint(run, result.stderr) + _cutoff_hint(run, result.stderr)
        hint += inputs.failure_hint(plan, result.stderr) or _where_hint(plan, result.stderr)
        raise CellFailed(f"cell {plan.cell.name}: uv could not resolve it:\n{why}{fought}{hint}")
    pylock = read_pylock(run, output)
    return pylock, ONLINE, tuple(run.mirrors.canonical(w) for w in uvout.warnings(result.stderr))
