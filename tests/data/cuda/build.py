"""Build the GPU test binaries of tests/data/cuda (committed; run again only to change them).

    python tests/data/cuda/build.py [OUTPUT ...]   # needs nvcc (CUDA 13.0 here), gcc, objcopy; zstandard

Without outputs it builds every one; with some (``sm80-sm90-cudart12.so``) only those, so that
the others stay byte for byte (nvcc's output differs from run to run). ``expected.json`` is
written for all of them either way.

Every output's expected code is written to ``expected.json`` from the ``-gencode`` lists and
bundle tables below, not by reading the outputs, so the scanner's tests compare against what was
asked of the compiler:

* ``*.so``: tiny CUDA shared objects (one kernel), ``nvcc -shared`` for chosen ``-gencode`` lists;
  ``two-units.so`` links two translation units built for different lists (two fat binary
  containers in one ``.nv_fatbin``). Most link no CUDA runtime (``-cudart none``);
  ``sm120-cudart13.so`` links CUDA 13's ``libcudart.so.13`` (``-cudart shared``, the toolkit's
  own) and ``sm80-sm90-cudart12.so`` a stub whose soname is ``libcudart.so.12`` (gcc-built: no
  CUDA 12 toolkit here), as a CUDA 12 extension wheel does (``DT_NEEDED``, the ``needs`` below).
* ``sm86-ptx90.dll``: nvcc's fat binary for two targets in a minimal PE32+ file, section
  ``.nv_fatb``, built by hand (Microsoft's PE/COFF specification: DOS stub with ``e_lfanew``,
  ``PE\\0\\0``, COFF header, PE32+ optional header, one section header): nvcc on Linux cannot
  link a Windows DLL. ``sm86-ptx90-cudart12.dll`` is the same with a second section ``.idata``
  holding an import directory (one import descriptor, its lookup table and hint/name entry) for
  ``cudart64_12.dll``, as a CUDA 12 build for Windows imports it.
* ``rocm-bundles.so``: a gcc-built shared object with a ``.hip_fatbin`` section holding clang
  offload bundles built by hand (no ROCm toolchain here; format: clang's ClangOffloadBundler
  documentation and OffloadBundler.h): a plain bundle, a zlib ``CCOB`` version 2 bundle and a
  zstd ``CCOB`` version 3 bundle. The code objects in them are placeholders: only the bundle
  tables are read.
"""

from __future__ import annotations

import json
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

HERE = Path(__file__).parent
KERNEL = 'extern "C" __global__ void {name}(float *x) {{ x[threadIdx.x] += 1.0f; }}\n'

BUILDS: dict[str, list[list[str]]] = {  # output -> one -gencode list per translation unit
    "sm75-sm86.so": [["arch=compute_75,code=sm_75", "arch=compute_86,code=sm_86"]],
    "sm80-ptx90.so": [["arch=compute_80,code=sm_80", "arch=compute_90,code=compute_90"]],
    "sm90a-sm100f-ptx120.so": [["arch=compute_90a,code=sm_90a", "arch=compute_100f,code=sm_100f",
                                "arch=compute_120,code=compute_120"]],
    "sm120-ptx120.so": [["arch=compute_120,code=sm_120", "arch=compute_120,code=compute_120"]],
    "two-units.so": [["arch=compute_75,code=sm_75"], ["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90"]],
    "sm120-cudart13.so": [["arch=compute_120,code=sm_120"]],
    "sm80-sm90-cudart12.so": [["arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90"]],
}  # fmt: skip
#: output -> the CUDA runtime it links (nvcc's -cudart, or a stub named so); the rest: -cudart none
RUNTIMES = {"sm120-cudart13.so": "shared", "sm80-sm90-cudart12.so": "libcudart.so.12"}
NEEDS = {"sm120-cudart13.so": ["libcudart.so.13"], "sm80-sm90-cudart12.so": ["libcudart.so.12"],
         "sm86-ptx90-cudart12.dll": ["cudart64_12.dll"]}  # fmt: skip
PE_BUILD = ["arch=compute_86,code=sm_86", "arch=compute_90,code=compute_90"]
BUNDLES = [  # (compression, target IDs): every bundle also has a host entry
    (None, ["gfx90a:xnack-", "gfx942"]),
    ("zlib", ["gfx1100", "gfx1030"]),
    ("zstd", ["gfx11-generic", "gfx1201"]),
]


def codes(gencodes: list[str], needs: list[str] | None = None) -> dict[str, list[str]]:
    sass, ptx = [], []
    for gencode in gencodes:
        code = gencode.split("code=")[1]
        (sass if code.startswith("sm_") else ptx).append(code)
    return {"sass": sass, "ptx": ptx, "gfx": [], "needs": needs or []}


def nvcc(args: list[str], work: Path) -> None:
    subprocess.run(["nvcc", *args], check=True, cwd=work)


def build_so(name: str, units: list[list[str]], work: Path) -> None:
    objects = []
    for index, gencodes in enumerate(units):
        source = work / f"{name}.{index}.cu"
        source.write_text(KERNEL.format(name=f"k{index}"))
        obj = work / f"{name}.{index}.o"
        nvcc(["-c", "-Xcompiler", "-fPIC", "-o", str(obj), str(source), *(f"-gencode={g}" for g in gencodes)], work)
        objects.append(str(obj))
    runtime = RUNTIMES.get(name, "none")
    if runtime in ("none", "shared"):  # linking the runtime adds a device-link image: for the same targets
        gencodes = [f"-gencode={g}" for unit in units for g in unit] if runtime == "shared" else []
        nvcc(["-shared", "-cudart", runtime, *gencodes, "-o", str(HERE / name), *objects], work)
        return
    stub = work / runtime  # a library that only has the soname the extension links against
    (work / "stub.c").write_text("int cudart_stub(void) { return 0; }\n")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-Wl,-soname,{runtime}", "-o", str(stub), "stub.c"], check=True, cwd=work
    )
    nvcc(["-shared", "-cudart", "none", "-o", str(HERE / name), *objects, "-Xlinker", f"--no-as-needed,{stub}"], work)


def build_pe(work: Path, outputs: list[str]) -> None:
    source = work / "pe.cu"
    source.write_text(KERNEL.format(name="k"))
    nvcc(["-fatbin", "-o", str(work / "k.fatbin"), str(source), *(f"-gencode={g}" for g in PE_BUILD)], work)
    for output in outputs:
        imports = "cudart64_12.dll" if "cudart12" in output else None
        (HERE / output).write_bytes(pe_file((work / "k.fatbin").read_bytes(), imports=imports))


def import_section(rva: int, dll: str) -> tuple[bytes, int]:
    """An ``.idata`` section at ``rva``: one import descriptor for ``dll`` (20 bytes, then a zero
    one), its import lookup table (PE32+: 8-byte entries, zero-terminated), one hint/name entry
    and the DLL's name; returns (bytes, size of the descriptors for the data directory)."""
    lookup = 40
    hint = lookup + 16
    name_at = hint + 2 + len(b"cudaLaunchKernel\0") + 1
    data = bytearray(name_at + len(dll) + 1)
    struct.pack_into("<IIIII", data, 0, rva + lookup, 0, 0, rva + name_at, rva + lookup)  # FirstThunk: the same table
    struct.pack_into("<Q", data, lookup, rva + hint)
    struct.pack_into("<H", data, hint, 0)
    data[hint + 2 : hint + 2 + 17] = b"cudaLaunchKernel\0"
    data[name_at : name_at + len(dll)] = dll.encode()
    return bytes(data), 40


def pe_file(payload: bytes, name: bytes = b".nv_fatb", imports: str | None = None) -> bytes:
    """A PE32+ image with one initialized-data section holding ``payload``, and with ``imports``
    a second one importing that DLL (the import data directory points at it)."""
    file_align, sect_align = 0x200, 0x1000
    sections = [(name, payload)]
    idata_rva = sect_align + -(-len(payload) // sect_align) * sect_align
    directory = None
    if imports is not None:
        idata, size = import_section(idata_rva, imports)
        sections.append((b".idata", idata))
        directory = (idata_rva, size)
    dos = bytearray(64)
    dos[0:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, 64)
    optional_size = 240
    headers = 64 + 4 + 20 + optional_size + 40 * len(sections)
    raw_at = -(-headers // file_align) * file_align
    coff = struct.pack("<HHIIIHH", 0x8664, len(sections), 0, 0, 0, optional_size, 0x2022)  # AMD64, DLL
    optional = bytearray(optional_size)
    struct.pack_into("<HBB", optional, 0, 0x20B, 14, 0)  # PE32+, linker 14.0
    struct.pack_into("<Q", optional, 24, 0x180000000)  # ImageBase
    struct.pack_into("<II", optional, 32, sect_align, file_align)
    struct.pack_into("<HH", optional, 40, 6, 0)  # OS version
    struct.pack_into("<HH", optional, 48, 6, 0)  # subsystem version
    image_size = sect_align + sum(-(-len(data) // sect_align) * sect_align for _, data in sections)
    struct.pack_into("<II", optional, 56, image_size, raw_at)
    struct.pack_into("<H", optional, 68, 3)  # console subsystem
    struct.pack_into("<I", optional, 108, 16)  # NumberOfRvaAndSizes
    if directory is not None:
        struct.pack_into("<II", optional, 112 + 8, *directory)  # data directory 1: the import table
    headers_bytes, body, rva, at = b"", b"", sect_align, raw_at
    for section_name, data in sections:
        raw_size = -(-len(data) // file_align) * file_align
        headers_bytes += struct.pack("<8sIIIIIIHHI", section_name, len(data), rva, raw_size, at, 0, 0, 0, 0, 0x40000040)
        body += data.ljust(raw_size, b"\0")
        rva += -(-len(data) // sect_align) * sect_align
        at += raw_size
    image = bytes(dos) + b"PE\0\0" + coff + bytes(optional) + headers_bytes
    return image.ljust(raw_at, b"\0") + body


def bundle(targets: list[str]) -> bytes:
    ids = ["host-x86_64-unknown-linux-gnu-"] + [f"hipv4-amdgcn-amd-amdhsa--{t}" for t in targets]
    table = 24 + 8 + sum(24 + len(i) for i in ids)
    blobs = [b""] + [f"placeholder code object for {t}\n".encode() for t in targets]
    out, data, offset = [b"__CLANG_OFFLOAD_BUNDLE__", struct.pack("<Q", len(ids))], b"", table
    for entry_id, blob in zip(ids, blobs):
        out.append(struct.pack("<QQQ", offset if blob else 0, len(blob), len(entry_id)) + entry_id.encode())
        data += blob
        offset += len(blob)
    return b"".join(out) + data


def compressed(plain: bytes, method: str) -> bytes:
    import zstandard

    packed = zlib.compress(plain) if method == "zlib" else zstandard.ZstdCompressor().compress(plain)
    digest = b"\x11" * 8  # the truncated MD5 of the format; not checked by readers of the table
    if method == "zlib":  # version 2: u32 total size, u32 uncompressed size
        header = b"CCOB" + struct.pack("<HHII", 2, 0, 24 + len(packed), len(plain)) + digest
    else:  # version 3: u64 total size, u64 uncompressed size
        header = b"CCOB" + struct.pack("<HHQQ", 3, 1, 32 + len(packed), len(plain)) + digest
    return header + packed


def build_rocm(work: Path) -> None:
    section = b""
    for method, targets in BUNDLES:
        blob = bundle(targets) if method is None else compressed(bundle(targets), method)
        section += blob + b"\0" * (-len(blob) % 4096 if method is None else -len(blob) % 8)
    (work / "bundles.bin").write_bytes(section)
    (work / "host.c").write_text("int rocm_test_host(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(work / "host.so"), "host.c"], check=True, cwd=work)
    subprocess.run(["objcopy", "--add-section", ".hip_fatbin=bundles.bin", "--set-section-flags",
                    ".hip_fatbin=alloc,readonly", "host.so", str(HERE / "rocm-bundles.so")], check=True, cwd=work)  # fmt: skip


def main(only: list[str]) -> None:
    expected: dict[str, dict[str, list[str]]] = {}
    wanted = lambda name: not only or name in only  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, units in BUILDS.items():
            if wanted(name):
                build_so(name, units, work)
            expected[name] = codes([g for unit in units for g in unit], NEEDS.get(name))
        if wanted("sm86-ptx90.dll") or wanted("sm86-ptx90-cudart12.dll"):
            build_pe(work, [n for n in ("sm86-ptx90.dll", "sm86-ptx90-cudart12.dll") if wanted(n)])
        expected["sm86-ptx90.dll"] = codes(PE_BUILD)
        expected["sm86-ptx90-cudart12.dll"] = codes(PE_BUILD, NEEDS["sm86-ptx90-cudart12.dll"])
        if wanted("rocm-bundles.so"):
            build_rocm(work)
        expected["rocm-bundles.so"] = {"sass": [], "ptx": [], "gfx": [t for _, targets in BUNDLES for t in targets],
                                       "needs": []}  # fmt: skip
    (HERE / "expected.json").write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
