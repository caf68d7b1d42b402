"""``lockgen licenses`` and ``lockgen sbom`` (issue 22, items 3 and 4): licenses from the fake
index's PEP 658 metadata files (no wheel downloaded), cached by hash, checked against the policy;
CycloneDX 1.6 SBOMs per cell and merged, validated against the schema the library ships, and
byte-stable."""

from __future__ import annotations

import json
import uuid

import pytest

from lockgen.dossier.licenses import license_of
from tests.conftest import run_cli
from tests.support import dossier_world
from tests.support.dossier_world import NEW, OLD

POLICY = """
[tool.lockgen.licenses]
allow = ["MIT", "BSD-3-Clause", "HPND", "0BSD"]
deny = ["GPL-3.0-only"]
exceptions = { "nvidia-*" = "redistributed under the CUDA EULA's attachment A" }
"""


class Counting:
    """Counts what the fake host was asked (wheels must never be downloaded)."""


@pytest.fixture(scope="module")
def world(shared_fake_host, tmp_path_factory):
    pypi = shared_fake_host("pypi")
    dossier_world.publish(pypi)
    w = dossier_world.write(tmp_path_factory.mktemp("sbom") / "p", pypi, POLICY)
    run = run_cli("all", "-C", str(w.root), *w.mirror_args())
    assert run.code == 0, run.err
    return w


def cli(world, *args: str):
    return run_cli(*args, "-C", str(world.root), *world.mirror_args())


def test_licenses_come_from_metadata_files_and_the_policy_names_cell_package_and_license(world):
    run = cli(world, "licenses")
    assert run.code == 1, run.err
    out = run.out
    assert "jinja2 3.1.4          BSD-3-Clause  [1 of 2 cells]" in out
    assert "markupsafe 2.1.5      BSD-3-Clause" in out  # the License field, an SPDX id
    assert "numpy 2.0.0           BSD-3-Clause AND 0BSD AND MIT" in out
    assert "pillow 10.0.0+build1  HPND" in out
    # NVIDIA's runtime: proprietary, said so, accepted by the exception
    assert (
        "nvidia-cublas 13.1.0  LicenseRef-NVIDIA-Proprietary (proprietary)  redistribution needs the vendor's terms"
        in out
    )
    assert "exception: redistributed under the CUDA EULA's attachment A" in out
    # only in a layer (no URL in its lock: found on the index page by hash), denied
    assert "extra-lib 1.0         GPL-3.0-only  (layer optional-extra-lib)" in out
    assert (
        f"  {OLD} (layer optional-extra-lib): extra-lib 1.0: GPL-3.0-only: GPL-3.0-only denied by [licenses] deny"
        in out
    )
    assert (
        f"  {NEW} (layer optional-extra-lib): extra-lib 1.0: GPL-3.0-only: GPL-3.0-only denied by [licenses] deny"
        in out
    )
    assert out.count("denied by") == 2 and "nvidia-cublas 13.1.0: " not in out.split("license problems:")[1]


def test_metadata_is_cached_by_hash_and_no_wheel_is_downloaded(world, monkeypatch):
    import httpx

    asked: list[str] = []
    original = httpx.Client.stream

    def stream(self, method, url, *args, **kwargs):
        asked.append(str(url))
        return original(self, method, url, *args, **kwargs)

    monkeypatch.setattr(httpx.Client, "stream", stream)
    cache = world.root / ".lockgen" / "metadata"
    for file in cache.glob("*.metadata") if cache.is_dir() else []:
        file.unlink()
    cli(world, "licenses")
    assert asked and all(url.endswith((".metadata", "/")) for url in asked), asked
    assert not any(url.endswith(".whl") for url in asked)
    first = len(asked)
    assert len(list(cache.glob("*.metadata"))) == 7  # one per package version, named by sha256
    asked.clear()
    again = cli(world, "licenses", "--offline")
    assert asked == [] and again.out.count("unknown") == 0
    assert first >= 7


def test_licenses_json_per_cell_and_merged(world):
    data = json.loads(cli(world, "licenses", "--format", "json").out)
    assert set(data["cells"]) == set(dossier_world.CELLS)
    assert {r["package"] for r in data["cells"][NEW]} >= {"jinja2", "extra-lib", "nvidia-cublas"}
    cublas = next(r for r in data["merged"] if r["package"] == "nvidia-cublas")
    assert cublas["license"]["proprietary"] is True and cublas["license"]["source"] == "License-Expression"
    assert {(v["cell"], v["package"]) for v in data["violations"]} == {(OLD, "extra-lib"), (NEW, "extra-lib")}


@pytest.mark.parametrize(
    ("lines", "shown", "proprietary"),
    [
        (["License-Expression: mit or apache-2.0"], "MIT OR Apache-2.0", False),
        (["License: BSD-3-Clause"], "BSD-3-Clause", False),
        (["License: Copyright (c) …\n long text", "Classifier: License :: OSI Approved :: MIT License"], "MIT", False),
        (
            [
                "Classifier: License :: OSI Approved :: MIT License",
                "Classifier: License :: OSI Approved :: Apache Software License",
            ],
            "Apache-2.0 OR MIT",
            False,
        ),
        (
            ["License: NVIDIA Proprietary Software", "Classifier: License :: Other/Proprietary License"],
            "NVIDIA Proprietary Software (proprietary)",
            True,
        ),
        (["Classifier: License :: OSI Approved :: BSD License"], "BSD License", False),
        ([], "unknown: its metadata names no license", False),
    ],
    ids=["expression", "license-field", "classifier-over-text", "two-classifiers", "nvidia-cu12", "ambiguous", "none"],
)
def test_license_of_core_metadata(lines, shown, proprietary):
    from packaging.metadata import parse_email

    raw, _ = parse_email("Metadata-Version: 2.4\nName: p\nVersion: 1\n" + "".join(f"{line}\n" for line in lines))
    found = license_of(raw)
    assert found.shown == shown and found.proprietary is proprietary


def test_policy_expressions():
    from lockgen.dossier.licenses import _evaluate

    assert _evaluate("MIT OR GPL-3.0-only", {"MIT"}, set())[0]
    assert not _evaluate("MIT AND GPL-3.0-only", {"MIT"}, set())[0]
    assert not _evaluate("GPL-3.0-only", set(), {"GPL-3.0-only"})[0]
    assert _evaluate("GPL-3.0-only OR MIT", set(), {"GPL-3.0-only"})[0]  # a choice avoids the denied one
    assert _evaluate("Apache-2.0 WITH LLVM-exception", {"Apache-2.0"}, set())[0]
    assert not _evaluate("Some Custom License", {"MIT"}, set())[0]


# ----------------------------------------------------------------------------- SBOM


def _validate(text: str) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    assert error is None, error


@pytest.fixture(scope="module")
def sboms(world, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sboms")
    run = cli(world, "sbom", "-o", str(folder))
    assert run.code == 0, run.err
    return folder


def test_an_sbom_per_cell_and_one_merged_validate_against_cyclonedx_1_6(sboms):
    names = sorted(p.name for p in sboms.iterdir())
    assert names == [f"{OLD}.cdx.json", f"{NEW}.cdx.json", "matrix.cdx.json"]
    for path in sboms.iterdir():
        text = path.read_text()
        _validate(text)
        data = json.loads(text)
        assert data["specVersion"] == "1.6" and "timestamp" not in data["metadata"]


def test_a_cell_sbom_has_purls_hashes_urls_licenses_properties_layers_and_the_graph(sboms):
    data = json.loads((sboms / f"{NEW}.cdx.json").read_text())
    meta = data["metadata"]["component"]
    assert (meta["name"], meta["version"]) == ("dossier-app", "1.2.0")
    props = {p["name"]: p["value"] for p in meta["properties"]}
    assert props == {"lockgen:cell": NEW, "lockgen:os": "linux", "lockgen:arch": "x86_64", "lockgen:backend": "cpu",
                     "lockgen:python": "3.12", "lockgen:target": "x86_64-manylinux_2_28"}  # fmt: skip
    by_name = {c["name"]: c for c in data["components"]}
    pillow = by_name["pillow"]
    assert pillow["purl"] == "pkg:pypi/pillow@10.0.0%2Bbuild1" and pillow["version"] == "10.0.0+build1"
    assert len(pillow["hashes"]) == 1 and pillow["hashes"][0]["alg"] == "SHA-256"
    assert pillow["externalReferences"][0]["url"].startswith(
        "https://files.pythonhosted.org/"
    )  # canonical, not the mirror
    assert by_name["jinja2"]["licenses"] == [{"license": {"id": "BSD-3-Clause"}}]
    assert by_name["numpy"]["licenses"] == [{"expression": "BSD-3-Clause AND 0BSD AND MIT"}]
    assert by_name["nvidia-cublas"]["licenses"] == [{"expression": "LicenseRef-NVIDIA-Proprietary"}]
    assert {"name": "lockgen:license:proprietary", "value": "true"} in by_name["nvidia-cublas"]["properties"]
    layer = by_name["optional-extra-lib"]
    assert layer["type"] == "application" and [c["name"] for c in layer["components"]] == ["extra-lib"]
    deps = {d["ref"]: set(d.get("dependsOn", [])) for d in data["dependencies"]}
    assert deps["pkg:pypi/jinja2@3.1.4"] == {"pkg:pypi/markupsafe@2.1.5"}  # markupsafe is locked "via jinja2"
    assert "pkg:pypi/markupsafe@2.1.5" not in deps[f"cell:{NEW}"]  # not a direct requirement
    assert {"pkg:pypi/jinja2@3.1.4", "layer:optional-extra-lib"} <= deps[f"cell:{NEW}"]


def test_the_merged_sbom_lists_each_package_version_once_with_its_cells(sboms):
    data = json.loads((sboms / "matrix.cdx.json").read_text())
    packages = [c for c in data["components"] if c["type"] == "library"]
    refs = [c["bom-ref"] for c in packages]
    assert len(refs) == len(set(refs))
    jinja = {
        c["version"]: {p["value"] for p in c["properties"] if p["name"] == "lockgen:cell"}
        for c in packages
        if c["name"] == "jinja2"
    }
    assert jinja == {"3.1.4": {NEW}, "3.1.6": {OLD}}
    cells = {c["name"]: c for c in data["components"] if c["type"] == "application"}
    assert set(cells) == set(dossier_world.CELLS)
    assert [c["name"] for c in cells[OLD]["components"]] == ["optional-extra-lib"]
    deps = {d["ref"]: set(d.get("dependsOn", [])) for d in data["dependencies"]}
    assert deps["matrix"] == {f"cell:{OLD}", f"cell:{NEW}"}


def test_sboms_are_byte_stable_and_serials_come_from_the_locks(world, sboms, tmp_path):
    again = cli(world, "sbom", "-o", str(tmp_path / "again"), "--offline")
    assert again.code == 0
    for path in sboms.iterdir():
        assert (tmp_path / "again" / path.name).read_bytes() == path.read_bytes()
    serial = json.loads((sboms / "matrix.cdx.json").read_text())["serialNumber"]
    assert uuid.UUID(serial.removeprefix("urn:uuid:")).version == 5
    given = str(uuid.UUID(int=7))
    run = cli(world, "sbom", "--serial-number", given, "--timestamp", "--offline")
    data = json.loads(run.out)
    assert data["serialNumber"] == f"urn:uuid:{given}" and "timestamp" in data["metadata"]


def test_purl_repository_url_for_an_index_source():
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    from lockgen.dossier.inventory import Locked
    from lockgen.dossier.sbom import purl_of
    from lockgen.locks.lock import Entry

    entry = Entry(name=canonicalize_name("torch"), version=Version("2.13.0+cu130"))
    item = Locked(cell="c", layer="main", lock="locks/c.txt", line=1, entry=entry, index_url="https://pypi.org/simple")

    class Source:
        kind, urls = "index", ("https://download.pytorch.org/whl/cu130",)

    class Plan:
        index_url = "https://pypi.org/simple"

        def served_by(self, name):
            return Source() if name == "torch" else None

    assert (
        purl_of(item, Plan()).to_string()
        == "pkg:pypi/torch@2.13.0%2Bcu130?repository_url=https://download.pytorch.org/whl/cu130"
    )
    assert purl_of(item, None).to_string() == "pkg:pypi/torch@2.13.0%2Bcu130"


def test_without_metadata_files_licenses_and_the_sbom_read_the_wheels_by_ranges(
    world, shared_fake_host, tmp_path_factory
):
    """An index that serves no PEP 658 metadata file (HTTP 404 for ``<wheel>.metadata``): the
    licenses and the SBOM come from each wheel's ``METADATA``, read through the one client, and
    are cached by sha256 like metadata files: the same answers as from metadata files."""
    pypi = shared_fake_host("bare")
    dossier_world.publish(pypi, metadata_files=False)
    bare = dossier_world.write(tmp_path_factory.mktemp("bare") / "p", pypi, POLICY)
    assert run_cli("all", "-C", str(bare.root), *bare.mirror_args()).code == 0
    assert not list(pypi.root.rglob("*.metadata"))

    def licenses(w) -> list[tuple[str, dict]]:
        rows = json.loads(cli(w, "licenses", "--format", "json").out)["merged"]
        return [(r["package"], r["license"]) for r in rows]

    found = licenses(bare)
    assert found == licenses(world) and not [p for p, lic in found if lic["missing"]]
    assert len(list((bare.root / ".lockgen" / "metadata").glob("*.metadata"))) == 7
    folder = tmp_path_factory.mktemp("bare-sbom")
    assert cli(bare, "sbom", "-o", str(folder), "--offline").code == 0
    components = json.loads((folder / f"{NEW}.cdx.json").read_text())["components"]
    assert {c["name"]: c.get("licenses") for c in components}["numpy"] == [
        {"expression": "BSD-3-Clause AND 0BSD AND MIT"}
    ]
