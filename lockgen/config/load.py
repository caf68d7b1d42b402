"""Find the configuration file and read it.

The configuration lives in ``[tool.lockgen]`` of ``pyproject.toml`` or at the top level of a
standalone ``lockgen.toml`` (same schema).
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lockgen.config.model import Config
from lockgen.runtime import bounded, keyed
from lockgen.runtime.errors import ConfigError, InputError, UsageError

__all__ = ["find_config", "load_config", "parse_toml"]

log = logging.getLogger("lockgen")


def find_config(start: Path, explicit: str | None = None) -> Path:
    """Return the config file to use.

    ``explicit`` (``-C/--config``) may name a file or a folder holding one. Otherwise the nearest
    ``lockgen.toml``, or ``pyproject.toml`` with a ``[tool.lockgen]`` table, from ``start`` upward.
    Raises :class:`UsageError` when none is found.
    """
    if explicit is not None:
        path = (start / explicit).resolve()
        if path.is_dir():
            found = _config_in(path)
            if found is None:
                raise UsageError(f"{explicit}: no lockgen.toml or pyproject.toml with [tool.lockgen] here")
            return found
        if not path.is_file():
            raise UsageError(f"{explicit}: no such config file")
        return path
    for folder in (start.resolve(), *start.resolve().parents):
        found = _config_in(folder)
        if found is not None:
            return found
    raise UsageError(
        f"no lockgen.toml or pyproject.toml with [tool.lockgen] in {start} or above; create one or pass -C PATH"
    )


def _config_in(folder: Path) -> Path | None:
    pyproject = folder / "pyproject.toml"
    if (folder / "lockgen.toml").is_file():
        if pyproject.is_file():
            _warn_if_both(folder)
        return folder / "lockgen.toml"
    if pyproject.is_file() and _has_table(pyproject):
        return pyproject
    return None


def _has_table(pyproject: Path) -> bool:
    return "lockgen" in keyed.table(_read_toml(pyproject).get("tool"))


@functools.cache  # once per folder and process, however often the config is looked up
def _warn_if_both(folder: Path) -> None:
    """A folder with both configs: ``lockgen.toml`` wins (as documented), but a user who edits
    the other one would see nothing change, and a full run removes the locks of cells only the
    ignored one has (a fresh-eyes review: silent). A ``pyproject.toml`` that is not valid TOML is
    not lockgen's business here: ``lockgen.toml`` is used as before."""
    try:
        if not _has_table(folder / "pyproject.toml"):
            return
    except ConfigError:
        return
    log.warning(
        "%s has both lockgen.toml and pyproject.toml with [tool.lockgen]: using lockgen.toml, "
        "pyproject.toml's table is ignored; remove one of them",
        folder,
    )


def _read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; raises :class:`ConfigError` naming it when it is not valid TOML."""
    try:
        return parse_toml(bounded.read_text(path, path.name))  # a byte-order mark (Notepad) is not TOML
    except InputError as exc:  # not UTF-8, a FIFO, too large: the reader's words, the file named once
        raise ConfigError(path.name, [f"cannot read it: {exc.problems[0].message if exc.problems else exc}"]) from None
    except Exception as exc:  # OSError, tomllib.TOMLDecodeError, tomlkit ParseError
        raise ConfigError(path.name, [f"cannot read TOML: {exc}"]) from exc


@functools.lru_cache(maxsize=8)
def parse_toml(text: str) -> dict[str, Any]:
    """Parse once per distinct text (discovery and loading read the same file). ``tomllib`` where
    the stdlib has it; tomlkit, which lockgen uses for comment-keeping edits, on Python 3.10. A
    leading byte-order mark (Notepad's) is dropped. The table is shared between callers: copy it
    before changing it."""
    text = text.removeprefix("\ufeff")
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)
    import tomlkit

    return tomlkit.parse(text).unwrap()


def load_config(path: Path, overlay: Mapping[str, str] | None = None) -> Config:
    """Read and validate ``path`` (a ``pyproject.toml`` or ``lockgen.toml``).

    ``overlay`` maps project-relative paths (``pyproject.toml``) to texts read instead of the
    files on disk: ``lockgen bump`` plans its edits before it writes them. Raises
    :class:`ConfigError` listing every problem with its key path.
    """
    overlay = overlay or {}
    text = overlay.get(path.name)
    if text is None:
        doc = _read_toml(path)
    else:
        try:
            doc = parse_toml(text.removeprefix("\ufeff"))
        except Exception as exc:  # tomllib.TOMLDecodeError, tomlkit ParseError
            raise ConfigError(path.name, [f"cannot read TOML: {exc}"]) from exc
    if path.name == "pyproject.toml":
        found, prefix = keyed.dig(doc, "tool", "lockgen"), "tool.lockgen"
        if not isinstance(found, dict):
            said = "missing" if found is None else f"must be a table, not {type(found).__name__}"
            raise ConfigError(path.name, [f"tool.lockgen: {said}; add a [tool.lockgen] table"])
        table = found
    else:
        table, prefix = doc, ""
    from lockgen.config.validate import Validator

    root = path.parent

    def read_text(file: Path) -> str:
        try:
            return overlay[file.relative_to(root).as_posix()].removeprefix("\ufeff")
        except (KeyError, ValueError):
            return bounded.read_text(file, file.name)  # a byte-order mark is not TOML

    return Validator(path.name, prefix, read_toml=parse_toml, read_text=read_text).config(table, root)
