"""Every lock installs with the pip a fresh venv ships and with the pinned uv, whatever mix of
extras and plain requirements the resolution has (issue 17, item 1; CASES C19).

pip 23.2.1 (what ``python3 -m venv`` gives on CPython 3.11) keys a requirement by its name *and*
extras: when one package asks for ``fsspec>=1`` and another for ``fsspec[http]>=1``, a
``--require-hashes`` install needs a pinned line for both, or pip takes the newest fsspec on the
index for the one it lacks and stops ("must have their versions pinned with ==", pypa/pip#9644).
Every world below keeps a newer version of the package with extras on the index, so a missing
line fails for real. Each lock is installed layer by layer with the commands the manifest
records: by that pip into a fresh venv, and by the pinned uv (``uv pip sync``/``install``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lockgen.locks.entry import Entry
from lockgen.locks.lock import parse_entries
from lockgen.resolve import uv
from tests.conftest import run_ok, write_project
from tests.e2e.test_c18_c19_installers import clean_env

pytestmark = [pytest.mark.uv]

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
CELL = f"linux-x86_64-cpu-py{PYTHON}"
EXTRAS = "Provides-Extra: http\nProvides-Extra: s3\nProvides-Extra: gcs"

#: name -> (requirements template, constraints template, optional entries, packages that must be installed)
SHAPES = {
    "extra-only-from-a-dependency": ("app\n", "fsspec==1.0\n", [], {"app", "fsspec", "aiohttp"}),
    "extra-and-plain-from-two-dependencies": ("app\ndatasets\n", "fsspec==1.0\n", [], {"app", "datasets", "aiohttp"}),
    "plain-in-the-template-extra-from-a-dependency": ("fsspec==1.0\napp\n", "", [], {"app", "aiohttp"}),
    "extra-in-the-template-plain-from-a-dependency": ("fsspec[http]==1.0\ndatasets\n", "", [], {"datasets", "aiohttp"}),
    "two-extras-from-two-dependencies": ("app\ncloud\n", "fsspec==1.0\n", [], {"app", "cloud", "aiohttp", "boto"}),
    "a-set-of-extras-a-single-extra-and-plain": (
        "both\ngcsapp\ndatasets\n", "fsspec==1.0\n", [], {"both", "gcsapp", "aiohttp", "boto", "gcsfs"},
    ),
    "an-extra-through-an-extra": ("tool[full]\ndatasets\n", "fsspec==1.0\n", [], {"tool", "aiohttp"}),
    "an-optional-layer-asks-for-the-extra": ("datasets\n", "fsspec==1.0\n", ["app"], {"datasets", "app", "aiohttp"}),
}  # fmt: skip


def extras_world(index) -> None:
    """fsspec 1.0 and 2.0 (the newer one is the trap) with three extras, and its requirers."""
    for version in ("1.0", "2.0"):
        index.add(
            "fsspec",
            version,
            requires=(
                f'aiohttp; extra == "http"\nRequires-Dist: boto; extra == "s3"\nRequires-Dist: gcsfs; extra == "gcs"\n{EXTRAS}',
            ),
        )
    for name in ("aiohttp", "boto", "gcsfs"):
        index.add(name, "1.0")
    index.add("app", "1.0", requires=("fsspec[http]>=1",))
    index.add("datasets", "1.0", requires=("fsspec>=1",))
    index.add("cloud", "1.0", requires=("fsspec[s3]>=1",))
    index.add("both", "1.0", requires=("fsspec[http,s3]>=1",))
    index.add("gcsapp", "1.0", requires=("fsspec[gcs]>=1",))
    index.add("tool", "1.0", requires=('fsspec[http]>=1; extra == "full"\nProvides-Extra: full',))
    index.publish()


def project(root: Path, index_url: str, requirements: str, constraints: str, optional: list[str]) -> Path:
    extra = f'constraints = "constraints.txt.j2"\noptional = {json.dumps(optional)}' if constraints else ""
    extra = extra or f"optional = {json.dumps(optional)}"
    config = f"""
        index-url = "{index_url}"
        {extra}
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["{PYTHON}"]
    """
    templates = {"requirements.in.j2": requirements}
    if constraints:
        templates["constraints.txt.j2"] = constraints
    return write_project(root, config, templates)


def layers(root: Path) -> list[dict]:
    return json.loads((root / "locks" / "manifest.json").read_text())["cells"][CELL]["layers"]


def test_a_package_with_extras_gets_a_line_per_set_of_extras():
    """The lock model's lines (pure): plain and every set of up to three extras, one set of hashes."""
    from packaging.version import Version

    entry = Entry(name="fsspec", version=Version("1.0"), extras=("http", "s3"), hashes=("sha256:" + "a" * 64,))
    lines = [line for line in entry.lines() if not line.startswith(" ")]
    assert lines == ["fsspec==1.0 \\", "fsspec[http]==1.0 \\", "fsspec[s3]==1.0 \\", "fsspec[http,s3]==1.0 \\"]
    assert parse_entries("\n".join(entry.lines()) + "\n", "lock") == (entry,)  # read back as one entry
    many = Entry(name="cuda-toolkit", version=Version("13.0.3"), extras=tuple("abcde"))
    assert many.extra_sets() == ((), tuple("abcde"))  # beyond three: plain and all of them
    url = Entry(name="pkg", version=Version("1.0"), extras=("x",), url="https://h/pkg-1.0-py3-none-any.whl")
    assert url.extra_sets() == (("x",),)


@pytest.fixture(scope="module")
def world(shared_fake_host):
    index = shared_fake_host("extras")
    extras_world(index)
    return index


@pytest.fixture(scope="module")
def pip_232(tmp_path_factory) -> Path:
    """The interpreter whose ``python3 -m venv`` ships pip 23.2.1 (CPython 3.11)."""
    if sys.platform != "linux" or sys.version_info[:2] != (3, 11):
        pytest.skip("the pip 23.2 installs need CPython 3.11 on Linux (its ensurepip ships pip 23.2.1)")
    return Path(getattr(sys, "_base_executable", sys.executable))


def pip_venv(base: Path, folder: Path) -> Path:
    subprocess.run([str(base), "-m", "venv", str(folder)], check=True, capture_output=True, env=clean_env())
    python = folder / "bin" / "python"
    version = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("pip 23.2"), version.stdout
    return python


def site_names(venv: Path) -> set[str]:
    site = next(venv.glob("lib/python*/site-packages"))
    return {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_installs_with_fresh_pip_and_uv(tmp_path, world, pip_232, shape):
    requirements, constraints, optional, wanted = SHAPES[shape]
    root = project(tmp_path / "p", world.index_url(), requirements, constraints, optional)
    run_ok("all", "-C", str(root))
    recorded = layers(root)
    assert [layer["kind"] for layer in recorded] == ["main"] + ["optional"] * len(optional)
    env = clean_env()
    # pip 23.2.1 of a fresh venv, each layer's recorded pip command (--require-hashes), from the project root
    python = pip_venv(pip_232, tmp_path / "pip-venv")
    for layer in recorded:
        argv = [str(python), "-m", "pip", *layer["commands"]["pip"][1:], "--isolated", "--no-cache-dir"]
        assert "--require-hashes" in argv
        done = subprocess.run(
            argv, cwd=root, env={**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}, capture_output=True, text=True
        )
        assert done.returncode == 0, (layer["name"], done.stdout[-2000:] + done.stderr[-3000:])
    assert wanted | {"fsspec"} <= site_names(tmp_path / "pip-venv")
    # the pinned uv, each layer's recorded uv command
    venv = tmp_path / "uv-venv"
    subprocess.run(
        [uv.uv_binary(), "venv", "-q", "--no-config", "--python", sys.executable, str(venv)], check=True, env=env
    )
    for layer in recorded:
        argv = [uv.uv_binary(), *layer["commands"]["uv"][1:]]
        done = subprocess.run(argv, cwd=root, env={**env, "VIRTUAL_ENV": str(venv)}, capture_output=True, text=True)
        assert done.returncode == 0, (layer["name"], done.stderr[-3000:])
    assert wanted | {"fsspec"} <= site_names(venv)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('fsspec'))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert installed.stdout.strip() == "1.0"


@pytest.mark.slow
def test_without_the_plain_line_pip_23_2_stops(tmp_path, world, pip_232):
    """The control: the same lock without its plain ``fsspec==1.0`` line (what lockgen wrote
    before) is refused by pip 23.2, so the shape tests test something real."""
    requirements, constraints, optional, _ = SHAPES["extra-and-plain-from-two-dependencies"]
    root = project(tmp_path / "p", world.index_url(), requirements, constraints, optional)
    run_ok("all", "-C", str(root))
    path = root / "locks" / f"{CELL}.txt"
    text = path.read_text()
    head, found, rest = text.partition("\nfsspec==1.0 \\\n")
    assert found
    path.write_text(head + "\n" + rest.split("\n", 1)[1])  # drop the line and its one hash
    python = pip_venv(pip_232, tmp_path / "venv")
    (layer,) = layers(root)
    argv = [str(python), "-m", "pip", *layer["commands"]["pip"][1:], "--isolated", "--no-cache-dir"]
    done = subprocess.run(
        argv, cwd=root, env={**clean_env(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "must have their versions pinned with ==" in done.stderr


def test_the_lock_has_a_line_for_each_set_of_extras(tmp_path, world):
    """Default tier: what the lock writes for the trickiest shape (the installs are slow)."""
    requirements, constraints, optional, _ = SHAPES["a-set-of-extras-a-single-extra-and-plain"]
    root = project(tmp_path / "p", world.index_url(), requirements, constraints, optional)
    run_ok("all", "-C", str(root))
    text = (root / "locks" / f"{CELL}.txt").read_text()
    lines = [line.split(" ")[0] for line in text.split("\n\n", 1)[1].splitlines() if line.startswith("fsspec")]
    assert lines == [
        "fsspec==1.0", "fsspec[gcs]==1.0", "fsspec[http]==1.0", "fsspec[s3]==1.0", "fsspec[gcs,http]==1.0",
        "fsspec[gcs,s3]==1.0", "fsspec[http,s3]==1.0", "fsspec[gcs,http,s3]==1.0",
    ]  # fmt: skip
