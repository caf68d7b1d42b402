"""Stage 4: sandboxed, strict templates; errors name template, line and cell."""

from __future__ import annotations

import re

import pytest

from lockgen.project import Project
from lockgen.runtime.errors import TemplateError, TemplateLinesError
from tests.conftest import write_project

CONFIG = """
[tool.lockgen.pins]
torch = "2.13.0"
[tool.lockgen.matrix]
os = ["linux"]
arch = ["x86_64"]
backend = ["cu130"]
python = ["3.12"]
[[tool.lockgen.rules]]
match = { backend = "cu130" }
vars = { cuda = "13.0" }
"""


def plans(tmp_path, template):
    write_project(tmp_path, CONFIG, {"requirements.in.j2": template})
    project = Project.load(tmp_path)
    return project.plans(project.cells)


def test_variables(tmp_path):
    (plan,) = plans(
        tmp_path,
        "torch=={{ pins.torch }}+{{ backend }}  # {{ os }} {{ arch }} {{ python }} {{ python_tag }} {{ target }} {{ cell }} {{ cuda }} {{ vars.cuda }}\n",
    )
    assert plan.rendered.files["requirements"] == (
        "requirements.in.j2",
        "torch==2.13.0+cu130  # linux x86_64 3.12 cp312 x86_64-manylinux_2_28 linux-x86_64-cu130-py3.12 13.0 13.0\n",
    )


#: id -> (a requirements template, patterns its TemplateError must match)
TEMPLATE_ERRORS = {
    "undefined-variable": (
        "numpy\n{% if backend == 'cu130' %}\ntorch=={{ pins.torchh }}\n{% endif %}\n",
        [r"templates/requirements\.in\.j2:3:", "torchh", r"cell linux-x86_64-cu130-py3\.12"],
    ),
    "syntax-error": ("numpy\n{% if %}\n", [r"templates/requirements.in.j2:2: .*cell linux-x86_64-cu130-py3.12"]),
    "sandbox-blocks-attribute-escapes": ("{{ pins.__class__.__mro__ }}\n", ["unsafe|not safely"]),
    "file-includes-are-refused-with-a-hint": (
        "numpy\n-r common.txt\n",
        [
            r"templates/requirements\.in\.j2:2: '-r common.txt' \(rendered line 2\): -r \(--requirement\) includes a file"
        ],
    ),
}


@pytest.mark.parametrize(("template", "patterns"), TEMPLATE_ERRORS.values(), ids=TEMPLATE_ERRORS)
def test_template_errors_name_the_place(tmp_path, template, patterns):
    with pytest.raises(TemplateError) as info:
        plans(tmp_path, template)
    for pattern in patterns:
        assert re.search(pattern, str(info.value)), pattern


def test_missing_template(tmp_path):
    write_project(tmp_path, 'constraints = "nope.j2"\n' + CONFIG, {"requirements.in.j2": "x\n"})
    project = Project.load(tmp_path)
    with pytest.raises(TemplateError, match=r"templates/nope.j2: template not found"):
        project.plans(project.cells)


def test_errors_in_included_templates_name_the_included_file(tmp_path):
    write_project(
        tmp_path, CONFIG, {"requirements.in.j2": "numpy\n{% include 'extra.j2' %}\n", "extra.j2": "a\nb=={{ nope }}\n"}
    )
    project = Project.load(tmp_path)
    with pytest.raises(TemplateError, match=r"templates/extra\.j2:2: 'nope' is undefined") as error:
        project.plans(project.cells)
    assert "{% if name is defined %}" in str(error.value)  # what templates see, and how to test a variable
    (tmp_path / "templates" / "extra.j2").unlink()
    with pytest.raises(
        TemplateError, match=r"templates/extra\.j2: template not found.*included from templates/requirements\.in\.j2"
    ):
        project.plans(project.cells)


def test_file_includes_are_refused_with_a_hint(tmp_path):
    with pytest.raises(
        TemplateError,
        match=r"requirements\.in\.j2:2: '-r common.txt' \(rendered line 2\): -r \(--requirement\) includes a file; use \{% include",
    ):
        plans(tmp_path, "numpy\n-r common.txt\n")


TWO_CELLS = CONFIG.replace('backend = ["cu130"]', 'backend = ["cu130", "cu126"]')


def test_index_lines_are_refused_once_for_every_cell(tmp_path):
    """The same refused line in two cells is one message naming both (the error is a record)."""
    write_project(
        tmp_path,
        TWO_CELLS,
        {"requirements.in.j2": "numpy\n  --extra-index-url https://download.pytorch.org/whl/{{ backend }}  # torch\n"},
    )
    project = Project.load(tmp_path)
    with pytest.raises(TemplateError) as info:
        project.plans(project.cells)
    lines = str(info.value).splitlines()
    assert len(lines) == 2  # the URL differs per cell: one line each
    assert lines[0] == (
        "templates/requirements.in.j2:2: '--extra-index-url https://download.pytorch.org/whl/cu130  # torch' (rendered line 2): "
        "--extra-index-url adds an index that may serve any package, bypassing sources and verify; "
        "declare a source in [tool.lockgen.sources] and `use` it (cell linux-x86_64-cu130-py3.12)"
    )
    write_project(tmp_path, TWO_CELLS, {"requirements.in.j2": "numpy\n-f ./wheels\n--trusted-host example.org\n"})
    with pytest.raises(TemplateError) as info:
        project.plans(project.cells)
    assert str(info.value) == (
        "templates/requirements.in.j2: 2 lines uv must not see:\n"
        "  line 2 '-f ./wheels' (rendered line 2): -f (--find-links) adds find-links, bypassing sources and verify; "
        "declare a source in [tool.lockgen.sources] and `use` it\n"
        "  line 3 '--trusted-host example.org' (rendered line 3): --trusted-host trusts a host outside sources and verify; "
        "declare a source in [tool.lockgen.sources] and `use` it (cells linux-x86_64-cu130-py3.12, linux-x86_64-cu126-py3.12)"
    )


def test_refused_lines_name_the_template_line_they_come_from(tmp_path):
    """A rendered line maps back to the one template line (of the template or one it includes)
    whose literal text, Jinja markup standing for any text, renders to it; a line made only of
    markup, or text several template lines could render to, keeps only its rendered line."""
    write_project(
        tmp_path,
        CONFIG,
        {
            "requirements.in.j2": "{# pins #}\nnumpy\n{% include 'common.j2' %}\n{{ vars.cuda | replace('13.0', '-f x') }}\n",
            "common.j2": "{% if os == 'linux' %}\nscipy\n  --extra-index-url https://x/{{ backend }}  # here\n{% endif %}\n",
        },
    )
    project = Project.load(tmp_path)
    with pytest.raises(TemplateError) as info:
        project.plans(project.cells)
    assert str(info.value).splitlines()[1:] == [
        "  templates/common.j2:3 '--extra-index-url https://x/cu130  # here' (rendered line 5): --extra-index-url "
        "adds an index that may serve any package, bypassing sources and verify; declare a source in "
        "[tool.lockgen.sources] and `use` it",
        "  rendered line 8 '-f x': -f (--find-links) adds find-links, bypassing sources and verify; declare a source "
        "in [tool.lockgen.sources] and `use` it (cell linux-x86_64-cu130-py3.12)",
    ]
    (tmp_path / "templates" / "requirements.in.j2").write_text("numpy\n{% include 'common.j2' %}\n")
    with pytest.raises(TemplateError) as info:
        project.plans(project.cells)
    assert str(info.value).startswith(
        "templates/common.j2:3: '--extra-index-url https://x/cu130  # here' (rendered line 4 of "
        "templates/requirements.in.j2): --extra-index-url adds"
    )
    (tmp_path / "templates" / "requirements.in.j2").write_text("numpy\n--pre\n{% if os %}--pre{% endif %}\n")
    with pytest.raises(TemplateError) as info:
        project.plans(project.cells)
    assert [line.split(":")[0] for line in str(info.value).splitlines()[1:]] == [
        "  rendered line 2 '--pre'",
        "  rendered line 3 '--pre'",
    ]  # two template lines render to '--pre': neither is named


def test_many_refused_lines_are_counted(tmp_path):
    """The error is a record (where, cell, one problem per line); its message lists five lines."""
    from lockgen.plan.render import environment, render
    from lockgen.plan.target import target_for

    hashes = "".join(f"    --hash=sha256:{i:064x} \\\n" for i in range(8))
    write_project(tmp_path, CONFIG, {"requirements.in.j2": f"numpy==2.5.5 \\\n{hashes}\n"})
    project = Project.load(tmp_path)
    (cell,) = project.cells
    with pytest.raises(TemplateLinesError) as info:
        render(environment(project.config), project.config, cell, target_for(cell))
    assert info.value.where == "templates/requirements.in.j2"
    assert len(info.value.lines) == 8 and info.value.cell == "linux-x86_64-cu130-py3.12"
    assert str(info.value).count("--hash pins an artifact hash") == 5 and "… and 3 more (cell" in str(info.value)


@pytest.mark.parametrize("setting", ["constraints", "overrides"])
def test_constraints_and_overrides_are_checked_too(tmp_path, setting):
    write_project(
        tmp_path,
        f'{setting} = "extra.txt.j2"\n' + CONFIG,
        {"requirements.in.j2": "numpy\n", "extra.txt.j2": "--index-url=https://x/simple\n"},
    )
    project = Project.load(tmp_path)
    with pytest.raises(
        TemplateError,
        match=r"templates/extra\.txt\.j2:1: '--index-url=https://x/simple' \(rendered line 1\): .*set index-url in the config",
    ):
        project.plans(project.cells)


def test_optional_entries_are_checked(tmp_path):
    write_project(
        tmp_path,
        'optional = ["--extra-index-url https://x/{{ backend }}"]\n' + CONFIG,
        {"requirements.in.j2": "numpy\n"},
    )
    project = Project.load(tmp_path)
    with pytest.raises(
        TemplateError,
        match=r"optional entry '--extra-index-url https://x/\{\{ backend \}\}': rendered as '--extra-index-url https://x/cu130': ",
    ):
        project.plans(project.cells)


def test_allowed_options_render(tmp_path):
    (plan,) = plans(tmp_path, "numpy\n--only-binary :all:\n--no-binary=lycoris-lora  # builds anyway\n")
    assert "--only-binary" in plan.rendered.files["requirements"][1]
