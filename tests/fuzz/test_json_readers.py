"""The fuzz tier for the JSON readers :mod:`tests.fuzz.test_parsers` does not cover: each takes
a real document, one subtree replaced by any JSON value (``_mutated``), and ends in a value, a
lenient "absent" or a *named* refusal, never a ``TypeError``, ``AttributeError`` or ``KeyError``
(docs/untrusted-input.md, "Lenient documents").

Documents: a bundle's ``bundle.json``, a journal record, ``locks/differences.json``, a PEP 740
provenance object, an OSV ``querybatch`` answer, the committed manifest's records (failures,
pylocks, coverage), a venv probe's report.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen import osv
from lockgen.install import venv
from lockgen.locks import journal, manifest, spread
from lockgen.locks.lockset import _Builder
from lockgen.plan.mirror import Mirrors
from lockgen.resolve.provenance import identities_of
from lockgen.rot import bundle
from lockgen.runtime.errors import LockgenError
from lockgen.wheels.cells import carried
from tests.fuzz.test_parsers import FUZZ, MANIFEST, _mutated

pytestmark = pytest.mark.fuzz

ROOT = Path(__file__).parents[2]
DIFFERENCES = json.loads((ROOT / "locks" / "differences.json").read_text(encoding="utf-8"))
#: Two cells of the committed manifest (one with a coverage record): subtrees to reach, not 12 cells of them.
CELLS = sorted(MANIFEST["cells"])[:2]
RECORDS = dict(MANIFEST, cells={name: MANIFEST["cells"][name] for name in CELLS})
BUNDLE = {"format": 1, "generator": "lockgen", "cells": CELLS,
          "files": {"0" * 64: {"path": "files/alpha-1.0-py3-none-any.whl", "cells": CELLS}}}  # fmt: skip
RECORD = {"state": "committed", "replace": [[".lockgen/journal/all.d/0.tmp", "locks/a.txt"],
          [".lockgen/journal/all.d/1.tmp", "/elsewhere/lockgen.toml", "lockgen.toml"]], "remove": ["locks/b.txt"]}  # fmt: skip
PROVENANCE = {"version": 1, "attestation_bundles": [{
    "publisher": {"kind": "GitHub", "repository": "pypa/sampleproject", "workflow": "release.yml", "claims": {"ref": "x"}},
    "attestations": [{"version": 1, "verification_material": {"certificate": "AA=="}, "envelope": {"statement": "AA=="}}],
}]}  # fmt: skip
ANSWER = {"results": [{"vulns": [{"id": "GHSA-h5c8-rqwp-cp95", "modified": "2026-10-01T12:00:00Z"}],
                       "next_page_token": "more"}, {}]}  # fmt: skip
PROBE = {"version": [3, 11, 4], "implementation": "cpython", "machine": "x86_64", "prefix": "/v",
         "base_prefix": "/usr", "distributions": [["alpha", "1.0", "/v/lib/alpha-1.0.dist-info"]]}  # fmt: skip
KEYS = [(canonicalize_name("jinja2"), Version("3.1.4")), (canonicalize_name("alpha"), Version("1.0"))]


@FUZZ
@given(st.data())
def test_a_bundle_json_of_any_shape_is_a_bundle_or_not(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("bundle")
    (folder / bundle.BUNDLE_FILE).write_text(json.dumps(_mutated(data, BUNDLE)))
    assert bundle.is_bundle(folder) in (True, False)


@FUZZ
@given(st.data())
def test_a_journal_record_of_any_shape_is_read_or_refused_by_name(data):
    with contextlib.suppress(ValueError, TypeError):  # journal._record's named refusals: the record is not replayed
        state, staged, gone = journal._record(_mutated(data, RECORD))
        assert state in ("prepared", "committed")
        assert all(isinstance(p, str) for entry in staged for p in entry) and all(isinstance(p, str) for p in gone)


@FUZZ
@given(st.data())
def test_differences_json_of_any_shape_is_read_or_refused_by_name(data):
    with contextlib.suppress(LockgenError):
        for difference in spread.loads(json.dumps(_mutated(data, DIFFERENCES)), "locks/differences.json"):
            difference.sentence()


@FUZZ
@given(st.data())
def test_a_provenance_object_of_any_shape_gives_its_publishers_or_none(data):
    value = _mutated(data, PROVENANCE)
    if isinstance(value, dict):
        for identity in identities_of(value):
            identity.describe()


@FUZZ
@given(st.data())
def test_an_osv_querybatch_answer_of_any_shape_gives_ids_or_fails_the_audit(data):
    answer = _mutated(data, ANSWER)
    api = osv.Api("https://osv.example", Mirrors())
    pages = iter([answer])
    api._call = lambda client, method, path, body: next(pages, {"results": [{}, {}]})  # type: ignore[method-assign]
    with contextlib.suppress(osv.AuditFailed):
        found = api._query(None, KEYS)
        assert all(isinstance(i, str) for ids in found.values() for i in ids)


@FUZZ
@given(st.data())
def test_the_committed_manifest_s_records_read_leniently(data):
    text = json.dumps(_mutated(data, RECORDS))
    with contextlib.suppress(LockgenError):  # JSON beyond the bounds (a 19-digit number) is named
        manifest.failures(text)
        manifest.recorded_pylocks(text)
        for record in manifest.recorded_coverage(text).values():
            manifest.coverage_incomplete(record)
            carried(record, [])
    _Builder(locks="locks", read=lambda rel: text.encode(), show=lambda rel: f"locks/{rel}").statuses()


@FUZZ
@given(st.data())
def test_a_probe_report_of_any_shape_is_an_interpreter_or_refused_by_name(data):
    value = _mutated(data, PROBE)
    if isinstance(value, dict) and venv._report_problem(value) is None:
        venv._interpreter("/usr/bin/python3", value)
        venv.by_name([(name, version, path) for name, version, path in value["distributions"]])
