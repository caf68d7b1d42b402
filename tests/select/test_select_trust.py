"""The selector trusts nothing it reads (issue 15, its selector part): bounded parsing of the
manifest (depth, integer size, huge numbers), lock and layer paths confined to the locks
folder, and no traceback for any input: hostile manifests and random damage."""

from __future__ import annotations

import copy
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from lockgen import cellselect as select
from tests.support.select_samples import cli, manifest

LINUX = ("--os", "linux", "--arch", "x86_64", "--cuda", "13.0")


def write(tmp_path: Path, text: str) -> str:
    folder = tmp_path / "locks"
    folder.mkdir(exist_ok=True)
    (folder / "manifest.json").write_text(text)
    return str(folder / "manifest.json")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"format": 4, "cells": ' + "[" * 40 + "]" * 40 + "}", "cells" + "[0]" * 31 + ": nested deeper than 32 levels"),
        ('{"format": 4, "cells": ' + "[" * 5000 + "]" * 5000 + "}", "(top level): nested deeper than 32 levels"),
        ('{"format": ' + "9" * 5000 + "}", "format: the number 5000 characters is out of range"),
        ('{"format": 4, "detect": {"nvidia": [{"refuse-compute-capability": 1e999}]}}', "detect.nvidia[0].refuse-compute-capability"),
        ('{"format": 4, "x": NaN}', "x: the number 'NaN' is out of range"),
        ('{"format": -' + "1" * 30 + "}", "format: the number"),
    ],
    ids=["deep-nesting", "too-deep-for-the-parser", "5000-digit-integer", "huge-capability", "nan", "long-negative"],
)  # fmt: skip
def test_hostile_numbers_and_nesting_name_the_field(tmp_path: Path, text: str, said: str) -> None:
    code, out, err = cli("--manifest", write(tmp_path, text), *LINUX)
    assert code == 2 and said in err and "Traceback" not in err, err
    assert err.startswith("error: ") and out == ""


def test_a_capability_out_of_range_is_a_rules_problem() -> None:
    rules = copy.deepcopy(manifest()["detect"])
    rules["nvidia"][2]["refuse-compute-capability"] = 10**15
    with pytest.raises(select.RulesError, match=r"detect.nvidia\[2\].refuse-compute-capability"):
        select.DetectRules.from_dict(rules)


@pytest.mark.parametrize(
    ("lock", "field"),
    [
        ("../../etc/passwd", "layers[1].lock"),
        ("/etc/passwd", "layers[1].lock"),
        ("locks/../../x.txt", "layers[1].lock"),
        ("C:/Windows/x.txt", "layers[1].lock"),
        ("locks\\..\\x.txt", "layers[1].lock"),
        ("other/linux-x86_64-cu130-py3.12/optional-flash-attn.txt", "is outside the cell's locks folder"),
    ],
    ids=["dotdot", "absolute", "inner-dotdot", "drive", "backslash", "another-folder"],
)
def test_layer_lock_paths_stay_in_the_locks_folder(tmp_path: Path, lock: str, field: str) -> None:
    data = manifest()
    data["cells"]["linux-x86_64-cu130-py3.12"]["layers"][1]["lock"] = lock
    code, out, err = cli("--manifest", write(tmp_path, json.dumps(data)), *LINUX)
    assert code == 2 and out == "" and field in err and "Traceback" not in err, err


def test_a_main_lock_and_a_layer_name_are_checked_too(tmp_path: Path) -> None:
    data = manifest()
    entry = data["cells"]["linux-x86_64-cu130-py3.12"]
    entry["lock"] = "../x.txt"
    code, _, err = cli("--manifest", write(tmp_path, json.dumps(data)), *LINUX)
    assert code == 2 and "cells.linux-x86_64-cu130-py3.12.lock" in err
    entry["lock"] = "locks/linux-x86_64-cu130-py3.12.txt"
    entry["layers"][1]["name"] = "../../../../x"
    code, _, err = cli("--manifest", write(tmp_path, json.dumps(data)), *LINUX)
    assert code == 2 and "layers[1].name" in err


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks here")
def test_a_symlink_out_of_the_locks_folder_is_refused(tmp_path: Path) -> None:
    path = Path(write(tmp_path, json.dumps(manifest())))
    outside = tmp_path / "outside"
    outside.mkdir()
    (path.parent / "linux-x86_64-cu130-py3.12").symlink_to(outside)
    code, _, err = cli("--manifest", str(path), *LINUX)
    assert code == 2 and "resolves outside the locks folder" in err
    (path.parent / "linux-x86_64-cu130-py3.12").unlink()
    code, out, _ = cli("--manifest", str(path), *LINUX)
    assert code == 0 and out.startswith("linux-x86_64-cu130-py3.12")


def _mutations(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """``value`` with random parts replaced by values of other types."""
    choices: list[Any] = [None, True, -1, 0, 2**70, 1e300, "", "../../x", [], {}, [1, "a"], {"a": None}, "x" * 3000]
    if rng.random() < 0.004 * (depth + 1):
        return rng.choice(choices)
    if isinstance(value, dict):
        return {k: _mutations(rng, v, depth + 1) for k, v in value.items() if rng.random() > 0.003}
    if isinstance(value, list):
        return [_mutations(rng, v, depth + 1) for v in value if rng.random() > 0.003]
    return value


def test_no_traceback_on_any_damaged_manifest(tmp_path: Path) -> None:
    """300 random damages of a valid manifest: each gives exit 0 or 2, never another failure."""
    rng = random.Random(19)
    seen = set()
    for index in range(300):
        text = json.dumps(_mutations(rng, manifest()))
        if index % 10 == 0:  # damaged bytes as well
            raw = bytearray(text.encode())
            for _ in range(5):
                raw[rng.randrange(len(raw))] = rng.randrange(256)
            text = raw.decode("utf-8", "replace")
        code, _, err = cli("--manifest", write(tmp_path, text), *LINUX, "--json")
        assert code in (0, 2), err
        assert "Traceback" not in err and "unexpected" not in err, (err, text[:2000])
        seen.add(code)
    assert seen == {0, 2}


def test_an_unexpected_exception_is_still_an_error_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(select, "select_cell", broken)
    code, _, err = cli("--manifest", write(tmp_path, json.dumps(manifest())), *LINUX)
    assert code == 2 and err.startswith("error: unexpected ZeroDivisionError in cellselect.py: a bug")


# ---- lock paths: where the manifest format puts them, beside the manifest (attacker review 1) --

CELL = "linux-x86_64-cu130-py3.12"


def _symlinked(folder: Path, rel: str, target: Path) -> None:
    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
    (folder / rel).symlink_to(target)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks here")
@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda e, f, t: e.update(lock="evil/main.txt"), "is not in the folder of the manifest"),
        (lambda e, f, t: (e.update(lock="locks/main.txt"), e["layers"][0].update(lock="locks/main.txt")),
         "is not the cell's lock locks/linux-x86_64-cu130-py3.12.txt"),
        (lambda e, f, t: e["layers"][1].update(lock="locks/linux-x86_64-cu130-py3.12/sub/x.txt"),
         "is not where the manifest format puts it"),
        (lambda e, f, t: e["layers"][1].update(lock=e["lock"]), "is not where the manifest format puts it"),
        (lambda e, f, t: (e["layers"].append(dict(e["layers"][1])),), "is named by another layer too"),
        (lambda e, f, t: _symlinked(f, f"{CELL}.txt", t), "resolves outside the locks folder"),
        (lambda e, f, t: _symlinked(f, f"{CELL}/{e['layers'][1]['name']}.txt", t), "resolves outside the locks folder"),
        (lambda e, f, t: _symlinked(f, CELL, t.parent), "resolves outside the locks folder"),
        (lambda e, f, t: [e.update(lock=f"deps/{CELL}.txt")] + [layer.update(lock="deps/" + layer["lock"].split("/", 1)[1]) for layer in e["layers"]],
         "is not in the folder of the manifest"),
    ],
    ids=["main-elsewhere", "main-not-the-cells", "layer-in-a-subfolder", "layer-is-the-main-lock", "two-layers-one-file",
         "main-symlink-out", "layer-symlink-out", "cell-folder-symlink-out", "another-folder-name"],
)  # fmt: skip
def test_lock_paths_are_where_the_format_puts_them_beside_the_manifest(tmp_path: Path, edit: Any, said: str) -> None:
    data = manifest()
    entry = data["cells"][CELL]
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0\n")
    path = Path(write(tmp_path, "{}"))
    edit(entry, path.parent, secret)
    path.write_text(json.dumps(data))
    code, out, err = cli("--manifest", str(path), *LINUX)
    assert code == 2 and out == "" and said in err and "Traceback" not in err, err
    assert "root:x" not in err


def test_the_locks_folder_may_have_another_name(tmp_path: Path) -> None:
    data = manifest()
    for entry in data["cells"].values():
        for holder in [entry, *entry.get("layers", [])]:
            if isinstance(holder.get("lock"), str):
                holder["lock"] = "deps/locks/" + holder["lock"].split("/", 1)[1]
    path = tmp_path / "deps" / "locks" / "manifest.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    code, out, err = cli("--manifest", str(path), *LINUX)
    assert code == 0 and out.startswith(f"{CELL}: deps/locks/{CELL}.txt"), err


# ---- an unterminated string is refused at once ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ['"' + '\\"' * 500_000, '"' + "\\" * 1_000_001, '["' + '\\"' * 500_000, '{"a": "' + "x\\" * 500_000],
    ids=["escaped-quotes", "backslashes", "in-a-list", "trailing-backslash"],
)
def test_a_1_mb_unterminated_string_is_not_json(text: str) -> None:
    """(A depth pre-scan of its own once rescanned such a string from each quote inside it: 69 s
    for 80 KB; json.loads reads it once.)"""
    with pytest.raises(select.InputError, match="not JSON"):
        select.loads_bounded(text, "m.json")


@pytest.mark.parametrize("option", ["--manifest", "--gpu-query"])
@pytest.mark.parametrize("shape", ["fifo", "folder", "dev-zero"])
def test_a_manifest_or_query_that_is_no_regular_file_is_refused_unread(tmp_path: Path, option: str, shape: str) -> None:
    """A FIFO named as the manifest (or a saved GPU query) would make a blocking ``open`` wait
    for a writer for ever; a folder or a device is no file either: each is refused by name."""
    path = tmp_path / "hostile"
    if shape == "fifo":
        os.mkfifo(path)
    elif shape == "folder":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")
    good = write(tmp_path, json.dumps(manifest()))
    args = ("--manifest", str(path)) if option == "--manifest" else ("--manifest", good, "--gpu-query", str(path))
    code, _, err = cli(*args, *LINUX)
    assert code == 2 and "not a regular file" in err and "Traceback" not in err, err
