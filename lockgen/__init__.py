"""lockgen: committed, per-target lock files for Python applications that ship to many machines.

The pipeline, one package per stage::

    config -> plan (matrix, target, render, input hash) -> resolve (uv, one cell) -> locks + manifest

with ``check``, ``diff``, ``detect``, ``install`` and the dossier (``audit``, ``sbom``,
``licenses``) reading what it wrote. :data:`LAYERS` lists the
packages bottom to top: a module imports only from its own package and the layers below it, and
packages of one layer do not import each other (docs/architecture.md).
"""

__all__ = ["LAYERS", "__version__"]

__version__ = "0.1.0"

#: lockgen's packages (and top-level modules), bottom to top, by layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("lockgen", "lockgen.runtime", "lockgen.cellselect"),  # what every layer uses; the vendorable selector
    ("lockgen.config",),  # data only
    ("lockgen.plan",),  # what to resolve: cells, targets, rendered inputs, input hashes
    ("lockgen.locks",),  # the lock model and the files of the locks folder
    ("lockgen.index",),  # package hosts: the one client, pages, artifacts, range reads, the page cache
    ("lockgen.resolve",),  # one cell, top to bottom
    ("lockgen.osv",),  # OSV advisories: the record model and its sources (audit; the lock-time gate's source)
    ("lockgen.wheels",),  # readers of the locked wheels (GPU kernel coverage)
    ("lockgen.project",),  # a loaded project
    ("lockgen.run", "lockgen.scaffold"),  # the run over the cells (all, lock, check, matrix); init
    ("lockgen.bump", "lockgen.rot"),  # pin moves and re-locks; locks over time (check --online/--resolve, bundle)
    ("lockgen.install", "lockgen.dossier"),  # installing; audit, sbom, licenses, why
    ("lockgen.commands",),  # one module per command
    ("lockgen.cli",),  # argparse -> one call per command
    ("lockgen.__main__",),
    ("lockgen.select",),  # the selector's old name: a shim for installers that run lockgen.select
)
