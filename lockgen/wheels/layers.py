"""The GPU wheels of a cell's install layers (issue 19): the optional and no-deps layers, where GPU
extensions usually sit (flash-attn, xformers, sageattention, natten, bitsandbytes).

A layer lock (read through the lock model) lists main's versions again as constraints, and its
own packages. Its GPU wheels are its own entries (not main's: main's record covers those) with
hashes, except the backend family's runtime packages (``nvidia-*-cu13``: their vendor builds them
for every architecture of their toolkit). In a no-deps layer the lock's ``# via`` lines cannot
say what depends on torch (it is resolved without dependencies), and an optional layer is one
package and what it pulls in, so every such entry counts; pure wheels and sdists are dropped once
their file name is known. The artifact of a ``name @ URL`` entry is its URL (a local archive its
project-relative path); a ``name==version`` entry lists one sha256 per file the cell may install,
which :mod:`lockgen.wheels.pages` finds on the layer's find-links pages and index. The unhashed
layer (editable, local and VCS projects) has no artifact hashes and is not read.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from packaging.tags import Tag

from lockgen.config.model import BackendFamily
from lockgen.index.files import Kind, artifact, filename_of
from lockgen.locks.lock import Entry, LayerKind, Lock, is_local, text_sha256
from lockgen.runtime import bounded
from lockgen.runtime.errors import InputError, LockFormatError
from lockgen.wheels.model import GpuLayer, GpuWheel

__all__ = ["layer_wheels", "runtime_package"]

#: The layers whose wheels are read, in install order.
READ_KINDS = (LayerKind.OPTIONAL, LayerKind.NO_DEPS)


def layer_wheels(root: Path, main: Lock, family: BackendFamily, fits: frozenset[Tag]) -> list[GpuLayer]:
    """The optional and no-deps layers of the cell whose main lock is ``main``, in install order,
    each with its text's sha256 and its GPU wheels (see the module docstring); ``fits``: the
    wheel tags the cell's installers take (a page without hashes is searched by them). Raises
    :class:`~lockgen.runtime.errors.LockFormatError` for a layer lock that cannot be read."""
    main_hashes = {h for entry in main.entries for h in entry.hashes}
    found = []
    for ref in main.header.layers:
        if ref.kind not in READ_KINDS:
            continue
        try:
            text = bounded.read_file(root / ref.path, ref.path).decode("utf-8", "replace")
        except OSError as exc:
            raise LockFormatError(f"{ref.path}: cannot read it ({exc.strerror}); re-lock the cell") from None
        except InputError as exc:
            raise LockFormatError(f"{exc.problems[0].text() if exc.problems else exc}; re-lock the cell") from None
        layer = Lock.parse(text, ref.path)
        wheels: list[GpuWheel] = []
        for entry in layer.entries:
            own = [h.removeprefix("sha256:") for h in entry.hashes if h not in main_hashes and h.startswith("sha256:")]
            if not own or entry.editable or runtime_package(str(entry.name), family):
                continue
            wheels += _artifacts(entry, own, layer, fits)
        found.append(GpuLayer(name=ref.name, kind=str(ref.kind), sha256=text_sha256(text),
                              wheels=tuple(sorted(wheels, key=lambda w: w.key))))  # fmt: skip
    return found


def _artifacts(entry: Entry, hashes: list[str], layer: Lock, fits: frozenset[Tag]) -> list[GpuWheel]:
    version = str(entry.version) if entry.version is not None else ""
    if entry.url is not None:
        found = artifact(filename_of(entry.url))
        if found is None or found.kind is not Kind.WHEEL:
            return []  # an sdist or a VCS checkout: nothing built to read
        if all(tag.platform == "any" for tag in found.tags):
            return []
        local = is_local(entry.url)
        return [GpuWheel(name=str(entry.name), version=version or str(found.version), sha256=sha, size=None,
                         url=None if local else entry.url, path=entry.url.removeprefix("./") if local else None)
                for sha in hashes]  # fmt: skip
    header = layer.header
    return [GpuWheel(name=str(entry.name), version=version, sha256=sha, url=None, path=None, size=None,
                     find_links=header.find_links, index=header.index_url, fits=fits) for sha in hashes]  # fmt: skip


def runtime_package(name: str, family: BackendFamily) -> bool:
    """Whether ``name`` (canonical) is one of the family's runtime packages (``packages``
    patterns: ``*`` any text, ``?`` one character, ``{major}`` digits)."""
    return any(_pattern(p).fullmatch(name) for p in family.packages)


@functools.lru_cache(maxsize=256)
def _pattern(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\*|\?|\{major\}|\{version\})", pattern.lower())
    special = {"*": ".*", "?": ".", "{major}": r"\d+", "{version}": r"\d+(?:\.\d+)*"}
    return re.compile("".join(special.get(part, re.escape(part)) for part in parts))
