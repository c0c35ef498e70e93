"""The content rule (oomrec.staleness.content), mended case by case on real repositories: raw and
patch entries paired by path, an empty side proving nothing, hunks matched near their own place,
edits beside the fix and CRLF still lifting, renames followed, replace refs read as git shows
them. Where the tree cannot say, the record applies (unknown); where it can, it lifts."""

from __future__ import annotations

import os

import pytest

from oomrec.staleness.verdict import Status
from tests.gitrepo import Repo
from tests.test_stale_content import AFTER, BEFORE, TRAILER, verdict

FIX = f"Chunk the prefill\n\n{TRAILER}\n"


@pytest.fixture
def code(repo: Repo) -> tuple[Repo, str]:
    """`repo` with prefill.py before the fix committed (as test_stale_content's fixture)."""
    return repo, repo.commit("add the prefill", {"prefill.py": BEFORE, "other.py": "a\nb\nc\n"})


def _symlink(repo: Repo, name: str, target: str) -> None:
    path = repo.path / name
    path.unlink(missing_ok=True)
    os.symlink(target, path)
    repo.git("add", "--", name)


# -- 1. raw entries and patch blocks paired by path ----------------------------------------------


def test_a_type_change_beside_the_fix_does_not_shift_its_hunks(repo: Repo) -> None:
    """The fix turns conf into a symlink and fixes prefill.py. `diff-tree -p` shows the type
    change as two blocks (a deletion, an addition) for one raw entry: paired by position,
    prefill.py got the symlink's hunk and read as 'pre' on a branch that has prefill.py's fix
    by hand, so a record there was lifted although half the fix (conf) is not there."""
    base = repo.commit("code", {"conf": "x\n", "prefill.py": BEFORE})
    repo.git("checkout", "-q", "-b", "release")
    measured = repo.commit("hand-fixed on release", {"prefill.py": AFTER + "# release\n"})
    repo.git("checkout", "-q", "main")
    _symlink(repo, "conf", "target")
    (repo.path / "prefill.py").write_text(AFTER)
    repo.git("commit", "-q", "-am", FIX)
    got = verdict(repo.path, measured)
    assert got.status == Status.UNKNOWN, str(got)
    assert "its prefill.py has the fix's change and its conf does not" in got.reason
    # The plain case still lifts: the symlink is proved by its blob.
    assert verdict(repo.path, base).status == Status.LIFTED


def test_a_regular_file_with_a_symlinks_bytes_is_not_the_symlink(repo: Repo) -> None:
    """The fix made conf a symlink; a later commit put back a regular file whose bytes are the
    link's target. Its blob id is the link's, but what runs is not: undecided."""
    pre = repo.commit("code", {"conf": "x\n"})
    _symlink(repo, "conf", "target")
    repo.git("commit", "-q", "-m", FIX)
    assert verdict(repo.path, pre).status == Status.LIFTED
    (repo.path / "conf").unlink()
    (repo.path / "conf").write_bytes(b"target")
    repo.git("add", "conf")
    repo.git("commit", "-q", "-m", "conf is a file again")
    assert repo.git("ls-tree", "HEAD", "conf").split()[2] == repo.git("rev-parse", "HEAD~1:conf")
    got = verdict(repo.path, pre)
    assert got.status == Status.UNKNOWN, str(got)
    assert "conf" in got.reason
