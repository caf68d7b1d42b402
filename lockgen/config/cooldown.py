"""Cooldowns: an ``exclude-newer`` cutoff given as a duration back from now.

uv (0.9 and newer; the pinned 0.13.9 included) and pixi accept, besides an RFC 3339 timestamp or
a date, a "friendly" duration (``"7 days"``, ``"1 week"``, ``"24 hours"``, ``"1w 2d"``) or an
ISO 8601 duration (``"P7D"``, ``"PT24H"``, ``"P1W"``) and resolve it to a fixed number of seconds
(a day is 24 hours); calendar units (months, years) are refused, as uv refuses them. lockgen
accepts the same spellings (:func:`span`), without uv's ``ago`` suffix (a cooldown always looks
back) or fractions, and resolves a duration once per run against the run's start
(:func:`lockgen.runtime.clock.started`, :func:`cutoff`): every cell and every uv call of a run
shares the cutoff, which each lock's header and the manifest record (``exclude-newer``, with the
duration as ``exclude-newer-span``, as ``uv.lock`` records both). The input hash holds the
setting as written, not the moving cutoff, so a lock does not go stale as days pass.
"""

from __future__ import annotations

import datetime as _dt
import re

__all__ = ["cutoff", "is_span", "span", "stamp"]

#: Unit spellings of uv's friendly format (jiff's), by their length in seconds.
_UNITS = {
    **dict.fromkeys(("w", "wk", "wks", "week", "weeks"), 7 * 86400),
    **dict.fromkeys(("d", "day", "days"), 86400),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
}
_CALENDAR = ("y", "yr", "yrs", "year", "years", "mo", "mos", "month", "months")
_FRIENDLY_PART = re.compile(r"(\d+)\s*([a-z]+)\s*,?\s*")
_ISO = re.compile(r"^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")


def span(text: str) -> _dt.timedelta | None:
    """The duration ``text`` spells (``"7 days"``, ``"1w 2d"``, ``"P7D"``, ``"PT24H"``), or None
    when it is not a duration (a timestamp, say). Raises ValueError, saying what to write, for a
    duration uv would refuse or lockgen does not take (months or years; ``ago``; zero)."""
    value = text.strip()
    upper = value.upper()
    if upper.startswith("P"):
        iso = _ISO.match(upper)
        if iso is None or upper in ("P", "PT") or upper.endswith("T"):
            if re.match(r"^P(\d+Y)?(\d+M)?", upper) and ("Y" in upper.split("T")[0] or "M" in upper.split("T")[0]):
                raise ValueError(f"{text!r} uses years or months, which uv does not allow; use days (P30D)")
            return None
        weeks, days, hours, minutes, seconds = (int(g or 0) for g in iso.groups())
        found = _dt.timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)
    else:
        lower = value.lower()
        if not lower or not lower[0].isdigit() or re.match(r"^\d{4}-\d{2}-\d{2}", lower):
            return None
        total, at = 0, 0
        for part in _FRIENDLY_PART.finditer(lower):
            if part.start() != at:
                break
            unit = part.group(2)
            if unit in _CALENDAR:
                raise ValueError(f'{text!r} uses {unit}, which uv does not allow; use days ("30 days")')
            if unit == "ago":
                raise ValueError(f"{text!r}: write the duration without 'ago' (a cooldown always looks back)")
            if unit not in _UNITS:
                return None
            total += int(part.group(1)) * _UNITS[unit]
            at = part.end()
        if at != len(lower):
            if lower[at:].strip() == "ago":
                raise ValueError(f"{text!r}: write the duration without 'ago' (a cooldown always looks back)")
            return None
        found = _dt.timedelta(seconds=total)
    if not found:
        raise ValueError(f'{text!r} is a duration of zero; give a cooldown such as "7 days", or no exclude-newer')
    return found


def is_span(text: str | None) -> bool:
    """True when ``text`` is a duration (a valid one: :func:`span` raises for the others)."""
    try:
        return text is not None and span(text) is not None
    except ValueError:
        return False


def stamp(moment: _dt.datetime) -> str:
    """``moment`` as the RFC 3339 UTC timestamp lockgen writes (``2026-11-29T02:55:23Z``)."""
    return moment.astimezone(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def cutoff(value: str, now: _dt.datetime) -> str:
    """The cutoff ``value`` (a setting as the config validated it) stands for at ``now``: a
    duration's ``now - duration`` (:func:`stamp`), anything else (a timestamp, ``false``)
    unchanged."""
    found = span(value)
    return value if found is None else stamp(now - found)
