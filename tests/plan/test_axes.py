"""Extra named matrix axes (issue 9, item 7): cells, names, exclude/include/rules, templates,
source URL placeholders, ``--only``, ``lockgen matrix --json`` and the manifest."""

from __future__ import annotations

import json

import pytest

from lockgen.config import load_config
from lockgen.plan.matrix import expand, select
from lockgen.project import Project
from lockgen.runtime.errors import ConfigError, UsageError
from tests.conftest import run_cli, write_project

VARIANT = """
[tool.lockgen.matrix]
os = ["linux", "windows"]
arch = ["x86_64"]
backend = ["cu128", "cpu", "vulkan"]
python = ["3.13"]
variant = ["full", "portable"]
exclude = [{ variant = "full", backend = "vulkan" }, { variant = "portable", os = "windows", backend = "cu128" }]
include = [
  { os = "macos", arch = "aarch64", backend = "mps", python = "3.13", variant = "portable" },  # every axis: adds a cell
  { variant = "portable", vars = { llama = true } },                                           # extends cells
]
[[tool.lockgen.rules]]
match = { variant = "portable" }
requirements = "portable.in.j2"
[[tool.lockgen.rules]]
match = { variant = "full", backend = "cpu" }
vars = { wheel_set = "cpu" }
"""


def cells_of(tmp_path, config: str, templates: dict[str, str] | None = None):
    write_project(tmp_path, config, templates or {})
    return expand(load_config(tmp_path / "pyproject.toml"))


def test_an_extra_axis_multiplies_cells_and_is_appended_to_their_names(tmp_path):
    cells = cells_of(tmp_path, VARIANT)
    names = [c.name for c in cells]
    assert names == [
        "linux-x86_64-cu128-py3.13-full", "linux-x86_64-cu128-py3.13-portable", "linux-x86_64-cpu-py3.13-full",
        "linux-x86_64-cpu-py3.13-portable", "linux-x86_64-vulkan-py3.13-portable", "windows-x86_64-cu128-py3.13-full",
        "windows-x86_64-cpu-py3.13-full", "windows-x86_64-cpu-py3.13-portable", "windows-x86_64-vulkan-py3.13-portable",
        "macos-aarch64-mps-py3.13-portable",
    ]  # fmt: skip
    by_name = {c.name: c for c in cells}
    portable = by_name["linux-x86_64-cpu-py3.13-portable"]
    assert portable.extra == {"variant": "portable"}
    assert portable.axes["backend"] == "cpu"
    assert portable.settings.requirements == "portable.in.j2"
    assert portable.settings.vars == {"llama": True}
    assert by_name["linux-x86_64-cpu-py3.13-full"].settings.vars == {"wheel_set": "cpu"}
    assert by_name["macos-aarch64-mps-py3.13-portable"].settings.vars == {"llama": True}


def test_names_of_a_matrix_without_extra_axes_do_not_change(tmp_path):
    cells = cells_of(
        tmp_path, '[tool.lockgen.matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]'
    )
    assert [(c.name, dict(c.extra)) for c in cells] == [("linux-x86_64-cpu-py3.12", {})]


def test_two_extra_axes_in_declaration_order(tmp_path):
    config = '[tool.lockgen.matrix]\nos = ["linux"]\narch = ["x86_64"]\nengine = ["llama", "ik"]\nbackend = ["cpu"]\npython = ["3.12"]\nvariant = ["portable"]'
    assert [c.name for c in cells_of(tmp_path, config)] == [
        "linux-x86_64-cpu-py3.12-llama-portable",
        "linux-x86_64-cpu-py3.12-ik-portable",
    ]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ('variant = ["full", "portable-ik"]', "tool.lockgen.matrix.variant[1]: bad variant value 'portable-ik'; use lower-case letters"),
        ('backends = ["cpu"]', "tool.lockgen.matrix.backends: unknown key; did you mean 'backend'?"),
        ('exclued = [{ os = "linux" }]', "tool.lockgen.matrix.exclued: unknown key; did you mean 'exclude'?"),
        ('cell = ["a"]', "tool.lockgen.matrix.cell: an extra axis needs a template variable name"),
        ('"my-axis" = ["a"]', "tool.lockgen.matrix.my-axis: an extra axis needs a template variable name"),
        ('variant = "full"', "tool.lockgen.matrix.variant: must be an array of strings"),
        ('variant = ["full"]\nexclude = [{ variant = "portabel" }]',
         "tool.lockgen.matrix.exclude[0].variant: 'portabel' is not a value of the variant axis (full)"),
        ('variant = ["full"]\ninclude = [{ os = "linux", arch = "x86_64", backend = "rocm", python = "3.12" }]',
         "tool.lockgen.matrix.include[0].backend: 'rocm' is not a value of the backend axis (cpu); an include adds a cell "
         "only when it names every axis (os, arch, backend, python, variant) (missing variant)"),
        ('variant = ["full"]\n[[tool.lockgen.rules]]\nmatch = {}\nvars = { variant = "x" }', "tool.lockgen.rules[0].vars.variant: 'variant' is a matrix axis"),
    ],
    ids=["dash-in-value", "typo-of-backend", "typo-of-exclude", "reserved-name", "not-an-identifier", "not-a-list",
         "exclude-value", "include-missing-the-axis", "var-named-like-the-axis"],
)  # fmt: skip
def test_extra_axes_are_checked(tmp_path, change, problem):
    config = '[tool.lockgen.matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n' + change
    with pytest.raises(ConfigError) as info:
        cells_of(tmp_path, config)
    assert any(p.startswith(problem) for p in info.value.messages), info.value.messages


def test_only_selects_by_an_extra_axis(tmp_path):
    cells = cells_of(tmp_path, VARIANT)
    chosen = select(cells, only=["variant=portable", "os=linux"])
    assert [c.name for c in chosen] == [
        "linux-x86_64-cu128-py3.13-portable", "linux-x86_64-cpu-py3.13-portable", "linux-x86_64-vulkan-py3.13-portable",
    ]  # fmt: skip
    with pytest.raises(
        UsageError, match=r"--only variant=portabel: 'portabel' is not a value of the variant axis \(full, portable\)"
    ):
        select(cells, only=["variant=portabel"])
    with pytest.raises(UsageError, match="KEY one of os, arch, backend, python, variant, name"):
        select(cells, only=["flavour=x"])


def test_templates_and_source_urls_see_the_axis_by_its_name(tmp_path):
    config = (
        VARIANT
        + """
        [tool.lockgen.sources.llama]
        urls = ["https://github.com/o/llama/releases/download/v1/llama-1.0+{variant}-py3-none-any.whl"]
        packages = ["llama"]
        [[tool.lockgen.rules]]
        match = {}
        use = ["llama"]
    """
    )
    templates = {
        "requirements.in.j2": "# {{ variant }} {{ cell }}\nnumpy\n",
        "portable.in.j2": "# {{ variant }} {{ llama }}\nrequests\n",
    }
    write_project(tmp_path, config, templates)
    project = Project.load(tmp_path)
    plans = {p.cell.name: p for p in project.plans(project.cells)}
    full = plans["linux-x86_64-cpu-py3.13-full"]
    assert full.rendered.files["requirements"][1] == "# full linux-x86_64-cpu-py3.13-full\nnumpy\n"
    assert plans["linux-x86_64-cpu-py3.13-portable"].rendered.files["requirements"][1] == "# portable True\nrequests\n"
    (source,) = full.sources
    assert source.urls == ("https://github.com/o/llama/releases/download/v1/llama-1.0+full-py3-none-any.whl",)


def test_a_source_url_with_an_unknown_placeholder_lists_the_extra_axes(tmp_path):
    config = VARIANT + '[tool.lockgen.sources.x]\nurls = ["https://h/{varaint}.whl"]\npackages = ["x"]\n'
    with pytest.raises(ConfigError, match=r"bad placeholder 'varaint' .*\{python\}, \{variant\}"):
        cells_of(tmp_path, config)


def test_matrix_json_and_manifest_carry_the_extra_axes(tmp_path):
    write_project(tmp_path, VARIANT + '[[tool.lockgen.rules]]\nmatch = {}\nskip = "not resolved here"\n', {})
    run = run_cli("matrix", "--json", "-C", str(tmp_path), "--only", "name=linux-x86_64-cpu-py3.13-portable")
    assert run.code == 0, run.err
    (row,) = json.loads(run.out)
    assert (row["name"], row["variant"], row["backend"]) == ("linux-x86_64-cpu-py3.13-portable", "portable", "cpu")
    assert row["lock"] == "locks/linux-x86_64-cpu-py3.13-portable.txt"
    project = Project.load(tmp_path)
    cells = json.loads(project.manifest_text())["cells"]
    assert cells["linux-x86_64-cpu-py3.13-portable"]["axes"] == {"variant": "portable"}
    assert cells["linux-x86_64-cpu-py3.13-portable"]["backend"] == "cpu"


def test_a_variant_matrix_locks_and_only_selects_on_the_noop_path(tmp_path, fake_host):
    """Locks are named by the full cell name; ``--only variant=…`` also works on the no-op path
    (which reads the stamp's rows, not the config)."""
    pypi = fake_host("pypi")
    pypi.index_page("simple", [pypi.wheel("files", "numpy", "2.3.0"), pypi.wheel("files", "requests", "2.32.0")],
                    upload_time="2026-01-01T00:00:00Z")  # fmt: skip
    config = f"""
        [tool.lockgen.mirrors]
        "https://pypi.org/simple" = "{pypi.url}/simple"
        "https://files.pythonhosted.org" = "{pypi.url}/files"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
        variant = ["full", "portable"]
    """
    write_project(tmp_path, config, {"requirements.in.j2": "requests\n{% if variant == 'full' %}numpy\n{% endif %}"})
    run = run_cli("all", "-C", str(tmp_path))
    assert run.code == 0, run.err
    full = (tmp_path / "locks" / "linux-x86_64-cpu-py3.12-full.txt").read_text()
    portable = (tmp_path / "locks" / "linux-x86_64-cpu-py3.12-portable.txt").read_text()
    assert "numpy==2.3.0" in full
    assert "numpy" not in portable
    assert "# cell: linux-x86_64-cpu-py3.12-portable\n" in portable
    again = run_cli("all", "-C", str(tmp_path), "--only", "variant=portable")
    assert again.code == 0, again.err
    assert "1 up to date" in again.err
    assert run_cli("check", "-C", str(tmp_path)).code == 0


def test_detect_routes_an_extra_axis_by_rules_or_by_hand(tmp_path, monkeypatch):
    """Issue 19: GPU-generation profiles as an extra axis; detect rules route them by compute
    capability, ``--axis`` picks one by hand (detect and install --detect), and without either
    the error names the axis and how to choose."""
    from lockgen.install.choose import choose

    config = """
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cu130"]
        python = ["3.12"]
        profile = ["legacy", "modern"]
        [tool.lockgen.detect]
        nvidia-unknown-cuda = "cu130"
        [[tool.lockgen.detect.nvidia]]
        min-cuda = "13.0"
        backend = "cu130"
        [[tool.lockgen.detect.axes.profile]]
        value = "modern"
        compute-capability = { min = "8.9" }
        [[tool.lockgen.detect.axes.profile]]
        value = "legacy"
        match = { backend = "cu130" }
    """
    write_project(tmp_path, config, {"requirements.in.j2": "numpy\n"})
    query = tmp_path / "q.csv"
    args = (
        "detect",
        "-C",
        str(tmp_path),
        "--os",
        "linux",
        "--arch",
        "x86_64",
        "--cuda",
        "13.0",
        "--gpu-query",
        str(query),
    )
    for cap, profile in (("12.0", "modern"), ("8.6", "legacy")):
        query.write_text(f"NVIDIA GPU, 24564 MiB, 580.65.06, {cap}\n")
        run = run_cli(*args, "--json")
        assert run.code == 0, run.err
        assert json.loads(run.out)["cell"] == f"linux-x86_64-cu130-py3.12-{profile}"
    run = run_cli(*args, "--json", "--axis", "profile=modern")
    assert json.loads(run.out)["cell"] == "linux-x86_64-cu130-py3.12-modern"
    bad = run_cli(*args, "--axis", "profile")
    assert bad.code == 2 and "write NAME=VALUE" in bad.err
    from lockgen import cellselect as select
    from lockgen.install.detect import detect_manifest
    from lockgen.locks import manifestfile
    from lockgen.runtime.errors import InstallRefused

    manifest = detect_manifest(Project.load(tmp_path))
    manifest["detect"].pop("axes")
    gpu = select.Gpu("NVIDIA GPU", "24564 MiB", "580.65.06", 8.6)
    facts = select.Facts(os="linux", arch="x86_64", interpreter="x86_64", nvidia=True, cuda="13.0", gpus=(gpu,))
    monkeypatch.setattr(select, "gather", lambda *args, **kwargs: facts)
    typed = manifestfile.Manifest(  # the cells as install's typed reader gives them; the selector reads ``data``
        format=manifest["format"], data=manifest,
        cells={
            name: manifestfile.CellEntry(
                name=name, os=e["os"], arch=e["arch"], backend=e["backend"], python=e["python"], status="locked",
                requires=manifestfile.Requires(python=e["python"], interpreter=e["arch"]),
            )
            for name, e in manifest["cells"].items()
        },
    )  # fmt: skip
    with pytest.raises(InstallRefused, match=r"differ by profile \(legacy, modern\): pass --axis profile=VALUE"):
        choose(typed, None, True, "3.12", False)
    entry, _, _ = choose(typed, None, True, "3.12", False, axes={"profile": "legacy"})
    assert entry.name == "linux-x86_64-cu130-py3.12-legacy"
