"""The pure parts of the trust work (issue 8), in milliseconds: malformed requirement lines, uv's
"not found" and transient failures, the probe's host names and reasons, grouped failures."""

from __future__ import annotations

import socket

import httpx
import pytest

from lockgen.index.client import _why
from lockgen.plan.reqfile import refused
from lockgen.resolve import uvout
from lockgen.resolve.probe import Down, host_of
from lockgen.run.lock import CellResult
from lockgen.run.progress import failure_groups
from lockgen.runtime.states import CellState


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("beta >= >= 1", True),
        ("alpha ==", True),
        ("torch==2.6.0+cu124 ; platform_system == 'Linux'", False),
        ("Django (>=1.0)", False),
        ("foo[bar,baz]>=1", False),
        ("numpy  # a comment", False),
        ("./sub", False),
        ("-e ./sub", False),
        ("pkg-1.0-py3-none-any.whl", False),
        ("pkg @ https://files.example/pkg-1.0-py3-none-any.whl", False),
        ("https://files.example/pkg-1.0-py3-none-any.whl", False),
        ("alpha \\\n  >= 1.0", False),
    ],
    ids=["double-operator", "no-version", "marker", "parenthesised", "extras", "comment", "path", "editable",
         "archive-name", "direct-reference", "bare-url", "continued"],
)  # fmt: skip
def test_malformed_requirement_lines_are_refused(text, bad):
    found = [r for r in refused(text) if "not a requirement" in r.why]
    assert bool(found) is bad
    if bad:
        assert str(found[0]).startswith(f"rendered line 1 {text!r}: not a requirement (")


@pytest.mark.parametrize(
    ("stderr", "names"),
    [
        ("  cause: Because alpha was not found in the package registry and you require alpha==1.0, we", ["alpha"]),
        ("  cause: Because there are no versions of beta and you require beta, we can conclude", ["beta"]),
        ("  cause: Because Foo_Bar was not found in the provided package locations and you require", ["foo-bar"]),
        ("  cause: Because only alpha<=1.0 is available and you require alpha>=1.1, we can conclude", []),
    ],
    ids=["registry", "no-versions", "find-links", "other"],
)
def test_not_found(stderr, names):
    assert uvout.not_found(stderr) == names


@pytest.mark.parametrize(
    ("stderr", "hosts"),
    [
        ("error: Failed to fetch: `https://vendor.example/wheels/`\n  cause: tcp connect error\n  cause: Connection refused", ["https://vendor.example"]),
        ("error: Failed to read `--find-links` URL: https://v.example:8443/w/\n  cause: HTTP status server error (500 Internal Server Error)", ["https://v.example:8443"]),
        ("error: Failed to fetch: `https://v.example/x`\n  cause: HTTP status client error (429 Too Many Requests)", ["https://v.example"]),
        ("error: Failed to fetch: `https://v.example/x`\n  cause: HTTP status client error (404 Not Found)", []),
    ],
    ids=["refused", "server-error", "rate-limited", "not-found-is-not-transient"],
)  # fmt: skip
def test_transient_failures_name_their_hosts(stderr, hosts):
    assert uvout.unreachable_hosts(stderr) == hosts


def test_retry_timings_do_not_split_identical_errors():
    one = uvout.explain("error: Request failed after 3 retries in 7.2s\n  cause: Connection refused")
    two = uvout.explain("error: Request failed after 3 retries in 11.1s\n  cause: Connection refused")
    assert one == two == "error: Request failed after 3 retries\n  cause: Connection refused"


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://pypi.org/simple", "https://pypi.org"),
        ("https://user:secret@corp.example:8443/pypi/simple/", "https://corp.example:8443"),
        ("http://127.0.0.1:9/x", "http://127.0.0.1:9"),
        ("wheels/local", None),
        ("file:///srv/wheels/", None),
        ("git+https://github.com/huggingface/diffusers.git@c943837", "https://github.com"),
        ("git+ssh://git@github.com/o/r.git", None),
    ],
    ids=["https", "credentials-dropped", "port", "folder", "file-url", "vcs-https", "vcs-ssh"],
)
def test_host_of(url, host):
    assert host_of(url) == host


def _connect_error(cause: BaseException) -> httpx.ConnectError:
    exc = httpx.ConnectError(str(cause))
    exc.__cause__ = cause
    return exc


@pytest.mark.parametrize(
    ("exc", "why"),
    [
        (_connect_error(ConnectionRefusedError(111, "Connection refused")), "connection refused"),
        (_connect_error(socket.gaierror(-2, "Name or service not known")), "its name does not resolve"),
        (httpx.ConnectTimeout("timed out"), "no connection within 5 s"),
        (_connect_error(OSError(101, "Network is unreachable")), "no route to it"),
    ],
    ids=["refused", "dns", "timeout", "no-route"],
)
def test_probe_reasons_are_short_and_stable(exc, why):
    assert _why(exc, 5.0) == why


def test_a_tls_failure_means_the_host_answered():
    import ssl

    assert _why(_connect_error(ssl.SSLError("certificate verify failed")), 5.0) is None


def test_down_messages_name_the_canonical_host_and_a_mirror_hint():
    direct = Down(host="https://vendor.example", why="connection refused").message()
    assert direct.startswith("https://vendor.example is unreachable (connection refused); no uv process was started.")
    assert direct.endswith("--mirror https://vendor.example=<mirror URL>")
    mirrored = Down(host="https://vendor.example", why="connection refused", mirror=True).message()
    assert "through its mirror" in mirrored
    assert "127.0.0.1" not in mirrored


def test_failure_groups_merge_identical_messages_in_order():
    results = [
        CellResult("a", CellState.FAILED, message="cell a: https://h.example is unreachable (connection refused)"),
        CellResult("b", CellState.LOCKED),
        CellResult("c", CellState.FAILED, message="cell c: uv could not resolve it:\nin .lockgen/c/requirements.in"),
        CellResult("d", CellState.FAILED, message="cell d: https://h.example is unreachable (connection refused)"),
        CellResult("e", CellState.FAILED, message="cell e: uv could not resolve it:\nin .lockgen/e/requirements.in"),
    ]
    assert failure_groups(results) == [
        (["a", "d"], "https://h.example is unreachable (connection refused)"),
        (["c", "e"], "uv could not resolve it:\nin .lockgen/<cell>/requirements.in"),
    ]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (
            "cell c1: uv could not resolve it:\nerror: No solution found when resolving dependencies\n"
            "  cause: Because beta was not found in the package registry and you require beta, we can conclude …\n"
            "lockgen: beta: no page lists it",
            "uv could not resolve it: Because beta was not found in the package registry and you require beta, "
            "we can conclude …; beta: no page lists it",
        ),
        (
            "cell c1: uv could not resolve it:\nerror: No solution found when resolving dependencies\n"
            "  cause: Because scikit-learn<=0.19.2 has no usable wheels and only the following versions are available:\n"
            "      scikit-learn<=0.19.2\n      scikit-learn>=0.20\n  and you require scikit-learn<0.20, we can conclude …\n"
            "hint: Wheels are required for `scikit-learn`\n"
            "lockgen: scikit-learn: no wheel for x86_64-manylinux_2_28 cp311; add it to allow-build",
            "uv could not resolve it: Because scikit-learn<=0.19.2 has no usable wheels and only the following "
            "versions are available: scikit-learn<=0.19.2 scikit-learn>=0.20 and you require scikit-learn<0.20, we "
            "can conclude …; scikit-learn: no wheel for x86_64-manylinux_2_28 cp311; add it to allow-build",
        ),
        (
            "cell c1: uv could not resolve it:\nerror: Failed to read `--find-links` URL",
            "uv could not resolve it: Failed to read `--find-links` URL",
        ),
        (
            "cell c1: layer no-deps would set beta 2.0 (main locks 1.0)",
            "layer no-deps would set beta 2.0 (main locks 1.0)",
        ),
        (
            "https://vendor.example is unreachable (connection refused)",
            "https://vendor.example is unreachable (connection refused)",
        ),
        ("", ""),
    ],
    ids=["uv-cause-and-hint", "multi-line-cause", "uv-error-line", "one-line", "no-cell-prefix", "empty"],
)
def test_the_manifest_reason_of_a_failed_cell_is_one_line_that_says_why(message, reason):
    assert CellResult("c1", CellState.FAILED, message=message).reason() == reason


def test_a_long_cause_is_cut_in_the_manifest_reason():
    from lockgen.run.values import REASON_CHARS

    message = "cell c1: uv could not resolve it:\n  cause: " + "x" * 2000 + "\nlockgen: do this"
    reason = CellResult("c1", CellState.FAILED, message=message).reason()
    assert reason.endswith("…; do this")
    assert len(reason) < REASON_CHARS + 60
