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

import dataclasses
import functools
import re
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockgen.config import Config
from lockgen.plan.matrix import Cell
from lockgen.plan.reqfile import Refused, refused
from lockgen.plan.target import Target
from lockgen.runtime.bounded import confined_problem as template_problem
from lockgen.runtime.errors import Problem, TemplateError, TemplateLinesError

if TYPE_CHECKING:
    import jinja2

__all__ = ["ROLES", "LineMap", "Rendered", "environment", "render", "render_strings", "variables"]

#: Input roles in the order uv receives them, with the file name each renders to.
ROLES = {"requirements": "requirements.in", "constraints": "constraints.txt", "overrides": "overrides.txt"}


@dataclass(frozen=True)
class Rendered:
    """Rendered inputs of one cell: ``{role: (template name, text)}`` for the roles it has."""

    files: dict[str, tuple[str, str]]


def environment(config: Config, overlay: Mapping[str, str] | None = None) -> jinja2.Environment:
    """One sandboxed ``jinja2`` environment per run, loading from ``<root>/<templates>``;
    ``overlay`` maps template names (relative to that folder) to texts read instead of the files
    (``lockgen bump`` renders its edits before it writes them; error lines still name the file)."""
    folder = config.root / config.templates
    return _bounded_environment()(
        # a byte-order mark (Notepad) is not part of a template's first line
        loader=_OverlayLoader(folder, overlay or {}, config.templates),
        undefined=_undefined(),
        keep_trailing_newline=True,
        autoescape=False,
    )


#: The largest string, list or integer (in bits) one template expression may make: ``'a' * 10**10``
#: would hold 10 GB, ``10**10**8`` computes for minutes; the sandbox bounds ranges only.
MAX_PRODUCT = 1_000_000


def _bounded_environment() -> type[jinja2.Environment]:
    """The sandboxed environment class whose ``*`` and ``**`` refuse a result over
    :data:`MAX_PRODUCT` (a :class:`jinja2.sandbox.SecurityError`, reported as the template's
    line) before computing it."""
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import SandboxedEnvironment

    class Bounded(SandboxedEnvironment):
        intercepted_binops = frozenset(["*", "**"])

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            power = operator == "**" and isinstance(left, int) and isinstance(right, int)
            if power and abs(left) > 1 and right > 0 and left.bit_length() * right > MAX_PRODUCT:
                raise SecurityError(f"{left} ** {right} is larger than a template may compute")
            if operator == "*":
                for seq, count in ((left, right), (right, left)):
                    if (
                        isinstance(seq, str | list | tuple)
                        and isinstance(count, int)
                        and len(seq) * count > MAX_PRODUCT
                    ):
                        raise SecurityError(
                            f"a {type(seq).__name__} repeated {count} times is larger than a template may make"
                        )
            return super().call_binop(context, operator, left, right)

    return Bounded


def _OverlayLoader(folder: Path, overlay: Mapping[str, str], templates: str) -> jinja2.BaseLoader:  # noqa: N802 - a class factory
    """A file system loader confined to the templates ``folder`` (``templates``: its
    project-relative name, for errors) that serves ``overlay`` texts for the names it holds,
    with the real file name (tracebacks map to template lines as for the file itself). A
    template that is a symlink leading outside the folder, or not a regular file (a FIFO,
    ``/dev/zero``), is refused unread: its content never reaches an error message (a
    ``templates/extra.j2 -> ~/.netrc`` would otherwise be quoted line by line; issue 15)."""
    import jinja2

    class Loader(jinja2.FileSystemLoader):
        def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
            if template in overlay:
                return overlay[template].removeprefix("\ufeff"), str(folder / template), lambda: False
            problem = template_problem(folder, template)
            if problem is not None:
                raise TemplateError(Problem(
                    file=f"{templates}/{template}", message=f"{problem}; refused unread",
                    hint="make it a file inside the templates folder",
                ))  # fmt: skip
            return super().get_source(environment, template)

    return Loader(folder, encoding="utf-8-sig")


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
        pins=Table("pins", cell.settings.pins),
        vars=Table("vars", cell.settings.vars),
    )
    return context


class Table(dict[str, Any]):
    """A table templates see by name (``pins``, ``vars``): a dict that knows what it is called,
    so a missing key is reported as ``pins has no key 'torhc' (did you mean 'torch'?)`` with the
    keys it has, not Jinja's ``'dict object' has no attribute 'torhc'`` (issue 16)."""

    def __init__(self, label: str, items: Mapping[str, Any]) -> None:
        super().__init__(items)
        self._label = label  # underscored: a sandboxed template cannot see it (a pin may be named "label")

    def _missing(self, key: object) -> str:
        """The message for a missing ``key``."""
        import difflib

        keys = sorted(self)
        close = difflib.get_close_matches(str(key), keys, n=1)
        guess = f" (did you mean {close[0]!r}?)" if close else ""
        listed = ", ".join(keys) if keys else "none"
        return f"{self._label} has no key {key!r}{guess}; the {self._label} of this cell: {listed}"


@functools.cache
def _undefined() -> type[jinja2.StrictUndefined]:
    """StrictUndefined that names a :class:`Table` and its keys when a key is missing."""
    import jinja2

    class Undefined(jinja2.StrictUndefined):
        __slots__ = ()

        @property
        def _undefined_message(self) -> str:
            table = self._undefined_obj
            if not self._undefined_hint and isinstance(table, Table):
                return table._missing(self._undefined_name)
            return str(super()._undefined_message)

    return Undefined


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
            raise _lines_error(env, config, name, bad, cell)
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
    except TemplateError as exc:  # a template refused unread: name the cell
        raise TemplateError(*(dataclasses.replace(p, cells=(cell.name,)) for p in exc.problems)) from None
    except jinja2.TemplateSyntaxError as exc:
        file = f"{config.templates}/{exc.name or name}"
        raise TemplateError(
            Problem(file=file, line=exc.lineno, message=exc.message or "syntax error", cells=(cell.name,))
        ) from None
    except Exception as exc:  # undefined variables, sandbox violations, filter errors
        file, line = _template_line(exc, config.root / config.templates) or (where, None)
        advice = _UNDEFINED_HINT if isinstance(exc, jinja2.UndefinedError) else None
        raise TemplateError(Problem(file=file, line=line, message=str(exc), cells=(cell.name,), hint=advice)) from None


#: The same for every cell, so the problem merges across cells (each cell's variables differ).
_UNDEFINED_HINT = (
    "templates see os, arch, backend, flavor, python, python_tag, target, macos, manylinux, cell, pins, "
    "vars, project, each extra axis and each variable by its own name; a variable or a pins key that only "
    "some cells have (a rule sets it) needs a top-level default (vars, pins), or a test: "
    "{% if name is defined %}"
)


def _lines_error(
    env: jinja2.Environment, config: Config, name: str, bad: Sequence[Refused], cell: Cell
) -> TemplateLinesError:
    """The error for refused lines of template ``name``'s rendered text, each naming the template
    line it comes from when one maps back (:func:`_origin`), else only its rendered line. A single
    refused line that maps is a record at that template line (``templates/common.j2:3: …``)."""
    where = f"{config.templates}/{name}"
    sources = _source_lines(env, config.templates, name)
    placed = [(r, _origin(sources, r.text)) for r in bad]
    if len(placed) == 1 and placed[0][1] is not None:
        r, (file, line) = placed[0][0], placed[0][1]
        rendered = f"rendered line {r.line}" + ("" if file == where else f" of {where}")
        return TemplateLinesError(file, cell.name, [f"{r.text.strip()!r} ({rendered}): {r.detail}"], line=line)
    texts = []
    for r, origin in placed:
        if origin is None:
            texts.append(str(r))
        else:
            at = f"line {origin[1]}" if origin[0] == where else f"{origin[0]}:{origin[1]}"
            texts.append(f"{at} {r.text.strip()!r} (rendered line {r.line}): {r.detail}")
    return TemplateLinesError(where, cell.name, texts)


_MARKUP = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}")


def _source_lines(env: jinja2.Environment, templates: str, name: str) -> list[tuple[str, int, re.Pattern[str]]]:
    """``(templates/<file>, line, pattern)`` for each line of template ``name`` and of the
    templates it includes (by a literal name) whose text is more than Jinja markup: the pattern
    matches what the line renders to, each ``{{ … }}``/``{% … %}``/``{# … #}`` standing for any
    text. Lines with markup left open (spanning lines) are skipped."""
    import jinja2
    from jinja2 import meta

    assert env.loader is not None
    found: list[tuple[str, int, re.Pattern[str]]] = []
    queue, seen = [name], set()
    while queue:
        current = queue.pop(0)
        if current in seen:
            continue
        seen.add(current)
        try:
            source = env.loader.get_source(env, current)[0]
            queue += [n for n in meta.find_referenced_templates(env.parse(source)) if n is not None]
        except jinja2.TemplateError:
            continue
        for number, line in enumerate(source.splitlines(), 1):
            literal = _MARKUP.split(line.strip())
            if "".join(literal).strip() and not any(mark in part for part in literal for mark in ("{{", "{%", "{#")):
                pattern = ".*?".join(re.escape(part) for part in literal)
                found.append((f"{templates}/{current}", number, re.compile(pattern)))
    return found


class LineMap:
    """Which template line renders a rendered line, for the templates of one environment: built
    once per template name (:func:`_source_lines`), asked many times (``lockgen why``, bump)."""

    def __init__(self, env: jinja2.Environment, templates: str) -> None:
        self.env, self.templates = env, templates
        self._sources: dict[str, list[tuple[str, int, re.Pattern[str]]]] = {}

    def origin(self, template: str, text: str) -> tuple[str, int] | None:
        """``(templates/<file>, line)`` of the one line of template ``template`` (or of one it
        includes by a literal name) that renders to ``text``; None when no line or several do."""
        if template not in self._sources:
            self._sources[template] = _source_lines(self.env, self.templates, template)
        return _origin(self._sources[template], text)


def _origin(sources: Sequence[tuple[str, int, re.Pattern[str]]], text: str) -> tuple[str, int] | None:
    """The one template line (file, line) that renders to ``text`` (whitespace around it aside),
    or None when no line or several do."""
    places = {(file, line) for file, line, pattern in sources if pattern.fullmatch(text.strip())}
    return places.pop() if len(places) == 1 else None


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
