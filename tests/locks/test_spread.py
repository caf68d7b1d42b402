"""The version spread across cells (lockgen.locks.spread) and the harmonizing moves (lockgen.run.harmonize): pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from packaging.tags import Tag
from packaging.utils import parse_wheel_filename

from lockgen.config.model import Harmonize
from lockgen.locks import spread
from lockgen.locks.spread import Cause
from lockgen.plan.target import Target
from lockgen.run.harmonize import moves
from lockgen.runtime.errors import LockFormatError

LINUX = Target(platform="x86_64-manylinux_2_28", python="3.11")
MAC = Target(platform="aarch64-apple-darwin", python="3.12", macos="14.0")


@dataclass(frozen=True)
class _Cell:
    name: str


@dataclass
class _Plan:
    """What the spread reads of a plan: the cell's name, pins, target, allow-build."""

    cell: _Cell
    target: Target
    pins: dict[str, str] = field(default_factory=dict)
    allow_build: frozenset[str] = frozenset()
    prerelease: str | None = None
    prerelease_package: dict[str, str] = field(default_factory=dict)

    def pin_requirements(self) -> dict[str, str]:
        return self.pins


@dataclass(frozen=True)
class _Release:
    requires_python: str | None = None
    tags: frozenset[Tag] = frozenset()
    sdist: bool = False


def _tags(filename: str) -> frozenset[Tag]:
    return parse_wheel_filename(filename)[3]


ANY = _tags("x-1-py3-none-any.whl")


def _plans(**targets: Target) -> dict[str, Any]:
    return {name: _Plan(_Cell(name), target) for name, target in targets.items()}


def test_spread_lists_only_packages_at_more_than_one_version():
    locked = {"a": {"numpy": "2.5.5", "six": "1.0"}, "b": {"numpy": "2.4.6", "six": "1.0"}, "c": {"numpy": "2.5.5"}}
    assert spread.spread(locked) == {"numpy": {"2.4.6": ("b",), "2.5.5": ("a", "c")}}
    assert spread.common_version({"1.0": ("a",), "1.1": ("b",)}) == "1.1"  # a tie goes to the newest


def test_causes_in_order_of_evidence():
    plans = _plans(old=LINUX, new1=LINUX, new2=LINUX)
    page = {"2.5.5": _Release(">=3.12", ANY)}
    found = spread.explain(
        {"old": {"numpy": "2.4.6"}, "new1": {"numpy": "2.5.5"}, "new2": {"numpy": "2.5.5"}},
        plans,
        lambda plan, name: page,
    )
    assert found[0].off == (
        spread.Off("old", "2.4.6", Cause.REQUIRES_PYTHON, "numpy 2.5.5 requires Python >=3.12 (the cell has 3.11)"),
    )
    assert found[0].forced
    wheel = {"1.1": _Release(None, _tags("x-1.1-py3-none-macosx_11_0_arm64.whl"))}
    found = spread.explain(
        {"l": {"x": "1.0"}, "m1": {"x": "1.1"}, "m2": {"x": "1.1"}}, _plans(l=LINUX, m1=MAC, m2=MAC), lambda p, n: wheel
    )
    assert found[0].off[0].cause is Cause.NO_WHEEL
    pinned = _plans(a=LINUX, b=LINUX, c=LINUX)
    pinned["a"].pins = {"x": "==1.0"}
    found = spread.explain({"a": {"x": "1.0"}, "b": {"x": "1.1"}, "c": {"x": "1.1"}}, pinned)
    assert found[0].off[0].cause is Cause.PIN and found[0].off[0].detail == "a pins x==1.0"
    pre = spread.explain({"a": {"x": "1.0"}, "b": {"x": "2.0b1"}}, _plans(a=LINUX, b=LINUX))
    assert pre[0].common == "2.0b1" and pre[0].off[0].cause is Cause.PRERELEASE
    labels = spread.explain({"a": {"torch": "2.13.0+cpu"}, "b": {"torch": "2.13.0+cu130"}}, _plans(a=LINUX, b=LINUX))
    assert labels[0].causes == (Cause.BACKEND_LABEL,)
    drift = spread.explain({"a": {"x": "1.0"}, "b": {"x": "1.1"}, "c": {"x": "1.1"}}, _plans(a=LINUX, b=LINUX, c=LINUX))
    assert drift[0].off == (spread.Off("a", "1.0", Cause.DRIFT),) and not drift[0].forced


def test_moves_by_mode_and_exception():
    plans = _plans(a=LINUX, b=LINUX, c=LINUX)
    locked = {"a": {"x": "1.0", "y": "1.0"}, "b": {"x": "1.1", "y": "2.0"}, "c": {"x": "1.1", "y": "2.0"}}
    found = spread.explain(locked, plans)
    assert moves(found, Harmonize(), plans, {"a", "b", "c"}) == {"a": {"x": "1.1", "y": "2.0"}}
    assert moves(found, Harmonize("unforced", {"y": "off"}), plans, {"a"}) == {"a": {"x": "1.1"}}
    assert moves(found, Harmonize(), plans, {"b", "c"}) == {}  # only cells this run resolves move
    assert moves(found, Harmonize("off"), plans, {"a", "b", "c"}) == {}
    assert moves(found, Harmonize(), plans, {"a"}, upgrade={"x"}) == {"a": {"y": "2.0"}}
    page = {"1.1": _Release(">=3.12", ANY), "1.0": _Release(None, ANY)}
    # common: the newest version every cell can take; 1.1 requires Python 3.12, so 1.0
    found = spread.explain(locked, plans, lambda p, n: page if n == "x" else {})
    assert moves(
        found, Harmonize("common", {"y": "off"}), plans, {"a", "b", "c"}, lambda p, n: page if n == "x" else {}
    ) == {
        "b": {"x": "1.0"},
        "c": {"x": "1.0"},
    }


def test_the_record_round_trips_and_refuses_what_lockgen_did_not_write():
    found = spread.explain({"a": {"x": "1.0"}, "b": {"x": "1.1"}, "c": {"x": "1.1"}}, _plans(a=LINUX, b=LINUX, c=LINUX))
    text = spread.dumps(found)
    assert spread.loads(text, "locks/differences.json") == found
    assert spread.dumps(spread.loads(text, "locks/differences.json")) == text
    with pytest.raises(LockFormatError, match=r"locks/differences.json: packages\[0\]"):
        spread.loads('{"format": 1, "packages": [{"name": "x"}]}', "locks/differences.json")
    with pytest.raises(LockFormatError, match="not valid JSON"):
        spread.loads("{", "locks/differences.json")
    lines = spread.changes({"x": {"1.0": ("a",), "1.1": ("b",)}}, {"y": {"1.0": ("a",), "2.0": ("b",)}})
    assert lines == [
        "no longer differs across cells: x (one version in every cell that has it)",
        "now differs across cells: y: 1.0, 2.0",
    ]
