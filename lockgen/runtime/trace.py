"""Timestamps per step of a run, to see where its time goes (docs/benchmarks.md, "Where the time goes").

Off unless the environment variable ``LOCKGEN_TRACE`` names a file: then every :func:`span`
(a step of the run or of one cell: the probe, a uv run, a hash check, the coverage read, the
manifest, a page fetched upstream) is appended to it as one JSON line when it ends::

    {"step": "uv", "cell": "linux-x86_64-cu130-py3.12", "start": 0.412, "end": 3.871,
     "thread": "cell worker 0", "detail": {"what": "main", "mode": "online", "exit": 0}}

``start`` and ``end`` are seconds since the first span of the process (a monotonic clock). The
cell of a span is the one :func:`cell` set for the thread (a cell worker), else ``""`` (the run's
own steps, the page cache's fetches). ``bench/timeline.py`` renders the file as a per-cell
timeline. A trace holds cell names, steps and URLs of the run's index pages (never a login: the
page cache does not proxy URLs with credentials); it is written only where the user asks, and
nothing of it goes into a lock or the manifest.

Switched off, a span costs one function call and a ``None`` check (no clock read, no allocation
beyond the call).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

__all__ = ["ENV_VAR", "cell", "enabled", "note", "now", "span"]

ENV_VAR = "LOCKGEN_TRACE"

_lock = threading.Lock()
_sink: IO[str] | None = None
_checked = False
_origin = 0.0
_local = threading.local()


def _open() -> IO[str] | None:
    """The trace file (opened on first use from :data:`ENV_VAR`), or None when tracing is off."""
    global _sink, _checked, _origin
    if _checked:
        return _sink
    with _lock:
        if not _checked:
            path = os.environ.get(ENV_VAR, "")
            if path:
                try:
                    _sink = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives for the process
                except OSError:
                    _sink = None
            _origin = time.monotonic()
            _checked = True
    return _sink


def enabled() -> bool:
    """Whether this process traces (``LOCKGEN_TRACE`` names a file that could be opened)."""
    return _open() is not None


def cell(name: str) -> None:
    """Attribute the calling thread's next spans to cell ``name`` (``""``: to none)."""
    _local.cell = name


def _write(step: str, start: float, end: float, detail: dict[str, Any]) -> None:
    sink = _sink
    if sink is None:
        return
    record = {
        "step": step, "cell": getattr(_local, "cell", ""), "start": round(start - _origin, 4),
        "end": round(end - _origin, 4), "thread": threading.current_thread().name, "detail": detail,
    }  # fmt: skip
    line = json.dumps(record, default=str) + "\n"
    with _lock:
        sink.write(line)


@contextlib.contextmanager
def _timed(step: str, detail: dict[str, Any]) -> Iterator[dict[str, Any]]:
    start, cpu = time.monotonic(), time.thread_time()
    try:
        yield detail
    finally:
        detail["cpu"] = round(time.thread_time() - cpu, 4)  # this thread's CPU seconds in the step
        _write(step, start, time.monotonic(), detail)


_OFF: contextlib.nullcontext[dict[str, Any]] = contextlib.nullcontext({})


def span(step: str, **detail: Any) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """A context manager timing ``step`` of the calling thread's cell; it yields the detail
    mapping, to which the step may add what it learned (an exit code, a count). A no-op when
    tracing is off (the yielded mapping is then a shared empty one: write to it freely, it is
    discarded)."""
    if _open() is None:
        return _OFF
    return _timed(step, dict(detail))


def now() -> float:
    """The clock of :func:`note` (:func:`time.monotonic`)."""
    return time.monotonic()


def note(step: str, start: float, **detail: Any) -> None:
    """Record a step that began at ``start`` (:func:`time.monotonic`) and ends now."""
    if _open() is not None:
        _write(step, start, time.monotonic(), detail)
