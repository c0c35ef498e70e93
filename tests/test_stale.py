"""The staleness rule (oomrec.staleness.verdict) on real repositories: which fixes are in effect at
HEAD, their copies (picks, amends, rebases, fix ids), reverts, and every way git cannot say."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oomrec.core.errors import OomrecError
from oomrec.core.records import OomRecord
from oomrec.staleness.verdict import History, Status
from oomrec.store import gitrepo as gitutil
from tests.gitrepo import FIX_MESSAGE, Repo, git
from tests.gitrepo import History as Hist


def judge(path: Path, records: list[tuple[str, str]], at: str = "HEAD") -> list[str]:
    """Each (model, commit) record's judgement at `at`, as text."""
    repo = gitutil.open_repo(path)
    assert repo is not None
    recs = [OomRecord(model, 8192, "2026-07-03", commit) for model, commit in records]
    history = History(repo, "OOM-Fix", [r.commit for r in recs], at=(at,))
    return [str(j) for j in history.judge(recs, at=at)]


def status(path: Path, model: str, commit: str) -> Status:
    repo = gitutil.open_repo(path)
    assert repo is not None
    rec = OomRecord(model, 8192, "2026-07-03", commit)
    return History(repo, "OOM-Fix", [commit]).judge([rec])[0].status


def test_linear_history_and_branches(history: Hist) -> None:
    h = history
    lifted = f"lifted, unverified: fix {h.fix[:7]} (Chunk the prefill)"
    got = judge(
        h.repo.path,
        [("gemma-4-31b", c) for c in (h.base, h.pre, h.fix, h.post, h.side, h.feat, h.merged)],
    )
    assert got == [lifted, lifted, "applies", "applies", lifted, lifted, "applies"]


def test_only_models_the_fix_globs_match_are_judged(repo: Repo) -> None:
    pre = repo.commit("pre")
    f1 = repo.commit("gemma fix\n\nOOM-Fix: gemma-4-*\n")
    mid = repo.commit("between")
    repo.commit("qwen fix\n\nOOM-Fix: qwen3-*\n")
    got = judge(
        repo.path,
        [("gemma-4-31b", mid), ("llama-3", pre), ("qwen3-8b", mid), ("gemma-4-31b", pre)],
    )
    assert got[0] == "applies"
    assert got[1] == "applies"
    assert got[2].startswith("lifted, unverified: fix")
    assert got[3] == f"lifted, unverified: fix {f1[:7]} (gemma fix)"


def test_a_reverted_fix_is_not_in_effect_and_a_revert_of_the_revert_restores_it(
    history: Hist,
) -> None:
    h = history
    r = h.repo
    r.git("revert", "--no-edit", h.fix)
    assert status(r.path, "gemma-4-31b", h.pre) == Status.APPLIES
    revert = r.head()
    r.git("revert", "--no-edit", revert)
    assert status(r.path, "gemma-4-31b", h.pre) == Status.LIFTED
    # A record measured after the revert (fix not in effect there) is lifted by the restore.
    assert status(r.path, "gemma-4-31b", revert) == Status.LIFTED
    r.git("revert", "--no-edit", "HEAD")
    assert status(r.path, "gemma-4-31b", h.pre) == Status.APPLIES


def test_a_cherry_pick_is_a_copy_of_the_fix(history: Hist) -> None:
    h = history
    r = h.repo
    r.git("checkout", "-q", "side")
    r.git("cherry-pick", "-x", h.fix)
    picked = r.commit("release: after the pick")
    r.git("checkout", "-q", "main")
    assert status(r.path, "gemma-4-31b", picked) == Status.APPLIES
    assert status(r.path, "gemma-4-31b", h.side) == Status.LIFTED
    # Judged on the release branch, the pick is the fix in effect there.
    r.git("checkout", "-q", "side")
    assert judge(r.path, [("gemma-4-31b", h.pre)])[0].startswith(
        f"lifted, unverified: fix {git(r.path, 'rev-parse', 'HEAD~1')[:7]}"
    )


def test_a_clean_pick_without_x_is_a_copy_by_patch_id(history: Hist) -> None:
    h = history
    r = h.repo
    r.git("checkout", "-q", "side")
    r.git("cherry-pick", h.fix)
    picked = r.head()
    r.git("checkout", "-q", "main")
    assert status(r.path, "gemma-4-31b", picked) == Status.APPLIES


def test_an_amended_or_reworded_fix_is_the_same_fix(repo: Repo) -> None:
    pre = repo.commit("pre")
    old = repo.commit("first try\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    repo.git("commit", "-q", "--amend", "-m", "Chunk the prefill (reworded)\n\nOOM-Fix: gemma-4-*")
    assert repo.head() != old
    assert status(repo.path, "gemma-4-31b", old) == Status.APPLIES
    assert status(repo.path, "gemma-4-31b", pre) == Status.LIFTED


def test_an_interactive_rebase_reword_keeps_the_fix(repo: Repo) -> None:
    pre = repo.commit("pre")
    old = repo.commit(FIX_MESSAGE, {"prefill.py": "chunked\n"})
    repo.commit("after")
    env = {**os.environ, "GIT_SEQUENCE_EDITOR": "sed -i -e '1s/^pick/reword/'"}
    env["GIT_EDITOR"] = "sed -i -e '1s/.*/Chunk the prefill, reworded/'"
    import subprocess

    subprocess.run(["git", "rebase", "-q", "-i", pre], cwd=repo.path, env=env, check=True)
    assert git(repo.path, "log", "-1", "--format=%s", "HEAD~1") == "Chunk the prefill, reworded"
    assert status(repo.path, "gemma-4-31b", old) == Status.APPLIES
    assert status(repo.path, "gemma-4-31b", pre) == Status.LIFTED


def test_a_fix_id_names_a_fix_across_a_conflicted_pick(repo: Repo) -> None:
    base = repo.commit("base", {"prefill.py": "v1\n"})
    repo.git("checkout", "-q", "-b", "release")
    repo.commit("release change", {"prefill.py": "release v1\n"})
    repo.git("checkout", "-q", "main")
    fix = repo.commit(
        "Chunk the prefill\n\nOOM-Fix: gemma-4-*\nOOM-Fix-Id: chunked-prefill\n",
        {"prefill.py": "chunked\n"},
    )
    repo.git("checkout", "-q", "release")
    # A different patch (the conflict was resolved by hand), the same fix by its id.
    repo.commit(
        "Chunk the prefill on release\n\nOOM-Fix-Id: chunked-prefill\n",
        {"prefill.py": "release chunked\n"},
    )
    on_release = repo.commit("release: after")
    repo.git("checkout", "-q", "main")
    assert fix
    assert status(repo.path, "gemma-4-31b", on_release) == Status.APPLIES
    assert status(repo.path, "gemma-4-31b", base) == Status.LIFTED


def test_judged_where_the_checkout_is_not_where_prune_ran(history: Hist) -> None:
    h = history
    assert status(h.repo.path, "gemma-4-31b", h.pre) == Status.LIFTED
    h.repo.git("checkout", "-q", "side")
    assert status(h.repo.path, "gemma-4-31b", h.pre) == Status.APPLIES


def test_dirty_and_unknown_commits_apply_with_the_reason(history: Hist) -> None:
    h = history
    tree = h.repo.git("rev-parse", "HEAD^{tree}")
    got = judge(
        h.repo.path,
        [
            ("gemma-4-31b", f"{h.pre[:8]}-dirty"),
            ("gemma-4-31b", f"{h.post[:8]}-dirty"),
            ("gemma-4-31b", "unknown"),
            ("gemma-4-31b", "HEAD"),
            ("gemma-4-31b", "deadbeefdeadbeef"),
            ("gemma-4-31b", tree),
        ],
    )
    assert got[0].startswith(f"applies (unknown: {h.pre[:8]}-dirty was measured on uncommitted")
    assert got[1] == "applies"
    assert got[2] == "applies (unknown: no commit recorded)"
    assert got[3] == "applies (unknown: 'HEAD' is not a commit SHA)"
    assert got[4] == (
        "applies (unknown: commit deadbeefdeadbeef not in this repository "
        "(rebased away or from another clone?))"
    )
    assert got[5] == f"applies (unknown: {tree} is a tree, not a commit)"


def test_a_short_sha_that_is_also_a_ref_name_means_the_commit(history: Hist) -> None:
    h = history
    short = h.pre[:8]
    # A tag and a branch named like the record's short SHA, pointing at a commit with the fix.
    h.repo.git("tag", short, h.post)
    h.repo.git("branch", h.pre[:9], h.post)
    assert status(h.repo.path, "gemma-4-31b", short) == Status.LIFTED
    assert status(h.repo.path, "gemma-4-31b", h.pre[:9]) == Status.LIFTED


@pytest.mark.parametrize(
    "config",
    [
        ["grep.patternType=fixed"],
        ["grep.patternType=perl"],
        ["log.showSignature=true", "gpg.program=false"],
        ["core.abbrev=4", "diff.noprefix=true", "log.decorate=full"],
        ["trailer.separators=#"],
        ["i18n.logOutputEncoding=ISO-8859-1"],
    ],
)
def test_hostile_git_config_changes_nothing(history: Hist, config: list[str]) -> None:
    h = history
    r = h.repo
    r.git("revert", "--no-edit", h.fix)
    r.git("revert", "--no-edit", "HEAD")
    r.git("checkout", "-q", "side")
    r.git("cherry-pick", "-x", h.fix)
    picked = r.commit("after pick")
    r.git("checkout", "-q", "main")
    for item in config:
        name, _, value = item.partition("=")
        r.git("config", name, value)
    got = judge(r.path, [("gemma-4-31b", h.pre), ("gemma-4-31b", picked), ("x", h.pre)])
    assert got[0].startswith("lifted, unverified: fix")
    assert got[1:] == ["applies", "applies"]


def test_shallow_clone_proves_applies_never_lifted_beyond_the_cut(
    tmp_path: Path, history: Hist
) -> None:
    h = history
    for _ in range(3):
        h.repo.commit("more")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{h.repo.path}", str(clone))
    # The fix is below the cut: no fix is in effect as far as the clone can see.
    assert status(clone, "gemma-4-31b", h.pre) == Status.APPLIES
    git(clone, "fetch", "-q", "--deepen", "3")
    # The fix is visible now, pre is not fetched yet: git cannot say.
    deep = judge(clone, [("gemma-4-31b", h.pre), ("gemma-4-31b", h.post)])
    assert deep[0].startswith(f"applies (unknown: shallow clone: commit {h.pre} is not in")
    assert deep[1] == "applies"
    git(clone, "fetch", "-q", "--unshallow")
    assert status(clone, "gemma-4-31b", h.pre) == Status.LIFTED


def test_no_history_at_all_is_an_error_line(tmp_path: Path) -> None:
    empty = Repo(tmp_path / "empty")
    repo = gitutil.open_repo(empty.path)
    assert repo is not None
    with pytest.raises(OomrecError, match="is not a commit"):
        History(repo, "OOM-Fix", ["abc1234"])


def test_reverting_the_merge_that_brought_a_fix_cancels_it(repo: Repo) -> None:
    pre = repo.commit("pre")
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("Chunk the prefill\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main work")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge feature", "feature")
    merge = repo.head()
    assert status(repo.path, "gemma-4-31b", pre) == Status.LIFTED
    repo.git("revert", "--no-edit", "-m", "1", merge)
    assert status(repo.path, "gemma-4-31b", pre) == Status.APPLIES
    repo.git("revert", "--no-edit", "HEAD")
    assert status(repo.path, "gemma-4-31b", pre) == Status.LIFTED


def test_a_partial_clone_judges_like_a_full_one(tmp_path: Path, history: Hist) -> None:
    h = history
    r = h.repo
    r.git("checkout", "-q", "side")
    r.git("cherry-pick", h.fix)
    picked = r.head()
    r.git("checkout", "-q", "main")
    r.git("config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{r.path}", str(clone))
    git(clone, "fetch", "-q", "origin", "side:side")
    assert status(clone, "gemma-4-31b", picked) == Status.APPLIES
    assert status(clone, "gemma-4-31b", h.pre) == Status.LIFTED


def test_a_fix_in_a_linked_worktree_is_judged_from_there(tmp_path: Path, history: Hist) -> None:
    h = history
    other = tmp_path / "wt"
    h.repo.git("worktree", "add", "-q", str(other), "side")
    assert status(other, "gemma-4-31b", h.pre) == Status.APPLIES
    assert status(h.repo.path, "gemma-4-31b", h.pre) == Status.LIFTED


def test_a_partial_clone_whose_remote_is_gone_lifts_nothing(tmp_path: Path, history: Hist) -> None:
    h = history
    h.repo.git("config", "uploadpack.allowFilter", "true")
    h.repo.commit("another fix\n\nOOM-Fix: qwen3-*\n", {"other.py": "x\n"})
    clone = tmp_path / "partial"
    git(
        tmp_path,
        "clone",
        "-q",
        "--no-checkout",
        "--filter=blob:none",
        f"file://{h.repo.path}",
        str(clone),
    )
    h.repo.path.rename(tmp_path / "gone")
    got = judge(clone, [("gemma-4-31b", h.pre)])
    assert got[0].startswith("applies (unknown: cannot compare the fixes' patches")


def test_a_shallow_clone_that_cuts_off_a_records_branch_is_judged_not_crashed(
    tmp_path: Path, repo: Repo
) -> None:
    """The record was measured on main; the fix came in from a side branch by a merge; a clone
    of depth 3 cuts both off below them. Git cannot tell whether the fix is in the record's
    history, so the record applies (with the reason), and no view ends in a traceback (it was
    `TypeError: 'frozenset' object is not callable`: an attribute over a method)."""
    import subprocess
    import sys

    repo.commit("c0", {"f": "0\n"})
    repo.commit("c1", {"f": "1\n"})
    measured = repo.commit("measured", {"f": "2\n"})
    repo.git("checkout", "-q", "-b", "side", "HEAD~2")
    repo.commit(FIX_MESSAGE, {"g": "fix\n"})
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-edit", "side")
    repo.commit("after", {"f": "3\n"})
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "3", f"file://{repo.path}", str(clone))
    assert measured in (clone / ".git" / "shallow").read_text()
    (clone / "models" / "gemma-4-31b").mkdir(parents=True)
    (clone / "benchmarks").mkdir()
    (clone / "benchmarks" / ".oom-record").write_text(
        f"gemma-4-31b,2048,2026-12-01,{measured},,benchmarks/x.csv\n"
    )
    for args in (
        ("check", "gemma-4-31b", "4096"),
        ("record", "stale"),
        ("record", "list"),
        ("report", "benchmarks"),
        ("sweep", "--models", "gemma-4-31b", "--lengths", "1024 4096", "--runner", "true",
         "--dry-run"),
    ):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "oomrec", *args],
            cwd=clone, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert "Traceback" not in done.stderr, (args, done.stderr)
        assert done.returncode in (0, 1), (args, done.returncode, done.stderr)
    check = subprocess.run(
        [sys.executable, "-m", "oomrec", "check", "gemma-4-31b", "4096"],
        cwd=clone, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert check.returncode == 1, check.stdout + check.stderr
    stale = subprocess.run(
        [sys.executable, "-m", "oomrec", "record", "stale"],
        cwd=clone, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "shallow clone" in stale.stdout + stale.stderr, stale.stdout + stale.stderr
