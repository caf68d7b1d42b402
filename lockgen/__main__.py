"""``python -m lockgen`` and the ``lockgen`` command (``[project.scripts]``): :func:`run`.

Ctrl-C at any moment ends lockgen quietly (issue 15): ``interrupted`` and exit 130, never a
``KeyboardInterrupt`` traceback:

* from the moment this module is imported as the entry point until the command line is parsed
  and its core call starts, a Ctrl-C ends the process at once (:func:`_early`): nothing has been
  written and no process started yet, so there is nothing to clean up, and no half-finished
  import can raise a traceback;
* from then on, a Ctrl-C is a ``KeyboardInterrupt`` again, so that running uv and installer
  processes are ended and nothing half-written is recorded; :func:`lockgen.cli.main` reports it,
  and so does :func:`run` when it escapes (wrapped, on Python 3.11, in the ``RuntimeError`` of a
  class body's ``__set_name__`` during a lazy import);
* while the interrupt is being reported and the process exits, Ctrl-C is the system's default
  again (it ends the process by the signal, silently).

Only the interpreter's own start-up, before this module runs, is outside lockgen's reach.
"""

from __future__ import annotations

import os
import signal  # with os and sys, the only imports before Ctrl-C is handled: keep this module this small
import sys

__all__ = ["run"]


def _early(signum: int, frame: object) -> None:
    """Ctrl-C before the command's work starts: say so and exit 130 at once."""
    try:
        os.write(2, b"interrupted\n")
    finally:
        os._exit(130)


def _handled() -> bool:
    """Whether SIGINT has Python's own handler (not ignored, as for a shell's background job)."""
    try:
        return signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _early)
    except (ValueError, OSError):
        return False


def _set(handler: object) -> None:
    try:  # noqa: SIM105 - contextlib would be one more import before Ctrl-C is handled
        signal.signal(signal.SIGINT, handler)  # type: ignore[arg-type]
    except (ValueError, OSError, TypeError):  # not the main thread: nothing to change
        pass


def _quiet() -> None:
    """From now on Ctrl-C ends the process by the signal itself (no Python handler, so no
    ``KeyboardInterrupt`` while lockgen reports or exits); an ignored SIGINT stays ignored."""
    if _HANDLED:
        _set(signal.SIG_DFL)


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was caused by a ``KeyboardInterrupt`` (its cause or context chain)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _entry_point() -> bool:
    """Whether this module runs as lockgen's command (``python -m lockgen``, the ``lockgen``
    script), not imported by a program that uses lockgen as a library."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return __name__ == "__main__" or name.split(".")[0] == "lockgen"


_HANDLED = _handled()
if _HANDLED and _entry_point():
    _set(_early)


def run() -> None:
    """Run the command line (:func:`lockgen.cli.main`) and exit with its code (raises
    :class:`SystemExit`, always); 130 on Ctrl-C."""
    code = 130
    try:
        try:
            from lockgen.cli import main

            if _HANDLED:  # the work starts: Ctrl-C must stop processes and clean up from here on
                _set(signal.default_int_handler)
            code = main()
        except KeyboardInterrupt:  # before main's own handler runs, or while it reports
            _quiet()
            print("interrupted", file=sys.stderr)
            code = 130
        except Exception as exc:
            if not _interrupted(exc):
                raise
            _quiet()
            print("interrupted", file=sys.stderr)
            code = 130
        finally:
            _quiet()
    except KeyboardInterrupt:  # a second Ctrl-C before the handler above was replaced
        code = 130
    raise SystemExit(code)


if __name__ == "__main__":
    run()
