"""The record rules that oomrec/records.py owns, each tested at its one home: how a commit is
shown, how a record names its CSV, which numbers and dates a record field holds, and whether a
record applies on a host."""

from __future__ import annotations

import pytest

from oomrec.records import SHORT_SHA, UNKNOWN_COMMIT, short_commit

SHA = "9bef3f2334c4048d8540aa392ef030c97d4dad2c"


@pytest.mark.parametrize(
    ("commit", "shown"),
    [
        (SHA, SHA[:SHORT_SHA]),
        (SHA.upper(), SHA.upper()[:SHORT_SHA]),
        (f"{SHA}-dirty", f"{SHA[:SHORT_SHA]}-dirty"),
        (SHA[:5], SHA[:5]),
        (UNKNOWN_COMMIT, UNKNOWN_COMMIT),
        # Not a SHA: shown whole, never cut into something that looks like one.
        ("release-2026", "release-2026"),
        ("deadbeefcafe-dirty-x", "deadbeefcafe-dirty-x"),
        ("", ""),
    ],
)
def test_a_commit_is_shown_with_one_short_length(commit: str, shown: str) -> None:
    assert SHORT_SHA == 7
    assert short_commit(commit) == shown
