"""Which requirement lines ``lockgen bump`` moves: template lines and the project's own dependency strings.

A package may be pinned by several lines: a template line per Python (``numpy==1.26.4;
python_version < "3.12"`` beside ``numpy==2.1.0; python_version >= "3.12"``), a template line
and a ``[project].dependencies`` string, a line per backend. :func:`decide` takes every line that
names the package (a :class:`LineSite`, with the cells whose rendered inputs it reaches, its marker
evaluated against each cell) and applies the rule bump already applies to the config's rule pins:

* the lines agree on one version (or one line pins it): they all move;
* they pin different versions: only the lines reaching a cell the new version *fits* move (uv finds
  a file of it for the cell's target and Python, :mod:`lockgen.resolve.fit`); the others are kept,
  and reported so. If the version fits cells of lines that pin different versions, there is no
  telling which it is meant for: bump refuses, naming the lines, and says how to choose
  (``lockgen bump 'numpy==2.2.0; python_version >= "3.12"'``: a marker on the command line moves
  the lines that reach a cell it admits);
* a floor (``numpy>=1.26``: one ``>=`` clause) is a range, not a pin: it moves up to the new
  version only when that moves a lock (a cell it reaches locks the package below the new version,
  or has no lock yet): the re-lock then takes at least the new version. When every cell it reaches
  already locks the new version or a newer one, it is left as it is, saying so; a floor above the
  new version is refused (moving it down would lock nothing lower: pin the version by hand);
* a line that names the package without a single movable pin (``numpy>=1.26,<2``,
  ``numpy==2.1.*``, a URL) and does not allow the new version is refused by name; one that allows
  it is left as it is (with what its cells lock).

Pure: the caller finds the sites and the cells (:mod:`lockgen.bump.run`) and answers ``fits``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from packaging.utils import NormalizedName
from packaging.version import Version

from lockgen.bump.pins import Wanted
from lockgen.bump.templates import TemplateLine
from lockgen.bump.toml import Requirement
from lockgen.plan import reqline

__all__ = ["LineMove", "LineSite", "State", "decide"]


class State(str, enum.Enum):
    """What bump does with one line."""

    MOVE = "moved"
    CURRENT = "already"  # already at the version asked
    KEPT = "kept"  # a deliberate other pin, left as it is
    ALLOWS = "allows"  # names the package without a pin, and allows the new version

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, kw_only=True)
class LineSite:
    """A requirement naming a bumped package: a template line (``template``) or a requirement
    string of the project's metadata (``toml``, in ``file``). ``cells``: the cells whose inputs it
    reaches (rendered there, its marker true for the cell)."""

    file: str
    place: str  # "templates/requirements.in.j2:3", "pyproject.toml: project.dependencies[2]"
    requirement: reqline.Line
    template: TemplateLine | None = None
    toml: Requirement | None = None
    cells: frozenset[str] = frozenset()

    @property
    def name(self) -> NormalizedName:
        return self.requirement.name

    @property
    def version(self) -> Version | None:
        """The public version the line pins, if it pins one bump can move."""
        return reqline.pinned_version(self.requirement.requirement)

    @property
    def floor(self) -> bool:
        """The line's pin is a floor (``>=``: a range whose lower bound bump may raise)."""
        spec = reqline.pin_of(self.requirement.requirement)
        return spec is not None and spec.operator == ">="


@dataclass(frozen=True, kw_only=True)
class LineMove:
    """The decision for one line: ``state``, the ``version`` asked, and why (``reason``)."""

    site: LineSite
    state: State
    version: Version
    reason: str = ""

    def text(self) -> str:
        """``templates/a.j2:3: numpy 1.26.4 -> 2.2.0`` and the like."""
        site = self.site
        if self.state is State.MOVE and site.floor:
            return f"{site.place}: {site.name} >={site.version} -> >={self.version}" + _note(self.reason)
        if self.state is State.MOVE:
            return f"{site.place}: {site.name} {site.version} -> {self.version}" + _note(self.reason)
        if self.state is State.CURRENT:
            return f"{site.place}: {site.name} already {site.version}" + _note(self.reason)
        if self.state is State.ALLOWS:
            return f"{site.place}: {site.requirement.body} allows {self.version}: left as it is" + _note(self.reason)
        return f"{site.place}: {site.requirement.body}: kept ({self.reason})"


def _note(reason: str) -> str:
    return f" ({reason})" if reason else ""


#: ``fits(cell)``: whether the version asked has a file uv can use for the cell (None: unknown).
Fits = Callable[[str], "bool | None"]


def decide(
    name: NormalizedName,
    wanted: Wanted,
    sites: Sequence[LineSite],
    marked: frozenset[str] | None,
    fits: Fits,
    locked: Mapping[str, Version] | None = None,
) -> tuple[list[LineMove], list[str]]:
    """The decisions for the lines ``sites`` naming ``name``, and the refusals (each naming its
    lines and what to do; any refusal means bump writes nothing). ``marked``: the cells the
    marker of ``wanted`` admits (None without one); ``locked``: ``{cell: version}`` the cells'
    current locks hold of ``name`` (public versions; a cell without a lock is not in it), which
    decides whether a floor moves (see the module docstring)."""
    version = wanted.version
    locked = locked or {}
    moves: list[LineMove] = []
    refused: list[str] = []
    floors = [s for s in sites if s.version is not None and s.floor]
    pins = [s for s in sites if s.version is not None and not s.floor]
    for site in floors:
        move, problem = _floor(site, version, marked, wanted, locked)
        moves += [move] if move is not None else []
        refused += [problem] if problem else []
    for site in sites:
        if site.version is not None:
            continue
        if site.requirement.requirement.specifier.contains(version, prereleases=True):
            moves.append(LineMove(site=site, state=State.ALLOWS, version=version, reason=_holding(site, locked)))
        else:
            refused.append(
                f"{site.place}: {site.requirement.body!r} does not allow {version} and is not a single pin bump can "
                "move (==, ===, ~=, >=): edit it by hand"
            )
    if not pins:
        return moves, refused
    chosen, kept, problem = _choose(name, version, pins, marked, fits, wanted)
    if problem:
        refused.append(problem)
        return moves, refused
    for site, reason in kept:
        moves.append(LineMove(site=site, state=State.KEPT, version=version, reason=reason))
    for site in chosen:
        state = State.CURRENT if site.version == version else State.MOVE
        moves.append(LineMove(site=site, state=state, version=version, reason="" if site.cells else "reaches no cell"))
    return moves, refused


def _floor(
    site: LineSite, version: Version, marked: frozenset[str] | None, wanted: Wanted, locked: Mapping[str, Version]
) -> tuple[LineMove | None, str]:
    """The decision for a floor line (``numpy>=1.26``), or a refusal."""
    assert site.version is not None
    if marked is not None and not site.cells & marked:
        return LineMove(site=site, state=State.KEPT, version=version, reason=f"the marker {wanted.marker} admits none of its cells"), ""  # fmt: skip
    body = site.requirement.body
    if version < site.version:
        return None, (
            f"{site.place}: {body!r} is a floor above {version}: moving it down would lock nothing lower (the "
            f"resolution takes the newest version it allows); to lock {version}, write {site.name}=={version} there "
            "by hand"
        )
    held = sorted({locked[c] for c in site.cells if c in locked})
    if site.cells and all(c in locked and locked[c] >= version for c in site.cells):
        return LineMove(site=site, state=State.ALLOWS, version=version, reason=_holding(site, locked)), ""
    if version == site.version:
        return LineMove(site=site, state=State.CURRENT, version=version), ""
    now = f"; locked now {_versions(held)}" if held else ""
    reason = f"a floor: the re-lock takes at least {version}{now}" if site.cells else "reaches no cell"
    return LineMove(site=site, state=State.MOVE, version=version, reason=reason), ""


def _holding(site: LineSite, locked: Mapping[str, Version]) -> str:
    """``its cells lock 2.4.6, which it allows: …`` (what the cells of a range line lock), or ""."""
    held = sorted({locked[c] for c in site.cells if c in locked})
    if not held:
        return ""
    return f"its cells lock {_versions(held)}, which it allows: no lock moves for it"


def _versions(versions: Sequence[Version]) -> str:
    return ", ".join(str(v) for v in versions)


def _choose(
    name: NormalizedName,
    version: Version,
    pins: Sequence[LineSite],
    marked: frozenset[str] | None,
    fits: Fits,
    wanted: Wanted,
) -> tuple[list[LineSite], list[tuple[LineSite, str]], str]:
    """``(lines that move, lines kept with why, a refusal or "")``."""
    if marked is not None:
        chosen = [s for s in pins if s.cells & marked]
        kept = [(s, f"the marker {wanted.marker} admits none of its cells") for s in pins if not s.cells & marked]
        if not chosen:
            return (
                [],
                [],
                f"{name}: no line pinning it reaches a cell the marker {wanted.marker} admits: {_listed(pins)}",
            )
        return chosen, kept, ""
    if len({s.version for s in pins}) <= 1:
        return list(pins), [], ""
    fitting = {s.place: [c for c in sorted(s.cells) if fits(c) is not False] for s in pins}
    chosen = [s for s in pins if fitting[s.place]]
    kept = [
        (s, f"{version} fits none of its cells: {_cells(s.cells)}" if s.cells else "reaches no cell")
        for s in pins
        if not fitting[s.place]
    ]
    if not chosen:
        return [], [], f"{name} {version} fits none of the cells its lines pin it for: {_listed(pins)}"
    if len({s.version for s in chosen}) > 1:
        example = f"lockgen bump '{name}=={version}; python_version >= \"3.12\"'"
        return [], [], (
            f"{name} is pinned to different versions and {version} fits cells of each, so bump cannot tell which "
            f"lines it is meant for: {_listed(chosen)}; say which with a marker ({example} moves the lines that "
            "reach a cell the marker admits), or edit the lines by hand"
        )  # fmt: skip
    return chosen, kept, ""


def _listed(sites: Sequence[LineSite]) -> str:
    return "; ".join(f"{s.place} {s.requirement.body!r} (cells: {_cells(s.cells) or 'none'})" for s in sites)


def _cells(cells: frozenset[str], shown: int = 4) -> str:
    names = sorted(cells)
    more = f", +{len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
