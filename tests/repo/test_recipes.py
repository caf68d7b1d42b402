"""The recipes of docs/recipes.md, run as written against fake hosts: skipping and un-skipping a
cell, locking around a blocked backend index with ``--only``, adding a Python version and a GPU
backend (only the new cells resolve)."""

from __future__ import annotations

import json

from tests.conftest import run_cli, run_ok

CONFIG = """\
exclude-newer = "2026-11-25"
{extra}
[sources.pytorch]
index = "https://download.pytorch.org/whl/{{flavor}}"
packages = ["torch"]

[matrix]
os = ["linux"]
arch = ["x86_64"]
backend = [{backends}]
python = [{pythons}]

[[rules]]
match = {{ backend = [{gpu}] }}
use = ["pytorch"]
{rules}
"""


def project(root, backends='"cu130", "cpu"', pythons='"3.12"', extra="", rules=""):
    gpu = ", ".join(b for b in backends.split(", ") if b.startswith('"cu'))
    (root / "templates").mkdir(parents=True, exist_ok=True)
    (root / "templates" / "requirements.in.j2").write_text("torch\npillow\n")
    (root / "lockgen.toml").write_text(
        CONFIG.format(backends=backends, pythons=pythons, extra=extra, rules=rules, gpu=gpu)
    )
    return root


def hosts(fake_host) -> list[str]:
    pypi, pytorch = fake_host("pypi"), fake_host("pytorch")
    files = [pypi.wheel("files", "pillow", "11.0"), pypi.wheel("files", "torch", "2.13.0")]
    pypi.index_page("simple", files, upload_time="2026-01-01T00:00:00Z")
    for label in ("cu128", "cu130"):
        pytorch.index_page(f"whl/{label}", [pytorch.wheel(f"whl/{label}/files", "torch", f"2.13.0+{label}")])
    return ["--mirror", f"https://pypi.org/simple={pypi.url}/simple", "--mirror",
            f"https://files.pythonhosted.org={pypi.url}/files", "--mirror", f"https://download.pytorch.org={pytorch.url}"]  # fmt: skip


def resolved(run) -> list[str]:
    return sorted(c["cell"] for c in json.loads(run.out)["cells"] if c["state"] in ("locked", "changed", "new"))


def states(root) -> dict[str, str]:
    return {c["cell"]: c["state"] for c in json.loads(run_cli("check", "--json", "-C", str(root)).out)["cells"]}


def test_skip_and_unskip_a_cell(tmp_path, fake_host):
    mirrors = hosts(fake_host)
    root = project(tmp_path)
    run_ok("all", "-C", str(root), *mirrors)
    lock = root / "locks" / "linux-x86_64-cu130-py3.12.txt"
    assert lock.is_file()
    project(tmp_path, rules='[[rules]]\nmatch = { backend = "cu130" }\nskip = "the CUDA index is down"\n')
    run_ok("all", "-C", str(root), *mirrors)
    assert not lock.exists()  # a full run drops a skipped cell's locks
    assert states(root)["linux-x86_64-cu130-py3.12"] == "skipped"
    check = run_cli("check", "-C", str(root))
    assert check.code == 0  # "lockgen check reports the cells as skipped", in its text too: one line each
    assert check.out == "linux-x86_64-cu130-py3.12: skipped (the CUDA index is down)\nall locks are up to date\n"
    project(tmp_path)  # un-skip: the rule is gone
    assert run_cli("check", "-C", str(root)).code == 1
    run_ok("all", "-C", str(root), "--only", "backend=cu130", *mirrors)
    assert "torch==2.13.0+cu130" in lock.read_text()
    assert run_cli("check", "-C", str(root)).code == 0


def test_check_lists_an_alias_cell_on_one_line(tmp_path, fake_host):
    mirrors = hosts(fake_host)
    root = project(tmp_path, rules='[[rules]]\nmatch = { backend = "cpu" }\nalias = "linux-x86_64-cu130-py3.12"\n')
    run_ok("all", "-C", str(root), *mirrors)
    check = run_cli("check", "-C", str(root))
    assert check.code == 0
    assert check.out == "linux-x86_64-cpu-py3.12: alias (reuses linux-x86_64-cu130-py3.12)\nall locks are up to date\n"


def test_only_locks_the_others_while_an_index_is_blocked(tmp_path, fake_host):
    mirrors = hosts(fake_host)
    root = project(tmp_path)
    run_ok("all", "-C", str(root), *mirrors)
    cu130 = (root / "locks" / "linux-x86_64-cu130-py3.12.txt").read_bytes()
    (root / "templates" / "requirements.in.j2").write_text("torch\npillow>=10\n")
    run_ok("all", "-C", str(root), "--only", "backend=cpu", *mirrors)
    assert (root / "locks" / "linux-x86_64-cu130-py3.12.txt").read_bytes() == cu130  # left as it was
    assert states(root) == {"linux-x86_64-cu130-py3.12": "stale", "linux-x86_64-cpu-py3.12": "up to date"}


def test_adding_a_python_version_or_a_backend_locks_only_the_new_cells(tmp_path, fake_host):
    mirrors = hosts(fake_host)
    root = project(tmp_path)
    run_ok("all", "-C", str(root), *mirrors)
    before = {p.name: p.read_bytes() for p in (root / "locks").glob("*.txt")}
    project(tmp_path, backends='"cu130", "cu128", "cpu"', pythons='"3.12", "3.13"')
    run = run_ok("all", "--json", "-C", str(root), *mirrors)
    assert len(json.loads(run.out)["cells"]) == 6
    after = {p.name: p.read_bytes() for p in (root / "locks").glob("*.txt")}
    assert all(after[name] == text for name, text in before.items())  # the old cells did not move
    assert "torch==2.13.0+cu128" in after["linux-x86_64-cu128-py3.13.txt"].decode()
    assert run_cli("check", "-C", str(root)).code == 0
