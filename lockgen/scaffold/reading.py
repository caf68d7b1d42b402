"""``lockgen init``, step 1: read what a project has. Pure functions of file text.

A requirement file becomes a :class:`ReqFile`: its requirement lines (``-r`` includes followed,
relative to the including file), the indexes and find-links it names, ``--pre``, and the options
it drops with the reason. Lines are read as pip and uv read them (``plan.reqfile.logical_lines``:
comments, ``\\`` continuations, every option spelling); each requirement is parsed with
``packaging`` (a bare wheel URL by its file name, ``packaging.utils.parse_wheel_filename``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from packaging.markers import Marker, UndefinedComparison
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from lockgen.plan.reqfile import logical_lines, malformed, option
from lockgen.runtime.errors import UsageError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILES",
    "IndexLine",
    "Line",
    "ReqFile",
    "hide_login",
    "holds",
    "read_requirements",
    "requirement_line",
    "wheel_pythons",
]

#: How deep ``-r``/``-c`` includes may nest, and how many files one requirement file may read in
#: all: far more than any project has (text-generation-webui: 2 levels), far fewer than a
#: hostile chain needs to exhaust the stack or the time (each file is read once).
MAX_DEPTH = 32
MAX_FILES = 500


@dataclass(frozen=True, kw_only=True)
class Line:
    """One requirement: ``text`` as a template line (tokens joined by one space), the package
    ``name`` (None for a path or VCS URL whose name is not written), its exact ``version`` (``==V``
    or a wheel file's), the ``marker``, the wheel's platform tags (a wheel URL), and ``origin``
    (``requirements_amd.txt:43``)."""

    text: str
    name: NormalizedName | None
    version: Version | None = None
    marker: Marker | None = None
    wheel_platforms: frozenset[str] = frozenset()
    origin: str
    #: why pip and uv would refuse the line (:func:`lockgen.plan.reqfile.malformed`), else None
    problem: str | None = None

    @property
    def key(self) -> str:
        """What makes two files' lines the same line: the text, whitespace-insensitive."""
        return " ".join(self.text.split())


@dataclass(frozen=True, kw_only=True)
class IndexLine:
    """An ``--index-url`` (kind ``index``), ``--extra-index-url`` (``extra-index``) or
    ``--find-links`` (``find-links``) line."""

    kind: str
    url: str
    origin: str


@dataclass(frozen=True, kw_only=True)
class ReqFile:
    """A requirement file as ``lockgen init`` sees it; ``path`` is project-relative (POSIX)."""

    path: str
    lines: tuple[Line, ...]
    indexes: tuple[IndexLine, ...] = ()
    prerelease: bool = False
    includes: tuple[str, ...] = ()  # files it reads with -r (project-relative)
    #: every line or option not carried into the templates as written, with the reason:
    #: "requirements.txt:3: --hash …: dropped, because …"
    dropped: tuple[str, ...] = ()
    #: notes on lines carried in another form (a conda freeze's ``name @ file:///…`` as ``name==V``,
    #: a login as ``${VAR}`` references)
    changed: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    constraints: tuple[Line, ...] = ()  # the lines of the files it reads with -c
    constraint_files: tuple[str, ...] = ()  # those files (project-relative)
    #: lines its cells install that its template does not copy (``[project].dependencies``,
    #: rendered from ``project.dependencies``): what inference and sources see of them
    rendered: tuple[Line, ...] = ()
    #: the template name for its own lines (``torch_commands-cu128``), else one from its path
    stem: str | None = None
    #: the file's own comment lines (not those of files it includes), ``(origin, text)``: what
    #: inference reads a platform from where nothing else names one (a ``win_arm64`` wheel tag)
    comments: tuple[tuple[str, str], ...] = ()


_DROP = {
    "--hash": "lockgen hashes every file of the resolution",
    "--trusted-host": "a source's host needs no trust option (use https, or a mirror)",
    "--prefer-binary": "lockgen resolves wheels first anyway",
    "--require-hashes": "every lock has hashes",
    "--use-feature": "uv has no such features",
    "--no-index": "the sources lockgen init writes say where packages come from",
}
_KEEP = {"--editable", "--no-binary", "--only-binary"}
_INDEX = {"--index-url": "index", "--extra-index-url": "extra-index", "--find-links": "find-links"}


def read_requirements(path: str, read: Callable[[str], str]) -> ReqFile:
    """Read the requirement file ``path`` (project-relative), following ``-r`` and ``-c`` (pip's
    constraints files: their lines become :attr:`ReqFile.constraints`, and so the constraints
    template); ``read(path)`` returns a file's text (a leading byte-order mark is dropped, as pip
    does). Each line is carried or named in :attr:`ReqFile.dropped` with the reason; a login in a
    URL becomes ``${VAR}`` references (:func:`hide_login`) before anything else sees the line.
    A file read twice in one tree (two files ``-r`` a shared one) is read once. Raises
    :class:`~lockgen.runtime.errors.UsageError` for an include cycle, includes deeper than
    :data:`MAX_DEPTH` or more than :data:`MAX_FILES` files, or a file that cannot be read
    (naming the including line)."""
    lines: list[Line] = []
    constraints: list[Line] = []
    indexes: list[IndexLine] = []
    dropped: list[str] = []
    changed: list[str] = []
    includes: list[str] = []
    constraint_files: list[str] = []
    comments: list[tuple[str, str]] = []
    seen: set[tuple[str, bool]] = set()
    prerelease = False

    def visit(rel: str, stack: tuple[str, ...], via: str, constraining: bool = False) -> None:
        nonlocal prerelease
        if (rel, constraining) in seen:
            return
        seen.add((rel, constraining))
        if len(stack) > MAX_DEPTH:
            raise UsageError(f"{via}: includes nest deeper than {MAX_DEPTH} files ({' -> '.join((*stack[:3], '…', rel))}); "
                             "refused (no project's requirement files nest so deep)")  # fmt: skip
        if len(seen) > MAX_FILES:
            raise UsageError(f"{via}: {path} reads more than {MAX_FILES} files through -r and -c; refused")
        try:
            text = read(rel)
        except OSError as exc:
            raise UsageError(f"{via}: cannot read {rel}: {exc.strerror or exc}") from None
        if rel == path:
            lines_ = text.removeprefix("\ufeff").splitlines()
            comments.extend((f"{rel}:{n}", ln.strip().lstrip("#").strip()) for n, ln in enumerate(lines_, 1)
                            if ln.lstrip().startswith("#"))  # fmt: skip
        for tokens in logical_lines(text.removeprefix("\ufeff")):
            if not tokens:
                continue
            number = tokens[0][0]
            where = f"{rel}:{number}"
            words = []
            for _, token in tokens:
                hidden, note = hide_login(token)
                words.append(hidden)
                if note:
                    changed.append(f"{where}: {note}")
            i = 0
            requirement: list[str] = []
            while i < len(words) and not words[i].startswith("-"):
                requirement.append(words[i])
                i += 1
            if requirement:
                line, why = _portable(requirement_line(" ".join(requirement), where))
                if line is None:
                    dropped.append(f"{where}: {' '.join(requirement)}: not carried, because {why}")
                else:
                    if why:
                        changed.append(f"{where}: {why}")
                    (constraints if constraining else lines).append(line)
            while i < len(words):
                written, name, attached = option(words[i])
                value = (
                    words[i][len(written) :].lstrip("=") if attached else (words[i + 1] if i + 1 < len(words) else "")
                )
                i += 1 if attached or name in ("--pre", "--no-index", "--prefer-binary", "--require-hashes") else 2
                if name in ("--requirement", "--constraint"):
                    child = posixpath.normpath((PurePosixPath(rel).parent / value).as_posix())
                    if child.startswith("../") or child == ".." or PurePosixPath(child).is_absolute():
                        raise UsageError(f"{where}: {written} {value} names a file outside the project")
                    if child in stack:
                        raise UsageError(
                            f"{where}: {written} {value} includes a file that includes it ({' -> '.join((*stack, child))})"
                        )
                    constraint = constraining or name == "--constraint"
                    (constraint_files if constraint else includes).append(child)
                    visit(child, (*stack, child), where, constraint)
                elif name in _INDEX:
                    indexes.append(IndexLine(kind=_INDEX[name], url=value, origin=where))
                elif name == "--pre":
                    prerelease = True
                elif name in _KEEP:
                    text_ = f"{written} {value}".strip() if not attached else words[i - 1]
                    local = name == "--editable" and _outside(value)
                    if local:
                        dropped.append(f"{where}: {text_}: not carried, because {local}")
                    else:
                        lines.append(Line(text=text_, name=None, origin=where))
                else:
                    why = _DROP.get(name, "lockgen does not pass it to uv")
                    dropped.append(
                        f"{where}: {written}{' ' + value if value and not attached else ''}: dropped, because {why}"
                    )

    visit(path, (path,), path)
    return ReqFile(path=path, lines=tuple(lines), indexes=tuple(indexes), prerelease=prerelease,
                   includes=tuple(dict.fromkeys(includes)), dropped=tuple(dropped), changed=tuple(changed),
                   constraints=tuple(constraints), constraint_files=tuple(dict.fromkeys(constraint_files)),
                   comments=tuple(comments))  # fmt: skip


def hide_login(token: str) -> tuple[str, str | None]:
    """``token`` with the login of a URL in it (``https://user:secret@host/…``, also inside
    ``--index-url=…``) written as environment references ``${HOST_USER}:${HOST_PASSWORD}``
    (uv and lockgen expand them from the environment when they fetch; docs/sources.md,
    Credentials), and a note naming the variables, never the values (None: nothing to hide).
    References already written (``${TOKEN}@``) are kept."""
    from lockgen.runtime.credentials import env_references, split

    found = re.search(r"[A-Za-z][A-Za-z0-9+.-]*://", token)
    if found is None:
        return token, None
    begin = found.start()
    url = token[begin:]
    public, userinfo = split(url)
    if userinfo is None:
        return token, None
    bare = userinfo
    for name in env_references(userinfo):
        bare = bare.replace(f"${{{name}}}", "")
    if not bare.strip(":"):
        return token, None
    host = (urlsplit(public).hostname or "index").upper()
    stem = "".join(c if c.isalnum() else "_" for c in host).strip("_")
    refs = f"${{{stem}_USER}}:${{{stem}_PASSWORD}}" if ":" in userinfo else f"${{{stem}_TOKEN}}"
    scheme, _, rest = public.partition("://")
    hidden = token[:begin] + f"{scheme}://{refs}@{rest}"
    shown = " and ".join(f"${{{n}}}" for n in env_references(refs))
    return (
        hidden,
        f"the login in the URL for {host.lower()} is written as {shown}: set {'them' if ':' in userinfo else 'it'} in the environment",
    )


def _outside(location: str) -> str | None:
    """Why a path or ``file:`` URL cannot travel with the project (None: it can: a path inside
    it, or not a path). A conda freeze writes ``file:///home/conda/feedstock_root/…`` paths of
    the machine that built it (field case shape: conda ``pip freeze``)."""
    if location.startswith("file:"):
        path = unquote(urlsplit(location).path)
        if urlsplit(location).netloc or location.startswith("file:/"):
            return f"{location} is a path on the machine that wrote the file: not portable"
        location = path
    if "://" in location:
        return None
    if PurePosixPath(location).is_absolute() or location.startswith("~") or re.match(r"^[A-Za-z]:[\\/]", location):
        return f"{location} is a path on the machine that wrote the file: not portable"
    if ".." in PurePosixPath(location.replace("\\", "/")).parts:
        return f"{location} is outside the project: not portable"
    return None


def _portable(line: Line) -> tuple[Line | None, str | None]:
    """A requirement line as a template can carry it: ``name @ file:///…/name-1.2.3-….whl`` (a
    conda ``pip freeze``) becomes ``name==1.2.3`` (the version from the file name, parsed with
    ``packaging.utils``), with a note; one whose version no file name tells is None with the
    reason. Lines inside the project and URLs elsewhere are kept."""
    head = line.text.split(";")[0].strip()
    if line.problem is not None:
        return line, None
    if " @ " in head or ("@" in head.split("://")[0] and line.name is not None and not head.startswith(("-", "."))):
        location = head.partition("@")[2].strip()
    elif line.name is None or "/" in head or head.startswith("file:"):
        location = head
    else:
        return line, None
    why = _outside(location)
    if why is None:
        return line, None
    filename = unquote(PurePosixPath(urlsplit(location).path).name)
    version = None
    try:
        if filename.endswith(".whl"):
            version = parse_wheel_filename(filename)[1]
        elif filename.endswith((".tar.gz", ".zip")):
            version = parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename):
        version = None
    if line.name is None or version is None:
        return None, why + (" (and its version is not in the path: pin the version it should be)" if line.name else "")
    marker = f" ; {line.marker}" if line.marker is not None else ""
    text = f"{line.name}=={version}{marker}"
    carried = requirement_line(text, line.origin)
    return (
        carried,
        f"{line.text}: carried as {text} (the path is the machine's that wrote the file; the version is its file name's)",
    )


def holds(marker: Marker | None, env: Mapping[str, str]) -> bool:
    """Whether a requirement with ``marker`` applies in ``env`` (:func:`lockgen.scaffold.inference.marker_env`). A marker
    ``packaging`` cannot evaluate (``python_version ~= "x"``: no PEP 440 version after ``~=``)
    holds, as for the requirements of a lock (:func:`lockgen.plan.sources.applies`): uv decides."""
    if marker is None:
        return True
    try:
        return bool(marker.evaluate(dict(env)))
    except UndefinedComparison:
        return True


def requirement_line(text: str, where: str) -> Line:
    """A requirement line: PEP 508 (``packaging``), else a bare URL or path with an optional
    ``; marker`` (a wheel's name, version and platforms from its file name). A line meant as
    PEP 508 that does not parse (``requests==``, ``numpy>=1 <2``) carries the reason in
    :attr:`Line.problem` (the rule templates are checked by: :func:`lockgen.plan.reqfile.malformed`)."""
    problem = malformed(text)
    if problem is not None:
        return Line(text=text, name=None, origin=where, problem=problem)
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        pass
    else:
        version = None
        specs = list(requirement.specifier)
        if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
            version = Version(specs[0].version)
        platforms: frozenset[str] = frozenset()
        if requirement.url:
            _, version, platforms = _wheel(requirement.url)
        return Line(text=text, name=canonicalize_name(requirement.name), version=version,
                    marker=requirement.marker, wheel_platforms=platforms, origin=where)  # fmt: skip
    location, _, marker_text = text.partition(";")
    marker = None
    if marker_text.strip():
        try:
            marker = Marker(marker_text.strip())
        except Exception:
            marker = None
    name, version, platforms = _wheel(location.strip())
    return Line(text=text, name=name, version=version, marker=marker, wheel_platforms=platforms, origin=where)


def wheel_pythons(line: Line) -> set[str] | None:
    """The CPython versions (``3.11``) a requirement's wheel URL is built for (its ``cpXY``
    interpreter tags), None when it names no wheel or one for any Python (``py3``, ``abi3``)."""
    location = line.text.split(";")[0]
    location = location.partition("@")[2].strip() if " @ " in location else location.strip()
    filename = unquote(PurePosixPath(urlsplit(location).path).name)
    if not filename.endswith(".whl"):
        return None
    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    found = set()
    for tag in tags:
        if tag.abi == "abi3" or not tag.interpreter.startswith("cp"):
            return None
        digits = tag.interpreter[2:]
        found.add(f"{digits[0]}.{digits[1:]}")
    return found or None


def _wheel(url: str) -> tuple[NormalizedName | None, Version | None, frozenset[str]]:
    """Name, version and platform tags of a wheel URL or path (None, None, {} for another kind)."""
    filename = unquote(PurePosixPath(urlsplit(url).path).name)
    if not filename.endswith(".whl"):
        return None, None, frozenset()
    try:
        name, version, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None, None, frozenset()
    return name, version, frozenset(tag.platform for tag in tags)
