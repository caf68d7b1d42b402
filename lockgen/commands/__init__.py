"""One module per command: each turns parsed arguments into one call of its core and an exit code.

:mod:`lockgen.cli` parses (argparse, every option defined once) and imports only the module of the
command given, which defines ``run(args) -> int``. A command parses nothing and formats little:
the core it calls lives in its stage package (``lockgen all``/``lock``/``check``/``matrix``:
:mod:`lockgen.run`; ``diff`` and ``merge``: the engines in :mod:`lockgen.locks`; ``bump``:
:mod:`lockgen.bump`; ``detect`` and ``install``: :mod:`lockgen.install`). What several commands
share (the project, run options, the reporter) is in :mod:`lockgen.commands.common`.

Adding a command (``init``, ``why``, ``audit``, …): its core in its stage package, a module here
with ``run(args)``, its line in :data:`lockgen.cli.COMMANDS` (and its options in
:data:`lockgen.cli.OPTIONS`); ``docs/architecture.md`` lists where each command lives.
"""
