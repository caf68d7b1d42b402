"""One TLS context per process for every HTTPS download lockgen makes itself.

httpx builds a new :class:`ssl.SSLContext` for each client it makes, and loading the CA bundle
costs tens of milliseconds of CPU each time: with one client per checked artifact (hash checks,
direct URLs) that was a fifth of the CPU of a run against loopback hosts (py-spy). An
``SSLContext`` may be shared by any number of connections and threads, so lockgen builds one.
"""

from __future__ import annotations

import functools
import os
import ssl

__all__ = ["context"]


@functools.cache
def context() -> ssl.SSLContext:
    """The CAs httpx would trust (``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else certifi's bundle)
    plus the system's default ones, so a CA a company installed system-wide is trusted too.
    Built once per process; read the variables before the first download."""
    import certifi

    if os.environ.get("SSL_CERT_FILE"):
        built = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    elif os.environ.get("SSL_CERT_DIR"):
        built = ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    else:
        built = ssl.create_default_context(cafile=certifi.where())
    built.load_default_certs()
    return built
