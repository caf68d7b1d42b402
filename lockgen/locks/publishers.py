"""Publisher identities (PEP 740) of locked packages, as the lock model records them.

A PEP 740 index (PyPI's integrity API) serves, per file, a *provenance* object: attestations and
the Trusted Publisher that produced them (``{"kind": "GitHub", "repository": "pypa/sampleproject",
"workflow": "release.yml", "environment": "pypi"}``). lockgen records each main package's
publishers in the cell's ``pylock.toml`` as PEP 751 ``[[packages.attestation-identities]]`` (an
array of tables, ``kind`` required, the publisher's own keys beside it; ``packaging.pylock``
checks exactly that), and the manifest copies them (``publishers``). An :class:`Identity` is one
such table as a typed value; :func:`changes` compares two locks' identities (``lockgen diff``).

Only string values are kept (a publisher's nested ``claims`` are not an identity), keys sorted:
the same publisher always writes the same bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.pylock import Package, Pylock
from packaging.utils import NormalizedName

__all__ = ["Identity", "changes", "of_package", "of_pylock", "with_identities"]

#: The keys :meth:`Identity.describe` shows after the kind, in this order (PEP 740 publishers:
#: GitHub, GitLab, Google, ActiveState); any other string key is kept, shown after them.
_SHOWN = ("repository", "workflow", "workflow_filepath", "environment", "email", "organization", "project")


@dataclass(frozen=True, order=True)
class Identity:
    """One publisher identity: ``kind`` (``GitHub``, ``GitLab``, ``Google``, …) and its other
    string fields as sorted ``(key, value)`` pairs."""

    kind: str
    fields: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Identity | None:
        """The identity of a PEP 740 publisher object or a PEP 751 ``attestation-identities``
        table; None when it has no string ``kind``."""
        kind = data.get("kind")
        if not isinstance(kind, str) or not kind:
            return None
        pairs = sorted((str(k), v) for k, v in data.items() if k != "kind" and isinstance(v, str) and v)
        return cls(kind=kind, fields=tuple(pairs))

    def to_dict(self) -> dict[str, str]:
        """``{"kind": …, <field>: …}``: a PEP 751 table and the manifest's object."""
        return {"kind": self.kind, **dict(self.fields)}

    def get(self, key: str) -> str | None:
        return dict(self.fields).get(key)

    def describe(self) -> str:
        """``GitHub pypa/sampleproject workflow=release.yml environment=pypi`` (kind, then the
        fields, the usual ones first)."""
        values = dict(self.fields)
        order = [k for k in _SHOWN if k in values] + sorted(k for k in values if k not in _SHOWN)
        shown = [values[order[0]]] if order and order[0] == "repository" else []
        shown += [f"{k}={values[k]}" for k in order[len(shown) :]]
        return " ".join([self.kind, *shown])


def of_package(package: Package) -> tuple[Identity, ...]:
    """A pylock package's recorded identities, sorted, each once."""
    found = {Identity.from_mapping(table) for table in package.attestation_identities or ()}
    return tuple(sorted(i for i in found if i is not None))


def of_pylock(pylock: Pylock) -> dict[NormalizedName, tuple[Identity, ...]]:
    """``{package: identities}`` of the packages that record any."""
    found = {p.name: of_package(p) for p in pylock.packages}
    return {name: ids for name, ids in sorted(found.items()) if ids}


def with_identities(package: Package, identities: Iterable[Identity]) -> Package:
    """``package`` recording ``identities`` (sorted, each once; none: the key is left out)."""
    tables = [i.to_dict() for i in sorted(set(identities))]
    return dataclasses.replace(package, attestation_identities=tables or None)


def changes(before: Pylock | None, after: Pylock | None) -> list[tuple[NormalizedName, str, str]]:
    """``(package, old, new)`` for each package present in both pylocks whose recorded publishers
    changed or disappeared (``new`` is "" then); the identities joined with ``; ``. A package
    that gains its first identity, or that only one side locks, is no change of publisher."""
    if before is None or after is None:
        return []
    old, new = of_pylock(before), of_pylock(after)
    present = {p.name for p in after.packages}
    out = []
    for name, ids in old.items():
        if name in present and new.get(name, ()) != ids:
            out.append((name, _shown(ids), _shown(new.get(name, ()))))
    return out


def _shown(ids: Iterable[Identity]) -> str:
    return "; ".join(i.describe() for i in ids)
