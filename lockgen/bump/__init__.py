"""``lockgen bump``: move pins in the config and the templates, then re-lock what changed.

* :mod:`~lockgen.bump.pins`: which pins move, the edits, :func:`~lockgen.bump.pins.bump` (the core);
* :mod:`~lockgen.bump.toml`: where pins are in the config's TOML, checking and writing the edit;
* :mod:`~lockgen.bump.templates`: pins written as ``NAME==VERSION`` lines in templates.
"""
