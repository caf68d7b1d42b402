"""Hashes for machines newer than the cell's floor: wheels of newer manylinux / macOS levels.

A Linux cell resolves for ``<arch>-manylinux_2_28``, so uv's PEP 751 output lists only wheels up to
manylinux_2_28. An installer on a newer machine of that cell (glibc 2.35) ranks a
``manylinux_2_34`` wheel of the same version higher. With a hashed index page both pip and uv
skip files whose hash the lock does not list; with a page without hashes (a find-links page, a
mirror, a devpi or Artifactory proxy) they cannot, so they download the 2_34 wheel and fail
``--require-hashes`` with a hash mismatch (measured with pip 23.2.1 and uv 0.13.9;
``tests/e2e/test_installers.py``). macOS has the same shape: a ``macosx_15_0`` wheel beats the
``macosx_14_0`` one on macOS 15.

So, after the cell's one resolution (and after each layer's), the pipeline asks uv once more
(:func:`request`), for the same versions pinned exactly, ``--no-deps``, offline when the pages are
cached (else online), for the newest level uv can target (:func:`newest`), and adds per package
the wheels that fit that target and not the cell's (:func:`merged`: ``packaging.tags``; hashes as
uv gives them, computed by uv when a page has none). A wheel the cell already fits is never added twice; Windows has no levels (nothing to
add). Levels newer than uv's newest (manylinux_2_40) are not covered.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from packaging.pylock import Pylock

from lockgen.locks import pylockfile
from lockgen.plan.plan import Plan
from lockgen.plan.target import Target
from lockgen.resolve.inputs import Inputs

__all__ = ["NEWEST_MACOS", "NEWEST_MANYLINUX", "Request", "merged", "newest", "request"]

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


@dataclass(frozen=True)
class Request:
    """The uv run that lists the newer levels' wheels of a resolution: the packages pinned exactly
    (``pins_text``, written to ``pins``), ``--no-deps``, for the ``wide`` target, written to
    ``output``."""

    wide: Target
    pins: str
    pins_text: str
    inputs: Inputs
    output: str

    @property
    def levels(self) -> str:
        """What the request covers, for messages: ``macOS`` or ``manylinux``."""
        return "macOS" if self.wide.macos else "manylinux"


def request(plan: Plan, pylock: Pylock, name: str, inputs: Inputs) -> Request | None:
    """How to list the newer levels' wheels of ``pylock``, the resolution ``name`` (``main``,
    ``layer-<name>``: the work files' names) of ``inputs`` (its find-links and extra requirement
    sources, the explicit indexes of index sources, are read again); None when there is nothing
    to add: no newer level (Windows), or no registry package with wheels."""
    wide = newest(plan.target)
    pinned = [p for p in pylock.packages if p.wheels and pylockfile.registry(p)]
    if wide is None or not pinned:
        return None
    pins = f"{plan.work}/{name}-newer-pins.txt"
    return Request(
        wide=wide,
        pins=pins,
        pins_text="".join(f"{p.name}=={p.version}\n" for p in pinned),
        inputs=Inputs(pins, find_links=inputs.find_links, extra=inputs.extra),
        output=f"{plan.work}/{name}-newer/{pylockfile.PYLOCK_NAME}",
    )


def merged(pylock: Pylock, found: Pylock, cell: Target, wide: Target) -> Pylock:
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
