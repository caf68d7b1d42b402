"""Failure cases from the field (``../shared/cases/CASES.md``), each against fake hosts.

C05, C06 and C11 live in test_lock_e2e.py; C08 in test_example.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lockgen.resolve.fetch import fitting
from tests.conftest import locked_versions
from lockgen.plan.target import Target
from tests.conftest import run_cli, write_project
from tests.fakehost import FakeHost
from tests.sdists import sdist

TIME = "2026-01-01T00:00:00Z"


@pytest.fixture
def hosts(tmp_path):
    pypi, backend = FakeHost(tmp_path / "pypi"), FakeHost(tmp_path / "backend")
    yield pypi, backend
    pypi.stop()
    backend.stop()


def project(root, pypi, backend, requirements: str, extra: str = "", backend_label="cpu", packages=("pkg",), use=True) -> Path:
    config = f"""
        index-url = "https://pypi.org/simple"
        use = {'["backend"]' if use else "[]"}
        {extra}
        [tool.lockgen.mirrors]
        "https://pypi.org/simple" = "{pypi.url}/simple"
        "https://files.pythonhosted.org" = "{pypi.url}/files"
        "https://backend.example" = "{backend.url}"
        [tool.lockgen.sources.backend]
        index = "https://backend.example/whl/{{flavor}}"
        packages = {json.dumps(list(packages))}
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["{backend_label}"]
        python = ["3.12"]
    """
    return write_project(root, config, {"requirements.in.j2": requirements})


def lock_of(root: Path) -> str:
    return next((root / "locks").glob("*.txt")).read_text()


def test_c01_local_label_for_the_wrong_platform(tmp_path, hosts):
    pypi, backend = hosts
    pypi.index_page("simple", [pypi.wheel("files", "other", "1.0")], upload_time=TIME)
    files = [
        backend.wheel("whl/cpu", "pkg", "1.0", "py3-none-macosx_11_0_arm64"),
        backend.wheel("whl/cpu", "pkg", "1.0+cpu", "py3-none-manylinux_2_28_x86_64"),
    ]
    backend.index_page("whl/cpu", files)
    root = project(tmp_path / "p", pypi, backend, "pkg==1.0\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert locked_versions(lock_of(root))["pkg"] == "1.0+cpu"


def test_c01_a_version_without_a_wheel_fails_unless_building_is_allowed(tmp_path, hosts):
    pypi, backend = hosts
    pypi.index_page("simple", [sdist(pypi.root / "files", "srconly", "1.0")], upload_time=TIME)
    backend.index_page("whl/cpu", [backend.wheel("whl/cpu", "pkg", "1.0+cpu")])
    root = project(tmp_path / "p", pypi, backend, "srconly\n")
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "srconly: no wheel for x86_64-manylinux_2_28 cp312 in any version" in run.err and "allow-build" in run.err
    root = project(tmp_path / "q", pypi, backend, "srconly\n", extra='allow-build = ["srconly"]')
    assert run_cli("all", "-C", str(root)).code == 0


def test_c02_gpu_cell_never_silently_gets_a_cpu_build(tmp_path, hosts):
    pypi, backend = hosts
    pypi.index_page("simple", [pypi.wheel("files", "torch", "2.10.0")], upload_time=TIME)
    backend.index_page("whl/cu124", [backend.wheel("whl/cu124", "torch", "2.6.0+cu124")])
    # named for the backend source but not pinned: uv prefers the newer public 2.10.0 -> verify fails
    root = project(tmp_path / "p", pypi, backend, "torch\n", backend_label="cu124", packages=["torch"])
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "torch 2.10.0: source 'backend' serves it for this cell, so its version must carry +cu124" in run.err
    # pinned: the constraint carries the label, the backend build is locked
    extra = 'pinned = ["torch"]\npins = { torch = "2.6.0" }'
    root = project(tmp_path / "q", pypi, backend, "torch\n", extra=extra, backend_label="cu124", packages=["torch"])
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert locked_versions(lock_of(root))["torch"] == "2.6.0+cu124"


def test_c03_stale_mirror_packages_never_come_from_the_backend(tmp_path, hosts):
    pypi, backend = hosts
    pypi.index_page("simple", [pypi.wheel("files", "filelock", "3.20.0"), pypi.wheel("files", "numpy", "2.3.0")], upload_time=TIME)
    stale = [backend.wheel("whl/cpu", "filelock", "3.0.0"), backend.wheel("whl/cpu", "numpy", "1.26.0"), backend.wheel("whl/cpu", "pkg", "1.0+cpu")]
    backend.index_page("whl/cpu", stale)
    root = project(tmp_path / "p", pypi, backend, "filelock>=3.10\nnumpy\npkg\n")
    assert run_cli("all", "-C", str(root)).code == 0
    pins = locked_versions(lock_of(root))
    assert (pins["filelock"], pins["numpy"], pins["pkg"]) == ("3.20.0", "2.3.0", "1.0+cpu")
    # a find-links entry that exposes the backend's copy: verify names the package and the source
    extra = 'find-links = { oops = "https://backend.example/whl/cpu/filelock/" }'
    root = project(tmp_path / "q", pypi, backend, "filelock<3.1\npkg\n", extra=extra)
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert "filelock 3.0.0: came from source 'backend'" in run.err and "must come from the default index" in run.err


def test_c04_artifacts_without_hashes_are_hashed(tmp_path, hosts):
    pypi, backend = hosts
    pypi.index_page("simple", [pypi.wheel("files", "plain", "1.0")], upload_time=TIME, hashed=False)
    flat = backend.flat_page("flat", [backend.wheel("flat", "pkg", "1.0+cpu"), backend.wheel("flat", "torch", "2.13.0+cpu")], hashed=False)
    extra = f'find-links = {{ flat = "{flat}" }}'
    root = project(tmp_path / "p", pypi, backend, "plain\npkg\ntorch\n", extra=extra, use=False)
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    lines = lock_of(root).splitlines()
    requirements = [i for i, line in enumerate(lines) if line and line[0] not in " #-"]
    assert len(requirements) == 3
    for i in requirements:
        assert lines[i].endswith("\\") and lines[i + 1].strip().startswith("--hash=sha256:"), lines[i]


def test_c07_exclude_newer_with_a_backend_without_upload_times(tmp_path, hosts):
    pypi, backend = hosts
    pypi.index_page("simple", [pypi.wheel("files", "numpy", "2.3.0")], upload_time=TIME)
    backend.index_page("whl/cpu", [backend.wheel("whl/cpu", "torch", "2.13.0+cpu")])
    extra = 'exclude-newer = "2026-11-25T00:00:00Z"\npinned = ["torch"]\npins = { torch = "2.13.0" }'
    root = project(tmp_path / "p", pypi, backend, "numpy\n", extra=extra, packages=["torch"])
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert locked_versions(lock_of(root))["torch"] == "2.13.0+cpu"
    assert "# no-upload-time: backend" in lock_of(root)
    cells = json.loads((root / "locks" / "manifest.json").read_text())["cells"]
    assert cells["linux-x86_64-cpu-py3.12"]["no_upload_time"] == ["backend"]


def test_c09_wheel_tag_sets():
    base = "https://example.invalid/flash_attn-2.8.3-"
    urls = [base + t + ".whl" for t in (
        "cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64", "cp310-cp310-linux_x86_64",
        "cp39-abi3-manylinux_2_28_x86_64", "cp36-none-any", "cp312-cp312-win_amd64",
    )]  # fmt: skip
    kept, notes = fitting(urls, Target(platform="x86_64-manylinux_2_28", python="3.12"))
    assert kept == [urls[0], urls[2]]
    assert len(notes) == 3 and all("do not fit x86_64-manylinux_2_28 cp312" in n for n in notes)
    kept, _ = fitting(urls, Target(platform="x86_64-manylinux_2_17", python="3.12"))
    assert urls[0] not in kept  # its floor is manylinux 2.24


def test_c10_relative_folders_and_odd_links(tmp_path, hosts):
    pypi, backend = hosts
    pypi.index_page("simple", [pypi.wheel("files", "other", "1.0")], upload_time=TIME)
    files = [backend.wheel("page", "pkg", "1.0+cpu"), backend.wheel("page", "torch", "2.13.0+cpu")]
    page = backend.flat_page("page", files, style="upper")  # relative, %2B-encoded, mixed-case names
    root = project(tmp_path / "p", pypi, backend, "pkg\ntorch\nlocalonly\n", extra=f'find-links = {{ page = "{page}", local = "wheels" }}', use=False)
    from tests.fakeindex import make_wheel

    make_wheel(root / "wheels", "Localonly", "1.0+cpu")
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    text = lock_of(root)
    assert {"pkg", "torch", "localonly"} <= set(locked_versions(text))
    assert "# find-links: wheels\n" in text and "--find-links wheels " in text  # a header field and the install command
    for path in (root / "locks").rglob("*"):
        if path.is_file():
            assert str(tmp_path) not in path.read_text() and "/root" not in path.read_text()


def test_c26_the_newest_version_is_sdist_only_the_first_run_locks_the_one_with_a_wheel(tmp_path, hosts):
    pypi, backend = hosts
    files = [
        sdist(pypi.root / "files", "cryptography", "50.0.2"),
        pypi.wheel("files", "cryptography", "48.0.1", "cp311-abi3-manylinux_2_28_x86_64"),
        pypi.wheel("files", "cryptography", "48.0.1", "cp311-abi3-macosx_10_9_universal2"),
    ]
    pypi.index_page("simple", files, upload_time=TIME)
    backend.index_page("whl/cpu", [backend.wheel("whl/cpu", "pkg", "1.0+cpu")])
    root = project(tmp_path / "p", pypi, backend, "cryptography\n")  # nothing in allow-build
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    assert locked_versions(lock_of(root))["cryptography"] == "48.0.1"
    # allow-build lets a package be built, it does not prefer building: still the wheel
    root = project(tmp_path / "q", pypi, backend, "cryptography\n", extra='allow-build = ["cryptography"]')
    assert run_cli("all", "-C", str(root)).code == 0
    assert locked_versions(lock_of(root))["cryptography"] == "48.0.1"


def test_c26_an_allow_build_package_with_only_an_sdist_locks_its_sdist(tmp_path, hosts):
    pypi, backend = hosts
    files = [sdist(pypi.root / "files", "lycoris-lora", "3.1.0"), pypi.wheel("files", "numpy", "2.3.0")]
    pypi.index_page("simple", files, upload_time=TIME)
    backend.index_page("whl/cpu", [backend.wheel("whl/cpu", "pkg", "1.0+cpu")])
    root = project(tmp_path / "p", pypi, backend, "lycoris-lora\nnumpy\n", extra='allow-build = ["lycoris-lora"]')
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    text = lock_of(root)
    assert locked_versions(text) == {"lycoris-lora": "3.1.0", "numpy": "2.3.0"}
    digest = hashlib.sha256((pypi.root / "files" / "lycoris-lora-3.1.0.tar.gz").read_bytes()).hexdigest()
    assert f"lycoris-lora==3.1.0 \\\n    --hash=sha256:{digest}" in text  # the sdist, hashed
    pylock = (root / "locks" / "linux-x86_64-cpu-py3.12" / "pylock.toml").read_text()
    assert "lycoris-lora-3.1.0.tar.gz" in pylock
    assert run_cli("all", "-C", str(root)).code == 0  # a warm run: nothing to learn again
