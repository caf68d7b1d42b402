"""A small locked project for the dossier commands (audit, sbom, licenses), and its advisories.

Two cells, ``linux-x86_64-cpu-py3.11`` and ``-py3.12``, resolved by the real uv from a fake PyPI
(``https://pypi.org/simple`` and ``https://files.pythonhosted.org`` mirrored to loopback, so the
locks hold the canonical URLs) that serves each wheel's PEP 658 ``.metadata`` file:

* ``jinja2`` 3.1.4 in the 3.12 cell, 3.1.6 in the 3.11 cell (one advisory in one of two cells);
  ``markupsafe`` comes with it (a dependency: the SBOM's graph);
* ``pillow 10.0.0+build1``: a version with a local label (judged as 10.0.0);
* ``numpy 2.0.0``: named only by a withdrawn advisory;
* ``extra-lib 1.0``: only in the optional layer ``optional-extra-lib``;
* ``nvidia-cublas 13.1.0``: NVIDIA's proprietary license (``LicenseRef-NVIDIA-Proprietary``).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.fakehost import FakeHost
from tests.support.fakeosv import record

CELLS = ("linux-x86_64-cpu-py3.11", "linux-x86_64-cpu-py3.12")
OLD, NEW = CELLS  # 3.11 has jinja2 3.1.6, 3.12 has 3.1.4

LICENSES = {
    "jinja2": ("License-Expression: BSD-3-Clause",),
    "markupsafe": ("License: BSD-3-Clause", "Classifier: License :: OSI Approved :: BSD License"),
    "pillow": ("License: HPND",),
    "numpy": ("License-Expression: BSD-3-Clause AND 0BSD AND MIT",),
    "extra-lib": ("License: GNU General Public License v3", "Classifier: License :: OSI Approved :: GNU General Public License v3 (GPLv3)"),
    "nvidia-cublas": ("License-Expression: LicenseRef-NVIDIA-Proprietary", "License-File: License.txt"),
}  # fmt: skip

TEMPLATE = """\
jinja2=={{ "3.1.4" if python == "3.12" else "3.1.6" }}
pillow==10.0.0+build1
numpy==2.0.0
nvidia-cublas==13.1.0
"""


def records() -> list[dict[str, Any]]:
    """The advisories of the world, in OSV's format (see :mod:`tests.support.fakeosv`)."""
    jinja = ["3.0.0", "3.1.0", "3.1.1", "3.1.2", "3.1.3", "3.1.4"]
    return [
        record("GHSA-h5c8-rqwp-cp95", "Jinja2", jinja, fixed="3.1.5", aliases=("CVE-2026-22195",),
               summary="Jinja2 sandbox breakout through indirect format calls",
               cvss="CVSS:3.1/AV:N/AC:H/PR:L/UI:N/S:U/C:L/I:L/A:N", rating="MODERATE"),
        record("PYSEC-2026-11", "jinja2", jinja, fixed="3.1.5", aliases=("CVE-2026-22195", "GHSA-h5c8-rqwp-cp95")),
        record("GHSA-q9r4-x2m3-8h7v", "jinja2", ["3.1.6"], introduced="3.1.6", fixed="3.1.7",
               summary="Jinja2 xmlattr filter accepts keys with spaces", rating="LOW"),
        record("GHSA-44wm-f244-xhp3", "Pillow", ["9.5.0", "10.0.0"], introduced="9.5.0", fixed="10.0.1",
               summary="Pillow buffer overflow in ImagePath.Path", rating="HIGH"),
        record("GHSA-9w8r-397f-prfh", "numpy", ["2.0.0"], summary="numpy: withdrawn duplicate",
               rating="LOW", withdrawn="2026-09-15T00:00:00Z"),
        record("GHSA-7f3x-c4wq-5x2p", "extra-lib", ["0.9", "1.0"], last_affected="1.0",
               summary="extra-lib executes code from pickled config",
               cvss="CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N"),
    ]  # fmt: skip


def publish(pypi: FakeHost, metadata_files: bool = True) -> None:
    """The packages on ``pypi``; ``metadata_files``: serve PEP 658 ``.metadata`` files (False:
    an index without them, as a private index or a plain mirror)."""

    def add(name: str, version: str, requires: tuple[str, ...] = ()) -> None:
        pypi.add(name, version, requires=requires, metadata=LICENSES.get(name, ()))

    for version in ("3.1.4", "3.1.5", "3.1.6", "3.1.7"):
        add("jinja2", version, ("markupsafe>=2.0",))
    add("markupsafe", "2.1.5")
    add("pillow", "10.0.0+build1")
    add("pillow", "10.0.1")
    add("numpy", "2.0.0")
    add("extra-lib", "1.0")
    add("nvidia-cublas", "13.1.0")
    pypi.publish()
    if metadata_files:
        pypi.metadata_files()


@dataclass
class World:
    root: Path
    pypi: FakeHost

    @property
    def mirrors(self) -> list[str]:
        return [
            f"https://pypi.org/simple={self.pypi.url}/pypi/simple",
            f"https://files.pythonhosted.org={self.pypi.url}/files",
        ]

    def mirror_args(self) -> list[str]:
        return [arg for pair in self.mirrors for arg in ("--mirror", pair)]


def write(root: Path, pypi: FakeHost, extra: str = "") -> World:
    """The project (not yet locked); ``extra``: more top-level config lines (``[audit]``…)."""
    root.mkdir(parents=True, exist_ok=True)
    config = textwrap.dedent("""\
        [project]
        name = "dossier-app"
        version = "1.2.0"

        [tool.lockgen]
        optional = ["extra-lib==1.0"]
        allow-mix = { "nvidia-cublas" = "in a cpu cell for its license, which the tests read" }
        """) + textwrap.dedent(extra) + textwrap.dedent("""
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.11", "3.12"]
        """)  # fmt: skip
    (root / "pyproject.toml").write_text(config)
    (root / "templates").mkdir(exist_ok=True)
    (root / "templates" / "requirements.in.j2").write_text(TEMPLATE)
    return World(root, pypi)
