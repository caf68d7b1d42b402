"""``lockgen init``: a working config and templates from what a project has (issue 20, item 2).

Three pure steps and one write: :mod:`.reading` reads the requirement files (and ``-r``
includes), :mod:`.inference` says what each file is for (platforms, backend, variant words),
:mod:`.compose` makes the matrix, rules, sources and templates; :func:`write` creates the files,
never over an existing one. Every choice comes with a line of explanation.
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lockgen.plan.reqfile import REQUIREMENT_FIX
from lockgen.runtime import bounded
from lockgen.runtime.errors import UsageError
from lockgen.scaffold.compose import Draft, compose
from lockgen.scaffold.inference import DEFAULT_PLATFORMS, PLATFORMS, Facts, Given, infer, parse_given
from lockgen.scaffold.pyproject import PyProject, read_pyproject
from lockgen.scaffold.reading import IndexLine, Line, ReqFile, read_requirements, requirement_line
from lockgen.scaffold.variants import compose_variants

__all__ = ["Draft", "Options", "scaffold", "write"]

#: The Python versions init may choose from ``requires-python``.
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
#: Bytes of one requirement file ``init`` reads at most (real projects: a few KB).
MAX_REQUIREMENTS = 4 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class Options:
    """``files``: requirement files (project-relative; default: those found), each ``FILE`` or
    ``FILE:os=…,arch=…,backend=…`` (:func:`~lockgen.scaffold.inference.parse_given`);
    ``commands``: installer scripts whose torch install commands to read, ``SCRIPT`` or
    ``SCRIPT:os=…``; ``indexes``: backend index URLs for the files that name none; ``pythons``
    (default: from ``requires-python``, else this interpreter's); ``exclude_newer`` (default:
    today, UTC)."""

    files: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    indexes: tuple[str, ...] = ()
    pythons: tuple[str, ...] = ()
    exclude_newer: str | None = None


def discover(root: Path) -> list[str]:
    """Requirement files of a project: ``*requirements*.txt`` in its root and every ``.txt``
    under ``requirements/``, sorted (project-relative, POSIX)."""
    found = {p for p in root.glob("*requirements*.txt") if p.is_file()}
    if (root / "requirements").is_dir():
        found |= {p for p in (root / "requirements").rglob("*.txt") if p.is_file()}
    return sorted(p.relative_to(root).as_posix() for p in found)


def scaffold(root: Path, options: Options) -> Draft:
    """The :class:`Draft` for the project at ``root``. Raises :class:`~lockgen.runtime.errors.UsageError`
    when an option's value is one the config would refuse (``--python 3.x``, ``--exclude-newer
    tomorrow``, ``--index pypi.org/simple``: checked by the config's own validators), when there is
    nothing to start from, a named file is missing, a requirement line is malformed (naming every
    ``file:line``), or a lockgen config exists."""
    from lockgen.config.load import parse_toml
    from lockgen.config.validate import check_option

    for python in options.pythons:
        check_option("--python", "matrix.python", python)
    if options.exclude_newer is not None:
        check_option("--exclude-newer", "exclude-newer", options.exclude_newer)
    for url in options.indexes:
        check_option("--index", "index-url", url)

    if (root / "lockgen.toml").exists():
        raise UsageError("lockgen.toml: a lockgen config exists already; lockgen init writes nothing over it")
    project: PyProject | None = None
    if (root / "pyproject.toml").is_file():
        document = parse_toml(bounded.read_text(root / "pyproject.toml", "pyproject.toml"))
        if isinstance(document.get("tool"), dict) and "lockgen" in document["tool"]:
            raise UsageError("pyproject.toml: has a [tool.lockgen] config already; lockgen init writes nothing over it")
        project = read_pyproject(document)

    def exists(rel: str) -> bool:
        return (root / rel).is_file()

    named = [parse_given(a, exists) for a in options.files]
    scripts = [parse_given(a, exists) for a in options.commands]
    for name, _ in (*named, *scripts):
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise UsageError(f"{name}: name a file inside the project")
        if not exists(name):
            raise UsageError(f"{name}: no such file")
    pythons = list(options.pythons) or _pythons(project.requires_python if project else None)
    exclude_newer = options.exclude_newer or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    notes: list[str] = [*(project.notes if project else ())]
    if project is not None and not named:
        variants, found = compose_variants(project, pythons, exclude_newer, options.indexes)
        notes += found
        if variants is not None:
            notes += [f"{f}: not read: pyproject.toml's backend variants make the matrix (name the requirement "
                      "files to start from them instead)" for f in discover(root)]  # fmt: skip
            notes += [f"{s}: not read: pyproject.toml's backend variants say the torch builds" for s, _ in scripts]
            return _checked(root, Draft(files=variants.files, explanation=(*variants.explanation, *notes),
                                        cells=variants.cells))  # fmt: skip
    elif project is not None:
        variants, _ = compose_variants(project, pythons, exclude_newer, options.indexes)
        if variants is not None:
            notes.append("pyproject.toml: its extras or groups are backend variants, but requirement files were "
                         "named: init starts from the files (name none to start from the variants)")  # fmt: skip
    names = [n for n, _ in named] or discover(root)
    given = {n: g for n, g in named if g is not None}
    dependencies = bool(project and project.dependencies)
    if not names and not dependencies and not scripts:
        raise UsageError("no requirement files (requirements*.txt, requirements/…) and no [project].dependencies to "
                         "start from; name the files: lockgen init requirements_cuda.txt requirements_rocm.txt …")  # fmt: skip

    def read(rel: str) -> str:
        """A requirement file, through the one reader: inside the project after symlinks, a
        regular file (never a FIFO or ``/dev/zero``), at most :data:`MAX_REQUIREMENTS` bytes."""
        data = bounded.read_in(root, rel, rel, MAX_REQUIREMENTS)
        try:
            return data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            raise UsageError(f"{rel}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None

    files: list[ReqFile] = [read_requirements(n, read) for n in names]
    included = {inc for f in files for inc in f.includes}
    constraining = {c for f in files for c in f.constraint_files}
    notes += [f"{f.path}: not a variant of its own: {', '.join(g.path for g in files if f.path in g.includes)} "
              "read it with -r, so its lines are theirs" for f in files if f.path in included]  # fmt: skip
    notes += [f"{f.path}: not a variant of its own: {', '.join(g.path for g in files if f.path in g.constraint_files)} "
              "read it with -c: the constraints template" for f in files if f.path in constraining - included]  # fmt: skip
    files = [f for f in files if f.path not in included | constraining]
    if not files:  # only [project].dependencies (or only commands)
        files = [_project_file(project)] if dependencies or not scripts else []
    if project is not None and project.constraints:
        uv = tuple(requirement_line(c, f"pyproject.toml:{i + 1}") for i, c in enumerate(project.constraints))
        files = [replace(f, constraints=(*f.constraints, *uv), constraint_files=(*f.constraint_files, "pyproject.toml"))
                 for f in files]  # fmt: skip
    parts = [(f, infer(f, pythons, options.indexes, given.get(f.path)), given.get(f.path)) for f in files]
    if scripts:
        parts = _with_commands(parts, scripts, read, pythons, options.indexes, notes)
    _refuse_malformed([line for f, _, _ in parts for line in (*f.lines, *f.constraints, *f.rendered)])
    top: dict[str, object] = {}
    if project is not None and project.overrides:
        top = {"overrides": "overrides.txt.j2", "overrides_text": "{# [tool.uv] override-dependencies of "
               "pyproject.toml (lockgen init) #}\n" + "".join(f"{o}\n" for o in project.overrides)}  # fmt: skip
        notes.append("templates/overrides.txt.j2: [tool.uv] override-dependencies (uv --override)")
    if project is not None and project.prerelease:
        top["prerelease"] = project.prerelease
    inputs = [*(names or (["pyproject.toml"] if dependencies else [])), *(s for s, _ in scripts)]
    draft = compose([(f, facts) for f, facts, _ in parts], pythons, exclude_newer, project_dependencies=dependencies,
                    inputs=inputs, top=top)  # fmt: skip
    notes += [d for f in files for d in f.dropped]
    return _checked(root, Draft(files=draft.files, explanation=(*draft.explanation, *notes), cells=draft.cells))


def _refuse_malformed(lines: Sequence[Line]) -> None:
    """Refuse (exit 2, every line at once, nothing written) the requirement lines pip and uv
    would refuse, each by its ``file:line``. Copied into a template, each would fail every cell at
    ``lockgen all`` instead, naming the template; ``pip-compile`` and ``uv pip compile`` stop at
    such a line of the file they read, and so does init."""
    bad = list({line.origin: line for line in lines if line.problem is not None}.values())
    if not bad:
        return
    count = f"{len(bad)} requirement line{'s' if len(bad) != 1 else ''}"
    listed = "\n".join(f"  {line.origin}: {line.text!r}: {line.problem}" for line in bad)
    raise UsageError(
        f"{count} that pip and uv would refuse:\n{listed}\n{REQUIREMENT_FIX[0].upper()}{REQUIREMENT_FIX[1:]}, then run "
        "lockgen init again (nothing was written)"
    )


def _checked(root: Path, draft: Draft) -> Draft:
    """``draft``, when none of its files exists yet; else a :class:`~lockgen.runtime.errors.UsageError`."""
    taken = [rel for rel in draft.files if (root / rel).exists()]
    if taken:
        raise UsageError(f"{', '.join(taken)}: exists already; lockgen init writes nothing over existing files "
                         "(move them away, or write the config by hand)")  # fmt: skip
    return draft


def _project_file(project: PyProject | None) -> ReqFile:
    """``[project].dependencies`` as a requirement file whose lines the template renders from
    ``project.dependencies``, with uv's indexes for all packages (non-explicit ones, and explicit
    ones ``[tool.uv.sources]`` sends a package to for every install) as its index lines."""
    if project is None:
        return ReqFile(path="pyproject.toml", lines=())
    rendered = tuple(requirement_line(d, f"pyproject.toml:project.dependencies[{i}]")
                     for i, d in enumerate(project.dependencies or ()))  # fmt: skip
    routed = {e.index for entries in project.sources.values() for e in entries
              if e.kind == "index" and e.extra is None and e.group is None}  # fmt: skip
    indexes = tuple(
        IndexLine(kind="index" if ix.default else "extra-index", url=ix.url, origin=f"pyproject.toml [[tool.uv.index]] {ix.name}")
        for ix in project.indexes
        if not ix.flat and (not ix.explicit or ix.name in routed)
    )  # fmt: skip
    return ReqFile(path="pyproject.toml", lines=(), rendered=rendered, indexes=indexes)


def _with_commands(
    parts: list[tuple[ReqFile, Facts, Given | None]],
    scripts: list[tuple[str, Given | None]],
    read: Callable[[str], str],
    pythons: list[str],
    indexes: tuple[str, ...],
    notes: list[str],
) -> list[tuple[ReqFile, Facts, Given | None]]:
    """The files combined with the scripts' commands (:func:`~lockgen.scaffold.combine.combine`),
    each inferred again with what its command says. A command's platforms: what was said of its
    script (``SCRIPT:os=…``), else its wheels' tags, else the script's name (``…macos…``)."""
    from lockgen.scaffold.combine import combine
    from lockgen.scaffold.commands import read_commands

    commands = []
    for script, said in scripts:
        found, skipped = read_commands(script, read(script), pythons)
        notes += skipped
        if not found:
            notes.append(f"{script}: no torch install command init can read in it")
        for command in found:
            platforms = said.platforms if said and said.platforms else None
            if platforms is None:
                platforms = infer(ReqFile(path=script, lines=command.lines), pythons, ()).platforms
            commands.append((command, platforms))
    known = [p for _, facts, _ in parts for p in facts.platforms or ()]
    everywhere = tuple(p for p in PLATFORMS if p in {*DEFAULT_PLATFORMS, *known})
    combined, why = combine(parts, commands, everywhere)
    notes += why
    return [(f, infer(f, pythons, indexes, g), g) for f, g in combined]


def _pythons(requires: object) -> list[str]:
    """The versions of :data:`PYTHONS` a ``requires-python`` allows, else this interpreter's."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if not isinstance(requires, str):
        return [here]
    try:
        spec = SpecifierSet(requires)
    except InvalidSpecifier:
        return [here]
    return [v for v in PYTHONS if spec.contains(f"{v}.0")] or [here]


def write(root: Path, draft: Draft) -> list[str]:
    """Create ``draft``'s files under ``root``, each only if it does not exist (``open(…, "x")``);
    returns their paths. Raises :class:`~lockgen.runtime.errors.UsageError` when one appeared meanwhile
    (those written before it stay: each is new)."""
    written = []
    for rel, text in draft.files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "x", encoding="utf-8", newline="\n") as out:
                out.write(text)
        except FileExistsError:
            raise UsageError(f"{rel}: exists already; lockgen init writes nothing over it") from None
        written.append(rel)
    return written
