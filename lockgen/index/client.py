"""The one HTTP client lockgen talks to package hosts with (uv's ``uv-client`` is the model).

Every request lockgen makes itself (pages, metadata files, range reads, downloads, ``check
--online``, the OSV API and its exports, bundles, provenance) goes through a :class:`Client`:

* **where**: a canonical URL is fetched from its mirror with the realm's login inline
  (:meth:`~lockgen.plan.mirror.Mirrors.fetch_url`), else a netrc entry (``NETRC``, else
  ``~/.netrc``, as curl, pip and uv read); URLs handed back are canonical again; errors name the
  canonical host only, never a login;
* **TLS**: one context per process (:mod:`lockgen.index.tls`);
* **time**: each request has ``timeout`` seconds (connect, and between two reads) *and* must end
  by the client's ``deadline`` (seconds from the client's creation, for the whole command): a
  host that never answers costs at most the deadline, and so does one that trickles a byte at a
  time (the body is read in chunks and the clock checked after each; past ``timeout`` seconds a
  body must average :data:`MIN_RATE` bytes a second, so a trickle ends without a deadline too). ``LOCKGEN_HTTP_TIMEOUT``
  and ``LOCKGEN_DEADLINE`` (seconds) lower both for every command (as ``UV_HTTP_TIMEOUT`` does
  for uv);
* **size**: every body is streamed and bounded (``max_body`` bytes, per call overridable); a
  body over the bound, or cut short (fewer bytes than its ``Content-Length``), is an error, never
  a short result;
* **redirects** are followed here, judged one by one: at most :data:`MAX_REDIRECTS`, never from
  ``https`` to ``http``, and a hop to another host carries no login (the URL's userinfo is
  dropped and netrc is asked for the new host only); the hops are kept (:attr:`Reply.hops`) so a
  caller can tell a permanent move (301, 308) from a CDN's temporary one;
* :meth:`Client.head` asks ``HEAD`` and, when the host refuses it with any HTTP error (403, 405,
  501, …), asks again with a ranged ``GET`` (``Range: bytes=0-0``), as release-asset hosts want.

Transport failures raise :class:`HostError` with a ``kind`` (:class:`Failure`); an HTTP status is
an answer (:attr:`Reply.status`), for the caller to judge. Nothing here retries: the callers
that retry (``check --online``) do so within the same deadline.
"""

from __future__ import annotations

import enum
import errno
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from lockgen.plan.mirror import Mirrors
from lockgen.runtime.errors import Interrupted, LockgenError

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_BODY", "MAX_REDIRECTS", "Client", "Failure", "HostError", "Reply", "capped", "pool", "reach"]

log = logging.getLogger("lockgen.client")

#: Bytes a body may have unless the caller says otherwise (a PyPI JSON page of torch is ~1 MB).
MAX_BODY = 64 * 1024 * 1024
#: Redirects followed per request (uv and pip follow up to 10 and 30; a loop ends here).
MAX_REDIRECTS = 10
#: Seconds per request (connect, and between two reads) unless the caller says otherwise.
TIMEOUT = 30.0
#: Bytes a second a body must average once it has taken ``timeout`` seconds (a host that
#: trickles a byte at a time never trips the timeout between reads; curl's ``--speed-limit``).
MIN_RATE = 1024


class Failure(str, enum.Enum):
    """Why a request gave no answer."""

    UNREACHABLE = "unreachable"  # no connection (name, refused, TLS, proxy)
    TIMEOUT = "timeout"  # no byte within the per-request timeout
    DEADLINE = "deadline"  # the client's overall deadline was spent
    TOO_LARGE = "too-large"  # the body is over its bound
    CUT_SHORT = "cut-short"  # the body ended before its Content-Length
    REDIRECT = "redirect"  # a redirect refused: a loop, too many, https to http, no Location


class HostError(LockgenError):
    """A host gave no usable answer: ``kind`` says why, ``url`` is canonical (no login).
    Exit code 1: the run failed, the user's input was fine."""

    exit_code = 1

    def __init__(self, kind: Failure, url: str, detail: str) -> None:
        super().__init__(f"{_host(url)}: {detail}")
        self.kind, self.url, self.detail = kind, url, detail


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: the canonical ``url`` it came from (after redirects), its ``status``,
    ``headers`` (lower-case names), ``body`` (empty for HEAD and for :meth:`Client.download`) and
    the redirect ``hops`` followed on the way, ``(status, canonical location)`` each; ``fetched``
    is the URL really asked last (a mirror's, without login): relative links resolve against it."""

    url: str
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    hops: tuple[tuple[int, str], ...] = ()
    fetched: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class Client:
    """One client for a command (see the module docstring). ``timeout``: seconds per request;
    ``deadline``: seconds for everything this client does (None: no overall bound);
    ``max_body``: bytes per body; ``stop``: set (Ctrl-C) to end a read at its next chunk
    (:class:`~lockgen.runtime.errors.Interrupted`). Thread-safe; use it as a context manager."""

    def __init__(self, mirrors: Mirrors | None = None, *, timeout: float = TIMEOUT, deadline: float | None = None,
                 max_body: int = MAX_BODY, stop: threading.Event | None = None) -> None:  # fmt: skip
        self.mirrors = mirrors if mirrors is not None else Mirrors()
        timeout, deadline = _bounded(timeout, deadline, os.environ)
        self.timeout, self.max_body, self.stop = timeout, max_body, stop
        self.ends = None if deadline is None else time.monotonic() + deadline
        self.requests = 0
        self._lock = threading.Lock()
        self._http: httpx.Client | None = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()

    def left(self) -> float:
        """Seconds left before the deadline (inf without one)."""
        return float("inf") if self.ends is None else self.ends - time.monotonic()

    def get(self, url: str, headers: Mapping[str, str] | None = None, max_body: int | None = None) -> Reply:
        """``GET url`` (canonical), its body read whole within the bounds. Raises :class:`HostError`."""
        return self.request("GET", url, headers, max_body=max_body)

    def post(self, url: str, json: Any, max_body: int | None = None) -> Reply:
        """``POST url`` with a JSON body (an API such as OSV's). Raises :class:`HostError`."""
        return self.request("POST", url, {"Content-Type": "application/json"}, max_body=max_body, json=json)

    def head(self, url: str, headers: Mapping[str, str] | None = None) -> Reply:
        """``HEAD url``; on any refusal (HTTP 400 or more) a ranged ``GET`` of the first byte
        instead, its body unread (release-asset hosts answer HEAD with 403; some 405 or 501).
        Raises :class:`HostError`."""
        reply = self.request("HEAD", url, headers)
        if reply.status < 400:
            return reply
        # the body is never read: a host that ignores Range answers 200 with the whole file
        return self.request("GET", url, {**(headers or {}), "Range": "bytes=0-0"}, body=False)

    def download(self, url: str, sink: Callable[[bytes], None], max_body: int | None = None,
                 headers: Mapping[str, str] | None = None) -> Reply:  # fmt: skip
        """``GET url`` with each chunk of the body handed to ``sink`` (a hash, a file), not kept.
        Raises :class:`HostError` (a file over ``max_body`` or cut short) and
        :class:`~lockgen.runtime.errors.Interrupted` (``stop`` set)."""
        return self.request("GET", url, headers, max_body=max_body, sink=sink)

    def request(self, method: str, url: str, headers: Mapping[str, str] | None = None, *,
                max_body: int | None = None, sink: Callable[[bytes], None] | None = None,
                json: Any = None, body: bool = True) -> Reply:  # fmt: skip
        """One request with its redirects judged and followed; see the public methods. With
        ``body=False`` only the status and headers are read (as for ``HEAD``)."""
        import httpx

        bound = self.max_body if max_body is None else max_body
        fetch = self.mirrors.fetch_url(url)
        hops: list[tuple[int, str]] = []
        seen = {fetch}
        while True:
            with self._lock:
                self.requests += 1
            status, answered, content = self._once(method, url, fetch, headers, bound, sink, json, httpx, body)
            location = answered.get("location")
            if status not in (301, 302, 303, 307, 308) or (method == "HEAD" and location is None):
                return Reply(url=self.mirrors.canonical(_public(fetch)), status=status, headers=answered,
                             body=content, hops=tuple(hops), fetched=_public(fetch))  # fmt: skip
            if not location:
                raise HostError(Failure.REDIRECT, url, f"HTTP {status} without a Location")
            following = urljoin(fetch, location)
            if _downgrade(fetch, following, self.mirrors):
                raise HostError(
                    Failure.REDIRECT, url, f"redirected from https to {urlsplit(following).scheme}; refused"
                )
            if len(hops) >= MAX_REDIRECTS or following in seen:
                why = "a redirect loop" if following in seen else f"more than {MAX_REDIRECTS} redirects"
                raise HostError(Failure.REDIRECT, url, f"{why}; refused")
            if urlsplit(following).hostname != urlsplit(fetch).hostname:
                following = _public(following)  # another host gets no login
            seen.add(following)
            hops.append((status, self.mirrors.canonical(_public(following))))
            fetch = following
            if status == 303:
                method, json = "GET", None

    def _once(self, method: str, url: str, fetch: str, headers: Mapping[str, str] | None, bound: int,
              sink: Callable[[bytes], None] | None, json: Any, httpx: Any, body: bool = True,
              ) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
        left = self.left()
        if left <= 0:
            raise HostError(Failure.DEADLINE, url, "not asked: the time allowed (the deadline) was spent")
        wait = min(self.timeout, left)
        started = time.monotonic()
        ends = started + left
        chunks: list[bytes] = []
        try:
            with self._client().stream(method, fetch, headers=dict(headers or {}), json=json, auth=_netrc(fetch),
                                       timeout=httpx.Timeout(wait)) as response:  # fmt: skip
                length = response.headers.get("content-length", "")
                read = body and method != "HEAD"
                if length.isdigit() and int(length) > bound and read and response.status_code < 300:
                    raise HostError(
                        Failure.TOO_LARGE, url, f"its answer has {int(length)} bytes, over the bound of {bound}"
                    )
                size = 0
                if read and not 300 <= response.status_code < 400:
                    for chunk in response.iter_bytes():  # decoded: a compressed bomb is bounded too
                        size += len(chunk)
                        if size > bound:
                            raise HostError(Failure.TOO_LARGE, url, f"its answer is over the bound of {bound} bytes")
                        if self.stop is not None and self.stop.is_set():
                            raise Interrupted(f"interrupted while downloading {self.mirrors.canonical(_public(fetch))}")
                        now = time.monotonic()
                        if now > ends:
                            raise HostError(Failure.DEADLINE, url, "the answer did not end within the time allowed")
                        if now - started > wait and size < MIN_RATE * (now - started):
                            raise HostError(
                                Failure.TIMEOUT, url, f"the answer trickles: {size} bytes in {now - started:.0f} s"
                            )
                        if sink is not None and response.status_code < 300:
                            sink(chunk)
                        else:
                            chunks.append(chunk)
                return response.status_code, {k.lower(): v for k, v in response.headers.items()}, b"".join(chunks)
        except httpx.TimeoutException:
            kind = Failure.DEADLINE if self.left() <= 0.05 else Failure.TIMEOUT
            raise HostError(kind, url, f"no answer within {wait:g} s") from None
        except httpx.RemoteProtocolError as exc:
            raise HostError(Failure.CUT_SHORT, url, f"the answer was cut short ({_first_line(exc)})") from None
        except httpx.HTTPError as exc:
            raise HostError(
                Failure.UNREACHABLE, url, f"could not be reached ({_why(exc) or type(exc).__name__})"
            ) from None

    def _client(self) -> httpx.Client:
        with self._lock:
            if self._http is None:
                self._http = pool(self.timeout)
            return self._http


def _bounded(timeout: float, deadline: float | None, environ: Mapping[str, str]) -> tuple[float, float | None]:
    """``(timeout, deadline)`` capped by ``LOCKGEN_HTTP_TIMEOUT`` and ``LOCKGEN_DEADLINE``
    (seconds; the smaller wins; a value that is not a positive number is ignored)."""

    def seconds(name: str) -> float | None:
        try:
            value = float(environ.get(name, ""))
        except ValueError:
            return None
        return value if value > 0 else None

    cap, overall = seconds("LOCKGEN_HTTP_TIMEOUT"), seconds("LOCKGEN_DEADLINE")
    timeout = min(timeout, cap) if cap is not None else timeout
    if overall is not None:
        deadline = overall if deadline is None else min(deadline, overall)
    return timeout, deadline


def capped(response: Any, url: str, bound: int = MAX_BODY, timeout: float = TIMEOUT) -> bytes:
    """The body of a streamed ``httpx`` response, at most ``bound`` bytes (decoded: a compressed
    bomb is bounded too), and bounded in time as :class:`Client` bounds its bodies: past
    ``timeout`` seconds (capped by ``LOCKGEN_HTTP_TIMEOUT``) it must average :data:`MIN_RATE`
    (a host that trickles a byte at a time never trips the read timeout). Raises
    :class:`HostError` (``too-large``, ``timeout``). For the page cache, which keeps its own
    connection pools (one per origin)."""
    timeout = _bounded(timeout, None, os.environ)[0]
    started = time.monotonic()
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > bound:
            raise HostError(Failure.TOO_LARGE, url, f"its answer is over the bound of {bound} bytes")
        spent = time.monotonic() - started
        if spent > timeout and len(body) < MIN_RATE * spent:
            raise HostError(Failure.TIMEOUT, url, f"the answer trickles: {len(body)} bytes in {spent:.0f} s")
    return bytes(body)


def pool(timeout: float, connections: int = 16) -> httpx.Client:
    """An ``httpx.Client``: HTTP/1.1 (httpx's HTTP/2 over threads was 10x slower here:
    docs/benchmarks.md), the shared TLS context, no redirects followed (the caller judges them).
    For :class:`Client` and the page cache's upstream connections."""
    import httpx

    from lockgen.index import tls

    timeout, _ = _bounded(timeout, None, os.environ)
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.Client(verify=tls.context(), limits=limits, timeout=httpx.Timeout(timeout, connect=min(timeout, 15)),
                        follow_redirects=False)  # fmt: skip


def reach(url: str, timeout: float) -> str | None:
    """Why ``url``'s host cannot be connected to within ``timeout`` seconds (a short, stable
    reason); None when it answered at all (an HTTP error, a TLS certificate lockgen does not
    check here: uv says what is wrong with it). For the host probe (CASES C28)."""
    import httpx

    try:
        with httpx.Client(timeout=timeout, verify=False, follow_redirects=False) as client:
            client.head(url)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.ProxyError) as exc:
        return _why(exc, timeout)
    except httpx.HTTPError:
        return None
    return None


def _why(exc: BaseException, timeout: float | None = None) -> str | None:
    """A short, stable reason for a failed connection (None: a TLS problem, so it answered)."""
    import httpx

    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    if any(isinstance(e, ssl.SSLError) for e in chain):
        return None if timeout is not None else "TLS failed"
    if isinstance(exc, httpx.ConnectTimeout) or any(isinstance(e, (TimeoutError, socket.timeout)) for e in chain):
        return f"no connection within {timeout:g} s" if timeout is not None else "no connection in time"
    if isinstance(exc, httpx.ProxyError):
        return f"the proxy failed: {exc}"
    if any(isinstance(e, socket.gaierror) for e in chain) or "name or service not known" in str(exc).lower():
        return "its name does not resolve"
    codes = {getattr(e, "errno", None) for e in chain}
    if isinstance(exc, ConnectionRefusedError) or errno.ECONNREFUSED in codes or "refused" in str(exc).lower():
        return "connection refused"
    if codes & {errno.ENETUNREACH, errno.EHOSTUNREACH}:
        return "no route to it"
    return _first_line(exc) or type(exc).__name__


def _netrc(url: str) -> Any:
    """httpx auth from a netrc file (``NETRC``, else ``~/.netrc``) for a URL without a login of
    its own; None when there is no such file or it cannot be read."""
    import httpx

    if "@" in urlsplit(url).netloc:
        return None
    path = Path(os.environ.get("NETRC") or Path.home() / ".netrc")
    if not path.is_file():
        return None
    try:
        return httpx.NetRCAuth(str(path))
    except Exception as exc:  # netrc.NetrcParseError, OSError: go without, say why with -v
        log.debug("netrc file %s not used: %s", path, exc)
        return None


def _downgrade(fetch: str, following: str, mirrors: Mirrors) -> bool:
    """Whether a redirect from ``fetch`` to ``following`` leaves https: on the wire, or, off the
    mirror's host, for the canonical URL (a plain-http mirror of an https source stands for
    https: it may move a file on its own host, not hand it to a plain-http one elsewhere)."""
    asked, going = urlsplit(fetch), urlsplit(following)
    if asked.scheme == "https":
        return going.scheme != "https"
    if (going.scheme, going.netloc) == (asked.scheme, asked.netloc):
        return False
    return urlsplit(mirrors.canonical(_public(fetch))).scheme == "https" and going.scheme != "https"


def _public(url: str) -> str:
    """``url`` without ``user:password@``."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])) if "@" in parts.netloc else url


def _host(url: str) -> str:
    return urlsplit(url).netloc.rpartition("@")[2] or url


def _first_line(exc: BaseException) -> str:
    return str(exc).split("\n", 1)[0]
