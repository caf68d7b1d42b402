"""``lockgen.select``, part 2: the seed's branches from the manifest alone, the cell and Python
choice, manifest and rules checks, the CLI, and the stdlib-only copy (tests/support/select_samples.py has
the samples; the facts, parsers and ``gather`` are in tests/select/test_select_facts.py)."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lockgen import cellselect as select
from lockgen.cellselect import (
    DetectRules,
    Facts,
    NoCell,
    Refused,
    RulesError,
    choose_backend,
    gather,
    select_cell,
)
from tests.support.select_samples import (
    BANNER,
    BLACKWELL,
    DATA,
    EXAMPLE,
    MODULE,
    NO_GPU,
    QUERY,
    QUERY_NO_CAP,
    ROCMINFO,
    RULES,
    TOO_OLD,
    cli,
    entry,
    fake_run,
    manifest,
    nvidia,
    nvidia_outputs,
    ok,
    plain,
    probing_here,
    text,
)


@pytest.fixture
def manifest_file(tmp_path: Path) -> Path:
    path = tmp_path / "locks" / "manifest.json"  # beside the locks it names (select.py confines them there)
    path.parent.mkdir()
    path.write_text(json.dumps(manifest()))
    return path


# ---- the seed's branches, from the manifest alone ----------------------------------------


@pytest.mark.parametrize(
    ("facts", "allow_cpu", "cell"),
    [
        (nvidia("13.0"), False, "linux-x86_64-cu130-py3.12"),
        (nvidia("13"), False, "linux-x86_64-cu130-py3.12"),  # 13 == 13.0
        (nvidia("12.8"), False, "linux-x86_64-cu126-py3.12"),
        (nvidia(None), False, "linux-x86_64-cu130-py3.12"),  # unknown: assume current
        (nvidia("13.0", caps=(12.0,)), False, "linux-x86_64-cu130-py3.12"),  # Blackwell with a cu130 driver
        (nvidia("12.8", caps=(8.9, None)), False, "linux-x86_64-cu126-py3.12"),  # C14: [N/A] not counted
        (nvidia("13.0", caps=(None,), reported=False), False, "linux-x86_64-cu130-py3.12"),  # no limit at cu130
        (nvidia("12.8", arch="aarch64", caps=(9.0,)), False, "linux-aarch64-cu126-py3.12"),  # GH200
        (nvidia("13.0", arch="aarch64", caps=(9.0,)), False, "linux-aarch64-cu130-py3.12"),
        (nvidia("12.8", os_="windows"), False, "windows-x86_64-cu126-py3.12"),
        (nvidia("13.0", os_="windows"), False, "windows-x86_64-cu130-py3.12"),
        (nvidia("13.0", os_="windows", arch="aarch64", interpreter="x86_64"), False, "windows-aarch64-cu130-py3.12"),
        (nvidia("12.8", os_="windows", arch="aarch64", interpreter="x86_64"), False, "windows-aarch64-cu126-py3.12"),
        (nvidia("13.4", os_="windows", arch="aarch64"), False, "windows-aarch64-cu134-py3.12"),
        (nvidia("13.4"), False, "linux-x86_64-cu130-py3.12"),  # the Spark rule matches windows aarch64 only
        (plain("macos", "aarch64", apple_silicon=True), False, "macos-aarch64-mps-py3.12"),
        (plain(amd_agents=("gfx1100",)), False, "linux-x86_64-rocm7.1-py3.12"),
        (plain(), True, "linux-x86_64-cpu-py3.12"),
        (plain("windows"), True, "windows-x86_64-cpu-py3.12"),
    ],
    ids=["cu130", "cu130-13", "cu126", "unknown-cuda", "blackwell-cu130", "C14-n/a", "unreported-cu130",
         "gh200-cu126", "gh200-cu130", "win-cu126", "win-cu130", "C15-win-arm-cu130", "C15-win-arm-cu126",
         "spark-cu134", "linux-13.4", "mps", "rocm", "cpu", "win-cpu"],
)  # fmt: skip
def test_seed_branches(facts: Facts, allow_cpu: bool, cell: str) -> None:
    selection = select_cell(facts, manifest(), allow_cpu=allow_cpu)
    assert selection.cell == cell
    assert selection.lock == manifest()["cells"][cell]["lock"]


@pytest.mark.parametrize(
    ("facts", "allow_cpu", "message"),
    [
        (nvidia("12.6", caps=(8.6, 12.0)), False, BLACKWELL.format(cuda="12.6")),  # C12
        (nvidia("12.4", caps=(8.9,)), False, TOO_OLD.format(cuda="12.4")),  # C16: not a cpu fallback
        (nvidia("12.4", caps=(8.9,)), True, TOO_OLD.format(cuda="12.4")),
        (plain(), False, NO_GPU),
        (plain("macos", "x86_64"), False, NO_GPU),  # an Intel Mac has no cell
    ],
    ids=["C12-blackwell", "C16-too-old", "C16-too-old-with-cpu", "no-gpu", "intel-mac"],
)
def test_seed_refusals(facts: Facts, allow_cpu: bool, message: str) -> None:
    with pytest.raises(Refused) as refused:
        select_cell(facts, manifest(), allow_cpu=allow_cpu)
    assert refused.value.message.startswith(message)


def test_unreported_capability_takes_the_conservative_branch() -> None:
    """The query rejected compute_cap: the cu126 rule cannot prove the GPU is older than 12.0."""
    with pytest.raises(Refused) as refused:
        choose_backend(nvidia("12.8", caps=(None,), reported=False), DetectRules.from_dict(RULES))
    assert refused.value.message.startswith(BLACKWELL.format(cuda="12.8"))
    assert "compute capability of GPU 0 is unknown: nvidia-smi could not report it" in refused.value.message
    assert any("conservative refusal by detect.nvidia[2]" in note for note in refused.value.notes)


def test_rejected_field_end_to_end_from_canned_outputs() -> None:
    outputs = {BANNER: ok("nvidia-smi/banner-old-driver-12.6.txt"),
               QUERY: (2, text("nvidia-smi/query-rejected-compute-cap.txt"), ""),
               QUERY_NO_CAP: ok("nvidia-smi/query-without-compute-cap.csv")}  # fmt: skip
    facts = gather({}, fake_run(outputs), system="linux", machine="x86_64")
    with pytest.raises(Refused) as refused:
        select_cell(facts, manifest())
    assert "GRID A100D-40C is unknown" in refused.value.message
    assert any("query field compute_cap was rejected" in note for note in refused.value.notes)


@pytest.mark.parametrize(
    "sample", ["no-devices.txt", "no-driver.txt", "nvml-mismatch.txt"], ids=["exit6", "exit9", "nvml"]
)
def test_c20_no_usable_gpu_never_gets_a_cuda_cell(sample: str) -> None:
    failing = (6, text(f"nvidia-smi/{sample}"), "")
    facts = gather({}, fake_run({BANNER: failing, QUERY: failing}), system="linux", machine="x86_64")
    with pytest.raises(Refused) as refused:
        select_cell(facts, manifest())
    assert refused.value.message == RULES["no-gpu-refuse"]
    assert select_cell(facts, manifest(), allow_cpu=True).backend == "cpu"


@pytest.mark.parametrize(
    ("sample", "code", "backend"),
    [("gfx1100-twice.txt", 0, "rocm7.1"), ("cpu-only.txt", 0, None), ("not-loaded.txt", 1, None)],
    ids=["C21-twice", "C21-cpu-only", "C21-not-loaded"],
)
def test_c21_rocminfo_without_a_gpu_agent_is_no_gpu(sample: str, code: int, backend: str | None) -> None:
    facts = gather({}, fake_run({ROCMINFO: (code, text(f"rocminfo/{sample}"), "")}), system="linux", machine="x86_64")
    if backend:
        assert select_cell(facts, manifest()).backend == backend
    else:
        with pytest.raises(Refused, match="No supported GPU"):
            select_cell(facts, manifest())


def test_c15_interpreter_reasons() -> None:
    emulated = select_cell(nvidia("13.0", os_="windows", arch="aarch64", interpreter="x86_64"), manifest())
    assert emulated.lock == "locks/windows-x86_64-cu130-py3.12.txt" and emulated.interpreter == "x86_64"
    assert "reuses the lock of windows-x86_64-cu130-py3.12" in emulated.reasons
    native = select_cell(nvidia("13.0", os_="windows", arch="aarch64", interpreter="aarch64"), manifest())
    assert "install with an x86_64 interpreter (this one is aarch64)" in native.reasons
    spark = select_cell(nvidia("13.4", os_="windows", arch="aarch64", interpreter="x86_64"), manifest())
    assert spark.cell == "windows-aarch64-cu134-py3.12" and spark.interpreter == "aarch64"
    assert "install with an aarch64 interpreter (this one is x86_64)" in spark.reasons
    assert [layer["kind"] for layer in spark.layers] == ["main", "optional", "no-deps"]


def test_rosetta_picks_the_arm64_cell_and_says_to_use_an_arm64_python() -> None:
    run = fake_run({("sysctl", "-n", "sysctl.proc_translated"): (0, "1\n", "")})
    selection = select_cell(gather({}, run, system="darwin", machine="x86_64"), manifest())
    assert selection.cell == "macos-aarch64-mps-py3.12" and selection.interpreter == "aarch64"
    assert any("Rosetta" in reason and "use an arm64 Python" in reason for reason in selection.reasons)


def test_per_os_no_gpu_table() -> None:
    rules = DetectRules.from_dict(RULES | {"no-gpu": {"linux": "cu130", "windows": "cpu", "macos": "mps"}})
    assert choose_backend(plain(), rules, allow_cpu=True)[0] == "cu130"
    assert choose_backend(plain("windows"), rules, allow_cpu=True)[0] == "cpu"
    assert choose_backend(plain("macos", "x86_64"), rules, allow_cpu=True)[0] == "mps"
    partial = DetectRules.from_dict(RULES | {"no-gpu": {"windows": "cpu"}})
    with pytest.raises(Refused, match="no no-gpu \\(CPU\\) backend for linux"):
        choose_backend(plain(), partial, allow_cpu=True)


def test_no_cpu_cell_for_the_os_says_to_name_the_cell_not_to_pass_cpu() -> None:
    """What ``lockgen init`` writes for ComfyUI: a cpu cell on windows only (its linux cell is
    PyPI's CUDA torch). A linux machine with no GPU is refused; the default refusal said "pass
    --cpu", which then failed too. Both now name the way that works; a configured
    ``no-gpu-refuse`` is kept."""
    rules = DetectRules.from_dict({"apple": "mps", "no-gpu": {"windows": "cpu"}, "nvidia-unknown-cuda": "cu13"})
    for allow_cpu in (False, True):
        with pytest.raises(Refused) as refused:
            choose_backend(plain(), rules, allow_cpu=allow_cpu)
        assert "pass --cpu" not in refused.value.message
        assert "no no-gpu (CPU) backend for linux" in refused.value.message
        assert "select.py --cell NAME; lockgen install NAME" in refused.value.message
    with pytest.raises(Refused) as refused:
        choose_backend(plain("windows"), rules, allow_cpu=False)
    assert refused.value.message == select.DEFAULT_NO_GPU  # windows has a cpu cell: --cpu helps there
    own = DetectRules.from_dict({"no-gpu": {"windows": "cpu"}, "no-gpu-refuse": "get a GPU"})
    with pytest.raises(Refused, match=r"^get a GPU$"):
        choose_backend(plain(), own, allow_cpu=False)


# ---- cells, Pythons, manifest checks ------------------------------------------------------


def test_python_choice() -> None:
    data = manifest()
    _, failed = entry("linux", "x86_64", "cu130", python="3.13", status="failed", reason="uv: no solution for torch")
    data["cells"]["linux-x86_64-cu130-py3.13"] = failed | {"python": "3.13"}
    assert select_cell(nvidia("13.0"), data, python="3.12").cell == "linux-x86_64-cu130-py3.12"
    with pytest.raises(NoCell, match="failed to lock: uv: no solution for torch"):
        select_cell(nvidia("13.0"), data, python="3.13")
    with pytest.raises(NoCell, match=r"it has 3.12, 3.13: pass --python"):
        select_cell(nvidia("13.0"), data, python="3.10")
    assert select_cell(nvidia("12.8"), data).python == "3.12"  # the only one for cu126
    skipped = manifest()
    skipped["cells"]["macos-aarch64-mps-py3.12"] |= {"status": "skipped", "reason": "no torch wheel"}
    with pytest.raises(NoCell, match=r"cell macos-aarch64-mps-py3\.12 skipped: no torch wheel"):
        select_cell(plain("macos", "aarch64", apple_silicon=True), skipped)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": 5}, "manifest format 5 is not supported"),
        ({"format": 3}, "manifest format 3 is not supported"),
        ({"format": "2"}, 'no integer "format"'),
        (
            {"detect": None},
            "the manifest has no detect rules; add a [tool.lockgen.detect] table to pyproject.toml ([detect] in a lockgen.toml), then run lockgen all",
        ),
        ({"cells": []}, '"cells" must be an object'),
    ],
    ids=["format-5", "format-3", "format-string", "no-detect", "cells-list"],
)
def test_bad_manifests(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(select.InputError) as error:
        select_cell(nvidia("13.0"), manifest(**changes))
    assert message in str(error.value)


# ---- rules validation ----------------------------------------------------------------------


def test_rules_problems_have_key_paths() -> None:
    bad = {"apple": 3, "colour": "red", "no-gpu": {"linux": "cpu", "beos": "cpu"},
           "nvidia": [{"min-cuda": "13.0", "backend": "cu130"},
                      {"min-cuda": 12.6, "backend": "cu126", "refuse": "x", "match": {"os": "win", "gpu": "x"}},
                      {"min-cuda": "abc", "refuse-compute-capability": "12"}]}  # fmt: skip
    with pytest.raises(RulesError) as error:
        DetectRules.from_dict(bad)
    paths = sorted(path for path, _ in error.value.problems)
    assert paths == ["detect.apple", "detect.colour", "detect.no-gpu.beos", "detect.nvidia[1].match.gpu", "detect.nvidia[1].match.os",
                     "detect.nvidia[1].min-cuda", "detect.nvidia[1].refuse", "detect.nvidia[2].backend",
                     "detect.nvidia[2].min-cuda", "detect.nvidia[2].refuse-compute-capability"]  # fmt: skip
    assert "a number loses zeros" in dict(error.value.problems)["detect.nvidia[1].min-cuda"]
    with pytest.raises(RulesError, match=r"^tool.lockgen.detect: must be a table"):
        DetectRules.from_dict([], "tool.lockgen.detect")


def test_rules_round_trip_normalized() -> None:
    rules = DetectRules.from_dict(RULES | {"nvidia": [{"match": {"arch": "aarch64", "os": ["windows", "windows"]},
                                                        "min-cuda": "13.4", "backend": "cu134",
                                                        "refuse-compute-capability": 12}]})  # fmt: skip
    data = rules.to_dict()
    assert data["nvidia"] == [{"backend": "cu134", "min-cuda": "13.4", "match": {"arch": ["aarch64"], "os": ["windows"]},
                               "refuse-compute-capability": 12.0}]  # fmt: skip
    assert DetectRules.from_dict(json.loads(json.dumps(data))) == rules
    defaults = DetectRules.from_dict({}).to_dict()
    assert defaults["nvidia-too-old"] == select.DEFAULT_TOO_OLD and defaults["nvidia"] == []


def test_example_detect_table_is_the_test_rules() -> None:
    tomllib = pytest.importorskip("tomllib")
    with EXAMPLE.open("rb") as file:
        example = tomllib.load(file)["detect"]
    assert DetectRules.from_dict(example) == DetectRules.from_dict(RULES)


# ---- CLI ----------------------------------------------------------------------------------


def test_cli_text_and_json(manifest_file: Path) -> None:
    code, out, err = cli("--manifest", str(manifest_file), "--os", "linux", "--arch", "x86_64", "--cuda", "13")
    assert code == 0, err
    assert out.splitlines()[0] == "linux-x86_64-cu130-py3.12: locks/linux-x86_64-cu130-py3.12.txt"
    code, out, _ = cli("--manifest", str(manifest_file), "--json", "--os", "macos", "--arch", "aarch64")
    data = json.loads(out)
    assert (
        code == 0
        and data["cell"] == "macos-aarch64-mps-py3.12"
        and data["lock"] == "locks/macos-aarch64-mps-py3.12.txt"
    )
    assert {"cell", "os", "arch", "backend", "python", "lock", "layers", "reasons", "facts"} <= set(data)
    assert data["facts"]["apple_silicon"] is True


@probing_here
def test_cli_probes_through_the_runner(manifest_file: Path) -> None:
    outputs = nvidia_outputs("banner-two-gpus-12.6.txt", "query-two-gpus.csv")
    code, _, err = cli("--manifest", str(manifest_file), outputs=outputs)
    assert code == 2 and err.startswith("error: " + BLACKWELL.format(cuda="12.6"))
    assert "note: NVIDIA GeForce RTX 5090 (compute capability 12.0) >= 12.0" in err


def test_cli_c16_old_driver_exit_2(manifest_file: Path) -> None:
    code, _, err = cli("--manifest", str(manifest_file), "--os", "linux", "--arch", "x86_64", "--cuda", "12.4",
                       "--gpu-query", str(DATA / "nvidia-smi/query-4090.csv"))  # fmt: skip
    assert code == 2 and err.startswith("error: " + TOO_OLD.format(cuda="12.4"))
    # the note: lines docs/select.md promises: what was seen, and what the rules need
    assert "note: NVIDIA GPU: NVIDIA GeForce RTX 4090 (compute capability 8.9)\n" in err
    assert "note: driver CUDA version: 12.4\n" in err
    assert "note: detect.nvidia[1] needs driver CUDA >= 13.0 for cu130\n" in err
    assert "note: detect.nvidia[2] needs driver CUDA >= 12.6 for cu126\n" in err
    assert "nvidia[0]" not in err  # a windows aarch64 rule: not this machine's


def test_cli_gpu_query_without_cuda_says_the_driver_was_not_checked(manifest_file: Path) -> None:
    code, out, err = cli("--manifest", str(manifest_file), "--os", "linux", "--arch", "x86_64",
                         "--gpu-query", str(DATA / "nvidia-smi/query-4090.csv"))  # fmt: skip
    assert code == 0, err
    assert out.startswith("linux-x86_64-cu130-py3.12: ")
    assert "pass --cuda X.Y with --gpu-query to check the driver): cu130 (detect.nvidia-unknown-cuda)" in out


def test_cli_output_into_a_closed_pipe_prints_no_traceback(manifest_file: Path) -> None:
    """``select.py --json | head -1``: the reader may stop before the selector writes."""
    proc = subprocess.Popen([sys.executable, "-m", "lockgen.select", "--manifest", str(manifest_file), "--json",
                             "--os", "macos", "--arch", "aarch64"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before Python has even started
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err


@probing_here
def test_cli_c20_refusal_and_cpu(manifest_file: Path) -> None:
    failing = {BANNER: (6, text("nvidia-smi/no-devices.txt"), "")}
    code, _, err = cli("--manifest", str(manifest_file), outputs=failing)
    assert code == 2 and err.startswith("error: " + NO_GPU) and "note: " in err and "No devices were found" in err
    code, out, err = cli("--manifest", str(manifest_file), "--cpu", outputs=failing)
    assert code == 0, err
    assert out.startswith("linux-x86_64-cpu-py3.12: locks/linux-x86_64-cpu-py3.12.txt")


@pytest.mark.parametrize(
    ("sample", "detail"),
    [
        ("garbage.txt", "line 1: 1 column, expected 4"),
        ("other-order.csv", "column 2 (memory.total) is '550.54.14'"),
        ("capability-and-driver-swapped.csv", "column 3 (driver_version) is '8.9'"),
        ("three-columns.csv", "line 1: 3 columns, expected 4"),
        ("header-other-order.csv", "a header with the columns name, driver_version, memory.total, compute_cap"),
        ("empty.csv", "no GPU rows"),
        ("utf16.csv", "not UTF-8 text"),
        ("missing.csv", "cannot read it"),
    ],
    ids=["garbage", "other-order", "swapped", "three-columns", "header-other-order", "empty", "non-utf8", "missing"],
)
def test_cli_bad_gpu_query_files(manifest_file: Path, sample: str, detail: str) -> None:
    path = DATA / "gpu-query" / sample
    code, out, err = cli("--manifest", str(manifest_file), "--gpu-query", str(path))
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"error: --gpu-query {path}: ") and detail in err
    if sample != "missing.csv":
        assert "name, memory.total, driver_version, compute_cap" in err


def test_cli_gpu_query_with_a_header_is_read_right(manifest_file: Path) -> None:
    code, out, err = cli("--manifest", str(manifest_file), "--json", "--os", "linux", "--arch", "x86_64",
                         "--cuda", "12.8", "--gpu-query", str(DATA / "gpu-query/with-header.csv"))  # fmt: skip
    assert code == 0, err
    assert [g["compute_capability"] for g in json.loads(out)["facts"]["gpus"]] == [8.9]


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (["--cuda", "abc"], None, "error: --cuda 'abc': write the driver's CUDA version like 13.0"),
        (["--python", "three"], None, "error: --python 'three'"),
        (["--cuda", "13.0", "--gpu", "none"], None, "error: --gpu none with --cuda: --cuda describes an NVIDIA GPU"),
        (
            ["--gpu-query", str(DATA / "nvidia-smi/query-4090.csv"), "--gpu", "amd"],
            None,
            "error: --gpu amd with --gpu-query",
        ),
        ([], "{not json", "not a JSON manifest"),
        (
            [],
            json.dumps({"format": 4, "cells": {}}),
            "the manifest has no detect rules; add a [tool.lockgen.detect] table",
        ),
        ([], json.dumps(manifest(detect={"nvidia": [{"backend": "cu130"}]})), "detect.nvidia[0].min-cuda: missing"),
    ],
    ids=["bad-cuda", "bad-python", "cuda-without-nvidia", "query-without-nvidia", "bad-json", "no-detect", "bad-rules"],
)
def test_cli_bad_input_exit_2(
    tmp_path: Path, manifest_file: Path, args: list[str], content: str | None, message: str
) -> None:
    path = manifest_file
    if content is not None:
        path = tmp_path / "other.json"
        path.write_text(content)
    code, _, err = cli("--manifest", str(path), "--os", "linux", "--arch", "x86_64", *args)
    assert code == 2 and message in err and "Traceback" not in err
    code, _, err = cli("--manifest", str(tmp_path / "absent.json"))
    assert code == 2 and "cannot read the manifest" in err


# ---- stdlib only, vendorable ---------------------------------------------------------------


def test_imports_only_the_stdlib() -> None:
    tree = ast.parse(MODULE.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module, "no relative imports"
            names.add(node.module.split(".")[0])
    assert names and names <= set(sys.stdlib_module_names), names - set(sys.stdlib_module_names)


def test_a_copy_runs_on_a_bare_python(tmp_path: Path, manifest_file: Path) -> None:
    vendored = tmp_path / "vendor"
    vendored.mkdir()
    shutil.copy(MODULE, vendored / "lockgen_select.py")
    code = (f"import sys; sys.path.insert(0, {str(vendored)!r}); import lockgen_select as s; "
            f"raise SystemExit(s.main(['--manifest', {str(manifest_file)!r}, '--json', '--os', 'windows', "
            "'--arch', 'aarch64', '--interpreter', 'x86_64', '--cuda', '13.0']))")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], check=False, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["lock"] == "locks/windows-x86_64-cu130-py3.12.txt"


@pytest.mark.parametrize("name", ["cellselect.py", "select.py"])
def test_the_copy_runs_as_a_script(tmp_path: Path, manifest_file: Path, name: str) -> None:
    """``python cellselect.py``, and a copy vendored under the old name, ``python select.py``: its
    folder comes first on sys.path, where that name shadows the stdlib ``select`` that subprocess
    imports; probing (nvidia-smi, rocminfo) must still work."""
    shutil.copy(MODULE, tmp_path / name)
    done = subprocess.run([sys.executable, "-S", name, "--manifest", str(manifest_file), "--cpu", "--json"],
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert "Traceback" not in done.stderr and done.returncode in (0, 2), done.stderr
    bad = subprocess.run([sys.executable, "-I", "-S", str(tmp_path / name), "--manifest", str(manifest_file),
                          "--os", "linux", "--arch", "x86_64", "--cuda", "12.4"],
                         check=False, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.startswith("error: " + TOO_OLD.format(cuda="12.4"))


def test_the_old_import_name_is_the_selector() -> None:
    """``from lockgen import select`` (installers that import it) gives the selector module itself."""
    import lockgen.select
    from lockgen import cellselect
    from lockgen import select as old
    from lockgen.select import select_cell as old_select_cell

    assert old is lockgen.select is cellselect and old_select_cell is cellselect.select_cell


@pytest.mark.parametrize("module", ["lockgen.cellselect", "lockgen.select"])
def test_runs_as_a_module(manifest_file: Path, module: str) -> None:
    """Under its name and under the old one, which installers may run."""
    done = subprocess.run([sys.executable, "-m", module, "--manifest", str(manifest_file), "--os", "macos",
                           "--arch", "aarch64"], check=False, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith(
        "macos-aarch64-mps-py3.12: locks/macos-aarch64-mps-py3.12.txt"
    )


def test_a_running_python_without_a_cell_gets_the_newest_the_matrix_has(monkeypatch) -> None:
    """An installer's system Python (3.8 on Ubuntu 20.04, 3.10 on 22.04) only runs the selector;
    the venv it makes has the cell's Python. With no --python and no cell for the running minor,
    the newest Python of the target is chosen and said; an explicit --python still must match."""
    import lockgen.select as select

    monkeypatch.setattr(select.sys, "version_info", (3, 8, 10, "final", 0))
    data = manifest()
    _, newer = entry("linux", "x86_64", "cu130", python="3.13")
    lock = "locks/linux-x86_64-cu130-py3.13.txt"
    newer["layers"] = [dict(newer["layers"][0], lock=lock)]
    data["cells"]["linux-x86_64-cu130-py3.13"] = newer | {"lock": lock}
    chosen = select_cell(nvidia("13.0"), data)
    assert chosen.cell == "linux-x86_64-cu130-py3.13" and chosen.python == "3.13"
    assert any("the newest the matrix has" in r and "runs on 3.8" in r for r in chosen.reasons)
    with pytest.raises(NoCell, match=r"pass --python"):
        select_cell(nvidia("13.0"), data, python="3.8")
