"""The content rule (oomrec.staleness.content), mended case by case on real repositories: raw and
patch entries paired by path, an empty side proving nothing, hunks matched near their own place,
edits beside the fix and CRLF still lifting, renames followed, replace refs read as git shows
them. Where the tree cannot say, the record applies (unknown); where it can, it lifts."""

from __future__ import annotations

import os

import pytest

from oomrec.staleness.verdict import Status
from tests.gitrepo import Repo
from tests.test_stale_content import AFTER, BEFORE, TRAILER, fix, verdict

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


# -- 2. an empty new side proves nothing -------------------------------------------------------


def test_an_emptied_file_is_judged_by_its_old_lines_absence(repo: Repo) -> None:
    """The fix emptied limits.py (its hunk's new side is empty: found in any tree). A later
    commit put the old table back with one value changed: the old lines are there, so the fix's
    change is not proved."""
    limits = "BATCH = 64\nPREFETCH = True\nWORKERS = 8\n"
    pre = repo.commit("code", {"limits.py": limits, "prefill.py": BEFORE})
    repo.commit(FIX, {"limits.py": "", "prefill.py": AFTER})
    assert verdict(repo.path, pre).status == Status.LIFTED
    repo.commit("the table again", {"limits.py": limits.replace("64", "96")})
    got = verdict(repo.path, pre)
    assert got.status == Status.UNKNOWN, str(got)
    assert "its limits.py holds neither" in got.reason
    # A file that holds none of the old lines: the emptied table is gone, the fix is there.
    repo.commit("another table", {"limits.py": "MAX_TOKENS = 4096\n"})
    assert verdict(repo.path, pre).status == Status.LIFTED


# -- 3. hunks matched near their own place -----------------------------------------------------


def _body(name: str, call: str) -> str:
    return (
        f"def {name}(tokens):\n    x = 1\n    y = 2\n    z = 3\n    return {call}\n"
        "    u = 4\n    v = 5\n    w = 6\n"
    )


def test_the_fixs_lines_elsewhere_in_the_file_prove_nothing(repo: Repo) -> None:
    """The fix changes `a`'s call near the top; later `a` is rewritten (neither side) and `b`,
    far below with the same body, gets the fixed call. Found at any offset, `b`'s lines read as
    the fix: lifted. Near its place, the fix is not there: unknown."""
    filler = "".join(f"step_{n} = {n}\n" for n in range(600))

    def text(a: str, b: str) -> str:
        return _body("a", a) + filler + _body("b", b)

    pre = repo.commit("code", {"model.py": text("run(tokens)", "run(tokens)")})
    repo.commit(FIX, {"model.py": text("run_chunked(tokens, 512)", "run(tokens)")})
    assert verdict(repo.path, pre).status == Status.LIFTED
    repo.commit("rework", {"model.py": text("run_streamed(tokens)", "run_chunked(tokens, 512)")})
    got = verdict(repo.path, pre)
    assert got.status == Status.UNKNOWN, str(got)
    assert "its model.py holds neither" in got.reason


# -- 4. an edit beside the fix: the changed lines decide ---------------------------------------


def test_an_edit_within_the_context_of_the_fix_still_lifts(code: tuple[Repo, str]) -> None:
    """A later edit of the line just above the fix (within git's three lines of context) broke
    the whole-hunk match: the record was kept. The added line is at its place and the removed
    one gone: lifted. A hand revert with the same edit is absent: the record applies."""
    repo, pre = code
    fix(repo)
    repo.commit("tweak", {"prefill.py": AFTER.replace("y = 2", "y = 3")})
    got = verdict(repo.path, pre)
    assert got.status == Status.LIFTED, str(got)
    repo.commit("back out by hand", {"prefill.py": BEFORE.replace("y = 2", "y = 3")})
    assert verdict(repo.path, pre).status == Status.APPLIES


# -- 5. CRLF normalised after the fix ----------------------------------------------------------


def test_line_endings_normalised_after_the_fix_still_lift(code: tuple[Repo, str]) -> None:
    repo, pre = code
    fix(repo)
    repo.commit("CRLF", {"prefill.py": AFTER.replace("\n", "\r\n")})
    assert b"\r\n" in (repo.path / "prefill.py").read_bytes()
    assert verdict(repo.path, pre).status == Status.LIFTED
    repo.commit("CRLF, reverted by hand", {"prefill.py": BEFORE.replace("\n", "\r\n")})
    assert verdict(repo.path, pre).status == Status.APPLIES


# -- 6. renames followed -----------------------------------------------------------------------


def test_a_fixed_file_renamed_later_still_lifts(code: tuple[Repo, str]) -> None:
    repo, pre = code
    fix(repo)
    repo.git("mv", "prefill.py", "chunked_prefill.py")
    repo.git("commit", "-q", "-m", "rename the prefill")
    assert verdict(repo.path, pre).status == Status.LIFTED
    # The renamed file with the fix backed out by hand: absent, the record applies.
    repo.commit("back out by hand", {"chunked_prefill.py": BEFORE})
    assert verdict(repo.path, pre).status == Status.APPLIES


# -- 7. replace refs: objects read as git shows them -------------------------------------------


def test_a_replaced_blob_is_judged_by_what_git_shows(code: tuple[Repo, str]) -> None:
    """`git replace <fixed blob> <pre-fix blob>`: HEAD's tree still names the fixed blob, but
    git shows (and checks out) the pre-fix content. Judged by ids it lifted; the record
    applies."""
    repo, pre = code
    fix(repo)
    assert verdict(repo.path, pre).status == Status.LIFTED
    repo.git(
        "replace",
        repo.git("rev-parse", "HEAD:prefill.py"),
        repo.git("rev-parse", f"{pre}:prefill.py"),
    )
    assert repo.git("show", "HEAD:prefill.py") + "\n" == BEFORE
    got = verdict(repo.path, pre)
    assert got.applies, str(got)
    assert "prefill.py" in got.reason
    # The same with the replace ref packed (read from packed-refs, not a loose file).
    repo.git("pack-refs", "--all")
    assert not (repo.path / ".git" / "refs" / "replace").exists() or not any(
        (repo.path / ".git" / "refs" / "replace").iterdir()
    )
    assert verdict(repo.path, pre).applies
    # Without the replace ref it lifts again.
    repo.git("replace", "-d", repo.git("rev-parse", "HEAD:prefill.py"))
    assert verdict(repo.path, pre).status == Status.LIFTED
    # The commit-level variant: HEAD replaced by a commit with the pre-fix tree on the fix.
    repo.commit("later work")
    stand_in = repo.git("commit-tree", f"{pre}^{{tree}}", "-p", "HEAD~1", "-m", "stand-in")
    repo.git("replace", "HEAD", stand_in)
    assert repo.git("show", "HEAD:prefill.py") + "\n" == BEFORE
    assert verdict(repo.path, pre).applies
