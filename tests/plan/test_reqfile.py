"""Options in rendered requirements files (issue "Trust", item 6): every spelling pip or uv reads."""

from __future__ import annotations

import pytest

from lockgen.plan.reqfile import ALLOWED, refused

URL = "https://download.pytorch.org/whl/cu130"


@pytest.mark.parametrize(
    ("text", "line", "name"),
    [
        # includes
        ("-r common.txt", 1, "--requirement"),
        ("-rcommon.txt", 1, "--requirement"),
        ("-r=common.txt", 1, "--requirement"),
        ("--requirement common.txt", 1, "--requirement"),
        ("--requirement=common.txt", 1, "--requirement"),
        ("--requirem common.txt", 1, "--requirement"),
        ("    -r common.txt", 1, "--requirement"),
        ("\t--requirement=common.txt  # shared", 1, "--requirement"),
        ("-c constraints.txt", 1, "--constraint"),
        ("-cconstraints.txt", 1, "--constraint"),
        ("--constraint=constraints.txt", 1, "--constraint"),
        ("--cons constraints.txt", 1, "--constraint"),
        # indexes and find-links
        (f"-i {URL}", 1, "--index-url"),
        (f"-i{URL}", 1, "--index-url"),
        (f"-i={URL}", 1, "--index-url"),
        (f"--index-url {URL}", 1, "--index-url"),
        (f"--index-url={URL}", 1, "--index-url"),
        (f"--index {URL}", 1, "--index-url"),
        (f"--extra-index-url {URL}", 1, "--extra-index-url"),
        (f"--extra-index-url={URL}", 1, "--extra-index-url"),
        (f"--extra {URL}", 1, "--extra-index-url"),
        (f"  --extra-index-url {URL}  # the torch index", 1, "--extra-index-url"),
        ("--no-index", 1, "--no-index"),
        ("-f ./wheels", 1, "--find-links"),
        ("-f./wheels", 1, "--find-links"),
        ("--find-links https://whl.natten.org", 1, "--find-links"),
        ("--find-links=https://whl.natten.org", 1, "--find-links"),
        ("--find https://whl.natten.org", 1, "--find-links"),
        ("--trusted-host download.pytorch.org", 1, "--trusted-host"),
        ("--trusted-host=download.pytorch.org", 1, "--trusted-host"),
        # after a requirement, after a line continuation, split by one
        (f"numpy==2.5.5 --extra-index-url {URL}", 1, "--extra-index-url"),
        (f"numpy==2.5.5 \\\n    --extra-index-url {URL}", 2, "--extra-index-url"),
        (f"numpy \\\n  \\\n  -i {URL}", 3, "--index-url"),
        (f"numpy\n--extra-index-\\\nurl {URL}", 2, "--extra-index-url"),
        (f"# a comment \\\n--extra-index-url {URL}", 2, "--extra-index-url"),  # uv: a comment ends at its line
        ("numpy\r\n-r common.txt\r\n", 2, "--requirement"),
        # options uv ignores or rejects, hashes
        ("--pre", 1, "--pre"),
        ("--prefer-binary", 1, "--prefer-binary"),
        ("--require-hashes", 1, "--require-hashes"),
        ("--use-feature=truststore", 1, "--use-feature"),
        ("numpy==2.5.5 --hash=sha256:" + "0" * 64, 1, "--hash"),
        ("numpy==2.5.5 \\\n    --hash sha256:" + "0" * 64, 2, "--hash"),
        ("pkg -C key=value", 1, "--config-settings"),
        ("pkg --global-option=--x", 1, "--global-option"),
        ("--frobnicate", 1, "--frobnicate"),
        ("-x", 1, "-x"),
        ("--no x", 1, "--no-index, --no-binary"),
        ("--re x", 1, "--requirement, --require-hashes"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_refused_in_every_spelling(text, line, name):
    (problem,) = refused(text + "\n")
    assert (problem.line, problem.name) == (line, name)
    assert problem.text == text.splitlines()[line - 1]


@pytest.mark.parametrize(
    ("name", "fix"),
    [
        ("-r x", '{% include "file" %}'),
        ("-c x", '{% include "file" %}'),
        ("-i x", "set index-url in the config, or declare a source in [tool.lockgen.sources] and `use` it"),
        ("--extra-index-url x", "declare a source in [tool.lockgen.sources] and `use` it"),
        ("-f x", "declare a source in [tool.lockgen.sources] and `use` it"),
        ("--hash=sha256:0", "lockgen hashes every artifact"),
        ("--pre", "name the pre-release in the requirement"),
        ("--no x", "write the option in full"),
    ],
    ids=lambda v: v if " " not in v[:3] else None,
)
def test_each_refusal_names_the_fix(name, fix):
    (problem,) = refused(name)
    assert fix in problem.fix and fix in str(problem)


@pytest.mark.parametrize(
    "text",
    [
        "numpy==2.5.5\ntorch==2.13.0  # pinned\n",
        "-e ./local-package\n--editable=./other\n-e git+https://github.com/x/y@abc#egg=y\n--edit ./abbreviated\n",
        "--only-binary :all:\n--only-binary=torch\n--no-binary lycoris-lora\n",
        "diffusers @ https://github.com/huggingface/diffusers/archive/main.zip#sha256=00\n",
        'foo ; platform_machine != "-x" and python_version >= "3.11"\n',
        "# -r common.txt\n   # --extra-index-url https://x\nnumpy  # -i https://x\n",
        "https://example.org/wheels/pkg-1.0-py3-none-any.whl\n",
        "numpy \\\n  >=2.5\n",
        "",
    ],
    ids=["requirements", "editable", "binary-options", "url-with-fragment", "marker-with-dash", "comments",
         "bare-url", "continued-requirement", "empty"],
)  # fmt: skip
def test_allowed(text):
    assert refused(text) == []


def test_allowed_list():
    assert ALLOWED == ("--editable", "--no-binary", "--only-binary")


def test_every_line_is_reported_in_order():
    found = refused(f"numpy\n-r a.txt\ntorch\n--extra-index-url {URL}\n-f ./w\n")
    assert [(p.line, p.option) for p in found] == [(2, "-r"), (4, "--extra-index-url"), (5, "-f")]
