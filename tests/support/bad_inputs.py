"""The bad-input catalogue of tests/e2e/test_bad_inputs.py, part 1: the project every case starts from,
what a case is (:class:`Case`, its setup's :class:`Ctx`), and the inputs a user writes: config,
command line, templates. The faults of the world (sources, network, disk, interruptions) are in
the test module."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.faulthost import Fault, FaultHost

CELLS = ("linux-x86_64-cpu-py3.12", "windows-x86_64-cpu-py3.12")
CONFIG = """\
[tool.lockgen]
index-url = "https://pypi.example/simple"
use = ["vendor"]
optional = ["extra"]
pins = {{ alpha = "1.0" }}

[tool.lockgen.mirrors]
"https://pypi.example" = "{pypi}"
"https://vendor.example" = "{vendor}"

[tool.lockgen.sources.vendor]
find-links = "https://vendor.example/vendor/"
packages = ["extra"]

[tool.lockgen.matrix]
os = ["linux", "windows"]
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.12"]
"""
TEMPLATE = "alpha=={{ pins.alpha }}\nbeta\n"


@dataclass
class Ctx:
    """What a case's setup gets: the project copy, the fake host, a scratch folder, monkeypatch."""

    root: Path
    host: FaultHost
    vendor: FaultHost
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    @property
    def config(self) -> Path:
        return self.root / "pyproject.toml"

    def edit(self, old: str, new: str) -> None:
        text = self.config.read_text()
        assert old in text, old
        self.config.write_text(text.replace(old, new, 1))

    def append(self, text: str) -> None:
        self.config.write_text(self.config.read_text() + text)

    def template(self, text: str, name: str = "requirements.in.j2") -> None:
        (self.root / "templates" / name).write_text(text)

    def cold_cache(self) -> None:
        """A uv cache of the case's own: a fault on a file must reach uv."""
        self.monkeypatch.setenv("UV_CACHE_DIR", str(self.tmp / "uv-cache"))

    def fault(self, path: str, fault: Fault) -> None:
        self.host.faults[path] = fault
        self.cleanup.append(lambda: self.host.faults.pop(path, None))

    def read_only(self, rel: str) -> None:
        """Make ``rel`` (and everything below it) unwritable: ``chattr +i`` as root (a plain mode
        does not stop root), the write bits otherwise."""
        path = self.root / rel
        if os.geteuid() == 0:
            if subprocess.run(["chattr", "-R", "+i", str(path)], capture_output=True).returncode != 0:
                pytest.skip("chattr +i is not supported here")
            self.cleanup.append(lambda: subprocess.run(["chattr", "-R", "-i", str(path)], check=True))
        else:
            for p in [path, *path.rglob("*")]:
                p.chmod(p.stat().st_mode & ~0o222)
            self.cleanup.append(lambda: [p.chmod(p.stat().st_mode | 0o200) for p in [path, *path.rglob("*")]])


@dataclass(frozen=True)
class Case:
    """One bad input: ``setup`` changes the project copy and returns the command line (without
    ``-C``); the run must exit ``code`` naming every string of ``names``. ``failed``: the cells
    the manifest may now record as failed."""

    id: str
    setup: Callable[[Ctx], list[str]]
    code: int
    names: tuple[str, ...]
    failed: tuple[str, ...] = ()
    changes_in_setup: bool = False  # the setup itself changes files under locks/: compare with what it left


def _all(*extra: str) -> Callable[[Ctx], list[str]]:
    return lambda ctx: ["all", *extra]


def config_case(id: str, old: str, new: str, *names: str, args: tuple[str, ...] = ("all",)) -> Case:
    def setup(ctx: Ctx) -> list[str]:
        ctx.edit(old, new) if old else ctx.append(new)
        return list(args)

    return Case(id, setup, 2, ("pyproject.toml", *names))


def template_case(id: str, text: str, *names: str, code: int = 2, extra: dict[str, str] | None = None) -> Case:
    def setup(ctx: Ctx) -> list[str]:
        ctx.template(text)
        for name, body in (extra or {}).items():
            ctx.template(body, name)
        return ["all"]

    return Case(id, setup, code, names)


# ------------------------------------------------------------------ config

CONFIG_CASES = [
    config_case("toml-syntax", "", "[tool.lockgen.rules\n", "line"),
    config_case(
        "unknown-top-key", 'use = ["vendor"]', 'use = ["vendor"]\nmatrx = {}', "tool.lockgen.matrx: unknown key"
    ),
    config_case(
        "unknown-rule-key",
        "",
        '[[tool.lockgen.rules]]\nmatches = { os = "linux" }\n',
        "tool.lockgen.rules[0].matches: unknown key",
    ),
    config_case(
        "python-not-a-string", 'python = ["3.12"]', "python = [3.12]", "tool.lockgen.matrix.python[0]: must be a string"
    ),
    config_case(
        "bad-backend-label", 'backend = ["cpu"]', 'backend = ["CPU"]', "tool.lockgen.matrix.backend[0]", "'CPU'"
    ),
    config_case(
        "unknown-os", 'os = ["linux", "windows"]', 'os = ["linux", "windwos"]', "tool.lockgen.matrix.os[1]", "windwos"
    ),
    config_case(
        "exclude-value-not-on-axis",
        'python = ["3.12"]',
        'python = ["3.12"]\nexclude = [{ backend = "cpuu" }]',
        "tool.lockgen.matrix.exclude[0].backend",
        "'cpuu' is not a value of the backend axis (cpu)",
    ),
    config_case(
        "exclude-names-no-axis",
        'python = ["3.12"]',
        'python = ["3.12"]\nexclude = [{}]',
        "tool.lockgen.matrix.exclude[0]",
    ),
    config_case(
        "rule-unknown-axis", "", '[[tool.lockgen.rules]]\nmatch = { gpu = "x" }\n', "tool.lockgen.rules[0].match.gpu"
    ),
    config_case(
        "rule-use-not-a-list", "", '[[tool.lockgen.rules]]\nmatch = {}\nuse = "vendor"\n', "tool.lockgen.rules[0].use"
    ),
    config_case(
        "rule-matches-no-value",
        "",
        '[[tool.lockgen.rules]]\nmatch = { os = "macos" }\nskip = "x"\n',
        "tool.lockgen.rules[0].match.os",
        "'macos'",
    ),
    Case(
        "missing-template",
        lambda ctx: (ctx.edit('use = ["vendor"]', 'use = ["vendor"]\nrequirements = "nope.in.j2"'), ["all"])[1],
        2,
        ("templates/nope.in.j2: template not found", CELLS[0]),
    ),
    config_case("pinned-without-a-pin", 'use = ["vendor"]', 'use = ["vendor"]\npinned = ["gamma"]', "gamma", "pins"),
    config_case("pin-not-a-version", 'alpha = "1.0"', 'alpha = "one"', "tool.lockgen.pins.alpha", "'one'"),
    config_case("use-unknown-source", 'use = ["vendor"]', 'use = ["vendr"]', "tool.lockgen.use", "'vendr'"),
    config_case(
        "alias-of-no-cell", "", '[[tool.lockgen.rules]]\nmatch = { os = "windows" }\nalias = "nope"\n', "alias 'nope'"
    ),
    config_case(
        "bad-exclude-newer",
        'use = ["vendor"]',
        'use = ["vendor"]\nexclude-newer = "yesterday"',
        "tool.lockgen.exclude-newer",
        "yesterday",
    ),
    config_case(
        "index-url-without-scheme", "https://pypi.example/simple", "pypi.example/simple", "tool.lockgen.index-url"
    ),
    config_case(
        "source-with-two-kinds",
        'find-links = "https://vendor.example/vendor/"',
        'find-links = "https://vendor.example/vendor/"\nindex = "https://vendor.example/whl"',
        "tool.lockgen.sources.vendor",
    ),
    config_case(
        "source-bad-placeholder",
        "vendor.example/vendor/",
        "vendor.example/{flavour}/",
        "tool.lockgen.sources.vendor",
        "{flavour}",
    ),
    config_case("empty-axis", 'python = ["3.12"]', "python = []", "tool.lockgen.matrix: has no cells"),
    config_case("mirror-not-a-url", '"https://pypi.example" =', '"pypi" =', "tool.lockgen.mirrors"),
    Case(
        "config-not-utf8",
        lambda ctx: (ctx.config.write_bytes(ctx.config.read_bytes() + b"# \xff\xfe\n"), ["all"])[1],
        2,
        ("pyproject.toml", "not UTF-8 text (byte offset"),
    ),
    Case(
        "two-sources-serve-one-package",
        lambda ctx: (
            ctx.edit('use = ["vendor"]', 'use = ["vendor", "other"]'),
            ctx.append('[tool.lockgen.sources.other]\nfind-links = "https://other.example/"\npackages = ["extra"]\n'),
            ["all"],
        )[2],
        2,
        ("'vendor'", "'other'", "extra"),
    ),
]

# ------------------------------------------------------------------ command line

CLI_CASES = [
    Case(
        "unknown-cell", lambda ctx: ["lock", "linux-x86_64-cpu-py3.21"], 2, ("linux-x86_64-cpu-py3.21", "did you mean")
    ),
    Case("only-bad-value", lambda ctx: ["all", "--only", "os=linx"], 2, ("os=linx", "linux, windows")),
    Case(
        "mirror-without-equals",
        lambda ctx: ["all", "--force", "--mirror", "https://pypi.example"],
        2,
        ("--mirror", "CANONICAL=MIRROR"),
    ),
    Case(
        "bad-mirrors-variable",
        lambda ctx: (ctx.monkeypatch.setenv("LOCKGEN_MIRRORS", "nonsense"), ["all"])[1],
        2,
        ("LOCKGEN_MIRRORS", "nonsense"),
    ),
    Case("upgrade-package-typo", lambda ctx: ["all", "--upgrade-package", "alhpa"], 2, ("--upgrade-package alhpa",)),
    Case("no-config-there", lambda ctx: ["all", "-C", str(ctx.tmp / "nowhere")], 2, ("nowhere",)),
    Case("jobs-zero", lambda ctx: ["all", "-j", "0"], 2, ("-j/--jobs",)),
    Case(
        "gpu-query-not-utf8",
        lambda ctx: (
            ctx.append(
                '[tool.lockgen.detect]\nno-gpu = "cpu"\n[[tool.lockgen.detect.nvidia]]\nmin-cuda = "12.0"\nbackend = "cpu"\n'
            ),
            (ctx.tmp / "query.txt").write_bytes(b"NVIDIA \xff\xfe, 8000 MiB\n"),
            ["detect", "--gpu-query", str(ctx.tmp / "query.txt")],
        )[2],
        2,
        ("--gpu-query", "not UTF-8"),
    ),
]

# ------------------------------------------------------------------ templates

TEMPLATE_CASES = [
    template_case("jinja-syntax", "alpha\n{% if %}\n", "templates/requirements.in.j2:2", CELLS[0]),
    template_case("undefined-variable", "alpha\n{{ nope }}\n", "templates/requirements.in.j2:2", "'nope' is undefined"),
    template_case("include-missing", '{% include "nope.j2" %}\n', "nope.j2", "templates/requirements.in.j2"),
    template_case(
        "error-in-included-template",
        'alpha\n{% include "common.j2" %}\n',
        "templates/common.j2:2",
        "'nope' is undefined",
        extra={"common.j2": "beta\n{{ nope }}\n"},
    ),
    template_case("dash-r", "alpha\n-r other.txt\n", "templates/requirements.in.j2", "-r other.txt", "include"),
    template_case(
        "requirement-equals",
        "alpha\n--requirement=other.txt\n",
        "templates/requirements.in.j2",
        "--requirement=other.txt",
    ),
    template_case(
        "extra-index-url", "alpha\n--extra-index-url https://evil.example/simple\n", "--extra-index-url", "sources"
    ),
    template_case("find-links-line", "alpha\n-f ./wheels\n", "-f ./wheels", "sources"),
    template_case(
        "indented-index-url", "alpha\n   --index-url=https://evil.example/simple\n", "--index-url", "sources"
    ),
    template_case(
        "bad-requirement-line", "alpha\nbeta >= >= 1\n", "beta >= >= 1", "templates/requirements.in.j2", code=2
    ),
    Case(
        "template-not-utf8",
        lambda ctx: ((ctx.root / "templates" / "requirements.in.j2").write_bytes(b"alpha\n\xff\n"), ["all"])[1],
        2,
        ("templates/requirements.in.j2", "utf-8"),
    ),
    Case(
        "optional-not-a-requirement",
        lambda ctx: (ctx.edit('optional = ["extra"]', 'optional = ["extra >= >="]'), ["all"])[1],
        2,
        ("optional entry 'extra >= >='", "not a requirement", CELLS[0]),
    ),
]
