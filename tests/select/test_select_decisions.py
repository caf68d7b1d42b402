"""The selector's decisions of issue 19: kernel coverage (NVIDIA's compatibility rules, AMD gfx
targets and generic targets), the next cell the rules allow, extra axes routed by GPU facts or
given by hand, ``--cell``, unknown probes, GPUs on the PCI bus without a driver, and the detect
rules checked against the matrix."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from lockgen import cellselect as select
from lockgen.cellselect import Facts, Gpu, PciDevice
from tests.conftest import run_cli
from tests.support.select_corpus import CU126, CU130, MANIFEST
from tests.support.select_samples import NO_SYSFS, cli, fake_run


@pytest.mark.parametrize(
    ("sass", "ptx", "cap", "covered"),
    [
        (["sm_86"], [], (8, 6), "sm_86"),
        (["sm_86"], [], (8, 9), "sm_86"),  # same major, minor not above the device's
        (["sm_86"], [], (8, 0), None),  # minor above
        (["sm_80"], [], (9, 0), None),  # another major
        (["sm_90a"], [], (9, 0), "sm_90a"),  # architecture-specific: only 9.0
        (["sm_100a"], [], (10, 3), None),
        (["sm_100f"], [], (10, 3), "sm_100f"),  # family-specific: the family's later minors
        ([], ["compute_80"], (12, 0), "compute_80"),  # PTX: any newer GPU
        ([], ["compute_90"], (8, 9), None),
        ([], ["compute_120a"], (12, 1), None),
        ([], ["compute_120f"], (12, 1), "compute_120f"),
    ],
)
def test_nvidia_compatibility_rules(sass: list[str], ptx: list[str], cap: tuple[int, int], covered: str | None) -> None:
    assert select.code_covers(sass, ptx, cap) == covered


def test_gfx_targets_and_generic_ones() -> None:
    assert select.gfx_covers(["gfx90a:xnack-"], "gfx90a") == "gfx90a:xnack-"
    assert select.gfx_covers(["gfx11-generic"], "gfx1151") == "gfx11-generic"
    assert select.gfx_covers(["gfx1100"], "gfx1101") is None
    assert select.gfx_from_target_version(90010) == "gfx90a" and select.gfx_from_target_version(0) is None
    assert select.rocm_targets(select.DetectRules(), "rocm6.4") == select.ROCM_GFX["6.4"]
    assert select.rocm_targets(select.DetectRules(), "rocm6.5") == select.ROCM_GFX["6.4"]  # the newest not above
    assert select.rocm_targets(select.DetectRules(amd_targets=("gfx942",)), "rocm7.1") == ("gfx942",)
    assert select.rocm_targets(select.DetectRules(), "rocm9.0") is None


def nvidia(*caps: float, cuda: str = "13.0", **kw: Any) -> Facts:
    gpus = tuple(Gpu(f"GPU {i}", "24576 MiB", "580.65", cap) for i, cap in enumerate(caps))
    return Facts(os="linux", arch="x86_64", interpreter="x86_64", nvidia=True, cuda=cuda, gpus=gpus, **kw)


def test_the_next_cell_the_rules_allow_and_what_json_shows(tmp_path: Path) -> None:
    chosen = select.select_cell(nvidia(6.1), MANIFEST, "3.12")
    assert chosen.cell == "linux-x86_64-cu126-py3.12"
    assert chosen.coverage == ["GPU 0 GPU 0 (compute capability 6.1): torch sm_60"]
    assert [line.split(":")[0] for line in chosen.skipped] == [
        "cell linux-x86_64-cu130-py3.12",
        "cell linux-x86_64-cu128-py3.12",
    ]
    path = tmp_path / "locks" / "manifest.json"
    path.parent.mkdir()
    path.write_text(json.dumps(MANIFEST))
    query = tmp_path / "q.csv"
    query.write_text("NVIDIA GeForce GTX 1080, 8192 MiB, 580.65.06, 6.1\n")
    code, out, _ = cli("--manifest", str(path), "--os", "linux", "--arch", "x86_64", "--cuda", "13.0",
                         "--gpu-query", str(query), "--python", "3.12", "--json")  # fmt: skip
    data = json.loads(out)
    assert code == 0 and data["cell"] == "linux-x86_64-cu126-py3.12" and data["coverage"][0].endswith("torch sm_60")
    assert (
        "no code for GPU 0 NVIDIA GeForce GTX 1080 (compute capability 6.1): torch 2.13.0 has sm_75"
        in data["skipped"][0]
    )


def test_a_refusal_names_the_gpu_its_capability_and_the_list() -> None:
    with pytest.raises(select.Refused) as refused:
        select.select_cell(nvidia(3.7), MANIFEST, "3.12")
    assert "GPU 0 GPU 0 (compute capability 3.7): torch 2.13.0 has sm_75, sm_80" in refused.value.message
    assert any("has sm_50, sm_60, sm_70" in note for note in refused.value.notes)  # the other cells' lists too


def test_code_that_cannot_load_in_the_cell_does_not_count() -> None:
    """torchao 0.10.0's wheel carries sm_80/sm_86 code linked against libcudart.so.12: in a CUDA 13
    cell (torch links libcudart.so.13) it cannot load, so it neither covers nor blocks a GPU."""
    data = copy.deepcopy(MANIFEST)
    entry = data["cells"]["linux-x86_64-cu130-py3.12"]
    code = {"sass": ["sm_80", "sm_86"], "ptx": [], "gfx": []}
    torchao = {"name": "torchao", "version": "0.10.0", "sha256": "b" * 64, **code,
               "linked": [{"needs": ["libcudart.so.13"], **code}]}  # fmt: skip
    entry["coverage"]["wheels"].append(torchao)
    entry["coverage"]["runtimes"] = ["libcudart.so.13"]
    assert select.select_cell(nvidia(9.0), data, "3.12").cell == "linux-x86_64-cu128-py3.12"  # it loads: it blocks
    torchao["linked"][0]["needs"] = ["libcudart.so.12"]
    chosen = select.select_cell(nvidia(9.0), data, "3.12")
    assert chosen.cell == "linux-x86_64-cu130-py3.12"
    assert chosen.coverage[0] == (
        "not counted: torchao 0.10.0: its GPU code is linked against libcudart.so.12, which this cell does not "
        "install (libcudart.so.13): it cannot load here"
    )
    assert chosen.coverage[1] == "GPU 0 GPU 0 (compute capability 9.0): torch sm_90a"
    entry["coverage"]["runtimes"] = ["cudart64_12.dll", "libcudart.so.12", "libcudart.so.13"]  # a cu12 runtime too
    assert select.select_cell(nvidia(9.0), data, "3.12").cell == "linux-x86_64-cu128-py3.12"
    data["detect"]["coverage"] = {"drop": ["sm_90", "sm_90a"], "min-compute-capability": "8.0"}  # only narrows
    entry["coverage"]["wheels"].pop()
    assert select.select_cell(nvidia(9.0), data, "3.12").cell == "linux-x86_64-cu126-py3.12"  # its PTX


def test_a_hand_typed_exemption_is_refused_with_what_to_do() -> None:
    with pytest.raises(select.RulesError) as error:
        select.DetectRules.from_dict({"coverage": {"optional": ["torchao"]}})
    ((path, message),) = error.value.problems
    assert path == "detect.coverage.optional"
    assert "a config may only narrow" in message and "optional layer" in message


def profiles(rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    data = copy.deepcopy(MANIFEST)
    base = data["cells"].pop("linux-x86_64-cu130-py3.12")
    for profile, code in (("legacy", CU126), ("modern", CU130)):
        entry = copy.deepcopy(base)
        entry.update(axes={"profile": profile}, lock=f"locks/linux-x86_64-cu130-py3.12-{profile}.txt")
        entry["layers"][0]["lock"] = entry["lock"]
        entry["coverage"]["wheels"][0].update(code)
        data["cells"][f"linux-x86_64-cu130-py3.12-{profile}"] = entry
    if rules is not None:
        data["detect"] = {**data["detect"], "axes": {"profile": rules}}
    return data


def test_extra_axes_by_rules_by_hand_or_by_coverage() -> None:
    rules = [
        {"value": "legacy", "compute-capability": {"max": "8.6"}},
        {"value": "modern", "compute-capability": {"min": "8.9"}},
    ]
    assert select.select_cell(nvidia(8.0), profiles(rules), "3.12").cell.endswith("-legacy")
    chosen = select.select_cell(nvidia(12.0), profiles(rules), "3.12")
    assert chosen.cell.endswith("-modern") and chosen.axes == {"profile": "modern"}
    assert "profile = modern (detect.axes.profile[1])" in " ".join(chosen.reasons)
    assert select.select_cell(nvidia(12.0), profiles(rules), "3.12", axes={"profile": "legacy"}).cell.endswith(
        "-legacy"
    )  # PTX 9.0
    # no rules: coverage decides when one cell fits; two that fit are ambiguous
    assert select.select_cell(nvidia(6.1), profiles(), "3.12").cell.endswith("-legacy")
    with pytest.raises(select.InputError, match=r"differ by profile \(legacy, modern\): pass --axis profile=VALUE"):
        select.select_cell(nvidia(8.6), profiles(), "3.12")
    named = [{"value": "modern", "gpu-name": ["*RTX 50*"], "memory": {"min": 16000}}, {"value": "legacy"}]
    big = Facts(os="linux", arch="x86_64", interpreter="x86_64", nvidia=True, cuda="13.0",
                gpus=(Gpu("NVIDIA GeForce RTX 5090", "32607 MiB", "580", 12.0),))  # fmt: skip
    assert select.select_cell(big, profiles(named), "3.12").cell.endswith("-modern")
    with pytest.raises(select.NoCell, match=r"no linux x86_64 cu130 Python 3\.12 cell has profile = huge"):
        select.select_cell(big, profiles(), "3.12", axes={"profile": "huge"})


def test_the_cli_takes_axis_and_cell(tmp_path: Path) -> None:
    path = tmp_path / "locks" / "manifest.json"
    path.parent.mkdir()
    path.write_text(json.dumps(profiles()))
    args = ("--manifest", str(path), "--os", "linux", "--arch", "x86_64", "--cuda", "13.0", "--python", "3.12")
    assert cli(*args, "--axis", "profile=modern")[1].startswith("linux-x86_64-cu130-py3.12-modern:")
    code, _, err = cli(*args, "--axis", "profile")
    assert code == 2 and "write NAME=VALUE" in err
    code, out, _ = cli(
        "--manifest", str(path), "--cell", "linux-x86_64-cpu-py3.12", outputs={("nvidia-smi",): (124, "", "")}
    )
    assert code == 0 and "named by hand" in out
    code, _, err = cli("--manifest", str(path), "--cell", "macos-aarch64-mps-py3.12")
    assert code == 2 and "it is a macos aarch64 cell" in err


def test_unknown_probes_refuse_even_with_cpu() -> None:
    for outputs in ({("nvidia-smi",): (124, "", "")}, {("nvidia-smi",): (-9, "", "")}, {("nvidia-smi",): (3, "", "weird")},
                    {("nvidia-smi",): (0, "hello", "")}, {("rocminfo",): (1, "", "hsa api call failure: permission denied")}):  # fmt: skip
        facts = select.gather({}, fake_run(outputs), system="linux", machine="x86_64", sysfs=NO_SYSFS)
        assert facts.unknown and not facts.nvidia
        with pytest.raises(select.Refused, match="cannot tell which GPUs this machine has"):
            select.select_cell(facts, MANIFEST, "3.12", allow_cpu=True)
    assert "render and video groups" in select.rocminfo_unknown(1, "", "permission denied") or ""


def test_pci_readers(tmp_path: Path) -> None:
    for slot, klass, vendor, driver in (("0000:01:00.0", "0x030000", "0x10de", "nouveau"), ("0000:00:02.0", "0x030000", "0x8086", "i915"),
                                        ("0000:02:00.0", "0x040300", "0x10de", None), ("0000:03:00.0", "0x120000", "0x1002", None)):  # fmt: skip
        folder = tmp_path / "bus" / "pci" / "devices" / slot
        folder.mkdir(parents=True)
        (folder / "class").write_text(klass + "\n")
        (folder / "vendor").write_text(vendor + "\n")
        (folder / "device").write_text("0x2684\n")
        if driver:
            (tmp_path / driver).mkdir(exist_ok=True)
            (folder / "driver").symlink_to(tmp_path / driver)
    devices = select.read_sysfs_pci(str(tmp_path))
    assert devices == (PciDevice("0000:00:02.0", "intel", "2684", "i915"), PciDevice("0000:01:00.0", "nvidia", "2684", "nouveau"),
                       PciDevice("0000:03:00.0", "amd", "2684", None))  # fmt: skip
    assert select.read_sysfs_pci(str(tmp_path / "none")) is None
    facts = select.gather({}, fake_run({}), system="linux", machine="x86_64", sysfs=str(tmp_path))
    with pytest.raises(select.Refused, match="nouveau driver cannot run CUDA") as refused:
        select.select_cell(facts, MANIFEST, "3.12", allow_cpu=True)
    assert any("[10de:2684] at 0000:01:00.0 (driver nouveau)" in note for note in refused.value.notes)


def test_windows_video_controllers() -> None:
    devices = select.parse_video_controllers(
        '[{"Name": "Microsoft Basic Display Adapter", "PNPDeviceID": "PCI\\\\VEN_10DE&DEV_2684&X", "ConfigManagerErrorCode": 0},'
        ' {"Name": "AMD Radeon", "PNPDeviceID": "PCI\\\\VEN_1002&DEV_744C", "ConfigManagerErrorCode": 28}]'
    )
    assert [(d.vendor, d.driver) for d in devices] == [("nvidia", None), ("amd", None)]
    with pytest.raises(select.InputError):
        select.parse_video_controllers("[1, 2")


def test_windows_amd_gpus_by_device_id_and_revision() -> None:
    """AMD's device table (GPUOpen-Tools/device_info): the gfx target by PCI device ID, where one
    ID serves two targets by the revision (73FF: RX 6750 GRE 10GB rev DF is gfx1031, RX 6600 gfx1032)."""
    assert select.amd_gfx("744C", "C8") == "gfx1100" and select.amd_gfx("7550") == "gfx1201"
    assert select.amd_gfx("73ff", "df") == "gfx1031" and select.amd_gfx("73FF", "C7") == "gfx1032"
    assert select.amd_gfx("15bf") == "gfx1103" and "gfx1103" in select.AMD_APUS  # Radeon 780M: an APU
    assert select.amd_gfx("7fff") is None
    devices = select.parse_video_controllers(
        '{"Name": "AMD Radeon RX 6750 GRE 10GB", "PNPDeviceID": "PCI\\\\VEN_1002&DEV_73FF&SUBSYS_1&REV_DF\\\\4&1",'
        ' "ConfigManagerErrorCode": 0, "DriverVersion": "31.0"}'
    )
    assert [(d.device, d.revision, d.driver) for d in devices] == [("73ff", "df", "31.0")]
    agents, unknown, notes = select.amd_from_pci(devices)
    assert (
        agents == ("gfx1031",)
        and unknown == ()
        and notes == ["pci: AMD Radeon RX 6750 GRE 10GB [1002:73ff] rev df: gfx1031 (AMD's device table)"]
    )
    every = [d for ids in select.AMD_GFX_DEVICES.values() for d in ids.split()]
    assert len(every) == len(set(every)) and all(re.fullmatch(r"[0-9a-f]{4}", d) for d in every)


def test_rules_problems_against_the_matrix() -> None:
    rules = select.DetectRules.from_dict({
        "amd": "rocm7.1", "no-gpu": {"linux": "cpu", "windows": "cpu"},
        "nvidia": [{"min-cuda": "13.0", "backend": "cu130"}, {"min-cuda": "13.1", "backend": "cu130"},
                   {"min-cuda": "12.8", "backend": "cu128", "match": {"os": "windows"}}],
        "axes": {"profile": [{"value": "legacy"}, {"value": "modern", "compute-capability": {"min": "8.9"}}],
                 "flavour": [{"value": "x"}]},
    })  # fmt: skip
    cells = [{"os": "linux", "arch": "x86_64", "backend": b, "axes": {"profile": p}} for b in ("cu130", "cu128", "cpu")
             for p in ("legacy", "modern")]  # fmt: skip
    problems = dict(select.rules_problems(rules, cells, "tool.lockgen.detect"))
    assert "no cell of the matrix has backend 'rocm7.1'" in problems["tool.lockgen.detect.amd"]
    assert "backend 'cpu' for windows" in problems["tool.lockgen.detect.no-gpu.windows"]
    assert "detect.nvidia[0] gives the same backend cu130" in problems["tool.lockgen.detect.nvidia[1]"]
    assert "for windows x86_64/aarch64" in problems["tool.lockgen.detect.nvidia[2].backend"]
    assert "takes every machine it fits" in problems["tool.lockgen.detect.axes.profile[1]"]
    assert "no extra axis 'flavour'" in problems["tool.lockgen.detect.axes.flavour"]


def test_a_config_whose_rules_do_not_fit_its_matrix_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "lockgen.toml").write_text(
        '[matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n'
        '[detect]\nno-gpu = "cpu"\n[[detect.nvidia]]\nmin-cuda = "13.0"\nbackend = "cu130"\n'
    )
    run = run_cli("matrix", "-C", str(tmp_path))
    assert run.code == 2 and "detect.nvidia[0].backend: no cell of the matrix has backend 'cu130'" in run.err


def test_rules_round_trip_with_the_new_keys() -> None:
    table = {"amd": "rocm6.4", "amd-targets": ["gfx942"], "coverage": {"drop": ["sm_90a"],
             "min-compute-capability": "7.5"}, "axes": {"profile": [{"value": "modern", "match": {"backend": "cu130"},
             "compute-capability": {"min": "8.9"}, "memory": {"max": 100000}, "gpu-name": ["*"], "gfx": ["gfx1100"]}]}}  # fmt: skip
    rules = select.DetectRules.from_dict(table)
    assert select.DetectRules.from_dict(rules.to_dict()) == rules
    bad = {"axes": {"os": [{"value": "x"}], "profile": [{"value": "A", "compute-capability": {"min": "9.0", "max": "8.0"}}]},
           "coverage": {"drop": ["sm_9"]}}  # fmt: skip
    with pytest.raises(select.RulesError) as error:
        select.DetectRules.from_dict(bad)
    paths = {path for path, _ in error.value.problems}
    assert paths == {
        "detect.coverage.drop",
        "detect.axes.os",
        "detect.axes.profile[0].value",
        "detect.axes.profile[0].compute-capability",
    }


def test_only_the_code_linked_against_the_cells_runtime_counts() -> None:
    """bitsandbytes ships one library per CUDA runtime (cuda118, cuda12x, cuda130) and loads the
    one of torch's: in a CUDA 13 cell only the cuda130 library's code runs."""
    data = copy.deepcopy(MANIFEST)
    entry = data["cells"]["linux-x86_64-cu130-py3.12"]
    groups = [{"needs": ["libcudart.so.11"], "sass": ["sm_50", "sm_90"], "ptx": [], "gfx": []},
              {"needs": ["libcudart.so.13"], "sass": ["sm_75", "sm_120"], "ptx": [], "gfx": []}]  # fmt: skip
    entry["coverage"]["wheels"].append({"name": "bitsandbytes", "version": "0.50.2", "sha256": "c" * 64,
                                        "sass": ["sm_50", "sm_75", "sm_90", "sm_120"], "ptx": [], "gfx": [],
                                        "linked": groups})  # fmt: skip
    entry["coverage"]["runtimes"] = ["libcudart.so.13"]
    chosen = select.select_cell(nvidia(12.0), data, "3.12")
    assert chosen.cell == "linux-x86_64-cu130-py3.12"
    assert chosen.coverage == ["GPU 0 GPU 0 (compute capability 12.0): torch sm_120a, bitsandbytes sm_120"]
    # the H100 needs sm_90: the cuda118 library has it, but it does not load next to CUDA 13
    assert select.select_cell(nvidia(9.0), data, "3.12").cell == "linux-x86_64-cu128-py3.12"
