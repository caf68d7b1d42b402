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
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lockgen.resolve import probe
from lockgen.run import lock as pipeline
from tests.conftest import run_cli
from tests.support.bad_inputs import CELLS, CLI_CASES, CONFIG, CONFIG_CASES, TEMPLATE, TEMPLATE_CASES, Case, Ctx
from tests.support.faulthost import UNRESOLVABLE, Fault, FaultHost, refusing_url

pytestmark = pytest.mark.uv  # these tests lock with the real uv


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
    path.write_text(path.read_text().replace('"format": 4', '"format": 4 '))  # not what the locks give: rewritten
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
    assert "Traceback" not in output, output  # the whole output, to see where it came from
    manifest = "locks/manifest.json"
    assert {k: v for k, v in after.items() if k != manifest} == {k: v for k, v in snapshot.items() if k != manifest}
    assert _without_failures(after.get(manifest, b""), case.failed) == _without_failures(
        snapshot.get(manifest, b""), ()
    )
