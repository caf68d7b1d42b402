"""Talking to package hosts: the one place lockgen opens a connection or reads a page.

Modelled on uv's ``uv-client``: :mod:`~lockgen.index.client` (the one HTTP client: mirrors,
logins, TLS, per-request timeouts and an overall deadline, a byte bound on every body, judged
redirects, HEAD falling back to a ranged GET), :mod:`~lockgen.index.pages` (the page model and its
one parser, PEP 503 HTML and PEP 691 JSON), :mod:`~lockgen.index.files` (one typed value per
artifact file name, parsed once with ``packaging``), :mod:`~lockgen.index.ranges` (a remote file
read by byte ranges, and a wheel's ``METADATA`` read that way), :mod:`~lockgen.index.pagecache`
and :mod:`~lockgen.index.pageserver` (the page cache uv reads through, as a service) and
:mod:`~lockgen.index.tls`. Everything above this package reaches a host only through it
(tests/repo/test_one_client.py).
"""
