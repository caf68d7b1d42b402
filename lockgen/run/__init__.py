"""The matrix against its locks: ``lockgen all``/``lock`` (resolve the stale cells), ``check``, ``matrix``.

* :mod:`~lockgen.run.lock`: the run: select cells, plan them, resolve the stale ones concurrently
  (:func:`lockgen.resolve.pipeline.resolve_cell` per cell), write each cell's files together, the
  manifest; Ctrl-C safe;
* :mod:`~lockgen.run.values`: what a run takes and gives (:class:`~lockgen.run.values.RunOptions`,
  :class:`~lockgen.run.values.CellResult`, :class:`~lockgen.run.values.RunResult`, the
  :class:`~lockgen.run.values.Reporter` protocol);
* :mod:`~lockgen.run.noop`: the no-op fast path (files only: no rendering, no process);
* :mod:`~lockgen.run.check`: each cell's state from its files (``lockgen check``; the run's staleness);
* :mod:`~lockgen.run.matrix`: the cells a run would lock, as rows (``lockgen matrix``);
* :mod:`~lockgen.run.progress`: the reporters (a live table, log lines) and the summary.
"""
