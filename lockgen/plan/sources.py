"""Named sources for a cell: which URLs uv reads, and which packages each may serve.

The default index serves everything not named for another source. A backend ``index`` source is
never given to uv as an index every package may come from: such an index also serves stale copies
of numpy, pillow, setuptools (the seed's rule; CASES C02/C03). Instead each package it is named
for that the cell's requirements name is pinned to it as a uv *explicit* index (``[tool.uv.sources]``
of a small generated project, :func:`index_project`): uv then takes that package from that index
only, even when the default index has the same version with other files (C25), and reads nothing
else from it. A ``find-links`` source is one flat page, or a project folder when it holds a
matching wheel. A ``urls`` source lists direct wheel URLs; a cell uses the ones whose wheel tags
fit its target (CASES C09), for its main requirements and its layers.

Source URLs, ``local-if`` and labels may use ``{backend}``, ``{flavor}``, ``{python_tag}``,
``{os}``, ``{arch}``, ``{python}`` and the cell's variables (``{wheel_set}``).

Labels (C25): on an index, a package named in ``labels`` carries that local label (``"{flavor}"``
-> ``+cu128``), none (``""``), or whatever the index serves (``"*"``). Unlisted packages:
:data:`DEFAULT_LABELLED` carry ``+{flavor}``, the others are taken as served (download.pytorch.org's
xformers and triton builds carry no label). On macOS a ``cpu`` label means none: the macOS wheels
of ``/whl/cpu`` carry no ``+cpu``.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lockgen.config import Config, Source
from lockgen.plan import reqline
from lockgen.plan.content import Digests
from lockgen.plan.matrix import Cell
from lockgen.plan.target import Target
from lockgen.runtime.errors import ConfigError, Problem

__all__ = [
    "ANY_LABEL", "DEFAULT_LABELLED", "INDEX_PROJECT", "INDEX_PROJECT_NAME", "CellSource", "applies", "cell_sources",
    "folder_listing", "index_name", "index_pages", "index_project", "local_folder_listing", "marker_environment",
    "placeholders", "requirement_lines",
]  # fmt: skip

#: Packages an index source labels with ``+{flavor}`` unless its ``labels`` table says otherwise.
DEFAULT_LABELLED = ("torch", "torchvision", "torchaudio")
#: A label value that means "as the index serves it" (not checked, not pinned).
ANY_LABEL = "*"
#: The generated project that pins packages to their index, under the cell's work folder.
INDEX_PROJECT = "index-pins/pyproject.toml"
#: Its project name, as uv's ``# via`` annotations show it.
INDEX_PROJECT_NAME = "lockgen-index-pins"


@dataclass(frozen=True, kw_only=True)
class CellSource:
    """A source as one cell sees it: placeholders filled, local folder chosen, labels decided.
    ``labels`` (index sources): package -> label (``"cu128"``), ``""`` (none) or :data:`ANY_LABEL`."""

    name: str
    kind: str  # index | find-links | urls
    packages: tuple[str, ...]
    urls: tuple[str, ...]  # canonical public URLs (or a project-relative folder for a local find-links)
    labels: Mapping[str, str] = field(default_factory=dict)
    exclude_newer: str | None = None  # the source's own cutoff, as written (a timestamp or a duration)

    def find_links(self) -> tuple[str, ...]:
        """What uv gets as ``--find-links`` for this source: a find-links source's page or
        folder; nothing for ``index`` sources (pinned through :func:`index_project`) and ``urls``
        sources (pinned by constraints)."""
        return self.urls if self.kind == "find-links" else ()

    def pages(self, names: Iterable[str]) -> tuple[str, ...]:
        """An index source's per-package pages (``…/whl/cu130/torch/``) of ``names`` it serves:
        what an installer needs as ``--find-links`` for the packages locked from it."""
        if self.kind != "index":
            return ()
        return tuple(f"{self.urls[0].rstrip('/')}/{name}/" for name in self.packages if name in set(names))

    def expected_label(self, package: str) -> str | None:
        """The local label ``package`` must carry from this index (``""``: none), or None when
        any is fine (not an index source, or a package taken as served)."""
        label = self.labels.get(package, ANY_LABEL) if self.kind == "index" else ANY_LABEL
        return None if label == ANY_LABEL else label

    def pin_label(self, package: str) -> str:
        """What a pin of ``package`` to this source gets appended: ``+cu130``, or nothing."""
        label = self.expected_label(package)
        return f"+{label}" if label else ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "packages": list(self.packages),
            "urls": list(self.urls),
        }
        if self.kind == "index":
            data["labels"] = dict(sorted(self.labels.items()))
        if self.exclude_newer:  # only when set: every other input hash stays
            data["exclude_newer"] = self.exclude_newer
        return data


def placeholders(cell: Cell, target: Target) -> dict[str, str]:
    return {
        "backend": cell.backend,
        "flavor": cell.settings.flavor or cell.backend,
        "python_tag": target.python_tag,
        "os": cell.os,
        "arch": cell.arch,
        "python": cell.python,
        **cell.extra,  # extra matrix axes by their names (issue 9)
    }


def _variables(cell: Cell) -> dict[str, str]:
    """The cell's scalar variables (``vars`` of rules and includes) as source URL placeholders."""
    return {
        k: str(v) for k, v in cell.settings.vars.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)
    }


def _fill(text: str, values: dict[str, str], source: str, cell: Cell, config: Config | None = None) -> str:
    try:
        return text.format_map(values)
    except (KeyError, ValueError, IndexError) as exc:
        key = config.key("sources", source) if config else f"sources.{source}"
        problem = Problem(
            key=key, message=f"bad placeholder in {text!r} ({exc})", cells=(cell.name,),
            hint=f"the cell fills {{{', '.join(values)}}}",
        )  # fmt: skip
        raise ConfigError(config.source if config else "config", [problem]) from None


def _labels(source: Source, values: dict[str, str], cell: Cell) -> dict[str, str]:
    """Every package's label on an index source for ``cell`` (see the module docstring)."""
    labels = {}
    for package in source.packages:
        raw = source.labels.get(package, "{flavor}" if package in DEFAULT_LABELLED else ANY_LABEL)
        label = raw if raw == ANY_LABEL else _fill(raw, values, source.name, cell)
        labels[package] = "" if cell.os == "macos" and label == "cpu" else label
    return labels


def cell_sources(config: Config, cell: Cell, target: Target) -> tuple[CellSource, ...]:
    """The cell's sources (``settings.sources``, in order) with placeholders filled.

    A find-links source with ``local`` uses that project folder when it holds a file matching
    ``local-if`` (the seed's Spark rule: ``wheels/spark/`` when it holds a win_arm64 torch wheel),
    else its URL. Raises :class:`ConfigError` for a placeholder the cell cannot fill and for a
    package two of its sources serve.
    """
    values = {**_variables(cell), **placeholders(cell, target)}
    result = []
    for name in cell.settings.sources or ():
        source = config.sources[name]
        urls = tuple(_fill(u, values, name, cell, config) for u in source.urls)
        if source.local:
            folder = config.root / source.local
            pattern = _fill(source.local_if, values, name, cell, config)
            if folder.is_dir() and any(fnmatch.fnmatch(p.name, pattern) for p in folder.iterdir()):
                urls = (source.local,)
        labels = _labels(source, values, cell) if source.kind == "index" else {}
        result.append(
            CellSource(
                name=name,
                kind=source.kind,
                packages=source.packages,
                urls=urls,
                labels=labels,
                exclude_newer=source.exclude_newer,
            )
        )
    seen: dict[str, str] = {}
    for cell_source in result:
        for package in cell_source.packages:
            if package in seen:
                problem = Problem(
                    key=config.setting_key(cell.values, "sources", "use"), cells=(cell.name,),
                    message=f"sources {seen[package]!r} and {cell_source.name!r} both serve {package}",
                    hint="a package may have one source per cell: drop it from one source's packages, or one source from use",
                )  # fmt: skip
                raise ConfigError(config.source, [problem])
            seen[package] = cell_source.name
    return tuple(result)


def index_pages(sources: Sequence[CellSource], names: Iterable[str]) -> tuple[str, ...]:
    """The per-package pages of the index sources for the locked ``names`` (install find-links)."""
    wanted = set(names)
    return tuple(page for source in sources for page in source.pages(wanted))


# -- what the requirements name, for the target


def marker_environment(target: Target) -> dict[str, str]:
    """PEP 508 marker variables of ``target`` (as uv's ``--python-platform`` sets them), to
    tell which requirement lines apply to a cell."""
    arch, _, rest = target.platform.partition("-")
    if rest.endswith("windows-msvc"):
        system = ("win32", "Windows", "nt", "AMD64" if arch == "x86_64" else "ARM64")
    elif rest.endswith("apple-darwin"):
        system = ("darwin", "Darwin", "posix", "x86_64" if arch == "x86_64" else "arm64")
    else:
        system = ("linux", "Linux", "posix", arch)
    full = f"{target.python}.0"
    return {
        "sys_platform": system[0], "platform_system": system[1], "os_name": system[2], "platform_machine": system[3],
        "python_version": target.python, "python_full_version": full, "implementation_name": "cpython",
        "implementation_version": full, "platform_python_implementation": "CPython", "platform_release": "",
        "platform_version": "", "extra": "",
    }  # fmt: skip


def applies(marker: Marker | None, target: Target) -> bool:
    """Whether a requirement with ``marker`` applies to ``target`` (an unknown variable: yes)."""
    if marker is None:
        return True
    try:
        return bool(marker.evaluate(dict(marker_environment(target))))
    except Exception:  # an undefined or odd marker: let uv decide
        return True


def requirement_lines(text: str) -> list[Requirement]:
    """The requirements of a rendered requirements file (``packaging``): options, comments, blank
    lines and lines that are not PEP 508 requirements are skipped; continuations are joined."""
    found = []
    for line in text.replace("\\\n", " ").splitlines():
        req = reqline.requirement(line)  # pip's comment rule, packaging's reading (lockgen.plan.reqline)
        if req is not None:
            found.append(req)
    return found


def index_name(source: CellSource) -> str:
    """The explicit index's name in the generated project (uv: letters, digits, ``-``, ``_``, ``.``)."""
    return "lockgen-" + "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "-" for c in source.name)


def index_project(pins: Sequence[tuple[CellSource, Requirement]], url_of: Callable[[str], str]) -> str:
    """A ``pyproject.toml`` whose dependencies are the pinned packages (name and marker; the
    requirement lines themselves carry the versions), each pinned to its index by
    ``[tool.uv.sources]``, every index ``explicit`` (serving nothing else). ``url_of`` maps a
    canonical index URL to the one uv fetches (a mirror; no login: uv gets it from the
    environment, :meth:`lockgen.plan.mirror.Mirrors.uv_env`)."""
    deps = sorted({f"{canonicalize_name(r.name)}" + (f" ; {r.marker}" if r.marker else "") for _, r in pins})
    pinned = {canonicalize_name(r.name): index_name(s) for s, r in pins}
    indexes = {index_name(s): url_of(s.urls[0]) for s, _ in pins}
    lines = [
        "# generated by lockgen: packages named for an index source, pinned to that index (uv explicit indexes)",
        "[project]", f'name = "{INDEX_PROJECT_NAME}"', 'version = "0"', f"dependencies = {json.dumps(deps)}",
        "", "[tool.uv.sources]",
    ]  # fmt: skip
    lines += [f'{name} = {{ index = "{index}" }}' for name, index in sorted(pinned.items())]
    for name, url in sorted(indexes.items()):
        lines += ["", "[[tool.uv.index]]", f'name = "{name}"', f"url = {json.dumps(url)}", "explicit = true"]
    return "\n".join(lines) + "\n"


def folder_listing(root: Path, folder: str, digests: Digests | None = None) -> list[str]:
    """``name:sha256`` of each file in a project folder: its content, never its size or time, so
    a wheel rebuilt at the same size is a changed input (issue 16; :mod:`lockgen.plan.content`
    hashes only what may have changed)."""
    path = root / folder
    if not path.is_dir():
        return []
    digests = digests if digests is not None else Digests(root)
    files = sorted(p.name for p in path.iterdir() if p.is_file())
    return [f"{name}:{digests.sha256(f'{folder}/{name}')}" for name in files]


def local_folder_listing(
    root: Path, sources: tuple[CellSource, ...], links: Iterable[str] = (), digests: Digests | None = None
) -> dict[str, list[str]]:
    """The files of each local find-links folder a cell uses (part of its input hash): a
    source's ``local`` folder, and a folder of the ``find-links`` setting (``links``: its values;
    URLs are skipped). Adding, removing or rebuilding a wheel there makes the cell stale."""
    folders = [url for s in sources for url in s.urls if "://" not in url]
    folders += [link for link in links if "://" not in link]
    digests = digests if digests is not None else Digests(root)
    return {folder: folder_listing(root, folder, digests) for folder in folders}
