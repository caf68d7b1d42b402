"""Step 5 of a cell's resolution: check it before it becomes a lock.

The input is uv's resolution of the cell as PEP 751 data (:class:`packaging.pylock.Pylock`, with
canonical URLs and only the artifacts the target may install): per package its version and every
artifact with URL, hashes and upload time. Checks, each a
reason to fail the cell (the field cases of ``docs/cases.md``):

* the pins that cannot move are locked exactly, local version label included (the seed's rule);
* a package named for a backend ``index`` source carries the label that source's label policy
  gives it (``+cu130`` for the torch family, none on macOS ``cpu`` indexes, any for packages the
  index serves unlabelled; C02, C25), a package named for a source came from that source's index
  or page, and a package not named for any source did not come from one of the cell's sources
  (C03). Which index or page served a package is uv's ``# from`` annotation, compared as a
  canonical URL prefix, never by host: two indexes on one host are two sources (issue 16,
  :mod:`lockgen.plan.identity`);
* no artifact URL is left on a mirror (:meth:`lockgen.plan.mirror.Mirrors.leftover`);
* every artifact the lock can install has a sha256 (C04);
* every locked version has a wheel for the cell's target, unless ``allow-build`` names it (C01).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.pylock import Package, Pylock
from packaging.tags import Tag
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from lockgen.locks.pylockfile import artifacts, file_name, wheel_tags
from lockgen.plan import identity
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.plan.sources import CellSource

__all__ = [
    "Finding", "artifact_problems", "describe_place", "location", "pin_problems", "problems", "render",
    "without_upload_time",
]  # fmt: skip


def location(artifact: Any) -> str:
    """Canonical URL (or lock-relative path) of an artifact."""
    return str(artifact.url or artifact.path or "")


def problems(
    plan: Plan, pylock: Pylock, mirrors: Mirrors | None = None, indexes: Mapping[NormalizedName, str] | None = None
) -> list[str]:
    """Every reason the resolution in ``pylock`` (canonical URLs, target-only artifacts) must not
    become ``plan``'s main lock (empty: fine): :func:`pin_problems` and :func:`artifact_problems`."""
    return pin_problems(plan, pylock) + artifact_problems(plan, pylock, mirrors, indexes)


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


def artifact_problems(
    plan: Plan, pylock: Pylock, mirrors: Mirrors | None = None, indexes: Mapping[NormalizedName, str] | None = None
) -> list[str]:
    """Labels and sources (C02, C03), hashes (C04) and wheels for the target (C01) of every
    package of a resolution (main or layer); and no artifact URL left on a mirror. ``indexes``:
    ``{name: canonical index URL}`` uv took each registry package from (its ``# from``
    annotation, :attr:`lockgen.resolve.describe.Resolved.indexes`): sources are judged by it,
    never by host (:mod:`lockgen.plan.identity`). The same cause in several packages is one
    line naming them all (issue 16)."""
    found: list[Finding] = []
    mirrors = mirrors if mirrors is not None else Mirrors()
    indexes = indexes or {}
    supported = plan.target.supported_tags()
    pinned_to_index = {canonicalize_name(r.name) for _, r in plan.inputs.index_pins}
    named = _named_urls(plan)
    for package in sorted(pylock.packages, key=lambda p: p.name):
        name, version = package.name, package.version
        source = plan.inputs.served_by.get(name)
        if package.directory is not None or package.vcs is not None:
            continue  # an editable/local project or a VCS checkout: the unhashed layer
        if source is not None and name not in plan.pinned:
            found += _label_problem(source, name, version)
        came = indexes.get(name)
        direct = package.archive is not None
        if not direct:  # listed by an index or a find-links page: judged by which one
            found += _source_problem(plan, name, version, source, came, name in pinned_to_index)
        for kind, artifact in artifacts(package):
            where = location(artifact)
            if mirrors.leftover(where, None if direct else came) and not (
                direct and any(identity.same(where, u) for u in named)
            ):
                found.append(Finding(name, f"{name} {version}: {kind} {where}", (
                    "was served by a mirror from a path no --mirror maps back to a canonical URL; add a mirror for "
                    "the host the file really lives on (e.g. https://files.pythonhosted.org=<mirror files URL>)"
                )))  # fmt: skip
                continue
            if direct and source is not None and not _direct_from(source, where):
                found.append(Finding(name, f"{name} {version}", (
                    f"source {source.name!r} ({_shown(source)}) serves it for this cell, but the lock takes it from "
                    f"{where}; require it by name (its source serves it), or add that URL to the source"
                )))  # fmt: skip
            if not artifact.hashes.get("sha256"):
                found.append(Finding(
                    name, f"{name} {version}: {kind} {where}", "has no sha256 hash; pip --require-hashes would refuse it"
                ))  # fmt: skip
        if not _has_wheel(package, supported) and name not in plan.inputs.allow_build:
            found.append(Finding(name, f"{name} {version}", (
                f"no wheel for {plan.target.platform} {plan.target.python_tag}; installing it would build from "
                "source (add {names} to allow-build if that is intended)"
            )))  # fmt: skip
    return render(found)


@dataclass(frozen=True)
class Finding:
    """One reason a resolution must not become a lock: the package ``name``, the ``subject``
    (``torch 2.13.0``, or one of its files) and the ``cause``, written for any number of
    packages; a ``{names}`` in it stands for the names of the packages that share it."""

    name: str
    subject: str
    cause: str


def render(findings: Iterable[Finding]) -> list[str]:
    """One line per cause, in first-seen order, naming every subject that has it:
    ``torchvision 0.28.0, torchaudio 2.13.0: source 'pytorch' (…) serves it…`` (issue 16: a
    repeated cause is said once)."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.cause, []).append(finding)
    lines = []
    for cause, members in groups.items():
        names = ", ".join(dict.fromkeys(m.name for m in members))
        lines.append(f"{', '.join(m.subject for m in members)}: {cause.replace('{names}', names)}")
    return lines


def _source_problem(
    plan: Plan, name: str, version: Version | None, source: CellSource | None, came: str | None, pinned: bool
) -> list[Finding]:
    """Whether a registry package came from where the config says (C02, C03, issue 16): one
    named for a source from that source's index or page, any other from no source. ``came``:
    the index or page uv named (None: it named none, which passes only for a package no source
    is named for)."""
    if source is None:
        hit = next((s for s in plan.sources if came and _listed_by(s, came)), None)
        if hit is None:
            return []
        return [Finding(name, f"{name} {version}", (
            f"came from source {hit.name!r} ({_shown(hit)}), which may serve only {', '.join(hit.packages)}; "
            "it must come from the default index"
        ))]  # fmt: skip
    if came is not None and _listed_by(source, came):
        return []
    if source.kind == "index" and not pinned:
        hint = (
            "lockgen takes a package from its index where the requirements name it: add a line for {names} "
            "to the requirements template (it is only a dependency here)"
        )
    else:
        hint = "pin it to a version that source has (another index must not fill in for it)"
    where = describe_place(plan, came) if came is not None else "a place uv did not name"
    return [Finding(name, f"{name} {version}", (
        f"source {source.name!r} ({_shown(source)}) serves it for this cell, but it came from {where}; {hint}"
    ))]  # fmt: skip


def _listed_by(source: CellSource, page: str) -> bool:
    """Whether the index or page uv named (``page``, canonical) is ``source``'s: its index URL
    or a project page under it (a layer reads an index source's pages as find-links), or its
    find-links page or folder."""
    return source.kind != "urls" and any(identity.under(page, url) for url in source.urls)


def describe_place(plan: Plan, url: str) -> str:
    """An index or find-links URL (canonical) as the config names it: ``the default index
    (https://…)``, ``find-links 'vendor' (…)``, ``source 'pytorch' (…)``, else the URL."""
    if plan.inputs.index_url and identity.same(url, plan.inputs.index_url):
        return f"the default index ({plan.inputs.index_url})"
    for key, links in sorted(plan.cell.settings.find_links.items()):
        if any(identity.same(url, link) for link in links):
            return f"find-links {key!r} ({url})"
    for source in plan.sources:
        if _listed_by(source, url):
            return f"source {source.name!r} ({url})"
    return url


def _shown(source: CellSource) -> str:
    """A source's place for a message: its URL (a ``urls`` source: how many it lists)."""
    if source.kind == "urls":
        return f"{len(source.urls)} wheel URL{'s' if len(source.urls) != 1 else ''}"
    return source.urls[0] if source.urls else ""


def _named_urls(plan: Plan) -> list[str]:
    """Canonical URLs the config names a file by: the direct references of the rendered inputs
    and the wheel URLs of ``urls`` sources."""
    from packaging.requirements import InvalidRequirement, Requirement

    urls = [u for s in plan.sources if s.kind == "urls" for u in s.urls]
    for _, text in plan.rendered.files.values():
        for line in text.splitlines():
            try:
                url = Requirement(line.split(" #")[0].strip()).url
            except InvalidRequirement:
                continue
            if url:
                urls.append(url)
    return urls


def _direct_from(source: CellSource, where: str) -> bool:
    """Whether a direct-URL artifact belongs to ``source``: one of a ``urls`` source's URLs, or
    below an index or find-links source's URL prefix (:func:`lockgen.plan.identity.under`)."""
    if source.kind == "urls":
        return any(identity.same(where, url) for url in source.urls)
    return any(identity.under(where, url) for url in source.urls if "://" in url)


def _label_problem(source: CellSource, name: str, version: Version | None) -> list[Finding]:
    """The local label ``source``'s policy wants for ``name``, against the locked ``version``."""
    expected = source.expected_label(name)
    if expected is None or (version is not None and (version.local or "") == expected):
        return []
    if expected:
        return [Finding(name, f"{name} {version}", (
            f"source {source.name!r} serves it for this cell, so its version must carry +{expected}; a bare "
            "version means a build from the default index (a CPU build in a GPU cell)"
        ))]  # fmt: skip
    return [Finding(name, f"{name} {version}", (
        f"source {source.name!r} serves it unlabelled for this cell, but a labelled build was locked; set its "
        f"label in [sources.{source.name}.labels] if the index labels it"
    ))]  # fmt: skip


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
            source = plan.inputs.served_by.get(package.name)
            names.add(source.name if source else "default index")
    return sorted(names)
