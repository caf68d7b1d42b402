"""Every command that reaches a package host does so through the one client, so each hostile host
behaviour (:data:`tests.support.faulthost.HOSTILE`) ends every one of them in a named failure
within the deadline, never in a clean result; a host that refuses HEAD is no failure at all.

The world is locked once against a good fake PyPI; then every run is pointed (``--mirror``) at a
:class:`~tests.support.faulthost.FaultHost` serving the same folder with one fault everywhere.
``LOCKGEN_HTTP_TIMEOUT``/``LOCKGEN_DEADLINE`` keep the waits short (the client honours them in
every command; uv gets ``UV_HTTP_TIMEOUT`` and no retries). Rows: ``all`` (uv reads pages through the
page cache, whose upstream reads the client bounds), ``check --online``, ``audit`` (the OSV API), ``licenses`` and ``sbom``
(metadata files and wheel ranges), ``bundle`` (downloads), coverage (GPU wheels by ranges) and
provenance (PEP 740 objects).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lockgen.plan.mirror import Mirrors
from lockgen.resolve.provenance import Provenance
from lockgen.wheels.model import GpuWheel
from lockgen.wheels.reading import Reader
from tests.conftest import run_cli
from tests.support import dossier_world
from tests.support.faulthost import HOSTILE, FaultHost

#: Seconds every run may take here: the deadline plus the CLI's own work.
DEADLINE, WITHIN = 1.0, 6.0
FAILING = sorted(set(HOSTILE) - {"HEAD refused"})
#: The behaviours that cost a whole deadline per row: the default tier keeps a host that never
#: answers for the rows with a deadline of their own (check --online, audit); the rest is slow.
SLOW = {"never answers", "trickles"}


@pytest.fixture(scope="module")
def world(shared_fake_host, tmp_path_factory):
    pypi = shared_fake_host("pypi")
    dossier_world.publish(pypi)
    w = dossier_world.write(tmp_path_factory.mktemp("hostile") / "p", pypi)
    run = run_cli("all", "-C", str(w.root), *w.mirror_args())
    assert run.code == 0, run.err
    return w


@pytest.fixture
def hostile(world, tmp_path, monkeypatch):
    host = FaultHost(world.pypi.root)
    monkeypatch.setenv("LOCKGEN_HTTP_TIMEOUT", "1")
    monkeypatch.setenv("LOCKGEN_DEADLINE", str(DEADLINE))
    monkeypatch.setenv("UV_HTTP_TIMEOUT", "3")
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    shutil.rmtree(world.root / ".lockgen" / "metadata", ignore_errors=True)
    yield host
    host.stop()


def _mirrors(host: FaultHost) -> list[str]:
    pairs = [f"https://pypi.org/simple={host.url}/pypi/simple", f"https://files.pythonhosted.org={host.url}/files"]
    return [arg for pair in pairs for arg in ("--mirror", pair)]


def _cli(world, host: FaultHost, *args: str):
    return run_cli(*args, "-C", str(world.root), *_mirrors(host))


def lock_all(world, host: FaultHost, tmp: Path) -> tuple[bool, str]:
    run = _cli(world, host, "all", "--force")
    return run.code == 0, f"{run.code} {run.err}"


def check_online(world, host: FaultHost, tmp: Path) -> tuple[bool, str]:
    run = _cli(world, host, "check", "--online", "--json", "--timeout", str(DEADLINE))
    found = json.loads(run.out)["findings"] if run.out.strip() else []
    return run.code == 0 and not found, f"{run.code} {[(f['kind'], f['detail']) for f in found]} {run.err}"


def audit(world, host: FaultHost, tmp: Path) -> tuple[bool, str]:
    run = _cli(world, host, "audit", "--osv", "https://api.osv.dev", "--mirror", f"https://api.osv.dev={host.url}")
    return run.code == 0, f"{run.code} {run.err}"


def licenses(world, host: FaultHost, tmp: Path) -> tuple[bool, str]:
    run = _cli(world, host, "licenses", "--format", "json")
    rows = json.loads(run.out)["merged"] if run.out.strip() else []
    missing = sorted({r["license"]["missing"] for r in rows if r["license"]["missing"]})
    return run.code == 0 and bool(rows) and not missing, f"{run.code} {missing}"


def sbom(world, host: FaultHost, tmp: Path) -> tuple[bool, str]:
    run = _cli(world, host, "sbom", "-o", str(tmp / "sbom"))
    found = (tmp / "sbom" / "matrix.cdx.json").read_text() if run.code == 0 else ""
    unlicensed = [c["name"] for c in json.loads(found)["components"] if not c.get("licenses")] if found else ["all"]
    return run.code == 0 and "markupsafe" not in unlicensed, f"{run.code} {unlicensed} {run.err}"


def bundle(world, host: FaultHost, tmp: Path) -> tuple[bool, str]:
    run = _cli(world, host, "bundle", *dossier_world.CELLS, "-o", str(tmp / "bundle"))
    return run.code == 0, f"{run.code} {run.err}"


def coverage(world, host: FaultHost, tmp: Path) -> tuple[bool, str]:
    wheel = next((world.pypi.root / "files").glob("numpy-*.whl"))
    import hashlib

    gpu = GpuWheel("numpy", "2.0.0", hashlib.sha256(wheel.read_bytes()).hexdigest(),
                   f"https://files.pythonhosted.org/{wheel.name}", None, None)  # fmt: skip
    mirrors = Mirrors({"https://files.pythonhosted.org": f"{host.url}/files"})
    with Reader(tmp, mirrors) as reader:
        read = reader([gpu])
    return not read.unread, str(dict(read.unread))


def provenance(world, host: FaultHost, tmp: Path) -> tuple[bool, str]:
    (host.root / "provenance.json").write_text(json.dumps({"attestation_bundles": []}))
    mirrors = Mirrors({"https://pypi.org": host.url})
    found = Provenance(tmp, mirrors)._fetch("https://pypi.org/provenance.json", "alpha")
    return found is not None, repr(found)  # None: not read, asked again next run; () would be "none"


ROWS: dict[str, Callable[..., tuple[bool, str]]] = {
    f.__name__: f for f in (lock_all, check_online, audit, licenses, sbom, bundle, coverage, provenance)
}
OWN_DEADLINE = {"check_online", "audit"}
#: What the failure says, by behaviour (rows that carry a reason: all but sbom and provenance).
SAID = {
    "never answers": ("no answer within", "time allowed", "time budget"),
    "trickles": ("time allowed", "time budget", "trickles", "bound"),  # bound: its length is over a range asked
    "huge body": ("bound", "time allowed"),  # on a loaded machine the deadline can come before the bound
    "redirect loop": ("redirect loop",),
    "https to http": ("from https to http",),
}


def _cases() -> list:
    cases = []
    for row in ROWS:
        for behaviour in FAILING:
            slow = behaviour == "trickles" or (behaviour in SLOW and row not in OWN_DEADLINE)
            marks = [pytest.mark.slow] if slow else []
            cases.append(pytest.param(row, behaviour, marks=marks, id=f"{row}-{behaviour}"))
    return cases


@pytest.mark.parametrize(("row", "behaviour"), _cases())
def test_a_hostile_host_is_a_named_failure_within_the_deadline(world, hostile, tmp_path, row, behaviour):
    hostile.faults["/"] = HOSTILE[behaviour]
    started = time.monotonic()
    clean, said = ROWS[row](world, hostile, tmp_path)
    assert not clean, f"{row} read a host that {behaviour} as a clean result: {said}"
    if row not in ("lock_all", "sbom", "provenance"):
        assert any(words in said for words in SAID[behaviour]), f"{row}: {said}"
    within = 4 * WITHIN if row == "lock_all" else WITHIN  # uv's own timeout, per cell
    assert time.monotonic() - started < within, f"{row} took too long against a host that {behaviour}"


@pytest.mark.parametrize("row", sorted(set(ROWS) - {"audit"}))
def test_a_host_that_refuses_head_is_no_failure(world, hostile, tmp_path, row):
    hostile.faults["/"] = HOSTILE["HEAD refused"]
    clean, said = ROWS[row](world, hostile, tmp_path)
    assert clean, f"{row} failed against a host that refuses HEAD: {said}"
    assert "refused" not in said
