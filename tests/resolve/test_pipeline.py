"""Resolver decisions in milliseconds: a runner that replays recorded uv outputs (the seam of
``lockgen.resolve.uv.RunnerLike``) instead of the real uv, which the end-to-end tests keep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from lockgen.config import Settings
from lockgen.plan.matrix import Cell
from lockgen.plan.mirror import Mirrors
from lockgen.plan.plan import Plan
from lockgen.plan.render import Rendered
from lockgen.plan.target import target_for
from lockgen.resolve import uv
from lockgen.resolve.cellrun import CellRun
from lockgen.resolve.pipeline import resolve_cell, resolve_layers
from lockgen.runtime.errors import CellFailed

DATA = Path(__file__).parents[1] / "data" / "uv"
SHA = "a" * 64


@dataclass
class Replay:
    """Answers each uv run with the next recorded (exit code, stderr, output file text)."""

    steps: list[tuple[int, str, str | None]]
    argvs: list[list[str]] = field(default_factory=list)

    def run(self, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> uv.Result:
        code, stderr, output = self.steps.pop(0)
        self.argvs.append(list(argv))
        if output is not None:
            path = Path(cwd) / argv[argv.index("--output-file") + 1]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(output)
        return uv.Result(code, stderr)


def pylock(*packages: tuple[str, str, str]) -> str:  # wheels are py3-none-any: they fit every target
    """A uv-like pylock: (name, version, wheel file name) per package, hashed with ``SHA``."""
    text = 'lock-version = "1.0"\ncreated-by = "uv"\n'
    for name, version, wheel in packages:
        url = f"https://files.example/{wheel}"
        text += f'\n[[packages]]\nname = "{name}"\nversion = "{version}"\n'
        text += f'wheels = [{{ url = "{url}", hashes = {{ sha256 = "{SHA}" }} }}]\n'
    return text


def sdist_pylock(name: str, version: str) -> str:
    url = f"https://files.example/{name}-{version}.tar.gz"
    return f'lock-version = "1.0"\ncreated-by = "uv"\n\n[[packages]]\nname = "{name}"\nversion = "{version}"\nsdist = {{ url = "{url}", hashes = {{ sha256 = "{SHA}" }} }}\n'


def requirements(*lines: str) -> str:
    return "".join(f"{line}\n    # via -r .lockgen/windows-x86_64-cpu-py3.12/requirements.in\n" for line in lines)


def plan(tmp_path: Path, **settings) -> Plan:
    base = Settings(requirements="r.j2", index_url="https://pypi.org/simple", manylinux="2_28", macos="14.0")
    # a windows cell: no newer OS levels, so no extra pass for their wheels (lockgen/resolve/newer.py)
    cell = Cell(os="windows", arch="x86_64", backend="cpu", python="3.12", settings=base.merged(Settings(**settings)))
    rendered = Rendered(files={"requirements": ("requirements.in.j2", "app\n")})
    return Plan(
        cell=cell, target=target_for(cell), rendered=rendered, lock=f"locks/{cell.name}.txt",
        work=f".lockgen/{cell.name}", uv_version="0.13.9",
    )  # fmt: skip


def cell_run(tmp_path: Path, steps, **settings) -> tuple[CellRun, Replay]:
    runner = Replay(list(steps))
    return CellRun(tmp_path, plan(tmp_path, **settings), uv.Options(), Mirrors(), runner), runner


APP = ("app", "1.0", "app-1.0-py3-none-any.whl")


def test_one_resolution_and_one_offline_describe_pass(tmp_path):
    run, runner = cell_run(tmp_path, [(0, "Resolved 1 package", pylock(APP)), (0, "", requirements("app==1.0"))])
    files = resolve_cell(run)
    assert [a[a.index("--format") + 1] for a in runner.argvs] == ["pylock.toml", "requirements.txt"]
    assert "--offline" in runner.argvs[1] and "--offline" not in runner.argvs[0]
    (entry,) = files.main.entries
    assert (entry.name, str(entry.version), entry.hashes, entry.via) == (
        "app",
        "1.0",
        (f"sha256:{SHA}",),
        ("templates/requirements.in.j2",),
    )


def test_an_allow_build_package_without_wheels_is_built_on_a_second_try(tmp_path):
    steps = [
        (1, (DATA / "no-wheels.txt").read_text(), None),
        (0, "", sdist_pylock("sdonly", "2.0")),
        (0, "", requirements("sdonly==2.0")),
    ]
    run, runner = cell_run(tmp_path, steps, allow_build=("sdonly",))
    files = resolve_cell(run)
    assert "--no-binary" not in runner.argvs[0]
    assert runner.argvs[1][runner.argvs[1].index("--no-binary") + 1] == "sdonly"
    assert run.builds.names == {"sdonly"}  # this cell's (issue 17: cells are independent)
    assert files.main.entries[0].hashes == (f"sha256:{SHA}",)


def test_without_allow_build_the_failure_says_what_to_do(tmp_path):
    """uv names one package without wheels; lockgen leaves it out (``--excludes``) and asks again
    for the next (issue 17), then names them all with the allow-build line to copy."""
    steps = [(1, (DATA / "no-wheels.txt").read_text(), None), (0, "", pylock(APP))]
    run, runner = cell_run(tmp_path, steps)
    with pytest.raises(
        CellFailed,
        match=r'sdonly: no wheel for x86_64-pc-windows-msvc cp312 in any version .* allow-build = \["sdonly"\]',
    ) as error:
        resolve_cell(run)
    assert "--no-build" not in str(error.value)  # uv's hint names an option the user never gave
    assert "--excludes" not in runner.argvs[0]
    excluded = runner.argvs[1][runner.argvs[1].index("--excludes") + 1]
    assert (tmp_path / excluded).read_text() == "sdonly\n"


@pytest.mark.parametrize(
    ("recording", "settings", "hint"),
    [
        ("too-new", {"exclude_newer": "2025-01-01T00:00:00Z"},
         "lockgen: numpy: the versions required were published after exclude-newer (2025-01-01T00:00:00Z, set in pyproject.toml)"),
        ("no-such-version", {"pins": {"torchvision": "0.99.0"}},
         "lockgen: torchvision==0.99.0 is the version the pins give torchvision (pins.torchvision in pyproject.toml"),
    ],
    ids=["after-the-cutoff", "pinned-version-missing"],
)  # fmt: skip
def test_a_failure_names_the_setting_behind_it(tmp_path, recording, settings, hint):
    """uv names only the requirement or "the exclude newer time"; lockgen names its setting."""
    run, _ = cell_run(tmp_path, [(1, (DATA / f"{recording}.txt").read_text(), None)], **settings)
    with pytest.raises(CellFailed) as error:
        resolve_cell(run)
    assert hint in str(error.value)


def test_a_yanked_version_kept_by_a_preference_is_resolved_again(tmp_path):
    yanked = (DATA / "yanked-preference.txt").read_text()
    steps = [(0, yanked, pylock(("yankme", "1.1", "yankme-1.1-py3-none-any.whl"))),
             (0, "", pylock(("yankme", "1.0", "yankme-1.0-py3-none-any.whl"))), (0, "", requirements("yankme==1.0"))]  # fmt: skip
    run, runner = cell_run(tmp_path, steps)
    files = resolve_cell(run)
    assert runner.argvs[1][runner.argvs[1].index("--upgrade-package") + 1] == "yankme"
    assert str(files.main.entries[0].version) == "1.0"


@pytest.mark.parametrize(
    ("step", "outcome"),
    [
        ((2, (DATA / "connection-refused.txt").read_text(), None), "source unreachable:"),
        ((1, (DATA / "not-found.txt").read_text(), None), "No solution found"),  # (then once more without main's pins)
    ],
    ids=["unreachable-retries-later", "no-resolution-is-permanent"],
)
def test_an_optional_layer_that_cannot_be_had_is_recorded(tmp_path, step, outcome):
    steps = [(0, "", pylock(APP)), (0, "", requirements("app==1.0")), step, step]
    run, _ = cell_run(tmp_path, steps, optional=("extra",))
    run = CellRun(run.root, Plan(**{**run.plan.__dict__, "optional": ("extra",)}), run.options, run.mirrors, run.runner)
    files = resolve_cell(run)
    (gap,) = files.main.header.unavailable
    assert gap.requirement == "extra" and gap.reason.startswith(outcome)
    assert gap.retry is (outcome == "source unreachable:")


def test_a_killed_uv_never_drops_a_layer(tmp_path):
    steps = [(-9, "", None)]
    run, _ = cell_run(tmp_path, steps)
    run = CellRun(run.root, Plan(**{**run.plan.__dict__, "optional": ("extra",)}), run.options, run.mirrors, run.runner)
    with pytest.raises(CellFailed, match="uv was killed while resolving layer optional-extra"):
        resolve_layers(run, _resolved(run))


def _resolved(run: CellRun):
    from lockgen.resolve.describe import Resolved
    from lockgen.resolve.parse import read_pylock

    (run.root / ".lockgen/x").mkdir(parents=True, exist_ok=True)
    (run.root / ".lockgen/x/pylock.toml").write_text(pylock(APP))
    return Resolved(pylock=read_pylock(run, ".lockgen/x/pylock.toml"), entries=())


def test_an_allow_build_optional_entry_without_wheels_is_built_on_a_second_try(tmp_path):
    """The layers learn builds as main does (CASES C26): an sdist-only optional entry that
    ``allow-build`` names is locked from its sdist, not recorded as unavailable."""
    steps = [
        (0, "", pylock(APP)), (0, "", requirements("app==1.0")),  # main: resolution, description
        (1, (DATA / "no-wheels.txt").read_text(), None),  # the layer, wheels only
        (0, "", sdist_pylock("sdonly", "2.0")), (0, "", requirements("sdonly==2.0")),  # built; described
    ]  # fmt: skip
    run, runner = cell_run(tmp_path, steps, allow_build=("sdonly",))
    run = CellRun(run.root, replace(run.plan, optional=("sdonly",)), run.options, run.mirrors, run.runner)
    files = resolve_cell(run)
    assert not files.main.header.unavailable
    (layer,) = files.layers
    assert layer.header.path.endswith("/optional-sdonly.txt")
    assert [(str(e.name), str(e.version), e.hashes) for e in layer.entries] == [("sdonly", "2.0", (f"sha256:{SHA}",))]
    assert "--no-binary" not in runner.argvs[2]
    assert runner.argvs[3][runner.argvs[3].index("--no-binary") + 1] == "sdonly"
    assert run.builds.names == {"sdonly"}


def test_an_optional_entry_without_wheels_and_not_in_allow_build_is_unavailable(tmp_path):
    no_wheels = (1, (DATA / "no-wheels.txt").read_text(), None)
    steps = [
        (0, "", pylock(APP)),
        (0, "", requirements("app==1.0")),
        no_wheels,
        (0, "", pylock(APP)),  # sdonly left out: nothing else needs building
    ]
    run, runner = cell_run(tmp_path, steps)
    run = CellRun(run.root, replace(run.plan, optional=("sdonly",)), run.options, run.mirrors, run.runner)
    (gap,) = resolve_cell(run).main.header.unavailable
    assert gap.requirement == "sdonly"
    assert gap.reason.startswith("sdonly: no wheel for x86_64-pc-windows-msvc cp312 in any version")
    assert 'allow-build = ["sdonly"]' in gap.reason
    assert not any("--no-binary" in argv for argv in runner.argvs)


def test_the_build_hint_says_a_version_for_other_pythons_first(tmp_path):
    """uv's failure names a version without a usable wheel; when its wheels serve other Pythons
    (read from its page: here given), the hint says that before allow-build."""
    from packaging.utils import NormalizedName

    from lockgen.resolve import hints

    run, _ = cell_run(tmp_path, [])
    stderr = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because numpy==1.26.4 has no usable wheels and you require numpy==1.26.4, we can conclude that your "
        "requirements are unsatisfiable.\n"
    )
    pythons = {NormalizedName("numpy"): "numpy 1.26.4 has wheels for CPython 3.10, 3.11 only"}
    said = hints.explain(run, stderr, None, pythons)
    assert (
        "lockgen: numpy 1.26.4 has wheels for CPython 3.10, 3.11 only, and this cell's Python is 3.12 (cp312)" in said
    )
    assert "building from source is the last resort" in said
    plain = hints.explain(run, stderr)
    assert "add it to allow-build to build from source" in plain
