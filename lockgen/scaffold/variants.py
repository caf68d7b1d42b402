"""``lockgen init`` from a ``pyproject.toml`` whose extras (or groups) are backend variants. Pure.

InvokeAI-style projects keep one dependency list and mutually exclusive extras ``cpu``,
``cuda``, ``rocm``, ``xpu`` that pin torch's build for each, with ``[tool.uv.sources]`` sending
torch to the matching ``[[tool.uv.index]]`` per extra and marker. :func:`compose_variants` makes
the backend axis from them: a rule per backend that selects the extra in the template
(``project.optional_dependencies[extra]``, or ``project.dependency_groups[group]``), and a source
per index host with the backend's label as its ``{flavor}``.

* Which members are variants: those in a ``[tool.uv] conflicts`` set (uv's word that they cannot
  be installed together) where one of them shows a backend; with no conflicts declared, every
  member that shows one. A member shows a backend by where ``[tool.uv.sources]`` sends a torch
  package for it (an index whose URL ends in a label: ``…/whl/cu128``), the local label of a
  torch package it pins (``torch==2.7.1+cu128``), else its name (``cpu``, ``cu128``, ``cuda``,
  ``rocm``, ``xpu``, ``mps``).
* Platforms: what ``[tool.uv] environments`` allows (each os's usual arch where it allows any:
  linux x86_64, windows x86_64, macos aarch64), else those three.
* Cells: a member's backend on each platform where its build holds there (markers evaluated with
  ``packaging`` per target); where no member has a cpu build, the cpu member anyway (its
  requirements there are PyPI's builds) or the dependencies alone. No GPU build on macOS, and no
  labelled one (the cpu index's macOS wheels carry no ``+cpu``): macOS cells install the
  dependencies alone (``mps`` on Apple silicon), unless a member is for ``mps``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import tomlkit
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from lockgen.scaffold.builds import PypiTorch
from lockgen.scaffold.compose import Draft
from lockgen.scaffold.inference import (
    DEFAULT_PLATFORMS,
    PLATFORMS,
    TORCH_FAMILY,
    Platform,
    backend_label,
    family,
    is_gpu,
    label_word,
    local_label,
    marker_env,
)
from lockgen.scaffold.layout import Cell, axes_of, detect_table, inline, matches, matrix_table
from lockgen.scaffold.pyproject import Member, PyProject, UvIndex
from lockgen.scaffold.reading import Line, holds

__all__ = ["compose_variants"]

_DEFAULT_ARCH = {"linux": "x86_64", "windows": "x86_64", "macos": "aarch64"}


@dataclass(frozen=True)
class _Build:
    label: str
    how: str  # "index" (uv routes torch there), "label" (a pinned local label), "name"
    why: str


@dataclass(frozen=True)
class _Cell:
    cell: Cell
    member: Member | None
    use: tuple[_Use, ...]


def compose_variants(
    project: PyProject, pythons: Sequence[str], exclude_newer: str, cli_indexes: Sequence[str] = (),
    torch_builds: PypiTorch | None = None,
) -> tuple[Draft | None, list[str]]:  # fmt: skip
    """The config and template for ``project``'s backend variants, or None when it has none
    (then its dependencies are composed as a requirement file) with what init found of its
    extras and groups. ``torch_builds``: what the default index serves as torch (a linux cpu
    cell whose torch no index source serves is labelled by that build; default: init's table)."""
    torch_builds = torch_builds or PypiTorch()
    why: list[str] = []
    platforms = _platforms(project, pythons, why)
    members = list(project.members)
    builds = {m: {p: _build(project, m, p, pythons) for p in platforms} for m in members}
    named = {m: _name_label(m.name) for m in members}
    for m in members:  # a member that shows its backend only by its name has it wherever it installs something
        if named[m] and not any(builds[m].values()):
            builds[m] = {p: _Build(named[m] or "", "name", "its name") if _reqs(project, m, p, pythons) else None
                         for p in platforms}  # fmt: skip
    showing = [m for m in members if any(builds[m].values())]
    variants: list[Member] = []
    if project.conflicts:
        for group in project.conflicts:
            if any(m in showing for m in group):
                variants += [m for m in group if m not in variants]
                why.append(f"backend variants {', '.join(m.name for m in group)}: [tool.uv] conflicts says they "
                           "cannot be installed together, and their builds say backends")  # fmt: skip
            else:
                why.append(f"{', '.join(m.name for m in group)}: mutually exclusive ([tool.uv] conflicts) but no "
                           "backend builds: they stay available to templates, at most one per cell")  # fmt: skip
    else:
        variants = showing
        if variants:
            why.append(f"backend variants {', '.join(m.name for m in variants)}: their builds say backends "
                       "(no [tool.uv] conflicts declared: init takes them as mutually exclusive)")  # fmt: skip
    if not variants:
        return None, [w for w in why if "conflicts" in w]
    if len({m.kind for m in variants}) > 1:
        why.append("backend variants are extras and groups: each cell's rule sets extra or group")
    cells: list[_Cell] = []
    cpu_member = next((m for m in variants if any(b and family(b.label) == "cpu" for b in builds[m].values())), None)
    for p in platforms:
        found: list[_Cell] = []
        taken: dict[str, Member] = {}
        for m in variants:
            build = builds[m][p]
            if build is None:
                continue
            label = build.label
            if p[0] == "macos":
                if not (label == "mps" or (build.how == "name" and not is_gpu(label))):
                    continue
                label = "mps" if p[1] == "aarch64" else "cpu"
            if label in taken:
                why.append(f"{m}: {label} on {' '.join(p)} as {taken[label].name} is: left to {taken[label].name}")
                continue
            use = _use(project, m, p, label, pythons, cli_indexes)
            label = _pypi_label(project, m, p, label, use, pythons, torch_builds, why)
            if label in taken:
                why.append(f"{m}: {label} on {' '.join(p)} as {taken[label].name} is: left to {taken[label].name}")
                continue
            taken[label] = m
            found.append(_Cell((*p, label), m, use))
        if not any(family(c.cell[2]) == "cpu" for c in found):
            label = ("mps" if p[1] == "aarch64" else "cpu") if p[0] == "macos" else "cpu"
            member = cpu_member if p[0] != "macos" and cpu_member and _reqs(project, cpu_member, p, pythons) else None
            use = _use(project, member, p, label, pythons, cli_indexes)
            label = _pypi_label(project, member, p, label, use, pythons, torch_builds, why)
            if any(c.cell[2] == label for c in found):
                why.append(f"{' '.join(p)}: no cpu cell: the default index's torch there is the {label} build "
                           "another variant has")  # fmt: skip
                cells += found
                continue
            found.append(_Cell((*p, label), member, use))
            if p[0] == "macos":
                why.append(f"{' '.join(p)}: {label}, the dependencies alone: no GPU build for macOS, and the "
                           "cpu index's macOS wheels carry no +cpu label (PyPI's are the same)")  # fmt: skip
            elif member is not None:
                why.append(f"{' '.join(p)}: no variant's build holds there (their markers leave it out), so one "
                           f"{label} cell with {member.name} (its requirements there: PyPI's builds)")  # fmt: skip
            else:
                why.append(f"{' '.join(p)}: {label}, the dependencies alone (no variant is a cpu build)")
        cells += found
    for m in variants:
        where: dict[str, list[str]] = {c.cell[2]: [] for c in cells if c.member == m}
        for c in cells:
            if c.member == m:
                where[c.cell[2]].append(f"{c.cell[0]} {c.cell[1]}")
        reason = next((b.why for b in builds[m].values() if b), "")
        for label, at in where.items():
            why.append(f"{m}: backend {label} on {', '.join(at)} ({reason})")
        if not where:
            why.append(f"{m}: no cell: its builds hold on none of the platforms")
    others = [m for m in members if m not in variants]
    return _draft(project, cells, variants, others, list(pythons), exclude_newer, why), []


def _pypi_label(project: PyProject, member: Member | None, p: Platform, label: str, use: Sequence[_Use],
                pythons: Sequence[str], torch_builds: PypiTorch, why: list[str]) -> str:  # fmt: skip
    """``label`` of a cpu cell on linux whose torch (named by the dependencies or ``member``, no
    local label) no index source serves: the build the default index serves there (PyPI's linux
    torch is a CUDA build, :mod:`.builds`), said with its reason; else ``label``."""
    if p[0] != "linux" or family(label) != "cpu":
        return label
    reqs = [*_reqs(project, None, p, pythons), *_reqs(project, member, p, pythons)]
    torch = [r for r in reqs if canonicalize_name(r.name) in ("torch", "torchvision", "torchaudio")]
    served = {n for u in use for n in u.packages}
    if not torch or any(canonicalize_name(r.name) in served or r.url for r in torch):
        return label
    if any("+" in s.version for r in torch for s in r.specifier):
        return label
    spec = SpecifierSet()
    for r in torch:
        if canonicalize_name(r.name) == "torch":
            spec &= r.specifier
    build = torch_builds.build(spec, p[0], p[1], pythons[0])
    if build.label == label:
        return label
    what = str(member) if member else "[project].dependencies"
    why.append(f"{what}: backend {build.label} on {' '.join(p)}: its torch comes from the default index (no "
               f"[tool.uv.sources] index there), and {build.why}; for CPU builds there, send torch to "
               "https://download.pytorch.org/whl/cpu in [tool.uv.sources]")  # fmt: skip
    return build.label


def _platforms(project: PyProject, pythons: Sequence[str], why: list[str]) -> list[Platform]:
    """The platforms ``[tool.uv] environments`` allows: for each os the arches it names, or
    the usual one when it allows any (an unknown machine passes)."""
    if not project.environments:
        why.append("platforms linux x86_64, windows x86_64, macos aarch64: no [tool.uv] environments says otherwise")
        return list(DEFAULT_PLATFORMS)
    found: list[Platform] = []
    for os_ in ("linux", "windows", "macos"):
        base = marker_env(os_, _DEFAULT_ARCH[os_], pythons[0])
        if any(holds(m, {**base, "platform_machine": "riscv64"}) for m in project.environments):
            found.append((os_, _DEFAULT_ARCH[os_]))
            continue
        found += [p for p in PLATFORMS if p[0] == os_ and any(_holds(m, p, pythons) for m in project.environments)]
    why.append(f"platforms {', '.join(' '.join(p) for p in found)}: [tool.uv] environments (each os's usual arch "
               "where it allows any)")  # fmt: skip
    return found


def _holds(marker: Marker | None, p: Platform, pythons: Sequence[str]) -> bool:
    return any(holds(marker, marker_env(*p, py)) for py in pythons)


def _reqs(project: PyProject, member: Member | None, p: Platform, pythons: Sequence[str]) -> list[Requirement]:
    """The requirements of ``member`` (None: the dependencies) that hold on ``p``."""
    lines = project.members.get(member, ()) if member else (project.dependencies or ())
    return [r for r in map(Requirement, lines) if _holds(r.marker, p, pythons)]


def _route(project: PyProject, package: NormalizedName, member: Member | None, p: Platform,
           pythons: Sequence[str], own: bool = False) -> UvIndex | None:  # fmt: skip
    """The index ``[tool.uv.sources]`` sends ``package`` to on ``p`` with ``member`` installed
    (``own``: only an entry for that member), else None."""
    for entry in project.sources.get(package, ()):
        scoped = entry.extra is not None or entry.group is not None
        if scoped and (
            member is None or member.key != ("extra" if entry.extra else "group", entry.extra or entry.group)
        ):
            continue
        if (own and not scoped) or not _holds(entry.marker, p, pythons):
            continue
        return project.index(entry.index) if entry.kind == "index" and entry.index else None
    return None


def _build(project: PyProject, member: Member, p: Platform, pythons: Sequence[str]) -> _Build | None:
    """The backend build ``member`` installs on ``p``, when it installs anything there: where uv
    sends the torch packages for it (its own ``[tool.uv.sources]`` entries), else the local
    label a torch package it pins carries there."""
    own = _reqs(project, member, p, pythons)
    if not own:  # it installs nothing there: where uv sends the dependencies' torch for it is no build of its own
        return None
    required = [canonicalize_name(r.name) for r in (*_reqs(project, None, p, pythons), *own)]
    for name in sorted(dict.fromkeys(n for n in required if TORCH_FAMILY.match(n)), key=lambda n: n != "torch"):
        index = _route(project, name, member, p, pythons, own=True)
        if index is not None and (label := backend_label(index.url)):
            return _Build(label, "index", f"[tool.uv.sources] {name} -> index {index.name} {index.url}")
    for r in own:
        specs = list(r.specifier)
        if TORCH_FAMILY.match(canonicalize_name(r.name)) and len(specs) == 1 and "+" in specs[0].version:
            pinned = Line(text=str(r), name=canonicalize_name(r.name), version=Version(specs[0].version), origin="")
            found = local_label(pinned)
            if found:
                return _Build(found, "label", f"it pins {r.name}{specs[0]}")
    return None


def _name_label(name: str) -> str | None:
    """The backend a member's name says (``cuda12`` -> ``cu12``, ``amd`` -> ``rocm``), else None."""
    word = name.lower()
    cuda = re.fullmatch(r"cuda[-_]?(\d+)", word)
    if cuda:
        return f"cu{cuda[1]}"
    if label_word(word):
        return word
    return {"cuda": "cuda", "nvidia": "cuda", "gpu": "cuda", "rocm": "rocm", "amd": "rocm"}.get(word)


def _use(project: PyProject, member: Member | None, p: Platform, label: str, pythons: Sequence[str],
         cli_indexes: Sequence[str]) -> tuple[_Use, ...]:  # fmt: skip
    """The sources of a cell: for each package it requires that uv sends to an index there, one
    per host for the indexes whose label is the cell's backend (``{flavor}``), one per index
    otherwise; with no such index, an ``--index`` URL of the cell's label serves the torch
    packages the member pins with that label."""
    if p[0] == "macos":  # PyPI's macOS wheels are download.pytorch.org's
        return ()
    found: dict[tuple[str, str], list[NormalizedName]] = {}
    reqs = (*_reqs(project, None, p, pythons), *_reqs(project, member, p, pythons))
    for name in dict.fromkeys(canonicalize_name(r.name) for r in reqs):
        index = _route(project, name, member, p, pythons)
        if index is None or index.url.rstrip("/") in ("https://pypi.org/simple", "https://pypi.python.org/simple"):
            continue
        found.setdefault(_source(index.url, index.name, label), []).append(name)
    if not found and member is not None:
        labelled = [canonicalize_name(r.name) for r in _reqs(project, member, p, pythons)
                    if TORCH_FAMILY.match(canonicalize_name(r.name)) and any(f"+{label}" in str(s) for s in r.specifier)]  # fmt: skip
        url = next((u for u in cli_indexes if backend_label(u) == label), None)
        if labelled and url:
            found[_source(url, "index", label)] = labelled
    return tuple(_Use(name, url, tuple(packages)) for (name, url), packages in found.items())


@dataclass(frozen=True)
class _Use:
    name: str
    url: str  # with {flavor} where the index's label is the cell's backend
    packages: tuple[NormalizedName, ...]


def _source(url: str, index_name: str, label: str) -> tuple[str, str]:
    """(source name, URL) of an index for a cell of backend ``label``."""
    url = url.rstrip("/")
    if backend_label(url) != label:
        return _slug(index_name), url
    url = url[: -len(label)] + "{flavor}"
    host = urlsplit(url).hostname or "index"
    name = "pytorch" if host == "download.pytorch.org" else _slug(index_name.removesuffix(label))
    return name + ("-nightly" if "/nightly/" in url and not name.endswith("nightly") else ""), url


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "index"


def _draft(project: PyProject, cells: list[_Cell], variants: list[Member], others: list[Member], pythons: list[str],
           exclude_newer: str, why: list[str]) -> Draft:  # fmt: skip
    kinds = sorted({m.kind for m in variants})
    doc = tomlkit.document()
    doc.add(tomlkit.comment("Written by lockgen init from pyproject.toml."))
    doc.add(tomlkit.comment("Each choice it made is explained in the output of the run; edit freely."))
    doc["exclude-newer"] = exclude_newer
    files: dict[str, str] = {}
    if project.overrides:
        doc["overrides"] = "overrides.txt.j2"
        files["templates/overrides.txt.j2"] = _list_template("[tool.uv] override-dependencies", project.overrides)
        why.append("templates/overrides.txt.j2: [tool.uv] override-dependencies (uv --override)")
    if project.constraints:
        doc["constraints"] = "constraints.txt.j2"
        files["templates/constraints.txt.j2"] = _list_template("[tool.uv] constraint-dependencies", project.constraints)
        why.append("templates/constraints.txt.j2: [tool.uv] constraint-dependencies (uv --constraint)")
    default = next((ix for ix in project.indexes if ix.default), None)
    if default is not None and default.url.rstrip("/") != "https://pypi.org/simple":
        doc["index-url"] = default.url
        why.append(f"index-url {default.url}: [[tool.uv.index]] {default.name} is the default")
    if project.prerelease:
        doc["prerelease"] = project.prerelease
    top: dict[str, object] = {}
    for kind in ("extra", "group"):
        if kind in kinds:
            top[kind] = ""
        if any(m.kind == kind for m in others):
            top[f"{kind}s"] = []
    doc["vars"] = inline(top)
    sources: dict[str, tuple[str, list[str]]] = {}
    for c in cells:
        for use in c.use:
            entry = sources.setdefault(use.name, (use.url, []))
            entry[1].extend(n for n in use.packages if n not in entry[1])
    if sources:
        doc["sources"] = {name: {"index": url, "packages": packages} for name, (url, packages) in sources.items()}
        for name, (url, packages) in sources.items():
            uv = [ix.name for ix in project.indexes if _matches_url(ix.url, url)]
            why.append(f"sources.{name}: {url} for {', '.join(packages)}: "
                       + (f"[[tool.uv.index]] {', '.join(uv)} (where [tool.uv.sources] sends them)" if uv
                          else "the --index URLs (the builds the extras pin by label)"))  # fmt: skip
    for ix in project.indexes:
        if ix.explicit and not any(_matches_url(ix.url, url) for url, _ in sources.values()):
            why.append(f"[[tool.uv.index]] {ix.name}: explicit, and no cell's packages go there: no source")
        elif not ix.explicit and not ix.default and ix.url.rstrip("/") != "https://pypi.org/simple":
            why.append(f"[[tool.uv.index]] {ix.name} {ix.url}: uv may take any package from it; lockgen sources "
                       "name their packages: add a [sources] entry for the ones it serves")  # fmt: skip
    axes = axes_of(c.cell for c in cells)
    doc["matrix"] = matrix_table(axes, pythons, [c.cell for c in cells])
    detect = detect_table(list(dict.fromkeys(c.cell for c in cells)), why)
    if detect is not None:
        doc["detect"] = detect
    rules = tomlkit.aot()
    groups: dict[tuple[Member | None, tuple[str, ...]], list[Cell]] = {}
    for c in cells:
        groups.setdefault((c.member, tuple(u.name for u in c.use)), []).append(c.cell)
    for (member, names), found in groups.items():
        if member is None and not names:
            continue
        for match in matches(found, list(axes)):
            rule = tomlkit.table()
            rule["match"] = inline(match)
            if names:
                rule["use"] = list(names)
            if member is not None:
                rule["vars"] = inline({member.kind: member.name})
            rule.comment(str(member) if member else "[project].dependencies")
            rules.append(rule)
    if rules:
        doc["rules"] = rules
    if others:
        by_kind = {k: [m.name for m in others if m.kind == k] for k in ("extra", "group")}
        for kind, listed in by_kind.items():
            if listed:
                why.append(f"{'extras' if kind == 'extra' else 'groups'} {', '.join(listed)}: not backend variants; "
                           f"available to templates, and a rule adds one to its cells with vars = {{ {kind}s = "
                           f"[\"{listed[0]}\"] }}")  # fmt: skip
    why.append(f"exclude-newer {exclude_newer} (resolve as of that time; lockgen bump "
               "or a new date moves it)")  # fmt: skip
    files = {
        "lockgen.toml": tomlkit.dumps(doc),
        **files,
        "templates/requirements.in.j2": _template(project, kinds, others),
    }
    keyed: dict[str, list[Cell]] = {}
    for c in cells:
        keyed.setdefault(str(c.member) if c.member else "[project].dependencies", []).append(c.cell)
    return Draft(files=files, explanation=tuple(why), cells={k: tuple(v) for k, v in keyed.items()})


def _matches_url(url: str, template: str) -> bool:
    url = url.rstrip("/")
    if "{flavor}" not in template:
        return url == template.rstrip("/")
    head = template.partition("{flavor}")[0]
    return url.startswith(head) and "/" not in url[len(head) :]


def _list_template(what: str, lines: Sequence[str]) -> str:
    return f"{{# {what} of pyproject.toml (lockgen init) #}}\n" + "".join(f"{line}\n" for line in lines)


def _template(project: PyProject, kinds: list[str], others: list[Member]) -> str:
    table = {"extra": "optional_dependencies", "group": "dependency_groups"}
    text = "{# lockgen init: the project's dependencies, the backend variant a cell's rule names, and the "
    text += "others it lists #}\n"
    if project.dependencies is not None:
        text += '{{ project.dependencies | join("\\n") }}\n'
    for kind in kinds:
        text += f'{{% if {kind} %}}\n{{{{ project.{table[kind]}[{kind}] | join("\\n") }}}}\n{{% endif %}}\n'
    for kind in ("extra", "group"):
        if any(m.kind == kind for m in others):
            text += (
                f'{{% for name in {kind}s %}}\n{{{{ project.{table[kind]}[name] | join("\\n") }}}}\n{{% endfor %}}\n'
            )
    return text
