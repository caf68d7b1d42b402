"""lockgen/bump/lines.py: which of several lines pinning one package move (issue 18, item 1).

Pure: the sites carry their cells, ``fits`` answers as uv would."""

from __future__ import annotations

import pytest
from packaging.markers import Marker
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.bump.lines import LineSite, State, decide
from lockgen.bump.pins import Wanted
from lockgen.plan import reqline

OLD = ("linux-py3.10", "linux-py3.11")
NEW = ("linux-py3.12", "linux-py3.13")
NUMPY = canonicalize_name("numpy")


def site(text: str, line: int, cells: tuple[str, ...]) -> LineSite:
    parsed = reqline.parse(text)
    assert parsed is not None
    return LineSite(file="templates/r.j2", place=f"templates/r.j2:{line}", requirement=parsed, cells=frozenset(cells))


SPLIT = [
    site('numpy==1.26.4; python_version < "3.12"', 1, OLD),
    site('numpy==2.1.0; python_version >= "3.12"', 2, NEW),
]


def states(moves) -> dict[str, str]:
    return {m.site.place: str(m.state) for m in moves}


def never(cell: str) -> bool:
    raise AssertionError("no uv question needed")


def test_lines_that_agree_all_move_without_asking_uv():
    sites = [site("numpy==1.26.4; sys_platform == 'win32'", 1, OLD), site("numpy==1.26.4  # others", 2, NEW)]
    moves, refused = decide(NUMPY, Wanted(version=Version("2.2.0")), sites, None, never)
    assert refused == [] and states(moves) == {"templates/r.j2:1": "moved", "templates/r.j2:2": "moved"}


def test_only_the_line_whose_cells_the_version_fits_moves():
    """numpy 2.2 needs Python 3.12 here: the old-Python line is kept (issue 18's broken cell)."""
    moves, refused = decide(NUMPY, Wanted(version=Version("2.2.0")), SPLIT, None, lambda cell: cell in NEW)
    assert refused == []
    assert states(moves) == {"templates/r.j2:1": "kept", "templates/r.j2:2": "moved"}
    kept = next(m for m in moves if m.state is State.KEPT)
    assert kept.reason == "2.2.0 fits none of its cells: linux-py3.10, linux-py3.11"
    assert (
        kept.text()
        == 'templates/r.j2:1: numpy==1.26.4; python_version < "3.12": kept (2.2.0 fits none of its cells: linux-py3.10, linux-py3.11)'
    )


def test_a_version_that_fits_both_sides_is_refused_naming_the_lines():
    _moves, refused = decide(NUMPY, Wanted(version=Version("2.2.0")), SPLIT, None, lambda cell: True)
    assert len(refused) == 1
    assert (
        "templates/r.j2:1 'numpy==1.26.4; python_version < \"3.12\"' (cells: linux-py3.10, linux-py3.11)" in refused[0]
    )
    assert "templates/r.j2:2" in refused[0] and "say which with a marker" in refused[0]


def test_a_marker_on_the_command_line_chooses_the_lines():
    wanted = Wanted(version=Version("2.2.0"), marker=Marker('python_version >= "3.12"'))
    moves, refused = decide(NUMPY, wanted, SPLIT, frozenset(NEW), never)
    assert refused == [] and states(moves) == {"templates/r.j2:1": "kept", "templates/r.j2:2": "moved"}


def test_fitting_no_cell_is_refused():
    _moves, refused = decide(NUMPY, Wanted(version=Version("9.0")), SPLIT, None, lambda cell: False)
    assert refused and "numpy 9.0 fits none of the cells its lines pin it for" in refused[0]


def test_an_unknown_answer_counts_as_fitting():
    moves, refused = decide(
        NUMPY, Wanted(version=Version("2.2.0")), SPLIT, None, lambda cell: None if cell in NEW else False
    )
    assert refused == [] and states(moves)["templates/r.j2:2"] == "moved"


@pytest.mark.parametrize(
    ("text", "refused"),
    [("numpy<3", False), ("numpy>=1.26,<2", True), ("numpy", False), ("numpy==1.*", True)],
    ids=["allows", "range-excludes", "unversioned", "wildcard-excludes"],
)
def test_a_line_without_a_movable_pin(text, refused):
    moves, problems = decide(NUMPY, Wanted(version=Version("2.2.0")), [site(text, 3, OLD)], None, never)
    assert bool(problems) == refused
    if not refused:
        assert [m.state for m in moves] == [State.ALLOWS]


def test_already_at_the_version():
    moves, _refused = decide(NUMPY, Wanted(version=Version("2.1")), [site("numpy==2.1.0", 1, NEW)], None, never)
    assert [m.state for m in moves] == [State.CURRENT]


LOCKED_246 = {cell: Version("2.4.6") for cell in OLD}


@pytest.mark.parametrize(
    ("asked", "locked", "state", "reason"),
    [("2.5.0", LOCKED_246, State.MOVE, "a floor: the re-lock takes at least 2.5.0; locked now 2.4.6"),
     ("2.5.0", {}, State.MOVE, "a floor: the re-lock takes at least 2.5.0"),
     ("2.1.0", LOCKED_246, State.ALLOWS, "its cells lock 2.4.6, which it allows: no lock moves for it"),
     ("2.4.6", LOCKED_246, State.ALLOWS, "its cells lock 2.4.6, which it allows: no lock moves for it"),
     ("1.26", {}, State.CURRENT, ""),
     ("2.1.0", {OLD[0]: Version("2.4.6")}, State.MOVE, "a floor: the re-lock takes at least 2.1.0; locked now 2.4.6")],
    ids=["above-the-lock", "no-lock-yet", "below-the-lock", "at-the-lock", "the-floor-itself", "one-cell-unlocked"],
)  # fmt: skip
def test_a_floor_moves_only_when_that_moves_a_lock(asked, locked, state, reason):
    """``numpy>=1.26`` is a range: bump raises it only to make the re-lock take the new version."""
    moves, refused = decide(NUMPY, Wanted(version=Version(asked)), [site("numpy>=1.26", 1, OLD)], None, never, locked)
    assert refused == []
    assert [(m.state, m.reason) for m in moves] == [(state, reason)]


def test_a_floor_above_the_version_asked_is_refused():
    moves, refused = decide(NUMPY, Wanted(version=Version("1.0")), [site("numpy>=1.26", 1, OLD)], None, never, {})
    assert moves == [] and refused == [
        "templates/r.j2:1: 'numpy>=1.26' is a floor above 1.0: moving it down would lock nothing lower (the resolution "
        "takes the newest version it allows); to lock 1.0, write numpy==1.0 there by hand"
    ]
