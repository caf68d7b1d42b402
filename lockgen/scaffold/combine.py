"""``lockgen init --commands``, step 2: an installer's torch commands with the requirement files. Pure.

An installer runs a torch command, then ``pip install -r`` a requirement file; each pair is one
variant of the project. :func:`combine` makes the pairs, as files of their own (the command's
lines first, its index the backend's), with what they are for as :class:`Given`:

* a command goes with the files of its build family (``cu128`` with a file for ``cu124``
  wheels: both CUDA; ``cpu`` with the files that name no backend, which are cpu files), else with
  the files that name no backend (no macOS-only file for a GPU or labelled build), else alone;
* its platforms: what the script's name or ``SCRIPT:os=…`` says, else its wheels' tags, met with
  the file's; a command pinning a labelled build (``+cpu``) has no macOS (no macOS wheel carries
  a label);
* a command with no index and no label (PyPI's builds, the installer's default) goes with each
  file on the platforms no other cpu command of that file covers; a file no command covers
  somewhere keeps its own cells there, as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from lockgen.scaffold.commands import Command
from lockgen.scaffold.inference import Facts, Given, Platform, backend_label, family, is_gpu
from lockgen.scaffold.reading import IndexLine, ReqFile

__all__ = ["combine"]

Part = tuple[ReqFile, Facts, Given | None]


def combine(
    files: Sequence[Part],
    commands: Sequence[tuple[Command, tuple[Platform, ...] | None]],
    everywhere: Sequence[Platform],
) -> tuple[list[tuple[ReqFile, Given | None]], list[str]]:
    """The files to compose: ``files`` (each with its facts and what was given of it) with the
    ``commands`` (each with the platforms its script says, None: nothing) combined into them, and
    the explanation. ``everywhere``: the platforms of a file that names none."""
    why: list[str] = []
    combos: dict[str, list[tuple[ReqFile, Given]]] = {f.path: [] for f, _, _ in files}
    alone: list[tuple[ReqFile, Given]] = []
    defaults = [(c, p) for c, p in commands if c.backend is None]
    for command, script in commands:
        if command.backend is None and script is None:
            continue  # PyPI's builds on the platforms left over, below
        fam = family(command.backend or "cpu")
        targets = [f for f, facts, _ in files if fam in _families(facts)]
        how = f"the files for {fam} builds"
        if command.backend is None:
            targets, how = [f for f, facts, _ in files if not facts.backends], "the files that name no backend"
        if not targets:
            build_only = is_gpu(command.backend or "") or command.labelled
            targets = [f for f, facts, _ in files if not facts.backends
                       and not (build_only and facts.platforms and all(p[0] == "macos" for p in facts.platforms))]  # fmt: skip
            how = "the files that name no backend"
        if not targets:
            file = ReqFile(path=command.origin, lines=command.lines, indexes=_indexes(command, ()),
                           prerelease=command.prerelease, stem=_stem(command.origin, command))  # fmt: skip
            alone.append((file, _given(command, script)))
            why.append(f"{command.origin}: a variant of its own: no requirement file to go with")
            continue
        facts_of = {f.path: facts for f, facts, _ in files}
        for base in targets:
            platforms = _meet(facts_of[base.path].platforms, script)
            if platforms is not None and command.labelled:
                platforms = tuple(p for p in platforms if p[0] != "macos")
            elif platforms is None and command.labelled:
                platforms = tuple(p for p in everywhere if p[0] != "macos")
            if platforms == ():
                why.append(f"{command.origin}: not with {base.path}: they are for different platforms")
                continue
            combos[base.path].append((_pair(base, command), _given(command, platforms)))
        why.append(f"{command.origin}: installs {', '.join(command.names)} ({command.backend or 'PyPI'}) before "
                   f"{', '.join(f.path for f in targets)} ({how})")  # fmt: skip
    out: list[tuple[ReqFile, Given | None]] = []
    unused = [c for c, p in defaults if p is None]
    used_default = False
    for base, facts, given in files:
        made = combos[base.path]
        if not made:
            out.append((base, given))
            continue
        out += made
        own = _families(facts)
        same = [g for _, g in made if family(g.backend or "cpu") in own]  # the commands that replace it
        if not same:
            out.append((base, given))  # only other builds: its own cells stay as they are
            continue
        if any(g.platforms is None for g in same):
            continue
        covered = {p for g in same for p in g.platforms or ()}
        left = tuple(p for p in (facts.platforms or everywhere) if p not in covered)
        if not left:
            continue
        default = unused[0] if unused and own == {"cpu"} else None
        if default is not None:
            used_default = True
            pair = _pair(base, default)
            out.append((pair, Given(platforms=left, why=f"{default.origin} installs PyPI's builds where no other "
                                    f"command of {base.path} does")))  # fmt: skip
        else:
            out.append((base, Given(platforms=left, backend=given.backend if given else None,
                                    why=f"where no command for its {', '.join(sorted(own))} builds goes")))  # fmt: skip
    if unused and not files:  # nothing to go with: the default command is a variant of its own
        command = unused[0]
        used_default = True
        file = ReqFile(path=command.origin, lines=command.lines, indexes=_indexes(command, ()),
                       prerelease=command.prerelease, stem=_stem(command.origin, command))  # fmt: skip
        alone.append((file, Given(why=f"the command at {command.origin} ({command.reason})")))
        why.append(f"{command.origin}: a variant of its own: no requirement file to go with")
    if unused and not used_default:
        why.append(f"{unused[0].origin}: installs PyPI's builds; every file has a command for its platforms "
                   "already, so it goes with none")  # fmt: skip
    for extra in unused[1:]:
        why.append(f"{extra.origin}: a second command with no index ({unused[0].origin} is the first): not read")
    return out + alone, why


def _families(facts: Facts) -> set[str]:
    return {family(b) for b in facts.backends} or {"cpu"}


def _meet(first: tuple[Platform, ...] | None, second: tuple[Platform, ...] | None) -> tuple[Platform, ...] | None:
    if first is None or second is None:
        return first if second is None else second
    return tuple(p for p in first if p in second)


def _given(command: Command, platforms: tuple[Platform, ...] | None) -> Given:
    labelled = command.index is not None and backend_label(command.index.url) is not None
    return Given(platforms=platforms, backend=command.backend, flavor=command.flavor,
                 index=command.index.url if labelled and command.index else None,
                 why=f"the command at {command.origin} ({command.reason})")  # fmt: skip


def _indexes(command: Command, base: Sequence[IndexLine]) -> tuple[IndexLine, ...]:
    return (*((command.index,) if command.index else ()), *command.find_links, *base)


def _pair(base: ReqFile, command: Command) -> ReqFile:
    """``base`` with ``command``'s lines first and its index instead of base's backend indexes."""
    indexes = _indexes(command, [ix for ix in base.indexes if not backend_label(ix.url)])
    return ReqFile(path=f"{base.path} + {command.origin}", lines=(*command.lines, *base.lines), indexes=indexes,
                   prerelease=command.prerelease or base.prerelease, includes=base.includes, dropped=base.dropped, changed=base.changed,
                   constraints=base.constraints, constraint_files=base.constraint_files, rendered=base.rendered,
                   stem=_stem(base.stem or base.path, command))  # fmt: skip


def _stem(path: str, command: Command) -> str:
    name = PurePosixPath(path.partition(":")[0]).with_suffix("").as_posix().replace("/", "-")
    return f"{name}-{command.backend or 'pypi'}"
