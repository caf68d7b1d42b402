"""Optional entries that are URLs (lockgen.plan.direct): an archive URL is accepted when the entry
names its project, and every refusal reads as one sentence after "optional entry '…' is"."""

from __future__ import annotations

import pytest

from lockgen.plan.direct import EntryRefused, read_optional


@pytest.mark.parametrize(
    ("entry", "kind", "name"),
    [
        ("https://files.example/rel/opt-1.0.tar.gz", "archive", "opt"),
        ("opt @ https://github.example/org/opt/archive/v1.0.zip", "archive", "opt"),
        ("opt @ https://files.example/rel/opt-1.0-py3-none-any.whl", "wheel", "opt"),
    ],
)
def test_archive_and_wheel_urls_are_optional_entries(entry, kind, name):
    found = read_optional(entry)
    assert (found.kind, found.name) == (kind, name)


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (
            "https://github.example/org/opt/archive/v1.0.zip",
            "a source archive URL whose file name 'v1.0.zip' does not name its project; write it as NAME @ https://github.example/org/opt/archive/v1.0.zip",
        ),
        ("other @ https://files.example/rel/opt-1.0.tar.gz", "a URL of opt's file, though the entry names other"),
        ("https://files.example/rel/not_a-wheel.whl", "a wheel URL whose file name is not a wheel's"),
        ("https://files.example/rel/page.html", "not a wheel or source archive URL"),
    ],
)
def test_a_refused_url_entry_reads_as_one_sentence(entry, said):
    with pytest.raises(EntryRefused) as refused:
        read_optional(entry)
    message = f"optional entry {entry!r} is {refused.value}"
    assert said in message
    assert " is its " not in message and " is it " not in message
