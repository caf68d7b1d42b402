"""Stage 5: everything one cell's resolution depends on, and its input hash.

A :class:`Plan` is pure data built from config, cell, target and rendered inputs. Its
:attr:`Plan.input_hash` covers exactly what can change a lock: the rendered inputs, the target,
index URL, find-links, ``exclude-newer``, the uv version and lockgen's lock format. It contains no
absolute path, so the same project gives the same hash on any machine (conda-lock stores such a
hash per platform so a staleness check needs no solve; so does lockgen, in each lock's header).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from lockgen.config import WORK, Config
from lockgen.matrix import Cell
from lockgen.render import Rendered
from lockgen.target import Target

#: Bumped when the lock layout changes, so every lock is re-resolved once.
LOCK_FORMAT = 1


@dataclass(frozen=True, kw_only=True)
class Plan:
    """One cell, ready to resolve. Paths are relative to the project root."""

    cell: Cell
    target: Target
    rendered: Rendered
    lock: str  # locks/<cell>.txt
    work: str  # .lockgen/<cell>, where rendered inputs are written
    uv_version: str

    @property
    def index_url(self) -> str:
        return self.cell.settings.index_url

    @property
    def find_links(self) -> tuple[str, ...]:
        """All find-links of the cell, de-duplicated, in a stable (sorted by key) order."""
        links = (link for key in sorted(self.cell.settings.find_links) for link in self.cell.settings.find_links[key])
        return tuple(dict.fromkeys(links))

    @property
    def exclude_newer(self) -> str | None:
        return self.cell.settings.exclude_newer

    def input_path(self, role: str) -> str:
        from lockgen.render import ROLES

        return f"{self.work}/{ROLES[role]}"

    @property
    def input_hash(self) -> str:
        """``sha256:<hex>`` of the canonical JSON of everything the lock depends on."""
        data = {
            "format": LOCK_FORMAT,
            "uv": self.uv_version,
            "target": self.target.to_dict(),
            "index_url": self.index_url,
            "find_links": list(self.find_links),
            "exclude_newer": self.exclude_newer,
            "inputs": {role: {"template": t, "text": text} for role, (t, text) in sorted(self.rendered.files.items())},
        }
        blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()


def make_plan(config: Config, cell: Cell, target: Target, rendered: Rendered, uv_version: str) -> Plan:
    """Build the plan of ``cell``: its lock under the config's ``locks`` folder, its rendered
    inputs under ``.lockgen/<cell>/``."""
    return Plan(
        cell=cell,
        target=target,
        rendered=rendered,
        lock=cell.lock_path(config),
        work=f"{WORK}/{cell.name}",
        uv_version=uv_version,
    )
