"""The fuzz tier (``pytest -m fuzz``; CI runs it): every parser of untrusted input, fed
generated and mutated input, ends in a value or a *named* refusal (lockgen's error root, the
selector's, an OSV ``BadRecord``), never another exception: no ``RecursionError``, ``KeyError``,
``TypeError`` or ``AttributeError`` reaches a user.

Inputs start from real documents (the committed ``locks/manifest.json`` and locks, OSV's record
layout, PEP 691 pages, real projects' requirement files) and replace one subtree or line with
anything, so the examples go past the first shape check. Each test is bounded by
``max_examples`` and a per-example ``deadline``; the whole tier takes well under a minute.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgen import cellselect as select
from lockgen import osv
from lockgen.index import pages as simplepages
from lockgen.locks import lock as lockmodel
from lockgen.locks import manifestfile
from lockgen.locks.jsonfile import load_json
from lockgen.plan import reqfile
from lockgen.runtime.errors import LockgenError
from lockgen.scaffold.reading import read_requirements, requirement_line
from tests.support.fakeosv import record

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).parents[2]
MANIFEST = json.loads((ROOT / "locks" / "manifest.json").read_text(encoding="utf-8"))
LOCK = next(iter(sorted((ROOT / "locks").glob("*.txt")))).read_text(encoding="utf-8")
REQUIREMENTS = [p.read_text(encoding="utf-8", errors="replace") for p in sorted((ROOT / "tests" / "data" / "realworld").rglob("requirements*.txt"))][:8]  # fmt: skip
OSV = record(
    "GHSA-h5c8-rqwp-cp95", "Jinja2", ["3.1.4"], fixed="3.1.5", cvss="CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:U/C:L/I:L/A:N"
)
PAGE = {"meta": {"api-version": "1.1"}, "name": "alpha", "files": [
    {"filename": "alpha-1.0-py3-none-any.whl", "url": "alpha-1.0-py3-none-any.whl", "hashes": {"sha256": "0" * 64},
     "requires-python": ">=3.8", "upload-time": "2026-01-01T00:00:00Z", "yanked": False}]}  # fmt: skip

#: CI's run is derandomized: the same examples every run, so a red CI is a defect found, not a
#: draw (hypothesis's ``derandomize``). ``LOCKGEN_FUZZ_EXAMPLES=5000`` explores: random draws,
#: that many per test; a failure it finds is fixed and then kept as an ``@example``.
EXPLORE = int(os.environ.get("LOCKGEN_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXPLORE or 150,
    deadline=2000,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    derandomize=not EXPLORE,
)

#: Any JSON value, a few levels deep (the bounded reader refuses deeper ones before any parser).
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
TEXT = st.text(st.characters(codec="utf-8"), max_size=200)


def _mutated(data: st.DataObject, document: Any) -> Any:
    """``document`` with one subtree (at a random depth) replaced by any JSON value."""
    value = copy.deepcopy(document)
    parent: Any = None
    key: Any = None
    node = value
    for _ in range(data.draw(st.integers(0, 8))):
        if isinstance(node, dict) and node:
            parent, key = node, data.draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            parent, key = node, data.draw(st.integers(0, len(node) - 1))
        else:
            break
        node = parent[key]
    replacement = data.draw(JSON_VALUES)
    if parent is None:
        return replacement
    parent[key] = replacement
    return value


def _lines_mutated(data: st.DataObject, text: str) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, max(len(lines) - 1, 0)))
        lines[at:at + data.draw(st.integers(0, 1))] = [data.draw(TEXT) + "\n"]  # fmt: skip
    return "".join(lines)


# ---------------------------------------------------------------------------- JSON from elsewhere


@FUZZ
@given(st.binary(max_size=300) | TEXT.map(str.encode))
def test_bounded_json_names_what_it_refuses(data):
    with contextlib.suppress(LockgenError):
        load_json(data, "x.json")


@FUZZ
@given(st.integers(1, 5000), st.sampled_from(["[", '{"a":', '[{"b":[']))
def test_deep_json_is_refused_by_name_at_any_depth(depth, opener):
    text = opener * depth
    with pytest.raises(LockgenError):
        load_json(text, "x.json")


@FUZZ
@given(st.data())
def test_the_manifest_parser_refuses_any_mutation_by_name(data):
    value = _mutated(data, MANIFEST)
    with contextlib.suppress(LockgenError):
        manifestfile.parse(value, "locks/manifest.json", "locks")


@FUZZ
@given(st.data())
def test_a_shard_manifest_is_parsed_by_name_or_refused(data):
    shard = dict(MANIFEST, shard=data.draw(st.sampled_from([{"index": 1, "total": 2}, "1/2", None, [1, 2]])))
    with contextlib.suppress(LockgenError):
        manifestfile.load(json.dumps(_mutated(data, shard)).encode(), "shard/manifest.json", "locks")


@FUZZ
@given(st.data())
def test_the_selector_reads_any_manifest_by_name(data):
    value = _mutated(data, MANIFEST)
    if not isinstance(value, dict):  # load_manifest refuses it first ("expected an object")
        return
    facts = select.Facts(os="linux", arch="x86_64", interpreter="x86_64")
    with contextlib.suppress(select.SelectError):
        select.select_cell(facts, value, "3.12", allow_cpu=True)


@FUZZ
@given(TEXT)
def test_the_selector_s_bounded_json_names_what_it_refuses(text):
    with contextlib.suppress(select.SelectError):
        select.loads_bounded(text, "manifest.json")


# ---------------------------------------------------------------------------- OSV records and pages


@FUZZ
@given(st.data())
def test_an_osv_record_of_any_shape_is_an_advisory_or_a_named_bad_record(data):
    value = _mutated(data, OSV)
    try:
        advisory = osv.parse(value)
    except osv.BadRecord:
        return
    for affected in advisory.affected:  # what the audit does with a record it kept
        affected.affects(osv.Version("3.1.4"))
        affected.fixed_after(osv.Version("3.1.4"))
    advisory.level()


@FUZZ
@given(st.data(), st.sampled_from(["application/vnd.pypi.simple.v1+json", "text/html"]))
def test_an_index_page_of_any_shape_lists_files_or_none(data, content_type):
    if "json" in content_type:
        text = json.dumps(_mutated(data, PAGE))
    else:
        text = data.draw(TEXT) + '<a href="alpha-1.0-py3-none-any.whl#sha256=' + "0" * 64 + '">x</a>'
    simplepages.parse(text, content_type, "https://pypi.example/simple/alpha/")


def test_a_deep_index_page_lists_no_files():
    assert simplepages.parse("[" * 100_000, "application/vnd.pypi.simple.v1+json", "https://x/") == ((), None)


# ---------------------------------------------------------------------------- lock text, requirement lines


@FUZZ
@given(st.data())
def test_lock_text_of_any_shape_is_a_lock_or_a_named_refusal(data):
    text = _lines_mutated(data, LOCK)
    with contextlib.suppress(LockgenError):
        lockmodel.Lock.parse(text, "locks/x.txt")


@FUZZ
@given(st.binary(max_size=400))
def test_lock_bytes_are_decoded_or_named(data):
    with contextlib.suppress(LockgenError):
        lockmodel.decode(data, "locks/x.txt")


@FUZZ
@given(st.data())
def test_a_requirement_file_of_any_shape_reads_or_is_refused_by_name(data):
    base = data.draw(st.sampled_from(REQUIREMENTS or ["torch==2.9.0\n-r base.txt\n"]))
    text = _lines_mutated(data, base)
    reqfile.refused(text)
    files = {"requirements.txt": text, "base.txt": data.draw(TEXT)}

    def read(rel: str) -> str:
        if rel not in files:
            raise FileNotFoundError(2, "No such file or directory")
        return files[rel]

    with contextlib.suppress(LockgenError):
        read_requirements("requirements.txt", read)


@FUZZ
@given(TEXT)
def test_one_requirement_line_reads_or_is_refused_by_name(text):
    with contextlib.suppress(LockgenError):
        requirement_line(text, "requirements.txt:1")
    reqfile.malformed(text)


@pytest.mark.parametrize("files", [True, 5, "alpha-1.0.tar.gz", {"url": "x"}, None])
def test_a_page_whose_files_is_no_array_lists_none(files):
    text = json.dumps({"meta": {"api-version": "1.1"}, "name": "alpha", "files": files})
    assert simplepages.parse(text, "application/vnd.pypi.simple.v1+json", "https://x/alpha/") == ((), "1.1")
