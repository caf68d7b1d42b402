"""Shards: ``--shard I/N`` selection, and ``lockgen merge`` of the shards' locks folders equal to
one full run, byte for byte (issue 6, item 9)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lockgen.errors import UsageError
from lockgen.locks.lock import Lock, text_sha256
from lockgen.locks.shard import Shard, assign
from tests.conftest import run_cli, write_project


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1/1", Shard(1, 1)), ("2/4", Shard(2, 4)), (" 4 / 4 ", Shard(4, 4))],
    ids=["one-of-one", "two-of-four", "spaces"],
)
def test_parse(text, expected):
    assert Shard.parse(text) == expected
    assert str(expected) == text.replace(" ", "")


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "2", "a/b", "1/2/3", "-1/2", ""], ids=str)
def test_parse_refuses(text):
    with pytest.raises(UsageError, match="--shard"):
        Shard.parse(text)


@dataclass(frozen=True)
class _Settings:
    skip: str | None = None
    alias: str | None = None


@dataclass(frozen=True)
class _Cell:
    name: str
    settings: _Settings = field(default_factory=_Settings)

    @property
    def resolves(self) -> bool:  # as lockgen.plan.matrix.Cell
        return not (self.settings.skip or self.settings.alias)


def _cells(resolved: int, skipped: int = 0) -> list[_Cell]:
    cells = [_Cell(f"c{i}") for i in range(resolved)]
    return cells + [_Cell(f"s{i}", _Settings(skip="why")) for i in range(skipped)]


@pytest.mark.parametrize(
    ("resolved", "total", "sizes"),
    [(12, 4, [3, 3, 3, 3]), (10, 4, [3, 3, 2, 2]), (3, 4, [1, 1, 1, 0]), (5, 1, [5]), (0, 2, [0, 0])],
    ids=["even", "uneven", "more-shards-than-cells", "one-shard", "nothing"],
)
def test_contiguous_blocks_of_even_size(resolved, total, sizes):
    cells = _cells(resolved, skipped=2)
    shards = assign(cells, total)
    counts = [sum(1 for c in cells[:resolved] if shards[c.name] == i) for i in range(1, total + 1)]
    assert counts == sizes
    order = [shards[c.name] for c in cells[:resolved]]
    assert order == sorted(order)  # matrix order: neighbours (same os, same pages) stay together
    assert {shards[c.name] for c in cells[resolved:]} <= {1}  # skipped cells: shard 1
    assert set(shards) == {c.name for c in cells}  # every cell in exactly one shard


def test_an_alias_goes_with_its_cell():
    cells = [
        _Cell("a"),
        _Cell("b"),
        _Cell("c"),
        _Cell("alias-c", _Settings(alias="c")),
        _Cell("alias-x", _Settings(alias="x")),
    ]
    shards = assign(cells, 3)
    assert (shards["a"], shards["b"], shards["c"], shards["alias-c"]) == (1, 2, 3, 3)
    assert shards["alias-x"] == 1  # its cell is not among the selected ones


# ---- end to end ---------------------------------------------------------------------------------

CONFIG = """
    index-url = "{index}"
    pins = {{ alpha = "{alpha}" }}
    [tool.lockgen.matrix]
    os = ["linux", "windows"]
    arch = ["x86_64", "aarch64"]
    backend = ["cpu"]
    python = ["3.12", "3.13"]
    [[tool.lockgen.rules]]
    match = {{ os = "windows", arch = "aarch64", python = "3.12" }}
    alias = "windows-x86_64-cpu-py3.12"
    [[tool.lockgen.rules]]
    match = {{ os = "windows", arch = "aarch64", python = "3.13" }}
    skip = "no Windows on ARM runner"
"""
REQUIREMENTS = "alpha=={{ pins.alpha }}\nbeta\n"


def _project(root: Path, index, alpha: str) -> Path:
    return write_project(
        root, CONFIG.format(index=index.index_url(), alpha=alpha), {"requirements.in.j2": REQUIREMENTS}
    )


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def shared_index(shared_fake_host):
    return shared_fake_host("index")


@pytest.fixture(scope="module")
def release(tmp_path_factory, shared_index):
    """A project locked at alpha 1.0; then alpha 1.1 is published and the pin moved (the
    config a release job's shards check out, with the old locks committed). Built once per
    module: tests take a copy (:func:`released`)."""
    index = shared_index
    for name in ("alpha", "beta"):
        index.add(name, "1.0")
    index.publish()
    root = _project(tmp_path_factory.mktemp("release") / "proj", index, "1.0")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    index.add("alpha", "1.1")
    index.publish()
    _project(root, index, "1.1")
    shutil.rmtree(root / ".lockgen")  # a checkout has no work folder
    return root


@pytest.fixture
def released(tmp_path, release):
    """This test's own copy of :func:`release` (tests change it)."""
    return _checkout(release, tmp_path / "proj")


def _checkout(root: Path, where: Path) -> Path:
    shutil.copytree(root, where)
    return where


def test_shards_merged_equal_one_full_run(tmp_path, released):
    full = _checkout(released, tmp_path / "full")
    run = run_cli("all", "-C", str(full))
    assert run.code == 0, run.err
    assert "alpha 1.0 → 1.1" in run.err

    listed, shard_dirs = [], []
    for i in (1, 2, 3):
        shard = _checkout(released, tmp_path / f"shard-{i}")
        matrix = run_cli("matrix", "--json", "--shard", f"{i}/3", "-C", str(shard))
        assert matrix.code == 0, matrix.err
        listed += [row["name"] for row in json.loads(matrix.out)]
        run = run_cli("all", "-C", str(shard), "--shard", f"{i}/3")
        assert run.code == 0, run.err
        assert json.loads((shard / "locks" / "manifest.json").read_text())["shard"] == f"{i}/3"
        shard_dirs.append(str(shard / "locks"))
    everything = json.loads(run_cli("matrix", "--json", "-C", str(full)).out)
    assert sorted(listed) == sorted(row["name"] for row in everything)  # each cell in one shard
    assert listed[:3] == ["linux-x86_64-cpu-py3.12", "linux-x86_64-cpu-py3.13", "windows-aarch64-cpu-py3.13"]

    merged = _checkout(released, tmp_path / "merged")
    run = run_cli("merge", *shard_dirs, "-C", str(merged))
    assert run.code == 0, run.err
    assert "alpha 1.0 → 1.1 (6 of 6 cells)" in run.err
    assert "merged 6 cells from 3 shard folders: 6 changed" in run.err
    assert _files(merged / "locks") == _files(full / "locks")  # locks and manifest, byte for byte
    assert run_cli("check", "-C", str(merged)).code == 0
    again = run_cli("merge", *shard_dirs, "-C", str(merged))  # idempotent
    assert again.code == 0
    assert "0 changed" in again.err
    assert _files(merged / "locks") == _files(full / "locks")


@pytest.fixture(scope="module")
def shards(tmp_path_factory, release):
    """The locks folders of ``all --shard 1/2`` and ``2/2`` on :func:`release`; tests only read them."""
    where = tmp_path_factory.mktemp("shards")
    dirs = []
    for i in (1, 2):
        shard = _checkout(release, where / f"shard-{i}")
        run = run_cli("all", "--shard", f"{i}/2", "-C", str(shard))
        assert run.code == 0, run.err
        dirs.append(shard / "locks")
    return dirs


def test_merge_refuses_a_cell_no_shard_holds(tmp_path, released, shards):
    merged = _checkout(released, tmp_path / "merged")
    before = _files(merged / "locks")
    run = run_cli("merge", str(shards[0]), "-C", str(merged))
    assert run.code == 2
    assert (
        "no shard holds cells linux-aarch64-cpu-py3.13, windows-x86_64-cpu-py3.12, windows-x86_64-cpu-py3.13;"
        in run.err
    )
    assert _files(merged / "locks") == before  # nothing written


def test_merge_refuses_two_shards_that_disagree(tmp_path, released, shards):
    """Two shard folders, each intact and as its manifest says, with other files for one cell
    (two runs of the same shard): refused, naming both."""
    other = tmp_path / "other"
    shutil.copytree(shards[0], other)
    cell = "linux-x86_64-cpu-py3.12"
    lock = Lock.parse((other / f"{cell}.txt").read_text(), cell)
    edited = dataclasses.replace(
        lock, entries=tuple(dataclasses.replace(e, via=("another run",)) for e in lock.entries)
    )
    (other / f"{cell}.txt").write_text(edited.render())
    data = json.loads((other / "manifest.json").read_text())
    data["cells"][cell]["sha256"] = data["cells"][cell]["layers"][0]["sha256"] = text_sha256(edited.render())
    (other / "manifest.json").write_text(json.dumps(data))
    merged = _checkout(released, tmp_path / "merged")
    run = run_cli("merge", str(shards[0]), str(other), str(shards[1]), "-C", str(merged))
    assert run.code == 2
    assert f"cell linux-x86_64-cpu-py3.12: shards {shards[0]} (1/2) and {other} (1/2) hold different files" in run.err


def test_merge_refuses_a_folder_that_is_not_a_shard(tmp_path, released, shards):
    merged = _checkout(released, tmp_path / "merged")
    run = run_cli("merge", str(shards[0]), str(released / "locks"), "-C", str(merged))  # a full run's manifest
    assert run.code == 2
    assert "not the manifest of a shard run" in run.err
    run = run_cli("merge", str(shards[0]), str(tmp_path), "-C", str(merged))
    assert run.code == 2
    assert "no manifest.json" in run.err
    run = run_cli("merge", str(shards[0]), str(tmp_path / "shard-9"), "-C", str(merged))
    assert run.code == 2
    assert f"{tmp_path / 'shard-9'}: does not exist; pass the locks folder" in run.err


def test_merge_refuses_a_shard_of_other_inputs(tmp_path, shared_index, released, shards):
    """A shard folder of an older commit (alpha still pinned at 1.0) holds locks the current
    plans would call stale: refused before anything is written, naming its folder and cells."""
    old = _checkout(released, tmp_path / "old-commit")
    _project(old, shared_index, "1.0")
    run = run_cli("all", "--shard", "2/2", "-C", str(old))
    assert run.code == 0, run.err
    merged = _checkout(released, tmp_path / "merged")
    before = _files(merged / "locks")
    run = run_cli("merge", str(shards[0]), str(old / "locks"), "-C", str(merged))
    assert run.code == 2
    cells = "linux-aarch64-cpu-py3.13, windows-x86_64-cpu-py3.12, windows-x86_64-cpu-py3.13"
    assert f"{old / 'locks'}: cells {cells} locked from other inputs than this project's" in run.err
    assert "re-run that shard (lockgen all --shard I/N) on this commit" in run.err
    assert str(shards[0]) not in run.err  # the current shard is fine
    assert _files(merged / "locks") == before  # nothing written


def test_merge_records_a_cell_its_shard_failed(tmp_path, released):
    """A failed cell keeps its old lock and the manifest records it, as in a single run."""
    broken = "alpha=={{ pins.alpha }}\nbeta\n{% if os == 'windows' %}no-such-package{% endif %}\n"
    (released / "templates" / "requirements.in.j2").write_text(broken)
    full = _checkout(released, tmp_path / "full")
    assert run_cli("all", "-C", str(full)).code == 1
    dirs = []
    for i in (1, 2):
        shard = _checkout(released, tmp_path / f"shard-{i}")
        assert run_cli("all", "--shard", f"{i}/2", "-C", str(shard)).code == (1 if i == 2 else 0)
        dirs.append(str(shard / "locks"))
    merged = _checkout(released, tmp_path / "merged")
    run = run_cli("merge", *dirs, "-C", str(merged))
    assert run.code == 1
    assert "windows-x86_64-cpu-py3.12: failed in its shard" in run.err
    assert _files(merged / "locks") == _files(full / "locks")


def test_shard_option_only_on_all_and_matrix(released):
    run = run_cli("check", "--shard", "1/2", "-C", str(released))
    assert run.code == 2
    assert "--shard does not apply to check (only to all, matrix)" in run.err
    run = run_cli("all", "--shard", "3/2", "-C", str(released))
    assert run.code == 2
    assert "--shard 3/2: I must be between 1 and N" in run.err


def test_matrix_lists_the_cells_all_locks_in_a_shard(tmp_path):
    """``matrix --shard`` chooses as ``all --shard`` does: an alias's cell goes with the alias,
    even when ``--only`` left that cell out."""
    root = write_project(
        tmp_path, CONFIG.format(index="https://pypi.org/simple", alpha="1.0"), {"requirements.in.j2": REQUIREMENTS}
    )
    run = run_cli("matrix", "--json", "--only", "arch=aarch64", "--shard", "1/1", "-C", str(root))
    assert run.code == 0, run.err
    names = [row["name"] for row in json.loads(run.out)]
    assert names.index("windows-x86_64-cpu-py3.12") < names.index("windows-aarch64-cpu-py3.12")
