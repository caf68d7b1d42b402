"""``lockgen init``: a working config and templates from what a project has (issue 20, item 2).

Three pure steps and one write: :mod:`.reading` reads the requirement files (and ``-r``
includes), :mod:`.inference` says what each file is for (platforms, backend, variant words),
:mod:`.compose` makes the matrix, rules, sources and templates; :func:`write` creates the files,
never over an existing one. Every choice comes with a line of explanation.
"""

from __future__ import annotations

import datetime
import sys
from dataclasses import dataclass
from pathlib import Path

from lockgen.runtime.errors import UsageError
from lockgen.scaffold.compose import Draft, compose
from lockgen.scaffold.inference import infer
from lockgen.scaffold.reading import ReqFile, read_requirements

__all__ = ["Draft", "Options", "scaffold", "write"]

#: The Python versions init may choose from ``requires-python``.
PYTHONS = ("3.10", "3.11", "3.12", "3.13")


@dataclass(frozen=True, kw_only=True)
class Options:
    """``files``: requirement files (project-relative; default: those found); ``indexes``:
    backend index URLs for the files that name none; ``pythons`` (default: from
    ``requires-python``, else this interpreter's); ``exclude_newer`` (default: today, UTC)."""

    files: tuple[str, ...] = ()
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
    when there is nothing to start from, a named file is missing, or a lockgen config exists."""
    from lockgen.config.load import parse_toml

    if (root / "lockgen.toml").exists():
        raise UsageError("lockgen.toml: a lockgen config exists already; lockgen init writes nothing over it")
    project: dict[str, object] = {}
    if (root / "pyproject.toml").is_file():
        document = parse_toml((root / "pyproject.toml").read_text(encoding="utf-8"))
        if isinstance(document.get("tool"), dict) and "lockgen" in document["tool"]:
            raise UsageError("pyproject.toml: has a [tool.lockgen] config already; lockgen init writes nothing over it")
        project = document.get("project") if isinstance(document.get("project"), dict) else {}  # type: ignore[assignment]
    names = list(options.files) or discover(root)
    for name in options.files:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise UsageError(f"{name}: name a requirement file inside the project")
        if not (root / name).is_file():
            raise UsageError(f"{name}: no such file")
    dynamic = project.get("dynamic")
    dependencies = bool(project.get("dependencies")) and "dependencies" not in (
        dynamic if isinstance(dynamic, list) else []
    )
    if not names and not dependencies:
        raise UsageError("no requirement files (requirements*.txt, requirements/…) and no [project].dependencies to "
                         "start from; name the files: lockgen init requirements_cuda.txt requirements_rocm.txt …")  # fmt: skip

    def read(rel: str) -> str:
        return (root / rel).read_text(encoding="utf-8")

    files: list[ReqFile] = [read_requirements(n, read) for n in names]
    included = {inc for f in files for inc in f.includes}
    notes = [f"{f.path}: not a variant of its own: {', '.join(g.path for g in files if f.path in g.includes)} "
             "read it with -r, so its lines are theirs" for f in files if f.path in included]  # fmt: skip
    files = [f for f in files if f.path not in included]
    if not files:  # only [project].dependencies
        files = [ReqFile(path="pyproject.toml", lines=())]
    pythons = list(options.pythons) or _pythons(project.get("requires-python"))
    facts = [(f, infer(f, pythons, options.indexes)) for f in files]
    exclude_newer = options.exclude_newer or datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    draft = compose(facts, pythons, exclude_newer, project_dependencies=dependencies)
    notes += [d for f in files for d in f.dropped]
    taken = [rel for rel in draft.files if (root / rel).exists()]
    if taken:
        raise UsageError(f"{', '.join(taken)}: exists already; lockgen init writes nothing over existing files "
                         "(move them away, or write the config by hand)")  # fmt: skip
    return Draft(files=draft.files, explanation=(*draft.explanation, *notes), cells=draft.cells)


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
