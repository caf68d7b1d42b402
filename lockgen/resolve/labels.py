"""The local version labels publishers put on builds, read by a grammar (data), never guessed.

A build of an extension or of torch says what it was built for in its local version label
(PEP 440: the part after ``+``, in the version or only in the wheel's file name). Publishers
spell it in many ways; :data:`GRAMMAR` lists the tokens lockgen reads, in the order it tries
them, each with its meaning. A label is read left to right, token after token (``.``, ``_`` and
``-`` between tokens are separators: PEP 440 normalizes them to ``.``); :func:`read` gives a
:class:`Label` when every part is a token, an :class:`Unreadable` when a label that mentions a
build (``torch``, ``pt``, ``cu``, ``rocm``, ``cpu``, ``xpu``) has a part no token reads (a
warning for the user, never a reading), and None for a label that says nothing of a build
(``+custom.20``: a publisher's own numbering).

=============  ===============================  ===================================================
token          examples                         meaning
=============  ===============================  ===================================================
cuda           ``cu130`` ``cu13`` ``cu124``     CUDA 13.0, 13 (major only), 12.4; digits carry the
               ``cu13.0`` ``cuda12.1``          minor last (``cu118`` is 11.8); dotted as written
rocm           ``rocm6.4`` ``rocm7.2.0``        ROCm 6.4, 7.2.0; ``rocm`` alone (``rocm_git…``) and
               ``rocm_git…`` ``rocmsdk2025…``   ``rocmsdk<date>``: ROCm, version not stated
cpu, xpu       ``cpu`` ``xpu``                  the CPU build; Intel's XPU build
torch          ``torch2.9`` ``torch2.10.0``     torch 2.9 (any 2.9.x), 2.10.0; digits are major,
               ``torch2130`` ``torch210``       minor, patch (``2130``: 2.13.0); a two-digit minor
               ``pt29`` ``pt113``               10-19 makes three digits ambiguous (``210``: 2.1.0
                                                or 2.10, both readings kept); ``pt`` is PyG's
                                                ``pt{major}{minor}``
andhigher      ``torch2.9.0andhigher``          the torch version is a floor: 2.9.0 or newer
python         ``py311`` ``cp311``              built for Python 3.11
cxx11abi       ``cxx11abiFALSE`` ``cxx11abi1``  the C++ ABI flag torch was built with
arch           ``sm89`` ``sm120``               the GPU architecture it was compiled for
build ids      ``post6`` ``git3f903c3``         the publisher's build number, commit, date,
               ``d20221201`` ``ll<hex>`` ``lw``  llama-cpp-python's and repo.radeon.com's build
               ``9eb57cd``                      suffixes, a bare commit: no build meaning
=============  ===============================  ===================================================

The table of real labels the tests read (``tests/data/labels.toml``) names the release page each
came from. Pure: text in, values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

__all__ = ["GRAMMAR", "Backend", "Label", "Token", "Torch", "Unreadable", "read"]


@dataclass(frozen=True)
class Token:
    """One word of the grammar: its ``name``, the regex that reads it at a position (named
    groups ``v`` and, for torch, ``floor``) and what it means (for the docs)."""

    name: str
    pattern: str
    meaning: str


#: The tokens, tried in this order at each position (the first that matches wins). A token must
#: end where a separator, the end or another token starts: a build id only at a separator.
GRAMMAR: tuple[Token, ...] = (
    Token("cuda", r"cu(?:da)?(?P<v>\d+(?:\.\d+)?)", "CUDA version (digits: minor last; or dotted)"),
    Token("rocm", r"rocm(?:sdk(?P<date>\d{8})|(?P<v>\d+(?:\.\d+)*))?", "ROCm version (none: not stated)"),
    Token("cpu", r"cpu", "the CPU build"),
    Token("xpu", r"xpu", "Intel's XPU build"),
    Token("torch", r"(?:torch|pt)(?P<v>\d+(?:\.\d+)*)(?P<floor>andhigher)?", "the torch version built against"),
    Token("python", r"(?:py|cp)(?P<v>3\d{1,2})(?=$|[._-]|[a-z])", "the Python minor built for"),
    Token("cxx11abi", r"cxx11abi(?P<v>true|false|1|0)", "torch's C++ ABI flag"),
    Token("arch", r"sm(?P<v>\d{2,3})", "GPU architecture"),
    Token("post", r"post(?P<v>\d+)", "the publisher's build number"),
    Token("git", r"git(?P<v>[0-9a-f]{7,40})(?=$|[._-])", "a source commit"),
    Token("date", r"d(?P<v>20\d{6})(?=$|[._-])", "a build date"),
    Token("llama", r"ll(?P<v>[0-9a-f]{7,40})(?=$|[._-])", "llama-cpp-python's build suffix"),
    Token("lw", r"lw(?=$|[._-])", "repo.radeon.com's build suffix"),
    Token("commit", r"(?P<v>(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40})(?=$|[._-])", "a bare commit"),
)
_COMPILED = tuple((token, re.compile(token.pattern)) for token in GRAMMAR)
_SEPARATORS = "._-"
#: A label that mentions one of these words states a build: when it cannot be read, say so.
_MENTIONS = re.compile(r"torch|pt\d|cu(?:da)?\d|rocm|cpu|xpu")
#: Torch minors written with two digits (2.10 onwards): digits ``210`` may mean 2.1.0 or 2.10.
TWO_DIGIT_MINORS = range(10, 20)


@dataclass(frozen=True)
class Torch:
    """The torch a build names: one or two ``readings`` (a version at the precision written;
    two when its digits are ambiguous), and ``floor``: the reading is a lower bound."""

    readings: tuple[tuple[int, ...], ...]
    floor: bool = False

    def matches(self, version: Version) -> bool:
        """Whether the locked ``version`` is one this build was made for (at the precision the
        label gives: ``torch2.9`` is any 2.9.x; with ``floor``, that version or newer)."""
        for reading in self.readings:
            have = (version.release + (0,) * len(reading))[: len(reading)]
            if have == reading or (self.floor and version.release >= reading):
                return True
        return False

    def __str__(self) -> str:
        shown = " or ".join(".".join(map(str, r)) for r in self.readings)
        return f"{shown} or newer" if self.floor else shown


@dataclass(frozen=True)
class Backend:
    """The backend a build names: ``kind`` (``cuda``, ``rocm``, ``cpu``, ``xpu``), its version at
    the precision written (``()``: not stated) and the ``flavor`` as a cell would spell it
    (``cu130``, ``rocm6.4``; ``rocm`` when no version is given)."""

    kind: str
    version: tuple[int, ...] = ()
    flavor: str = ""

    def __str__(self) -> str:
        return " ".join([self.kind, ".".join(map(str, self.version))]).strip()


@dataclass(frozen=True)
class Label:
    """What a readable local label says (see the module docstring); every part may be absent."""

    text: str
    torch: Torch | None = None
    backend: Backend | None = None
    python: str | None = None  # "3.11"
    cxx11abi: bool | None = None
    archs: tuple[str, ...] = ()  # "sm89"
    build: tuple[str, ...] = field(default=())  # publisher build ids, as written

    @property
    def states_a_build(self) -> bool:
        """Whether the label names a torch or a backend."""
        return self.torch is not None or self.backend is not None


@dataclass(frozen=True)
class Unreadable:
    """A label that names a build but has a part the grammar does not read (from ``at``)."""

    text: str
    at: int

    def warning(self, what: str) -> str:
        """The user's warning: ``what`` (``flash-attn 2.8.3``) and the part not read."""
        return (
            f"{what}: lockgen cannot read the local label +{self.text} (from {self.text[self.at :]!r}; "
            "the label grammar is in docs/layers-labels-builds.md): its torch and backend are not checked"
        )


def read(text: str) -> Label | Unreadable | None:
    """Read a local label (with or without its ``+``; any case). None when it names no build."""
    text = text.removeprefix("+").lower()
    if not text:
        return None
    values: dict[str, object] = {}
    builds: list[str] = []
    archs: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos] in _SEPARATORS:
            pos += 1
            continue
        for token, regex in _COMPILED:
            match = regex.match(text, pos)
            if match is not None and match.end() > pos and _meaning(token.name, match, values, builds, archs):
                pos = match.end()
                break
        else:
            return Unreadable(text, pos) if _MENTIONS.search(text) else None
    if "torch" not in values and "backend" not in values and not _MENTIONS.search(text):
        return None
    torch, backend, python, abi = (values.get(k) for k in ("torch", "backend", "python", "cxx11abi"))
    return Label(
        text=text,
        torch=torch if isinstance(torch, Torch) else None,
        backend=backend if isinstance(backend, Backend) else None,
        python=python if isinstance(python, str) else None,
        cxx11abi=abi if isinstance(abi, bool) else None,
        archs=tuple(archs),
        build=tuple(builds),
    )


def _meaning(name: str, match: re.Match[str], values: dict[str, object], builds: list[str], archs: list[str]) -> bool:
    """Record what token ``name`` says; False when it cannot mean it here (a second backend, a
    torch version that has no reading), so the label is not read."""
    v = match.groupdict().get("v")
    if name in ("cuda", "rocm", "cpu", "xpu"):
        if "backend" in values:
            return False
        version = _backend_digits(v) if v else ()
        if version is None:
            return False
        flavor = f"{'cu' if name == 'cuda' else name}{v or ''}"
        values["backend"] = Backend(name, version, flavor)
        if match.groupdict().get("date"):
            builds.append(f"sdk{match['date']}")
    elif name == "torch":
        readings = _torch_readings(v or "")
        if "torch" in values or not readings:
            return False
        values["torch"] = Torch(readings, floor=bool(match.groupdict().get("floor")))
    elif name == "python":
        values["python"] = f"{v[0]}.{v[1:]}" if v else None
    elif name == "cxx11abi":
        values["cxx11abi"] = v in ("true", "1")
    elif name == "arch":
        archs.append(match.group(0))
    else:
        builds.append(match.group(0))
    return True


def _backend_digits(text: str) -> tuple[int, ...] | None:
    """A backend version: dotted as written (``6.4``), else digits with the minor last (``130``
    is 13.0, ``118`` 11.8); one or two digits are a major only (``cu13``, ``cu12``)."""
    if "." in text:
        try:
            return Version(text).release
        except InvalidVersion:
            return None
    return (int(text),) if len(text) <= 2 else (int(text[:-1]), int(text[-1]))


def _torch_readings(text: str) -> tuple[tuple[int, ...], ...]:
    """The torch versions digits may mean: dotted as written (``2.10.0``); else a one-digit major,
    then the minor (one digit, or two in :data:`TWO_DIGIT_MINORS`) and an optional one-digit
    patch: ``26`` 2.6, ``270`` 2.7.0, ``2130`` 2.13.0, ``210`` 2.1.0 or 2.10, ``113`` 1.1.3 or
    1.13. Empty when no reading fits."""
    if "." in text:
        try:
            return (Version(text).release,)
        except InvalidVersion:
            return ()
    if len(text) < 2:
        return ()
    major, rest = int(text[0]), text[1:]
    readings: list[tuple[int, ...]] = []
    if len(rest) == 1:
        readings.append((major, int(rest)))
    elif len(rest) == 2:
        readings.append((major, int(rest[0]), int(rest[1])))
        if int(rest) in TWO_DIGIT_MINORS:
            readings.append((major, int(rest)))
    elif len(rest) == 3 and int(rest[:2]) in TWO_DIGIT_MINORS:
        readings.append((major, int(rest[:2]), int(rest[2])))
    return tuple(readings)
