"""What the fake worlds of the real-project examples share (issue 9): hosts on loopback reached
through ``--mirror``, and PyPI filled from requirement lines.

:func:`pypi_versions` reads requirement strings (template lines, a pyproject's dependency
lists) and picks, per package, one version every specifier written for it accepts, so the fake
PyPI serves each requirement as a tiny pure wheel with upload times (as PyPI does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tests.support.fakehost import FakeHost

PYPI_TIME = "2026-01-01T00:00:00Z"


@dataclass
class Hosts:
    """Fake hosts by canonical URL prefix (``https://download.pytorch.org`` -> its fake)."""

    hosts: dict[str, FakeHost] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)  # canonical prefix -> a URL under a host

    def add(self, canonical: str, host: FakeHost, path: str = "") -> FakeHost:
        self.hosts[canonical] = host
        if path:
            self.extra[canonical] = f"{host.url}{path}"
        return host

    @property
    def mirrors(self) -> list[str]:
        return [f"{canonical}={self.extra.get(canonical, host.url)}" for canonical, host in self.hosts.items()]

    def mirror_args(self) -> list[str]:
        return [arg for m in self.mirrors for arg in ("--mirror", m)]


def requirement_lines(text: str) -> list[str]:
    """The plain requirement lines of a template (Jinja comments, Jinja lines, options, URLs and
    comments dropped)."""
    text = re.sub(r"\{#.*?#\}", "", text, flags=re.S)
    lines = []
    for raw in text.splitlines():
        line = raw.split(" #")[0].strip()
        if line and not line.startswith(("#", "-", "{", "http")) and "{" not in line:
            lines.append(line)
    return lines


def template_lines(folder: Path) -> list[str]:
    return [line for path in sorted(folder.glob("*.j2")) for line in requirement_lines(path.read_text())]


def _candidates(spec: SpecifierSet) -> list[Version]:
    found = [Version("0.1"), Version("1.0")]
    for item in spec:
        text = item.version.removesuffix(".*")
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        found.append(version)
        found.append(Version(".".join(map(str, (*version.release[:-1], version.release[-1] + 1)))))  # for ">X"
        if item.version.endswith(".*"):
            found.append(Version(f"{text}.0"))
    return found


def pypi_versions(requirements: Iterable[str], skip: Iterable[str] = ()) -> dict[str, str]:
    """Per canonical name, the highest candidate version that every specifier written for the
    package accepts (candidates: the versions the specifiers name, ``X.*`` as ``X.0``, 1.0, 0.1)."""
    skipped = {canonicalize_name(n) for n in skip}
    specs: dict[str, list[SpecifierSet]] = {}
    for line in requirements:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if name not in skipped and not req.url:
            specs.setdefault(name, []).append(req.specifier)
    chosen = {}
    for name, sets in specs.items():
        candidates = sorted({v for s in sets for v in _candidates(s)}, reverse=True)
        good = [v for v in candidates if all(s.contains(v, prereleases=True) for s in sets)]
        assert good, f"no version of {name} satisfies {sets}"
        chosen[name] = str(good[0])
    return chosen


def publish_pypi(pypi: FakeHost, versions: Mapping[str, str], requires: Mapping[str, Sequence[str]] = (),
                 more: Sequence[Path] = ()) -> list[Path]:  # fmt: skip
    """One pure wheel per ``versions`` entry (with ``requires``), plus ``more`` files, published
    as PyPI's simple pages with upload times. Returns every file."""
    requires = dict(requires)
    files = [
        pypi.wheel("files", name, version, requires=requires.get(name, ()))
        for name, version in sorted(versions.items())
    ]
    files += list(more)
    pypi.index_page("simple", files, upload_time=PYPI_TIME)
    return files
