"""A loaded project: its configuration, its expanded matrix, and what the stages need of them.

Reading a project has no side effects: ``matrix``, ``check`` and ``detect`` load one and write
nothing. Only :mod:`lockgen.run.lock` writes (locks, manifest, lockgen's work folder).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lockgen.config import Config, find_config, load_config
from lockgen.locks import manifest
from lockgen.plan import mirror
from lockgen.plan.matrix import Cell, expand
from lockgen.plan.mirror import Mirrors
from lockgen.plan.target import Target, target_for
from lockgen.runtime import bounded
from lockgen.runtime.errors import ConfigError, LockgenError, Problem, TemplateError, merged

if TYPE_CHECKING:
    from lockgen.plan.content import Digests
    from lockgen.plan.plan import Plan

__all__ = ["Project", "detect_problems", "requires"]


@dataclass(frozen=True)
class Project:
    """A validated configuration and its expanded matrix (in matrix order)."""

    config: Config
    cells: tuple[Cell, ...]
    #: project-relative path -> text read instead of the file (``lockgen bump``'s planned edits:
    #: the config, the pyproject.toml of ``[project]``, templates); empty for the files as they are
    overlay: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, start: Path, config_path: str | None = None, overlay: Mapping[str, str] | None = None) -> Project:
        """Find (see :func:`~lockgen.config.find_config`), validate and expand the config, reading
        the files ``overlay`` names from it. Raises ``UsageError`` (no config) or ``ConfigError``
        (every problem, with key paths)."""
        config = load_config(find_config(start, config_path), overlay)
        cells = tuple(expand(config))
        if config.detect is not None:
            detect_problems(config, cells)
        return cls(config=config, cells=cells, overlay=dict(overlay or {}))

    @property
    def root(self) -> Path:
        return self.config.root

    def cell(self, name: str) -> Cell:
        return next(c for c in self.cells if c.name == name)

    def plans(self, cells: Sequence[Cell], digests: Digests | None = None) -> list[Plan]:
        """Render and plan every resolved (not skipped, not alias) cell in ``cells``; local
        inputs by content through ``digests`` (default: a read-only cache of their sha256,
        :mod:`lockgen.plan.content`).

        Raises :class:`TemplateError` listing every template problem found, each once with the
        cells it occurs in."""
        from lockgen.plan.content import Digests
        from lockgen.plan.plan import make_plan
        from lockgen.plan.render import environment
        from lockgen.runtime.uvbin import uv_version

        digests = digests if digests is not None else Digests(self.root)
        env = environment(self.config, self.template_overlay())
        version = uv_version()
        plans: list[Plan] = []
        config_problems: list[Problem] = []
        template_problems: list[Problem] = []
        for cell in cells:
            if not cell.resolves:
                continue
            try:
                plans.append(make_plan(self.config, env, cell, target_for(cell), version, digests))
            except ConfigError as exc:
                config_problems += [p.in_cell(cell.name) for p in exc.problems]
            except TemplateError as exc:
                template_problems += [p.in_cell(cell.name) for p in exc.problems]
        if config_problems:  # one record per problem, naming every cell it occurs in
            raise ConfigError(self.config.source, [*config_problems, *template_problems])
        if template_problems:
            raise TemplateError(*merged(template_problems))
        return plans

    def template_overlay(self) -> dict[str, str]:
        """The overlay's templates, by name relative to the templates folder."""
        prefix = self.config.templates.rstrip("/") + "/"
        return {path.removeprefix(prefix): text for path, text in self.overlay.items() if path.startswith(prefix)}

    def read_files(self) -> set[str]:
        """Project files besides the config and the templates that every plan reads: the
        pyproject.toml whose ``[project]`` templates see, when it is not the config file."""
        project = self.config.project
        return {project.path} if project is not None and project.path != self.config.source else set()

    def mirrors(self, cli: Sequence[str] = ()) -> Mirrors:
        """Mirrors from the config, then ``LOCKGEN_MIRRORS``, then ``--mirror`` (later wins), with
        the logins of every URL field expanded from the environment (``UsageError`` when unset)."""
        tables = [self.config.mirrors, mirror.from_env(os.environ.get(mirror.ENV_VAR)), mirror.parse(cli)]
        return mirror.build(tables, self.config.credentials)

    def rows(self, plans: Sequence[Plan] = ()) -> list[manifest.Row]:
        """Every cell as a manifest row, with input hashes from ``plans`` where given."""
        hashes = {p.cell.name: p.input_hash for p in plans}
        rows = []
        for cell in self.cells:
            target = target_for(cell)
            row = manifest.Row(
                **cell.axes, name=cell.name, lock=cell.lock_path(self.config), skip=cell.settings.skip,
                alias=cell.settings.alias, target=target.to_dict(), requires=requires(cell, target),
                environment=target.env(), input_hash=hashes.get(cell.name), extra=dict(cell.extra),
            )  # fmt: skip
            rows.append(row)
        return rows

    def detect_rules(self) -> dict[str, Any] | None:
        """The ``[detect]`` rules as the manifest carries them (normalized), or None."""
        rules = self.config.detect
        return rules.to_dict() if rules is not None else None

    def manifest_text(
        self,
        failed: dict[str, str] | None = None,
        root: Path | None = None,
        coverage: Mapping[str, Any] | None = None,
    ) -> str:
        """The manifest the locks on disk give (under ``root``: the project's, or a stage's copy
        of its locks folder), with ``failed`` cells (cell -> reason) and the GPU cells'
        ``coverage`` (default: :meth:`coverage`, carried from the manifest on disk)."""
        root = root or self.root
        coverage = self.coverage(root=root) if coverage is None else coverage
        return manifest.dumps(manifest.build(root, self.rows(), self.detect_rules(), failed, coverage=coverage))

    def coverage(
        self,
        read: Callable[[Sequence[Any]], Any] | None = None,
        previous: Mapping[str, Any] | None = None,
        names: Sequence[str] | None = None,
        root: Path | None = None,
    ) -> dict[str, Any]:
        """``{cell: coverage record}`` of the GPU cells (:mod:`lockgen.wheels.cells`): each part
        of the record of ``previous`` (a merge: the shards') or of the manifest on disk while its
        GPU wheels (main) or its lock text (a layer) are the same; else read with ``read`` (a
        :class:`lockgen.wheels.reading.Reader`, ``lockgen all``), else none. A cell without a
        pylock, GPU wheels or layers has none; ``names`` limits the cells (a shard's); ``root``
        is where the locks folder is (default: the project root; a stage's copy for
        ``--dry-run`` and bump)."""
        from lockgen.wheels import cells as gpu

        root = root or self.root
        text = manifest.read(root / manifest.manifest_path(self.config.locks))
        on_disk = manifest.recorded_coverage(text)
        given = dict(previous or {})
        records: dict[str, Any] = {}
        for cell in self.cells:
            if names is not None and cell.name not in names:
                continue
            family = gpu.gpu_family(cell.backend, self.config.backends) if cell.resolves else None
            if family is None:
                continue
            lock = cell.lock_path(self.config)
            fast = on_disk.get(cell.name) if cell.name not in given else None
            fresh = fast is not None and (read is None or not manifest.coverage_incomplete(fast))
            if fast is not None and fresh and _unchanged(root, text, cell.name, lock, fast):
                records[cell.name] = fast
                continue
            try:
                record = gpu.cell_coverage(root, lock, family, _fits(target_for(cell)),
                                           [given.get(cell.name), on_disk.get(cell.name)], read)  # fmt: skip
            except LockgenError:
                continue
            if record is not None:
                records[cell.name] = record
        return records


def _fits(target: Target) -> frozenset[Any]:
    """The wheel tags an installer of ``target`` takes, newer OS levels included (a page without
    hashes is searched by them: the lock lists those levels' hashes too, :mod:`lockgen.resolve.newer`)."""
    from lockgen.resolve.newer import newest

    wide = newest(target)
    return target.supported_tags() | (wide.supported_tags() if wide is not None else frozenset())


def _unchanged(root: Path, text: str | None, cell: str, lock: str, record: Mapping[str, Any]) -> bool:
    """Whether a recorded ``coverage`` still describes the cell without parsing its pylock: the
    pylock's sha256 is the manifest's and holds every recorded wheel's hash, each recorded layer
    is one of the main lock's optional and no-deps layers with the same text, and no such layer
    is missing; the record has this reader's shape (``manifest.coverage_incomplete``)."""
    from lockgen.locks.lock import Lock, text_sha256
    from lockgen.wheels.layers import READ_KINDS

    pylocks = manifest.recorded_pylocks(text)
    if cell not in pylocks or not manifest.coverage_current(record):
        return False
    try:
        pylock = bounded.read_text(root / pylocks[cell], pylocks[cell])
        main = Lock.read(root / lock, lock)
    except (OSError, UnicodeDecodeError, LockgenError):
        return False
    if main is None or not pylock or text_sha256(pylock) != manifest.recorded_pylock_sha(text, cell):
        return False
    listed = [w.get("sha256") for key in ("wheels", "unread") for w in record.get(key, [])]
    if not all(isinstance(s, str) and f'sha256 = "{s}"' in pylock for s in listed):
        return False
    recorded = [(item.get("name"), item.get("sha256")) for item in record.get("layers", [])]
    try:
        layers = [(ref.name, text_sha256(bounded.read_text(root / ref.path, ref.path)))
                  for ref in main.header.layers if ref.kind in READ_KINDS]  # fmt: skip
    except (OSError, LockgenError):
        return False
    return recorded == layers


def detect_problems(config: Config, cells: Sequence[Cell]) -> None:
    """Raise :class:`ConfigError` when the ``[detect]`` rules do not fit the matrix (issue 19):
    a backend no cell has for the machines a rule can match, a rule no machine can reach, an
    axis rule for an axis or value the matrix has not (:func:`lockgen.cellselect.rules_problems`),
    each with its key path."""
    from lockgen.cellselect import rules_problems

    assert config.detect is not None
    path = f"{config.key_prefix}.detect" if config.key_prefix else "detect"
    rows = [{"os": c.os, "arch": c.arch, "backend": c.backend, "axes": dict(c.extra)} for c in cells]
    problems = rules_problems(config.detect, rows, path)
    if problems:
        raise ConfigError(config.source, [f"{key}: {message}" for key, message in problems])


def requires(cell: Cell, target: Target) -> dict[str, str]:
    """What a machine needs to install the cell's lock: the Python minor, the interpreter arch
    (an alias may require another one than the host's: the seed's x64 stack on Windows ARM), and
    the glibc (manylinux) or macOS minimum of its target."""
    needs = {"python": cell.python, "interpreter": cell.settings.interpreter or cell.arch}
    if cell.os == "linux":
        needs["glibc"] = (cell.settings.manylinux or "2_28").replace("_", ".")
    if target.macos:
        needs["macos"] = target.macos
    return needs
