"""TOML of an unexpected *type*, through every reader of TOML lockgen did not write: never a traceback.

A document lockgen validates (the config, the ``pyproject.toml`` ``lockgen init`` starts from)
names the file, the key path and what to do, exit 2. A foreign document read leniently (a local
project's ``[tool.uv]`` tables, the files its metadata comes from) reads a value of the wrong type
as absent (:func:`lockgen.runtime.keyed.dig`). A ``pylock.toml`` of the wrong shape is a
:class:`~lockgen.runtime.errors.LockFormatError` naming it. The fuzz tier
(``tests/fuzz/test_toml_readers.py``) feeds the same readers generated shapes.
"""

from __future__ import annotations

import pytest
import tomlkit

from lockgen.locks import pylockfile
from lockgen.plan import uvtables
from lockgen.plan.plan import project_files
from lockgen.runtime.errors import LockFormatError
from tests.conftest import run_cli

HOSTILE = [5, "x", True, [1], {"a": 1}]

CONFIG = """\
[tool.lockgen]
exclude-newer = "2026-11-25T00:00:00Z"
pins = { torch = "2.13.0" }
use = ["pytorch"]

[tool.lockgen.sources.pytorch]
index = "https://download.pytorch.org/whl/{flavor}"
packages = ["torch"]

[tool.lockgen.matrix]
os = ["linux", "windows"]
arch = ["x86_64"]
backend = ["cpu"]
python = ["3.12"]
exclude = [{ os = "windows" }]

[[tool.lockgen.rules]]
match = { backend = "cpu" }
vars = { cuda = false }
"""

#: Key paths below [tool.lockgen] whose value each test sets to each of HOSTILE.
CONFIG_KEYS = [
    ("matrix",), ("matrix", "os"), ("matrix", "exclude"), ("matrix", "exclude", 0), ("rules",), ("rules", 0),
    ("rules", 0, "match"), ("rules", 0, "vars"), ("sources",), ("sources", "pytorch"), ("sources", "pytorch", "packages"),
    ("pins",), ("pins", "torch"), ("use",), ("exclude-newer",), ("detect",), ("backends",), ("coverage",),
    ("audit",), ("licenses",), ("mirrors",), ("harmonize-package",), ("project",), ("templates",),
]  # fmt: skip


def _set(document: dict, path: tuple, value: object) -> None:
    node = document
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


def _no_traceback(run) -> None:
    assert "Traceback" not in run.out + run.err


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_a_config_value_of_any_type_is_named_by_its_key_path(tmp_path, value):
    """Every key at every level with each type: a ConfigError with the key path, exit 2."""
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "requirements.in.j2").write_text("numpy\n")
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    assert run_cli("matrix", "-C", str(tmp_path)).code == 0
    for path in CONFIG_KEYS:
        document = tomlkit.parse(CONFIG).unwrap()
        _set(document["tool"]["lockgen"], path, value)
        (tmp_path / "pyproject.toml").write_text(tomlkit.dumps(document))
        run = run_cli("matrix", "-C", str(tmp_path))
        _no_traceback(run)
        shown = ".".join(str(p) for p in path if not isinstance(p, int))
        if run.code == 0:  # a shape the key takes ("x" as the one use entry, a rule's vars = {a = 1}, …)
            continue
        assert run.code == 2, (path, value, run.err)
        assert "pyproject.toml" in run.err and f"tool.lockgen.{shown.split('.')[0]}" in run.err, (path, value, run.err)


@pytest.mark.parametrize("value", [*HOSTILE, [{"a": 1}]], ids=repr)
def test_the_project_table_a_template_reads_takes_any_shape(tmp_path, value):
    """``[project]`` of the config's own pyproject.toml: ``dynamic``, the lists, each entry."""
    for path in [("project", "dynamic"), ("project", "dependencies"), ("project", "optional-dependencies"),
                 ("project", "dependencies", 0), ("dependency-groups",), ("dependency-groups", "dev")]:  # fmt: skip
        document = tomlkit.parse(CONFIG).unwrap()
        document["project"] = {"name": "app", "version": "1", "dependencies": ["numpy"], "dynamic": ["version"]}
        document["dependency-groups"] = {"dev": ["pytest"]}
        _set(document, path, value)
        (tmp_path / "pyproject.toml").write_text(tomlkit.dumps(document))
        run = run_cli("matrix", "-C", str(tmp_path))
        _no_traceback(run)
        assert run.code in (0, 2), (path, value, run.err)
        if run.code == 2:
            assert "pyproject.toml" in run.err and "project" in run.err, (path, value, run.err)


INIT = """\
[project]
name = "app"
version = "1.0"
dependencies = ["numpy"]

[project.optional-dependencies]
cpu = ["torch==2.7.1+cpu"]
cu128 = ["torch==2.7.1+cu128"]

[tool.uv]
conflicts = [[{ extra = "cpu" }, { extra = "cu128" }]]
environments = ["sys_platform == 'linux'"]

[tool.uv.sources]
torch = [{ index = "torch-cpu", extra = "cpu" }, { index = "torch-cu128", extra = "cu128" }]

[[tool.uv.index]]
name = "torch-cpu"
url = "https://download.pytorch.org/whl/cpu"
explicit = true

[[tool.uv.index]]
name = "torch-cu128"
url = "https://download.pytorch.org/whl/cu128"
explicit = true
"""

INIT_KEYS = [
    ("tool",), ("tool", "uv"), ("tool", "uv", "index"), ("tool", "uv", "index", 0), ("tool", "uv", "index", 0, "name"),
    ("tool", "uv", "sources"), ("tool", "uv", "sources", "torch"), ("tool", "uv", "sources", "torch", 0, "index"),
    ("tool", "uv", "sources", "torch", 0, "extra"), ("tool", "uv", "conflicts"), ("tool", "uv", "conflicts", 0, 0),
    ("tool", "uv", "environments"), ("tool", "uv", "environments", 0), ("project",), ("project", "dependencies"),
    ("project", "optional-dependencies"), ("project", "optional-dependencies", "cpu"), ("project", "requires-python"),
]  # fmt: skip


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_init_reads_a_pyproject_of_any_shape_or_names_the_key(tmp_path, monkeypatch, value):
    """``lockgen init`` on a pyproject.toml with each key of each type: a draft, or exit 2 naming
    ``pyproject.toml`` (and the key, for a key init takes from the file)."""
    monkeypatch.chdir(tmp_path)
    for path in INIT_KEYS:
        document = tomlkit.parse(INIT).unwrap()
        _set(document, path, value)
        (tmp_path / "pyproject.toml").write_text(tomlkit.dumps(document))
        run = run_cli("init", "--dry-run", "--python", "3.12")
        _no_traceback(run)
        assert run.code in (0, 2), (path, value, run.err)
        if run.code == 2:
            assert "pyproject.toml" in run.err or "[project].dependencies" in run.err, (path, value, run.err)


@pytest.mark.parametrize(
    "text",
    [
        "[project\n",  # not TOML
        '[project]\nname = "a"\ndependencies = ["numpy"]\n[project.optional-dependencies]\n'  # a marker packaging
        'cpu = ["torch==2.7.1+cpu"]\ncu128 = ["torch==2.7.1+cu128; python_version ~= \'x\'"]\n',  # cannot evaluate
        '[project]\nname = "a"\ndependencies = ["numpy"]\n[tool.uv]\nenvironments = ["python_version ~= \'x\'"]\n',
    ],
    ids=["not-toml", "marker-in-an-extra", "marker-in-environments"],
)
def test_init_on_a_pyproject_it_cannot_read_says_so(tmp_path, monkeypatch, text):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(text)
    run = run_cli("init", "--dry-run", "--python", "3.12")
    _no_traceback(run)
    assert run.code in (0, 2)
    if text.startswith("[project\n"):
        assert run.code == 2 and "pyproject.toml: cannot read TOML" in run.err


LOCAL = """\
[project]
name = "sub"
dynamic = ["dependencies"]

[tool.uv]
cache-keys = [{ file = "requirements.txt" }]

[tool.uv.sources]
alpha = { index = "other" }

[[tool.uv.index]]
name = "other"
url = "https://other.example/simple"

[tool.setuptools.dynamic]
dependencies = { file = ["requirements.txt"] }
"""

LOCAL_KEYS = [
    ("tool",), ("tool", "uv"), ("tool", "uv", "index"), ("tool", "uv", "index", 0, "name"),
    ("tool", "uv", "sources"), ("tool", "uv", "sources", "alpha"), ("tool", "uv", "sources", "alpha", "index"),
    ("tool", "uv", "cache-keys"), ("tool", "uv", "cache-keys", 0, "file"), ("tool", "setuptools", "dynamic"),
    ("tool", "setuptools", "dynamic", "dependencies", "file"),
]  # fmt: skip


@pytest.mark.parametrize("value", [*HOSTILE, "**x", "."], ids=repr)
def test_a_local_projects_uv_tables_of_any_shape_read_as_absent(tmp_path, value):
    """A local project's pyproject.toml is uv's to judge: lockgen lists what it would bring
    (:mod:`lockgen.plan.uvtables`) and the files its metadata comes from, and a value of another
    type than uv's brings nothing."""
    (tmp_path / "requirements.txt").write_text("numpy\n")
    for path in LOCAL_KEYS:
        document = tomlkit.parse(LOCAL).unwrap()
        _set(document, path, value)
        (tmp_path / "pyproject.toml").write_text(tomlkit.dumps(document))
        assert isinstance(uvtables.brought(tmp_path, ["."]), list)
        assert "pyproject.toml" in project_files(tmp_path)


def test_a_source_whose_index_is_no_string_is_still_listed(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.uv.sources]\nalpha = { index = ["other"] }\n')
    assert uvtables.brought(tmp_path, ["."]) == ["pyproject.toml: [tool.uv.sources] alpha = index ['other']"]


PYLOCK = {
    "lock-version": "1.0",
    "created-by": "uv",
    "requires-python": ">=3.12",
    "packages": [
        {
            "name": "alpha",
            "version": "1.0",
            "marker": "sys_platform == 'linux'",
            "wheels": [
                {
                    "name": "alpha-1.0-py3-none-any.whl",
                    "url": "https://x/alpha-1.0-py3-none-any.whl",
                    "hashes": {"sha256": "0" * 64},
                }
            ],
            "sdist": {"name": "alpha-1.0.tar.gz", "url": "https://x/alpha-1.0.tar.gz", "hashes": {"sha256": "1" * 64}},
        }
    ],
}
PYLOCK_KEYS = [
    ("packages",), ("packages", 0), ("packages", 0, "version"), ("packages", 0, "marker"), ("packages", 0, "wheels"),
    ("packages", 0, "wheels", 0), ("packages", 0, "wheels", 0, "hashes"), ("packages", 0, "sdist"),
    ("packages", 0, "sdist", "hashes", "sha256"), ("requires-python",), ("lock-version",), ("extras",),
]  # fmt: skip


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_a_pylock_of_any_shape_is_read_or_named(value):
    """``packages = true``, an entry whose ``version`` is a table, …: a LockFormatError naming the
    file, or a Pylock every reader of it can use."""
    for path in PYLOCK_KEYS:
        document = tomlkit.parse(tomlkit.dumps(PYLOCK)).unwrap()
        _set(document, path, value)
        try:
            pylock = pylockfile.loads(tomlkit.dumps(document), "locks/x/pylock.toml")
        except LockFormatError as exc:
            refused = str(exc)
        else:
            refused = ""
            pylockfile.main_only(pylock)
            [pylockfile.sha256s(p) for p in pylock.packages]
            pylockfile.loads(pylockfile.dumps(pylock), "again")
        assert not refused or "locks/x/pylock.toml" in refused, (path, value)


def test_bump_with_a_pins_table_of_another_type_names_it(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "requirements.in.j2").write_text("torch\n")
    (tmp_path / "pyproject.toml").write_text(CONFIG.replace('pins = { torch = "2.13.0" }', "pins = 5"))
    run = run_cli("bump", "torch==2.14.0", "-C", str(tmp_path))
    _no_traceback(run)
    assert run.code == 2 and "tool.lockgen.pins" in run.err


@pytest.mark.parametrize(
    "top",
    ['created-by = "uv"\npackages = []\n', 'created-by = "\\"\\u001f"\npackages = []\n'],
    ids=["no-packages", "a-quote-and-a-control-character"],
)
def test_a_pylock_lockgen_writes_again_reads_back(top):
    """What lockgen writes of a pylock it read (install's mirrored copy) reads back the same: a
    cell that locks nothing keeps ``packages = []`` (PEP 751 requires it), and a string that a
    literal TOML string cannot hold is written escaped (found by the fuzz tier)."""
    pylock = pylockfile.loads('lock-version = "1.0"\n' + top, "locks/x/pylock.toml")
    assert pylockfile.loads(pylockfile.dumps(pylock), "again") == pylock
