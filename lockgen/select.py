"""The selector's old name, kept for installers that vendored or run it as ``lockgen.select``:
``python -m lockgen.select …`` runs :func:`lockgen.cellselect.main`, and ``from lockgen import
select`` (or ``import lockgen.select``) gives the :mod:`lockgen.cellselect` module itself. The
selector is ``lockgen/cellselect.py`` (docs/select.md); nothing in lockgen imports this name."""

import sys

from lockgen import cellselect

if __name__ == "__main__":
    raise SystemExit(cellselect.main())
sys.modules[__name__] = cellselect
