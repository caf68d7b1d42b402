"""Reading a lock's text: the header fields and the requirement lines, into a
:class:`~lockgen.locks.header.Header` and :class:`~lockgen.locks.entry.Entry` values.

Private to :mod:`lockgen.locks.lock`: every other module reads a lock through
:meth:`Lock.parse <lockgen.locks.lock.Lock.parse>` or :func:`~lockgen.locks.lock.parse_entries`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from lockgen.runtime.errors import LockFormatError
from lockgen.locks.entry import ARCHIVES, Entry, is_local
from lockgen.locks.header import (
    FIRST_PREFIX,
    MULTI_FIELDS,
    SINGLE_FIELDS,
    FileRef,
    Header,
    LayerKind,
    LayerRef,
    Replacement,
    Unavailable,
)

__all__ = ["VCS", "Parser", "unhashed_problem"]

#: The VCS schemes of a ``git+…@<commit>`` requirement (pip's and uv's), with their transports.
VCS = ("git+", "hg+", "svn+", "bzr+")
#: A git URL's revision is the commit uv resolved its branch or tag to (7 to 64 hex digits).
_AT_COMMIT = re.compile(r"@[0-9a-f]{7,64}$")


def unhashed_problem(url: str | None, editable: bool) -> str | None:
    """Why a requirement may not stand in the ``unhashed`` layer (None: it may). The layer holds
    what has no archive hash (docs/layers-labels-builds.md): the project's own folders (editable
    or not) and local archives by a project-relative path (``./sub``, never ``..``, never
    absolute), and VCS checkouts (a git one at its commit, ``git+https://…@<commit>``). A registry name, an
    ``http(s)`` or ``file://`` archive URL, an absolute path or a path out of the project would
    install something no hash checks and nobody reviewed as the project's own (issue 15)."""
    if url is None:
        return "a registry requirement in the unhashed layer (installed without a hash); it belongs in a hashed layer"
    if url.startswith(VCS):
        transport = url.split("+", 1)[1]
        if "://" not in transport:
            return f"the VCS URL {url!r} has no scheme (git+https://…, git+file://…)"
        if url.startswith("git+") and not _AT_COMMIT.search(url.split("#", 1)[0]):
            return f"the VCS URL {url!r} is not pinned at a commit (lockgen locks a branch or tag at its commit)"
        return None
    if "://" in url:
        return f"the URL {url!r} in the unhashed layer: an archive URL has a hash and belongs in a hashed layer"
    if url.startswith("/") or (len(url) > 1 and url[1] == ":"):
        return f"the absolute path {url!r}: the unhashed layer names the project's own folders, relative to its root"
    if not is_local(url) or any(part == ".." for part in url.split("/")) or "\\" in url:
        return f"the path {url!r} leads out of the project root: the unhashed layer names the project's own folders"
    return None


@dataclass
class Parser:
    """Reads the text of one lock (LF line endings); ``where`` names it in errors
    (:class:`~lockgen.runtime.errors.LockFormatError` with the line number)."""

    text: str
    where: str
    fields: dict[str, list[str]] = field(default_factory=dict)
    #: Each entry's first requirement line in the text read (1-based), filled by :meth:`entries`.
    starts: dict[NormalizedName, int] = field(default_factory=dict)

    def fail(self, number: int, message: str) -> LockFormatError:
        return LockFormatError(f"{self.where}:{number}: {message}")

    def lock(self, entries: bool = True) -> tuple[Header, tuple[Entry, ...]]:
        """The header and the entries of a whole lock (no entries, unread, without ``entries``)."""
        head, sep, body = self.text.partition("\n\n")
        if not head.startswith(FIRST_PREFIX):
            raise self.fail(1, "not a lock written by lockgen (no lockgen header)")
        if not sep:
            raise self.fail(head.count("\n") + 1, "truncated: the header does not end (no blank line after it)")
        first = head.split("\n", 1)[0]
        self.fields["config"] = [first.partition(" from ")[2].partition("; do not edit")[0] or "pyproject.toml"]
        for number, line in enumerate(head.split("\n"), 1):
            key, colon, value = line.removeprefix("# ").partition(": ")
            if colon and (key in SINGLE_FIELDS or key in MULTI_FIELDS):
                if key in SINGLE_FIELDS and key in self.fields:
                    raise self.fail(number, f"the header has two {key!r} fields")
                self.fields.setdefault(key, []).append(value)
        if "kind" not in self.fields:  # format 1 (before layers): no kind, an --index-url line
            raise self.fail(
                1,
                "written by an older lockgen (lock format 1, before layers: its header has no 'kind'); "
                "re-lock the cell with this lockgen (lockgen all)",
            )
        header = self.header()
        if not entries:
            return header, ()
        return header, tuple(self.entries(body, head.count("\n") + 3, header.kind))

    def one(self, key: str, default: str | None = None) -> str:
        values = self.fields.get(key)
        if values:
            return values[0]
        if default is None:
            raise self.fail(1, f"the header has no {key!r} field")
        return default

    def optional(self, key: str) -> str | None:
        values = self.fields.get(key)
        return values[0] if values else None

    def header(self) -> Header:
        get = self.fields.get
        if self.one("kind") not in {str(k) for k in LayerKind}:
            known = ", ".join(str(k) for k in LayerKind)
            raise self.fail(
                1, f"kind {self.one('kind')!r} is not one this lockgen knows ({known}): written by a newer lockgen?"
            )
        try:
            kind = LayerKind(self.one("kind"))
            return Header(
                cell=self.one("cell"), kind=kind, path=self.where, config=self.one("config"), target=self.one("target"), uv=self.one("uv"),
                input_hash=self.one("input-hash"),
                input_parts=dict(p.split("=", 1) for p in self.one("input-parts", "").split()),
                local_files=tuple(FileRef.parse(v) for v in get("local-file", [])),
                exclude_newer=self.optional("exclude-newer"), exclude_newer_span=self.optional("exclude-newer-span"),
                index_url=self.optional("index-url"), find_links=tuple(get("find-links", [])),
                layer_of=self.optional("layer-of"),
                layers=tuple(LayerRef.parse(v) for v in get("layer", [])),
                pylock=FileRef.parse(self.one("pylock")) if get("pylock") else None,
                unavailable=tuple(Unavailable.parse(v) for v in get("unavailable", [])),
                replaces=tuple(Replacement.parse(v) for v in get("replaces", [])),
                skipped_urls=tuple(get("skipped-url", [])), no_upload_time=tuple(get("no-upload-time", [])),
                unverified_hashes=tuple(get("unverified-hashes", [])),
            )  # fmt: skip
        except ValueError as exc:
            raise self.fail(1, f"bad header field: {exc}") from None

    def entries(self, body: str, first: int, kind: LayerKind | None = None) -> Iterator[Entry]:
        """The entries of ``body`` (its first line is line ``first`` of the file). In a layer of
        ``kind`` unhashed, each must be one :func:`unhashed_problem` allows."""
        current: dict[str, Any] | None = None
        for number, line in enumerate(body.split("\n"), first):
            stripped = line.strip()
            if not stripped or line.startswith("#"):
                continue  # a comment outside an entry (uv writes none; a hand edit may)
            if not line.startswith(" "):
                found = self.requirement(line.removesuffix("\\").strip(), number)
                if kind is LayerKind.UNHASHED:
                    problem = unhashed_problem(found["url"], found["editable"])
                    if problem:
                        raise self.fail(number, f"{found['name']}: {problem}")
                if current is not None and _same_package(current, found):  # one line per set of extras
                    current["extras"] = tuple(sorted({*current["extras"], *found["extras"]}))
                    continue
                if current is not None:
                    yield _entry(current)
                current = found
                self.starts.setdefault(found["name"], number)
            elif current is None:
                raise self.fail(number, "an indented line before any requirement")
            elif stripped.startswith("--hash="):
                current["hashes"].append(stripped.removeprefix("--hash=").removesuffix("\\").strip())
            elif stripped.startswith("# via") and stripped != "# via":
                current["via"].append(stripped.removeprefix("# via").strip())
            elif stripped.startswith("#   "):
                current["via"].append(stripped.removeprefix("#").strip())
            elif stripped.startswith("# from "):  # uv's --emit-index-annotation: the index that served it
                current["index"] = stripped.removeprefix("# from ").strip()
            elif stripped != "# via":
                raise self.fail(number, f"unexpected line {stripped!r}")
        if current is not None:
            yield _entry(current)

    def requirement(self, text: str, number: int) -> dict[str, Any]:
        editable = text.startswith(("-e ", "--editable "))
        if editable:
            text = text.split(" ", 1)[1].strip()
        if editable or text.startswith(("file:", "./", "../", "/")) or text == ".":
            url, name = _direct(text)
            return {"name": canonicalize_name(name), "url": url, "editable": editable, "hashes": [], "via": []}
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise self.fail(number, f"not a requirement: {exc}") from None
        version = _file_version(req.url) if req.url else None
        if not req.url:
            specs = list(req.specifier)
            if len(specs) != 1 or specs[0].operator != "==":
                raise self.fail(number, f"{text!r} is not pinned with ==")
            try:
                version = Version(specs[0].version)
            except InvalidVersion as exc:
                raise self.fail(number, str(exc)) from None
        return {
            "name": canonicalize_name(req.name), "version": version, "extras": tuple(sorted(req.extras)),
            "url": req.url, "editable": False, "hashes": [], "via": [],
        }  # fmt: skip


def _file_version(url: str) -> Version | None:
    """The version a direct URL's wheel or sdist file name carries (``gradio-4.37.2+custom.20-…``),
    read with ``packaging``; None for a VCS URL or a folder."""
    from urllib.parse import unquote, urlsplit

    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    try:
        return parse_wheel_filename(name)[1] if name.endswith(".whl") else parse_sdist_filename(name)[1]
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None


def _direct(text: str) -> tuple[str, str]:
    """``(url, name)`` of a path or editable line: ``file:./sub#egg=pkg`` -> ``("./sub", "pkg")``;
    a VCS URL keeps its form (``git+…@<commit>#egg=pkg``). The name comes from ``#egg=``, else a
    wheel's or sdist's file name, else (uv's own output for ``-e ./sub``; lockgen rewrites it from
    the resolution) the folder's name."""
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    target, _, egg = text.partition("#egg=")
    if "://" not in target and target.startswith("file:"):
        target = target.removeprefix("file:")
        target = target if is_local(target) or target.startswith("/") else f"./{target}"
    url = target if is_local(target) or target.startswith("/") else text
    if egg:
        return url, egg.split("&")[0]
    base = Path(target.split("#")[0].rstrip("/")).name
    try:
        if base.endswith(".whl"):
            return url, parse_wheel_filename(base)[0]
        if base.endswith(ARCHIVES):
            return url, parse_sdist_filename(base)[0]
    except (InvalidWheelFilename, InvalidSdistFilename):
        pass
    return url, base


def _same_package(current: dict[str, Any], found: dict[str, Any]) -> bool:
    """Whether requirement line ``found`` is another line of the registry package ``current``
    (``fsspec==1.0`` then ``fsspec[http]==1.0``: :meth:`Entry.extra_sets`)."""
    return (
        found["name"] == current["name"]
        and found.get("version") is not None
        and found.get("version") == current.get("version")
        and found["url"] is None
        and current["url"] is None
        and not found["editable"]
        and not current["editable"]
    )


def _entry(data: dict[str, Any]) -> Entry:
    hashes = tuple(dict.fromkeys(data["hashes"]))  # each line of an entry lists the same hashes
    return Entry(**{**data, "hashes": hashes, "via": tuple(data["via"])})
