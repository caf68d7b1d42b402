"""docs/manifest.schema.json is the contract of docs/manifest.md: it is a valid 2020-12 schema, the
repository's manifest follows it, every manifest a test writes is checked against it (conftest's
``_manifests_follow_the_schema``), and it rejects what an installer could not use."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest

from lockgen.locks import manifest
from tests.conftest import SCHEMA, schema_problems

REPO = Path(__file__).parents[2]


def test_the_schema_is_a_2020_12_schema():
    schema = json.loads(SCHEMA.read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_repository_manifest_follows_the_schema():
    data = json.loads((REPO / "locks" / "manifest.json").read_text())
    assert schema_problems(data) == []
    assert data["format"] == manifest.MANIFEST_FORMAT


def test_every_written_manifest_is_validated():
    """The session hook wraps the one function every manifest is written through."""
    assert getattr(manifest.dumps, "__wrapped__", None) is not None


def _cell(data: dict) -> dict:
    return data["cells"]["linux-x86_64-cu130-py3.12"]


def _drop_layers(data: dict) -> None:
    del _cell(data)["layers"]


def _bad_sha(data: dict) -> None:
    _cell(data)["layers"][0]["sha256"] = "ABC"


def _absolute_lock(data: dict) -> None:
    _cell(data)["lock"] = "/home/me/locks/x.txt"


def _optional_first(data: dict) -> None:
    _cell(data)["layers"][0]["kind"] = "optional"


def _unhashed_requires_hashes(data: dict) -> None:
    layer = dict(_cell(data)["layers"][0], kind="unhashed", name="unhashed", sync=False, no_deps=True)
    _cell(data)["layers"].append(layer)


def _unknown_key(data: dict) -> None:
    _cell(data)["installer_hint"] = "x"


def _format_5(data: dict) -> None:
    data["format"] = 5


def _coverage_of_the_main_layer_as_a_layer(data: dict) -> None:
    coverage = _cell(data)["coverage"]
    coverage["layers"] = [{"name": "main", "kind": "main", "sha256": "0" * 64, "wheels": [], "unread": []}]


def _coverage_without_runtime_groups(data: dict) -> None:
    del _cell(data)["coverage"]["wheels"][0]["linked"]


def _python_patch(data: dict) -> None:
    _cell(data)["requires"]["python"] = "3.12.1"


def _skipped_without_reason(data: dict) -> None:
    data["cells"]["x"] = {
        **{k: _cell(data)[k] for k in ("os", "arch", "backend", "python", "target", "requires")},
        "status": "skipped",
    }


def _alias_without_target(data: dict) -> None:
    _cell(data)["status"] = "alias"


def _refuse_alone(data: dict) -> None:
    data["detect"]["nvidia"] = [{"backend": "cu126", "min-cuda": "12.6", "refuse": "no"}]


def _pip_sync(data: dict) -> None:
    _cell(data)["layers"][0]["commands"]["pip"][1] = "sync"


BROKEN = [_drop_layers, _bad_sha, _absolute_lock, _optional_first, _unhashed_requires_hashes, _unknown_key, _format_5,
          _coverage_of_the_main_layer_as_a_layer, _coverage_without_runtime_groups,
          _python_patch, _skipped_without_reason, _alias_without_target, _refuse_alone, _pip_sync]  # fmt: skip


@pytest.mark.parametrize("breaks", BROKEN, ids=[f.__name__.strip("_") for f in BROKEN])
def test_the_schema_rejects_what_an_installer_cannot_use(breaks):
    data = json.loads((REPO / "locks" / "manifest.json").read_text())
    data["cells"]["linux-x86_64-cu130-py3.12"] = copy.deepcopy(data["cells"]["linux-x86_64-cu130-py3.12"])
    breaks(data)
    assert schema_problems(data)


def test_the_documentation_names_every_field_of_the_schema():
    """docs/manifest.md describes each key the schema allows (a new field needs its row)."""
    schema = json.loads(SCHEMA.read_text())
    text = (REPO / "docs" / "manifest.md").read_text()
    keys = (
        set(schema["properties"])
        | set(schema["$defs"]["cell"]["properties"])
        | set(schema["$defs"]["layer"]["properties"])
    )
    for nested in ("target", "requires"):
        keys |= set(schema["$defs"]["cell"]["properties"][nested]["properties"])
    missing = sorted(
        key for key in keys if not re.search(rf"`[^`\n]*(?<![\w-]){re.escape(key)}(?![\w-])[^`\n]*`", text)
    )
    assert missing == []


@pytest.mark.parametrize(
    ("kind", "uv", "pip"),
    [
        ("main", "uv pip sync --require-hashes SOURCES L", "pip install --require-hashes SOURCES -r L"),
        ("optional", "uv pip install --require-hashes SOURCES -r L", "pip install --require-hashes SOURCES -r L"),
        (
            "no-deps",
            "uv pip install --require-hashes --no-deps SOURCES -r L",
            "pip install --require-hashes --no-deps SOURCES -r L",
        ),
        ("unhashed", "uv pip install --no-deps SOURCES -r L", "pip install --no-deps SOURCES -r L"),
    ],
    ids=["main", "optional", "no-deps", "unhashed"],
)
def test_the_recorded_commands_are_the_documented_ones(kind, uv, pip):
    """docs/manifest.md's table of commands, SOURCES = --index-url, then each --find-links."""
    from lockgen.locks.lock import Header, LayerKind

    header = Header(cell="c", kind=LayerKind(kind), path="L", target="t", uv="0", input_hash="h",
                    index_url="https://i/simple", find_links=("https://f/", "wheels"))  # fmt: skip
    sources = "--index-url https://i/simple --find-links https://f/ --find-links wheels"
    commands = header.install_commands()
    assert " ".join(commands["uv"]) == uv.replace("SOURCES", sources)
    assert " ".join(commands["pip"]) == pip.replace("SOURCES", sources)
    assert (
        f"| {kind} | `{uv.replace('L', '<lock>')}` | `{pip.replace('L', '<lock>')}` |"
        in (REPO / "docs" / "manifest.md").read_text()
    )


def test_an_alias_installs_its_cells_lock_with_its_own_interpreter(tmp_path):
    """The seed's Windows-on-ARM cells: the x64 lock, its target, an x86_64 interpreter."""
    from lockgen.locks.lock import Header, LayerKind, Lock

    lock = "locks/windows-x86_64-cu130-py3.12.txt"
    header = Header(cell="windows-x86_64-cu130-py3.12", kind=LayerKind.MAIN, path=lock, target="t", uv="0.13.9",
                    input_hash="sha256:" + "0" * 64, index_url="https://pypi.org/simple")  # fmt: skip
    (tmp_path / "locks").mkdir()
    (tmp_path / lock).write_text(Lock(header=header).render())
    x64 = {"platform": "x86_64-pc-windows-msvc", "python": "3.12"}
    rows = [
        manifest.Row(name="windows-aarch64-cu130-py3.12", os="windows", arch="aarch64", backend="cu130", python="3.12",
                     lock="locks/windows-aarch64-cu130-py3.12.txt", alias="windows-x86_64-cu130-py3.12",
                     target={"platform": "aarch64-pc-windows-msvc", "python": "3.12"},
                     requires={"python": "3.12", "interpreter": "x86_64"}),
        manifest.Row(name="windows-x86_64-cu130-py3.12", os="windows", arch="x86_64", backend="cu130", python="3.12",
                     lock=lock, target=x64, requires={"python": "3.12", "interpreter": "x86_64"}),
    ]  # fmt: skip
    data = manifest.build(tmp_path, rows)
    alias = data["cells"]["windows-aarch64-cu130-py3.12"]
    assert (alias["status"], alias["alias_of"], alias["lock"]) == ("alias", "windows-x86_64-cu130-py3.12", lock)
    assert alias["target"] == x64
    assert alias["requires"] == {"python": "3.12", "interpreter": "x86_64"}
    assert (alias["os"], alias["arch"]) == ("windows", "aarch64")  # what a selector matches the machine against
    assert schema_problems(data) == []
