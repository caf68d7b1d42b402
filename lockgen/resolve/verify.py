"""Step 5 of a cell's resolution: check it before it becomes a lock.

The input is uv's resolution of the cell as PEP 751 data (:class:`packaging.pylock.Pylock`, with
canonical URLs and only the artifacts the target may install): per package its version and every
artifact with URL, hashes and upload time. Checks, each a
reason to fail the cell (the field cases of ``docs/cases.md``):

* the pins that cannot move are locked exactly, local version label included (the seed's rule);
* a package named for a backend ``index`` source carries the label that source's label policy
  gives it (``+cu130`` for the torch family, none on macOS ``cpu`` indexes, any for packages the
  index serves unlabelled; C02, C25), a package named for a source came from that source's host
  (whatever login the URL carried: hosts compare by scheme, host and port), and a package not
  named for any source did not come from one of the cell's sources (C03);
* every artifact the lock can install has a sha256 (C04);
* every locked version has a wheel for the cell's target, unless ``allow-build`` names it (C01).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from packaging.pylock import Package, Pylock
from packaging.tags import Tag
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.locks.pylockfile import artifacts, file_name, wheel_tags
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan, index_pins
from lockgen.plan.sources import CellSource

__all__ = ["artifact_problems", "location", "pin_problems", "problems", "without_upload_time"]


def location(artifact: Any) -> str:
    """Canonical URL (or lock-relative path) of an artifact."""
    return str(artifact.url or artifact.path or "")


def problems(plan: Plan, pylock: Pylock, mirrors: Mirrors | None = None) -> list[str]:
    """Every reason the resolution in ``pylock`` (canonical URLs, target-only artifacts) must not
    become ``plan``'s main lock (empty: fine): :func:`pin_problems` and :func:`artifact_problems`."""
    return pin_problems(plan, pylock) + artifact_problems(plan, pylock, mirrors)


def pin_problems(plan: Plan, pylock: Pylock) -> list[str]:
    """The pins that cannot move must be locked exactly, local version label included; a pin
    written as a specifier (``==2.8.0.*``, issue 9) must be locked at a version it contains (PEP
    440 matching: a public specifier ignores the local label, so ``2.8.0+cu128`` is in
    ``==2.8.0.*``; pre-releases count when the specifier names one)."""
    from packaging.specifiers import SpecifierSet

    found: list[str] = []
    packages: dict[str, Package] = {p.name: p for p in pylock.packages}
    for name, expected in sorted(plan.pinned.items()):
        package = packages.get(name)
        if package is None:
            found.append(f"{name}: pinned to {expected}, but the resolution has no {name}")
        elif package.version is None or str(package.version) != str(Version(expected)):
            found.append(f"{name}: pinned to {expected}, but {package.version} was locked")
    for name, specifier in sorted(plan.pinned_specifiers.items()):
        package = packages.get(name)
        if package is None:
            found.append(f"{name}: pinned to {specifier}, but the resolution has no {name}")
        elif package.version is None or not SpecifierSet(specifier).contains(package.version, prereleases=True):
            found.append(f"{name}: pinned to {specifier}, but {package.version} was locked")
    return found


def artifact_problems(plan: Plan, pylock: Pylock, mirrors: Mirrors | None = None) -> list[str]:
    """Labels and sources (C02, C03), hashes (C04) and wheels for the target (C01) of every
    package of a resolution (main or layer); and no artifact URL left on a mirror's host (a
    committed lock never names a mirror)."""
    found: list[str] = []
    mirror_hosts = mirrors.hosts() if mirrors is not None else set()
    supported = plan.target.supported_tags()
    pinned_to_index = {canonicalize_name(r.name) for _, r in index_pins(plan)}
    other_prefixes = {
        _source_prefix(url): source.name for source in plan.sources for url in source.urls if "://" in url
    }
    for package in sorted(pylock.packages, key=lambda p: p.name):
        name, version = package.name, package.version
        source = plan.served_by(name)
        if package.directory is not None or package.vcs is not None:
            continue  # an editable/local project or a VCS checkout: the unhashed layer
        if source is not None and name not in plan.pinned:
            found += _label_problem(source, name, version)
        for kind, artifact in artifacts(package):
            where = location(artifact)
            if any(where.startswith(host + "/") for host in mirror_hosts):
                found.append(
                    f"{name} {version}: {kind} {where} was served by a mirror from a path no --mirror maps back "
                    "to a canonical URL; add a mirror for the host the file really lives on "
                    "(e.g. https://files.pythonhosted.org=<mirror files URL>)"
                )
                continue
            if source is not None and not _from(source, where):
                hint = "pin it to a version that source has (another index must not fill in for it)"
                if source.kind == "index" and name not in pinned_to_index:
                    hint = (
                        f"lockgen takes a package from its index where the requirements name it: add a line for {name} "
                        "to the requirements template (it is only a dependency here)"
                    )
                found.append(
                    f"{name} {version}: source {source.name!r} serves it for this cell, but it came from {where}; {hint}"
                )
            if source is None:
                hit = next((label for prefix, label in other_prefixes.items() if where.startswith(prefix)), None)
                if hit:
                    found.append(
                        f"{name} {version}: came from source {hit!r} ({where}), which may serve only "
                        f"{_packages(plan, hit)}; it must come from the default index"
                    )
            if not artifact.hashes.get("sha256"):
                found.append(
                    f"{name} {version}: {kind} {where} has no sha256 hash; pip --require-hashes would refuse it"
                )
        if not _has_wheel(package, supported) and name not in plan.allow_build:
            found.append(
                f"{name} {version}: no wheel for {plan.target.platform} {plan.target.python_tag}; "
                f"installing it would build from source (add it to allow-build if that is intended)"
            )
    return found


def _label_problem(source: CellSource, name: str, version: Version | None) -> list[str]:
    """The local label ``source``'s policy wants for ``name``, against the locked ``version``."""
    expected = source.expected_label(name)
    if expected is None or (version is not None and (version.local or "") == expected):
        return []
    if expected:
        return [
            f"{name} {version}: source {source.name!r} serves it for this cell, so its version must carry "
            f"+{expected}; a bare version means a build from the default index (a CPU build in a GPU cell)"
        ]
    return [
        f"{name} {version}: source {source.name!r} serves it unlabelled for this cell, but a labelled build was "
        f"locked; set its label in [sources.{source.name}.labels] if the index labels it"
    ]


def _source_prefix(url: str) -> str:
    """What artifacts served under a source's URL start with (``…/whl/cu130/``)."""
    return url.rstrip("/") + "/"


def _from(source: CellSource, where: str) -> bool:
    """Whether an artifact location belongs to ``source``: the same scheme, host and port as one
    of its URLs, a login in either ignored (release assets live beside a find-links page, not
    under it), or its local folder (a path relative to the lock, never a URL)."""
    for url in source.urls:
        if "://" not in url:  # a project folder: its files are lock-relative paths
            if "://" not in where:
                return True
            continue
        parts, there = urlsplit(url), urlsplit(where)
        if (parts.scheme, parts.hostname, parts.port) == (there.scheme, there.hostname, there.port):
            return True
    return False


def _packages(plan: Plan, source_name: str) -> str:
    return ", ".join(next(s.packages for s in plan.sources if s.name == source_name))


def _has_wheel(package: Package, supported: frozenset[Tag]) -> bool:
    """A wheel (listed, or a direct-URL archive that is one) whose tags the target supports."""
    candidates: list[Any] = list(package.wheels or ())
    if package.archive is not None and file_name(package.archive).endswith(".whl"):
        candidates.append(package.archive)
    return any(wheel_tags(wheel) & supported for wheel in candidates)


def without_upload_time(plan: Plan, pylock: Pylock) -> list[str]:
    """Names of the sources that served a locked artifact without an upload time (a package
    named for a source came from it; any other from the ``default index``): ``exclude-newer``
    could not apply to them (CASES C07)."""
    names = set()
    for package in pylock.packages:
        if any(artifact.upload_time is None for _, artifact in artifacts(package)):
            source = plan.served_by(package.name)
            names.add(source.name if source else "default index")
    return sorted(names)
