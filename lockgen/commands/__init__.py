"""One module per command: each declares its command line and turns the parsed arguments into one
call of its core and an exit code.

Each module defines ``HELP`` (its line in ``lockgen --help``, and its description), ``USAGE``
(its arguments, for the one-line usage), ``OPTIONS`` (those it takes before or after the command;
the shared ones are defined once in :mod:`lockgen.commands.options`), ``arguments(parser)`` (its
own) and ``run(args) -> int``, and imports its core only inside ``run``: :mod:`lockgen.cli` builds
the parser from every module and dispatches. A command parses nothing and formats little:
the core it calls lives in its stage package (``lockgen all``/``lock``/``check``/``matrix``:
:mod:`lockgen.run`; ``diff`` and ``merge``: the engines in :mod:`lockgen.locks`; ``bump``:
:mod:`lockgen.bump`; ``detect`` and ``install``: :mod:`lockgen.install`). What several commands
share (the project, run options, the reporter) is in :mod:`lockgen.commands.common`.

Adding a command (``init``, ``why``, ``audit``, …): its core in its stage package, a module here
with those five names, its name in :data:`lockgen.cli.COMMANDS`; ``docs/architecture.md`` lists
where each command lives.
"""
