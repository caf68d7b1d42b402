"""The moment a run starts: what a cooldown (``exclude-newer = "7 days"``,
:mod:`lockgen.config.cooldown`) counts back from.

One moment per run, so every cell, layer and uv call of ``lockgen all`` gets the same cutoff.
:func:`start` marks it (the CLI, once per command); :func:`started` reads it, marking it on first
use when nothing did (a library caller). Whole seconds, UTC.
"""

from __future__ import annotations

import datetime as _dt

__all__ = ["now", "start", "started"]

_STARTED: list[_dt.datetime] = []


def now() -> _dt.datetime:
    """The time now, UTC (tests replace it to move a run in time)."""
    return _dt.datetime.now(_dt.timezone.utc)


def start(moment: _dt.datetime | None = None) -> _dt.datetime:
    """Mark the run's start: ``moment``, else :func:`now`; returns it."""
    now_ = (moment or now()).astimezone(_dt.timezone.utc).replace(microsecond=0)
    _STARTED[:] = [now_]
    return now_


def started() -> _dt.datetime:
    """The start of this run (:func:`start`; marked now when no one marked it)."""
    return _STARTED[0] if _STARTED else start()
