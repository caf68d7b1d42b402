"""The readers of the wheels' GPU code (lockgen/wheels): on real nvcc-built binaries
(tests/data/cuda, made by its build.py), hand-built PE and offload-bundle files, fake wheels that
carry them, broken and random bytes, and range reads over loopback HTTP."""

from __future__ import annotations

import contextlib
import http.server
import json
import random
import threading
from pathlib import Path
from typing import ClassVar

import pytest

from lockgen.index.client import Client
from lockgen.index.ranges import RangeError, RangeFile
from lockgen.wheels import binaries, fatbin, offload
from lockgen.wheels.binaries import gpu_sections
from lockgen.wheels.coverage import Code, CoverageError, Linked, is_shared_object, scan_binary, scan_wheel
from lockgen.wheels.remote import cached, read_remote, store
from tests.support.wheels import make_wheel

CUDA = Path(__file__).parents[1] / "data" / "cuda"
EXPECTED = json.loads((CUDA / "expected.json").read_text())


def binary(name: str) -> bytes:
    return (CUDA / name).read_bytes()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_binary_gives_the_code_it_was_built_for(name: str) -> None:
    """The expected lists come from the -gencode lists and bundle tables of build.py."""
    want = EXPECTED[name]
    codes = (want["sass"], want["ptx"], want["gfx"])
    assert scan_binary(binary(name)) == Code.of(*codes, [Linked(tuple(want["needs"]), *map(tuple, codes))])


def test_entries_keep_variants_and_one_container_per_unit() -> None:
    data = binary("two-units.so")
    (section,) = [s for s in gpu_sections(data) if s.name == ".nv_fatbin"]
    names = [e.name for e in fatbin.entries(data, section.offset, section.offset + section.size)]
    assert sorted(names) == ["sm_75", "sm_80", "sm_90"]
    special = binary("sm90a-sm100f-ptx120.so")
    (section,) = gpu_sections(special)
    entries = fatbin.entries(special, section.offset, section.offset + section.size)
    assert {(e.kind, e.arch, e.variant) for e in entries} == {("sass", 90, "a"), ("sass", 100, "f"), ("ptx", 120, "")}


def test_sections_by_file_kind() -> None:
    assert [s.name for s in gpu_sections(binary("sm86-ptx90.dll"))] == [".nv_fatb"]
    assert [s.name for s in gpu_sections(binary("rocm-bundles.so"))] == [".hip_fatbin"]
    assert gpu_sections(b"#!/bin/sh\necho not a binary\n") == []


def test_offload_bundles_plain_zlib_and_zstd() -> None:
    data = binary("rocm-bundles.so")
    (section,) = gpu_sections(data)
    found = offload.targets(data, section.offset, section.offset + section.size)
    assert found == ["gfx90a:xnack-", "gfx942", "gfx1100", "gfx1030", "gfx11-generic", "gfx1201"]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"\x50\xed\x55\xba\x01\x00\x10\x00" + (10**6).to_bytes(8, "little"), "run past the section's end"),
        (b"\x51\xed\x55\xba\x01\x00\x10\x00" + bytes(8), "not a fat binary container"),
        (b"\x50\xed\x55\xba\x01\x00\x10\x00" + (64).to_bytes(8, "little") + bytes(4) + (999).to_bytes(4, "little")
         + bytes(56), "runs past its container's end"),
    ],
    ids=["container-too-long", "wrong-magic", "entry-too-long"],
)  # fmt: skip
def test_broken_fatbins_say_where(data: bytes, error: str) -> None:
    with pytest.raises(fatbin.FatbinError, match=error):
        fatbin.entries(data)


def test_broken_bundles_say_where() -> None:
    with pytest.raises(offload.OffloadError, match="truncated"):
        offload.targets(offload.BUNDLE + (3).to_bytes(8, "little") + bytes(10))
    with pytest.raises(offload.OffloadError, match="version 9"):
        offload.targets(offload.COMPRESSED + (9).to_bytes(2, "little") + bytes(30))
    with pytest.raises(offload.OffloadError, match="does not decompress"):
        offload.targets(
            offload.COMPRESSED + (2).to_bytes(2, "little") + bytes(2) + (60).to_bytes(4, "little") + bytes(40)
        )


@pytest.mark.parametrize("name", ["sm80-ptx90.so", "rocm-bundles.so", "sm86-ptx90.dll"])
def test_random_damage_is_an_error_or_an_answer_never_a_crash(name: str) -> None:
    """Flipped bytes anywhere in a binary: the reader answers or raises CoverageError."""
    original = bytearray(binary(name))
    rng = random.Random(name)
    for _ in range(60):
        damaged = bytearray(original)
        for _ in range(rng.randint(1, 8)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        if rng.random() < 0.2:
            damaged = damaged[: rng.randrange(len(damaged))]
        with contextlib.suppress(CoverageError):
            scan_binary(bytes(damaged))


def test_shared_object_names() -> None:
    assert all(
        map(is_shared_object, ["torch/lib/libtorch_cuda.so", "x/libcudart.so.13", "a/_C.pyd", "cudart64_12.dll"])
    )
    assert not any(map(is_shared_object, ["torch/__init__.py", "x/so.txt", "lib/libfoo.so.txt"]))


def gpu_wheel(
    tmp_path: Path, name: str, members: dict[str, str], tag: str = "cp312-cp312-manylinux_2_28_x86_64"
) -> Path:
    files = {member: binary(source) for member, source in members.items()}
    return make_wheel(tmp_path, name, "1.0", tag, files=files)


def test_a_wheel_is_the_union_of_its_shared_objects(tmp_path: Path) -> None:
    wheel = gpu_wheel(tmp_path, "kernels", {"kernels/lib/a.so": "sm75-sm86.so", "kernels/lib/b.so.2": "sm80-ptx90.so",
                                             "kernels/_rocm.so": "rocm-bundles.so"})  # fmt: skip
    with open(wheel, "rb") as file:
        code = scan_wheel(file)
    assert code.sass == ("sm_75", "sm_80", "sm_86") and code.ptx == ("compute_90",)
    assert "gfx942" in code.gfx
    plain = make_wheel(tmp_path, "plain", "1.0", "cp312-cp312-manylinux_2_28_x86_64")
    with open(plain, "rb") as file:
        assert not scan_wheel(file)


def test_code_is_grouped_by_the_gpu_runtime_it_is_linked_against(tmp_path: Path) -> None:
    """A CUDA 12 extension's objects need libcudart.so.12 (ELF DT_NEEDED, PE imports); a wheel
    that ships the runtime itself needs nothing more (bitsandbytes-like: one object per runtime)."""
    assert binaries.needed(binary("sm80-sm90-cudart12.so"))[0] == "libcudart.so.12"
    assert binaries.needed(binary("sm86-ptx90-cudart12.dll")) == ["cudart64_12.dll"]
    assert binaries.needed(binary("sm86-ptx90.dll")) == [] and binaries.needed(b"not a binary") == []
    assert binaries.gpu_runtime("libcudart.so.13.0.96") == "libcudart.so.13"
    assert binaries.gpu_runtime("CUDART64_12.DLL") == "cudart64_12.dll" and binaries.gpu_runtime("libc.so.6") is None
    wheel = gpu_wheel(tmp_path, "several", {"several/cuda12.so": "sm80-sm90-cudart12.so",
                                            "several/cuda13.so": "sm120-cudart13.so", "several/plain.so": "sm75-sm86.so"})  # fmt: skip
    with open(wheel, "rb") as file:
        code = scan_wheel(file)
    assert code.sass == ("sm_75", "sm_80", "sm_86", "sm_90", "sm_120") and not code.bundles
    assert [(g.needs, g.sass) for g in code.linked] == [
        ((), ("sm_75", "sm_86")), (("libcudart.so.12",), ("sm_80", "sm_90")), (("libcudart.so.13",), ("sm_120",))
    ]  # fmt: skip
    shipped = gpu_wheel(tmp_path, "shipped", {"shipped/k.dll": "sm86-ptx90-cudart12.dll",
                                              "shipped/lib/cudart64_12.dll": "sm86-ptx90.dll"})  # fmt: skip
    with open(shipped, "rb") as file:
        code = scan_wheel(file)
    assert code.bundles == ("cudart64_12.dll",) and [g.needs for g in code.linked] == [()]
    assert Code.from_dict(code.to_dict()) == code


def test_a_broken_member_is_named(tmp_path: Path) -> None:
    bad = bytearray(binary("sm80-ptx90.so"))
    section = gpu_sections(bytes(bad))[0]
    bad[section.offset : section.offset + 4] = b"XXXX"
    path = make_wheel(tmp_path, "broken", "1.0", "cp312-cp312-manylinux_2_28_x86_64", files={"broken/x.so": bytes(bad)})
    with open(path, "rb") as file, pytest.raises(CoverageError, match=r"broken/x.so: offset 0: not a fat binary"):
        scan_wheel(file)
    (tmp_path / "not-a-wheel.whl").write_bytes(b"PK nothing")
    with open(tmp_path / "not-a-wheel.whl", "rb") as file, pytest.raises(CoverageError, match="not a wheel"):
        scan_wheel(file)


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files with ``Range: bytes=A-B`` (206) as CDNs do; counts the requests."""

    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        path = Path(self.translate_path(self.path))
        data = path.read_bytes()
        wanted = self.headers.get("Range")
        type(self).requests.append(wanted or "")
        if wanted and self.server.ranges:  # type: ignore[attr-defined]
            start, end = (int(x) for x in wanted.removeprefix("bytes=").split("-"))
            body = data[start : end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{len(data)}")
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(params=[True, False], ids=["ranges", "no-ranges"])
def served(request: pytest.FixtureRequest, tmp_path: Path):
    wheel = gpu_wheel(tmp_path, "served", {"served/lib/k.so": "sm90a-sm100f-ptx120.so"})
    handler = type("Handler", (RangeHandler,), {"requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(tmp_path)))
    server.ranges = request.param  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/{wheel.name}", wheel, handler
    server.shutdown()
    server.server_close()


def test_a_remote_wheel_is_read_by_ranges(served) -> None:
    url, wheel, handler = served
    with Client() as client:
        code, fetched = read_remote(client, url, wheel.stat().st_size)
    assert code.sass == ("sm_90a", "sm_100f") and code.ptx == ("compute_120",)
    assert fetched >= wheel.stat().st_size  # a tiny wheel fits one window
    assert all(handler.requests) == bool(handler.requests and handler.requests[0])  # Range asked every time


def test_the_range_file_refuses_a_wrong_size_without_ranges(tmp_path: Path) -> None:
    wheel = gpu_wheel(tmp_path, "sized", {"sized/k.so": "sm75-sm86.so"})
    handler = type("Handler", (RangeHandler,), {"requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(tmp_path)))
    server.ranges = False  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{wheel.name}"
        with Client() as client, pytest.raises(RangeError, match="expected"):
            RangeFile(client, url, wheel.stat().st_size + 1).read(10)
    finally:
        server.shutdown()
        server.server_close()


def test_the_cache_is_keyed_by_sha256(tmp_path: Path) -> None:
    code = Code.of(["sm_86"], ["compute_90"], [])
    store(tmp_path, "a" * 64, code)
    assert cached(tmp_path, "a" * 64) == code
    assert cached(tmp_path, "b" * 64) is None
    (tmp_path / f"{'c' * 64}.json").write_text(json.dumps({"reader": 0, "sha256": "c" * 64, "sass": []}))
    assert cached(tmp_path, "c" * 64) is None  # another reader version: read again


def test_a_layer_artifact_is_found_by_sha256_in_a_local_folder(tmp_path: Path) -> None:
    """A layer lock lists ``name==version`` and hashes only: the reader finds the file on the
    layer's find-links (here a project folder), reads a platform wheel, skips a pure one and says
    when no file has the hash."""
    import hashlib

    from lockgen.wheels.model import GpuWheel
    from lockgen.wheels.reading import Reader

    folder = tmp_path / "wheels"
    folder.mkdir()
    flash = gpu_wheel(folder, "flash-attn", {"flash_attn_2_cuda.so": "sm80-sm90-cudart12.so"})
    pure = make_wheel(folder, "einops", "1.0")
    sha = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (flash, pure)}
    wheels = [GpuWheel(name=name, version="1.0", sha256=digest, url=None, path=None, size=None, find_links=("wheels",))
              for name, digest in (("flash-attn", sha[flash.name]), ("einops", sha[pure.name]), ("flash-attn", "0" * 64))]  # fmt: skip
    with Reader(tmp_path) as reader:
        done = reader(wheels)
    assert done.codes[sha[flash.name]].sass == ("sm_80", "sm_90")
    assert done.skipped == {sha[pure.name]}
    assert done.unread["0" * 64] == "no file of flash-attn 1.0 with this sha256 on wheels"
    assert (tmp_path / ".lockgen" / "coverage" / f"{sha[flash.name]}.json").is_file()  # read once
