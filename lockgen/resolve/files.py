"""Step 8 of a cell's resolution: its files, as the lock model writes them (nothing is written here).

:func:`cell_files` turns what the steps before produced (the main resolution's
:class:`~lockgen.resolve.describe.Resolved`, its hash check, the layers'
:class:`~lockgen.resolve.layers.Built`) into a :class:`CellFiles`: the main :class:`Lock`, its
``pylock.toml`` (for the target only: PEP 751 ``requires-python`` and ``environments``) and the
layer locks. The pylock holds the layers too (:func:`~lockgen.locks.pylockfile.with_layers`: each
optional layer a PEP 751 extra, the no-deps layer always), so an installer that reads PEP 751
installs the cell, with or without its optional parts, without lockgen.
:mod:`lockgen.locks.store` writes them, all files of a cell together.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from packaging.utils import canonicalize_name

from lockgen.locks import pylockfile
from lockgen.locks.lock import FileRef, LayerKind, Lock, text_sha256
from lockgen.resolve import hashcheck, verify
from lockgen.resolve.cellrun import CellRun, install_links
from lockgen.resolve.describe import Resolved
from lockgen.resolve.freshness import ONLINE
from lockgen.resolve.layers import Built

__all__ = ["CellFiles", "cell_files"]


@dataclass(frozen=True)
class CellFiles:
    """Everything a resolved cell writes, as text: the main lock, its ``pylock.toml`` and its
    layers, plus notes for the summary (``mode``: the main resolution ran online or offline)."""

    main: Lock
    pylock: str
    layers: tuple[Lock, ...] = ()
    notes: tuple[str, ...] = ()
    mode: str = ONLINE

    def texts(self) -> dict[str, str]:
        """``{project-relative path: text}`` of every file, the main lock last."""
        files = {layer.header.path: layer.render() for layer in self.layers}
        files[pylockfile.pylock_path(self.main.header.path)] = self.pylock
        files[self.main.header.path] = self.main.render()
        return files


def cell_files(
    run: CellRun,
    main: Resolved,
    checked: hashcheck.Checked,
    built: Built,
    *,
    mode: str,
    warned: tuple[str, ...],
    prefer: bool,
    notes: tuple[str, ...] = (),
) -> CellFiles:
    """The cell's files from its main resolution ``main`` (``checked``: its hash check), its
    layers ``built``, how the main resolution ran (``mode``, uv's ``warned`` lines) and whether
    it preferred the old lock's versions (``prefer``); ``notes``: more lines for the summary
    (the backend checks' warnings)."""
    plan = run.plan
    pylock = main.pylock
    # each optional layer ``optional-<package>`` is the extra ``<package>``; the no-deps layer is always installed
    layered = [
        (None if entry is None else canonicalize_name(name.removeprefix("optional-")), packages)
        for name, (entry, packages) in built.installs.items()
    ]
    installs = pylockfile.with_layers(replace(pylock, created_by="lockgen"), layered)
    text = pylockfile.dumps(pylockfile.for_target(installs, plan.target))
    lock = Lock(
        header=run.header(
            LayerKind.MAIN,
            plan.lock,
            find_links=install_links(plan, plan.inputs.main_find_links, pylock.packages),
            input_parts=plan.input_parts,
            local_files=tuple(FileRef(sha256=sha, path=path) for path, sha in plan.local_inputs.items()),
            pylock=FileRef(sha256=text_sha256(text), path=pylockfile.pylock_path(plan.lock)),
            layers=built.refs(),
            unavailable=tuple(built.unavailable),
            replaces=tuple(built.replaces),
            skipped_urls=tuple(built.skipped_urls),
            no_upload_time=tuple(sorted(set(verify.without_upload_time(plan, pylock)) | built.dateless))
            if plan.inputs.exclude_newer
            else (),
            unverified_hashes=hashcheck.merge(checked.unverified, built.unverified),
        ),
        entries=tuple(e for e in main.entries if not e.unhashed),
    )
    said = [f"unavailable: {', '.join(u.requirement for u in built.unavailable)}"] if built.unavailable else []
    said += [f"uv: {w}" for w in warned]
    said += notes
    if not prefer:
        said.append("the lock had been edited by hand: re-resolved without preferring its pins")
    return CellFiles(main=lock, pylock=text, layers=tuple(built.locks), notes=tuple(said), mode=mode)
