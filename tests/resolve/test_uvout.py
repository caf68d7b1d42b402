"""The pure parsers of uv's standard error, on outputs recorded from the pinned uv (tests/data/uv/;
127.0.0.1:8000 stands for the fake index the recording ran against)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgen.resolve import uvout

DATA = Path(__file__).parents[1] / "data" / "uv"


def recorded(name: str) -> str:
    return (DATA / f"{name}.txt").read_text()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("yanked-preference", [uvout.Yank("yankme", "1.1", "broken build")]),
        ("no-wheels", []),
        ("conflict", []),
    ],
    ids=["kept-through-a-preference", "none-in-a-failure", "none-in-a-conflict"],
)
def test_yanked(name, expected):
    assert uvout.yanked(recorded(name)) == expected


@pytest.mark.parametrize(
    ("name", "hosts"),
    [
        ("connection-refused", ["http://127.0.0.1:9"]),
        ("dns-failure", ["http://no-such-host.invalid"]),
        ("not-found", []),
        ("offline-missing", []),
        ("conflict", []),
    ],
    ids=["refused", "dns", "not-a-network-failure", "offline-cache-miss", "conflict"],
)
def test_unreachable_hosts(name, hosts):
    assert uvout.unreachable_hosts(recorded(name)) == hosts


@pytest.mark.parametrize(
    ("name", "needs"),
    [("no-wheels", ["sdonly"]), ("source-tree-build-disabled", ["dyn-pkg"]), ("conflict", []), ("pin-fought", [])],
    ids=["sdist-only", "vcs-with-dynamic-metadata", "conflict", "pin-fought"],
)
def test_needs_wheels(name, needs):
    assert uvout.needs_wheels(recorded(name)) == needs


@pytest.mark.parametrize(
    ("name", "versions"),
    [("no-such-version", {"torchvision": "0.99.0"}), ("not-found", {}), ("pin-fought", {}), ("no-wheels", {})],
    ids=["exact-version-missing", "no-project", "pin-fought", "no-usable-wheel"],
)
def test_no_such_version(name, versions):
    assert uvout.no_such_version(recorded(name)) == versions


@pytest.mark.parametrize(
    ("name", "names"),
    [
        ("too-new", ["numpy"]),
        ("filtered-by-exclude-newer", ["fresh"]),
        ("no-such-version", []),
        ("not-found", []),
        ("conflict", []),
    ],
    ids=["after-the-cutoff", "every-version-filtered", "no-such-version", "no-project", "conflict"],
)
def test_too_new(name, names):
    assert uvout.too_new(recorded(name)) == names


@pytest.mark.parametrize(
    ("name", "missing"),
    [("not-found", ["does-not-exist"]), ("no-wheels", []), ("offline-missing", []), ("conflict", [])],
    ids=["no-such-project", "no-usable-wheel", "offline-cache-miss", "conflict"],
)
def test_not_in_registry(name, missing):
    assert uvout.not_in_registry(recorded(name)) == missing


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("no-wheels", "we can conclude that your requirements are unsatisfiable."),
        ("offline-missing", "hint: Packages were unavailable because the network was disabled."),
        ("conflict", None),
    ],
    ids=["build-hint-dropped", "other-hints-kept", "nothing-to-drop"],
)
def test_without_build_hints(name, kept):
    text = uvout.explain(recorded(name))
    cleaned = uvout.without_build_hints(text)
    assert "--no-build" not in cleaned
    assert "Wheels are required" not in cleaned
    if kept is None:
        assert cleaned == text
    else:
        assert kept in cleaned


@pytest.mark.parametrize(
    ("name", "start", "end"),
    [
        ("not-found", "No solution found when resolving dependencies", "unsatisfiable."),
        ("connection-refused", "Failed to read `--find-links` URL", "Connection refused (os error 111)"),
        ("dns-failure", "Failed to read `--find-links` URL", "Name or service not known"),
    ],
    ids=["not-found", "refused", "dns"],
)
def test_reason_is_one_line_first_and_last_cause(name, start, end):
    gist = uvout.reason(recorded(name))
    assert "\n" not in gist and gist.startswith(start) and gist.endswith(end)


def test_reason_of_nothing():
    assert uvout.reason("") == "uv failed without a message"


def test_mentioned_names_the_packages_of_a_conflict():
    """C08: uv's explanation of a fought pin names torch and setuptools (and timm, which pulled torch)."""
    assert {"torch", "setuptools", "timm"} <= uvout.mentioned(recorded("pin-fought"))


def test_warnings_and_explain_drop_chatter():
    text = 'Resolved 2 packages in 56ms\nwarning: `yankme==1.1` is yanked (reason: "broken build")\n'
    assert uvout.warnings(text) == ['`yankme==1.1` is yanked (reason: "broken build")']
    assert uvout.explain(text).startswith("warning:")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("conflict", "No solution found when resolving dependencies: Because you require app==1.0 and app==2.0, we can conclude that your requirements are unsatisfiable."),
        ("connection-refused", None),
    ],
    ids=["the-whole-chain", "a-network-chain"],
)  # fmt: skip
def test_cause_is_the_whole_explanation_on_one_line(name, expected):
    """An unavailable layer's reason (issue 17): uv's error and every cause, not its first and
    last line only, joined as uv means them (``error: X`` then ``cause: Y`` is ``X: Y``)."""
    found = uvout.cause(recorded(name))
    assert "\n" not in found and "cause:" not in found and not found.startswith("error:")
    if expected is not None:
        assert found == expected


def test_an_offline_miss_is_told_apart_from_a_needed_build():
    missed = (
        "  cause: Because ext==2.0 has no usable wheels and only ext==2.0 and ext==2.1 are available\n"
        "         And because ext==2.1 needs to be downloaded from a registry and you require ext, ...\n"
        "hint: Packages were unavailable because the network was disabled. When the network is disabled, ...\n"
    )
    assert uvout.missed_offline(missed)
    assert uvout.needs_wheels(missed) == ["ext"]
    assert not uvout.missed_offline("  cause: Because ext==2.0 has no usable wheels and you require ext, ...\n")


def test_unusable_names_the_version_uv_could_not_use():
    from packaging.version import Version

    stderr = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because numpy==1.26.4 has no usable wheels and you require numpy==1.26.4, we can conclude that …\n"
        "Because torch==2.1.0 has no wheels with a matching Python ABI tag (e.g., `cp313`) and …\n"
    )
    assert uvout.unusable(stderr) == {"numpy": Version("1.26.4"), "torch": Version("2.1.0")}
    assert uvout.unusable("no solution") == {}


def test_pythons_of_reads_the_cpython_tags_of_a_versions_wheels():
    from packaging.tags import parse_tag
    from packaging.version import Version

    from lockgen.resolve.offers import pythons_of

    supported = frozenset(parse_tag("cp312-cp312-manylinux_2_28_x86_64") | parse_tag("py3-none-any"))
    platforms = frozenset({"manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "any"})
    files = [
        "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "numpy-1.26.4-cp310-cp310-manylinux_2_17_x86_64.whl",
        "numpy-1.26.4-cp310-cp310-win_amd64.whl",
        "numpy-1.26.4.tar.gz",
        "numpy-2.3.5-cp312-cp312-manylinux_2_28_x86_64.whl",  # fits: left out
        "numpy-1.0-cp27-cp27m-macosx_10_9_x86_64.whl",  # no wheel for the platform: not the Python's fault
        "other-1.26.4-cp310-cp310-manylinux_2_17_x86_64.whl",
    ]
    assert pythons_of(files, "numpy", platforms, supported) == {Version("1.26.4"): ["3.10", "3.11"]}
