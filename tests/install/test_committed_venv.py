"""A venv found in a checkout is not run unless it is a real one (docs/untrusted-input.md,
"Rules"): lockgen runs the installed interpreter a venv links to, with ``-I -S``, never a file
of the venv, and no ``.pth`` file of the venv runs while lockgen inspects it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lockgen.install.venv import Venv
from lockgen.runtime.errors import InstallRefused

BASE = Path(sys.executable).resolve()


def _venv(root: Path, python: str, home: str | None = None) -> tuple[Venv, Path]:
    """A venv folder in the project ``root`` whose ``bin/python`` is ``python``: ``base`` (a
    link to the installed interpreter), ``script`` (a committed shell script), ``inner-link`` (a
    link to such a script in the project), ``sh`` (a link to /bin/sh), ``broken``."""
    venv = root / ".venv"
    (venv / "bin").mkdir(parents=True)
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    site.mkdir(parents=True)
    marker = root.parent / "RAN"
    (site / "evil.pth").write_text(f"import pathlib; pathlib.Path({str(marker)!r}).write_text('pth')\n")
    (venv / "pyvenv.cfg").write_text(f"home = {home or BASE.parent}\nversion = 3.11\n")
    script = root / "tools" / "python3.11"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\necho ran > {marker}\n")
    script.chmod(0o755)
    target = venv / "bin" / "python"
    if python == "base":
        target.symlink_to(BASE)
    elif python == "script":
        target.write_text(script.read_text())
        target.chmod(0o755)
    elif python == "inner-link":
        target.symlink_to(script)
    elif python == "sh":
        target.symlink_to("/bin/sh")
    elif python == "broken":
        target.symlink_to(root / "nowhere")
    return Venv(venv), marker


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")
@pytest.mark.parametrize(
    ("python", "home", "why"),
    [
        ("script", None, "is not a link to an installed Python"), ("inner-link", None, "inside the venv or the project"),
        ("sh", None, "not a Python interpreter"), ("broken", None, "leads nowhere"),
        ("base", "{root}/tools", "its home"), ("base", "{root}/.venv", "its home"),
    ],
    ids=["script", "link-into-project", "sh", "broken", "home-in-project", "home-in-venv"],
)  # fmt: skip
def test_a_committed_venv_is_refused_and_nothing_runs(tmp_path, python, home, why):
    root = tmp_path / "p"
    venv, marker = _venv(root, python, home.format(root=root) if home else None)
    for look in (venv.inspect, venv.installed):
        with pytest.raises(InstallRefused, match=why) as info:
            look(root)
        assert "nothing was run" in str(info.value)
    assert not marker.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout")
def test_a_real_venv_is_inspected_without_running_its_pth_files(tmp_path):
    root = tmp_path / "p"
    venv, marker = _venv(root, "base")
    site = next((venv.path / "lib").glob("python*/site-packages"))
    info = site / "beta-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: beta\nVersion: 1.0\n")
    found = venv.inspect(root)
    assert found.minor == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert list(venv.distributions(root)) == ["beta"]
    assert not marker.exists(), "a .pth file of the venv ran"
    assert os.path.realpath(found.executable) == str(BASE)
