"""JSON documents lockgen did not write, each with a value of an unexpected *type* where a
reader looks (``"vulns": true``, ``"cells": 5``, a manifest that is an array), by mechanism
(docs/untrusted-input.md, "Lenient documents"): a document read leniently (a committed
manifest's records, an API answer's optional keys, lockgen's caches in ``.lockgen/``) reads
the value as absent; one that is validated (the selector's manifest, an OSV answer an audit
relies on, a venv's probe report) is refused by name. Never a ``TypeError``,
``AttributeError`` or ``KeyError``, never a traceback.

Each reader is called in-process, as the command that uses it does; the CLI rows run the
command itself (``matrix`` settling a journal record, ``python -m lockgen.select``).
"""

from __future__ import annotations

import copy
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen import osv
from lockgen.install import venv
from lockgen.locks import manifest, spread, stamp
from lockgen.locks.lockset import _Builder
from lockgen.plan import content
from lockgen.plan.mirror import Mirrors
from lockgen.resolve import fetch, hashcheck
from lockgen.resolve.provenance import Provenance
from lockgen.runtime.errors import InstallRefused, LockFormatError
from lockgen.wheels import remote
from lockgen.wheels.cells import carried
from tests.conftest import one_cell, run_cli
from tests.support import select_samples

ROOT = Path(__file__).parents[2]
MANIFEST = json.loads((ROOT / "locks" / "manifest.json").read_text(encoding="utf-8"))
CELL = sorted(MANIFEST["cells"])[0]  # a GPU cell with a coverage record
#: The values put where a reader expects another type.
SHAPES = [5, "x", True, None, [1], {"a": 1}]


def _with(document: Any, path: tuple[str | int, ...], value: Any) -> Any:
    """``document`` with the value at ``path`` replaced by ``value`` (the root for ``()``)."""
    if not path:
        return copy.deepcopy(value)
    changed = copy.deepcopy(document)
    node = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = copy.deepcopy(value)
    return changed


# ---------------------------------------------------------------- a committed manifest's records

RECORDS = [(), ("cells",), ("cells", CELL), ("cells", CELL, "status"), ("cells", CELL, "reason"),
           ("cells", CELL, "pylock"), ("cells", CELL, "pylock", "sha256"), ("cells", CELL, "coverage"),
           ("cells", CELL, "coverage", "wheels"), ("cells", CELL, "coverage", "wheels", 0),
           ("cells", CELL, "coverage", "wheels", 0, "linked"), ("cells", CELL, "coverage", "wheels", 0, "linked", 0),
           ("cells", CELL, "coverage", "wheels", 0, "sass"), ("cells", CELL, "coverage", "unread"),
           ("cells", CELL, "coverage", "layers"), ("cells", CELL, "coverage", "runtimes")]  # fmt: skip


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: ".".join(map(str, p)) or "root")
def test_a_committed_manifest_of_any_type_reads_its_records_leniently(path):
    """``check``, the no-op path, ``all`` and ``merge`` read the cells' failures, pylocks and
    coverage records of the committed manifest: a value of another type is no record (the run
    writes the manifest again), and a coverage record reaches the runs only in the selector's
    shape."""
    for value in SHAPES:
        text = json.dumps(_with(MANIFEST, path, value))
        failed = manifest.failures(text)
        assert all(isinstance(r, str) for r in failed.values())
        pylocks = manifest.recorded_pylocks(text)
        assert all(isinstance(p, str) for p in pylocks.values())
        manifest.recorded_pylock_sha(text, CELL)
        for record in manifest.recorded_coverage(text).values():
            manifest.coverage_current(record)
            manifest.coverage_incomplete(record)
            carried(record, [])
        statuses = _Builder(locks="locks", read=lambda rel, t=text: t.encode(), show=lambda rel: f"locks/{rel}")
        statuses.statuses()


@pytest.mark.parametrize(("data", "said"), [([1], "must be an object, not list"),
                                            ({"cells": 5}, "cells: must be an object, not int")])  # fmt: skip
def test_a_manifest_that_is_no_object_is_named_where_statuses_are_read(data, said):
    builder = _Builder(locks="locks", read=lambda rel: json.dumps(data).encode(), show=lambda rel: f"locks/{rel}")
    assert builder.statuses() == {}
    assert [p.message for p in builder.problems] == [
        f"locks/manifest.json: not a manifest lockgen can read ({said}); restore it (git checkout) or run lockgen all "
        "to write it again"
    ]


def test_a_coverage_record_the_selector_refuses_is_no_record():
    wheel = MANIFEST["cells"][CELL]["coverage"]["wheels"][0]
    for broken in ({**wheel, "sha256": 5}, {**wheel, "linked": [{"needs": True}]}, {**wheel, "sass": [1]}):
        text = json.dumps(_with(MANIFEST, ("cells", CELL, "coverage", "wheels", 0), broken))
        assert CELL not in manifest.recorded_coverage(text)
    assert CELL in manifest.recorded_coverage(json.dumps(MANIFEST))


# ---------------------------------------------------------------- the OSV API's querybatch answer

KEY = (canonicalize_name("jinja2"), Version("3.1.4"))


def _query(answer: Any) -> dict[Any, set[str]]:
    api = osv.Api("https://osv.example", Mirrors())
    api._call = lambda client, method, path, body: answer  # type: ignore[method-assign]
    return api._query(None, [KEY])


@pytest.mark.parametrize(
    ("result", "named"),
    [({"vulns": True}, "results[0].vulns: must be an array, not bool"),
     ({"vulns": {"id": "GHSA-x"}}, "results[0].vulns: must be an array, not dict"),
     ({"vulns": [5]}, "results[0].vulns[0]: no advisory id"), ({"vulns": [{"id": 7}]}, "results[0].vulns[0]: no advisory id"),
     (5, "results[0]: must be an object, not int"), ([1], "results[0]: must be an object, not list")],
)  # fmt: skip
def test_a_querybatch_answer_of_another_type_fails_the_audit_by_name(result, named):
    """An audit never reads a broken answer as a clean one (the module's rule for the API)."""
    with pytest.raises(
        osv.AuditFailed,
        match=re.escape(f"https://osv.example/v1/querybatch: {named}; not an OSV answer, the audit did not complete"),
    ):
        _query({"results": [result]})


@pytest.mark.parametrize("result", [{}, {"vulns": None}, {"vulns": []}, {"next_page_token": 5}])
def test_a_querybatch_result_without_advisories_is_none(result):
    assert _query({"results": [result]}) == {KEY: set()}


# ---------------------------------------------------------------- lockgen's caches in .lockgen/


def _cache(root: Path, rel: str, data: Any) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(json.dumps(data) if not isinstance(data, str) else data)


@pytest.mark.parametrize("value", [*SHAPES, [[1, 2], "a"], "Infinity", {"url": [[1e400], "a" * 64]}], ids=repr)
def test_a_cache_of_another_shape_is_no_cache(tmp_path, value):
    """Anyone may change ``.lockgen/``: a cache of another shape costs time, never a crash nor
    a wrong value (``{"url": 5}`` is not the sha256 ``"5"``)."""
    for rel in (fetch._CACHE, hashcheck._CACHE, content.CACHE, stamp.STAMP):
        _cache(tmp_path, rel, value)
        _cache(tmp_path, rel + ".x", {"url": value})
    assert all(isinstance(v, str) for v in fetch._read(tmp_path / fetch._CACHE).values())
    assert all(isinstance(v, str) for v in hashcheck.Verified(root=tmp_path)._known.values())
    content.Digests(tmp_path)
    assert stamp.read(tmp_path, "pyproject.toml") is None
    for rel in (fetch._CACHE, hashcheck._CACHE):
        (tmp_path / rel).write_text(json.dumps({"https://x/a.whl": value}))
    assert fetch._read(tmp_path / fetch._CACHE) == ({"https://x/a.whl": value} if isinstance(value, str) else {})
    sha = "0" * 64
    _cache(tmp_path, f"cov/{sha}.json", {"reader": remote.READER, "sha256": sha, "sass": ["sm_80"], "linked": value})
    assert remote.cached(tmp_path / "cov", sha) is None
    provenance = Provenance(tmp_path, Mirrors())
    _cache(provenance.folder, f"{sha}.json", {"identities": value})
    assert provenance._cached(sha) == (None if not isinstance(value, list) else ())


def test_a_stamp_of_another_shape_is_no_memo(tmp_path):
    good = {"key": "k", "templates": "templates", "locks": "locks", "cells": [], "detect": None}
    for path, value in [(("cells",), [5]), (("cells",), [{"name": 5}]), (("files",), [1]), (("folders",), "x"),
                        (("templates",), 5), (("detect",), [1])]:  # fmt: skip
        _cache(tmp_path, stamp.STAMP, _with(good, path, value))
        assert stamp.read(tmp_path, "pyproject.toml") is None


# ---------------------------------------------------------------- what a venv's python printed

PROBE = {"version": [3, 11, 4], "implementation": "cpython", "machine": "x86_64", "prefix": "/v",
         "base_prefix": "/usr", "distributions": [["alpha", "1.0", "/v/lib/alpha-1.0.dist-info"]]}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [(("version",), "3.11", "version"), (("version",), [3, "x", 1], "version"), (("version",), [3], "version"),
     (("implementation",), None, "implementation"), (("machine",), 5, "machine"),
     (("distributions",), True, "distributions"), (("distributions", 0), ["alpha"], "distributions"),
     (("distributions", 0, 1), 1.0, "distributions")],
)  # fmt: skip
def test_a_probe_report_of_another_shape_is_refused_by_name(tmp_path, monkeypatch, path, value, named):
    printed = json.dumps(_with(PROBE, path, value))
    monkeypatch.setattr(venv, "run", lambda *args, **kwargs: venv.Done(0, printed))
    with pytest.raises(InstallRefused, match=rf"printed a report lockgen's probe does not write \({named}: "):
        venv.probe_python("/usr/bin/python3", tmp_path)


def test_a_deep_probe_report_is_no_report(tmp_path, monkeypatch):
    monkeypatch.setattr(venv, "run", lambda *args, **kwargs: venv.Done(0, "[" * 100_000))
    with pytest.raises(InstallRefused, match="does not run"):
        venv.probe_python("/usr/bin/python3", tmp_path)


# ---------------------------------------------------------------- commands

RECORD = {"state": "committed", "replace": [[".lockgen/journal/all.d/0.tmp", "locks/a.txt"]], "remove": []}


@pytest.mark.parametrize(
    "path", [(), ("replace",), ("replace", 0), ("replace", 0, 0), ("remove",), ("state",)], ids=lambda p: ".".join(map(str, p)) or "root"
)  # fmt: skip
def test_a_journal_record_of_any_type_is_not_replayed_by_the_next_command(tmp_path, caplog, path):
    """Every command settles the journal first (``matrix`` here): a record of another type is
    warned about and removed; nothing is renamed."""
    root = one_cell(tmp_path / "p", "https://pypi.example/simple", "alpha\n")
    (root / "locks").mkdir()
    for value in SHAPES:
        (root / ".lockgen/journal/all.d").mkdir(parents=True, exist_ok=True)
        (root / ".lockgen/journal/all.d/0.tmp").write_text("planted\n")
        (root / ".lockgen/journal/all.json").write_text(json.dumps(_with(RECORD, path, value)))
        with caplog.at_level(logging.WARNING):
            run = run_cli("matrix", "-C", str(root))
        assert run.code == 0 and "Traceback" not in run.err, run.err
        assert not (root / ".lockgen/journal/all.json").exists()
        assert not (root / "locks/a.txt").exists(), value


@pytest.mark.parametrize(
    ("path", "value"),
    [((), [1]), (("cells",), 5), (("cells", "linux-x86_64-cu130-py3.12"), True),
     (("cells", "linux-x86_64-cu130-py3.12", "axes"), [1]), (("cells", "linux-x86_64-cu130-py3.12", "layers"), {"a": 1}),
     (("cells", "linux-x86_64-cu130-py3.12", "requires"), "x"), (("cells", "linux-x86_64-cu130-py3.12", "coverage"), 5),
     (("detect",), [1]), (("detect", "nvidia"), True)],
)  # fmt: skip
def test_the_selector_refuses_a_manifest_of_another_type_by_name(tmp_path, path, value):
    """``python -m lockgen.select`` (the vendored ``cellselect.py``): its own validator checks
    each type before a cell is chosen; exit 2 naming the key, never a traceback."""
    target = tmp_path / "manifest.json"
    target.write_text(json.dumps(_with(select_samples.manifest(), path, value)))
    named = [] if path[:1] == ("detect",) else ["--cell", "linux-x86_64-cu130-py3.12"]
    code, out, err = select_samples.cli("--manifest", str(target), "--os", "linux", "--arch", "x86_64", *named)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and err.startswith("error"), err


@pytest.mark.parametrize("text", ["[" * 100_000, '{"format": 1e999}', '{"format": 1, "packages": {"a": 1}}'])
def test_differences_json_beyond_the_bounds_is_named(text):
    """``merge`` and ``diff`` read a shard's or a revision's ``differences.json``: bounded
    (:func:`lockgen.locks.jsonfile.load_json`), never a ``RecursionError``."""
    with pytest.raises(LockFormatError, match=r"^locks/differences\.json: .*run `lockgen all` to write it again"):
        spread.loads(text, "locks/differences.json")
