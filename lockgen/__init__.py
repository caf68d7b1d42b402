"""lockgen: committed, per-target lock files for Python applications that ship to many machines.

The pipeline, one module per stage::

    config -> matrix -> target -> render -> plan (input hash) -> compile (uv) -> lockfile -> manifest

``pipeline`` drives the stages for a set of cells; ``cli`` turns arguments into one pipeline call.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
