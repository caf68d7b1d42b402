"""lockgen/plan/reqline.py: requirement lines read and edited through packaging, everything but the
version kept (issue 18, item 1: the marker, local label, extras, comment and operator)."""

from __future__ import annotations

import pytest
from packaging.version import Version

from lockgen.plan import reqline


@pytest.mark.parametrize(
    ("line", "new", "expected"),
    [
        ("numpy==1.26.4", "2.2.0", "numpy==2.2.0"),
        ('numpy==1.26.4; python_version < "3.12"', "1.26.5", 'numpy==1.26.5; python_version < "3.12"'),
        ("numpy == 1.26.4 ;python_version<'3.12'   # old Pythons", "1.26.5", "numpy == 1.26.5 ;python_version<'3.12'   # old Pythons"),
        ("torch==2.13.0+cpu", "2.14.0", "torch==2.14.0+cpu"),
        ("torch===2.13.0+cu130", "2.14.0", "torch===2.14.0+cu130"),
        ("coverage[toml,yaml]==7.3.1", "7.4.0", "coverage[toml,yaml]==7.4.0"),
        ("numpy~=1.26.4", "2.2.0", "numpy~=2.2.0"),
        ("numpy>=1.26", "2.2.0", "numpy>=2.2.0"),
        ("  numpy==1.26.4 \\", "2.2.0", "  numpy==2.2.0 \\"),
        ("numpy==1.26.4\t# tab comment", "2.2.0", "numpy==2.2.0\t# tab comment"),
        ("Flash_Attn==2.8.3", "2.8.4", "Flash_Attn==2.8.4"),
        ("numpy==1.2; python_version == '1.2'", "1.3", "numpy==1.3; python_version == '1.2'"),
    ],
    ids=[
        "plain", "marker", "spacing-and-comment", "label", "arbitrary-label", "extras", "compatible", "lower-bound",
        "continuation", "tab-comment", "spelling", "version-also-in-marker",
    ],
)  # fmt: skip
def test_with_version_keeps_everything_but_the_version(line, new, expected):
    parsed = reqline.parse(line)
    assert parsed is not None
    assert reqline.with_version(parsed, Version(new)) == expected


@pytest.mark.parametrize(
    "line",
    ["numpy>=1.26,<2", "numpy==2.1.*", "numpy", "numpy<2", "pkg @ https://example.org/pkg-1.0-py3-none-any.whl"],
    ids=["range", "wildcard", "no-version", "upper-bound", "url"],
)
def test_lines_without_a_movable_pin_are_refused(line):
    parsed = reqline.parse(line)
    assert parsed is not None and reqline.pin_of(parsed.requirement) is None
    with pytest.raises(reqline.EditRefused, match="pins no single version"):
        reqline.with_version(parsed, Version("2.2.0"))


@pytest.mark.parametrize(
    ("line", "body"),
    [
        ("pkg @ https://host/pkg-1.0-py3-none-any.whl#sha256=ab  # c", "pkg @ https://host/pkg-1.0-py3-none-any.whl#sha256=ab"),
        ("# a comment", None),
        ("-r other.txt", None),
        ("--index-url https://x", None),
        ("", None),
        ("{{ jinja }}", None),
        ("numpy==1.0 \\", "numpy==1.0"),
    ],
    ids=["url-fragment-kept", "comment", "include", "option", "blank", "not-a-requirement", "continuation"],
)  # fmt: skip
def test_parse_cuts_comments_as_pip_does(line, body):
    parsed = reqline.parse(line)
    assert (parsed.body if parsed else None) == body


def test_pinned_version_is_public():
    req = reqline.requirement("torch==2.13.0+cu130")
    assert req is not None and reqline.pinned_version(req) == Version("2.13.0")
