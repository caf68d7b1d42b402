"""``lockgen check --online``: every locked file of every cell (main and layers) checked once per
distinct URL, through the mirrors and with the realm's login, for presence, size and hash; what
went wrong named with cell, package and URL; exit 1."""

from __future__ import annotations

import hashlib
import json

import pytest
from packaging.pylock import Pylock
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.locks import pylockfile
from lockgen.locks.lock import Entry, FileRef, Header, LayerKind, Lock, text_sha256
from lockgen.locks.lockset import LockSet
from lockgen.plan.mirror import Mirrors
from lockgen.rot.online import _header_sha256, check_online
from tests.conftest import run_cli
from tests.fakehost import AuthHost
from tests.rotworld import CELLS, RotHost, json_pages, locked_world, publish

ALPHA, BETA, GAMMA = "alpha-1.0-py3-none-any.whl", "beta-2.0-py3-none-any.whl", "gamma-3.0-py3-none-any.whl"


@pytest.fixture
def pypi(tmp_path):
    host = RotHost(tmp_path / "pypi")
    publish(host)
    json_pages(host)  # PEP 691 with sizes: the locks record them
    yield host
    host.stop()


@pytest.fixture
def world(pypi, tmp_path, monkeypatch):
    return locked_world(tmp_path / "proj", pypi, monkeypatch)


def _online(*args: str) -> tuple[int, dict]:
    done = run_cli("check", "--online", "--json", *args)
    assert done.code in (0, 1), done.err
    return done.code, json.loads(done.out)


def _kinds(report: dict) -> dict[tuple[str, str], list[str]]:
    return {(f["kind"], f["package"]): f["where"] for f in report["findings"]}


def test_every_locked_file_is_asked_for_once(world, pypi):
    assert "size = " in (world.root / f"locks/{CELLS[0]}/pylock.toml").read_text()
    pypi.log.clear()
    code, report = _online()
    assert code == 0 and report["findings"] == []
    assert report["cells"] == list(CELLS) and report["urls"] == 3  # alpha, beta (both cells), gamma (a layer)
    heads = sorted(line for line in pypi.log if line.startswith("HEAD"))
    assert heads == [f"HEAD /files/{ALPHA}", f"HEAD /files/{BETA}", f"HEAD /files/{GAMMA}"]
    pages = [line for line in pypi.log if line.startswith("GET")]
    assert len(pages) == len(set(pages)) == 3  # each project page once, shared by the cells and layers
    text = run_cli("check", "--online")
    assert text.code == 0 and "checked 6 locked files (3 URLs, 3 pages) of 2 cells: all served as locked" in text.out


def test_deleted_moved_resized_rehashed_and_unlisted_files_are_named(world, pypi):
    gamma = world.file(GAMMA)
    gamma.write_bytes(gamma.read_bytes() + b"\0")  # the layer's file re-uploaded: another size and hash
    json_pages(pypi)
    world.file(BETA).unlink()  # deleted: 404 (its page still lists it)
    pypi.answer(f"/files/{ALPHA}", 301, f"{pypi.url}/elsewhere/{ALPHA}")  # moved for good
    code, report = _online()
    assert code == 1
    found = _kinds(report)
    assert found[("deleted", "beta")] == list(CELLS)
    assert found[("moved", "alpha")] == list(CELLS)
    layer = [f"{c} [optional-gamma]" for c in CELLS]
    assert found[("hash-changed", "gamma")] == layer
    moved = next(f for f in report["findings"] if f["kind"] == "moved")
    assert moved["url"] == f"https://files.pythonhosted.org/{ALPHA}"
    assert moved["detail"] == f"it redirects permanently (HTTP 301) to {pypi.url}/elsewhere/{ALPHA}"
    text = run_cli("check", "--online").out
    assert f"deleted: beta 2.0 https://files.pythonhosted.org/{BETA}\n  HTTP 404 from files.pythonhosted.org" in text
    assert f"  locked in {CELLS[0]}, {CELLS[1]}" in text


def test_the_main_locks_file_changed_in_place(world, pypi):
    alpha = world.file(ALPHA)
    alpha.write_bytes(alpha.read_bytes() + b"changed")
    json_pages(pypi)  # the index's page states the new hash and size
    code, report = _online()
    assert code == 1
    by_kind = {f["kind"]: f for f in report["findings"] if f["package"] == "alpha"}
    assert set(by_kind) == {"size-changed", "hash-changed"}
    assert by_kind["hash-changed"]["detail"].startswith("the page states sha256 ")
    assert by_kind["size-changed"]["detail"].startswith(f"the host serves {alpha.stat().st_size} bytes; the lock has ")


def test_a_file_gone_from_its_page_and_a_yank(world, pypi):
    json_pages(pypi, yanked={BETA: "broken metadata"})
    for name in ("index.html", "index.json"):  # alpha's page lists nothing now; its URL still serves it
        page = pypi.root / "pypi" / "simple" / "alpha" / name
        page.write_text(
            '{"meta": {"api-version": "1.1"}, "name": "alpha", "files": []}'
            if name.endswith("json")
            else "<html></html>"
        )
    code, report = _online()
    assert code == 1
    found = {f["kind"]: f for f in report["findings"]}
    assert found["unlisted"]["package"] == "alpha"
    assert "no page an installer reads lists it: https://pypi.org/simple/alpha/" in found["unlisted"]["detail"]
    assert found["yanked"]["detail"] == "the index marks it yanked: broken metadata (an == pin still installs it)"
    assert found["yanked"]["fails"] is False  # a note: only the unlisted file fails the check


def test_an_unreachable_host_and_a_refusal_are_findings_too(world, pypi):
    pypi.answer(f"/files/{BETA}", 403)
    code, report = _online("--mirror", "https://files.pythonhosted.org=http://127.0.0.1:9/files", "--timeout", "60")
    assert code == 1
    assert {f["kind"] for f in report["findings"]} == {"unreachable"}
    code, report = _online()
    assert code == 1 and _kinds(report)[("refused", "beta")] == list(CELLS)


def test_logins_from_netrc_reach_the_host_and_are_never_shown(world, pypi, tmp_path, monkeypatch):
    secret = "s3cr3t-token-value"
    files = AuthHost(pypi.root, ("reader", secret))
    try:
        mirror = ("--mirror", f"https://files.pythonhosted.org={files.url}/files")
        code, report = _online(*mirror)
        assert code == 1 and {f["kind"] for f in report["findings"]} == {"refused"}
        netrc = tmp_path / "netrc"
        netrc.write_text(f"machine 127.0.0.1 login reader password {secret}\n")
        netrc.chmod(0o600)
        monkeypatch.setenv("NETRC", str(netrc))
        done = run_cli("check", "--online", *mirror, "-v")
        assert done.code == 0, done.out + done.err
        assert secret not in done.out + done.err
        monkeypatch.delenv("NETRC")
        monkeypatch.setenv("FILES_TOKEN", secret)  # a login in the mirror URL, from the environment
        done = run_cli(
            "check",
            "--online",
            "--mirror",
            f"https://files.pythonhosted.org=http://reader:${{FILES_TOKEN}}@{files.url.removeprefix('http://')}/files",
        )
        assert done.code == 0, done.out + done.err
        assert secret not in done.out + done.err
    finally:
        files.stop()


def test_server_stated_hashes_are_read():
    digest = hashlib.sha256(b"x").digest()
    import base64

    b64 = base64.b64encode(digest).decode()
    assert _header_sha256({"repr-digest": f"sha-512=:abc:, sha-256=:{b64}:"}) == digest.hex()
    assert _header_sha256({"digest": f"SHA-256={b64}"}) == digest.hex()
    assert _header_sha256({"x-amz-checksum-sha256": b64}) == digest.hex()
    assert _header_sha256({"x-checksum-sha256": digest.hex()}) == digest.hex()
    assert _header_sha256({"x-goog-hash": "md5=abc"}) is None


# -- twelve cells ------------------------------------------------------------------------------------

TWELVE = [f"linux-{arch}-{backend}-py3.{minor}" for arch in ("x86_64", "aarch64") for backend in ("cpu", "cu130")
          for minor in (11, 12, 13)]  # fmt: skip


def _twelve_cells(folder, pypi) -> LockSet:
    """Twelve cells' locks written with the lock model (no resolution: only their files matter):
    40 packages every cell shares, 2 of its own."""
    shared = [pypi.add(f"pkg{i}", "1.0") for i in range(40)]
    own = {cell: [pypi.add(f"own-{cell.replace('.', '-')}-{i}", "1.0") for i in range(2)] for cell in TWELVE}
    pypi.publish()
    for cell in TWELVE:
        packages, entries = [], []
        for url in shared + own[cell]:
            name = url.rsplit("/", 1)[1]
            data = (pypi.root / "files" / name).read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            project = name.split("-1.0-")[0].replace("_", "-")
            canonical = f"https://files.pythonhosted.org/{name}"
            packages.append({"name": project, "version": "1.0",
                             "wheels": [{"url": canonical, "size": len(data), "hashes": {"sha256": digest}}]})  # fmt: skip
            entries.append(Entry(name=canonicalize_name(project), version=Version("1.0"), hashes=(f"sha256:{digest}",)))
        pylock = pylockfile.dumps(
            Pylock.from_dict({"lock-version": "1.0", "created-by": "lockgen", "packages": packages})
        )
        (folder / cell).mkdir(parents=True)
        (folder / cell / "pylock.toml").write_text(pylock)
        header = Header(
            cell=cell, kind=LayerKind.MAIN, path=f"locks/{cell}.txt", target="x", uv="0.13.9", input_hash="sha256:0",
            index_url="https://pypi.org/simple", pylock=FileRef(sha256=text_sha256(pylock), path=f"locks/{cell}/pylock.toml"),
        )  # fmt: skip
        (folder / f"{cell}.txt").write_text(
            Lock(header=header, entries=tuple(sorted(entries, key=lambda e: e.name))).render()
        )
    return LockSet.from_folder(folder)


def test_twelve_cells_ask_for_each_distinct_url_once(tmp_path):
    pypi = RotHost(tmp_path / "pypi")
    try:
        lockset = _twelve_cells(tmp_path / "locks", pypi)
        mirrors = Mirrors(
            {
                "https://pypi.org/simple": f"{pypi.url}/pypi/simple",
                "https://files.pythonhosted.org": f"{pypi.url}/files",
            }
        )
        pypi.log.clear()
        report = check_online(lockset, TWELVE, mirrors)
        assert report.exit_code == 0 and report.findings == []
        assert report.files == 12 * 42 and report.urls == 40 + 24
        heads = [line for line in pypi.log if line.startswith("HEAD")]
        assert len(heads) == len(set(heads)) == 64
        assert len([line for line in pypi.log if line.startswith("GET")]) == 64  # one page per project
    finally:
        pypi.stop()


def test_the_scheduled_recipes_command_line_parses():
    from lockgen.cli import parse

    args = parse(
        ["check", "--online", "--attestations", "--timeout", "1200", "--json", "--mirror", "https://a=http://b"]
    )
    assert (args.online, args.attestations, args.timeout, args.json, args.mirror) == (
        True,
        True,
        1200.0,
        True,
        ["https://a=http://b"],
    )
    assert parse(["check", "--resolve", "-j", "2", "--wait"]).resolve
