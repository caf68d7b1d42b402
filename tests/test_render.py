"""Stage 4: sandboxed, strict templates; errors name template, line and cell."""

from __future__ import annotations

import re

import pytest

from lockgen.errors import TemplateError
from lockgen.pipeline import Project
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
    "file-includes-are-refused-with-a-hint": ("numpy\n-r common.txt\n", [r"rendered line 2 '-r common.txt' includes a file.*include"]),
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
    with pytest.raises(TemplateError, match="templates/nope.j2: template not found"):
        project.plans(project.cells)


def test_errors_in_included_templates_name_the_included_file(tmp_path):
    write_project(tmp_path, CONFIG, {"requirements.in.j2": "numpy\n{% include 'extra.j2' %}\n", "extra.j2": "a\nb=={{ nope }}\n"})
    project = Project.load(tmp_path)
    with pytest.raises(TemplateError, match=r"templates/extra\.j2:2: 'nope' is undefined"):
        project.plans(project.cells)
    (tmp_path / "templates" / "extra.j2").unlink()
    with pytest.raises(TemplateError, match=r"templates/extra\.j2: template not found.*included from templates/requirements\.in\.j2"):
        project.plans(project.cells)
