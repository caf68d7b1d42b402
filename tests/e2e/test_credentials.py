"""Credentials in URL fields (issue 9, item 8): logins work, and no secret reaches a lock, the
manifest, ``.lockgen/``, a log line or a message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lockgen.plan.mirror import build
from lockgen.runtime.credentials import realm, redact, resolve, split
from lockgen.runtime.errors import ConfigError, UsageError
from tests.conftest import locked_versions, run_cli, write_project
from tests.e2e.test_real_sources import stop_all
from tests.support.fakehost import AuthHost

pytestmark = pytest.mark.uv  # every test here locks with the real uv

TIME = "2026-01-01T00:00:00Z"
SECRETS = {
    "PYPI_TOKEN": "pypi-Secret-1", "GH_TOKEN": "gh-Secret-4", "BACKEND_TOKEN": "backend-Secret-3", "REL_TOKEN": "rel-Secret-5",
}  # fmt: skip
FLAT_PASSWORD = "flat-Secret-2"  # written literally in the config
NETRC_PASSWORD = "netrc-Secret-6"  # only in a netrc file
WRONG = "gh-Wrong-7"
REL_URL = "https://release.example/x/direct-1.0-py3-none-any.whl"


# -- pure parts


def test_split_and_realm():
    assert split("https://u:p%40ss@Host.example:443/simple") == ("https://Host.example:443/simple", "u:p%40ss")
    assert split("wheels/spark") == ("wheels/spark", None)
    assert realm("HTTPS://u:p@Host.Example:443/x") == "https://host.example"
    assert realm("http://127.0.0.1:8080/x") == "http://127.0.0.1:8080"


def test_logins_expand_at_run_time_and_never_show():
    logins = resolve({"https://corp.example": "${USER_}:${TOKEN}"}, {"USER_": "ci", "TOKEN": "t0k/en"})
    assert logins.attach("https://corp.example/simple/") == "https://ci:t0k%2Fen@corp.example/simple/"
    assert logins.attach("https://other.example/x") == "https://other.example/x"
    assert logins.reference("https://corp.example/x.whl") == "https://${LOCKGEN_CREDENTIALS_0}@corp.example/x.whl"
    assert logins.env() == {"LOCKGEN_CREDENTIALS_0": "ci:t0k%2Fen"}
    assert logins.index_env("lockgen-pytorch", "https://corp.example/whl") == {
        "UV_INDEX_LOCKGEN_PYTORCH_USERNAME": "ci", "UV_INDEX_LOCKGEN_PYTORCH_PASSWORD": "t0k/en",
    }  # fmt: skip
    text = "GET https://ci:t0k%2Fen@corp.example/x failed; uv: https://ci:****@corp.example/y; t0k/en"
    assert logins.scrub(text) == "GET https://corp.example/x failed; uv: https://corp.example/y; ****"
    assert redact("clone git+ssh://git@github.com/org/repo") == "clone git+ssh://git@github.com/org/repo"
    with pytest.raises(UsageError, match=r"\$\{TOKEN\} \(credentials for https://corp\.example\)") as info:
        resolve({"https://corp.example": "ci:${TOKEN}"}, {})
    assert "t0k" not in str(info.value)


def test_mirrors_carry_their_logins():
    mirrors = build(
        [{"https://pypi.org/simple": "https://m:${M}@mirror.example/simple"}],
        {"https://corp.example": "u:pw1"},
        {"M": "mpw2"},
    )
    assert mirrors.table == {"https://pypi.org/simple": "https://mirror.example/simple"}
    assert mirrors.fetch_url("https://pypi.org/simple/torch/") == "https://m:mpw2@mirror.example/simple/torch/"
    assert mirrors.file_url("https://pypi.org/simple/x.whl").startswith("https://${LOCKGEN_CREDENTIALS_")
    assert mirrors.rewrite("x @ https://pypi.org/simple/x.whl ; os_name == 'nt'\n") == (
        f"x @ {mirrors.file_url('https://pypi.org/simple/x.whl')} ; os_name == 'nt'\n"
    )
    assert (
        mirrors.canonical("url = https://m:mpw2@mirror.example/simple/a.whl") == "url = https://pypi.org/simple/a.whl"
    )
    with pytest.raises(UsageError, match=r"two different logins for https://mirror\.example"):
        build([{"https://a": "https://x:1@mirror.example"}, {"https://b": "https://x:2@mirror.example"}])


def test_config_urls_are_public_and_logins_stay_out_of_the_input_hash(tmp_path):
    from lockgen.project import Project

    def plan(password: str):
        config = f"""
            index-url = "https://ci:{password}@corp.example/simple"
            [tool.lockgen.matrix]
            os = ["linux"]
            arch = ["x86_64"]
            backend = ["cpu"]
            python = ["3.12"]
        """
        project = Project.load(write_project(tmp_path / password, config, {"requirements.in.j2": "x\n"}))
        return project, project.plans(project.cells)[0]

    first, a = plan("one-pass")
    _, b = plan("two-pass")
    assert a.index_url == "https://corp.example/simple"
    assert first.config.credentials == {"https://corp.example": "ci:one-pass"}
    assert a.input_hash == b.input_hash


def test_config_problems_with_logins(tmp_path):
    from lockgen.project import Project

    config = """
        index-url = "https://ci:a@corp.example/${TOKEN}/simple"
        find-links = { x = "https://ci:b@corp.example/flat/" }
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
    """
    with pytest.raises(ConfigError) as info:
        Project.load(write_project(tmp_path, config, {"requirements.in.j2": "x\n"}))
    text = str(info.value)
    assert "tool.lockgen.index-url: ${VAR} references are expanded only in the user:password@ part" in text
    assert "tool.lockgen.find-links.x: another URL gives a different login for https://corp.example" in text
    assert "ci:b" not in text
    assert "ci:a" not in text


# -- end to end: a login in every URL field, a netrc file, hosts that refuse anything else


@pytest.fixture
def world(tmp_path):
    hosts = {
        "pypi": AuthHost(tmp_path / "pypi", ("alice", SECRETS["PYPI_TOKEN"])),
        "flat": AuthHost(tmp_path / "flat", ("bob", FLAT_PASSWORD)),
        "backend": AuthHost(tmp_path / "backend", ("carol", SECRETS["BACKEND_TOKEN"])),
        "gh": AuthHost(tmp_path / "gh", ("dave", SECRETS["GH_TOKEN"])),
        "rel": AuthHost(tmp_path / "rel", ("erin", SECRETS["REL_TOKEN"])),
        "nrc": AuthHost(tmp_path / "nrc", ("frank", NETRC_PASSWORD)),
    }
    pypi = hosts["pypi"]
    pypi.index_page("simple", [pypi.wheel("files", "numpy", "2.3.0")], upload_time=TIME)
    hosts["flat"].flat_page("flat", [hosts["flat"].wheel("flat", "flatpkg", "1.0")])
    hosts["backend"].index_page(
        "whl/cpu", [hosts["backend"].wheel("whl/cpu", "torch", "2.7.0+cpu", requires=("numpy",))]
    )
    hosts["gh"].wheel("rel", "gradio_client", "1.0.2+custom.20", requires=("numpy",))
    hosts["gh"].wheel("rel", "opt", "1.0")
    hosts["rel"].wheel("x", "direct", "1.0")
    hosts["nrc"].wheel("rel", "nrc", "1.0")
    yield hosts
    stop_all(list(hosts.values()))


def project(root: Path, hosts: dict[str, AuthHost]) -> Path:
    def at(name: str, login: str) -> str:
        return hosts[name].url.replace("http://", f"http://{login}@")

    config = f"""
        index-url = "{at("pypi", "alice:${PYPI_TOKEN}")}/simple"
        find-links = {{ flat = "{at("flat", "bob:" + FLAT_PASSWORD)}/flat/" }}
        use = ["backend", "gh", "nrc"]
        pinned = ["torch"]
        pins = {{ torch = "2.7.0" }}
        optional = ["opt"]

        [sources.backend]
        index = "https://backend.example/whl/{{flavor}}"
        packages = ["torch"]

        [sources.gh]
        urls = ["{at("gh", "dave:${GH_TOKEN}")}/rel/gradio_client-1.0.2+custom.20-py3-none-any.whl", "{at("gh", "dave:${GH_TOKEN}")}/rel/opt-1.0-py3-none-any.whl"]
        packages = ["gradio-client", "opt"]

        [sources.nrc]
        urls = ["{hosts["nrc"].url}/rel/nrc-1.0-py3-none-any.whl"]
        packages = ["nrc"]

        [mirrors]
        "https://backend.example" = "{at("backend", "carol:${BACKEND_TOKEN}")}"

        [matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
    """
    template = f"numpy\nflatpkg\ntorch\ngradio-client\nnrc\n{REL_URL}\n"
    root = write_project(root, config, {"requirements.in.j2": template}, name="lockgen.toml")
    (root / "netrc").write_text(f"machine 127.0.0.1 login frank password {NETRC_PASSWORD}\n")
    return root


def run(root: Path, hosts: dict[str, AuthHost], *args: str, **env_changes: str) -> subprocess.CompletedProcess[str]:
    """``python -m lockgen -v ARGS`` in ``root``: the real stdout and stderr, log lines included."""
    env = {**os.environ, **SECRETS, "NETRC": str(root / "netrc"), **env_changes}
    env["LOCKGEN_MIRRORS"] = (
        f"https://release.example={hosts['rel'].url.replace('http://', 'http://erin:${REL_TOKEN}@')}"
    )
    return subprocess.run(
        [sys.executable, "-m", "lockgen", "-v", *args], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


def leaks(
    root: Path, *outputs: str, secrets: tuple[str, ...] = (*SECRETS.values(), FLAT_PASSWORD, NETRC_PASSWORD)
) -> list[str]:
    """``where: secret`` for every secret found in ``outputs`` or a file of the locks folder or
    ``.lockgen/`` (manifest, pylock and rendered files included)."""
    found = []
    texts = {f"output {i}": text for i, text in enumerate(outputs)}
    for folder in (root / "locks", root / ".lockgen"):
        texts.update(
            {str(p.relative_to(root)): p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()}
        )
    for where, text in texts.items():
        found += [f"{where}: {secret}" for secret in secrets if secret in text]
    return found


def test_a_login_in_every_url_field_locks_and_shows_nowhere(tmp_path, world):
    root = project(tmp_path / "p", world)
    done = run(root, world, "all")
    assert done.returncode == 0, done.stderr
    assert "run in" in done.stderr  # -v logged uv's command lines ...
    assert leaks(root, done.stdout, done.stderr) == []  # ... without a secret
    lock = (root / "locks" / "linux-x86_64-cpu-py3.12.txt").read_text()
    pins = locked_versions(lock)
    assert (pins["torch"], pins["numpy"], pins["flatpkg"]) == ("2.7.0+cpu", "2.3.0", "1.0")
    assert f"# index-url: {world['pypi'].url}/simple\n" in lock
    assert f"# find-links: {world['flat'].url}/flat/\n" in lock
    assert "# find-links: https://backend.example/whl/cpu/torch/\n" in lock
    assert f"gradio-client @ {world['gh'].url}/rel/gradio_client-1.0.2+custom.20-py3-none-any.whl" in lock
    assert f"direct @ {REL_URL}" in lock
    assert f"nrc @ {world['nrc'].url}/rel/nrc-1.0-py3-none-any.whl" in lock  # its login came from the netrc file
    assert "optional-opt" in lock
    assert "unavailable" not in lock

    # a password change does not make a lock stale
    check = run_cli("check", "-C", str(root))
    assert check.code == 0, check.out


def test_a_refused_login_is_unauthorized_and_shows_nowhere(tmp_path, world):
    root = project(tmp_path / "p", world)
    failed = run(root, world, "all", GH_TOKEN=WRONG)
    assert failed.returncode == 1
    gh = world["gh"].url
    assert (
        f"unauthorized: {gh} answered HTTP 401 for {gh}/rel/gradio_client-1.0.2+custom.20-py3-none-any.whl"
        in failed.stderr
    )
    assert "give a login as user:password@ or ${ENV_VAR}" in failed.stderr
    assert (
        leaks(root, failed.stdout, failed.stderr, secrets=(*SECRETS.values(), FLAT_PASSWORD, NETRC_PASSWORD, WRONG))
        == []
    )
    refused = run(root, world, "all", "--force", PYPI_TOKEN=WRONG, BACKEND_TOKEN=WRONG + "b")  # uv's turn to be refused
    assert refused.returncode == 1
    assert "lockgen: torch is taken only from index source 'backend'" in refused.stderr
    assert leaks(root, refused.stdout, refused.stderr, secrets=(*SECRETS.values(), WRONG, WRONG + "b")) == []
    env_missing = subprocess.run(
        [sys.executable, "-m", "lockgen", "all"], cwd=root, capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k != "GH_TOKEN"},
    )  # fmt: skip
    assert env_missing.returncode == 2
    assert "${GH_TOKEN} (credentials for " in env_missing.stderr


def test_unauthorized_optional_layer_is_retried_not_dropped(tmp_path, world):
    root = project(tmp_path / "p", world)
    (root / "templates" / "requirements.in.j2").write_text("numpy\n")
    done = run(root, world, "all", GH_TOKEN=WRONG)
    assert done.returncode == 0, done.stderr
    lock = (root / "locks" / "linux-x86_64-cpu-py3.12.txt").read_text()
    assert "# unavailable: opt: source unreachable: unauthorized:" in lock  # retried by the next run
    assert leaks(root, done.stdout, done.stderr, secrets=(*SECRETS.values(), WRONG)) == []
