"""The forms an ``optional`` entry may take, read when the config is (issue 17, item 6). Pure.

An optional entry becomes a layer that installs with ``--require-hashes``, so it must be
something a hash can pin:

==========================================  ================================================
entry                                       what lockgen does
==========================================  ================================================
``pkg``, ``pkg>=1`` (a requirement)         resolved from the index or the package's source
``https://…/pkg-1.0-py3-none-any.whl``,     downloaded once and pinned by its sha256 (a
``pkg @ https://…/…whl``                    ``urls`` source's package: the build that fits)
``pkg @ https://…/pkg-1.0.tar.gz``,         an sdist: locked with the hash uv computes; it
``https://…/pkg-1.0.zip``                   must be built, so ``allow-build`` must name it
``./wheels/pkg-1.0-py3-none-any.whl``,      a local archive in the project: hashed like a
``pkg @ file:./dist/pkg-1.0.tar.gz``        remote one (its path is relative to the project)
==========================================  ================================================

Refused, naming the entry and what to do instead: a VCS URL (``pkg @ git+https://…``), a
project folder (``./sub``, ``-e ./sub``, ``pkg @ file:./sub``) and an absolute path: none has a
hash pip ``--require-hashes`` could check, so they belong in the requirements (the ``unhashed``
layer installs them after main, without hashes). Also refused: a URL that is neither a wheel nor
a source archive, and text that is not a requirement.
"""

from __future__ import annotations

from dataclasses import dataclass
from posixpath import basename
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

__all__ = ["SDISTS", "EntryRefused", "OptionalEntry", "read_optional"]

#: Source archive file names (PEP 625 ``.tar.gz``; the older forms pip and uv still read).
SDISTS = (".tar.gz", ".zip", ".tar.bz2", ".tgz")
_VCS = ("git+", "hg+", "svn+", "bzr+")
_UNHASHED = (
    "it has no hash pip --require-hashes could check, and an optional layer installs with hashes; name it in the "
    "requirements template instead (the unhashed layer installs it after main, without hashes)"
)


class EntryRefused(ValueError):
    """An optional entry of a form a hashed layer cannot lock; the message says what to do."""


@dataclass(frozen=True)
class OptionalEntry:
    """A readable optional entry: ``kind`` is ``requirement``, ``wheel`` (a wheel URL),
    ``archive`` (a source archive URL) or ``local`` (a wheel or source archive in the project);
    ``name`` the project (None for a requirement: its own), ``url`` the URL or path as written."""

    text: str
    kind: str
    name: NormalizedName | None = None
    url: str | None = None
    requirement: Requirement | None = None


def read_optional(text: str) -> OptionalEntry:
    """Read an optional entry (rendered). Raises :class:`EntryRefused` for the forms the module
    docstring refuses."""
    entry = text.strip()
    if entry.startswith(("-e ", "-e\t", "--editable")):
        raise EntryRefused(f"an editable project: {_UNHASHED}")
    try:
        req: Requirement | None = Requirement(entry)
    except InvalidRequirement as exc:
        if "://" not in entry and not entry.startswith((".", "/", "file:")):
            raise EntryRefused(f"not a requirement: {exc}") from None
        req = None
    url = req.url if req is not None else entry
    if url is None:
        return OptionalEntry(text=entry, kind="requirement", requirement=req)
    if url.startswith(_VCS):
        raise EntryRefused(f"a VCS checkout: {_UNHASHED}")
    local = not url.startswith(("http://", "https://", "file://"))
    path = unquote(urlsplit(url).path) if not local else url.removeprefix("file:")
    if (local and path.startswith("/")) or url.startswith("file://"):
        raise EntryRefused(
            "an absolute path: a lock names local files relative to the project root; move it inside the project"
        )
    filename = basename(path.rstrip("/"))
    kind = "local" if local else ("wheel" if filename.endswith(".whl") else "archive")
    found: NormalizedName | None = None
    try:
        if filename.endswith(".whl"):
            found = parse_wheel_filename(filename)[0]
        elif filename.endswith(SDISTS):
            found = parse_sdist_filename(filename)[0]
        elif local:
            raise EntryRefused(f"a project folder: {_UNHASHED}")
        else:
            raise EntryRefused("not a wheel or source archive URL (a .whl, .tar.gz or .zip file)")
    except InvalidWheelFilename as exc:
        raise EntryRefused(
            f"a wheel URL whose file name is not a wheel's ({exc}); link the wheel file itself"
        ) from None
    except InvalidSdistFilename:
        if req is None:  # an archive of a tag or a commit (``…/archive/v1.2.zip``): its name does not say the project
            raise EntryRefused(
                f"a source archive URL whose file name {filename!r} does not name its project; write it as NAME @ {url}"
            ) from None
    name = canonicalize_name(req.name) if req is not None else found
    if req is not None and found is not None and canonicalize_name(req.name) != found:
        raise EntryRefused(
            f"a URL of {found}'s file, though the entry names {req.name}; name the project the file is of"
        )
    return OptionalEntry(text=entry, kind=kind, name=name, url=url, requirement=req)
