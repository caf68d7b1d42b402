"""A catalogue of bad inputs (issue 8, item 11): config, command line, templates, sources,
network faults, disk errors and interruptions, each against a copy of one locked project.

Every case checks:

* the exit code (2: usage, config or template; 1: a cell failed or a file could not be written;
  130: interrupted);
* that the culprit is named: the file, key path, template line, host or URL, and the cell;
* that nothing changed: every lock file keeps its bytes, and the manifest too, except that a cell
  that failed while resolving is recorded as ``failed`` with its reason (issue 8, item 3);
* that no traceback is printed (``-v`` shows them; without it none may show).

The project: two cells (linux and windows, x86_64, cpu, Python 3.12) over a fake index behind
``https://pypi.example``, a find-links source ``vendor`` behind ``https://vendor.example`` serving
the optional layer ``extra``, and a pin ``alpha==1.0`` in the template.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lockgen import pipeline
from lockgen.resolve import probe
from tests.conftest import run_cli
from tests.faulthost import UNRESOLVABLE, Fault, FaultHost, refusing_url

pytestmark = pytest.mark.uv  # these tests lock with the real uv

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


@pytest.fixture(scope="module")
def golden(tmp_path_factory, uv_cache) -> Iterator[tuple[Path, FaultHost, FaultHost]]:
    """The locked project (copied for each case) and its fake hosts: the index and the vendor's."""
    folder = tmp_path_factory.mktemp("golden")
    host, vendor = FaultHost(folder / "pypi"), FaultHost(folder / "vendor")
    for name, version in (("alpha", "1.0"), ("alpha", "1.1"), ("beta", "1.0"), ("gamma", "1.0")):
        host.wheel("files", name, version)
    host.index("simple", sorted((host.root / "files").glob("*.whl")))
    vendor.flat("vendor", [vendor.wheel("vendor", "extra", "1.0")])
    root = folder / "project"
    (root / "templates").mkdir(parents=True)
    (root / "templates" / "requirements.in.j2").write_text(TEMPLATE)
    (root / "pyproject.toml").write_text(CONFIG.format(pypi=host.url, vendor=vendor.url))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UV_CACHE_DIR", str(uv_cache))
        run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    yield root, host, vendor
    host.stop()
    vendor.stop()


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
        ("pyproject.toml", "utf-8"),
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

# ------------------------------------------------------------------ sources and network faults


def _mirror(ctx: Ctx, canonical: str, url: str) -> None:
    ctx.edit(f'"{canonical}" = "{ctx.host.url}"', f'"{canonical}" = "{url}"')


def refused_index(ctx: Ctx) -> list[str]:
    cm = refusing_url()
    url = cm.__enter__()
    ctx.cleanup.append(lambda: cm.__exit__(None, None, None))
    _mirror(ctx, "https://pypi.example", url)
    return ["all", "--force"]


def unresolvable_index(ctx: Ctx) -> list[str]:
    _mirror(ctx, "https://pypi.example", UNRESOLVABLE)
    return ["all", "--force"]


def missing_find_links_page(ctx: Ctx) -> list[str]:
    ctx.edit(
        'packages = ["extra"]',
        'packages = ["extra"]\n[tool.lockgen.sources.more]\nfind-links = "https://vendor.example/missing/"\npackages = ["gamma"]',
    )
    ctx.edit('use = ["vendor"]', 'use = ["vendor", "more"]')
    ctx.template(TEMPLATE + "gamma\n")
    return ["all"]


def page_fault(path: str, fault: Fault, *, cold: bool = False) -> Callable[[Ctx], list[str]]:
    def setup(ctx: Ctx) -> list[str]:
        if cold:
            ctx.cold_cache()
        ctx.monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # the fault is there the next time too: spare uv's backoff
        ctx.fault(path, fault)
        return ["all", "--force"]

    return setup


def wrong_find_links_hash(ctx: Ctx) -> list[str]:
    wheel = next((ctx.vendor.root / "vendor").glob("extra-*.whl"))
    page = ctx.vendor.root / "vendor" / "index.html"
    original = page.read_text()
    ctx.cleanup.append(lambda: page.write_text(original))
    ctx.vendor.flat("vendor", [wheel], wrong_hash=frozenset({wheel.name}))
    return ["all", "--force"]


NETWORK_CASES = [
    Case(
        "refused-index-host",
        refused_index,
        1,
        ("https://pypi.example is unreachable", "connection refused", "--mirror"),
        CELLS,
    ),
    Case(
        "index-host-does-not-resolve",
        unresolvable_index,
        1,
        ("https://pypi.example is unreachable", "does not resolve"),
        CELLS,
    ),
    Case("find-links-page-404", missing_find_links_page, 1, ("https://vendor.example/missing/", "404"), CELLS),
    Case(
        "index-page-500",
        page_fault("/simple/beta/", Fault(status=500)),
        1,
        ("https://pypi.example/simple/beta/", "500"),
        CELLS,
    ),
    Case(
        "index-page-garbage",
        page_fault("/simple/beta/", Fault(body=b"\x00\x9f<<garbage>>\xff" * 50)),
        1,
        ("beta", "https://pypi.example/simple"),
        CELLS,
    ),
    Case(
        "truncated-wheel",
        page_fault("/files/beta-1.0-py3-none-any.whl", Fault(truncate=50), cold=True),
        1,
        ("beta==1.0 has an invalid package format", "Failed to read from zip file"),
        CELLS,
    ),
    Case(
        "wrong-hash-on-find-links-page",
        wrong_find_links_hash,
        1,
        ("extra 1.0", "https://vendor.example/vendor/extra-1.0-py3-none-any.whl", "sha256"),
        CELLS,
    ),
]

# ------------------------------------------------------------------ disk


def stale_then(ctx: Ctx, rel: str) -> list[str]:
    ctx.template(TEMPLATE + "gamma\n")  # every cell is stale: lockgen must write
    ctx.read_only(rel)
    return ["all"]


def outdated_read_only_manifest(ctx: Ctx) -> list[str]:
    path = ctx.root / "locks" / "manifest.json"
    path.write_text(path.read_text().replace('"format": 2', '"format": 2 '))  # not what the locks give: rewritten
    ctx.read_only("locks/manifest.json")
    return ["all"]


def locks_is_a_file(ctx: Ctx) -> list[str]:
    ctx.edit('use = ["vendor"]', 'use = ["vendor"]\nlocks = "pyproject.toml"')
    return ["all"]


DISK_CASES = [
    Case(
        "read-only-locks-folder",
        lambda ctx: stale_then(ctx, "locks"),
        1,
        ("cannot write locks/", CELLS[0], CELLS[1]),
        CELLS,
    ),
    Case("read-only-work-folder", lambda ctx: stale_then(ctx, ".lockgen"), 1, ("cannot write .lockgen/run.lock",)),
    Case(
        "read-only-manifest",
        outdated_read_only_manifest,
        1,
        ("cannot write locks/manifest.json", f"{CELLS[0]}: up to date"),
        changes_in_setup=True,
    ),
    Case("locks-is-a-file", locks_is_a_file, 2, ("tool.lockgen.locks", "pyproject.toml")),
    Case(
        "garbage-lock-check",
        lambda ctx: ((ctx.root / "locks" / f"{CELLS[0]}.txt").write_text("# not a lock\nalpha\n"), ["check"])[1],
        1,
        (f"locks/{CELLS[0]}.txt",),
    ),
    Case(
        "garbage-manifest-check",
        lambda ctx: ((ctx.root / "locks" / "manifest.json").write_text("{not json"), ["check"])[1],
        1,
        ("locks/manifest.json",),
    ),
    Case(
        "edited-pylock-check",
        lambda ctx: ((ctx.root / "locks" / CELLS[0] / "pylock.toml").write_text("garbage = \n"), ["check"])[1],
        1,
        (f"locks/{CELLS[0]}/pylock.toml",),
    ),
]

# ------------------------------------------------------------------ interruptions


def ctrl_c_while_resolving(ctx: Ctx) -> list[str]:
    ctx.template(TEMPLATE + "gamma\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as a Ctrl-C reaches the main thread while cells resolve

    ctx.monkeypatch.setattr(pipeline, "wait", interrupted)
    return ["all"]


def ctrl_c_while_probing(ctx: Ctx) -> list[str]:
    ctx.template(TEMPLATE + "gamma\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as a Ctrl-C reaches the main thread while it waits for the probe

    ctx.monkeypatch.setattr(probe, "probe", interrupted)
    return ["all"]


INTERRUPT_CASES = [
    Case("ctrl-c-while-resolving", ctrl_c_while_resolving, 130, ("interrupted",)),
    Case("ctrl-c-while-probing-hosts", ctrl_c_while_probing, 130, ("interrupted",)),
]

CASES = CONFIG_CASES + CLI_CASES + TEMPLATE_CASES + NETWORK_CASES + DISK_CASES + INTERRUPT_CASES


def _without_failures(manifest: bytes, failed: tuple[str, ...]) -> object:
    """The manifest with the run's failure records of ``failed`` cells taken out."""
    try:
        data = json.loads(manifest)
    except ValueError:
        return manifest
    for name in failed:
        entry = data.get("cells", {}).get(name, {})
        if entry.get("status") == "failed":
            entry["status"] = "locked"
            entry.pop("reason", None)
    return data


def locks_folder(root: Path) -> dict[str, bytes]:
    folder = root / "locks"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_catalogue_has_at_least_40_cases():
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, golden, tmp_path, monkeypatch):
    source, host, vendor = golden
    root = tmp_path / "project"
    shutil.copytree(source, root, symlinks=True)
    ctx = Ctx(root=root, host=host, vendor=vendor, tmp=tmp_path, monkeypatch=monkeypatch)
    before = locks_folder(root)
    try:
        args = case.setup(ctx)
        snapshot = locks_folder(root) if args[0] == "check" or case.changes_in_setup else before
        if "-C" not in args:
            args = [*args, "-C", str(root)]
        run = run_cli(*args)
        after = locks_folder(root)
    finally:
        for undo in reversed(ctx.cleanup):
            undo()
    output = run.out + run.err
    assert run.code == case.code, output
    for name in case.names:
        assert name in output, f"{name!r} not named in:\n{output}"
    assert "Traceback" not in output
    manifest = "locks/manifest.json"
    assert {k: v for k, v in after.items() if k != manifest} == {k: v for k, v in snapshot.items() if k != manifest}
    assert _without_failures(after.get(manifest, b""), case.failed) == _without_failures(
        snapshot.get(manifest, b""), ()
    )
