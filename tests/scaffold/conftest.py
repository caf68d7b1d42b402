"""The init tests are hermetic: ``lockgen init`` run in-process reads nothing from PyPI (which
build PyPI's linux torch is comes from init's table, as with ``--offline``), unless a test
gives it a reader of its own fake host."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _init_reads_no_real_index(monkeypatch):
    from lockgen import scaffold
    from lockgen.scaffold.builds import PypiTorch

    monkeypatch.setattr(scaffold, "default_index_builds", lambda mirrors=(): PypiTorch())
