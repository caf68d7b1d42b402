"""JSON that lockgen did not just write (a manifest, a shard's manifest, ``bundle.json``, a
manifest of another revision), read within bounds: at most :data:`~lockgen.cellselect.MAX_DEPTH`
levels deep, integers of at most :data:`~lockgen.cellselect.MAX_DIGITS` digits, finite numbers only.
The bounds are the vendored selector's own
(:func:`lockgen.cellselect.bounded_problem`): lockgen and the selector accept the same manifests.
Read the bytes with :func:`lockgen.runtime.bounded.read_file` (the size limit) first.
"""

from __future__ import annotations

from typing import Any

from lockgen import cellselect
from lockgen.runtime.bounded import MAX_BYTES, TooLarge
from lockgen.runtime.errors import InputError, Problem

__all__ = ["NotJson", "load_json"]


class NotJson(InputError):
    """Text that is not JSON at all (a syntax error), as opposed to JSON beyond the bounds."""


def load_json(data: bytes | str, where: str, what: str = "JSON", ours: bool = True) -> Any:
    """``data`` (UTF-8 bytes or text) as bounded JSON. Raises :class:`InputError` (exit 2)
    naming ``where`` and the key path: over :data:`MAX_BYTES`, not UTF-8, not JSON, nested
    deeper than the selector's bound, a number out of range (:class:`NotJson` for a syntax
    error, which some readers take as "no record"). ``ours``: ``what`` is a file lockgen
    writes (a manifest), said so in the message; False for others' JSON (an OSV record)."""
    if len(data) > MAX_BYTES:
        raise TooLarge(Problem(file=where, message=f"{len(data)} bytes: larger than any file lockgen writes"))
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(Problem(file=where, message=f"not UTF-8 text (byte offset {exc.start})")) from None
    value, path, problem = cellselect.bounded_problem(data)
    if problem is not None:
        if path is None:
            raise NotJson(Problem(file=where, message=f"not valid JSON ({problem[len('not JSON (') : -1]})"))
        raise InputError(Problem(file=where, key=path or None, message=f"not {what}{' lockgen wrote' if ours else ''}: {problem}"))
    return value
