"""``lockgen install``: one cell of the manifest into a virtual environment, layer by layer.

The algorithm is the one ``docs/manifest.md`` documents for installers in any language, run with
the commands the manifest records (``layers[].commands.uv`` / ``.pip``):

1. Pick the cell: named, or chosen by :mod:`lockgen.select` on this machine (``--detect``).
2. Refuse before touching anything when the cell does not fit: another OS, an older glibc or
   macOS than ``requires`` says, a lock file whose sha256 is not the manifest's, a venv of another
   Python minor or interpreter arch, no such interpreter (uv's discovery, never a download).
3. A venv whose recorded install (``lockgen-install.json`` in it) has the same layer files and
   whose distributions are exactly the lock's is up to date: nothing runs.
4. Otherwise: ``main`` as an exact sync with hashes (uv ``pip sync``; pip installs, then what
   main does not list is uninstalled), each optional layer (a failure is a warning and the layer
   is rolled back to the venv's state before it), ``no-deps``, ``unhashed``; with the target's
   environment (``MACOSX_DEPLOYMENT_TARGET``) and URLs mapped through mirrors.
5. Check every installed version against the locks (``importlib.metadata`` inside the venv; local
   labels such as ``+cu130`` count) and say so.

Modules: :mod:`.steps` (the algorithm), :mod:`.checks` (pure checks: layers and versions, the
machine, the venv's distributions, mirrors, the install record), :mod:`.venv` (the interpreter,
the venv, the processes).
"""

from lockgen.install.checks import STATE_FILE, Layer, host_problems, installed_problems, map_sources
from lockgen.install.steps import INSTALLERS, Options, install

__all__ = [
    "INSTALLERS", "STATE_FILE", "Layer", "Options", "host_problems", "install", "installed_problems", "map_sources",
]  # fmt: skip
