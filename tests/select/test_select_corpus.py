"""Every recorded machine of tests/support/select_corpus.py gets its expected cell or refusal (issue 19)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgen import cellselect as select
from tests.support.select_corpus import MACHINES, MANIFESTS, Machine
from tests.support.select_samples import fake_run


def kfd_tree(root: Path, versions: tuple[int, ...]) -> str:
    for node, version in enumerate(versions):
        folder = root / "class" / "kfd" / "kfd" / "topology" / "nodes" / str(node)
        folder.mkdir(parents=True)
        (folder / "properties").write_text(
            f"cpu_cores_count 0\nsimd_count {64 if version else 0}\ngfx_target_version {version}\n"
        )
    return str(root)


def decide(machine: Machine, sysfs: str) -> tuple[int, str]:
    """(0, cell and the optional layers it goes without) or (2, the error and its notes), as the
    CLI prints them."""
    flags = list(machine.flags)
    cell = flags[flags.index("--cell") + 1] if "--cell" in flags else None
    facts = select.gather({}, fake_run(machine.outputs), system=machine.system, machine=machine.machine, sysfs=sysfs)
    try:
        chosen = select.select_cell(facts, MANIFESTS[machine.manifest], "3.12", "--cpu" in flags, cell=cell)
    except select.Refused as exc:
        return 2, "\n".join([exc.message, *exc.notes])
    except select.SelectError as exc:
        return 2, str(exc)
    skipped = [layer["name"] for layer in chosen.skipped_layers]
    assert not {layer["name"] for layer in chosen.layers} & set(skipped)  # what to install leaves them out
    return 0, " ".join([chosen.cell, *skipped])


def test_the_corpus_is_large_and_varied() -> None:
    assert len(MACHINES) >= 30 and len({m.name for m in MACHINES}) == len(MACHINES)
    assert {m.system for m in MACHINES} == {"linux", "win32", "darwin"}
    assert sum(m.expect.startswith("refused:") for m in MACHINES) >= 10
    assert sum(bool(m.layers_skipped) for m in MACHINES) >= 3 and {m.manifest for m in MACHINES} == set(MANIFESTS)


@pytest.mark.parametrize("machine", MACHINES, ids=[m.name for m in MACHINES])
def test_each_machine_gets_its_cell_or_refusal(machine: Machine, tmp_path: Path) -> None:
    sysfs = kfd_tree(tmp_path, machine.kfd) if machine.kfd else str(tmp_path / "none")
    code, said = decide(machine, sysfs)
    if machine.expect.startswith("refused: "):
        assert code == 2 and machine.expect.removeprefix("refused: ") in said, said
    else:
        assert (code, said) == (0, " ".join([machine.expect, *machine.layers_skipped]))
