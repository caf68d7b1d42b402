"""What every layer uses: the bottom of the package, importing nothing else of lockgen.

* :mod:`~lockgen.runtime.errors`: the one exception root, user errors as records, formatted in one place;
* :mod:`~lockgen.runtime.states`: :class:`~lockgen.runtime.states.CellState`, what a cell is in a run or a check;
* :mod:`~lockgen.runtime.writing`: atomic writes and the errors of writing a file;
* :mod:`~lockgen.runtime.credentials`: logins from the environment, redacted wherever text is shown;
* :mod:`~lockgen.runtime.uvbin`: the pinned uv binary, its version, how it and pip print;
* :mod:`~lockgen.runtime.clock`: the moment a run starts (what a cooldown counts back from).
"""
