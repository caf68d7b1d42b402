"""Pure parsers of what uv prints on standard error (text in, data out).

Tested on recorded outputs of the pinned uv (``tests/data/uv/``). uv's wording is not a stable
interface: every parser here degrades to "not recognised" (an empty result), never to an error,
and the caller then shows uv's text as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidName, NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

__all__ = [
    "Yank",
    "cause",
    "depends_on",
    "explain",
    "mentioned",
    "missed_offline",
    "needs_wheels",
    "not_found",
    "only_available",
    "reason",
    "unreachable_hosts",
    "unusable",
    "warnings",
    "yanked",
]  # fmt: skip

_YANKED = re.compile(r"^warning: `([^`=\s]+)==([^`\s]+)` is yanked(?: \(reason: \"(.*)\"\))?", re.M)
_URL = re.compile(r"(?:https?|file)://[^\s`'\")]+")
_NETWORK = (
    "tcp connect error", "dns error", "Connection refused", "error sending request", "timed out",
    "failed to lookup address", "Network is unreachable", "connection reset", "Connection reset",
    "status server error", "429 Too Many Requests",  # the server's trouble (5xx, rate limit), not the package's
)  # fmt: skip


#: uv's retry timing (``Request failed after 3 retries in 7.2s``) differs per run and per cell.
_TIMING = re.compile(r" in \d+(?:\.\d+)?m?s\b")


def explain(stderr: str) -> str:
    """uv's error text without blank lines, the ``Resolved N packages`` chatter and retry timings
    (so the same failure in many cells reads the same, and the summary prints it once)."""
    lines = [_TIMING.sub("", line.rstrip()) for line in stderr.strip().splitlines() if line.strip()]
    return "\n".join(line for line in lines if not re.match(r"^(Resolved|Prepared|Audited) \d+ package", line))


def warnings(stderr: str) -> list[str]:
    """uv's ``warning: …`` lines (without the prefix), in order."""
    return [line.removeprefix("warning: ").strip() for line in stderr.splitlines() if line.startswith("warning: ")]


@dataclass(frozen=True)
class Yank:
    """A locked version uv reported as yanked (PEP 592), with the index's reason."""

    name: NormalizedName
    version: str
    reason: str


def yanked(stderr: str) -> list[Yank]:
    """``warning: `pkg==1.1` is yanked (reason: "…")`` lines: versions uv kept although yanked
    (it keeps a yanked version an existing lock prefers)."""
    return [Yank(canonicalize_name(m[1]), m[2], m[3] or "") for m in _YANKED.finditer(stderr)]


def reason(stderr: str) -> str:
    """The gist of uv's error on one line: its first line, and the last cause when there are
    more (``error: Failed to read … : Connection refused (os error 111)``)."""
    lines = [line.strip(" ╰─▶×│") for line in explain(stderr).splitlines()]
    lines = [
        line.removeprefix("error: ").removeprefix("cause: ")
        for line in lines
        if line and not line.startswith(("hint", "warning:", "help:"))
    ]
    if not lines:
        return "uv failed without a message"
    return lines[0] if len(lines) == 1 else f"{lines[0]}: {lines[-1]}"


def cause(stderr: str) -> str:
    """uv's whole explanation on one line: every line of its error and cause chain, without
    hints and warnings (``No solution found when resolving dependencies: Because only torch<=2.13.0
    is available and stubborn==1.0 depends on torch<2, …``); callers cut it at a sentence end
    (:func:`lockgen.runtime.words.cut`). A reason made of the first line and the last cause
    (:func:`reason`) lost the middle, where uv names the package that fought."""
    kept: list[str] = []
    for line in (line.strip(" ╰─▶×│") for line in explain(stderr).splitlines()):
        if not line or line.startswith(("hint", "warning:", "help:")):
            continue
        if line.startswith("cause: ") and kept and not kept[-1].endswith((".", ":", ";")):
            kept[-1] += ":"  # uv writes "error: X" then "cause: Y" on a pipe: X: Y
        kept.append(line.removeprefix("error: ").removeprefix("cause: "))
    return " ".join(kept) or "uv failed without a message"


def unreachable_hosts(stderr: str) -> list[str]:
    """``scheme://host[:port]`` of the URLs uv could not reach (DNS failure, refused or reset
    connection, timeout) or whose server failed (HTTP 5xx, 429): a failure the next run may not
    meet; empty when the failure was not a network one."""
    if not any(marker in stderr for marker in _NETWORK):
        return []
    hosts = []
    for url in _URL.findall(stderr):
        parts = urlsplit(url)
        host = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        if host not in hosts:
            hosts.append(host)
    return hosts


#: uv ``--offline`` found something it needed missing from its cache (a page, a wheel's
#: metadata): the failure says nothing of what an online run would resolve (uv 0.13's wording).
_OFFLINE_MISS = re.compile(
    r"because the network was disabled|needs to be downloaded from a registry|not found in the cache"
    r"|[Nn]etwork connectivity is disabled"
)


def missed_offline(stderr: str) -> bool:
    """Whether an ``--offline`` uv run lacked something in its cache (then its failure is no
    answer: issue 24, the wheel-only check of a hinted build)."""
    return _OFFLINE_MISS.search(stderr) is not None


_WHEELS_REQUIRED = re.compile(r"Wheels are required for `([^`]+)` because building from source is disabled")
_NO_USABLE = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9._-]*)==\S+ has no usable wheels")
#: A source tree (VCS checkout, local project) whose metadata is not static must be built.
_BUILD_DISABLED = re.compile(r"Building source distributions for `([^`]+)` is disabled")


_NO_USABLE_VERSION = re.compile(
    r"\b([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) has no (?:usable wheels|wheels with a matching Python)"
)


def unusable(stderr: str) -> dict[NormalizedName, Version]:
    """``{name: version}`` of each ``name==version has no usable wheels`` (or ``… no wheels with a
    matching Python ABI tag``) uv says: the version it could not use for want of a wheel."""
    found: dict[NormalizedName, Version] = {}
    for name, text in _NO_USABLE_VERSION.findall(stderr):
        try:
            found.setdefault(canonicalize_name(name), Version(text.rstrip(".,")))
        except InvalidVersion:
            continue
    return found


def needs_wheels(stderr: str) -> list[NormalizedName]:
    """Packages uv could not lock because no allowed version has a wheel for the target and
    lockgen forbids building them (``--only-binary :all:``)."""
    names = _WHEELS_REQUIRED.findall(stderr) + _NO_USABLE.findall(stderr) + _BUILD_DISABLED.findall(stderr)
    return sorted({canonicalize_name(n) for n in names})


#: uv's hint for a package that needs building: lockgen's ``--only-binary :all:`` reads to uv as
#: ``--no-build``, an option the user never gave.
_BUILD_DISABLED_HINT = re.compile(
    r"^hint: Wheels are required for `[^`]+` because building from source is disabled.*\n?", re.M
)


def without_build_hints(text: str) -> str:
    """``text`` (uv's explanation) without uv's ``hint: Wheels are required for `X` because building
    from source is disabled … (i.e., with `--no-build`)`` lines. lockgen passed ``--only-binary
    :all:``, not the ``--no-build`` the hint names, and says itself what to do: add the package to
    ``allow-build``, or change the pin that fought (CASES C26, C08; a fresh-eyes review)."""
    return _BUILD_DISABLED_HINT.sub("", text).rstrip("\n")


_NOT_FOUND = re.compile(
    r"\b([A-Za-z0-9][A-Za-z0-9._-]*) was not found in the (?:package registry|provided package locations)"
    r"|there are no versions of ([A-Za-z0-9][A-Za-z0-9._-]*)(?: and|,|\.|$)",
    re.M,
)


def not_found(stderr: str) -> list[NormalizedName]:
    """Packages uv found no usable file of (``Because beta was not found in the package
    registry``, ``there are no versions of beta``): a misspelt name, or a page that lists
    nothing usable (an empty or garbled index page)."""
    return sorted({canonicalize_name(a or b) for a, b in _NOT_FOUND.findall(stderr)})


_NOT_IN_REGISTRY = re.compile(r"\b([A-Za-z0-9][A-Za-z0-9._-]*) was not found in the package registry")


def not_in_registry(stderr: str) -> list[NormalizedName]:
    """Packages the index has no project page for at all (``Because orjsn was not found in the
    package registry``): a misspelt name. Narrower than :func:`not_found`, which also covers a
    find-links page without the package and an index page whose every version is filtered out
    (by ``exclude-newer``, say): those are a package this cell cannot have, not a typo."""
    return sorted({canonicalize_name(n) for n in _NOT_IN_REGISTRY.findall(stderr)})


#: A requirement as uv writes it in an explanation (``torchvision==0.99.0``, ``numpy>2.2.1``),
#: parsed with :class:`packaging.requirements.Requirement`.
_NO_SUCH_VERSION = re.compile(r"there (?:is|are) no versions? of (\S+?)(?= and |, |\.?$)", re.M)
_TOO_NEW = re.compile(r"\b(\S+) (?:was|were) published after the exclude newer time")


def _requirements(pattern: re.Pattern[str], stderr: str) -> list[Requirement]:
    found = []
    for text in pattern.findall(explain(stderr)):
        try:
            found.append(Requirement(text))
        except InvalidRequirement:
            continue
    return found


def no_such_version(stderr: str) -> dict[NormalizedName, str]:
    """``{name: version}`` of exact requirements the index has no such version for (``Because
    there is no version of torchvision==0.99.0 and you require …``)."""
    found = {}
    for req in _requirements(_NO_SUCH_VERSION, stderr):
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
            found[canonicalize_name(req.name)] = specs[0].version
    return found


def no_version_of(stderr: str) -> set[NormalizedName]:
    """Names uv found no version of for what was asked, whatever the specifier (``Because there
    is no version of urllib3>2.3.0 and you require urllib3>2.3.0``)."""
    return {canonicalize_name(req.name) for req in _requirements(_NO_SUCH_VERSION, stderr)}


#: uv's hint when every version was filtered out by the cutoff (``hint: `fresh` was filtered by
#: `exclude-newer` to only include packages uploaded before …``).
_FILTERED = re.compile(r"`([A-Za-z0-9][A-Za-z0-9._-]*)` was filtered by `exclude-newer`")


def too_new(stderr: str) -> list[NormalizedName]:
    """Packages uv could not use because the versions asked for were published after the
    ``exclude-newer`` cutoff (``Because numpy>2.2.1 was published after the exclude newer time``;
    ``hint: `fresh` was filtered by `exclude-newer` …``)."""
    names = {canonicalize_name(r.name) for r in _requirements(_TOO_NEW, stderr)}
    return sorted(names | {canonicalize_name(n) for n in _FILTERED.findall(stderr)})


#: ``Because torch==2.13.0 depends on numpy<2.5`` / ``all versions of torch depend on numpy<2.5``.
_DEPENDS = re.compile(r"(?:Because|and) (all versions of )?(\S+?) depends? on (\S+?)(?= and |, |\.?$)", re.M)
_ONLY = re.compile(r"\bonly (\S+?) (?:is|are) available and you require (\S+?)(?=,| and |\.?$)", re.M)


def depends_on(stderr: str, name: str) -> list[tuple[str, Requirement]]:
    """``(dependent, requirement)`` for each ``X depends on NAME…`` in uv's explanation:
    ``("torch==2.13.0", numpy<2.5)``, ``("torch", numpy<2.5)`` for "all versions of torch"."""
    key = canonicalize_name(name)
    found = []
    for _, dependent, text in _DEPENDS.findall(" ".join(explain(stderr).split())):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == key:
            found.append((dependent, req))
    return found


def only_available(stderr: str, name: str) -> bool:
    """Whether uv says no version of ``name`` beyond the required ones exists (``Because only
    numpy<=3.0 is available and you require numpy>3.0``)."""
    key = canonicalize_name(name)
    for available, _ in _ONLY.findall(" ".join(explain(stderr).split())):
        try:
            if canonicalize_name(Requirement(available).name) == key:
                return True
        except InvalidRequirement:
            continue
    return False


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def mentioned(stderr: str) -> set[NormalizedName]:
    """Canonical names of every word in uv's explanation that could be a package name (used to
    find the requirement that fought a pin, CASES C08)."""
    names = set()
    for word in _WORD.findall(explain(stderr)):
        try:
            names.add(canonicalize_name(word.strip(".-_"), validate=True))
        except InvalidName:
            continue
    return names
