"""lockgen diff: read lock sets (folders, git revisions), their changes, grouping and formats.

Fast: hand-made locks written through the lock model (``tests/support/locksets.py``); no uv, no network.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from lockgen.locks.diff import Change, Group, Kind, diff, group
from lockgen.locks.diffcmd import diff_command
from lockgen.locks.diffformat import COMMENT_LIMIT, render_json, render_markdown, render_text
from lockgen.locks.lock import LayerKind, Unavailable
from lockgen.locks.lockset import LockSet
from lockgen.locks.report import change_report, upgrade_outcome
from lockgen.runtime.errors import UsageError
from tests.support.locksets import CU, MYLIB, CellSpec, LayerSpec, Pin, base_cells, write_locks

A, B, C = "linux-x86_64-cu130-py3.12", "linux-x86_64-cu130-py3.13", "windows-x86_64-cpu-py3.12"
Cells = dict[str, CellSpec]
Row = tuple[str | None, str, str, str, str, bool, int, int]  # package, kind, old, new, layer, flagged, count, total


def rows(groups: list[Group]) -> set[Row]:
    return {(g.package, g.kind.value, g.old, g.new, g.layer, g.flagged, g.count, g.total) for g in groups}


def compare(tmp_path: Path, change: Callable[[Cells], None], manifest: dict[str, object] | None = None) -> list[Group]:
    old = write_locks(tmp_path / "old", base_cells())
    cells = base_cells()
    change(cells)
    new = write_locks(tmp_path / "new", cells, manifest)
    return group(diff(LockSet.from_folder(old), LockSet.from_folder(new)))


# --------------------------------------------------------------------------- every kind


def _all(edit: Callable[[CellSpec], None], only: tuple[str, ...] = (A, B, C)) -> Callable[[Cells], None]:
    def change(cells: Cells) -> None:
        for name in only:
            edit(cells[name])

    return change


def _set(name: str, pin: Pin, layer: str | None = None) -> Callable[[CellSpec], None]:
    def edit(cell: CellSpec) -> None:
        (cell.layers[layer].pins if layer else cell.pins)[name] = pin

    return edit


def _became_unavailable(cell: CellSpec) -> None:
    del cell.layers["optional-flash-attn"]
    cell.unavailable.append(Unavailable(requirement="flash-attn>=2.8", reason="no wheel URL fits this target"))


def _cell_added(cells: Cells) -> None:
    cells["macos-aarch64-mps-py3.12"] = base_cells(("macos-aarch64-mps-py3.12",))["macos-aarch64-mps-py3.12"]


NEW_SHA = "f" * 64
FA_PAGES = ("https://wheels.example.org/fa/", "https://wheels.example.org/natten/")


def _moved_layer(pages: tuple[str, ...]) -> Callable[[CellSpec], None]:
    """The flash-attn layer's pages become ``pages`` and its wheel another file (other hash)."""

    def edit(cell: CellSpec) -> None:
        cell.layers["optional-flash-attn"].find_links = pages
        cell.layers["optional-flash-attn"].pins["flash-attn"] = Pin("2.8.2", digest=NEW_SHA)

    return edit


RELEASES = "https://github.com/x/fa/releases/download"
CASES: list[tuple[str, Callable[[Cells], None], set[Row]]] = [
    ("upgrade", _all(_set("matplotlib", Pin("3.10.3"))), {("matplotlib", "upgrade", "3.10.1", "3.10.3", "main", False, 3, 3)}),
    ("upgrade-2-of-3", _all(_set("matplotlib", Pin("3.10.3")), (A, B)),
     {("matplotlib", "upgrade", "3.10.1", "3.10.3", "main", False, 2, 3)}),
    ("downgrade", _all(_set("numpy", Pin("2.4.4"))), {("numpy", "downgrade", "2.4.5", "2.4.4", "main", True, 3, 3)}),
    ("added", _all(_set("einops", Pin("0.8.1"))), {("einops", "added", "", "0.8.1", "main", False, 3, 3)}),
    ("removed", _all(lambda c: c.pins.pop("matplotlib")), {("matplotlib", "removed", "3.10.1", "", "main", False, 3, 3)}),
    ("label", _all(_set("torch", Pin("2.13.0+cu130", where=CU.format(flavor="cu130")))),
     {("torch", "label", "2.13.0+cu126", "2.13.0+cu130", "main", False, 3, 3)}),
    ("source-index", _all(_set("numpy", Pin("2.4.5", where="https://mirror.example.org/numpy"))),
     {("numpy", "source", "files.pythonhosted.org/packages", "mirror.example.org/numpy", "main", False, 3, 3)}),
    # a layer lock names no file's place, only the pages of its header: identical lines are no change (issue 18)
    ("layer-page-moved-same-lines", _all(lambda c: setattr(c.layers["optional-flash-attn"], "find_links", ("https://other.example.org/fa/",))),
     set()),
    ("layer-gains-a-page", _all(lambda c: setattr(c.layers["optional-flash-attn"], "find_links", FA_PAGES)), set()),
    ("layer-page-moved-other-files", _all(_moved_layer(("https://other.example.org/fa/",))),
     {("flash-attn", "source", "wheels.example.org/fa", "other.example.org/fa", "optional-flash-attn", False, 3, 3)}),
    ("layer-gains-a-page-other-files", _all(_moved_layer(FA_PAGES)),
     {("flash-attn", "hash", "2.8.2", "2.8.2", "optional-flash-attn", True, 3, 3)}),
    ("hash", _all(_set("numpy", Pin("2.4.5", digest=NEW_SHA)), (C,)), {("numpy", "hash", "2.4.5", "2.4.5", "main", True, 1, 3)}),
    ("files-added", _all(_set("numpy", Pin("2.4.5", extra=(NEW_SHA,))), (C,)), {("numpy", "files", "2.4.5", "2.4.5", "main", False, 1, 3)}),
    ("vcs", _all(_set("mylib", Pin(None, url=MYLIB + "b" * 40), "unhashed")),
     {("mylib", "vcs", "a" * 40, "b" * 40, "unhashed", False, 3, 3)}),
    ("upgrade-pypi-paths-move", _all(_set("numpy", Pin("2.4.6"))), {("numpy", "upgrade", "2.4.5", "2.4.6", "main", False, 3, 3)}),
    ("direct-url-upgrade",
     _all(_set("flash-attn", Pin("2.8.3", url=f"{RELEASES}/v2.8.3/flash_attn-2.8.3-py3-none-any.whl"), "optional-flash-attn")),
     {("flash-attn", "source", "wheels.example.org/fa", "github.com/x/fa/releases/download/v2.8.3", "optional-flash-attn", False, 3, 3),
      ("flash-attn", "upgrade", "2.8.2", "2.8.3", "optional-flash-attn", False, 3, 3)}),
    ("cell-added", _cell_added, {(None, "cell-added", "", "", "main", False, 1, 4)}),
    ("cell-removed", lambda cells: cells.pop(C), {(None, "cell-removed", "", "", "main", False, 1, 3)}),
    ("layer-added", _all(lambda c: c.layers.update(nd=LayerSpec(LayerKind.NO_DEPS, {"lycoris": Pin("3.1.0")}))),
     {(None, "layer-added", "", "no-deps", "nd", False, 3, 3), ("lycoris", "added", "", "3.1.0", "nd", False, 3, 3)}),
    ("layer-removed", _all(lambda c: c.layers.pop("unhashed")),
     {(None, "layer-removed", "unhashed", "", "unhashed", False, 3, 3),
      ("mylib", "removed", MYLIB + "a" * 40, "", "unhashed", False, 3, 3)}),
    ("copy-without-pylock", _all(lambda c: setattr(c, "pylock", False)), set()),
    ("became-unavailable", _all(_became_unavailable, (B,)),
     {("flash-attn", "unavailable", "2.8.2", "no wheel URL fits this target", "optional-flash-attn", True, 1, 3)}),
]  # fmt: skip


@pytest.mark.parametrize(("change", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_kind(tmp_path: Path, change: Callable[[Cells], None], expected: set[Row]) -> None:
    assert rows(compare(tmp_path, change)) == expected


def test_available_again(tmp_path: Path) -> None:
    old_cells = base_cells()
    _became_unavailable(old_cells[A])
    old = LockSet.from_folder(write_locks(tmp_path / "old", old_cells))
    new = LockSet.from_folder(write_locks(tmp_path / "new", base_cells()))
    assert rows(group(diff(old, new))) == {
        ("flash-attn", "available", "no wheel URL fits this target", "2.8.2", "optional-flash-attn", False, 1, 3)
    }


def test_no_changes(tmp_path: Path) -> None:
    assert compare(tmp_path, lambda cells: None) == []


def test_crlf_copy_is_no_change(tmp_path: Path) -> None:
    old = write_locks(tmp_path / "old", base_cells())
    crlf = tmp_path / "crlf"
    for path in old.rglob("*"):
        if path.is_file():
            target = crlf / path.relative_to(old)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert diff(LockSet.from_folder(old), LockSet.from_folder(crlf)) == []


def test_removed_cell_counts_against_the_old_set_and_names_its_status(tmp_path: Path) -> None:
    manifest = {"format": 2, "cells": {C: {"status": "failed", "reason": "no torch wheel"}}}
    groups = compare(tmp_path, lambda cells: cells.pop(C), manifest)
    assert rows(groups) == {(None, "cell-removed", "", "failed: no torch wheel", "main", False, 1, 3)}
    assert render_text(groups) == f"cell removed (now failed: no torch wheel) (1 of 3 cells: {C})\n"


def test_cell_now_an_alias(tmp_path: Path) -> None:
    manifest = {"format": 2, "cells": {C: {"status": "alias", "alias_of": A}, A: {"status": "locked"}}}
    groups = compare(tmp_path, lambda cells: cells.pop(C), manifest)
    assert rows(groups) == {(None, "cell-removed", "", f"alias: alias of {A}", "main", False, 1, 3)}


def test_unreadable_lock_is_reported_not_a_crash(tmp_path: Path) -> None:
    old = write_locks(tmp_path / "old", base_cells())
    new = write_locks(tmp_path / "new", base_cells())
    (new / f"{B}.txt").write_text((new / f"{B}.txt").read_text().replace("numpy==2.4.5", "numpy>=2"))
    (new / "notes.md").write_text("not a lock\n")
    after = LockSet.from_folder(new)
    assert [p.cell for p in after.problems] == [B] and "is not pinned with ==" in after.problems[0].message
    groups = group(diff(LockSet.from_folder(old), after))
    assert [(g.kind, g.flagged, g.cells) for g in groups] == [(Kind.UNREADABLE, True, (B,))]
    assert groups[0].new.startswith("'numpy>=2' is not pinned with ==")
    assert groups[0].details[0][1].startswith(f"{new}/{B}.txt:")
    shown = f"Needs a look:\n  ! cannot read the main lock: 'numpy>=2' is not pinned with == (1 of 3 cells: {B})\n"
    assert render_text(groups).startswith(shown)


def test_old_format_locks_group_into_one_line(tmp_path: Path) -> None:
    old = write_locks(tmp_path / "old", base_cells())
    for cell in (A, B, C):
        (old / f"{cell}.txt").write_text((old / f"{cell}.txt").read_text().replace("# kind: main\n", ""))
    groups = group(diff(LockSet.from_folder(old), LockSet.from_folder(write_locks(tmp_path / "new", base_cells()))))
    assert render_text(groups) == (
        "the old main lock could not be read: written by an older lockgen (lock format 1, before layers: its header "
        "has no 'kind'); re-lock the cell with this lockgen (lockgen all) (3 of 3 cells)\n"
    )


def test_an_older_lockgen_format_says_so(tmp_path: Path) -> None:
    """A lock an older lockgen wrote (untouched: its digest holds) is named as such, not as a
    broken file (issue 15's message list, in diff's use of the lock model)."""
    from lockgen.locks.lock import DIGEST, text_sha256

    old = write_locks(tmp_path / "old", base_cells())
    for cell in (A, B, C):
        path = old / f"{cell}.txt"
        head, _, body = path.read_text().partition("\n\n")
        lines = [line for line in head.split("\n") if line != "# kind: main" and not line.startswith(f"# {DIGEST}: ")]
        text = "\n".join(lines) + "\n\n" + body
        head, _, body = text.partition("\n\n")
        path.write_text(f"{head}\n# {DIGEST}: {text_sha256(text)}\n\n{body}")
    groups = group(diff(LockSet.from_folder(old), LockSet.from_folder(write_locks(tmp_path / "new", base_cells()))))
    assert render_text(groups) == (
        "the old main lock could not be read: written by an older lockgen (lock format 1, before layers: its header "
        "has no 'kind'); re-lock the cell with this lockgen (lockgen all) (3 of 3 cells)\n"
    )


def test_hash_change_names_the_file_and_needs_a_look(tmp_path: Path) -> None:
    groups = compare(tmp_path, _all(_set("numpy", Pin("2.4.5", digest="f" * 64)), (C,)))
    assert groups[0].details == ((C, "sha256 of numpy-2.4.5-py3-none-any.whl changed"),)
    text = render_text(groups)
    assert text.startswith("Needs a look:\n  ! numpy 2.4.5: hashes changed, same version and source (suspicious")
    assert f"    {C}: sha256 of numpy-2.4.5-py3-none-any.whl changed" in text


# --------------------------------------------------------------------------- formats


def _sample(tmp_path: Path) -> list[Group]:
    def change(cells: Cells) -> None:
        for name in (A, B, C):
            cells[name].pins["matplotlib"] = Pin("3.10.3")
        cells[A].pins["numpy"] = Pin("2.4.4")

    return compare(tmp_path, change)


def test_text(tmp_path: Path) -> None:
    assert render_text(_sample(tmp_path)) == (
        "Needs a look:\n"
        f"  ! numpy 2.4.5 → 2.4.4 (downgrade) (1 of 3 cells: {A})\n"
        "Changes:\n"
        "  matplotlib 3.10.1 → 3.10.3 (3 of 3 cells)\n"
    )
    assert render_text([]) == "no changes\n"


def test_markdown(tmp_path: Path) -> None:
    text = render_markdown(_sample(tmp_path), title="Lock changes: HEAD → work tree")
    assert text.startswith(
        "## Lock changes: HEAD → work tree\n\n**2 packages changed in 3 cells; 1 flagged.**\n\n"
        "| package | change | cells |\n|---|---|---|\n"
        f"| ⚠️ **numpy** | 2.4.5 → 2.4.4 (downgrade) | 1 of 3 cells: {A} |\n"
        "| **matplotlib** | 3.10.1 → 3.10.3 | 3 of 3 cells |\n"
    )
    assert f"<details><summary>{A} (2 changes)</summary>\n\n- ⚠️ numpy 2.4.5 → 2.4.4 (downgrade)\n" in text
    # the other two cells have the same one change: one block names both
    assert text.endswith(
        f"<details><summary>2 cells: {B}, {C} (1 change each)</summary>\n\n- matplotlib 3.10.1 → 3.10.3\n\n</details>\n\n"
    )
    assert text.count("<details>") == 2 and text.count("</details>") == 2
    assert render_markdown([]) == "## Lock changes\n\nNo changes.\n"


def test_markdown_is_cut_below_githubs_limit(tmp_path: Path) -> None:
    changes = [
        Change(package=f"pkg-{i:05d}", kind=Kind.UPGRADE, old="1.0", new="2.0", cell=f"cell-{c:02d}", total=12)  # type: ignore[arg-type]
        for i in range(3000)
        for c in range(12 if i % 2 else 3)
    ]
    groups = group(changes)
    text = render_markdown(groups)
    assert len(text.encode()) < COMMENT_LIMIT - 1000
    shown = text.count("\n| **pkg-")
    assert 0 < shown < len(groups)
    assert f"_… {len(groups) - shown} more groups not shown; see `lockgen diff` locally._" in text


def test_markdown_cuts_details_when_the_table_fits(tmp_path: Path) -> None:
    changes = [
        Change(package=f"pkg-{i:03d}", kind=Kind.UPGRADE, old="1.0", new="2.0", cell=f"cell-{c:02d}", total=40)  # type: ignore[arg-type]
        for i in range(60)
        for c in range(40)
    ]
    changes += [
        Change(package=f"only-{c:02d}", kind=Kind.ADDED, old="", new="1.0", cell=f"cell-{c:02d}", total=40)  # type: ignore[arg-type]
        for c in range(40)
    ]  # one change of its own per cell: 40 different blocks
    text = render_markdown(group(changes), limit=20_000)
    assert len(text.encode()) <= 20_000 and text.count("\n| **pkg-") == 60
    shown = text.count("<details>")
    assert 0 < shown < 40
    assert f"_… details of {40 - shown} more cells not shown; see `lockgen diff` locally._" in text


def test_markdown_one_block_for_cells_with_the_same_changes(tmp_path: Path) -> None:
    """One bump hitting all 12 cells is one ``<details>`` naming them, not 12 identical ones."""
    cells = [f"cell-{c:02d}" for c in range(12)]
    changes = [
        Change(package="matplotlib", kind=Kind.UPGRADE, old="3.10.1", new="3.10.3", cell=c, total=12) for c in cells
    ]  # type: ignore[arg-type]
    text = render_markdown(group(changes))
    assert text.count("<details>") == 1
    assert f"<details><summary>12 cells: {', '.join(cells)} (1 change each)</summary>" in text


def test_json_shape(tmp_path: Path) -> None:
    data = json.loads(render_json(_sample(tmp_path)))
    assert data[0] == {
        "package": "numpy", "kind": "downgrade", "old": "2.4.5", "new": "2.4.4", "layer": "main", "flagged": True,
        "cells": [A], "count": 1, "total": 3, "details": {},
    }  # fmt: skip
    assert [list(item) for item in data] == [sorted(item) for item in data]
    assert render_json([]) == "[]\n"


# --------------------------------------------------------------------------- run report


def test_change_report_counts_the_cells_the_run_touched(tmp_path: Path) -> None:
    old = LockSet.from_folder(write_locks(tmp_path / "old", base_cells()))
    cells = base_cells()
    for cell in cells.values():
        cell.pins["numpy"] = Pin("2.4.6")
    new = LockSet.from_folder(write_locks(tmp_path / "new", cells))
    report = change_report(old, new, [A, B])
    assert report.lines() == ["numpy 2.4.5 → 2.4.6 (2 of 2 cells)"]
    assert report.to_json()[0]["cells"] == [A, B]
    assert change_report(old, old, [A]).lines() == ["no lock changes"]


@pytest.mark.parametrize(
    ("moved", "name", "expected"),
    [
        ((A, B, C), "numpy", "numpy 2.4.5 → 2.4.6 in 3 cells"),
        ((), "NumPy", "numpy: kept at 2.4.5 in 3 cells"),
        ((A,), "numpy", "numpy 2.4.5 → 2.4.6 in 1 cell; kept at 2.4.5 in 2 cells"),
        ((), "flash-attn", "flash-attn: kept at 2.8.2 in 3 cells"),
        ((), "scipy", "scipy: not in any selected cell"),
    ],
    ids=["all-moved", "none-moved", "some-moved", "in-a-layer", "absent"],
)
def test_upgrade_outcome(tmp_path: Path, moved: tuple[str, ...], name: str, expected: str) -> None:
    old = LockSet.from_folder(write_locks(tmp_path / "old", base_cells()))
    cells = base_cells()
    for cell in moved:
        cells[cell].pins["numpy"] = Pin("2.4.6")
    new = LockSet.from_folder(write_locks(tmp_path / "new", cells))
    assert upgrade_outcome(name, old, new) == expected


def test_upgrade_outcome_says_what_holds_each_cell(tmp_path: Path) -> None:
    old = LockSet.from_folder(write_locks(tmp_path / "old", base_cells()))
    held = {
        A: "the pin templates/requirements.in.j2:3: numpy==2.4.5",
        B: "the pin templates/requirements.in.j2:3: numpy==2.4.5",
    }
    assert upgrade_outcome("numpy", old, old, held=held) == (
        "numpy: kept at 2.4.5 in 2 cells, held by the pin templates/requirements.in.j2:3: numpy==2.4.5; "
        "kept at 2.4.5 in 1 cell"
    )


# --------------------------------------------------------------------------- git revisions and the command


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)}  # fmt: skip
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main", *args],
                   cwd=root, env=env, check=True, capture_output=True)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose project lives in ``proj/``: a first commit of the locks, a second
    that upgrades matplotlib, and an uncommitted downgrade of numpy."""
    root = tmp_path / "repo"
    project = root / "proj"
    write_locks(project / "locks", base_cells())
    _git(root.parent, "init", "-q", str(root))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "locks")
    cells = base_cells()
    for cell in cells.values():
        cell.pins["matplotlib"] = Pin("3.10.3")
    write_locks(project / "locks", cells)
    _git(root, "commit", "-q", "-am", "bump matplotlib")
    cells[A].pins["numpy"] = Pin("2.4.4")
    write_locks(project / "locks", cells)
    return project


#: The line a diff ends with when one cell's numpy moves alone (lockgen.locks.spread.changes).
APPEARS = "now differs across cells: numpy: 2.4.5, 2.4.6\n"


def test_git_revisions(repo: Path) -> None:
    out, code = diff_command(repo, "locks", "HEAD~1", "HEAD", "text", exit_code=True)
    assert (out, code) == ("matplotlib 3.10.1 → 3.10.3 (3 of 3 cells)\n", 1)
    out, code = diff_command(repo, "locks", None, None, "text", exit_code=False)
    assert (out, code) == (
        f"Needs a look:\n  ! numpy 2.4.5 → 2.4.4 (downgrade) (1 of 3 cells: {A})\n"
        "now differs across cells: numpy: 2.4.4, 2.4.5\n",  # one cell moved alone: a difference appears
        0,
    )
    assert diff_command(repo, "locks", "HEAD", "HEAD", "json", exit_code=True) == ("[]\n", 0)


def test_git_lockset_reads_layers_and_pylocks(repo: Path) -> None:
    locks = LockSet.from_git(repo, "HEAD", "locks")
    assert sorted(locks.cells) == [A, B, C] and locks.problems == ()
    cell = locks.cells[A]
    assert list(cell.layers) == ["optional-flash-attn", "unhashed"] and cell.pylock is not None
    assert cell.main.header.path == f"locks/{A}.txt"


def test_folder_against_revision_and_markdown(repo: Path, tmp_path: Path) -> None:
    out, code = diff_command(repo, "locks", str(repo / "locks"), "HEAD~1", "markdown", exit_code=True)
    assert out.startswith(f"## Lock changes: {repo / 'locks'} → HEAD~1\n") and code == 1
    assert "| ⚠️ **matplotlib** | 3.10.3 → 3.10.1 (downgrade) | 3 of 3 cells |" in out


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("no-such-rev", None, "no git revision 'no-such-rev'"),
        ("HEAD", "--output=x", "'--output=x' is not a git revision"),
    ],
    ids=["unknown-revision", "option-like"],
)
def test_bad_revision(repo: Path, old: str, new: str | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        diff_command(repo, "locks", old, new, "text", exit_code=False)


def test_outside_git_asks_for_two_folders(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="pass two folders of locks"):
        diff_command(tmp_path, "locks", None, None, "text", exit_code=False)
    old = write_locks(tmp_path / "a", base_cells())
    cells = base_cells()
    cells[C].pins["numpy"] = Pin("2.4.6")
    new = write_locks(tmp_path / "b", cells)
    assert diff_command(tmp_path, "locks", str(old), str(new), "text", exit_code=True) == (
        f"numpy 2.4.5 → 2.4.6 (1 of 3 cells: {C})\n{APPEARS}", 1,
    )  # fmt: skip


def test_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown --format 'html'"):
        diff_command(tmp_path, "locks", str(tmp_path), str(tmp_path), "html", exit_code=False)


@pytest.mark.parametrize(
    "config",
    [("pyproject.toml", "[project]\nname = 'app'\n[tool.lockgen]\n"), ("lockgen.toml", "locks = 'locks'\n"), None],
    ids=["pyproject", "lockgen-toml", "no-config-but-locks"],
)
def test_a_project_folder_with_txt_files_at_its_root(tmp_path: Path, config: tuple[str, str] | None) -> None:
    """A project root holding requirements.txt and LICENSE.txt is still a project folder: its
    locks are in ``locks/`` (those files are not locks lockgen wrote)."""
    sides = []
    for name, numpy in (("old", "2.4.5"), ("new", "2.4.6")):
        project = tmp_path / name
        cells = base_cells()
        cells[C].pins["numpy"] = Pin(numpy)
        write_locks(project / "locks", cells)
        (project / "requirements.txt").write_text("numpy\n")
        (project / "LICENSE.txt").write_text("MIT\n")
        if config is not None:
            (project / config[0]).write_text(config[1])
        sides.append(str(project))
    out, code = diff_command(tmp_path, "locks", *sides, "text", exit_code=True)
    assert (out, code) == (f"numpy 2.4.5 → 2.4.6 (1 of 3 cells: {C})\n{APPEARS}", 1)


def test_a_locks_folder_is_itself_even_beside_a_locks_subfolder(tmp_path: Path) -> None:
    """A folder holding lockgen locks (or manifest.json) is a locks folder, whatever else it holds."""
    old = write_locks(tmp_path / "old", base_cells())
    cells = base_cells()
    cells[C].pins["numpy"] = Pin("2.4.6")
    new = write_locks(tmp_path / "new", cells)
    write_locks(new / "locks", base_cells())  # a stray copy inside must not be read instead
    assert diff_command(tmp_path, "locks", str(old), str(new), "text", exit_code=True)[1] == 1
    for lock in new.glob("*.txt"):
        lock.unlink()
    (new / "manifest.json").write_text("{}\n")
    out, _ = diff_command(tmp_path, "locks", str(old), str(new), "json", exit_code=False)
    assert {row["kind"] for row in json.loads(out)} == {"cell-removed"}


def test_the_command_line_offers_every_diff_format():
    """``lockgen diff`` names the formats itself (building the parser must not import the diff code)."""
    from lockgen.commands import diff
    from lockgen.locks.diffcmd import FORMATS

    assert tuple(FORMATS) == diff.FORMATS


def test_two_folders_need_no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``lockgen diff DIR DIR`` outside any project (a CI job comparing two artifacts)."""
    from tests.conftest import run_cli

    old = write_locks(tmp_path / "a", base_cells())
    cells = base_cells()
    cells[C].pins["numpy"] = Pin("2.4.6")
    write_locks(tmp_path / "b", cells)
    monkeypatch.chdir(tmp_path)
    run = run_cli("diff", "a", str(tmp_path / "b"), "--exit-code")
    assert (run.code, run.out) == (1, f"numpy 2.4.5 → 2.4.6 (1 of 3 cells: {C})\n{APPEARS}"), run.err
    assert old.is_dir()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda folder: folder.mkdir(), re.escape("empty: holds no locks (no lock lockgen wrote, no manifest.json)")),
        (lambda folder: (folder / "notes.txt").parent.mkdir() or (folder / "notes.txt").write_text("x\n"), "empty: holds no locks"),
    ],
    ids=["empty", "no-lock-files"],
)  # fmt: skip
def test_a_folder_without_locks_is_an_error_naming_it(tmp_path: Path, make, message: str) -> None:
    """Not an empty lock set: every cell would read as added, with exit 0."""
    locks = write_locks(tmp_path / "locks", base_cells())
    make(tmp_path / "empty")
    with pytest.raises(UsageError, match=message):
        diff_command(tmp_path, "locks", "empty", str(locks), "text", exit_code=True)


def test_a_project_without_its_locks_folder_is_an_error(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "lockgen.toml").write_text("locks = 'locks'\n")
    locks = write_locks(tmp_path / "other", base_cells())
    with pytest.raises(UsageError, match=r"proj/locks: does not exist"):
        diff_command(tmp_path, "locks", str(project), str(locks), "text", exit_code=False)


def _moved(tmp_path: Path, old: Pin, new: Pin) -> set[Row]:
    """The changes when every cell's numpy moves from ``old`` to ``new``."""
    before, after = base_cells(), base_cells()
    for cell in before.values():
        cell.pins["numpy"] = old
    for cell in after.values():
        cell.pins["numpy"] = new
    a, b = write_locks(tmp_path / "old", before), write_locks(tmp_path / "new", after)
    return rows(group(diff(LockSet.from_folder(a), LockSet.from_folder(b))))


def test_a_version_move_between_two_repositories_of_one_host_is_a_source_change(tmp_path: Path) -> None:
    """Issue 16: Artifactory serves many repositories from one host; a package that moved from the
    pytorch repository to the PyPI one while its version moved is a change of source (the host
    alone did not change)."""
    art = "https://art.example/api/pypi/{repo}/packages/{{digest}}"
    assert _moved(
        tmp_path, Pin("2.4.5", where=art.format(repo="pytorch")), Pin("2.4.6", where=art.format(repo="pypi"))
    ) == {
        ("numpy", "upgrade", "2.4.5", "2.4.6", "main", False, 3, 3),
        ("numpy", "source", "art.example/api/pypi/pytorch/packages", "art.example/api/pypi/pypi/packages", "main", False, 3, 3),
    }  # fmt: skip


def test_a_release_folder_named_after_the_version_moves_with_it(tmp_path: Path) -> None:
    releases = "https://github.com/x/np/releases/download/v{version}"
    old, new = (
        Pin("2.4.5", where=releases.format(version="2.4.5")),
        Pin("2.4.6", where=releases.format(version="2.4.6")),
    )
    assert _moved(tmp_path, old, new) == {("numpy", "upgrade", "2.4.5", "2.4.6", "main", False, 3, 3)}


def test_a_changed_cell_repeats_no_old_reason_and_only_the_first_sentence_of_a_new_one(tmp_path: Path) -> None:
    """The manifest keeps the whole reason. A cell added after a failure says only ``(was
    failed)``: a reason the cell no longer has is not repeated (issue 17); a cell removed names the
    first sentence of its new reason (a fresh-eyes review: a whole uv failure was repeated there)."""
    from dataclasses import replace

    from lockgen.locks.diffformat import describe
    from lockgen.locks.lockset import CellStatus

    reason = (
        "alpha==9.9 has no file for this target. uv said: because there is no version of alpha==9.9 and you "
        "require alpha==9.9, we can conclude that your requirements are unsatisfiable.\nhint: check the index"
    )
    old = LockSet.from_folder(write_locks(tmp_path / "old", base_cells((A, B))))
    old = replace(old, statuses={C: CellStatus(status="failed", reason=reason)})
    new = LockSet.from_folder(write_locks(tmp_path / "new", base_cells()))
    (added,) = group(diff(old, new))
    assert describe(added) == "cell added (was failed)"
    removed = group(diff(new, replace(old, statuses={C: CellStatus(status="skipped", reason="no CUDA index. Later")})))
    assert [describe(g) for g in removed] == ["cell removed (now skipped: no CUDA index)"]
