"""Stage 7: check a resolution before it becomes a lock.

The input is uv's own description of the resolution as a PEP 751 ``pylock.toml`` (written by
:mod:`lockgen.resolve` right after the requirements-format lock, offline, with the same pins):
per package its version and every artifact with URL, hashes and upload time. Checks, each a
reason to fail the cell (CASES in ``../shared/cases``):

* the pins that cannot move are locked exactly, local version label included (the seed's rule);
* a package named for a backend ``index`` source carries that backend's label (C02), and a package
  not named for any source did not come from one of the cell's sources (C03);
* every artifact the lock can install has a sha256 (C04);
* every locked version has a wheel for the cell's target, unless ``allow-build`` names it (C01).
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan


def artifacts(package: dict) -> Iterator[tuple[str, dict]]:
    """``(kind, artifact)`` for the sdist and each wheel of a pylock package."""
    if package.get("sdist"):
        yield "sdist", package["sdist"]
    for wheel in package.get("wheels", []):
        yield "wheel", wheel
    if package.get("archive"):
        yield "archive", package["archive"]


def location(artifact: dict, mirrors: Mirrors) -> str:
    """Canonical URL (or project path) of an artifact."""
    return mirrors.canonical(artifact.get("url") or artifact.get("path") or "")


def filename(artifact: dict, mirrors: Mirrors) -> str:
    from lockgen.resolve.fetch import wheel_name

    return artifact.get("name") or wheel_name(location(artifact, mirrors))


def _source_prefix(url: str) -> str:
    """What artifacts served under a source's URL start with (``…/whl/cu130/``)."""
    return url.rstrip("/") + "/"


def problems(plan: Plan, pylock: dict, mirrors: Mirrors = Mirrors()) -> list[str]:
    """Every reason the resolution in ``pylock`` must not become ``plan``'s lock (empty: fine)."""
    found: list[str] = []
    packages = {canonicalize_name(p["name"]): p for p in pylock.get("packages", [])}
    flavor = plan.cell.settings.flavor or plan.cell.backend
    supported = plan.target.supported_tags()

    for name, expected in sorted(plan.pinned.items()):
        package = packages.get(name)
        if package is None:
            found.append(f"{name}: pinned to {expected}, but the resolution has no {name}")
        elif Version(package["version"]) != Version(expected) or Version(package["version"]).local != Version(expected).local:
            found.append(f"{name}: pinned to {expected}, but {package['version']} was locked")

    other_prefixes = {
        _source_prefix(url): source.name for source in plan.sources for url in source.urls if "://" in url
    }
    for name, package in sorted(packages.items()):
        version = Version(package["version"])
        source = plan.served_by(name)
        if source is not None and source.kind == "index" and name not in plan.pinned and version.local != flavor:
            found.append(
                f"{name} {version}: source {source.name!r} serves it for this cell, so its version must carry "
                f"+{flavor}; a bare version means a build from the default index (a CPU build in a GPU cell)"
            )
        for kind, artifact in artifacts(package):
            where = location(artifact, mirrors)
            if source is not None and not _from(source, where):
                found.append(
                    f"{name} {version}: source {source.name!r} serves it for this cell, but it came from {where}; "
                    "pin it to a version that source has (another index must not fill in for it)"
                )
            if source is None:
                hit = next((label for prefix, label in other_prefixes.items() if where.startswith(prefix)), None)
                if hit:
                    found.append(
                        f"{name} {version}: came from source {hit!r} ({where}), which may serve only "
                        f"{_packages(plan, hit)}; it must come from the default index"
                    )
            if not (artifact.get("hashes") or {}).get("sha256"):
                found.append(f"{name} {version}: {kind} {where} has no sha256 hash; pip --require-hashes would refuse it")
        if not _has_wheel(package, supported, mirrors) and name not in plan.allow_build:
            found.append(
                f"{name} {version}: no wheel for {plan.target.platform} {plan.target.python_tag}; "
                f"installing it would build from source (add it to allow-build if that is intended)"
            )
    return found


def _from(source, where: str) -> bool:
    """Whether an artifact location belongs to ``source``: the same scheme and host as one of
    its URLs (release assets live beside a find-links page, not under it), or its local folder."""
    for url in source.urls:
        if "://" not in url:  # a project folder: uv reports its files as file:// URLs
            if "://" not in where or where.startswith("file://"):
                return True
            continue
        parts, there = urlsplit(url), urlsplit(where)
        if (parts.scheme, parts.netloc) == (there.scheme, there.netloc):
            return True
    return False


def _packages(plan: Plan, source_name: str) -> str:
    return ", ".join(next(s.packages for s in plan.sources if s.name == source_name))


def _has_wheel(package: dict, supported: frozenset, mirrors: Mirrors) -> bool:
    """A wheel (listed, or a direct-URL archive that is one) whose tags the target supports."""
    candidates = list(package.get("wheels", []))
    if package.get("archive") and filename(package["archive"], mirrors).endswith(".whl"):
        candidates.append(package["archive"])
    for wheel in candidates:
        try:
            tags = parse_wheel_filename(filename(wheel, mirrors))[3]
        except InvalidWheelFilename:
            continue
        if tags & supported:
            return True
    return False


def without_upload_time(plan: Plan, pylock: dict, mirrors: Mirrors = Mirrors()) -> list[str]:
    """Names of the sources that served a locked artifact without an upload time (a package
    named for a source came from it; any other from the ``default index``): ``exclude-newer``
    could not apply to them (CASES C07)."""
    names = set()
    for package in pylock.get("packages", []):
        if any("upload-time" not in artifact for _, artifact in artifacts(package)):
            source = plan.served_by(canonicalize_name(package["name"]))
            names.add(source.name if source else "default index")
    return sorted(names)
