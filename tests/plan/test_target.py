"""Stage 3 and the uv command: target mapping, argv and environment are pure functions."""

from __future__ import annotations

import pytest

from lockgen.config import Settings
from lockgen.plan.matrix import Cell
from lockgen.plan.plan import Plan
from lockgen.plan.render import Rendered
from lockgen.plan.target import target_for
from lockgen.resolve.uv import Options, compile_argv, compile_env


def cell(os_, arch, python="3.12", **settings):
    base = Settings(requirements="r.j2", index_url="https://pypi.org/simple", manylinux="2_28", macos="14.0")
    return Cell(os=os_, arch=arch, backend="cpu", python=python, settings=base.merged(Settings(**settings)))


#: (os, arch, cell settings) -> uv's --python-platform
PLATFORMS = [
    ("linux", "x86_64", {}, "x86_64-manylinux_2_28"),
    ("linux", "aarch64", {"manylinux": "2_34"}, "aarch64-manylinux_2_34"),
    ("windows", "x86_64", {}, "x86_64-pc-windows-msvc"),
    ("windows", "aarch64", {}, "aarch64-pc-windows-msvc"),
    ("macos", "aarch64", {}, "aarch64-apple-darwin"),
]


@pytest.mark.parametrize(("os_", "arch", "settings", "platform"), PLATFORMS, ids=[p[3] for p in PLATFORMS])
def test_platform_mapping(os_, arch, settings, platform):
    assert target_for(cell(os_, arch, **settings)).platform == platform


def test_target_environment_and_python_tag():
    mac = target_for(cell("macos", "aarch64"))
    assert (mac.platform, mac.macos, mac.env()) == (
        "aarch64-apple-darwin",
        "14.0",
        {"MACOSX_DEPLOYMENT_TARGET": "14.0"},
    )
    assert target_for(cell("linux", "x86_64")).env() == {}
    assert target_for(cell("linux", "x86_64", python="3.13")).python_tag == "cp313"


def plan_for(c, files=None):
    rendered = Rendered(files=files or {"requirements": ("r.j2", "x\n")})
    return Plan(
        cell=c,
        target=target_for(c),
        rendered=rendered,
        lock=f"locks/{c.name}.txt",
        work=f".lockgen/{c.name}",
        uv_version="0.13.9",
    )


def test_compile_argv_targets_the_cell_and_never_the_host():
    c = cell("macos", "aarch64", find_links={"b": ("https://x/b/",), "a": ("wheels",)}, exclude_newer="2026-01-01")
    files = {"requirements": ("r.j2", ""), "constraints": ("c.j2", "numpy<3\n"), "overrides": ("o.j2", "numpy==2.0\n")}
    argv = compile_argv(plan_for(c, files), "out.txt", Options(upgrade_packages=("numpy",)), python="/py")
    joined = " ".join(argv)
    assert argv[:3] == ["pip", "compile", ".lockgen/macos-aarch64-cpu-py3.12/requirements.in"]
    for part in [
        "--constraint .lockgen/macos-aarch64-cpu-py3.12/constraints.txt",
        "--override .lockgen/macos-aarch64-cpu-py3.12/overrides.txt",
        "--python /py",
        "--python-version 3.12",
        "--python-platform aarch64-apple-darwin",
        "--index-url https://pypi.org/simple",
        "--find-links wheels --find-links https://x/b/",
        "--exclude-newer 2026-01-01",
        "--format pylock.toml",
        "--only-binary :all:",
        "--no-config",
        "--no-header",
        "--upgrade-package numpy",
        "--output-file out.txt",
    ]:
        assert part in joined


def test_compile_env_drops_user_uv_settings():
    c = cell("macos", "aarch64")
    env = compile_env(
        {"UV_INDEX_URL": "https://evil", "UV_CACHE_DIR": "/c", "MACOSX_DEPLOYMENT_TARGET": "11.0", "PATH": "/bin"},
        plan_for(c),
    )
    assert env == {
        "UV_CACHE_DIR": "/c",
        "PATH": "/bin",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_NO_PROGRESS": "1",
        "COLUMNS": "10000",
        "MACOSX_DEPLOYMENT_TARGET": "14.0",
    }
    linux = compile_env({"MACOSX_DEPLOYMENT_TARGET": "11.0"}, plan_for(cell("linux", "x86_64")))
    assert "MACOSX_DEPLOYMENT_TARGET" not in linux


def test_input_hash_depends_on_inputs_not_on_paths():
    a = plan_for(cell("linux", "x86_64"))
    b = Plan(**{**a.__dict__, "lock": "elsewhere/x.txt", "work": "/abs/work"})
    assert a.input_hash == b.input_hash
    c = plan_for(cell("linux", "x86_64"), {"requirements": ("r.j2", "y\n")})
    assert a.input_hash != c.input_hash
    d = plan_for(cell("linux", "x86_64", manylinux="2_34"))
    assert a.input_hash != d.input_hash
