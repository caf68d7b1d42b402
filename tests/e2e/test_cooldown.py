"""Cooldowns: ``exclude-newer`` (per cell, per package, per source) as a duration back from the
run's start (``"7 days"``, ``"P7D"``, as uv and pixi accept), resolved once per run, recorded in
each lock's header and the manifest, and not moving the input hash: a lock does not go stale as
days pass, and a re-run that changes nothing rewrites nothing."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from pathlib import Path

import pytest

from lockgen.config import cooldown
from lockgen.project import Project
from lockgen.resolve import uv
from lockgen.runtime import clock
from tests.conftest import locked_versions, one_cell, run_cli, run_ok

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{HOST}"
UTC = dt.timezone.utc
START = dt.datetime(2026, 6, 10, 12, 30, 5, tzinfo=UTC)


def plan_of(root: Path):
    project = Project.load(root, None)
    (plan,) = project.plans(project.cells)
    return plan


@pytest.fixture
def at(monkeypatch):
    """``at(moment)``: runs from now on start at ``moment`` (the CLI marks the start of each)."""

    def move(moment: dt.datetime) -> None:
        monkeypatch.setattr(clock, "now", lambda: moment)
        clock.start()

    yield move
    clock.start()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("7 days", 7 * 86400), ("1 week", 7 * 86400), ("24 hours", 86400), ("7d", 7 * 86400),
        ("1w 2d", 9 * 86400), ("1 week, 2 days", 9 * 86400), ("90 minutes", 5400),
        ("P7D", 7 * 86400), ("p7d", 7 * 86400), ("PT24H", 86400), ("P1W", 7 * 86400), ("P1DT12H", 129600),
    ],
)  # fmt: skip
def test_the_durations_uv_accepts(text, seconds):
    assert cooldown.span(text) == dt.timedelta(seconds=seconds)
    assert cooldown.cutoff(text, START) == cooldown.stamp(START - dt.timedelta(seconds=seconds))


@pytest.mark.parametrize(
    ("text", "said"),
    [("1 month", "use days"), ("2 years", "use days"), ("P1M", "use days"), ("3 days ago", "without 'ago'"),
     ("0 days", "zero")],
)  # fmt: skip
def test_the_durations_uv_refuses_are_refused_saying_what_to_write(text, said):
    with pytest.raises(ValueError, match=said):
        cooldown.span(text)


def test_what_is_not_a_duration_is_left_to_the_timestamp_check():
    for text in ("2026-11-25", "2026-11-25T00:00:00Z", "false", "soon", "7 fortnights", "P"):
        assert cooldown.span(text) is None, text
    assert cooldown.cutoff("2026-11-25T00:00:00Z", START) == "2026-11-25T00:00:00Z"
    assert cooldown.cutoff("false", START) == "false"


def test_a_duration_is_resolved_at_the_runs_start_and_does_not_move_the_input_hash(tmp_path, at):
    extra = 'exclude-newer = "7 days"\nexclude-newer-package = { numpy = "P1D", torch = false }'
    root = one_cell(tmp_path / "p", "https://pypi.org/simple", "numpy\n", python=HOST, extra=extra)
    at(START)
    plan = plan_of(root)
    assert plan.exclude_newer == "2026-06-03T12:30:05Z" and plan.exclude_newer_span == "7 days"
    argv = uv.compile_argv(plan, "out.toml")
    assert argv[argv.index("--exclude-newer") + 1] == "2026-06-03T12:30:05Z"
    pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "--exclude-newer-package"]
    assert pairs == ["numpy=2026-06-09T12:30:05Z", "torch=false"]
    at(START + dt.timedelta(days=30))
    later = plan_of(root)
    assert later.exclude_newer == "2026-07-03T12:30:05Z"
    assert later.input_hash == plan.input_hash  # the setting as written, not the moving cutoff


def test_a_source_has_a_cutoff_of_its_own(tmp_path, at):
    extra = """use = ["builds"]
exclude-newer = "2026-01-01T00:00:00Z"
[tool.lockgen.sources.builds]
index = "https://example.org/whl/{backend}"
packages = ["torch"]
exclude-newer = "3 days"
[tool.lockgen.sources.pages]
find-links = "https://example.org/flat/"
packages = ["natten"]"""
    root = one_cell(tmp_path / "p", "https://pypi.org/simple", "numpy\n", python=HOST, extra=extra)
    text = (root / "pyproject.toml").read_text().replace('use = ["builds"]', 'use = ["builds", "pages"]')
    (root / "pyproject.toml").write_text(text)
    at(START)
    argv = uv.compile_argv(plan_of(root), "out.toml")
    pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "--exclude-newer-package"]
    assert pairs == ["natten=false", "torch=2026-06-07T12:30:05Z"]  # a source without one: no cutoff


def test_a_duration_uv_refuses_is_a_config_error_naming_the_key(tmp_path):
    for extra, key in [
        ('exclude-newer = "1 month"', "tool.lockgen.exclude-newer"),
        ('exclude-newer-package = { numpy = "2 years" }', "tool.lockgen.exclude-newer-package.numpy"),
    ]:
        root = one_cell(tmp_path / key, "https://pypi.org/simple", "numpy\n", python=HOST, extra=extra)
        run = run_cli("matrix", "-C", str(root))
        assert run.code == 2 and f"{key}: " in run.err and "use days" in run.err, run.err


@pytest.mark.uv
def test_a_cooldown_locks_what_is_old_enough_records_the_cutoff_and_stays_fresh(tmp_path, index, at):
    files = [index.wheel("files", "fresh", "1.0"), index.wheel("files", "fresh", "1.1")]
    times = {files[0].name: "2026-05-01T00:00:00Z", files[1].name: "2026-06-08T00:00:00Z"}
    url = index.index_page("simple", files, upload_time=times)
    root = one_cell(tmp_path / "p", url, "fresh\n", python=HOST, extra='exclude-newer = "7 days"')
    at(START)
    run_ok("all", "-C", str(root))
    lock = root / "locks" / f"{CELL}.txt"
    text = lock.read_text()
    assert locked_versions(text)["fresh"] == "1.0"  # 1.1 is two days old
    assert "# exclude-newer: 2026-06-03T12:30:05Z\n# exclude-newer-span: 7 days\n" in text
    entry = json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]
    assert (entry["exclude_newer"], entry["exclude_newer_span"]) == ("2026-06-03T12:30:05Z", "7 days")
    before = {p: p.read_bytes() for p in (root / "locks").rglob("*") if p.is_file()}
    at(START + dt.timedelta(days=8))  # 1.1 is old enough now, but nothing asked for a re-lock
    assert run_cli("check", "-C", str(root)).code == 0
    run_ok("all", "-C", str(root))
    assert {p: p.read_bytes() for p in (root / "locks").rglob("*") if p.is_file()} == before
    # resolved again from the recorded start, the cooldown gives the same lock (not today's 1.1)
    again = run_cli("check", "--resolve", "-C", str(root))
    assert again.code == 0, again.err + again.out
    run_ok("all", "-C", str(root), "--upgrade")
    text = lock.read_text()
    assert locked_versions(text)["fresh"] == "1.1" and "# exclude-newer: 2026-06-11T12:30:05Z\n" in text


@pytest.mark.uv
def test_a_forced_run_that_moves_only_the_cutoff_says_so(tmp_path, index, at):
    """``all --force`` under a cooldown counts the cutoff back from its own start: the headers
    change though no package does, and the run says which cutoff moved instead of "no lock
    changes" (a reviewer sees the files change in the pull request)."""
    files = [index.wheel("files", "fresh", "1.0"), index.wheel("files", "fresh", "1.1")]
    times = {files[0].name: "2026-05-01T00:00:00Z", files[1].name: "2026-06-08T00:00:00Z"}
    url = index.index_page("simple", files, upload_time=times)
    root = one_cell(tmp_path / "p", url, "fresh\n", python=HOST, extra='exclude-newer = "7 days"')
    at(START)
    run_ok("all", "-C", str(root))
    before = tmp_path / "before"
    shutil.copytree(root / "locks", before)
    at(START + dt.timedelta(days=1))
    run = run_ok("all", "--force", "-C", str(root))
    said = run.out + run.err
    moved = "exclude-newer 2026-06-03T12:30:05Z → 2026-06-04T12:30:05Z in the headers (1 of 1 cells)"
    assert "no package changes" in said and "no lock changes" not in said and moved in said
    diff = run_cli("diff", str(before), str(root / "locks"), "--exit-code", "-C", str(root))
    assert diff.code == 1 and moved in diff.out, diff.out + diff.err
    markdown = run_cli("diff", str(before), str(root / "locks"), "--format", "markdown", "-C", str(root))
    assert "**Cooldown cutoffs**" in markdown.out and moved in markdown.out
