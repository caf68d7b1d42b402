"""Sources as real projects use them (issue 9, items 1 and 2; CASES C23, C25), against fake hosts
reached through ``--mirror`` while the real hosts (github.com, download.pytorch.org) stay
unreachable."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from tests.conftest import locked_versions, run_cli, write_project
from tests.fakehost import FakeHost
from tests.wheels import make_wheel

pytestmark = pytest.mark.uv  # every test here locks with the real uv

TIME = "2026-01-01T00:00:00Z"
REL = "oobabooga/gradio/releases/download/4.37.2-custom.20"
GRADIO_CLIENT = f"https://github.com/{REL}/gradio_client-1.0.2+custom.20-py3-none-any.whl"
GRADIO = f"https://github.com/{REL}/gradio-4.37.2+custom.20-py3-none-any.whl"
LLAMA = "https://github.com/oobabooga/llama-cpp-binaries/releases/download/v0.124.0"
MATRIX = """
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["{backend}"]
    python = ["3.12"]
"""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def hosts(tmp_path):
    pypi, github, backend = FakeHost(tmp_path / "pypi"), FakeHost(tmp_path / "github"), FakeHost(tmp_path / "backend")
    yield pypi, github, backend
    stop_all([pypi, github, backend])


def stop_all(hosts: list[FakeHost]) -> None:
    """Stop servers side by side (each waits up to its poll interval to notice)."""
    threads = [threading.Thread(target=host.stop) for host in hosts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def mirrors(pypi: FakeHost, github: FakeHost, backend: FakeHost) -> list[str]:
    pairs = [
        f"https://pypi.org/simple={pypi.url}/simple", f"https://files.pythonhosted.org={pypi.url}/files",
        f"https://github.com={github.url}", f"https://download.pytorch.org={backend.url}",
    ]  # fmt: skip
    return [arg for pair in pairs for arg in ("--mirror", pair)]


def lock_of(root: Path, cell: str = "linux-x86_64-cpu-py3.12", layer: str | None = None) -> str:
    return (root / "locks" / (f"{cell}.txt" if layer is None else f"{cell}/{layer}.txt")).read_text()


def entry_block(lock: str, start: str) -> str:
    """The lines of the lock entry that starts with ``start`` (requirement and hashes)."""
    lines = lock.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    block = [lines[first]]
    for line in lines[first + 1 :]:
        if not line.startswith(" "):
            break
        block.append(line)
    return "\n".join(block)


def release_world(pypi: FakeHost, github: FakeHost) -> dict[str, Path]:
    """PyPI with numpy and the upstream gradio-client 1.0.2; the patched build on a GitHub
    release page."""
    pypi.index_page(
        "simple",
        [pypi.wheel("files", "numpy", "2.3.0"), pypi.wheel("files", "gradio_client", "1.0.2")],
        upload_time=TIME,
    )
    client = github.wheel(REL, "gradio_client", "1.0.2+custom.20", requires=("numpy",))
    gradio = github.wheel(REL, "gradio", "4.37.2+custom.20", requires=("gradio-client==1.0.2+custom.20",))
    return {"client": client, "gradio": gradio}


@pytest.mark.parametrize("template", ["gradio-client\n", "gradio\n"], ids=["named", "a-dependency"])
def test_c23_release_page_wheel_as_a_main_requirement(tmp_path, hosts, template):
    pypi, github, backend = hosts
    files = release_world(pypi, github)
    config = f"""
        use = ["gradio"]
        [tool.lockgen.sources.gradio]
        urls = ["{GRADIO}", "{GRADIO_CLIENT}"]
        packages = ["gradio", "gradio-client"]
    """ + MATRIX.format(backend="cpu")
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": template})
    run = run_cli("all", "-C", str(root), *mirrors(pypi, github, backend)[:6])
    assert run.code == 0, run.err
    lock = lock_of(root)
    client = entry_block(lock, "gradio-client @ ")
    assert client.splitlines()[0] == f"gradio-client @ {GRADIO_CLIENT} \\"  # the canonical URL, never the mirror
    assert f"--hash=sha256:{sha256(files['client'])}" in client
    assert locked_versions(lock)["numpy"] == "2.3.0"
    pylock = (root / "locks" / "linux-x86_64-cpu-py3.12" / "pylock.toml").read_text()
    assert GRADIO_CLIENT in pylock
    assert "127.0.0.1" not in pylock + lock
    assert "served nothing" not in run.err
    if template == "gradio-client\n":  # named: lockgen hashed it itself (cached for later runs)
        assert json.loads((root / ".lockgen" / "downloads.json").read_text()) == {
            GRADIO_CLIENT: sha256(files["client"])
        }


def test_c23_raw_url_in_a_template_goes_through_the_mirror(tmp_path, hosts):
    pypi, github, backend = hosts
    files = release_world(pypi, github)
    template = f"{GRADIO_CLIENT}\nnumpy ; sys_platform == 'linux'\n"
    root = write_project(tmp_path / "p", MATRIX.format(backend="cpu"), {"requirements.in.j2": template})
    run = run_cli("all", "-C", str(root), *mirrors(pypi, github, backend)[:6])
    assert run.code == 0, run.err
    client = entry_block(lock_of(root), "gradio-client @ ")
    assert client.splitlines()[0] == f"gradio-client @ {GRADIO_CLIENT} \\"
    assert f"--hash=sha256:{sha256(files['client'])}" in client
    assert "served nothing" not in run.err  # the github mirror served the template's URL


def test_source_urls_take_rule_variables_and_unrequired_urls_are_never_fetched(tmp_path, hosts):
    pypi, github, backend = hosts
    pypi.index_page("simple", [pypi.wheel("files", "numpy", "2.3.0")], upload_time=TIME)
    base = "oobabooga/llama-cpp-binaries/releases/download/v0.124.0"
    for wheel_set in ("cu124", "rocm7.2"):
        for platform in ("linux_x86_64", "win_amd64"):
            github.wheel(base, "llama_cpp_binaries", f"0.124.0+{wheel_set}", f"py3-none-{platform}")
    github.wheel(base, "ik_llama_cpp_binaries", "0.124.0+cu124", "py3-none-linux_x86_64")  # no rocm build: HTTP 404
    config = f"""
        use = ["llama"]
        vars = {{ wheel_set = "cpu", ik = false }}
        [[tool.lockgen.rules]]
        match = {{ backend = "cu128" }}
        vars = {{ wheel_set = "cu124", ik = true }}
        allow-mix = {{ "*llama-cpp-binaries" = "the llama.cpp servers bundle their own CUDA 12.4 runtime" }}
        [[tool.lockgen.rules]]
        match = {{ backend = "rocm" }}
        vars = {{ wheel_set = "rocm7.2" }}
        [tool.lockgen.sources.llama]
        urls = [
          "{LLAMA}/llama_cpp_binaries-0.124.0+{{wheel_set}}-py3-none-linux_x86_64.whl",
          "{LLAMA}/llama_cpp_binaries-0.124.0+{{wheel_set}}-py3-none-win_amd64.whl",
          "{LLAMA}/ik_llama_cpp_binaries-0.124.0+{{wheel_set}}-py3-none-linux_x86_64.whl",
        ]
        packages = ["llama-cpp-binaries", "ik-llama-cpp-binaries"]
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cu128", "rocm"]
        python = ["3.12"]
    """
    template = "llama-cpp-binaries\n{% if ik %}ik-llama-cpp-binaries\n{% endif %}numpy\n"
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": template})
    run = run_cli("all", "-C", str(root), *mirrors(pypi, github, backend)[:6])
    assert run.code == 0, run.err
    cuda = locked_versions(lock_of(root, "linux-x86_64-cu128-py3.12"))
    assert (cuda["llama-cpp-binaries"], cuda["ik-llama-cpp-binaries"]) == (
        "0.124.0+cu124",
        "0.124.0+cu124",
    )  # URL entries: the file name says
    assert f"{LLAMA}/llama_cpp_binaries-0.124.0+cu124-py3-none-linux_x86_64.whl" in lock_of(
        root, "linux-x86_64-cu128-py3.12"
    )
    rocm = lock_of(root, "linux-x86_64-rocm-py3.12")
    assert f"{LLAMA}/llama_cpp_binaries-0.124.0+rocm7.2-py3-none-linux_x86_64.whl" in rocm
    assert "ik-llama-cpp-binaries" not in rocm  # its rocm URL is a 404, and nothing requires it there


def test_a_named_urls_package_without_a_fitting_url_fails_the_cell_saying_so(tmp_path, hosts):
    pypi, github, backend = hosts
    release_world(pypi, github)
    windows_only = GRADIO_CLIENT.replace("py3-none-any", "py3-none-win_amd64")
    config = f"""
        use = ["gradio"]
        [tool.lockgen.sources.gradio]
        urls = ["{windows_only}"]
        packages = ["gradio-client"]
    """ + MATRIX.format(backend="cpu")
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "gradio-client\n"})
    run = run_cli("all", "-C", str(root), *mirrors(pypi, github, backend)[:6])
    assert run.code == 1
    assert "gradio-client: source 'gradio' has no wheel URL for x86_64-manylinux_2_28 cp312" in run.err
    assert "do not fit" in run.err


@pytest.mark.parametrize("where", ["main", "optional"], ids=["main", "optional-layer"])
def test_force_rehashes_a_replaced_file(tmp_path, hosts, where):
    pypi, github, backend = hosts
    files = release_world(pypi, github)
    config = f"""
        use = ["gradio"]
        {'optional = ["gradio-client"]' if where == "optional" else ""}
        [tool.lockgen.sources.gradio]
        urls = ["{GRADIO_CLIENT}"]
        packages = ["gradio-client"]
    """ + MATRIX.format(backend="cpu")
    root = write_project(
        tmp_path / "p", config, {"requirements.in.j2": "gradio-client\n" if where == "main" else "numpy\n"}
    )
    args = ["-C", str(root), *mirrors(pypi, github, backend)[:6]]
    assert run_cli("all", *args).code == 0
    layer = None if where == "main" else "optional-gradio-client"
    old = sha256(files["client"])
    assert f"--hash=sha256:{old}" in lock_of(root, layer=layer)
    make_wheel(
        files["client"].parent, "gradio_client", "1.0.2+custom.20", requires=("numpy", "requests")
    )  # replaced upstream
    new = sha256(files["client"])
    assert new != old
    pypi.index_page(
        "simple", [pypi.wheel("files", "numpy", "2.3.0"), pypi.wheel("files", "requests", "2.32.0")], upload_time=TIME
    )
    run = run_cli("all", "--force", *args)
    assert run.code == 0, run.err
    text = lock_of(root, layer=layer)
    assert f"--hash=sha256:{new}" in text
    assert old not in text
    assert json.loads((root / ".lockgen" / "downloads.json").read_text())[GRADIO_CLIENT] == new


# -- C25: index sources as they really are


def pytorch_world(pypi: FakeHost, backend: FakeHost) -> dict[str, Path]:
    """download.pytorch.org: cu128 torch (labelled) and xformers (unlabelled), stale numpy; cpu:
    a labelled linux torch and unlabelled macOS wheels. PyPI: the same versions, other bytes."""
    public = [
        pypi.wheel("files", "numpy", "2.3.0"),
        pypi.wheel("files", "xformers", "0.0.30", "py3-none-manylinux_2_28_x86_64", requires=("torch",)),
        pypi.wheel("files", "torch", "2.7.0", "py3-none-manylinux_2_28_x86_64"),
        pypi.wheel("files", "torch", "2.7.0", "py3-none-macosx_11_0_arm64"),
    ]
    pypi.index_page("simple", public, upload_time=TIME)
    cu128 = [
        backend.wheel("whl/cu128", "torch", "2.7.0+cu128", "py3-none-manylinux_2_28_x86_64", requires=("numpy",)),
        backend.wheel("whl/cu128", "xformers", "0.0.30", "py3-none-manylinux_2_28_x86_64", requires=("torch", "numpy")),
        backend.wheel("whl/cu128", "numpy", "1.26.0"),
    ]
    backend.index_page("whl/cu128", cu128)
    cpu = [
        backend.wheel("whl/cpu", "torch", "2.7.0+cpu", "py3-none-manylinux_2_28_x86_64"),
        backend.wheel("whl/cpu", "torch", "2.7.0", "py3-none-macosx_11_0_arm64"),
    ]
    backend.index_page("whl/cpu", cpu)
    return {"xformers": cu128[1], "torch-cu128": cu128[0], "torch-mac": cpu[1], "pypi-xformers": public[1]}


PYTORCH = """
    use = ["pytorch"]
    pinned = ["torch"]
    pins = {{ torch = "2.7.0" }}
    {extra}
    [tool.lockgen.sources.pytorch]
    index = "https://download.pytorch.org/whl/{{flavor}}"
    packages = ["torch", "xformers", "triton-rocm"]
    {labels}
    [tool.lockgen.matrix]
    os = ["linux"]
    arch = ["x86_64"]
    backend = ["cu128"]
    python = ["3.12"]
    include = [{{ os = "macos", arch = "aarch64", backend = "cpu", python = "3.12" }}]
"""


def test_c25_unlabelled_packages_on_a_backend_index(tmp_path, hosts):
    pypi, github, backend = hosts
    files = pytorch_world(pypi, backend)
    template = "torch\nxformers ; sys_platform != 'darwin'\nnumpy\n"
    root = write_project(tmp_path / "p", PYTORCH.format(extra="", labels=""), {"requirements.in.j2": template})
    run = run_cli("all", "-C", str(root), *mirrors(pypi, github, backend))
    assert run.code == 0, run.err
    linux = lock_of(root, "linux-x86_64-cu128-py3.12")
    pins = locked_versions(linux)
    assert (pins["torch"], pins["xformers"], pins["numpy"]) == ("2.7.0+cu128", "0.0.30", "2.3.0")  # numpy: C03
    xformers = entry_block(linux, "xformers==")
    assert f"sha256:{sha256(files['xformers'])}" in xformers  # the backend's bytes, although PyPI has 0.0.30 too
    assert sha256(files["pypi-xformers"]) not in linux
    for package in ("torch", "xformers"):  # what an installer needs, and no page the index lacks (triton-rocm: 404)
        assert f"# find-links: https://download.pytorch.org/whl/cu128/{package}/\n" in linux
    assert "triton-rocm" not in linux
    mac = lock_of(root, "macos-aarch64-cpu-py3.12")
    assert locked_versions(mac)["torch"] == "2.7.0"  # the cpu index's macOS wheels carry no +cpu
    assert f"sha256:{sha256(files['torch-mac'])}" in entry_block(mac, "torch==")
    assert "# find-links: https://download.pytorch.org/whl/cpu/torch/\n" in mac


def test_c25_a_label_policy_is_checked(tmp_path, hosts):
    pypi, github, backend = hosts
    pytorch_world(pypi, backend)
    labels = '[tool.lockgen.sources.pytorch.labels]\nxformers = "{flavor}"'
    root = write_project(
        tmp_path / "p", PYTORCH.format(extra="", labels=labels), {"requirements.in.j2": "torch\nxformers\n"}
    )
    run = run_cli("lock", "linux-x86_64-cu128-py3.12", "-C", str(root), *mirrors(pypi, github, backend))
    assert run.code == 1
    assert "xformers 0.0.30: source 'pytorch' serves it for this cell, so its version must carry +cu128" in run.err


def test_c25_a_dependency_named_for_an_index_is_pinned_only_where_required(tmp_path, hosts):
    pypi, github, backend = hosts
    pytorch_world(pypi, backend)
    pypi.index_page(
        "simple",
        [pypi.wheel("files", "numpy", "2.3.0"), pypi.wheel("files", "xformers", "0.0.30", "py3-none-manylinux_2_28_x86_64", requires=("torch",)),
         pypi.wheel("files", "torch", "2.7.0", "py3-none-manylinux_2_28_x86_64"), pypi.wheel("files", "addon", "1.0", requires=("xformers",))],
        upload_time=TIME,
    )  # fmt: skip
    config = PYTORCH.format(extra="", labels="").replace(
        'include = [{ os = "macos", arch = "aarch64", backend = "cpu", python = "3.12" }]', ""
    )
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "torch\naddon\n"})
    run = run_cli("all", "-C", str(root), *mirrors(pypi, github, backend))
    assert run.code == 1
    assert (
        "xformers 0.0.30: source 'pytorch' (https://download.pytorch.org/whl/cu128) serves it for this cell, "
        "but it came from the default index (https://pypi.org/simple)" in run.err
    )
    assert "add a line for xformers to the requirements template" in run.err


def test_c25_an_optional_layer_takes_its_package_from_the_index_too(tmp_path, hosts):
    pypi, github, backend = hosts
    files = pytorch_world(pypi, backend)
    config = PYTORCH.format(extra='optional = ["xformers"]', labels="")
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "torch\n"})
    run = run_cli("lock", "linux-x86_64-cu128-py3.12", "-C", str(root), *mirrors(pypi, github, backend))
    assert run.code == 0, run.err
    layer = lock_of(root, "linux-x86_64-cu128-py3.12", "optional-xformers")
    assert f"sha256:{sha256(files['xformers'])}" in entry_block(layer, "xformers==")
    assert "# find-links: https://download.pytorch.org/whl/cu128/xformers/\n" in layer


def test_c25_a_package_missing_from_the_cells_index_is_named(tmp_path, hosts):
    pypi, github, backend = hosts
    pytorch_world(pypi, backend)
    root = write_project(
        tmp_path / "p", PYTORCH.format(extra="", labels=""), {"requirements.in.j2": "torch\ntriton-rocm\n"}
    )
    run = run_cli("lock", "linux-x86_64-cu128-py3.12", "-C", str(root), *mirrors(pypi, github, backend))
    assert run.code == 1
    assert (
        "lockgen: triton-rocm is taken only from index source 'pytorch' (https://download.pytorch.org/whl/cu128): "
        "that index has no triton-rocm for this cell (HTTP 404 for https://download.pytorch.org/whl/cu128/triton-rocm/)"
    ) in run.err


def test_a_layer_keeps_mains_release_page_wheel(tmp_path, hosts):
    pypi, github, backend = hosts
    files = release_world(pypi, github)
    addon = pypi.wheel("files", "addon", "1.0", requires=("gradio-client",))
    pypi.index_page(
        "simple",
        [pypi.wheel("files", "numpy", "2.3.0"), pypi.wheel("files", "gradio_client", "1.0.2"), addon],
        upload_time=TIME,
    )
    config = f"""
        use = ["gradio"]
        optional = ["addon"]
        [tool.lockgen.sources.gradio]
        urls = ["{GRADIO_CLIENT}"]
        packages = ["gradio-client"]
    """ + MATRIX.format(backend="cpu")
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "gradio-client\n"})
    run = run_cli("all", "-C", str(root), *mirrors(pypi, github, backend)[:6])
    assert run.code == 0, run.err
    layer = lock_of(root, layer="optional-addon")
    assert f"gradio-client @ {GRADIO_CLIENT}" in layer  # not PyPI's 1.0.2 over main's patched build
    assert sha256(files["client"]) in layer


def test_a_direct_url_download_stops_when_the_run_is_interrupted(tmp_path, fake_host):
    """Ctrl-C while lockgen hashes a direct wheel: the download stops at the next chunk (it is not
    read to its end first, however large) and nothing is cached."""
    from lockgen.errors import Interrupted
    from lockgen.plan.mirror import Mirrors
    from lockgen.resolve import fetch

    host = fake_host("github")
    url = host.file_url(host.wheel("assets", "big", "1.0"))
    stop = threading.Event()
    stop.set()
    with pytest.raises(Interrupted, match="interrupted while downloading"):
        fetch.sha256_of(tmp_path, url, Mirrors(), stop=stop)
    assert fetch.sha256_of(tmp_path, url, Mirrors()) == sha256(host.root / "assets" / "big-1.0-py3-none-any.whl")
