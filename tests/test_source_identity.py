"""Source identity is the canonical index URL prefix, after mirror mapping, never the host (issue 16,
item 1). Artifactory, Nexus, GitLab and CodeArtifact serve many repositories from one host: end to
end against one fake host serving several of them, with the real uv; the units below them."""

from __future__ import annotations

import pytest
from packaging.pylock import Package, PackageWheel
from packaging.utils import canonicalize_name
from packaging.version import Version

from lockgen.errors import ConfigError, UsageError
from lockgen.plan import identity
from lockgen.plan.mirror import Mirrors, build, parse
from tests.conftest import locked_versions, run_cli, write_project
from tests.faulthost import FaultHost

pytestmark = pytest.mark.uv  # these tests lock with the real uv

CELL = "linux-x86_64-cpu-py3.12"
MATRIX = '[tool.lockgen.matrix]\nos = ["linux"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]\n'


def _config(index: str, source: str, packages: str = '"torch", "triton"', extra: str = "") -> str:
    return (
        f'index-url = "{index}"\nuse = ["pytorch"]\n{extra}\n'
        f'[tool.lockgen.sources.pytorch]\nindex = "{source}"\npackages = [{packages}]\n'
        + ('labels = { torch = "*" }\n' if '"torch"' in packages else "")
        + MATRIX
    )


def _two_indexes(host: FaultHost, app_requires: tuple[str, ...] = ("torch",)) -> tuple[str, str]:
    """The default index ``/default/simple`` and a backend index ``/torch/simple`` on one host;
    the default index also has a lookalike torch 99.0 and a triton; the backend index torch and
    triton builds."""
    default = host.index(
        "default/simple",
        [
            host.wheel("default-files", "app", "1.0", requires=app_requires),
            host.wheel("default-files", "torch", "99.0"),
            host.wheel("default-files", "triton", "3.0"),
        ],
    )
    backend = host.index(
        "torch/simple", [host.wheel("torch-files", "torch", "2.0+cpu"), host.wheel("torch-files", "triton", "3.0")]
    )
    return default, backend


def test_two_indexes_on_one_host_are_two_sources(tmp_path, pypi):
    """torch, named in the requirements, comes from the backend index, never from the default
    index's lookalike 99.0 on the same host; the lock says so and verify is satisfied."""
    default, backend = _two_indexes(pypi)
    root = write_project(tmp_path / "p", _config(default, backend), {"requirements.in.j2": "app\ntorch\n"})
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    lock = (root / "locks" / f"{CELL}.txt").read_text()
    assert locked_versions(lock)["torch"] == "2.0+cpu"
    assert (
        f"{pypi.url}/torch-files/torch-2.0%2Bcpu-py3-none-any.whl"
        in (root / "locks" / CELL / "pylock.toml").read_text()
    )


def test_a_lookalike_on_the_default_index_of_a_package_a_source_serves_fails_the_cell(tmp_path, pypi):
    """The dependency-confusion case per-source indexes exist to stop: triton is named for the
    backend index but only a dependency, so uv takes it from the default index on the same host.
    Judged by host this passed; judged by the index uv names it fails, naming both indexes."""
    default, backend = _two_indexes(pypi, app_requires=("torch", "triton"))
    root = write_project(tmp_path / "p", _config(default, backend), {"requirements.in.j2": "app\ntorch\n"})
    run = run_cli("all", "-C", str(root))
    assert run.code == 1
    assert (
        f"triton 3.0: source 'pytorch' ({backend}) serves it for this cell, but it came from the default index "
        f"({default}); lockgen takes a package from its index where the requirements name it: add a line for triton"
    ) in run.err
    assert not (root / "locks" / f"{CELL}.txt").exists()


def test_a_mirror_on_the_host_of_an_unmirrored_index(tmp_path, pypi):
    """A corporate host serves the mirror of PyPI (``/pypi``, ``/files``) and the project's own
    index (``/vendor/simple``, configured by its real URL): the vendor index's files are canonical
    URLs of that index, not mirror paths left unmapped."""
    app = pypi.wheel("files", "app", "1.0", requires=("vpkg",))
    (pypi.root / "pypi" / "simple").mkdir(parents=True)
    pypi.index("pypi/simple", [app])
    vendor = pypi.index("vendor/simple", [pypi.wheel("vendor-files", "vpkg", "1.0")])
    extra = (
        f'[tool.lockgen.mirrors]\n"https://pypi.org/simple" = "{pypi.url}/pypi/simple"\n'
        f'"https://files.pythonhosted.org" = "{pypi.url}/files"\n'
    )
    config = _config("https://pypi.org/simple", vendor, '"vpkg"')
    root = write_project(
        tmp_path / "p", extra.join(config.split(MATRIX)) + MATRIX, {"requirements.in.j2": "app\nvpkg\n"}
    )
    run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    pylock = (root / "locks" / CELL / "pylock.toml").read_text()
    assert "https://files.pythonhosted.org/app-1.0-py3-none-any.whl" in pylock
    assert f"{pypi.url}/vendor-files/vpkg-1.0-py3-none-any.whl" in pylock


def test_a_configured_url_under_a_mirror_prefix_is_refused_naming_both(tmp_path, pypi):
    """A mirror of a whole host (``https://files.pythonhosted.org`` = the corporate host's root)
    would turn the project's own index on that host into a URL nobody configured
    (``https://files.pythonhosted.org/vendor/simple``): refused before anything runs."""
    vendor = pypi.index("vendor/simple", [pypi.wheel("vendor-files", "vpkg", "1.0")])
    extra = f'[tool.lockgen.mirrors]\n"https://files.pythonhosted.org" = "{pypi.url}"\n'
    config = _config("https://pypi.org/simple", vendor, '"vpkg"')
    root = write_project(tmp_path / "p", extra.join(config.split(MATRIX)) + MATRIX, {"requirements.in.j2": "vpkg\n"})
    run = run_cli("all", "-C", str(root))
    assert run.code == 2
    assert (
        f"error: {vendor} (source 'pytorch') lies under the mirror {pypi.url} of https://files.pythonhosted.org"
    ) in run.err


def test_two_canonical_prefixes_on_one_mirror_host(tmp_path, pypi):
    """PyPI and download.pytorch.org behind one mirror host, each under its own prefix: every URL
    written back is the canonical one that was configured, in the lock and in a failure."""
    app = pypi.wheel("pypi-files", "app", "1.0", requires=("torch",))
    pypi.index("pypi/simple", [app])
    torch = pypi.wheel("torch/whl/cpu", "torch", "2.0+cpu")
    pypi.index("torch/whl/cpu", [torch])
    mirrors = [
        "--mirror", f"https://pypi.org/simple={pypi.url}/pypi/simple",
        "--mirror", f"https://files.pythonhosted.org={pypi.url}/pypi-files",
        "--mirror", f"https://download.pytorch.org={pypi.url}/torch",
    ]  # fmt: skip
    config = _config("https://pypi.org/simple", "https://download.pytorch.org/whl/cpu", '"torch"')
    root = write_project(tmp_path / "p", config, {"requirements.in.j2": "app\ntorch\n"})
    run = run_cli("all", "-C", str(root), *mirrors)
    assert run.code == 0, run.err
    pylock = (root / "locks" / CELL / "pylock.toml").read_text()
    assert "https://download.pytorch.org/whl/cpu/torch-2.0%2Bcpu-py3-none-any.whl" in pylock
    assert "https://files.pythonhosted.org/app-1.0-py3-none-any.whl" in pylock
    assert pypi.url not in pylock
    (root / "templates" / "requirements.in.j2").write_text("app\ntorch==3.0\n")
    failed = run_cli("all", "-C", str(root), *mirrors)
    assert failed.code == 1
    assert (
        "error: cell linux-x86_64-cpu-py3.12: source 'pytorch' (https://download.pytorch.org/whl/cpu) has torch "
        "2.0+cpu, not 3.0\n"
    ) in failed.err
    assert pypi.url not in failed.err


# ------------------------------------------------------------------ units


def test_two_canonical_prefixes_behind_one_mirror_prefix_are_refused_naming_both():
    with pytest.raises(UsageError) as caught:
        build([parse(["https://a.example/simple=http://m/x", "https://b.example/simple=http://M/x/"])])
    message = str(caught.value)
    assert "https://a.example/simple and https://b.example/simple both map to http://M/x" in message
    with pytest.raises(UsageError, match="both map to"):
        Mirrors(parse(["https://a.example=http://m/x"])).merged(parse(["https://b.example=http://m/x"]))
    build([parse(["https://a.example=http://m/x", "https://b.example=http://m/x/b"])])  # nested prefixes: told apart


@pytest.mark.uv
def test_the_config_refuses_a_mirror_table_it_cannot_read_back(tmp_path):
    extra = '[tool.lockgen.mirrors]\n"https://a.example/simple" = "http://m/x"\n"https://b.example/simple" = "http://m/x/"\n'
    root = write_project(
        tmp_path / "p", f'index-url = "https://a.example/simple"\n{extra}{MATRIX}', {"requirements.in.j2": "x\n"}
    )
    run = run_cli("check", "-C", str(root))
    assert run.code == 2
    assert (
        "tool.lockgen.mirrors.https://b.example/simple: 'https://a.example/simple' and 'https://b.example/simple' "
        "both map to 'http://m/x/'"
    ) in run.err
    from lockgen.config import find_config, load_config

    with pytest.raises(ConfigError):
        load_config(find_config(root))


@pytest.mark.parametrize(
    ("url", "prefix", "under"),
    [
        ("https://art.example/api/pypi/pytorch/simple/torch/", "https://art.example/api/pypi/pytorch/simple", True),
        ("https://art.example/api/pypi/pypi/simple/torch/", "https://art.example/api/pypi/pytorch/simple", False),
        ("HTTPS://Art.Example:443/api/pypi/pytorch/simple", "https://art.example/api/pypi/pytorch/simple/", True),
        ("https://download.pytorch.org/whl/cu1300/torch/", "https://download.pytorch.org/whl/cu130", False),
        ("https://h/whl/cu130/torch-2.0%2Bcu130-x.whl", "https://h/whl/cu130", True),
        ("wheels/spark/", "wheels/spark", True),
    ],
)
def test_prefixes_compare_at_segment_boundaries_never_by_host(url, prefix, under):
    assert identity.under(url, prefix) is under


def test_a_mirror_host_url_is_left_over_only_when_its_page_came_through_the_mirror():
    mirrors = Mirrors(parse(["https://pypi.org/simple=http://corp/pypi/simple"]))
    assert mirrors.leftover("http://corp/pypi/packages/x.whl", "https://pypi.org/simple")
    assert not mirrors.leftover("http://corp/vendor-files/x.whl", "http://corp/vendor/simple")
    assert mirrors.leftover("http://corp/vendor-files/x.whl")  # no page known: judged a mirror path
    assert not mirrors.leftover("https://files.pythonhosted.org/x.whl", "https://pypi.org/simple")


def test_a_hash_is_checked_by_the_page_uv_named_not_by_host(tmp_path):
    """A find-links page on the default index's host: which one listed a file is uv's ``# from``."""
    from lockgen.resolve.hashcheck import DEFAULT_INDEX, origin
    from tests.test_resolve_unit import plan

    plan = plan(tmp_path, index_url="https://corp/simple", find_links={"vendor": ("https://corp/vendor/",)})
    package = Package(name=canonicalize_name("vpkg"), version=Version("1.0"), wheels=[PackageWheel(url="https://corp/f/vpkg-1.0-py3-none-any.whl", hashes={"sha256": "0" * 64})])  # fmt: skip
    where = "https://corp/f/vpkg-1.0-py3-none-any.whl"
    assert origin(plan, package, where, "https://corp/vendor/").name == "vendor"
    assert origin(plan, package, where, "https://corp/simple").name == DEFAULT_INDEX
    assert origin(plan, package, where).kind == "find-links"  # uv named none: checked, to be safe
