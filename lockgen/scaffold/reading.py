"""``lockgen init``, step 1: read what a project has. Pure functions of file text.

A requirement file becomes a :class:`ReqFile`: its requirement lines (``-r`` includes followed,
relative to the including file), the indexes and find-links it names, ``--pre``, and the options
it drops with the reason. Lines are read as pip and uv read them (``plan.reqfile.logical_lines``:
comments, ``\\`` continuations, every option spelling); each requirement is parsed with
``packaging`` (a bare wheel URL by its file name, ``packaging.utils.parse_wheel_filename``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, NormalizedName, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from lockgen.plan.reqfile import logical_lines, malformed, option
from lockgen.runtime.errors import UsageError

__all__ = ["IndexLine", "Line", "ReqFile", "read_requirements", "requirement_line"]


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
    dropped: tuple[str, ...] = ()  # "requirements.txt:3: --hash …: dropped, because …"
    notes: tuple[str, ...] = field(default=())
    constraints: tuple[Line, ...] = ()  # the lines of the files it reads with -c
    constraint_files: tuple[str, ...] = ()  # those files (project-relative)
    #: lines its cells install that its template does not copy (``[project].dependencies``,
    #: rendered from ``project.dependencies``): what inference and sources see of them
    rendered: tuple[Line, ...] = ()
    #: the template name for its own lines (``torch_commands-cu128``), else one from its path
    stem: str | None = None


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
    template); ``read(path)`` returns a file's text. Raises :class:`~lockgen.runtime.errors.UsageError`
    for an include cycle or a file that cannot be read (naming the including line)."""
    lines: list[Line] = []
    constraints: list[Line] = []
    indexes: list[IndexLine] = []
    dropped: list[str] = []
    includes: list[str] = []
    constraint_files: list[str] = []
    prerelease = False

    def visit(rel: str, stack: tuple[str, ...], via: str, constraining: bool = False) -> None:
        nonlocal prerelease
        try:
            text = read(rel)
        except OSError as exc:
            raise UsageError(f"{via}: cannot read {rel}: {exc.strerror or exc}") from None
        for tokens in logical_lines(text):
            if not tokens:
                continue
            number = tokens[0][0]
            where = f"{rel}:{number}"
            words = [t for _, t in tokens]
            i = 0
            requirement: list[str] = []
            while i < len(words) and not words[i].startswith("-"):
                requirement.append(words[i])
                i += 1
            if requirement:
                (constraints if constraining else lines).append(requirement_line(" ".join(requirement), where))
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
                    lines.append(Line(text=text_, name=None, origin=where))
                else:
                    why = _DROP.get(name, "lockgen does not pass it to uv")
                    dropped.append(
                        f"{where}: {written}{' ' + value if value and not attached else ''}: dropped, because {why}"
                    )

    visit(path, (path,), path)
    return ReqFile(path=path, lines=tuple(lines), indexes=tuple(indexes), prerelease=prerelease,
                   includes=tuple(includes), dropped=tuple(dropped), constraints=tuple(constraints),
                   constraint_files=tuple(dict.fromkeys(constraint_files)))  # fmt: skip


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
