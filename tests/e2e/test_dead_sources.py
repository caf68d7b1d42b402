"""Every host a cell needs is probed once before uv starts, index sources included (issue 16,
item 4): a dead backend index fails its cells in seconds, one line per host, with the --mirror
hint; no uv process is started."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.e2e.test_trust import manifest, no_uv, project, publish
from tests.support.faulthost import refusing_url

pytestmark = pytest.mark.uv

TWELVE = 'os = ["linux", "windows"]\narch = ["x86_64", "aarch64"]\nbackend = ["cpu"]\npython = ["3.11", "3.12", "3.13"]'
BACKEND = """use = ["pytorch"]
[tool.lockgen.sources.pytorch]
index = "https://download.example/whl/{{flavor}}"
packages = ["torch"]
[tool.lockgen.mirrors]
"https://download.example" = "{down}"
"""


def test_a_dead_backend_index_fails_every_cell_at_once_in_one_line(tmp_path, pypi, monkeypatch):
    index = publish(pypi, ("app", "1.0", ("torch",)))
    no_uv(monkeypatch)  # the probe decides: no uv process, so none of uv's retries
    with refusing_url() as down:
        root = project(tmp_path / "p", index, "app\ntorch\n", extra=BACKEND.format(down=down), matrix=TWELVE)
        run = run_cli("all", "-C", str(root))
    assert run.code == 1
    errors = [line for line in run.err.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: all 12 cells: https://download.example is unreachable through its mirror (connection refused); "
        "no uv process was started. Check that the mirror is up, or point it elsewhere: "
        "--mirror https://download.example=<mirror URL>"
    ]
    assert {entry["status"] for entry in manifest(root).values()} == {"failed"}


def test_a_dead_mirror_is_named_once_with_its_url_but_never_in_the_manifest(tmp_path, pypi, monkeypatch, caplog):
    """The cells' reasons (committed in the manifest) name the canonical host only; the run says
    which mirror URL did not answer, once, without its login."""
    index = publish(pypi, ("app", "1.0", ("torch",)))
    no_uv(monkeypatch)
    with refusing_url() as down:
        root = project(tmp_path / "p", index, "app\ntorch\n", extra=BACKEND.format(down=down))
        mirror = down.replace("http://", "http://user:s3cret@") + "/pytorch"
        with caplog.at_level("WARNING", logger="lockgen"):
            run = run_cli("all", "-C", str(root), "--mirror", f"https://download.example={mirror}")
    assert run.code == 1
    port = down.rsplit(":", 1)[1]
    said = [r.getMessage() for r in caplog.records if "does not answer" in r.getMessage()]
    assert said == [
        f"the mirror for https://download.example does not answer: http://127.0.0.1:{port}/pytorch/whl/cpu "
        "(connection refused)"
    ]
    assert "s3cret" not in run.err + run.out + caplog.text
    text = (root / "locks" / "manifest.json").read_text()
    assert "127.0.0.1" not in text and "unreachable through its mirror" in text


def test_a_dead_index_of_an_optional_entry_makes_only_that_layer_unavailable(tmp_path, pypi, monkeypatch):
    index = publish(pypi, "app==1.0")
    extra = BACKEND + 'optional = ["torch"]\n'
    with refusing_url() as down:
        root = project(tmp_path / "p", index, "app\n", extra=extra.format(down=down))
        text = (root / "pyproject.toml").read_text().replace('optional = ["torch"]\n', "")
        (root / "pyproject.toml").write_text(
            text.replace('use = ["pytorch"]', 'use = ["pytorch"]\noptional = ["torch"]')
        )
        run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    (gap,) = manifest(root)["linux-x86_64-cpu-py3.12"]["unavailable"]
    assert gap["retry"] is True
    assert gap["reason"] == "source unreachable: https://download.example is unreachable (connection refused)"


def test_a_dead_urls_source_of_an_optional_package_makes_only_that_layer_unavailable(tmp_path, pypi, monkeypatch):
    """Optional means optional for every source kind: a ``urls`` source that serves only an
    optional package, its host down, marks that layer unavailable; the cell still locks."""
    index = publish(pypi, "app==1.0")
    extra = """use = ["wheels"]
optional = ["opt"]
[tool.lockgen.sources.wheels]
urls = ["https://files.example/rel/opt-1.0-py3-none-any.whl"]
packages = ["opt"]
[tool.lockgen.mirrors]
"https://files.example" = "{down}"
"""
    with refusing_url() as down:
        root = project(tmp_path / "p", index, "app\n", extra=extra.format(down=down))
        run = run_cli("all", "-C", str(root))
    assert run.code == 0, run.err
    (gap,) = manifest(root)["linux-x86_64-cpu-py3.12"]["unavailable"]
    assert gap["retry"] is True
    assert "https://files.example is unreachable (connection refused)" in gap["reason"]


def test_a_bare_wheel_url_on_a_dead_host_fails_its_cells_at_once_naming_the_host(tmp_path, pypi):
    """text-generation-webui's files name GitHub release wheels as bare URLs with a marker (as pip
    reads them): with github.com unreachable, the cells whose marker holds fail without uv, naming
    the host, and a cell whose marker is false for it locks."""
    index = publish(pypi, "app==1.0")
    with refusing_url() as down:
        url = "https://github.example/o/r/releases/download/v1/tool-1.0-py3-none-linux_x86_64.whl"
        extra = f'[tool.lockgen.mirrors]\n"https://github.example" = "{down}"\n'
        matrix = 'os = ["linux", "windows"]\narch = ["x86_64"]\nbackend = ["cpu"]\npython = ["3.12"]'
        root = project(tmp_path / "p", index, f'app\n{url}; platform_system == "Linux"\n', extra=extra, matrix=matrix)
        run = run_cli("all", "-C", str(root))
    assert run.code == 1
    errors = [line for line in run.err.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: cell linux-x86_64-cpu-py3.12: https://github.example is unreachable through its mirror "
        "(connection refused); no uv process was started. Check that the mirror is up, or point it elsewhere: "
        "--mirror https://github.example=<mirror URL>"
    ]
    cells = manifest(root)
    assert cells["linux-x86_64-cpu-py3.12"]["status"] == "failed"
    assert cells["windows-x86_64-cpu-py3.12"]["status"] == "locked"
