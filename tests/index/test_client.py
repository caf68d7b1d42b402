"""The one client (:mod:`lockgen.index.client`) against each hostile host behaviour of
:data:`tests.support.faulthost.HOSTILE`: a named failure within the deadline, never a clean
result; HEAD refused falls back to a ranged GET. Then the one page parser, artifact names and a
wheel's METADATA read by ranges."""

from __future__ import annotations

import json
import os
import time

import pytest

from lockgen.index.client import Client, Failure, HostError, _bounded
from lockgen.index.files import Kind, artifact
from lockgen.index.pages import parse
from lockgen.index.ranges import size_of, wheel_metadata
from lockgen.plan.mirror import Mirrors
from tests.support.faulthost import HOSTILE, Fault, FaultHost

CANONICAL = "https://files.example.org"
#: What a GET of a faulty path ends in (HEAD refused: no failure, see below).
EXPECTED = {
    "never answers": {Failure.TIMEOUT, Failure.DEADLINE},
    "trickles": {Failure.DEADLINE, Failure.TIMEOUT},
    "huge body": {Failure.TOO_LARGE},
    "redirect loop": {Failure.REDIRECT},
    "https to http": {Failure.REDIRECT},
}


@pytest.fixture
def host(tmp_path):
    served = FaultHost(tmp_path / "host")
    served.wheel("files", "alpha", "1.0")
    yield served
    served.stop()


def _client(host: FaultHost, **kwargs) -> Client:
    return Client(Mirrors({CANONICAL: f"{host.url}/files"}), **kwargs)


@pytest.mark.parametrize("behaviour", sorted(EXPECTED))
def test_every_hostile_host_ends_in_a_named_failure_within_the_deadline(host, behaviour):
    host.faults["/files/"] = HOSTILE[behaviour]
    started = time.monotonic()
    with _client(host, timeout=1.0, deadline=1.5, max_body=1024 * 1024) as client, pytest.raises(HostError) as caught:
        client.get(f"{CANONICAL}/alpha-1.0-py3-none-any.whl")
    assert caught.value.kind in EXPECTED[behaviour]
    assert "files.example.org" in str(caught.value) and "127.0.0.1" not in str(caught.value)
    assert time.monotonic() - started < 3.0


def test_a_trickle_ends_without_a_deadline(host):
    host.faults["/files/"] = HOSTILE["trickles"]
    started = time.monotonic()
    with _client(host, timeout=1.0) as client, pytest.raises(HostError, match="trickles") as caught:
        client.get(f"{CANONICAL}/alpha-1.0-py3-none-any.whl")
    assert caught.value.kind is Failure.TIMEOUT and time.monotonic() - started < 3.0


def test_head_refused_falls_back_to_a_ranged_get(host):
    host.faults["/files/"] = HOSTILE["HEAD refused"]
    wheel = host.root / "files" / "alpha-1.0-py3-none-any.whl"
    with _client(host) as client:
        reply = client.head(f"{CANONICAL}/{wheel.name}")
        assert reply.status == 206 and reply.url == f"{CANONICAL}/{wheel.name}"
        assert size_of(client, f"{CANONICAL}/{wheel.name}") == wheel.stat().st_size
    assert host.requests[-2:] == [f"HEAD /files/{wheel.name}", f"/files/{wheel.name}"]


def test_a_cut_short_body_is_an_error_not_a_short_answer(host):
    host.faults["/files/"] = Fault(truncate=10)
    with _client(host) as client, pytest.raises(HostError) as caught:
        client.get(f"{CANONICAL}/alpha-1.0-py3-none-any.whl")
    assert caught.value.kind is Failure.CUT_SHORT


def test_a_redirect_to_another_host_carries_no_login(host, tmp_path):
    other = FaultHost(tmp_path / "other")
    try:
        other.wheel("files", "alpha", "1.0")
        host.faults["/files/"] = Fault(redirect=f"{other.url}{{self}}")
        where = host.url.split("://")[1]
        reply = Client().get(f"http://bob:s3cr3t@{where}/files/alpha-1.0-py3-none-any.whl")
        assert reply.status == 200 and reply.hops == ((302, f"{other.url}/files/alpha-1.0-py3-none-any.whl"),)
        assert host.authorizations[-1] is not None and other.authorizations == [None]
    finally:
        other.stop()


def test_the_environment_lowers_timeouts_and_the_deadline():
    assert _bounded(30, None, {"LOCKGEN_HTTP_TIMEOUT": "2", "LOCKGEN_DEADLINE": "5"}) == (2, 5)
    assert _bounded(30, 3, {"LOCKGEN_DEADLINE": "5"}) == (30, 3)
    assert _bounded(30, None, {"LOCKGEN_DEADLINE": "soon"}) == (30, None)
    assert "LOCKGEN_DEADLINE" not in os.environ


def test_one_parser_reads_html_and_json_pages_with_metadata_keys():
    html = (
        '<a href="/f/alpha-1.0-py3-none-any.whl#sha256=AB" data-requires-python="&gt;=3.9" '
        'data-core-metadata="sha256=CD" data-yanked="bad">a</a>\n'
        '<a href="alpha-1.0.tar.gz" data-dist-info-metadata="true">s</a>\n<a href="x.whl">x</a>'
    )
    files, version = parse(html, "text/html", "https://h/simple/alpha/")
    assert version is None and [f.url for f in files][:2] == [
        "https://h/f/alpha-1.0-py3-none-any.whl", "https://h/simple/alpha/alpha-1.0.tar.gz",
    ]  # fmt: skip
    wheel, sdist, other = files
    assert (wheel.sha256, wheel.core_metadata, wheel.requires_python, wheel.yanked) == ("ab", "cd", ">=3.9", "bad")
    assert sdist.core_metadata is True and other.core_metadata is None and other.artifact is None
    page = {
        "meta": {"api-version": "1.1"},
        "files": [
            {"filename": "alpha-1.0-py3-none-any.whl", "url": "../../f/alpha-1.0-py3-none-any.whl",
             "hashes": {"sha256": "ab"}, "core-metadata": {"sha256": "cd"}, "requires-python": ">=3.9", "size": 5},
            {"filename": "alpha-1.0.tar.gz", "url": "s", "hashes": {}, "dist-info-metadata": False},
            "not a file",
        ],
    }  # fmt: skip
    files, version = parse(json.dumps(page), "application/vnd.pypi.simple.v1+json", "https://h/simple/alpha/")
    assert version == "1.1" and len(files) == 2
    assert (files[0].core_metadata, files[0].size, files[0].url) == ("cd", 5, "https://h/f/alpha-1.0-py3-none-any.whl")
    assert files[1].core_metadata is False


def test_artifact_names_are_parsed_once_with_packaging():
    wheel = artifact("Torch-2.1.0+cu121-1-cp312-cp312-manylinux_2_28_x86_64.whl")
    assert wheel is not None and wheel.kind is Kind.WHEEL and wheel.name == "torch" and wheel.build == (1, "")
    assert str(wheel.version) == "2.1.0+cu121" and not wheel.pure
    sdist = artifact("torch-2.1.0.tar.gz")
    assert sdist is not None and sdist.kind is Kind.SDIST and sdist.fits(frozenset())
    assert artifact("garbage.whl") is None and artifact("README.md") is None


def test_a_wheel_s_metadata_is_read_by_ranges_not_whole(host):
    big = host.wheel("files", "bulky", "1.0")
    from tests.support.wheels import make_wheel

    big = make_wheel(host.root / "files", "bulky", "2.0", metadata=("License-Expression: MIT",),
                     files={"bulky/blob.bin": os.urandom(2 * 1024 * 1024)})  # fmt: skip
    with _client(host) as client:
        data, fetched = wheel_metadata(client, f"{CANONICAL}/{big.name}", big.stat().st_size)
    assert b"License-Expression: MIT" in data and b"Name: bulky" in data
    assert fetched < big.stat().st_size // 4  # the central directory and one member, not the blob


def test_the_page_cache_s_reads_are_bounded_too():
    from types import SimpleNamespace

    from lockgen.index.client import capped

    answer = SimpleNamespace(iter_bytes=lambda: iter([b"x" * 600, b"y" * 600]))
    with pytest.raises(HostError) as caught:
        capped(answer, "https://pypi.org/simple/torch/", bound=1000)
    assert caught.value.kind is Failure.TOO_LARGE and "pypi.org" in str(caught.value)
    assert capped(SimpleNamespace(iter_bytes=lambda: iter([b"ok"])), "https://h/", bound=2) == b"ok"
