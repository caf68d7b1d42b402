"""``lockgen check --online --attestations``: verify each locked file's PEP 740 attestations.

For every main file whose index page names a provenance object (or whose lock records a
publisher), the object is fetched and each attestation in it is verified with
`pypi-attestations <https://pypi.org/project/pypi-attestations/>`_ (Sigstore): the signature, the
certificate chain to Sigstore's root, the transparency-log entry, that the certificate's identity
is the bundle's Trusted Publisher, and that the attested subject is the locked file (its name and
the lock's sha256: the file itself is not downloaded). Sigstore's trust root is the one
sigstore-python ships (``offline=True``: no TUF refresh, so the check is hermetic; a newer
sigstore brings a newer root).

The verifier is an extra (``pip install 'lockgen[attestations]'``: sigstore, cryptography and
pydantic); :func:`require` says so when it is missing. Findings are
:attr:`~lockgen.rot.online.Kind.ATTESTATION`: an attestation that does not verify, a publisher
that is not the one the lock records, or a recorded publisher whose provenance is gone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lockgen.index.client import HostError
from lockgen.index.pages import PageReader
from lockgen.locks.jsonfile import load_json
from lockgen.locks.publishers import Identity
from lockgen.plan.mirror import Mirrors
from lockgen.resolve.provenance import INTEGRITY_ACCEPT, identities_of
from lockgen.rot.findings import Finding, Kind
from lockgen.runtime.errors import InputError, UsageError

if TYPE_CHECKING:
    from lockgen.rot.locate import LockedFile

__all__ = ["check", "require", "verify"]

_EXTRA = "pip install 'lockgen[attestations]'"


def require() -> None:
    """Raise :class:`UsageError` when pypi-attestations is not installed."""
    try:
        import pypi_attestations  # noqa: F401
    except ImportError:
        raise UsageError(f"verifying attestations needs pypi-attestations (Sigstore): {_EXTRA}") from None


def verify(filename: str, sha256: str, provenance: Mapping[str, Any]) -> list[str]:
    """Why the provenance object ``provenance`` does not attest the file ``filename`` with hex
    ``sha256`` ([] when every attestation of every bundle verifies against its publisher).
    Raises :class:`UsageError` when pypi-attestations is not installed."""
    require()
    from pypi_attestations import Distribution, Provenance

    try:
        parsed = Provenance.model_validate_json(json.dumps(provenance))
    except Exception as exc:  # pydantic's ValidationError: not a provenance object
        return [f"not a PEP 740 provenance object ({_first_line(exc)})"]
    try:
        dist = Distribution(name=filename, digest=sha256)
    except Exception as exc:  # a name that is not a distribution's
        return [f"{filename}: {_first_line(exc)}"]
    problems = []
    for bundle in parsed.attestation_bundles:
        for attestation in bundle.attestations:
            try:
                attestation.verify(bundle.publisher, dist, offline=True)
            except Exception as exc:  # VerificationError, and what sigstore raises for a bad bundle
                problems.append(f"an attestation by {bundle.publisher.kind} does not verify: {_first_line(exc)}")
    if not parsed.attestation_bundles:
        problems.append("the provenance object holds no attestation")
    return problems


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def check(
    files: Sequence[LockedFile], reader: PageReader, mirrors: Mirrors, deadline: float
) -> tuple[list[Finding], int]:
    """The attestation findings of the main ``files`` (see the module docstring) and how many
    provenance objects were verified. Pages are read through ``reader`` (already fetched)."""
    out: list[Finding] = []
    verified = 0
    seen: dict[str, tuple[list[str], tuple[Identity, ...]] | str] = {}
    for item in files:
        if item.layer != "main" or item.url is None:
            continue
        listed = next((f for url in item.pages if (f := reader.page(url).by_sha256(item.sha256))), None)
        url = listed.provenance if listed is not None else None
        where = (item.where,)
        if url is None:
            if item.identities:
                detail = f"the lock records {_shown(item.identities)}; the index serves no provenance for it now"
                out.append(Finding(kind=Kind.ATTESTATION, package=item.package, version=item.version, url=item.url,
                                   detail=detail, where=where))  # fmt: skip
            continue
        if url not in seen:
            seen[url] = _verify_at(url, item, reader, mirrors, deadline)
            verified += isinstance(seen[url], tuple)
        outcome = seen[url]
        if isinstance(outcome, str):
            out.append(Finding(kind=Kind.ATTESTATION, package=item.package, version=item.version, url=url,
                               detail=outcome, where=where))  # fmt: skip
            continue
        problems, ids = outcome
        if item.identities and ids != item.identities:
            problems = [
                *problems,
                f"published by {_shown(ids) or 'nobody'}; the lock records {_shown(item.identities)}",
            ]
        for problem in problems:
            out.append(Finding(kind=Kind.ATTESTATION, package=item.package, version=item.version, url=url,
                               detail=problem, where=where))  # fmt: skip
    return out, verified


def _verify_at(
    url: str, item: LockedFile, reader: PageReader, mirrors: Mirrors, deadline: float
) -> tuple[list[str], tuple[Identity, ...]] | str:
    """``(problems, publishers)`` of the provenance object at ``url`` for ``item``'s file, or why
    it could not be read."""
    if deadline - time.monotonic() <= 0:
        return "not checked: the time budget (--timeout) was spent"
    try:
        reply = reader.client().get(url, headers={"Accept": INTEGRITY_ACCEPT})
    except HostError as exc:
        return f"its provenance could not be read ({exc.detail})"
    if reply.status != 200:
        return f"its provenance could not be read (HTTP {reply.status})"
    try:  # bounded: depth and numbers (an answer from a host)
        data = load_json(reply.body, url, "a provenance object", ours=False)
    except InputError as exc:
        return f"its provenance is not JSON lockgen reads ({exc.problems[0].message if exc.problems else exc})"
    if not isinstance(data, Mapping):
        return "its provenance is not a JSON object"
    return verify(item.filename, item.sha256, data), identities_of(data)


def _shown(ids: Sequence[Identity]) -> str:
    return "; ".join(i.describe() for i in ids)
