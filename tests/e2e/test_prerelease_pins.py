"""The ``prerelease`` settings and pins written as PEP 440 specifiers (issue 9, item 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.pylock import Package, Pylock
from packaging.version import Version

from lockgen.config import load_config
from lockgen.plan.plan import exact_pin
from lockgen.project import Project
from lockgen.resolve import uv, verify
from lockgen.runtime.errors import ConfigError
from tests.conftest import locked_versions, run_cli, write_project

TIME = "2026-01-01T00:00:00Z"
MATRIX = """
[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cpu", "cu128"]
python = ["3.12"]
"""


@pytest.fixture(scope="module")
def hosts(shared_fake_host):
    """PyPI: pkg 1.0 and 2.0rc1, other 1.0 and 2.0b1, torch 2.8.0 and 2.9.0 (plain builds);
    the backend index: torch 2.8.0+cu128 and 2.8.1+cu128, torch 2.8.0+cpu."""
    pypi, backend = shared_fake_host("pypi"), shared_fake_host("backend")
    files = [pypi.wheel("files", name, version) for name, version in
             [("pkg", "1.0"), ("pkg", "2.0rc1"), ("other", "1.0"), ("other", "2.0b1"), ("torch", "2.8.0"), ("torch", "2.9.0")]]  # fmt: skip
    pypi.index_page("simple", files, upload_time=TIME)
    backend.index_page("whl/cu128", [backend.wheel("whl/cu128", "torch", v) for v in ("2.8.0+cu128", "2.8.1+cu128")])
    backend.index_page("whl/cpu", [backend.wheel("whl/cpu", "torch", "2.8.0+cpu")])
    return pypi, backend


def project(root: Path, hosts, settings: str, requirements: str) -> Path:
    pypi, backend = hosts
    config = (
        f"""
        {settings}
        [tool.lockgen.mirrors]
        "https://pypi.org/simple" = "{pypi.url}/simple"
        "https://files.pythonhosted.org" = "{pypi.url}/files"
        "https://backend.example" = "{backend.url}"
        [tool.lockgen.sources.pytorch]
        index = "https://backend.example/whl/{{flavor}}"
        packages = ["torch"]
    """
        + MATRIX
    )
    return write_project(root, config, {"requirements.in.j2": requirements})


def lock(root: Path, cell: str) -> dict[str, str]:
    return locked_versions((root / "locks" / f"{cell}.txt").read_text())


# -- prerelease


def test_prerelease_per_cell_and_per_package(tmp_path, hosts):
    settings = """
        prerelease-package = { pkg = "allow" }
        [[tool.lockgen.rules]]
        match = { backend = "cu128" }
        prerelease = "allow"
    """
    root = project(tmp_path, hosts, settings, "pkg\nother\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    cpu, cu128 = lock(root, "linux-x86_64-cpu-py3.12"), lock(root, "linux-x86_64-cu128-py3.12")
    assert (cpu["pkg"], cpu["other"]) == ("2.0rc1", "1.0")  # only pkg may be a pre-release
    assert (cu128["pkg"], cu128["other"]) == ("2.0rc1", "2.0b1")  # the rule allows them for the whole cell


def test_prerelease_is_part_of_the_input_hash_and_of_the_uv_command(tmp_path, hosts):
    root = project(tmp_path, hosts, "", "pkg\n")
    before = {p.cell.name: p for p in Project.load(root).plans(Project.load(root).cells)}
    assert "prerelease" not in before["linux-x86_64-cpu-py3.12"].input_data  # unchanged hashes without the setting
    root = project(
        tmp_path, hosts, 'prerelease = "if-necessary"\nprerelease-package = { Pkg_Name = "explicit" }', "pkg\n"
    )
    loaded = Project.load(root)
    plan = loaded.plans(loaded.cells)[0]
    assert plan.input_data["prerelease"] == {"mode": "if-necessary", "packages": {"pkg-name": "explicit"}}
    assert plan.input_hash != before[plan.cell.name].input_hash
    argv = uv.compile_argv(plan, "out.toml")
    assert argv[argv.index("--prerelease") + 1] == "if-necessary"
    assert argv[argv.index("--prerelease-package") + 1] == "pkg-name=explicit"


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        (
            'prerelease = "yes"',
            "tool.lockgen.prerelease: unknown mode 'yes'; use one of disallow, allow, if-necessary, explicit, if-necessary-or-explicit",
        ),
        (
            'prerelease-package = { torch = "sometimes" }',
            "tool.lockgen.prerelease-package.torch: unknown mode 'sometimes'",
        ),
        ('prerelease-package = ["torch"]', 'tool.lockgen.prerelease-package: must be a table of package = "mode"'),
        (
            "[[tool.lockgen.rules]]\nmatch = {}\nprerelease = 1",
            "tool.lockgen.rules[0].prerelease: must be a string, not int",
        ),
    ],
    ids=["mode", "package-mode", "not-a-table", "rule"],
)
def test_prerelease_settings_are_checked(tmp_path, settings, problem):
    head, sep, rules = settings.partition("[[")
    write_project(tmp_path, head + MATRIX + (sep + rules), {})
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "pyproject.toml")
    assert any(p.startswith(problem) for p in info.value.messages), info.value.messages


# -- pins written as specifiers


@pytest.mark.parametrize(
    ("value", "exact"),
    [("2.8.0", "2.8.0"), ("==2.8.0", "2.8.0"), ("===2.8.0", "2.8.0"), ("2.8.0+cu128", "2.8.0+cu128"),
     ("==2.8.0.*", None), (">=2.7,<2.8", None), ("~=2.8.0", None)],
    ids=["bare", "double-equals", "triple-equals", "labelled", "wildcard", "range", "compatible"],
)  # fmt: skip
def test_exact_pins_and_specifiers(value, exact):
    assert exact_pin(value) == exact


def test_a_specifier_pin_constrains_and_requires_without_a_label(tmp_path, hosts):
    settings = 'pinned = ["torch"]\npins = { torch = "==2.8.0.*" }\nuse = ["pytorch"]'
    root = project(tmp_path, hosts, settings, "pkg\n")  # torch is not in the requirements: pinned requires it
    loaded = Project.load(root)
    plans = {p.cell.name: p for p in loaded.plans(loaded.cells)}
    plan = plans["linux-x86_64-cu128-py3.12"]
    assert plan.pinned == {}
    assert plan.pinned_specifiers == {"torch": "==2.8.0.*"}
    assert plan.rendered.files["constraints"][1].endswith("# pins that cannot move\ntorch==2.8.0.*\n")
    assert plan.input_data["pinned"] == {"torch": "==2.8.0.*"}
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    # ==2.8.0.* matches 2.8.0+cu128 (a public specifier ignores the label), never 2.8.1+cu128 or 2.9.0
    assert lock(root, "linux-x86_64-cu128-py3.12")["torch"] == "2.8.0+cu128"


def test_an_exact_pin_keeps_its_label_and_its_input_hash(tmp_path, hosts):
    root = project(tmp_path, hosts, 'pinned = ["torch"]\npins = { torch = "2.8.0" }\nuse = ["pytorch"]', "pkg\n")
    loaded = Project.load(root)
    plan = next(p for p in loaded.plans(loaded.cells) if p.cell.backend == "cu128")
    assert plan.pinned == {"torch": "2.8.0+cu128"}
    assert plan.input_data["pinned"] == {"torch": "2.8.0+cu128"}
    assert plan.pin_requirements() == {"torch": "==2.8.0+cu128"}


def _pylock(name: str, version: str) -> Pylock:
    return Pylock(
        lock_version=Version("1.0"), created_by="test", packages=[Package(name=name, version=Version(version))]
    )


@pytest.mark.parametrize(
    ("locked", "problems"),
    [("2.8.0+cu128", []), ("2.8.1", ["torch: pinned to ==2.8.0.*, but 2.8.1 was locked"]),
     (None, ["torch: pinned to ==2.8.0.*, but the resolution has no torch"])],
    ids=["in-the-specifier", "outside", "missing"],
)  # fmt: skip
def test_verify_checks_the_specifier_instead_of_equality(tmp_path, hosts, locked, problems):
    root = project(tmp_path, hosts, 'pinned = ["torch"]\npins = { torch = "==2.8.0.*" }', "pkg\n")
    loaded = Project.load(root)
    plan = loaded.plans(loaded.cells)[0]
    pylock = _pylock("torch", locked) if locked else _pylock("pkg", "1.0")
    assert verify.pin_problems(plan, pylock) == problems


def test_pin_values_are_checked(tmp_path):
    write_project(
        tmp_path, 'pins = { torch = "==2.8.0.*", numpy = ">=2,<3", bad = "latest", empty = "" }\n' + MATRIX, {}
    )
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "pyproject.toml")
    problems = info.value.messages
    assert [p.split(":")[0] for p in problems] == ["tool.lockgen.pins.bad", "tool.lockgen.pins.empty"]
    assert "'latest' is not a valid version or version specifier (PEP 440)" in problems[0]


def test_manifest_of_a_specifier_pin_cell(tmp_path, hosts):
    """The lock of a specifier pin is an ordinary lock: the manifest lists it as locked."""
    root = project(tmp_path, hosts, 'pinned = ["torch"]\npins = { torch = "==2.8.0.*" }\nuse = ["pytorch"]', "pkg\n")
    assert run_cli("all", "-C", str(root), "--only", "backend=cu128").code == 0
    cells = json.loads((root / "locks" / "manifest.json").read_text())["cells"]
    assert cells["linux-x86_64-cu128-py3.12"]["status"] == "locked"
