"""``lockgen init``, step 3: the config and templates for a set of requirement files. Pure.

* Each file's cells: its platforms x its backends (a GPU backend's macOS cells are ``mps`` on
  Apple silicon, ``cpu`` on Intel). A file whose platforms nothing says gets every platform the
  other files name, or linux x86_64, windows x86_64 and macos aarch64. When two files claim a cell,
  the files become values of a ``variant`` axis (from the words of their names).
* The matrix: each axis's values, minus excludes for the combinations no file has.
* Lines every file has go into ``templates/requirements.in.j2``; a package every file pins exactly
  at different versions becomes ``NAME=={{ pins["NAME"] }}`` with per-file ``pins``; every other
  line goes into a template per set of files that has it, which the files' rules list in ``parts``.
* Index lines with a backend label become one source per host (``{flavor}`` for the label),
  serving the torch packages the files name; ``--pre`` sets ``prerelease``.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import PurePosixPath
from urllib.parse import urlsplit

import tomlkit
import tomlkit.items
from packaging.utils import NormalizedName

from lockgen.runtime.words import counted
from lockgen.scaffold.builds import CPU_INDEX, PypiTorch
from lockgen.scaffold.inference import (
    DEFAULT_PLATFORMS,
    PLATFORMS,
    TORCH_FAMILY,
    Facts,
    backend_label,
    default_torch,
    is_gpu,
)
from lockgen.scaffold.layout import Cell, as_list, axes_of, detect_table, inline, matches, matrix_table
from lockgen.scaffold.reading import Line, ReqFile

__all__ = ["Draft", "compose"]

_SIMPLE_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;*]+)$")


@dataclass(frozen=True, kw_only=True)
class Draft:
    """What ``lockgen init`` writes: ``files`` (project-relative path -> text) and the
    ``explanation`` (one line per choice, in order)."""

    files: dict[str, str]
    explanation: tuple[str, ...]
    cells: dict[str, tuple[tuple[str, ...], ...]]  # requirement file -> its cells' axis values (no python)
    #: each line of the inputs not carried into the config or templates: "file:line: text: why"
    not_carried: tuple[str, ...] = ()


def compose(
    files: Sequence[tuple[ReqFile, Facts]],
    pythons: Sequence[str],
    exclude_newer: str,
    config_name: str = "lockgen.toml",
    project_dependencies: bool = False,
    inputs: Sequence[str] = (),
    top: dict[str, object] | None = None,
    torch_builds: PypiTorch | None = None,
    pulls: dict[str, str] | None = None,
) -> Draft:
    """The config (``config_name``, a standalone ``lockgen.toml``) and templates for ``files``.
    ``project_dependencies``: the shared template also renders ``project.dependencies``;
    ``inputs``: what init read, for the config's first comment (default: the files); ``top``:
    more top-level settings (``overrides`` and its template's text, from ``[tool.uv]``);
    ``torch_builds``: what the default index serves as torch (:mod:`.builds`), which labels the
    linux cells of a file that names torch and no backend (default: init's table); ``pulls``:
    packages that require torch, with that requirement (:func:`~lockgen.scaffold.builds.survey`)."""
    why: list[str] = []
    known = [p for _, facts in files if facts.claims for p in facts.platforms or ()]  # a device's are its own
    everywhere = tuple(p for p in PLATFORMS if p in {*DEFAULT_PLATFORMS, *known})
    cells: dict[str, list[Cell]] = {}
    for file, facts in files:
        why += [f"{file.path}: {r}" for r in facts.reasons]
        backends = facts.backends or ("cpu",)
        platforms = facts.platforms
        if platforms is None:  # what other files of its backends do not claim; no macOS for a GPU build
            claimed = {p for f, other in files if other.platforms and other.claims
                       and set(other.backends or ("cpu",)) & set(backends) for p in other.platforms}  # fmt: skip
            gpu = all(is_gpu(b) for b in backends)
            platforms = tuple(p for p in everywhere if p not in claimed and not (gpu and p[0] == "macos"))
            platforms = platforms or everywhere
            why.append(
                f"{file.path}: platforms {', '.join(' '.join(p) for p in platforms)}: nothing in it names one"
                + (" (no macOS: no GPU build there)" if gpu else "")
                + (
                    f"; if that is wrong, say it: lockgen init '{file.path}:os=linux,arch=aarch64'"
                    if len(files) > 1 and ":" not in file.path and " + " not in file.path
                    else ""
                )
            )
        torch_in = None if facts.backends else default_torch(file, pythons, pulls)
        spec = torch_in[0] if torch_in else None
        if not facts.backends:
            why.append(f"{file.path}: backend cpu (mps on Apple silicon): nothing in it names a GPU build"
                       + (" (linux: what the default index's torch is, below)" if spec is not None else ""))  # fmt: skip
        found: list[Cell] = []
        for (os_, arch), backend in product(platforms, backends):
            if os_ == "macos" and (is_gpu(backend) or backend == "cpu"):
                backend = "mps" if arch == "aarch64" else "cpu"
            if spec is not None and os_ == "linux":
                build = (torch_builds or PypiTorch()).build(spec, os_, arch, pythons[0])
                if build.label != backend:
                    backend = build.label
                    via = f" through {torch_in[1]}, which requires it" if torch_in and torch_in[1] else ""
                    why.append(f"{file.path}: backend {backend} on linux {arch}: it takes torch from the default index{via} "
                               f"(no index line), and {build.why}; for CPU builds there, add --index-url "
                               f"{CPU_INDEX} to the file (or lockgen init --index {CPU_INDEX})")  # fmt: skip
            if (os_, arch, backend) not in found:
                found.append((os_, arch, backend))
        cells[file.path] = found
    variant = _variants(files, cells, why)
    if variant:
        cells = {path: [(*c, variant[path]) for c in found] for path, found in cells.items()}
    axes = axes_of(
        (c for f in cells.values() for c in f), {"variant": list(dict.fromkeys(variant.values()))} if variant else None
    )
    covered = {c for f in cells.values() for c in f}
    missing = [c for c in product(*axes.values()) if c not in covered]

    templates, parts, pins, common = _templates(files, why, project_dependencies)
    doc = tomlkit.document()
    doc.add(tomlkit.comment("Written by lockgen init from " + ", ".join(inputs or [f.path for f, _ in files]) + "."))
    doc.add(tomlkit.comment("Each choice it made is explained in the output of the run; edit freely."))
    doc["exclude-newer"] = exclude_newer
    constraints = _constraints(files, why)
    if constraints.top:
        doc["constraints"] = constraints.top
    extra = dict(top or {})
    overrides = extra.pop("overrides_text", None)
    for key, value in extra.items():
        doc[key] = value
    doc["vars"] = inline({"parts": []})
    if pins:
        doc["pins"] = inline({name: default for name, (default, _) in sorted(pins.items())})
    links, plain, not_carried = _links_and_indexes(files, why)
    if plain is not None:
        doc["index-url"] = plain
    if links.top:
        doc["find-links"] = inline(links.top)
    sources = _sources(files, why)
    if sources:
        doc["sources"] = {name: {"index": url, "packages": packages} for name, (url, packages, _) in sources.items()}
    doc["matrix"] = matrix_table(axes, list(pythons), covered)
    detect = detect_table(covered_in_order(cells), why)
    if detect is not None:
        doc["detect"] = detect
    rules = tomlkit.aot()
    for file, facts in files:
        own = cells[file.path]
        # macOS cells take no backend index: PyPI has the builds (the cpu index's macOS wheels are PyPI's)
        split = [c for c in own if c[0] != "macos"], [c for c in own if c[0] == "macos"]
        for match in [m for part in split if part for m in matches(part, list(axes))]:
            rule = tomlkit.table()
            rule["match"] = inline(match)
            rule_backends = match.get("backend", [])
            use = [
                name
                for name, (_url, _packages, users) in sources.items()
                if match.get("os") != "macos" and any((file.path, b) in users for b in as_list(rule_backends))
            ]
            if use:
                rule["use"] = use
            flavors = {facts.flavors[b] for b in as_list(rule_backends) if b in facts.flavors}
            if len(flavors) == 1:
                rule["flavor"] = flavors.pop()
            if file.path in constraints.per_file:
                rule["constraints"] = constraints.per_file[file.path]
            if links.per_file.get(file.path):
                rule["find-links"] = inline(links.per_file[file.path])
            if file.prerelease:
                rule["prerelease"] = "allow"
            if facts.mixed:
                rule["allow-mix"] = inline(
                    {n: f"lockgen init: {file.path} names its {lb} build; review" for n, lb in facts.mixed}
                )
            vars_: dict[str, object] = {"parts": parts[file.path]} if parts[file.path] else {}
            file_pins = {
                name: versions[file.path]
                for name, (default, versions) in pins.items()
                if versions[file.path] != default
            }
            if vars_:
                rule["vars"] = inline(vars_)
            if file_pins:
                rule["pins"] = inline(dict(sorted(file_pins.items())))
            rule.comment(file.path)
            if len(rule) > 1:
                rules.append(rule)
    if rules:
        doc["rules"] = rules
    why.append(f"exclude-newer {exclude_newer} (resolve as of that time; lockgen bump or a new date moves it)")
    if missing:
        why.append(f"matrix: {len(missing)} combinations of the axes no file has are excluded")
    files_out = {config_name: tomlkit.dumps(doc), **templates, **constraints.templates}
    if isinstance(overrides, str) and isinstance(extra.get("overrides"), str):
        files_out[f"templates/{extra['overrides']}"] = overrides
    files_out["templates/requirements.in.j2"] = common
    return Draft(files=files_out, explanation=tuple(why), cells={p: tuple(c) for p, c in cells.items()},
                 not_carried=tuple(not_carried))  # fmt: skip


def covered_in_order(cells: dict[str, list[Cell]]) -> list[Cell]:
    """Every file's cells, each once, in the files' order."""
    return list(dict.fromkeys(c for found in cells.values() for c in found))


def _variants(files: Sequence[tuple[ReqFile, Facts]], cells: dict[str, list[Cell]], why: list[str]) -> dict[str, str]:
    """``{file: variant value}`` when two files claim a cell, else ``{}``."""
    owner: dict[Cell, str] = {}
    clash = None
    for path, found in cells.items():
        for cell in found:
            if cell in owner:
                clash = (owner[cell], path, cell)
            owner.setdefault(cell, path)
    if clash is None:
        return {}
    values = {f.path: re.sub(r"[^a-z0-9._]+", "_", "_".join(facts.words)).strip("_") or "default" for f, facts in files}
    seen = Counter((values[p], c) for p, found in cells.items() for c in found)
    if any(n > 1 for n in seen.values()):  # the words do not tell them apart: the file names do
        values = {
            f.path: re.sub(r"[^a-z0-9._]+", "_", f.stem or PurePosixPath(f.path).with_suffix("").as_posix().lower())
            for f, _ in files
        }
    why.append(
        f"variant axis: {clash[0]} and {clash[1]} are both for {' '.join(clash[2])}, so each file is a value of "
        f"a variant axis ({', '.join(f'{p} -> {v}' for p, v in values.items())})"
    )
    return values


def _templates(
    files: Sequence[tuple[ReqFile, Facts]], why: list[str], project_dependencies: bool
) -> tuple[dict[str, str], dict[str, list[str]], dict[str, tuple[str, dict[str, str]]], str]:
    """(templates, each file's ``parts``, pins ``{name: (default, {file: version})}``, the
    shared template's text)."""
    paths = [f.path for f, _ in files]
    keyed: dict[str, dict[str, Line]] = {f.path: {} for f, _ in files}
    for f, _ in files:
        for line in f.lines:
            keyed[f.path].setdefault(line.key, line)
    # packages every file pins exactly, at different versions: one line, per-file pins
    pins: dict[str, tuple[str, dict[str, str]]] = {}
    pinned_keys: set[str] = set()
    simple: dict[str, dict[str, tuple[str, str, str]]] = {}
    for path in paths:
        for key, line in keyed[path].items():
            match = _SIMPLE_PIN.match(key)
            if match and line.name is not None:
                simple.setdefault(line.name, {})[path] = (match[1], match[2], key)
    for name, per in simple.items():
        versions = {p: v for p, (_, v, _) in per.items()}
        if len(per) == len(paths) > 1 and len(set(versions.values())) > 1:
            default = Counter(versions[p] for p in paths).most_common(1)[0][0]
            pins[name] = (default, versions)
            pinned_keys |= {k for _, _, k in per.values()}
            why.append(
                f"{name}: pinned at different versions ({', '.join(sorted(set(versions.values())))}): one line "
                f'{name}=={{{{ pins["{name}"] }}}} with pins {default}, and rules for the other versions'
            )
    order: list[str] = []
    holders: dict[str, set[str]] = {}
    for path in paths:
        for key in keyed[path]:
            if key in pinned_keys:
                continue
            holders.setdefault(key, set()).add(path)
            if key not in order:
                order.append(key)
    everyone = set(paths)
    blocks: dict[frozenset[str], list[str]] = {}
    for key in order:
        blocks.setdefault(frozenset(holders[key]), []).append(key)
    names: dict[frozenset[str], str] = {}
    stems = {f.path: f.stem for f, _ in files if f.stem}
    for holders_ in blocks:
        if holders_ == everyone:
            continue
        names[holders_] = _block_name(sorted(holders_, key=paths.index), everyone, set(names.values()), stems)
    templates = {}
    for holders_, keys in blocks.items():
        if holders_ != everyone:
            who = ", ".join(sorted(holders_, key=paths.index))
            templates[f"templates/{names[holders_]}"] = (
                f"{{# lines of {who} (lockgen init) #}}\n" + "\n".join(keys) + "\n"
            )
    parts = {p: [names[h] for h in blocks if h != everyone and p in h] for p in paths}
    common = [k for h, keys in blocks.items() if h == everyone for k in keys]
    common += [f'{per[paths[0]][0]}=={{{{ pins["{name}"] }}}}' for name, per in simple.items() if name in pins]
    text = "{# lines every requirement file has (lockgen init); each cell's own lines are in the `parts` its rule names #}\n"
    if project_dependencies:
        text += '{{ project.dependencies | join("\\n") }}\n'
    text += "".join(line + "\n" for line in common)
    text += "{% for part in parts %}\n{% include part %}\n{% endfor %}\n"
    why.append(
        f"templates/requirements.in.j2: the {counted(len(common), 'line')} every file has"
        + (" and [project].dependencies" if project_dependencies else "")
    )
    for holders_, name in names.items():
        why.append(
            f"templates/{name}: the {counted(len(blocks[holders_]), 'line')} only {', '.join(sorted(holders_, key=paths.index))} "
            f"{'has' if len(holders_) == 1 else 'have'}"
        )
    return templates, parts, pins, text


def _block_name(holders: list[str], everyone: set[str], taken: set[str], stems: dict[str, str]) -> str:
    """A template name for the lines ``holders`` share: the file's name (or its stem) for one
    file, the folder's for all files of a folder, else ``shared-N``."""
    if len(holders) == 1:
        name = (
            stems.get(holders[0]) or PurePosixPath(holders[0]).with_suffix("").as_posix().replace("/", "-")
        ) + ".txt.j2"
    else:
        folders = {PurePosixPath(h).parent.as_posix() for h in holders}
        folder = folders.pop() if len(folders) == 1 else ""
        same = folder not in ("", ".") and set(holders) == {
            p for p in everyone if PurePosixPath(p).parent.as_posix() == folder
        }
        name = f"{folder.replace('/', '-')}.txt.j2" if same else "shared-1.txt.j2"
    n = 1
    while name in taken or name == "requirements.in.j2":
        n += 1
        name = re.sub(r"(-\d+)?\.txt\.j2$", f"-{n}.txt.j2", name)
    return name


def _sources(
    files: Sequence[tuple[ReqFile, Facts]], why: list[str]
) -> dict[str, tuple[str, list[str], set[tuple[str, str]]]]:
    """``{name: (index URL with {flavor}, packages, {(file, backend) using it})}``: one source
    per host and path, its label replaced by ``{flavor}`` (a backend's flavor is its label)."""
    found: dict[str, tuple[str, list[str], set[tuple[str, str]]]] = {}
    for file, facts in files:
        torch: list[NormalizedName] = list(
            dict.fromkeys(ln.name for ln in (*file.lines, *file.rendered) if ln.name and TORCH_FAMILY.match(ln.name))
        )
        for label, url in facts.indexes.items():
            base = url.rstrip("/")
            flavor = facts.flavors.get(label, label)
            template = base[: -len(flavor)] + "{flavor}" if backend_label(url) == flavor else base
            host = urlsplit(url).hostname or "index"
            name = "pytorch" if host == "download.pytorch.org" else re.sub(r"[^a-z0-9]+", "-", host.split(".")[0])
            if "/nightly/" in template:
                name += "-nightly"
            if not torch:
                why.append(
                    f"{file.path}: the index {url} serves none of the packages it names, so no source for it; "
                    "add torch (or what the index is for) to a template and a [sources] entry"
                )
                continue
            entry = found.setdefault(name, (template, [], set()))
            if entry[0] != template:
                name = f"{name}-{len(found)}"
                entry = found.setdefault(name, (template, [], set()))
            entry[1].extend(p for p in torch if p not in entry[1])
            entry[2].add((file.path, label))
    for name, (url, packages, users) in found.items():
        why.append(
            f"sources.{name}: {url} serves {', '.join(packages)} to the cells of "
            + ", ".join(sorted({f"{p} ({b})" for p, b in users}))
        )
    return found


@dataclass(frozen=True)
class _Links:
    top: dict[str, object]  # the top-level find-links, when every file has the same
    per_file: dict[str, dict[str, object]]  # otherwise: file -> its rules' find-links


_PYPI = ("https://pypi.org/simple", "https://pypi.python.org/simple")


def _links_and_indexes(files: Sequence[tuple[ReqFile, Facts]], why: list[str]) -> tuple[_Links, str | None, list[str]]:
    """The files' ``-f``/``--find-links`` lines as ``find-links`` settings (a page URL, or a
    folder inside the project, made project-relative; top-level when every file has the same,
    else on each file's rules), the ``index-url`` of their unlabelled ``--index-url`` lines when
    every file names the same one, and the index lines not carried, each ``file:line`` with the
    reason (an unlabelled ``--extra-index-url``: uv may take any package from it, a lockgen
    source names its packages)."""
    not_carried: list[str] = []
    per_file: dict[str, dict[str, object]] = {}
    mains: dict[str, str | None] = {}
    for file, facts in files:
        found: dict[str, list[str]] = {}
        mains[file.path] = None
        used = set(facts.indexes.values())
        for ix in file.indexes:
            if ix.kind == "find-links":
                target = ix.url
                if "://" not in target:
                    base = PurePosixPath(ix.origin.rpartition(":")[0]).parent
                    target = posixpath.normpath((base / target).as_posix())
                    if target.startswith("..") or PurePosixPath(target).is_absolute():
                        not_carried.append(f"{ix.origin}: --find-links {ix.url}: not carried, because the folder is "
                                           "outside the project (keep the wheels in a project folder)")  # fmt: skip
                        continue
                label = _link_label(target)
                if target not in found.setdefault(label, []):
                    found[label].append(target)
                why.append(f"{ix.origin}: --find-links {ix.url}: find-links {label} = {target!r}")
            elif ix.url in used or backend_label(ix.url):
                continue
            elif ix.url.rstrip("/") in _PYPI:
                why.append(f"{ix.origin}: {ix.url}: PyPI, lockgen's default index")
            elif ix.kind == "index":
                mains[file.path] = ix.url
            else:
                not_carried.append(f"{ix.origin}: --extra-index-url {ix.url}: not carried, because uv may take any "
                                   "package from an extra index and a lockgen source names the packages it serves: add "
                                   f"[sources.NAME] index = \"{ix.url}\", packages = [...]")  # fmt: skip
        per_file[file.path] = {k: v[0] if len(v) == 1 else v for k, v in found.items()}
    plain = set(mains.values())
    main = None
    if len(plain) == 1 and (url := plain.pop()) is not None:
        main = url
        why.append(f"index-url {url}: the --index-url line of every file")
    else:
        for file, _ in files:
            for ix in file.indexes:
                if ix.kind == "index" and ix.url == mains[file.path]:
                    not_carried.append(f"{ix.origin}: --index-url {ix.url}: not carried, because the files name "
                                       "different indexes; set index-url (or a rule's) by hand")  # fmt: skip
    values = [str(v) for v in per_file.values()]
    if per_file and len(set(values)) == 1 and next(iter(per_file.values())):
        return _Links(next(iter(per_file.values())), {}), main, not_carried
    return _Links({}, per_file), main, not_carried


def _link_label(target: str) -> str:
    """A ``find-links`` key for a page or folder: its last path word (``wheels``), else its host."""
    parts = urlsplit(target) if "://" in target else None
    path = parts.path if parts else target
    last = PurePosixPath(path.rstrip("/")).name or (parts.hostname if parts else "") or "links"
    last = re.sub(r"\.html?$", "", last)
    return re.sub(r"[^a-z0-9]+", "-", last.lower()).strip("-") or "links"


@dataclass(frozen=True)
class _Constraints:
    top: str | None  # the top-level constraints template, when every file has the same
    per_file: dict[str, str]  # otherwise: file -> its constraints template
    templates: dict[str, str]  # template path -> text


def _constraints(files: Sequence[tuple[ReqFile, Facts]], why: list[str]) -> _Constraints:
    """The constraints templates of the files' ``-c`` lines: one per constraints file (its
    lines), one including several for a file that reads several; the top-level ``constraints``
    when every file reads the same, else a rule setting per file."""
    sets = {f.path: f.constraint_files for f, _ in files if f.constraint_files}
    if not sets:
        return _Constraints(None, {}, {})
    lines: dict[str, list[str]] = {}
    for f, _ in files:
        for line in f.constraints:
            origin = line.origin.rpartition(":")[0]
            lines.setdefault(origin, [])
            if line.key not in lines[origin]:
                lines[origin].append(line.key)
    names: dict[str, str] = {}
    templates: dict[str, str] = {}
    for origin in dict.fromkeys(c for cs in sets.values() for c in cs):
        name = PurePosixPath(origin).with_suffix("").as_posix().replace("/", "-") + ".txt.j2"
        if name in ("requirements.in.j2", *templates):
            name = name.replace(".txt.j2", "-constraints.txt.j2")
        names[origin] = name
        templates[f"templates/{name}"] = f"{{# {origin} (-c), lockgen init #}}\n" + "".join(
            f"{line}\n" for line in lines.get(origin, [])
        )
    chosen: dict[str, str] = {}
    for path, origins in sets.items():
        if len(origins) == 1:
            chosen[path] = names[origins[0]]
            continue
        name = f"constraints-{len(templates) + 1}.txt.j2"
        templates[f"templates/{name}"] = "".join(f'{{% include "{names[o]}" %}}\n' for o in origins)
        chosen[path] = name
    for path, origins in sets.items():
        why.append(f"{path}: -c {', '.join(origins)}: its lines are the constraints template "
                   f"templates/{chosen[path]} (uv --constraint)")  # fmt: skip
    if len(sets) == len(files) and len(set(chosen.values())) == 1:
        return _Constraints(next(iter(chosen.values())), {}, templates)
    return _Constraints(None, chosen, templates)
