"""Whole lockgen processes (issue 8): two runs at once, Ctrl-C and SIGTERM on a 12-cell run, and
SIGKILL while a cell's files are written. ``bench/concurrency.py`` and ``bench/interrupt.py``
run the same trials many times and time them."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator

import pytest

from tests.support.faulthost import FaultHost
from tests.support.trials import TWELVE, TWO, World, copy_project, kill_mid_write, lockgen, signal_mid_layer, snapshot

pytestmark = [pytest.mark.uv, pytest.mark.slow]  # these tests lock with the real uv

SLOW_WHEEL = "https://slow.example/wheels/extra-1.0-py3-none-any.whl"  # a direct URL lockgen hashes itself


@pytest.fixture
def world(tmp_path, uv_cache) -> Iterator[World]:
    made = World.make(tmp_path, TWO, cache=uv_cache)
    yield made
    made.stop()


@pytest.fixture
def twelve(tmp_path, uv_cache) -> Iterator[World]:
    made = World.make(tmp_path, TWELVE, cache=uv_cache)
    yield made
    made.stop()


def unavailable(world: World) -> list[str]:
    cells = json.loads((world.root / "locks" / "manifest.json").read_text())["cells"]
    return [name for name, entry in cells.items() if entry.get("unavailable")]


# ------------------------------------------------------------------ two runs at once


def outputs(world: World, other: dict[str, str], tmp_path) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """What a run with ``world.env`` and one with ``other`` each write on their own."""
    found = []
    for n, env in enumerate((world.env, other)):
        copy = World(copy_project(world, tmp_path / f"reference-{n}"), world.pypi, world.slow, env)
        assert copy.run("all", "--force", env=env).returncode == 0
        found.append(snapshot(copy.root))
    return found[0], found[1]


def test_two_runs_at_once_never_leave_a_mixed_lock(world, tmp_path):
    """Run A sees alpha 1.0 through one mirror, run B alpha 2.0 through another (other bytes,
    other hashes), both at once: the second waits (``--wait``) or refuses; afterwards every file
    is exactly what one of them writes alone. ``bench/concurrency.py`` runs 100 such pairs."""
    other = FaultHost(tmp_path / "pypi2")
    try:
        for name, version in (("alpha", "2.0"), ("beta", "1.0")):
            other.wheel("files", name, version)
        other.index("simple", sorted((other.root / "files").glob("*.whl")))
        env_b = {**world.env, "LOCKGEN_MIRRORS": world.env["LOCKGEN_MIRRORS"].replace(world.pypi.url, other.url)}
        assert world.run("all").returncode == 0
        one, two = outputs(world, env_b, tmp_path)
        assert one != two
        for flags in (("--wait",), ()):
            first = lockgen(world.root, "all", "--force", *flags, env=world.env)
            second = lockgen(world.root, "all", "--force", *flags, env=env_b)
            results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in (first, second)]
            codes = sorted(code for code, _ in results)
            assert codes == [0, 0] if flags else codes in ([0, 0], [0, 2]), results  # overlapped: one refused
            for code, err in results:
                if code == 2:
                    assert "another lockgen run is working on this project (pid " in err
                    assert "--wait" in err
            assert snapshot(world.root) in (one, two)
            assert world.run("check").returncode == 0
    finally:
        other.stop()


# ------------------------------------------------------------------ Ctrl-C and SIGTERM


def test_ctrl_c_and_sigterm_stop_a_12_cell_run_and_record_nothing(twelve):
    """A terminal's Ctrl-C (SIGINT to the process group), then SIGTERM, while uv hangs on an
    optional layer's stalled host: exit 130, no uv left, no file written, no layer recorded as
    unavailable, the cells still stale; the next run does the work. ``bench/interrupt.py`` times
    it (the issue asks for 2 s)."""
    world = twelve
    assert world.run("all").returncode == 0
    before = snapshot(world.root)
    world.change_inputs()  # every cell is stale
    world.slow.delay = 120  # the optional layer's host stalls: uv hangs there until it is killed
    for signum in (signal.SIGINT, signal.SIGTERM):
        stopped = signal_mid_layer(world, signum)
        assert stopped.code == 130, stopped.err
        assert stopped.left == []  # no uv process outlives lockgen
        assert ": interrupted" in stopped.err
        assert "Traceback" not in stopped.err
        assert snapshot(world.root) == before  # no cell that was interrupted is written
        assert unavailable(world) == []  # an interrupted layer is never recorded as unavailable
        assert world.run("check").returncode == 1  # the cells are still stale, not "up to date"
    world.slow.delay = 0
    run = world.run("all")
    assert run.returncode == 0, run.stderr
    assert "12 locked" in run.stderr
    assert unavailable(world) == []
    assert world.run("check").returncode == 0


def test_ctrl_c_while_pages_are_prefetched_from_a_stalled_index(twelve):
    """Ctrl-C while the run's page cache prefetches the committed locks' pages from an index
    that stalls: exit 130 without waiting for the fetches in flight (a fresh-eyes review waited
    60 s, the read timeout: the prefetch pool's threads held the interpreter's exit)."""
    world = twelve
    assert world.run("all").returncode == 0  # committed locks: their pages are prefetched
    before = snapshot(world.root)
    world.pypi.delay = 120
    # a hang guard, not a timing: the bug held the exit for the 60 s read timeout
    stopped = signal_mid_layer(world, signal.SIGINT, ("all", "--force"), host=world.pypi, hang=30)
    world.pypi.delay = 0
    assert stopped.code == 130, stopped.err
    assert "Traceback" not in stopped.err
    assert stopped.left == []
    assert snapshot(world.root) == before


def test_ctrl_c_while_lockgen_waits_on_a_stalled_download(world):
    """Ctrl-C while a cell waits on a download lockgen makes itself (hashing a direct wheel URL)
    from a host that accepted the request and sends nothing: the run does not wait for the 60 s
    read timeout; exit 130, nothing written, no uv left. (Before, the run waited for the timeout,
    then wrote both cells with the layer recorded as unavailable and exited 0.)"""
    config = world.root / "pyproject.toml"
    text = config.read_text().replace('use = ["slow"]\n', "")  # the slow host serves the layer's URL only
    config.write_text(text.replace('optional = ["extra"]', f'optional = ["{SLOW_WHEEL}"]'))
    assert world.run("all").returncode == 0
    before = snapshot(world.root)
    world.change_inputs()
    world.slow.delay = 120  # answers HEAD (the probe), stalls every GET
    # a hang guard, not a timing: a stuck download held the exit for the 60 s read timeout
    stopped = signal_mid_layer(world, signal.SIGINT, ("all", "--force"), hang=30)
    world.slow.delay = 0
    assert stopped.code == 130, stopped.err
    assert "Traceback" not in stopped.err
    assert stopped.left == []
    assert snapshot(world.root) == before
    assert unavailable(world) == []


# ------------------------------------------------------------------ SIGKILL while writing


def test_a_run_killed_while_writing_is_cleaned_or_finished_by_the_next(world, tmp_path):
    """SIGKILL after the first temporary file of a cell was written (its unit only prepared): the
    next command rolls it back. SIGKILL after the first file was renamed over its lock (the unit
    committed): the next command, ``check`` too, finishes the cell from the journal before it
    reads anything. Either way the locks end as one uninterrupted run writes them."""
    assert world.run("all").returncode == 0
    world.change_inputs()
    expected = World(copy_project(world, tmp_path / "expected"), world.pypi, world.slow, world.env)
    assert expected.run("all").returncode == 0

    killed = kill_mid_write(world, "staging")
    assert killed.returncode == -signal.SIGKILL
    (journal,) = (world.root / ".lockgen" / "journal").glob("*.json")
    assert '"prepared"' in journal.read_text()
    staged = list((world.root / ".lockgen" / "journal").rglob("*.tmp"))
    assert len(staged) == 1 and not list((world.root / "locks").rglob(".*.tmp"))

    killed = kill_mid_write(world, "replacing")  # starts by rolling the first kill's unit back
    assert killed.returncode == -signal.SIGKILL
    assert not any(p.exists() for p in staged)
    (journal,) = (world.root / ".lockgen" / "journal").glob("*.json")
    assert '"committed"' in journal.read_text()
    assert list((world.root / ".lockgen" / "journal").rglob("*.tmp"))  # the rest of the cell, staged
    check = world.run("check")
    assert f"finished writing {journal.stem}, which a killed run had left half-written" in check.stderr
    assert not list((world.root / ".lockgen" / "journal").iterdir())

    run = world.run("all")
    assert run.returncode == 0, run.stderr
    assert not list((world.root / "locks").rglob(".*.tmp"))
    assert not list((world.root / ".lockgen" / "journal").glob("*.json"))
    assert world.run("check").returncode == 0
    assert snapshot(world.root) == snapshot(expected.root)
