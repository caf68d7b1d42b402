"""Stage 4: render a cell's requirements, constraints and overrides from Jinja templates.

Templates live in the config's ``templates`` folder and render in a sandboxed jinja2 environment
with ``StrictUndefined``: a misspelt variable is an error, never an empty string. The variables a
template sees are listed in :data:`RESERVED_NAMES`, plus each extra matrix axis by its own name
(``variant``), the cell's ``vars`` from rules and ``matrix.include`` entries, and ``project``: the
``[project]`` table of the project's pyproject.toml (``project.dependencies``,
``project.optional_dependencies["cuda"]``: lists of requirement strings, issue 9), so a template
can take the dependency list from where the project keeps it instead of a copy that drifts.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockgen.config import Config
from lockgen.errors import Problem, TemplateError, TemplateLinesError
from lockgen.plan.matrix import Cell
from lockgen.plan.reqfile import refused
from lockgen.plan.target import Target

if TYPE_CHECKING:
    import jinja2

__all__ = ["ROLES", "Rendered", "environment", "render", "render_strings", "variables"]

#: Input roles in the order uv receives them, with the file name each renders to.
ROLES = {"requirements": "requirements.in", "constraints": "constraints.txt", "overrides": "overrides.txt"}


@dataclass(frozen=True)
class Rendered:
    """Rendered inputs of one cell: ``{role: (template name, text)}`` for the roles it has."""

    files: dict[str, tuple[str, str]]


def environment(config: Config) -> jinja2.Environment:
    """One sandboxed ``jinja2`` environment per run, loading from ``<root>/<templates>``."""
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(config.root / config.templates),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def variables(config: Config, cell: Cell, target: Target) -> dict[str, Any]:
    """The template context of ``cell``: axes (extra ones by their names), python tag, uv target,
    pins, rule variables and, when the project has a ``[project]`` table, ``project``."""
    context = dict(cell.settings.vars)
    context.update(cell.extra)
    if config.project is not None:
        context["project"] = config.project.context()
    context.update(
        os=cell.os,
        arch=cell.arch,
        backend=cell.backend,
        flavor=cell.settings.flavor or cell.backend,
        python=cell.python,
        python_tag=target.python_tag,
        target=target.platform,
        macos=target.macos,
        manylinux=cell.settings.manylinux if cell.os == "linux" else None,
        cell=cell.name,
        pins=dict(cell.settings.pins),
        vars=dict(cell.settings.vars),
    )
    return context


def render(env: jinja2.Environment, config: Config, cell: Cell, target: Target) -> Rendered:
    """Render every template the cell names.

    Raises :class:`TemplateError` naming the template, its line and the cell when a template is
    missing, has a syntax error, or uses an undefined variable, and :class:`TemplateLinesError`
    when a rendered file holds options uv must not see (indexes, find-links, includes; see
    :mod:`lockgen.plan.reqfile`).
    """
    context = variables(config, cell, target)
    files = {}
    for role in ROLES:
        name = getattr(cell.settings, role)
        if name is None:
            continue
        text = _render_one(env, config, name, context, cell)
        bad = refused(text)
        if bad:
            raise TemplateLinesError(f"{config.templates}/{name}", cell.name, [str(r) for r in bad])
        files[role] = (name, text)
    return Rendered(files=files)


def _render_one(env: jinja2.Environment, config: Config, name: str, context: dict[str, Any], cell: Cell) -> str:
    import jinja2

    where = f"{config.templates}/{name}"
    try:
        text: str = env.get_template(name).render(context)
        return text
    except jinja2.TemplateNotFound as exc:
        missing = f"{config.templates}/{exc.name}"
        hint = (
            "create it or fix the setting"
            if exc.name == name
            else f"included from {where}; create it or fix the include"
        )
        raise TemplateError(
            Problem(file=missing, message="template not found", cells=(cell.name,), hint=hint)
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        file = f"{config.templates}/{exc.name or name}"
        raise TemplateError(
            Problem(file=file, line=exc.lineno, message=exc.message or "syntax error", cells=(cell.name,))
        ) from None
    except Exception as exc:  # undefined variables, sandbox violations, filter errors
        file, line = _template_line(exc, config.root / config.templates) or (where, None)
        raise TemplateError(Problem(file=file, line=line, message=str(exc), cells=(cell.name,))) from None


def _template_line(exc: BaseException, folder: Path) -> tuple[str, int | None] | None:
    """``("templates/<file>", line)`` of the innermost template frame of an exception (jinja
    maps frames to template lines; an ``{% include %}``d template is the one that failed)."""
    folder = folder.resolve()
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename).resolve()
        if path.is_relative_to(folder):
            found = (f"{folder.name}/{path.relative_to(folder).as_posix()}", frame.lineno)
    return found


def render_strings(
    env: jinja2.Environment, strings: Iterable[str], context: dict[str, Any], cell: Cell, key: str
) -> tuple[str, ...]:
    """Render each config string (``optional``, ``no-deps`` entries) as a Jinja template.

    Raises :class:`TemplateError` naming the setting, the string and the cell, also when the
    rendered entry is an option uv must not see (:mod:`lockgen.plan.reqfile`).
    """
    result = []
    for text in strings:
        try:
            result.append(env.from_string(text).render(context).strip())
        except Exception as exc:
            raise TemplateError(Problem(key=f"{key} entry {text!r}", message=str(exc), cells=(cell.name,))) from None
        bad = refused(result[-1])
        if bad:
            raise TemplateLinesError(
                f"{key} entry {text!r}", cell.name, [str(r).replace("rendered line 1 ", "rendered as ") for r in bad]
            )
    return tuple(r for r in result if r)
