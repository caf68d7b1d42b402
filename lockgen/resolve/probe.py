"""Probe the hosts a run needs, once, before any uv process starts (CASES C28, issue 8 item 7).

An unreachable host otherwise costs uv's retries in every cell (26 cells: 107 s) and prints the
same error chain per cell. :func:`probe` opens one connection per host the run's cells need (the
default index, find-links pages, backend indexes, ``urls`` sources' and direct wheel URLs;
through the mirrors) at the same time, with a short timeout: a host whose name does not
resolve, that refuses or times out the connection is *down*. Any answer at all (an HTTP error, a slow body, a TLS certificate uv may
trust but lockgen does not check) counts as reachable: uv then says what is wrong with it.

:class:`Reach` is the result: which cells cannot resolve at all (a host their main resolution
needs is down: they fail at once, without uv, with one message per host) and which optional
layers cannot be had (a host only that layer needs is down: the layer is unavailable with a
retry reason, as if uv had failed to reach it, without running uv).

Messages name the canonical host only (no mirror address, no credentials): they end up in the
manifest's failure reasons and in lock headers, which hold no host detail. The mirror's URL
(credentials removed) is said once per run instead, as a warning (:meth:`Down.warning`).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from lockgen.index.client import reach
from lockgen.plan import reqline
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.plan.sources import applies
from lockgen.resolve.inputs import url_pins
from lockgen.runtime.credentials import redact

__all__ = ["TIMEOUT", "Down", "Reach", "host_of", "layer_urls", "main_urls", "probe"]

log = logging.getLogger("lockgen")

#: Seconds to wait for a connection (and for a first answer) before a host counts as down. uv
#: waits 30 s per attempt and tries 4 times; a reachable host connects in well under a second.
TIMEOUT = 5.0


#: pip's VCS URL prefixes (``git+https://github.com/o/r.git@rev``): the transport after the ``+``
#: is what connects to the host.
_VCS = ("git+", "hg+", "svn+", "bzr+")


def web_url(url: str) -> str:
    """``url`` without a VCS prefix (``git+https://h/r.git@v`` -> ``https://h/r.git@v``): what
    a connection to its host is opened with."""
    for prefix in _VCS:
        if url.startswith(prefix):
            return url[len(prefix) :]
    return url


def host_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, also one behind a VCS prefix (``git+https://``:
    ai-toolkit's ``git+https://github.com/huggingface/diffusers.git@…`` line), without credentials;
    None for anything else (a project folder, ``file://``, ``git+ssh://``)."""
    parts = urlsplit(web_url(url))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def _direct_urls(plan: Plan) -> list[str]:
    """URLs of direct references in the rendered inputs that apply to the cell's target, which
    uv fetches: ``pkg @ https://…`` and a bare archive URL with or without a marker
    (``https://github.com/…/pkg-1.0-py3-none-linux_x86_64.whl; platform_system == "Linux"``, as
    pip reads it: text-generation-webui's files name their GitHub release wheels so)."""
    urls = []  # also VCS URLs (``git+https://…``, bare or after ``name @``): uv clones them
    for _, text in plan.rendered.files.values():
        for line in text.splitlines():
            req = reqline.requirement(line)
            if req is not None:
                url, marker = req.url, req.marker
            else:
                url, _, rest = reqline.strip_comment(line).strip().partition(";")
                url = url.strip() if host_of(url.strip()) else None
                try:
                    marker = Marker(rest) if rest.strip() else None
                except InvalidMarker:
                    marker = None  # uv says what is wrong with it
            if url and applies(marker, plan.target):
                urls.append(url)
    return urls


def main_urls(plan: Plan) -> tuple[str, ...]:
    """Canonical URLs the main resolution of ``plan`` reads: the default index, the find-links
    pages, the backend indexes its requirements are pinned to (uv explicit indexes: issue 16, a
    dead backend index cost every cell uv's retries), the wheel URL of each ``urls``-source
    package the main requirements name that fits the target, and the direct references of its
    inputs."""
    indexes = {source.urls[0]: None for source, _ in plan.inputs.index_pins if source.urls}
    # the URL each package the main requirements name gets for this target (a package only an optional
    # entry names is the layer's: its host down makes that layer unavailable, not the cell failed)
    wheels = [pin.url for pin in url_pins(plan) if pin.direct]
    return (plan.inputs.index_url, *plan.inputs.main_find_links, *indexes, *wheels, *_direct_urls(plan))


def layer_urls(plan: Plan, entry: str) -> tuple[str, ...]:
    """Canonical URLs the optional layer of ``entry`` reads beyond the main resolution's: the
    layer-only sources serving it, the index of an ``index`` source or the wheel URLs of a
    ``urls`` source serving it, or the entry itself when it is a URL."""
    if "://" in entry:
        return (entry,)
    try:
        name = canonicalize_name(Requirement(entry).name)
    except InvalidRequirement:
        return ()
    served = plan.inputs.served_by.get(name)
    extra = served.urls if served is not None and served.kind in ("urls", "index") else ()
    main = set(main_urls(plan))
    return tuple(u for u in (*plan.layer_find_links(name), *extra) if u not in main)


@dataclass(frozen=True)
class Down:
    """A host the run could not connect to: its canonical ``host``, whether it was fetched
    through a ``mirror`` and ``why`` (``connection refused``, ``its name does not resolve``);
    ``via``: the mirror URL that was fetched, credentials removed ("" without a mirror)."""

    host: str
    why: str
    mirror: bool = False
    via: str = ""

    def warning(self) -> str | None:
        """The line that names the mirror (not committed, unlike :meth:`message`), or None."""
        if not self.mirror:
            return None
        return f"the mirror for {self.host} does not answer: {self.via or 'its URL'} ({self.why})"

    def message(self) -> str:
        """One line, the same for every cell it hits (the summary groups them)."""
        if self.mirror:
            return (
                f"{self.host} is unreachable through its mirror ({self.why}); no uv process was started. "
                f"Check that the mirror is up, or point it elsewhere: --mirror {self.host}=<mirror URL>"
            )
        return (
            f"{self.host} is unreachable ({self.why}); no uv process was started. Check the network, "
            f"or fetch it from a mirror: --mirror {self.host}=<mirror URL>"
        )


@dataclass(frozen=True)
class Reach:
    """What :func:`probe` found: canonical host -> :class:`Down`, for the hosts that are down."""

    down: Mapping[str, Down] = field(default_factory=dict)

    def blocking(self, urls: Iterable[str]) -> list[Down]:
        """The down hosts among ``urls`` (canonical), in order, each once."""
        hosts = dict.fromkeys(h for h in (host_of(u) for u in urls) if h)
        return [self.down[h] for h in hosts if h in self.down]

    def main_failure(self, plan: Plan) -> str | None:
        """Why ``plan``'s cell cannot resolve at all (a host its main resolution needs is down),
        as ``cell <name>: <one line>``; None when every such host answered."""
        hosts = self.blocking(main_urls(plan))
        if not hosts:
            return None
        return f"cell {plan.cell.name}: " + "; ".join(d.message() for d in hosts)

    def layer_failure(self, plan: Plan, entry: str) -> str | None:
        """Why the optional layer of ``entry`` cannot be had (a host only it needs is down)."""
        hosts = self.blocking(layer_urls(plan, entry))
        return "; ".join(f"{d.host} is unreachable ({d.why})" for d in hosts) or None


def probe(plans: Sequence[Plan], mirrors: Mirrors, timeout: float = TIMEOUT) -> Reach:
    """Connect once to every host ``plans`` need (through ``mirrors``), all at once; returns the
    hosts that are down. Takes at most about ``timeout`` seconds. The threads are daemons, so a
    Ctrl-C during the probe is not held up by them."""
    wanted: dict[str, str] = {}  # canonical host -> the URL to fetch
    for plan in plans:
        urls = [*main_urls(plan), *(u for entry in plan.optional for u in layer_urls(plan, entry))]
        for url in urls:
            host = host_of(url)
            if host and host not in wanted:
                wanted[host] = mirrors.fetch_url(web_url(url))
    results: queue.Queue[tuple[str, str | None]] = queue.Queue()
    for host, url in wanted.items():
        threading.Thread(target=lambda h=host, u=url: results.put((h, reach(u, timeout))), daemon=True).start()
    down = {}
    for _ in wanted:
        host, why = results.get()
        if why is not None:
            mirrored = host_of(wanted[host]) != host
            down[host] = Down(host=host, why=why, mirror=mirrored, via=redact(wanted[host]) if mirrored else "")
            log.debug("probe: %s is down (%s)", wanted[host], why)
    return Reach(down=dict(sorted(down.items())))
