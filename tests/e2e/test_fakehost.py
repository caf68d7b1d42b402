"""The fake package host itself: its pages, its HTTP behaviour, and that it stops at once."""

from __future__ import annotations

import http.client
import json
import re
import threading
from urllib.parse import urlsplit

import pytest

from tests.support.fakehost import JSON_TYPE, FakeHost


@pytest.fixture
def host(tmp_path):
    with FakeHost(tmp_path / "host") as fake:
        yield fake


def get(host: FakeHost, path: str, **headers) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(urlsplit(host.url).netloc, timeout=5)
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def hrefs(html: bytes) -> list[str]:
    return re.findall(r'href="([^"]+)"', html.decode())


def test_stops_at_once_with_a_keep_alive_connection_open(tmp_path):
    host = FakeHost(tmp_path / "host")
    host.wheel("files", "pkg", "1.0")
    connection = http.client.HTTPConnection(urlsplit(host.url).netloc, timeout=5)
    connection.request("GET", "/files/")
    connection.getresponse().read()  # the connection stays open (HTTP/1.1 keep-alive)
    stopping = threading.Thread(target=host.stop)
    stopping.start()
    stopping.join(timeout=10)  # a guard against a hang, not a timing: stop() waits for no poll
    assert not stopping.is_alive()
    host.stop()  # idempotent
    connection.close()
    with pytest.raises(OSError):  # noqa: PT011 - a refused connection; its message differs per platform
        get(host, "/files/")


def test_json_when_asked_html_otherwise_and_never_304(host):
    wheel = host.wheel("files", "pkg", "1.0", requires_python=">=3.10")
    index = host.index_page("simple", [wheel], upload_time="2026-01-01T00:00:00Z")
    assert index == f"{host.url}/simple"
    status, headers, body = get(host, "/simple/pkg/", Accept=JSON_TYPE)
    assert status == 200 and headers["content-type"] == JSON_TYPE
    (entry,) = json.loads(body)["files"]
    assert entry["upload-time"] == "2026-01-01T00:00:00Z" and entry["requires-python"] == ">=3.10"
    assert entry["url"] == "/files/pkg-1.0-py3-none-any.whl" and len(entry["hashes"]["sha256"]) == 64
    status, headers, body = get(host, "/simple/pkg/", **{"If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"})
    assert status == 200 and headers["cache-control"] == "no-cache"
    assert b'data-requires-python="&gt;=3.10"' in body


def test_flat_page_link_styles(host):
    local = host.wheel("page", "torch", "2.13.0+cpu")
    elsewhere = host.wheel("files", "pkg", "1.0")
    host.flat_page("page", [local, elsewhere])
    assert hrefs((host.root / "page" / "index.html").read_bytes()) == [
        "torch-2.13.0%2Bcpu-py3-none-any.whl",
        "/files/pkg-1.0-py3-none-any.whl",
    ]
    host.flat_page("page", [local, elsewhere], links="relative", hashed=True)
    relative, other = hrefs((host.root / "page" / "index.html").read_bytes())
    assert relative.startswith("torch-2.13.0%2Bcpu-py3-none-any.whl#sha256=") and other.startswith(
        "../files/pkg-1.0-py3-none-any.whl#sha256="
    )
    url = host.flat_page("page", [local], links="absolute", mixed_case=True)
    assert url == f"{host.url}/page/"
    assert hrefs((host.root / "page" / "index.html").read_bytes()) == ["/page/Torch-2.13.0%2Bcpu-py3-none-any.whl"]
    assert get(host, "/page/Torch-2.13.0%2Bcpu-py3-none-any.whl")[0] == 200


def test_an_index_described_as_data(host):
    url = host.add("alpha", "1.0")
    host.add("beta", "2.0", source="extra", hashed=False)
    host.publish()
    assert (
        url == f"{host.url}/files/alpha-1.0-py3-none-any.whl"
        and get(host, "/files/alpha-1.0-py3-none-any.whl")[0] == 200
    )
    assert host.index_url() == f"{host.url}/pypi/simple" and host.flat_url("extra") == f"{host.url}/extra/"
    (link,) = hrefs(get(host, "/pypi/simple/alpha/")[2])
    assert link.startswith("../../../files/alpha-1.0-py3-none-any.whl#sha256=")
    assert hrefs(get(host, "/pypi/simple/")[2]) == ["alpha/"]
    assert hrefs(get(host, "/extra/")[2]) == ["../files/beta-2.0-py3-none-any.whl"]  # unhashed
