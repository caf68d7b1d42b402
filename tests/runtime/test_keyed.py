"""The one keyed validator: the config's and the manifest's problems are its records, with key paths
written alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockgen.config.validate import Validator
from lockgen.locks import manifestfile
from lockgen.runtime.errors import ConfigError, InputError
from lockgen.runtime.keyed import Checks, key_text

REPO = Path(__file__).resolve().parents[2]
CELL = "linux-x86_64-cu130-py3.12"


def test_key_text_writes_indexes_and_keeps_dotted_names_whole():
    assert key_text("tool.lockgen", "rules", 2, "use") == "tool.lockgen.rules[2].use"
    assert key_text("", "cells", CELL, "layers", 0, "sha256") == f"cells.{CELL}.layers[0].sha256"


def test_manifest_problems_name_the_key_path():
    data = json.loads((REPO / "locks" / "manifest.json").read_text())
    data["cells"][CELL]["layers"][0]["sha256"] = "not-hex"
    with pytest.raises(InputError) as info:
        manifestfile.parse(data, "locks/manifest.json", "locks")
    keys = [p.key for p in info.value.problems]
    assert f"cells.{CELL}.layers[0].sha256" in keys
    assert all(p.file == "locks/manifest.json" for p in info.value.problems)


def test_config_and_manifest_read_through_the_same_validator():
    assert issubclass(manifestfile._Reader, Checks) and issubclass(Validator, Checks)
    checks = Validator("pyproject.toml", "tool.lockgen")
    checks.unknown({"pinz": {}}, {"pins", "rules"}, ())
    with pytest.raises(ConfigError) as info:
        raise ConfigError(checks.source, checks.problems)
    assert info.value.messages == ["tool.lockgen.pinz: unknown key; did you mean 'pins'?"]


def test_shown_caps_the_list_and_says_how_many_more():
    checks = Checks("f.json")
    for i in range(5):
        checks.problem(("a", i), "bad")
    shown = checks.shown(3)
    assert [p.key for p in shown[:3]] == ["a[0]", "a[1]", "a[2]"]
    assert shown[3].message == "… and 2 more problems" and shown[3].key is None
