"""Hashes for machines newer than the cell's floor: wheels of newer manylinux / macOS levels.

A Linux cell resolves for ``<arch>-manylinux_2_28``, so uv's PEP 751 output lists only wheels up to
manylinux_2_28. An installer on a newer machine of that cell (glibc 2.35) ranks a
``manylinux_2_34`` wheel of the same version higher. With a hashed index page both pip and uv
skip files whose hash the lock does not list; with a page without hashes (a find-links page, a
mirror, a devpi or Artifactory proxy) they cannot, so they download the 2_34 wheel and fail
``--require-hashes`` with a hash mismatch (measured with pip 23.2.1 and uv 0.13.9;
``tests/test_installers.py``). macOS has the same shape: a ``macosx_15_0`` wheel beats the
``macosx_14_0`` one on macOS 15.

So, after the cell's one resolution, :func:`add_newer_wheels` asks uv once more, for the same
versions pinned exactly, ``--no-deps``, offline when the pages are cached (else online), for the
newest level uv can target (:func:`newest`), and adds per package the wheels that fit that target
and not the cell's (``packaging.tags``; hashes as uv gives them, computed by uv when a page has
none). A wheel the cell already fits is never added twice; Windows has no levels (nothing to
add). Levels newer than uv's newest (manylinux_2_40) are not covered.
"""

from __future__ import annotations

import dataclasses

from packaging.pylock import Pylock

from lockgen.errors import CellFailed
from lockgen.locks import pylockfile
from lockgen.plan.target import Target
from lockgen.resolve import uv, uvout
from lockgen.resolve.cellrun import CellRun, pylock_path, registry

__all__ = ["NEWEST_MACOS", "NEWEST_MANYLINUX", "add_newer_wheels", "newest"]

#: The newest manylinux level uv 0.13 accepts in ``--python-platform`` (``x86_64-manylinux_2_40``).
NEWEST_MANYLINUX = "2_40"
#: The macOS version the newest target claims (``MACOSX_DEPLOYMENT_TARGET``): above any release.
NEWEST_MACOS = "30.0"


def newest(target: Target) -> Target | None:
    """``target`` at the newest OS level of its arch: ``<arch>-manylinux_2_40`` on Linux, macOS
    :data:`NEWEST_MACOS` on macOS; None when it has no levels (Windows) or is already there."""
    arch, _, rest = target.platform.partition("-")
    if rest.startswith("manylinux"):
        platform = f"{arch}-manylinux_{NEWEST_MANYLINUX}"
        return None if platform == target.platform else dataclasses.replace(target, platform=platform)
    if target.macos:
        return dataclasses.replace(target, macos=NEWEST_MACOS)
    return None


def add_newer_wheels(
    run: CellRun,
    pylock: Pylock,
    name: str = "main",
    links: tuple[str, ...] | None = None,
    extra: tuple[str, ...] | None = None,
) -> Pylock:
    """``pylock`` (target-only, canonical URLs) with each package's wheels for newer levels of the
    cell's arch added after its own (see the module docstring). ``name`` names the work files
    (``main``, ``layer-<name>``); ``links``: the find-links of that resolution (None: the
    cell's main ones); ``extra``: the extra requirement files of that resolution (the explicit
    indexes of index sources; None: the main ones). Raises :class:`CellFailed` with uv's explanation when uv cannot
    list them."""
    plan = run.plan
    wide = newest(plan.target)
    pinned = [p for p in pylock.packages if p.wheels and registry(p)]
    if wide is None or not pinned:
        return pylock
    pins = f"{plan.work}/{name}-newer-pins.txt"
    run.write(pins, "".join(f"{p.name}=={p.version}\n" for p in pinned))
    output = f"{plan.work}/{name}-newer/{pylockfile.PYLOCK_NAME}"
    (run.root / output).unlink(missing_ok=True)
    widened = dataclasses.replace(run, plan=dataclasses.replace(plan, target=wide))
    if extra is None:
        from lockgen.resolve.inputs import main_extra

        extra = main_extra(plan)[0]
    inputs = uv.Inputs(pins, find_links=links, extra=extra)
    result = widened.compile(output, inputs=inputs, no_deps=True, offline=True)
    if result.returncode != 0:
        result = widened.compile(output, inputs=inputs, no_deps=True)
    if result.returncode != 0:
        why = run.mirrors.canonical(uvout.explain(result.stderr))
        raise CellFailed(f"cell {plan.cell.name}: uv could not list the wheels of newer {_levels(wide)} levels:\n{why}")
    folder = pylock_path(plan.lock).rsplit("/", 1)[0]
    found = pylockfile.relative_files(pylockfile.loads(run.read(output), output), run.root, folder)
    return _merged(pylock, found, plan.target, wide)


def _levels(target: Target) -> str:
    return "macOS" if target.macos else "manylinux"


def _merged(pylock: Pylock, found: Pylock, cell: Target, wide: Target) -> Pylock:
    """Each package of ``pylock`` with the wheels of the same version in ``found`` that fit
    ``wide`` but not ``cell`` appended (in uv's order), unless already listed."""
    fits, old = wide.supported_tags(), cell.supported_tags()
    extra = {(p.name, p.version): p.wheels or () for p in found.packages}
    packages = []
    for package in pylock.packages:
        have = {pylockfile.file_name(w) for w in package.wheels or ()}
        newer = [
            w for w in extra.get((package.name, package.version), ())
            if pylockfile.file_name(w) not in have and pylockfile.wheel_tags(w) & fits and not pylockfile.wheel_tags(w) & old
        ]  # fmt: skip
        if newer and package.wheels:
            package = dataclasses.replace(package, wheels=[*package.wheels, *newer])
        packages.append(package)
    return dataclasses.replace(pylock, packages=packages)
