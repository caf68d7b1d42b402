"""What ``lockgen install`` knows about a venv it installed into: the record of the last install
(``lockgen-install.json``) and, per distribution, that its files came from an archive whose hash
the lock lists.

Why this is needed. The install commands carry ``--require-hashes``, so uv and pip check every
archive they *download or unpack* against the lock's ``--hash`` values. But neither checks a
distribution that is *already installed* at the locked version: ``uv pip sync --require-hashes``
keeps it ("Checked 1 package"), pip says "Requirement already satisfied". A venv whose ``alpha
1.0`` came from another build (another index, a local wheel, a file edited after install) passes
the installers and a version check alike. Installed distributions carry no archive hash (a
``RECORD`` lists the hashes of the files it unpacked, not of the archive), so lockgen keeps the
chain itself:

1. When a hashed layer's command (built by lockgen, with ``--require-hashes``) has installed a
   distribution, lockgen records it as *traced* (:class:`Traced`): the lock entry's hashes the
   installer checked its archive against, the sha256 of its ``RECORD`` file, and a stat hint.
2. Its files are checked against that ``RECORD`` (PEP 376/627: every listed file with a hash
   exists, inside the venv, with that sha256 and size; :func:`file_problems`), so nothing was
   changed after the installer unpacked the checked archive. What an installer legitimately
   writes passes: the files it generates (console scripts, ``INSTALLER``, ``REQUESTED``,
   ``direct_url.json``: listed with the hash of what it wrote), bytecode listed without a hash
   (pip 23's ``path,,`` rows), bytecode pip compiled over a ``.pyc`` the wheel shipped (its source
   is checked instead: :func:`recompiled`), and a file listed twice (it matches one of its rows).
3. A later install or up-to-date check trusts a distribution only when it is traced with hashes
   that the current lock entry still lists (a subset: the archive's hash was one of them), the
   same version and ``RECORD``, and files that still match (the stat hint, sizes and mtimes
   of every listed file, decides only *when* to hash them again, as git's index does; a changed
   hint means they are hashed). Every other distribution a hashed layer locks is uninstalled
   before the layers run, so the installer fetches it again with the hash check.

Not covered: the ``unhashed`` layer (editable, local and VCS projects have no archive hash) and
the seed packages ``pip``, ``setuptools`` and ``wheel`` when no lock lists them. The record is
parsed into typed values (:func:`read_state`); anything unexpected in it counts as no record
(everything is then reinstalled), never as a proof.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import NormalizedName, canonicalize_name

from lockgen.runtime import bounded
from lockgen.runtime.errors import InputError

__all__ = [
    "STATE_FILE", "Installed", "LayerState", "State", "Traced", "by_name", "clear_state", "file_problems", "read_state",
    "recompiled", "record_digest", "stat_hint", "trace", "traced_all", "traced_now", "versions", "write_state",
]  # fmt: skip

#: The record of the last install, in the venv's folder.
STATE_FILE = "lockgen-install.json"
#: Its layout: 2 added the traced distributions and each layer's command.
STATE_VERSION = 2
#: A RECORD larger than this is not read (torch's is about 2 MiB).
_MAX_RECORD = 64 * 1024 * 1024


@dataclass(frozen=True)
class Installed:
    """A distribution in the venv: its canonical name, version and ``.dist-info`` folder (None
    for a distribution without one, e.g. an ``.egg-info`` of an old editable install)."""

    name: NormalizedName
    version: str
    dist_info: Path | None


@dataclass(frozen=True, kw_only=True)
class Traced:
    """A distribution lockgen installed with hash checking (see the module docstring)."""

    version: str
    hashes: tuple[str, ...]  # the lock entry's ``sha256:<hex>`` values its archive was checked against
    record: str  # sha256 of its RECORD file right after the install
    stat: str  # the stat hint of the files RECORD lists, when they last matched


@dataclass(frozen=True, kw_only=True)
class LayerState:
    """One layer of the last install: its file's sha256, whether it is installed (an optional
    layer may have been rolled back), and the command it ran (credentials removed): a layer
    rolled back with another command (another ``--index-url``, other mirrors) is tried again."""

    name: str
    sha256: str
    installed: bool
    command: str = ""


@dataclass(frozen=True, kw_only=True)
class State:
    """The record of the last install into a venv."""

    cell: str
    installer: str
    layers: tuple[LayerState, ...] = ()
    distributions: Mapping[str, Traced] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "version": STATE_VERSION, "cell": self.cell, "installer": self.installer,
            "layers": [
                {"name": s.name, "sha256": s.sha256, "installed": s.installed, "command": s.command} for s in self.layers
            ],
            "distributions": {
                name: {"version": t.version, "hashes": list(t.hashes), "record": t.record, "stat": t.stat}
                for name, t in sorted(self.distributions.items())
            },
        }  # fmt: skip


def read_state(venv: Path) -> State | None:
    """The record :func:`write_state` left in ``venv``; None when there is none or it is not
    exactly that layout (an older lockgen's, an edit): no record proves nothing."""
    try:
        data = bounded.read_cache(venv / STATE_FILE)
        if data.get("version") != STATE_VERSION:
            return None
        layers = tuple(
            LayerState(name=_str(d["name"]), sha256=_str(d["sha256"]), installed=_bool(d["installed"]), command=_str(d["command"]))
            for d in data["layers"]
        )  # fmt: skip
        distributions = {_str(name): _traced(d) for name, d in data["distributions"].items()}
        return State(
            cell=_str(data["cell"]), installer=_str(data["installer"]), layers=layers, distributions=distributions
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def _traced(d: dict[str, object]) -> Traced:
    hashes = d["hashes"]
    if not isinstance(hashes, list):
        raise TypeError(hashes)
    return Traced(
        version=_str(d["version"]),
        hashes=tuple(_str(h) for h in hashes),
        record=_str(d["record"]),
        stat=_str(d["stat"]),
    )


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(value)
    return value


def write_state(venv: Path, state: State) -> None:
    """Write the record into ``venv`` (atomically: a kill leaves the old one or none)."""
    from lockgen.locks.store import write_text

    write_text(venv / STATE_FILE, json.dumps(state.to_dict(), indent=2, sort_keys=True) + "\n")


def clear_state(venv: Path) -> None:
    """Remove the record before an install changes the venv: an install that is killed part way
    leaves none, so the next run installs everything again instead of trusting it."""
    (venv / STATE_FILE).unlink(missing_ok=True)


# -- RECORD (PEP 376, PEP 627) ---------------------------------------------------------------------


def record_digest(dist: Installed) -> str | None:
    """sha256 (hex) of the distribution's RECORD file; None when it has none."""
    data = _record_bytes(dist)
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _record_bytes(dist: Installed) -> bytes | None:
    if dist.dist_info is None:
        return None
    path = dist.dist_info / "RECORD"
    try:
        return bounded.read_file(path, str(path), _MAX_RECORD)
    except (OSError, InputError):
        return None


def _rows(dist: Installed, prefix: Path) -> tuple[dict[str, list[tuple[str, int | None]]], list[str]]:
    """``({file: [("sha256=<b64>", size or None), …]}, problems)`` of the hashed rows of RECORD,
    in RECORD's order (rows without a hash, such as RECORD itself or the bytecode pip 23 lists
    as ``path,,``, are skipped). A file listed more than once keeps every hash it was listed with
    (pip keeps a wheel's duplicated line, and a generated file written over a shipped one is
    listed again). A path outside ``prefix`` or a hash of another algorithm than sha256 is a
    problem. Plain strings: a torch RECORD has 15,000 rows."""
    data = _record_bytes(dist)
    if data is None or dist.dist_info is None:
        return {}, [f"{dist.name} {dist.version} has no RECORD file lockgen can read"]
    top = os.path.realpath(prefix)
    base = os.path.realpath(dist.dist_info.parent)  # once: the rows are confined lexically below it
    rows: dict[str, list[tuple[str, int | None]]] = {}
    problems: list[str] = []
    try:
        lines = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error) as exc:
        return {}, [f"{dist.name}: its RECORD is not readable ({exc})"]
    for line in lines:
        if len(line) < 2 or not line[1]:
            continue
        path = os.path.normpath(os.path.join(base, line[0]))
        if not path.startswith(top + os.sep):
            problems.append(f"{dist.name}: its RECORD names {line[0]!r}, outside the venv")
            continue
        if not line[1].startswith("sha256="):
            problems.append(
                f"{dist.name}: its RECORD hashes {line[0]!r} with {line[1].partition('=')[0]!r}, not sha256"
            )
            continue
        size = int(line[2]) if len(line) > 2 and line[2].isdigit() else None
        listed = rows.setdefault(path, [])
        if (line[1], size) not in listed:
            listed.append((line[1], size))
    return rows, problems


def stat_hint(dist: Installed, prefix: Path) -> str:
    """sha256 of every hashed RECORD file's path, size and modification time (ns): a cheap sign
    that no file changed since they last matched (it only decides when to hash them again)."""
    rows, problems = _rows(dist, prefix)
    digest = hashlib.sha256("\n".join(problems).encode())
    for path in rows:
        try:
            st = os.stat(path)
            digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            digest.update(f"{path}\0missing\n".encode())
    return digest.hexdigest()


def file_problems(dist: Installed, prefix: Path) -> list[str]:
    """Every file the distribution's RECORD lists with a hash, checked: it exists inside the venv
    ``prefix``, with that size and sha256 (one of them, for a file listed more than once), or it
    is bytecode the installer may have compiled again (:func:`recompiled`). One message per file
    that does not (empty: all do)."""
    rows, problems = _rows(dist, prefix)
    top = os.path.realpath(prefix)
    for path, listed in rows.items():
        try:
            digest = hashlib.sha256()
            length = 0
            with open(path, "rb") as fh:
                head = fh.read(16)
                digest.update(head)
                length += len(head)
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
                    length += len(chunk)
        except OSError as exc:
            problems.append(
                f"{dist.name}: {os.path.relpath(path, top)} is missing or unreadable ({exc.strerror or exc})"
            )
            continue
        actual = "sha256=" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
        if any(actual == recorded and (size is None or size == length) for recorded, size in listed):
            continue
        if not recompiled(path, head, rows):
            problems.append(f"{dist.name}: {os.path.relpath(path, top)} is not the file it installed")
    return problems


def recompiled(path: str, head: bytes, rows: Mapping[str, object]) -> bool:
    """Whether ``path``, whose bytes differ from its RECORD hash, is bytecode its installer may
    legitimately have written again: a ``__pycache__/<module>.<tag>.pyc`` (PEP 3147) whose source
    file the same RECORD lists with a hash (that source is checked), and whose header (``head``,
    its first 16 bytes; PEP 552) makes Python check it against that source before using it: a
    timestamp pyc (flags 0: source mtime and size) or a checked-hash one (flags 3). pip compiles
    every installed ``.py`` with ``compileall`` and ``force=True``, overwriting a ``.pyc`` the wheel
    shipped while RECORD keeps the wheel's hash for it. An unchecked-hash pyc (flags 1), which
    Python runs without looking at its source, must match RECORD."""
    if not path.endswith(".pyc") or os.path.basename(os.path.dirname(path)) != "__pycache__":
        return False
    try:
        source = importlib.util.source_from_cache(path)
    except (ValueError, NotImplementedError):
        return False
    flags = int.from_bytes(head[4:8], "little") if len(head) >= 16 else None
    return source in rows and flags in (0, 3)


def trace(dist: Installed, recorded: Traced | None, hashes: Sequence[str], prefix: Path) -> Traced | None:
    """``dist`` as traced now, or None when lockgen cannot trace it to ``hashes`` (the lock
    entry's): it was recorded (``recorded``) with hashes all among ``hashes``, at its version,
    with its RECORD unchanged, and its files match (hashed again only when the stat hint changed)."""
    if recorded is None or recorded.version != dist.version or not set(recorded.hashes) <= set(hashes):
        return None
    if record_digest(dist) != recorded.record:
        return None
    hint = stat_hint(dist, prefix)
    if hint != recorded.stat and file_problems(dist, prefix):
        return None
    return Traced(version=recorded.version, hashes=recorded.hashes, record=recorded.record, stat=hint)


def traced_now(dist: Installed, hashes: Sequence[str], prefix: Path) -> tuple[Traced | None, list[str]]:
    """``dist`` just installed by a hashed command of lockgen's: traced to ``hashes`` when its
    files match its RECORD; else None and what does not match."""
    digest = record_digest(dist)
    problems = file_problems(dist, prefix) if digest is not None else [f"{dist.name} {dist.version} has no RECORD file"]
    if problems or digest is None:
        return None, problems
    return Traced(version=dist.version, hashes=tuple(sorted(hashes)), record=digest, stat=stat_hint(dist, prefix)), []


def traced_all(
    hashes: Mapping[NormalizedName, Sequence[str]],
    installed: Mapping[NormalizedName, Sequence[Installed]],
    state: State | None,
    prefix: Path,
) -> tuple[dict[str, Traced], list[NormalizedName]]:
    """``({name: Traced}, [names lockgen cannot trace])`` of the distributions in the venv
    ``prefix`` that a hashed layer locks (``hashes``: name -> the lock entry's hashes), by the
    record ``state`` (see :func:`trace`). A name installed twice cannot be traced."""
    recorded = state.distributions if state is not None else {}
    traced: dict[str, Traced] = {}
    untraced: list[NormalizedName] = []
    for name, wanted in sorted(hashes.items()):
        dists = installed.get(name, [])
        if not dists:
            continue
        found = trace(dists[0], recorded.get(name), wanted, prefix) if len(dists) == 1 else None
        if found is None:
            untraced.append(name)
        else:
            traced[name] = found
    return traced, untraced


def by_name(found: Sequence[tuple[str, str, str]]) -> dict[NormalizedName, list[Installed]]:
    """``{canonical name: [Installed, …]}`` from the probe's ``[name, version, dist-info path]``."""
    result: dict[NormalizedName, list[Installed]] = {}
    for name, version, path in found:
        result.setdefault(canonicalize_name(name), []).append(
            Installed(canonicalize_name(name), version, Path(path) if path else None)
        )
    return result


def versions(installed: Mapping[NormalizedName, Sequence[Installed]]) -> dict[NormalizedName, list[str]]:
    """``{name: [version, …]}`` of :func:`by_name`'s result."""
    return {name: [d.version for d in dists] for name, dists in installed.items()}
