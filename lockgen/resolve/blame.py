"""Name the requirement that fought a pin that cannot move (CASES C08).

When uv's explanation of a failed resolution mentions a pinned package, lockgen names the template,
line and text of every requirement whose package uv's explanation also mentions: the
``setuptools<77`` next to torch 2.13 that would otherwise have made uv backtrack torch.
"""

from __future__ import annotations

from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from lockgen.plan import reqline
from lockgen.plan.plan import Plan
from lockgen.resolve import uvout
from lockgen.runtime import bounded
from lockgen.runtime.errors import InputError

__all__ = ["blame"]


def blame(root: Path, plan: Plan, stderr: str) -> str:
    """When uv's error names a pin that cannot move, name the requirement lines that fought it:
    the template, line and text of every requirement whose package uv's explanation mentions
    (CASES C08: ``setuptools<77`` next to torch 2.13)."""
    mentioned = uvout.mentioned(stderr)
    pinned = plan.pin_requirements()  # exact pins and pins written as specifiers (issue 9)
    fought = [name for name in pinned if name in mentioned]
    if not fought:
        return ""
    lines = []
    for role in ("requirements", "overrides"):
        if role not in plan.rendered.files:
            continue
        template, text = plan.rendered.files[role]
        for line in text.splitlines():
            name = _requirement_name(line)
            if name and name in mentioned and _fights(line, name, plan):
                lines.append((template, line.strip(), name))
    if not lines:
        return ""
    pins = ", ".join(f"{n}{pinned[n]}" for n in fought)
    out = [f"\nlockgen: the pin(s) {pins} cannot move; requirement(s) that fought them:"]
    for template, line, name in lines:
        out.append(f"  {_template_line(root, plan, template, name, line)}: {line}")
    out.append("change or drop that requirement; lockgen never lets uv move a pinned package")
    return "\n".join(out)


def _fights(line: str, name: str, plan: Plan) -> bool:
    """Whether the requirement ``line`` of ``name`` can fight a pin: any requirement of another
    package uv's explanation names, and one of a pinned package itself whose specifier excludes
    the pinned version (``attrs==25.3.0`` in a template, ``attrs`` pinned to 25.1.0)."""
    if name not in plan.pinned:
        return name not in plan.pinned_specifiers
    req = reqline.requirement(line)
    if req is None:
        return False
    try:
        return not req.specifier.contains(Version(plan.pinned[name]), prereleases=True)
    except InvalidVersion:
        return False


def _requirement_name(line: str) -> str | None:
    """The canonical project name of a requirement line (``packaging``), None if it is not one
    (a comment, an option, a line with Jinja in it)."""
    req = reqline.requirement(line)
    return canonicalize_name(req.name) if req is not None else None


def _template_line(root: Path, plan: Plan, template: str, name: str, line: str) -> str:
    """``templates/<file>:<line>`` of the template line that rendered ``line``: the cell's
    template first, then every other template (it may have been ``{% include %}``d)."""
    folder = root / plan.templates
    paths = [folder / template, *sorted(p for p in folder.rglob("*") if p.is_file() and p != folder / template)]
    for match in (lambda text: text.strip() == line, lambda text: _requirement_name(text) == name):
        for path in paths:
            try:
                source = bounded.read_text(path, path.name).splitlines()
            except (OSError, InputError):
                continue
            for number, text in enumerate(source, 1):
                if match(text):
                    return f"{path.relative_to(root).as_posix()}:{number}"
    return f"{plan.templates}/{template}"
