"""What a source does serve of a package, for a failure message in the config's terms (issue 16, item 6).

When uv cannot have a package from the index or find-links page the config sends it to (``there
is no version of torch==2.13.0+rocm6.2``), uv's text names neither the source nor its URL nor
what it has. :func:`offers` reads that source's page for the package once (through the mirrors,
with the realm's login) and returns an :class:`Offer`: the versions it lists, split into those
with a file the cell's target can install and the others. Pages are read and parsed by
:mod:`lockgen.index.pages` (PEP 691 JSON or PEP 503 HTML, a flat find-links page too).

A step after a failed uv run (:mod:`lockgen.resolve.pipeline` calls it, then
:mod:`lockgen.resolve.hints` words the message); a page that cannot be read is said as such,
never raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from packaging.tags import Tag
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from lockgen.index.files import artifact
from lockgen.index.pages import PageReader
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.plan.sources import CellSource

__all__ = ["Offer", "offers", "other_pythons", "pythons_of", "versions"]

#: At most this many versions are named in a message (newest first).
SHOWN = 5


@dataclass(frozen=True)
class Offer:
    """What ``source`` lists of ``name`` at ``page`` (canonical): ``fitting`` versions have a
    file the cell's target can install (newest first), ``other`` versions only files for other
    targets; ``error`` says why the page could not be read (``HTTP 404``)."""

    source: CellSource
    name: NormalizedName
    page: str
    fitting: tuple[Version, ...] = ()
    other: tuple[Version, ...] = ()
    error: str | None = None

    def served(self, target: str) -> str:
        """``has torch 2.12.0+rocm6.2, 2.11.0+rocm6.2`` / ``has no torch for <target> (only …)`` /
        ``has no page for torch (HTTP 404 for …)``."""
        if self.error is not None:
            return f"has no page for {self.name} ({self.error} for {self.page})"
        if self.fitting:
            return f"has {self.name} {_listed(self.fitting)}"
        if self.other:
            return f"has no {self.name} for {target} (only {_listed(self.other)}, for other targets)"
        return f"lists no file of {self.name} ({self.page})"


def _listed(versions: tuple[Version, ...]) -> str:
    shown = ", ".join(map(str, versions[:SHOWN]))
    return shown + (f" and {len(versions) - SHOWN} older" if len(versions) > SHOWN else "")


def versions(
    files: Iterable[str], name: str, supported: frozenset[Tag]
) -> tuple[tuple[Version, ...], tuple[Version, ...]]:
    """``(fitting, other)`` versions of ``name`` among ``files`` (wheel and sdist names, read with
    ``packaging``, :func:`lockgen.index.files.artifact`): a version is fitting when one of its
    wheels has a tag in ``supported``, or it has an sdist; each newest first."""
    key = canonicalize_name(name)
    fitting: set[Version] = set()
    seen: set[Version] = set()
    for parsed in map(artifact, files):
        if parsed is not None and parsed.name == key:
            seen.add(parsed.version)
            if parsed.fits(supported):
                fitting.add(parsed.version)
    return tuple(sorted(fitting, reverse=True)), tuple(sorted(seen - fitting, reverse=True))


def offers(plan: Plan, mirrors: Mirrors, names: Iterable[NormalizedName]) -> Mapping[NormalizedName, Offer]:
    """What the source each of ``names`` is sent to (an index or find-links source of ``plan``)
    lists of it: one page read each, through ``mirrors``. Names no such source serves are left
    out."""
    found: dict[NormalizedName, Offer] = {}
    supported = plan.target.supported_tags()
    with PageReader(mirrors, timeout=15) as reader:
        for name in dict.fromkeys(names):
            _offer(plan, reader, name, supported, found)
    return found


def _offer(plan: Plan, reader: PageReader, name: NormalizedName, supported: frozenset[Tag],
           found: dict[NormalizedName, Offer]) -> None:  # fmt: skip
    """Put what ``reader`` reads of ``name`` on its source's page into ``found``."""
    source = plan.inputs.served_by.get(name)
    if source is None or source.kind not in ("index", "find-links") or not source.urls:
        return
    base = source.urls[0]
    if "://" not in base:
        return  # a project folder: uv's own text names its files
    page = f"{base.rstrip('/')}/{name}/" if source.kind == "index" else base
    read = reader.page(page)
    if read.error is not None:
        found[name] = Offer(source, name, page, error=read.error)
        return
    fitting, other = versions((f.filename for f in read.files), name, supported)
    found[name] = Offer(source, name, page, fitting, other)


def pythons_of(
    files: Iterable[str], name: str, platforms: frozenset[str], supported: frozenset[Tag]
) -> dict[Version, list[str]]:
    """``{version: ["3.10", "3.11"]}`` for each version of ``name`` among ``files`` (wheel and
    sdist names, read with :func:`lockgen.index.files.artifact`) whose wheels for the cell's
    ``platforms`` all need another Python than the cell's: none has a tag in ``supported``, at
    least one has a platform in ``platforms``; the Pythons are those the CPython tags of those
    wheels name (``cp310`` -> 3.10; ``cp38-abi3`` -> 3.8+). A version with a wheel the cell can
    install, or with no wheel for its platforms, is left out: the Python is not why it cannot be
    installed."""
    key = canonicalize_name(name)
    fits: set[Version] = set()
    others: dict[Version, set[str]] = {}
    for parsed in map(artifact, files):
        if parsed is None or parsed.name != key or not parsed.tags:
            continue
        if parsed.tags & supported:
            fits.add(parsed.version)
            continue
        for tag in parsed.tags:
            if tag.platform in platforms and tag.interpreter.startswith("cp") and tag.interpreter[2:].isdigit():
                digits = tag.interpreter[2:]
                python = f"{digits[0]}.{digits[1:]}" + ("+" if tag.abi == "abi3" else "")
                others.setdefault(parsed.version, set()).add(python)
    return {
        v: sorted(pys, key=lambda p: tuple(int(x) for x in p.rstrip("+").split(".")))
        for v, pys in others.items()
        if v not in fits
    }


def other_pythons(plan: Plan, mirrors: Mirrors, wanted: Mapping[NormalizedName, Version]) -> dict[NormalizedName, str]:
    """``{name: "alpha 1.0 has wheels for CPython 3.10, 3.11 only"}`` for each package of
    ``wanted`` (name -> the version uv could not use) whose wheels of that version for the
    cell's platform all need another Python: from one page read each (the package's source, else
    the cell's index), through ``mirrors``. A package whose page cannot be read, or whose wheels
    are not the reason, is left out. What a cell that "needs a build" often is on day one: a pin
    made for an older Python (``numpy==1.26.4`` in a Python 3.13 cell)."""
    found: dict[NormalizedName, str] = {}
    supported = plan.target.supported_tags()
    platforms = frozenset(t.platform for t in supported)
    with PageReader(mirrors) as reader:
        for name, version in wanted.items():
            source = plan.inputs.served_by.get(name)
            if source is not None and source.kind in ("index", "find-links") and source.urls:
                base, kind = source.urls[0], source.kind
            else:
                base, kind = plan.inputs.index_url or "https://pypi.org/simple", "index"
            if "://" not in base:
                continue
            read = reader.page(f"{base.rstrip('/')}/{name}/" if kind == "index" else base)
            if read.error is not None:
                continue
            pythons = pythons_of((f.filename for f in read.files), name, platforms, supported).get(version)
            if pythons:
                found[name] = f"{name} {version} has wheels for CPython {', '.join(pythons)} only"
    return found
