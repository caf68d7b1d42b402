"""The shared base of the config validator: the config's own field readers over the one keyed validator.

:class:`Checks` is :class:`lockgen.runtime.keyed.Checks` (key paths, the problem records, strings,
arrays, unknown keys) with what only the config reads: a URL, a cutoff, the matrix's axes. The validator's subjects are
mixins over it: :mod:`.settings`, :mod:`.sources`, :mod:`.backends`, :mod:`.metadata`, and the matrix
and rules in :mod:`.validate`, which puts them together as :class:`~lockgen.config.validate.Validator`.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lockgen.config.model import AXES
from lockgen.runtime import bounded, keyed
from lockgen.runtime.keyed import KeyPath

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$")

__all__ = ["NAME_PATTERN", "URL", "VAR_NAME", "Checks", "KeyPath"]

VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
URL = re.compile(r"^(https?://[^\s/]|file://)")
#: Package-name patterns of ``backends`` and ``allow-mix``: name characters, ``*``, ``?``.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9._*?-]+$")


class Checks(keyed.Checks):
    """One validation run over the config ``source`` (``pyproject.toml``) whose table sits at
    ``prefix`` (``tool.lockgen``, or ``""`` in a ``lockgen.toml``); key paths, problems and the
    plain readers are :class:`lockgen.runtime.keyed.Checks`'s."""

    def __init__(
        self,
        source: str,
        prefix: str,
        read_toml: Callable[[str], dict[str, Any]] | None = None,
        read_text: Callable[[Path], str] | None = None,
    ):
        super().__init__(source, prefix)
        self.read_toml = read_toml  # TOML text -> table, for the project's pyproject.toml (load.parse_toml)
        # a project file's text (the pyproject.toml of [project]); lockgen bump reads its edits so
        self.read_text = read_text or (lambda path: bounded.read_text(path, path.name))
        self.extra: tuple[str, ...] = ()  # the matrix's extra axes, once read

    @property
    def axis_names(self) -> tuple[str, ...]:
        return (*AXES, *self.extra)

    def url(self, value: Any, path: KeyPath) -> str | None:
        """A URL with its scheme (uv would read ``pypi.org/simple`` as a folder)."""
        text = self.string(value, path)
        if text is not None and not URL.match(text):
            self.problem(
                path, f"{text!r} is not a URL; write it with its scheme, such as https://{text.split('://')[-1]}"
            )
        return text

    def timestamp(self, value: Any, path: KeyPath) -> str | None:
        """A cutoff: an RFC 3339 timestamp with a time zone, a date (UTC midnight), or a duration
        back from the run's start (``"7 days"``, ``"P7D"``: :mod:`lockgen.config.cooldown`, as uv
        and pixi accept), kept as written."""
        from lockgen.config import cooldown

        text = value.isoformat() if isinstance(value, (_dt.date, _dt.datetime)) else value
        text = self.string(text, path)
        if text is None:
            return None
        try:
            if cooldown.span(text) is not None:
                return text.strip()
        except ValueError as exc:
            self.problem(path, str(exc))
            return None
        try:
            if not (_DATE.match(text) or _TIMESTAMP.match(text)):
                raise ValueError(text)
            parsed = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            self.problem(
                path, f'{text!r} is not a date, an RFC 3339 timestamp (2026-11-25T00:00:00Z) or a duration ("7 days")'
            )
            return None
        if _DATE.match(text):  # uv reads a bare date in the local time zone: pin it to UTC midnight
            return f"{text}T00:00:00Z"
        if parsed.tzinfo is None:
            self.problem(path, f"{text!r} needs a time zone (end it with Z) so it means the same everywhere")
            return None
        return text
