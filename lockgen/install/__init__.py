"""``lockgen install``: one cell of the manifest into a virtual environment, layer by layer.

The algorithm is the one ``docs/manifest.md`` documents for installers in any language. The
manifest, the locks and the venv's own record are input from elsewhere (docs/untrusted-input.md):
every field is parsed into typed values and every path confined before anything runs, and the
commands are built by lockgen from the manifest's typed fields for uv or pip only (the recorded
``layers[].commands`` must equal them, and are never run):

1. Pick the cell: named, or chosen by :mod:`lockgen.cellselect` on this machine (``--detect``; for
   an existing venv, by that venv's Python minor).
2. Refuse before touching anything when the cell does not fit: a manifest of another format or
   with a bad field, another OS or host arch (an alias whose interpreter this machine runs is
   fine), an older glibc or macOS than ``requires`` says, a lock file whose sha256 is not the
   manifest's, a venv of another Python minor or interpreter arch or one that sees the system's
   site-packages, no such interpreter (uv's discovery, never a download), a bad ``--index-url``.
3. Hold the venv's install lock (one install per venv; ``--wait`` queues); a venv an interrupted
   install left half-made is cleared and made again.
4. A venv whose recorded install (``lockgen-install.json`` in it) has the same layer files and
   whose distributions are exactly the lock's, each traced to the locks' hashes
   (:mod:`.record`), is up to date: nothing runs.
5. Otherwise: what lockgen cannot trace to the locks' hashes is uninstalled, then ``main`` as an
   exact sync with hashes (uv ``pip sync``; pip installs, then what main does not list is
   uninstalled), each optional layer (a failure is a warning and the layer is rolled back to the
   venv's state before it; an installer killed by a signal stops the install instead), ``no-deps``,
   ``unhashed``; with the target's environment (``MACOSX_DEPLOYMENT_TARGET``), no uv or pip
   configuration (``UV_NO_CONFIG=1``; ``PIP_CONFIG_FILE=os.devnull``, ``pip --isolated``, no
   ``PIP_*`` variable) and URLs mapped through mirrors (a mirror that maps none of them is warned
   about).
6. Check every installed version against the locks (``importlib.metadata`` inside the venv; local
   labels such as ``+cu130`` count) and every hashed distribution's files against its RECORD,
   and say so. Nothing said holds a credential.

Modules: :mod:`.steps` (the algorithm), :mod:`.choose` (the manifest, the cell, the machine's
fit), :mod:`.checks` (pure checks: layers and versions, the machine, the venv's distributions,
mirrors), :mod:`.record` (the install record, tracing distributions to the locks' hashes),
:mod:`.venv` (the interpreter, the venv and its lock, the environment, the processes).
"""

from lockgen.install.checks import Layer, host_problems, installed_problems, map_sources
from lockgen.install.record import STATE_FILE
from lockgen.install.steps import INSTALLERS, Options, install, install_bundle

__all__ = [
    "INSTALLERS", "STATE_FILE", "Layer", "Options", "host_problems", "install", "install_bundle", "installed_problems",
    "map_sources",
]  # fmt: skip
