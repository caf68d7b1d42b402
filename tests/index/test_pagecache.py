"""The run's page cache (lockgen.index.pagecache): pages once per run, 304s, file ETags, URLs back.

Hermetic: the fake index on loopback is the upstream; httpx plays uv where a request is needed,
and the real uv resolves through the cache in the end-to-end checks.
"""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from lockgen.index.pagecache import (
    PORT_BASE,
    PORT_SPAN,
    SIMPLE_ACCEPT,
    PageCache,
    ProxiedMirrors,
    file_hashes,
    origin_of,
    port_candidates,
)
from lockgen.plan.mirror import Mirrors
from tests.conftest import locked_versions, write_project

SHA = "a" * 64


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://pypi.org/simple", "https://pypi.org"),
        ("http://127.0.0.1:8080/pypi/simple/", "http://127.0.0.1:8080"),
        ("https://user:secret@private.example/simple", None),
        ("wheels/spark", None),
        ("file:///srv/wheels", None),
    ],
    ids=["https", "port", "credentials", "local-folder", "file-url"],
)
def test_origin_of_proxies_only_plain_http_origins(url, origin):
    assert origin_of(url) == origin


def test_ports_are_stable_per_origin_and_bounded():
    first = port_candidates("https://pypi.org")
    assert first == port_candidates("https://pypi.org")  # uv's cache keys stay the same across runs
    assert len(first) == 4
    assert len(set(first)) == 4
    assert all(PORT_BASE <= p < PORT_BASE + PORT_SPAN for p in first)
    assert port_candidates("https://download.pytorch.org") != first


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        (
            "application/vnd.pypi.simple.v1+json",
            json.dumps(
                {
                    "files": [
                        {"url": "https://files.example/a-1.0-py3-none-any.whl", "hashes": {"sha256": SHA}},
                        {"url": "../../files/b-1.0.tar.gz", "hashes": {"sha256": SHA}},
                        {"url": "https://files.example/c-1.0.tar.gz", "hashes": {}},
                    ]
                }
            ).encode(),
            {"https://files.example/a-1.0-py3-none-any.whl": SHA, "http://idx/pypi/files/b-1.0.tar.gz": SHA},
        ),
        (
            "text/html",
            f'<a href="../../files/a-1.0-py3-none-any.whl#sha256={SHA}">a</a><a href="x.whl">x</a>'.encode(),
            {"http://idx/pypi/files/a-1.0-py3-none-any.whl": SHA},
        ),
        ("application/vnd.pypi.simple.v1+json", b"not json", {}),
    ],
    ids=["json", "html", "unreadable"],
)
def test_file_hashes_reads_both_simple_api_forms(content_type, body, expected):
    assert file_hashes("http://idx/pypi/simple/a/", content_type, body) == expected


def test_a_page_is_fetched_once_and_revalidated_with_304(index):
    index.add("alpha", "1.0")
    index.publish()
    with PageCache([origin_of(index.url)]) as cache:
        local = cache.mirrors(Mirrors()).fetch_url(index.index_url()) + "/alpha/"
        first = httpx.get(local, headers={"Accept": SIMPLE_ACCEPT})
        assert first.status_code == 200
        assert first.headers["cache-control"] == "no-cache"
        again = httpx.get(local, headers={"Accept": SIMPLE_ACCEPT, "If-None-Match": first.headers["etag"]})
        assert again.status_code == 304
        assert cache.stats.fetched == 1
        assert cache.stats.not_modified == 1
        assert cache.served(index.index_url() + "/alpha/")
        assert not cache.served(index.index_url() + "/beta/")
        # the page's file link now points at the cache, and the file answers 304 from the page's hash
        link = first.text.split('href="', 1)[1].split('"', 1)[0]
        wheel = httpx.get(httpx.URL(local).join(link))
        assert wheel.status_code == 200
        assert wheel.headers["etag"].strip('"') == link.split("#sha256=")[1]
        cached = httpx.get(httpx.URL(local).join(link), headers={"If-None-Match": wheel.headers["etag"]})
        assert cached.status_code == 304
        assert cache.stats.files_not_modified == 1


@pytest.mark.parametrize("name", ["Range", "range", "RANGE"])
def test_a_byte_range_read_is_shared_whatever_the_header_case(index, name):
    """uv sends ``Range`` capitalised; HTTP header names are case-insensitive (RFC 9110 5.1): the
    second read of the same range is answered from the run's first (issue 24: it was streamed
    upstream again for every cell)."""
    index.add("alpha", "1.0")
    index.publish()
    with PageCache([origin_of(index.url)]) as cache:
        local = cache.mirrors(Mirrors()).fetch_url(index.index_url()) + "/alpha/"
        page = httpx.get(local, headers={"Accept": SIMPLE_ACCEPT})
        link = httpx.URL(local).join(page.text.split('href="', 1)[1].split('"', 1)[0].split("#", 1)[0])
        reads = [httpx.get(link, headers={name: "bytes=0-15"}) for _ in range(2)]
        assert reads[0].content == reads[1].content
        assert cache.stats.shared_reads == 1


def test_an_unreachable_upstream_resets_the_connection():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}"  # nothing listens once closed
    with PageCache([dead]) as cache:
        local = cache.routes[dead]
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{local}/simple/alpha/", headers={"Accept": SIMPLE_ACCEPT})
        assert cache.stats.trouble == 1
        assert not cache.served(f"{dead}/simple/alpha/")


def test_a_client_that_hangs_up_prints_nothing(capfd):
    """uv resets its connections when a resolution fails: the cache's server logs that (-v),
    socketserver's default printed a traceback into the user's terminal."""
    import struct
    import time

    with PageCache(["http://127.0.0.1:9"]) as cache:
        host, port = cache.routes["http://127.0.0.1:9"].removeprefix("http://").split(":")
        for _ in range(3):
            with socket.create_connection((host, int(port))) as client:
                client.sendall(b"GET /simple/al")  # half a request line, then a reset
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        time.sleep(0.2)  # the handler threads meet the reset
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err


def test_proxied_mirrors_write_canonical_urls_back():
    base = Mirrors({"https://pypi.org/simple": "http://mirror.example/simple"})
    proxied = ProxiedMirrors(
        base.table, base.used, base=base, routes={"http://mirror.example": "http://127.0.0.1:20001"}
    )
    assert proxied.fetch_url("https://pypi.org/simple") == "http://127.0.0.1:20001/simple"
    assert proxied.canonical("index = http://127.0.0.1:20001/simple/x") == "index = https://pypi.org/simple/x"
    assert proxied.canonical("http://127.0.0.1:200012/") == "http://127.0.0.1:200012/"  # another port
    assert "http://127.0.0.1:20001" in proxied.hosts()
    assert proxied.never_used() == []  # shared with base: the prefix was used


@pytest.mark.slow
def test_the_cache_changes_nothing_in_the_locks(index, tmp_path, cli):
    """A run through the page cache (with an offline reuse on the second run) writes exactly the
    locks of a plain ``--online`` run."""
    index.add("alpha", "1.0", requires=("beta>=1",))
    index.add("beta", "1.0")
    index.add("beta", "1.1")
    index.publish()
    config = f"""
        index-url = "{index.index_url()}"
        [tool.lockgen.matrix]
        os = ["linux", "windows"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.11", "3.12", "3.13"]
    """
    texts = {}
    for mode in ("online", "cached"):
        root = write_project(tmp_path / mode, config, {"requirements.in.j2": "alpha\n"})
        extra = ["--online"] if mode == "online" else []
        for _ in range(2):  # the second run may reuse pages offline
            run = cli("all", "--force", "-C", str(root / "pyproject.toml"), *extra)
            assert run.code == 0, run.err
        texts[mode] = {
            p.relative_to(root).as_posix(): p.read_text() for p in sorted((root / "locks").rglob("*")) if p.is_file()
        }
    assert texts["online"] == texts["cached"]  # so no loopback port of the cache either
    lock = texts["cached"]["locks/linux-x86_64-cpu-py3.12.txt"]
    assert locked_versions(lock) == {"alpha": "1.0", "beta": "1.1"}
