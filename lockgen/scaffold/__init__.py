"""``lockgen init``: a working config and templates from what a project has (issue 20, item 2).

Three pure steps and one write: :mod:`.reading` reads the requirement files (and ``-r``
includes), :mod:`.inference` says what each file is for (platforms, backend, variant words),
:mod:`.compose` makes the matrix, rules, sources and templates; :func:`write` creates the files,
never over an existing one. Every choice comes with a line of explanation.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lockgen.plan.reqfile import REQUIREMENT_FIX
from lockgen.runtime import bounded, keyed
from lockgen.runtime.errors import UsageError
from lockgen.scaffold.builds import PypiTorch, Survey
from lockgen.scaffold.compose import Draft, compose
from lockgen.scaffold.inference import DEFAULT_PLATFORMS, PLATFORMS, Facts, Given, infer, parse_given
from lockgen.scaffold.pyproject import PyProject, read_pyproject
from lockgen.scaffold.reading import IndexLine, Line, ReqFile, hide_login, read_requirements, requirement_line
from lockgen.scaffold.variants import compose_variants

__all__ = ["Draft", "Options", "default_index_builds", "discover", "is_dev", "is_image", "scaffold", "write"]

#: The Python versions init may choose from ``requires-python``.
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
#: Bytes of one requirement file ``init`` reads at most (real projects: a few KB).


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
    #: read the development and test requirement files too, as a ``dev`` group (:func:`is_dev`)
    with_dev: bool = False


#: Words of a requirement file's name that make it a development or test file: what a project's
#: contributors install, not what its users' machines run (pip-tools' and pdm's dev groups).
_DEV_WORDS = {"dev", "devel", "develop", "development", "test", "tests", "testing", "lint", "linting", "docs", "doc",
              "ci", "typing", "benchmark", "bench"}  # fmt: skip


#: Words of a requirement file's name that make it a container image's file: what a Dockerfile
#: installs, not a value of the matrix of users' machines (Fooocus's ``requirements_docker.txt``,
#: which its installer also installs beside ``requirements_versions.txt``, into one environment).
_IMAGE_WORDS = {"docker", "dockerfile", "container", "podman"}


def _name_words(path: str) -> set[str]:
    return {w for part in Path(path).with_suffix("").parts for w in re.split(r"[^a-z0-9]+", part.lower()) if w}


def is_dev(path: str) -> bool:
    """Whether the project-relative ``path`` is a development or test requirement file
    (``requirements-dev.txt``, ``requirements_test.txt``, ``dev-requirements.txt``,
    ``requirements/tests.txt``)."""
    return bool(_name_words(path) & _DEV_WORDS)


def is_image(path: str) -> bool:
    """Whether the project-relative ``path`` is a container image's requirement file
    (``requirements_docker.txt``): init reads it only when it is named."""
    return bool(_name_words(path) & _IMAGE_WORDS)


def discover(root: Path, with_dev: bool = False, images: bool = False) -> list[str]:
    """Requirement files of a project: ``*requirements*.txt`` in its root and every ``.txt``
    under ``requirements/``, sorted (project-relative, POSIX); development and test files
    (:func:`is_dev`) only ``with_dev``; a container image's files (:func:`is_image`) only
    ``images``."""
    found = {p for p in root.glob("*requirements*.txt") if p.is_file()}
    if (root / "requirements").is_dir() and not (root / "requirements").is_symlink():
        found |= {p for p in (root / "requirements").rglob("*.txt") if p.is_file()}
    paths = sorted(p.relative_to(root).as_posix() for p in found)
    return [p for p in paths if (with_dev or not is_dev(p)) and (images or not is_image(p))]


def default_index_builds(mirrors: Sequence[str] = ()) -> PypiTorch:
    """A :class:`~lockgen.scaffold.builds.PypiTorch` that reads PyPI's torch page and metadata
    files (through ``--mirror`` and ``LOCKGEN_MIRRORS`` mirrors, 10 s a request); a page or file
    that cannot be read leaves the answer to init's table, and once the index does not answer at
    all nothing more is asked."""
    import os

    from lockgen.index.pages import JSON_ACCEPT, PageFile, PageReader
    from lockgen.plan import mirror

    table = mirror.build([mirror.from_env(os.environ.get(mirror.ENV_VAR)), mirror.parse(mirrors)])
    reader = PageReader(table, timeout=10.0)
    down: list[str] = []  # the index did not answer once: ask nothing more (a run without network stays quick)

    def files(url: str) -> tuple[PageFile, ...]:
        if down:
            return ()
        page = reader.page(url, JSON_ACCEPT)
        if page.error and page.error.startswith("cannot be read"):
            down.append(page.error)
        return page.files

    def read(url: str) -> bytes | None:
        from lockgen.index.client import HostError
        from lockgen.index.ranges import RangeError, wheel_metadata

        if down:
            return None
        try:
            reply = reader.client().get(url)
            if reply.status == 200:
                return reply.body
            if reply.status == 404 and url.endswith(".whl.metadata"):  # no PEP 658 file: a range read
                return wheel_metadata(reader.client(), url.removesuffix(".metadata"))[0]
        except HostError as exc:
            down.append(exc.kind.value)
        except RangeError:
            pass
        return None

    return PypiTorch(read=read, files=files)


def scaffold(root: Path, options: Options, torch_builds: PypiTorch | None = None) -> Draft:
    """The :class:`Draft` for the project at ``root``. Raises :class:`~lockgen.runtime.errors.UsageError`
    when an option's value is one the config would refuse (``--python 3.x``, ``--exclude-newer
    tomorrow``, ``--index pypi.org/simple``: checked by the config's own validators), when there is
    nothing to start from, a named file is missing, a requirement line is malformed (naming every
    ``file:line``), or a lockgen config exists. ``torch_builds``: what the default index serves as
    torch (:mod:`.builds`; default: init's table, nothing read)."""
    from lockgen.config.load import parse_toml
    from lockgen.config.validate import check_option

    for python in options.pythons:
        check_option("--python", "matrix.python", python)
    if options.exclude_newer is not None:
        check_option("--exclude-newer", "exclude-newer", options.exclude_newer)
    for url in options.indexes:
        check_option("--index", "index-url", url)
    hidden = [hide_login(url) for url in options.indexes]  # a login given on the command line is not written either
    options = dataclasses.replace(options, indexes=tuple(url for url, _ in hidden))

    if (root / "lockgen.toml").exists():
        raise UsageError("lockgen.toml: a lockgen config exists already; lockgen init writes nothing over it")
    project: PyProject | None = None
    if (root / "pyproject.toml").is_file():
        try:
            document = parse_toml(_read_text(root, "pyproject.toml"))
        except ValueError as exc:  # tomllib.TOMLDecodeError; tomlkit's ParseError on Python 3.10
            raise UsageError(
                f"pyproject.toml: cannot read TOML: {exc}; fix the file, then run lockgen init again"
            ) from None
        if "lockgen" in keyed.table(document.get("tool")):
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
    if options.pythons:
        pythons, python_why = list(options.pythons), "--python"
    else:
        pythons, python_why = _pythons(project.requires_python if project else None)
    exclude_newer = options.exclude_newer or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    notes: list[str] = [*(project.notes if project else ())]
    python_note = f"python {', '.join(pythons)}: {python_why}"
    builds = dataclasses.replace(torch_builds or PypiTorch(), exclude_newer=exclude_newer)
    if project is not None and not named:
        variants, found = compose_variants(project, pythons, exclude_newer, options.indexes, builds)
        notes += found
        if variants is not None:
            notes += [f"{f}: not read: pyproject.toml's backend variants make the matrix (name the requirement "
                      "files to start from them instead)" for f in discover(root)]  # fmt: skip
            notes += [f"{s}: not read: pyproject.toml's backend variants say the torch builds" for s, _ in scripts]
            return _checked(root, Draft(files=variants.files, explanation=(*variants.explanation, python_note, *notes),
                                        cells=variants.cells))  # fmt: skip
    elif project is not None:
        variants, _ = compose_variants(project, pythons, exclude_newer, options.indexes)
        if variants is not None:
            notes.append("pyproject.toml: its extras or groups are backend variants, but requirement files were "
                         "named: init starts from the files (name none to start from the variants)")  # fmt: skip
    # a project whose only files are its image's: they are its requirements
    names = [n for n, _ in named] or discover(root, options.with_dev) or discover(root, options.with_dev, images=True)
    if not named:
        notes += [f"{p.name}: not a regular file (a FIFO, a device, a folder or a broken symlink); not read"
                  for p in sorted(root.glob("*requirements*.txt")) if not p.is_file()]  # fmt: skip
        notes += [f"{f}: a development or test file, not a matrix value: lockgen init --with-dev adds its lines as a "
                  "dev group (vars.dev)" for f in discover(root, True) if f not in names]  # fmt: skip
        notes += [f"{f}: a container image's file (its name), not a matrix value: not read; name it to read it "
                  f"(lockgen init {f} …)" for f in discover(root, options.with_dev, images=True)
                  if is_image(f) and f not in names]  # fmt: skip
    dev = [n for n in names if is_dev(n)] if options.with_dev and not named else []
    names = [n for n in names if n not in dev] or names
    given = {n: g for n, g in named if g is not None}
    dependencies = bool(project and project.dependencies)
    if not names and not dependencies and not scripts:
        raise UsageError("no requirement files (requirements*.txt, requirements/…) and no [project].dependencies to "
                         "start from; name the files: lockgen init requirements_cuda.txt requirements_rocm.txt …")  # fmt: skip

    def read(rel: str) -> str:
        return _read_text(root, rel)

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
    if not options.pythons:
        pins = [ln for f in files for ln in (*f.lines, *f.rendered)]
        pythons, narrowed = _fit_pins(pythons, pins)
        if narrowed.startswith(" (the pins fit none") and (project is None or project.requires_python is None):
            # no requires-python chose this interpreter's: take the Pythons the pins fit instead
            pool = sorted({*PYTHONS, *pythons}, key=_key)
            fitting, why_fit = _fit_pins(pool, pins)
            if not why_fit.startswith(" (the pins fit none"):
                pythons, narrowed = fitting, f"; not this interpreter's: {why_fit.removeprefix('; not ')}"
                python_why = f"those of {', '.join(pool)} the pins fit"
        python_note = f"python {', '.join(pythons)}: {python_why}{narrowed}"
    notes.insert(0, python_note)
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
    surveyed = _survey(builds, [ln for f, _, _ in parts for ln in (*f.lines, *f.rendered)], pythons)
    if surveyed.sources_only:
        top["allow-build"] = sorted(surveyed.sources_only)
        notes += [f"allow-build {name}: {why}; uv builds it, as pip does (remove it to refuse builds)"
                  for name, why in sorted(surveyed.sources_only.items())]  # fmt: skip
    draft = compose([(f, facts) for f, facts, _ in parts], pythons, exclude_newer, project_dependencies=dependencies,
                    inputs=inputs, top=top, torch_builds=builds, pulls=surveyed.pulls_torch)  # fmt: skip
    if dev:
        draft = _with_dev(draft, [read_requirements(n, read) for n in dev], {f.path for f in files}, notes)
    notes += list(dict.fromkeys(c for f, _, _ in parts for c in f.changed))
    not_carried = list(dict.fromkeys([*(d for f, _, _ in parts for d in f.dropped), *draft.not_carried]))
    return _checked(root, Draft(files=draft.files, explanation=(*draft.explanation, *notes), cells=draft.cells,
                                not_carried=tuple(not_carried)))  # fmt: skip


#: No requirement file, script or pyproject.toml a project keeps comes near this (ComfyUI's: 1 KiB).
MAX_INPUT = 4 * 1024 * 1024


def _read_text(root: Path, rel: str) -> str:
    """The text of the project file ``rel``, read as untrusted input (docs/untrusted-input.md):
    refused, naming it, when it is a symlink out of the project, a FIFO, a device or a folder
    (:func:`~lockgen.runtime.bounded.confined_problem`), larger than :data:`MAX_INPUT`, or not
    UTF-8; read with :func:`~lockgen.runtime.bounded.read_file` (never blocks, never reads more)."""
    problem = bounded.confined_problem(root, rel)
    if problem is not None:
        raise UsageError(f"{rel}: {problem}; refused unread (name a file inside the project)")
    raw = bounded.read_file(root / rel, rel, MAX_INPUT)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{rel}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _with_dev(draft: Draft, dev: Sequence[ReqFile], matrix_files: set[str], notes: list[str]) -> Draft:
    """``draft`` with the development files' own lines (not those of a matrix file they read with
    ``-r``) as ``templates/dev.txt.j2``, which the shared template includes where ``vars.dev`` is
    true: every cell by default; a rule sets ``vars = { dev = false }`` to leave it out."""
    import tomlkit

    lines = list(
        dict.fromkeys(ln.key for f in dev for ln in f.lines if ln.origin.rpartition(":")[0] not in matrix_files)
    )
    files = dict(draft.files)
    files["templates/dev.txt.j2"] = f"{{# {', '.join(f.path for f in dev)} (lockgen init --with-dev) #}}\n" + "".join(
        f"{line}\n" for line in lines
    )
    files["templates/requirements.in.j2"] += '{% if dev %}\n{% include "dev.txt.j2" %}\n{% endif %}\n'
    doc = tomlkit.parse(files["lockgen.toml"])
    top = doc.get("vars")
    if isinstance(top, dict):
        top["dev"] = True
    files["lockgen.toml"] = tomlkit.dumps(doc)
    notes.append(f"templates/dev.txt.j2: the {len(lines)} lines of {', '.join(f.path for f in dev)} (--with-dev), in "
                 "every cell while vars.dev is true")  # fmt: skip
    return dataclasses.replace(
        draft, files=files, not_carried=(*draft.not_carried, *(d for f in dev for d in f.dropped))
    )


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
            if command.arch is not None and platforms is not None:  # the script's branch for that arch
                oses = dict.fromkeys(p[0] for p in platforms)
                platforms = tuple(p for p in PLATFORMS if p[0] in oses and p[1] == command.arch)
                notes.append(f"{command.origin}: for {', '.join(f'{o} {command.arch}' for o in oses)}: the branch of "
                             f"{script} it sits in is for {command.arch}")  # fmt: skip
            commands.append((command, platforms))
    known = [p for _, facts, _ in parts for p in facts.platforms or ()]
    everywhere = tuple(p for p in PLATFORMS if p in {*DEFAULT_PLATFORMS, *known})
    combined, why = combine(parts, commands, everywhere)
    notes += why
    return [(f, infer(f, pythons, indexes, g), g) for f, g in combined]


def _pythons(requires: object) -> tuple[list[str], str]:
    """The versions of :data:`PYTHONS` a ``requires-python`` allows, else this interpreter's,
    with the reason."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if not isinstance(requires, str):
        return [here], "this interpreter's (no requires-python says otherwise; --python X.Y,… chooses)"
    try:
        spec = SpecifierSet(requires)
    except InvalidSpecifier:
        return [here], f"this interpreter's (requires-python {requires!r} is not a specifier)"
    allowed = [v for v in PYTHONS if spec.contains(f"{v}.0")]
    if not allowed:
        return [here], f"this interpreter's (requires-python {requires} allows none of {', '.join(PYTHONS)})"
    return allowed, f"those of {', '.join(PYTHONS)} that pyproject.toml's requires-python {requires} allows"


#: The newest CPython each torch release (major.minor) has wheels for on PyPI and
#: download.pytorch.org: 3.11 up to 2.1, 3.12 from 2.2, 3.13 from 2.5, 3.14 from 2.9.
TORCH_NEWEST_PYTHON = {"1.13": "3.11", "2.0": "3.11", "2.1": "3.11", "2.2": "3.12", "2.3": "3.12", "2.4": "3.12"}


def _fit_pins(pythons: list[str], lines: Sequence[Line]) -> tuple[list[str], str]:
    """``pythons`` without those a pin cannot be installed on, where that is knowable without
    the index: a package named only by wheel URLs whose tags name CPython versions (``cp311``),
    and a torch pinned to a release older than a Python (:data:`TORCH_NEWEST_PYTHON`). Returns
    the Pythons and the reason to add (empty when none was dropped). When the pins leave none,
    ``pythons`` stays and the reason says which pin cannot be met."""
    from lockgen.scaffold.reading import wheel_pythons

    limits: dict[str, tuple[set[str], str]] = {}
    for line in lines:
        if line.name is None:
            continue
        found = wheel_pythons(line)
        name = str(line.name)
        if found is None:
            if line.name == "torch" and line.version is not None:
                release = ".".join(str(p) for p in line.version.release[:2])
                newest = TORCH_NEWEST_PYTHON.get(release)
                if newest is not None:
                    allowed = {p for p in PYTHONS if _key(p) <= _key(newest)}
                    limits[name] = (limits.get(name, (set(), ""))[0] | allowed, f"torch=={line.version} ({line.origin}) "
                                    f"has wheels up to Python {newest}")  # fmt: skip
            elif name in limits and "wheels" in limits[name][1]:
                limits.pop(name)  # also named from an index: any Python its index serves
            continue
        shown = ", ".join(sorted(found, key=_key))
        before = limits.get(name, (set(), ""))
        limits[name] = (before[0] | found, f"{name}'s wheels ({line.origin}) are for Python {shown}")
    kept = [p for p in pythons if all(p in allowed for allowed, _ in limits.values())]
    dropped = [p for p in pythons if p not in kept]
    if not dropped:
        return pythons, ""
    reasons = "; ".join(why for allowed, why in limits.values() if any(p not in allowed for p in dropped))
    if not kept:
        return pythons, f" (the pins fit none of them: {reasons}; pass --python)"
    return kept, f"; not {', '.join(dropped)}: {reasons}"


def _survey(builds: PypiTorch, lines: Sequence[Line], pythons: Sequence[str]) -> Survey:
    """What the default index says of the named requirements (:func:`~lockgen.scaffold.builds.survey`):
    only the PEP 508 ones without a URL, for the first target Python."""
    from packaging.requirements import InvalidRequirement, Requirement

    from lockgen.scaffold.builds import survey

    requirements = []
    for line in lines:
        if line.name is None or line.problem is not None:
            continue
        try:
            requirements.append(Requirement(line.text))
        except InvalidRequirement:
            continue
    return survey(builds, requirements, pythons[0])


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def write(root: Path, draft: Draft) -> list[str]:
    """Create ``draft``'s files under ``root`` as one journaled unit (:mod:`lockgen.locks.journal`,
    holding the run lock): either all are written or none. Returns their paths. Raises
    :class:`~lockgen.runtime.errors.UsageError`, writing nothing, when a folder on the way to one
    (``templates/``) is a symlink or not a folder (init never writes through a symlink, inside the
    project or out of it), and :class:`~lockgen.locks.journal.FileExists` (exit 2) when one of
    them exists (appeared since the draft was made)."""
    from lockgen.locks.journal import Journal
    from lockgen.locks.store import ProjectLock

    for rel in draft.files:
        parts = Path(rel).parts
        for depth in range(1, len(parts)):
            folder = root.joinpath(*parts[:depth])
            if folder.is_symlink():
                raise UsageError(f"{Path(*parts[:depth]).as_posix()}/: a symlink; lockgen init never writes through one "
                                 "(make it a folder of the project, or remove it), nothing was written")  # fmt: skip
            if folder.exists() and not folder.is_dir():
                raise UsageError(f"{Path(*parts[:depth]).as_posix()}: not a folder; move it away, nothing was written")
    unit = Journal(root, "init")
    for rel, text in draft.files.items():
        unit.write(rel, text, new=True)
    with ProjectLock(root):
        unit.commit()
    return list(draft.files)
