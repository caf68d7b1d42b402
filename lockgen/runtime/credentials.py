"""Credentials in URL fields: kept out of everything lockgen writes, put back only to fetch.

Any URL field (``index-url``, ``find-links``, source URLs, ``[mirrors]``, ``LOCKGEN_MIRRORS``,
``--mirror``) may carry a login as ``https://user:password@host/…`` or as environment references
``https://${USER}:${TOKEN}@host/…`` (issue 9, item 8). lockgen splits every such URL once
(:func:`split`): the public URL, without its userinfo, is what plans, input hashes, locks,
manifest, rendered files and messages see, so a password change never makes a lock stale; the
userinfo is kept per realm (scheme, host and port, as uv keys credentials) in a plain mapping
(``Config.credentials``). At run time :func:`resolve` expands the ``${VAR}`` references from the
environment into :class:`Logins`, which :class:`~lockgen.plan.mirror.Mirrors` uses to fetch:

* a URL lockgen or uv fetches directly (command line, :mod:`lockgen.index.client`) gets the userinfo inline
  (:meth:`Logins.attach`);
* a URL written into a file uv reads gets an environment reference
  (``${LOCKGEN_CREDENTIALS_0}@``, which uv expands in requirements files; :meth:`Logins.reference`)
  and the variable goes to uv's environment (:meth:`Logins.env`), so no file under ``.lockgen/``
  holds a secret; an explicit index gets uv's ``UV_INDEX_<NAME>_USERNAME``/``_PASSWORD``.

:func:`redact` is the safety net for text shown to people or read back from uv (logs, errors,
uv's outputs): it drops the userinfo of URLs that carry a password, an environment reference or a
known login, and masks every known secret value (:data:`MASK`).
"""

from __future__ import annotations

import logging
import re
import shlex
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from lockgen.runtime.errors import UsageError

__all__ = [
    "ENV_PREFIX", "MASK", "Logins", "RedactFilter", "command_line", "env_references", "realm", "redact", "remember",
    "resolve", "split",
]  # fmt: skip

#: What a known secret becomes in text lockgen shows.
MASK = "****"
#: uv's environment gets one ``LOCKGEN_CREDENTIALS_<n>`` variable per realm with a login.
ENV_PREFIX = "LOCKGEN_CREDENTIALS_"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: ``scheme://userinfo@`` in free text (uv's messages mask passwords as ``****``, which still counts).
_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s/@'\"<>`]+)@(?P<host>[^\s/'\"<>`?#@]*)"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}

_known: set[str] = set()
_known_lock = threading.Lock()


def split(url: str) -> tuple[str, str | None]:
    """``(public URL, userinfo)`` of ``url``: the URL without ``user:password@`` and that
    userinfo as written (``None`` when there is none, and for a folder path)."""
    if "://" not in url:
        return url, None
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    return urlunsplit(parts._replace(netloc=host)), userinfo


def realm(url: str) -> str:
    """``scheme://host[:port]`` of a URL (lower case, default port dropped, userinfo ignored):
    where a login applies (uv keys its credentials the same way)."""
    parts = urlsplit(split(url)[0])
    host = parts.netloc.lower()
    scheme = parts.scheme.lower()
    default = _DEFAULT_PORTS.get(scheme)
    if default is not None and host.endswith(f":{default}"):
        host = host[: -len(f":{default}")]
    return f"{scheme}://{host}"


def env_references(text: str) -> list[str]:
    """Names of the ``${VAR}`` references in ``text``, in order."""
    return _ENV_REF.findall(text)


@dataclass(frozen=True)
class Logins:
    """Expanded logins by realm (``user:password`` as it goes into a URL, percent-encoded)."""

    by_realm: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        remember(self.secrets())

    def _numbers(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(sorted(self.by_realm))}

    def login(self, url: str) -> str | None:
        """The userinfo for ``url``'s realm, if a login was given for it."""
        return self.by_realm.get(realm(url)) if "://" in url else None

    def attach(self, url: str) -> str:
        """``url`` with the login of its realm inline (unchanged when it has none, or a userinfo
        already): for URLs on uv's command line and lockgen's own downloads."""
        login = self.login(url)
        if login is None or split(url)[1] is not None:
            return url
        parts = urlsplit(url)
        return urlunsplit(parts._replace(netloc=f"{login}@{parts.netloc}"))

    def reference(self, url: str) -> str:
        """``url`` with an environment reference in place of its realm's login
        (``http://${LOCKGEN_CREDENTIALS_0}@host/…``): for URLs written into files uv reads (uv
        expands ``${VAR}`` in requirements files); :meth:`env` gives the variables."""
        login = self.login(url)
        if login is None or split(url)[1] is not None:
            return url
        parts = urlsplit(url)
        number = self._numbers()[realm(url)]
        return urlunsplit(parts._replace(netloc=f"${{{ENV_PREFIX}{number}}}@{parts.netloc}"))

    def env(self) -> dict[str, str]:
        """The ``LOCKGEN_CREDENTIALS_<n>`` variables :meth:`reference` points at."""
        return {f"{ENV_PREFIX}{n}": self.by_realm[name] for name, n in self._numbers().items()}

    def index_env(self, name: str, url: str) -> dict[str, str]:
        """uv's ``UV_INDEX_<NAME>_USERNAME``/``_PASSWORD`` for the explicit index ``name`` at
        ``url`` (uv's ``IndexName::to_env_var``: letters and digits upper-cased, the rest ``_``)."""
        login = self.login(url)
        if login is None:
            return {}
        user, _, password = login.partition(":")
        key = "".join(c.upper() if c.isascii() and c.isalnum() else "_" for c in name)
        env = {f"UV_INDEX_{key}_USERNAME": unquote(user)}
        if password:
            env[f"UV_INDEX_{key}_PASSWORD"] = unquote(password)
        return env

    def secrets(self) -> set[str]:
        """The values no text lockgen shows may hold: each password (encoded and decoded) and a
        user name given without a password (a token)."""
        found: set[str] = set()
        for login in self.by_realm.values():
            user, colon, password = login.partition(":")
            for value in (password,) if colon else (user,):
                found.update(v for v in (value, unquote(value)) if len(v) >= 3)
        return found

    def scrub(self, text: str) -> str:
        """``text`` without credentials: :func:`redact` with these logins' realms and secrets."""
        return redact(text, self.secrets(), set(self.by_realm))


def resolve(table: Mapping[str, str], environ: Mapping[str, str]) -> Logins:
    """Expand the ``${VAR}`` references of ``table`` (realm -> userinfo as written) from
    ``environ``; an expanded value is percent-encoded, as a URL's userinfo must be. Raises
    :class:`UsageError` naming every unset variable and the realm that needs it (never a value)."""
    missing: list[str] = []
    logins = {}
    for name, userinfo in sorted(table.items()):

        def value(match: re.Match[str], where: str = name) -> str:
            var = match.group(1)
            if var not in environ:
                missing.append(f"${{{var}}} (credentials for {where})")
                return ""
            return quote(environ[var], safe="")

        logins[name] = _ENV_REF.sub(value, userinfo)
    if missing:
        raise UsageError(
            f"credentials refer to unset environment variables: {', '.join(dict.fromkeys(missing))}; "
            "set them (lockgen expands them at run time and never writes them back)"
        )
    return Logins(logins)


def remember(secrets: Iterable[str]) -> None:
    """Add values :func:`redact` masks everywhere in this process (log lines, error messages)."""
    with _known_lock:
        _known.update(s for s in secrets if s)


def command_line(argv: Sequence[str]) -> str:
    """``argv`` as one shell-quoted line without credentials (:func:`redact`): the one form in
    which lockgen shows, logs or stores a command line (install's output and ``--dry-run``, ``-v``
    logs of uv and the installers, the install record)."""
    return redact(shlex.join(argv))


def redact(text: str, secrets: Iterable[str] = (), realms: Iterable[str] = ()) -> str:
    """``text`` with every URL's userinfo dropped where it holds a password (masked or not), an
    environment reference or a login of ``realms``, and every secret (``secrets`` and those
    :func:`remember` was given) replaced by :data:`MASK`. A plain user name such as ``git@`` of
    an SSH URL stays: it is part of the address, not a secret."""
    known = set(realms)

    def strip(match: re.Match[str]) -> str:
        scheme, userinfo, host = match.group("scheme", "userinfo", "host")
        if ":" in userinfo or "${" in userinfo or realm(scheme + host) in known:
            return scheme + host
        return match.group(0)

    text = _USERINFO.sub(strip, text)
    with _known_lock:
        values = set(secrets) | _known
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


class RedactFilter(logging.Filter):
    """A logging filter that passes every record through :func:`redact` (``-v`` shows uv's
    command lines, which carry logins inline)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:  # a traceback logged with the record (exc_info=True)
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        record.exc_info = None
        return True
