"""Mirrors: fetch from a mirror, write the canonical URL.

A mirror maps a canonical URL prefix to the prefix lockgen and uv fetch from instead (an
air-gapped or corporate mirror, or the loopback index of the hermetic tests). Every URL lockgen
hands to uv or fetches itself goes through :meth:`Mirrors.fetch_url`; everything it writes
(locks, manifest) goes through :meth:`Mirrors.canonical`, so locks never name a mirror.

Mirrors come from ``[tool.lockgen.mirrors]`` (canonical = mirror), the ``LOCKGEN_MIRRORS``
environment variable and ``--mirror CANONICAL=MIRROR`` (later ones win for the same canonical
prefix). The longest matching prefix applies. A prefix matches at a path-segment boundary only
(:func:`matches`): ``https://download.pytorch.org/whl/cu13`` is not a prefix of
``…/whl/cu130/torch/``, and ``https://pypi.org/simpl`` is not one of ``https://pypi.org/simple``.

Logins (:mod:`lockgen.runtime.credentials`) travel with the mirrors, because both decide how a URL
is fetched and neither may reach what lockgen writes: :meth:`Mirrors.fetch_url` puts a realm's
login inline, :meth:`Mirrors.file_url` puts an environment reference uv expands, and
:meth:`Mirrors.canonical` removes both from text read back. A mirror URL may carry its own login
(``--mirror https://pypi.org/simple=https://user:${TOKEN}@mirror.corp/simple``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lockgen.runtime.credentials import MASK, Logins, realm, resolve, split
from lockgen.runtime.errors import UsageError

__all__ = ["ENV_VAR", "Mirrors", "ambiguous", "build", "from_env", "matches", "parse"]

ENV_VAR = "LOCKGEN_MIRRORS"
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s;'\"<>`\\]+")
#: Characters that continue a URL's host, port or path segment (RFC 3986 unreserved, ``%``, ``:``,
#: ``@`` and the sub-delims that are not also punctuation around a URL in text, as ``'(),;`` are):
#: a prefix followed by one of them ends inside a segment (``http://m`` in ``http://m.evil``).
_SEGMENT = re.escape("-._~%!$&*+=:@")


def matches(url: str, prefix: str) -> bool:
    """Whether ``prefix`` (without a trailing slash) is a prefix of ``url`` at a path-segment
    boundary: ``url`` equals it, or continues with ``/``, ``?`` or ``#``."""
    return url.startswith(prefix) and (len(url) == len(prefix) or url[len(prefix)] in "/?#")


def _in_text(prefix: str) -> re.Pattern[str]:
    """``prefix`` where it occurs in text at a boundary (not followed by a URL character of the
    same segment): the text-wide form of :func:`matches`."""
    return re.compile(re.escape(prefix) + rf"(?![A-Za-z0-9{_SEGMENT}])")


#: What comes before an ``@`` in a mirror pair's part (``ci:TOKEN@mirror.corp``): a login even
#: without a scheme, never echoed.
_LOGIN_WITHOUT_SCHEME = re.compile(r"[^/=@\s]+@")


def parse(pairs: Iterable[str], where: str = "--mirror") -> dict[str, str]:
    """Parse ``CANONICAL=MIRROR`` strings (either may carry a login; :func:`build` splits it
    off). Raises :class:`UsageError` naming ``where``, with any login removed from the echo."""
    result = {}
    for text in pairs:
        canonical, sep, mirror = text.partition("=")
        if not sep or "://" not in canonical or not mirror.strip():
            shown = "=".join(split(part)[0] for part in text.split("=", 1))
            shown = _LOGIN_WITHOUT_SCHEME.sub(f"{MASK}@", shown)  # ci:TOKEN@host: no URL for split to see
            raise UsageError(
                f"{where} {shown!r}: write CANONICAL=MIRROR, e.g. https://pypi.org/simple=http://mirror/simple"
            )
        result[canonical.strip().rstrip("/")] = mirror.strip().rstrip("/")
    return result


def from_env(value: str | None) -> dict[str, str]:
    """``LOCKGEN_MIRRORS``: pairs separated by whitespace or commas."""
    return parse([p for p in re.split(r"[\s,]+", value or "") if p], ENV_VAR)


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, normalized (lower-case, no login or default port)."""
    from urllib.parse import urlsplit

    from lockgen.plan.identity import normalized

    parts = urlsplit(url)
    return normalized(f"{parts.scheme}://{parts.hostname or ''}" + (f":{parts.port}" if parts.port else ""))


def ambiguous(table: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """``(canonical, canonical, mirror)`` for every two canonical prefixes of ``table`` that
    map to one mirror prefix (compared normalized): a URL read back from that mirror could be
    either one's, so lockgen would write a URL nobody configured (issue 16)."""
    from lockgen.plan.identity import normalized

    seen: dict[str, str] = {}
    found = []
    for canonical, mirror in table.items():
        key = normalized(split(mirror)[0])
        if key in seen and normalized(seen[key]) != normalized(canonical):
            found.append((seen[key], canonical, mirror))
        seen.setdefault(key, canonical)
    return found


def _refuse_ambiguous(table: Mapping[str, str]) -> None:
    for first, second, mirror in ambiguous(table):
        raise UsageError(
            f"mirrors {first} and {second} both map to {mirror}; lockgen could not tell which of them a URL read "
            "back from that mirror belongs to: give each canonical prefix its own mirror prefix "
            f"(e.g. {mirror}/<name>)"
        )


def build(
    tables: Iterable[Mapping[str, str]],
    credentials: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Mirrors:
    """The mirrors of a run: ``tables`` (config, ``LOCKGEN_MIRRORS``, ``--mirror``; later ones win
    for the same canonical prefix) with their logins split off, plus the config's
    ``credentials`` (realm -> userinfo), expanded from ``environ`` (default: ``os.environ``).
    Raises :class:`UsageError` for two different logins for one realm, an unset variable, or two
    canonical prefixes on one mirror prefix (:func:`ambiguous`)."""
    raw = dict(credentials or {})
    table: dict[str, str] = {}
    for entries in tables:
        for canonical, mirror in entries.items():
            public = []
            for url in (canonical, mirror):
                bare, userinfo = split(url)
                public.append(bare.rstrip("/"))
                if userinfo is not None:
                    if raw.get(realm(bare), userinfo) != userinfo:
                        raise UsageError(f"two different logins for {realm(bare)} (mirrors); give one")
                    raw[realm(bare)] = userinfo
            table[public[0]] = public[1]
    _refuse_ambiguous(table)
    return Mirrors(table, resolve(raw, os.environ if environ is None else environ))


@dataclass(frozen=True)
class Mirrors:
    """Canonical prefix -> mirror prefix (public URLs), and the logins of the run."""

    table: Mapping[str, str] = field(default_factory=dict)
    logins: Logins = field(default_factory=Logins)
    used: set[str] = field(default_factory=set, compare=False, repr=False)  # canonical prefixes that served

    def __post_init__(self) -> None:  # a trailing slash must not make a prefix miss
        object.__setattr__(self, "table", {k.rstrip("/"): v.rstrip("/") for k, v in self.table.items()})

    def never_used(self) -> list[str]:
        """Canonical prefixes no fetched URL and no text read back went through (after a run:
        a typo would silently bypass an air-gapped mirror)."""
        return [c for c in self.table if c not in self.used]

    def hosts(self) -> set[str]:
        """``scheme://host[:port]`` of every mirror (normalized: :func:`lockgen.plan.identity.normalized`)."""
        return {_origin(m) for m in self.table.values()}

    def covers(self, url: str) -> bool:
        """Whether ``url`` (canonical) is fetched through a mirror: a canonical prefix matches it."""
        return any(matches(url, canonical) for canonical in self.table)

    def refuse_shadowed(self, named: Mapping[str, str]) -> None:
        """Refuse a configured canonical URL that no mirror maps but that lies under a mirror
        prefix (``named``: URL -> what names it, ``source 'vendor'``): every URL read back from
        that mirror, its own included, would be written as the mirror's canonical prefix, a URL
        nobody configured (issue 16: a mirror of a whole host that also serves the project's own
        index). Raises :class:`UsageError` naming both."""
        for url, what in named.items():
            if "://" not in url or self.covers(url):
                continue
            for canonical, mirror in self.table.items():
                if matches(url, mirror):
                    raise UsageError(
                        f"{url} ({what}) lies under the mirror {mirror} of {canonical}: lockgen would write its URLs "
                        f"as {canonical}{url[len(mirror) :]}, which nobody configured; give that mirror a narrower "
                        f"prefix, or a mirror of its own to {url}"
                    )

    def leftover(self, url: str, page: str | None = None) -> bool:
        """Whether ``url``, read back canonical, still names a mirror: it lies on a mirror's host
        and the page that listed it (``page``, canonical; None: unknown) was fetched through a
        mirror. A file an unmirrored index on the same host lists is a canonical URL of that
        index, not a mirror path (issue 16: a corporate host serves the mirror of PyPI and the
        project's own index)."""
        if _origin(url) not in self.hosts():
            return False
        return page is None or self.covers(page)

    def mirrored(self, url: str) -> str:
        """``url`` with the longest matching canonical prefix (:func:`matches`) replaced by its
        mirror (no login)."""
        for canonical in sorted(self.table, key=len, reverse=True):
            if matches(url, canonical):
                self.used.add(canonical)
                return self.table[canonical] + url[len(canonical) :]
        return url

    def fetch_url(self, url: str) -> str:
        """The URL to fetch ``url`` from: :meth:`mirrored`, with the login of the realm it lands
        on inline (for uv's command line and lockgen's own downloads; never written down)."""
        return self.logins.attach(self.mirrored(url))

    def file_url(self, url: str) -> str:
        """The URL to write for ``url`` into a file uv reads: :meth:`mirrored`, with an
        environment reference in place of a login (:meth:`uv_env` gives the variables)."""
        return self.logins.reference(self.mirrored(url))

    def rewrite(self, text: str) -> str:
        """``text`` (a rendered requirements file) with each URL in it as :meth:`file_url` gives
        it: a direct reference written in a template is fetched through the mirrors too. A login
        written in the template itself stays (uv expands its ``${VAR}``)."""

        def one(match: re.Match[str]) -> str:
            url = match.group(0)
            return url if split(url)[1] is not None else self.file_url(url)

        return _URL.sub(one, text)

    def uv_env(self, indexes: Mapping[str, str] | None = None) -> dict[str, str]:
        """Variables uv needs for the logins: the references of :meth:`file_url`, and uv's own
        ``UV_INDEX_<NAME>_USERNAME``/``_PASSWORD`` for each explicit index (name -> canonical URL)."""
        env = self.logins.env()
        for name, url in (indexes or {}).items():
            env.update(self.logins.index_env(name, self.mirrored(url)))
        return env

    def scrub(self, text: str) -> str:
        """``text`` without logins (uv writes them into its outputs); mirror URLs stay."""
        return self.logins.scrub(text)

    def canonical(self, text: str) -> str:
        """``text`` without logins, with every mirror prefix turned back into its canonical prefix
        (where it ends at a segment boundary: a mirror ``http://m/whl/cu13`` leaves
        ``http://m/whl/cu130/…`` alone)."""
        text = self.scrub(text)
        for canonical, mirror in sorted(self.table.items(), key=lambda kv: len(kv[1]), reverse=True):
            pattern = _in_text(mirror)
            if pattern.search(text):
                self.used.add(canonical)
                text = pattern.sub(canonical.replace("\\", r"\\"), text)  # a literal replacement
        return text

    def merged(self, *more: Mapping[str, str]) -> Mirrors:
        table = dict(self.table)
        for extra in more:
            table.update(extra)
        _refuse_ambiguous(table)
        return Mirrors(table, self.logins)

    def __bool__(self) -> bool:
        return bool(self.table)
