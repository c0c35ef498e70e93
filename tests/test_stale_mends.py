"""Mends of the staleness verdict (issue 39), each on a real repository made by the git commands
named: the work tree judged by `git status` with nothing hidden, partial copies of a fix, a
verdict that does not depend on which other records are judged, and `git am`'s hook.

Safety rule throughout: when git cannot show that the fix's whole change is what runs, the
record measured before the fix keeps applying (unknown, naming the file or the cause)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core.records import OomRecord
from oomrec.staleness.verdict import History, Judgement, Status
from oomrec.store import gitrepo as gitutil
from tests import test_stale_content
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.profiles import examples
from tests.test_hooks import INSTALLED, flag, oomrec_lines, run_git, with_records
from tests.test_stale_content import AFTER, BEFORE, MODEL, TRAILER, fix, verdict

Cli = Callable[..., CliResult]
# The fixture: `repo` with prefill.py before the fix committed, as (repo, that commit).
code = test_stale_content.code

# -- the work tree: `git status` with nothing hidden, index flags make a path undecided ---------


def _undone(got: Judgement, path: str) -> None:
    assert got.status == Status.UNKNOWN, got
    assert path in got.reason


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_an_index_flag_hiding_a_local_undo_keeps_the_record(
    code: tuple[Repo, str], flag: str
) -> None:
    repo, pre = code
    fix(repo)
    repo.git("update-index", flag, "prefill.py")
    (repo.path / "prefill.py").write_text(BEFORE)
    # git itself no longer sees the undo.
    assert repo.git("diff", "--name-only", "HEAD") == ""
    got = verdict(repo.path, pre)
    _undone(got, "prefill.py")
    assert flag.removeprefix("--") in got.reason


def test_core_ignore_stat_hiding_a_local_undo_keeps_the_record(code: tuple[Repo, str]) -> None:
    repo, pre = code
    repo.git("config", "core.ignoreStat", "true")
    fix(repo)
    (repo.path / "prefill.py").write_text(BEFORE)
    assert repo.git("diff", "--name-only", "HEAD") == ""
    _undone(verdict(repo.path, pre), "prefill.py")


def test_a_sparse_checkout_excluding_the_fixed_file_keeps_the_record(repo: Repo) -> None:
    pre = repo.commit("add the model", {"model/prefill.py": BEFORE, "docs/x.md": "x\n"})
    repo.commit(f"Chunk the prefill\n\n{TRAILER}\n", {"model/prefill.py": AFTER})
    assert verdict(repo.path, pre).status == Status.LIFTED
    repo.git("sparse-checkout", "set", "docs")
    # The work tree lacks the fixed file, and git says nothing changed.
    assert not (repo.path / "model" / "prefill.py").exists()
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    _undone(verdict(repo.path, pre), "model/prefill.py")


@pytest.mark.parametrize("ignored", [False, True])
def test_an_untracked_file_back_where_the_fix_deleted_it_keeps_the_record(
    code: tuple[Repo, str], ignored: bool
) -> None:
    repo, pre = code
    repo.git("rm", "-q", "other.py")
    repo.git("commit", "-q", "-m", f"Drop the eager path\n\n{TRAILER}\n")
    assert verdict(repo.path, pre).status == Status.LIFTED
    if ignored:
        (repo.path / ".git" / "info" / "exclude").write_text("other.py\n")
    (repo.path / "other.py").write_text("a\nb\nc\n")
    assert repo.git("diff", "--name-only", "HEAD") == ""
    _undone(verdict(repo.path, pre), "other.py")


def _with_submodule(repo: Repo, tmp_path: Path) -> tuple[str, str, str]:
    """A submodule `sub` whose bump is the fix: (the commit before it, the old and the new
    submodule commits)."""
    lib = Repo(tmp_path / "lib")
    old = lib.commit("lib v1", {"lib.py": "v1\n"})
    new = lib.commit("lib v2: chunked", {"lib.py": "v2\n"})
    lib.git("checkout", "-q", old)
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib.path), "sub")
    repo.git("commit", "-q", "-m", "add the lib")
    pre = repo.head()
    repo.git("-C", "sub", "checkout", "-q", new)
    repo.git("add", "sub")
    repo.git("commit", "-q", "-m", f"Bump the lib to its chunked prefill\n\n{TRAILER}\n")
    return pre, old, new


@pytest.mark.parametrize("how", ["submodule.sub.ignore=all", "diff.ignoreSubmodules=all"])
def test_a_submodule_hidden_by_config_and_checked_out_back_keeps_the_record(
    repo: Repo, tmp_path: Path, how: str
) -> None:
    pre, old, _new = _with_submodule(repo, tmp_path)
    assert verdict(repo.path, pre).status == Status.LIFTED
    name, _, value = how.partition("=")
    repo.git("config", name, value)
    repo.git("-C", "sub", "checkout", "-q", old)
    assert repo.git("diff", "--name-only", "HEAD") == ""
    _undone(verdict(repo.path, pre), "sub")


def test_a_csv_the_code_reads_is_code_but_oomrecs_own_outputs_are_not(repo: Repo) -> None:
    pre = repo.commit(
        "tuning", {"tuning/chunks.csv": "model,chunk\ngemma,0\n", "prefill.py": BEFORE}
    )
    outputs = [
        "benchmarks/cuda_h200_longprompt_2026-07-03.csv",
        "benchmarks/cuda_h200_2026-07-03_oomrec-run.csv",
        "benchmarks/cuda_h200_longprompt_2026-07-03.csv.oomrec.json",
        "benchmarks/cuda_h200_longprompt_2026-07-03.csv.oomrec.json.journal",
    ]
    repo.commit(
        f"Chunk the prefill\n\n{TRAILER}\n",
        {
            "tuning/chunks.csv": "model,chunk\ngemma,512\n",
            "prefill.py": AFTER,
            **dict.fromkeys(outputs, "row\n"),
        },
    )
    assert verdict(repo.path, pre).status == Status.LIFTED
    # The next sweep rewrites its own outputs: that undoes no fix.
    for path in outputs:
        (repo.path / path).write_text("another row\n")
    assert verdict(repo.path, pre).status == Status.LIFTED
    (repo.path / "tuning" / "chunks.csv").write_text("model,chunk\ngemma,0\n")
    _undone(verdict(repo.path, pre), "tuning/chunks.csv")


def judge(path: Path, commits: list[str], at: str = "HEAD") -> list[Judgement]:
    repo = gitutil.open_repo(path)
    assert repo is not None
    history = History(repo, "OOM-Fix", commits, at=(at,))
    return history.judge([OomRecord(MODEL, 8192, "2026-07-03", c) for c in commits], at=at)


# -- hooks: `git am` runs post-applypatch, not post-commit --------------------------------------


def test_git_am_of_a_fix_patch_is_flagged_once(cli: Cli, repo: Repo, tmp_path: Path) -> None:
    with_records(repo, repo.commit("add the prefill", {"prefill.py": BEFORE}))
    assert cli("hook", "install").stdout == INSTALLED
    assert (repo.path / ".git" / "hooks" / "post-applypatch").exists()
    repo.git("checkout", "-q", "-b", "topic")
    repo.commit("Prepare the prefill", {"other.py": "a\n"})
    repo.commit(f"Chunk the prefill\n\n{TRAILER}\n", {"prefill.py": AFTER})
    patches = tmp_path / "patches"
    repo.git("format-patch", "-q", "-2", "-o", str(patches))
    repo.git("checkout", "-q", "main")
    done = run_git(repo.path, "am", "-q", *sorted(str(p) for p in patches.iterdir()))
    # One line for the whole `git am` (two patches), naming the applied copy of the fix.
    assert oomrec_lines(done) == [flag(repo.head(), 2)]
    # A patch with no fix says nothing.
    repo.git("checkout", "-q", "topic")
    repo.commit("Tidy up", {"notes.txt": "x\n"})
    repo.git("format-patch", "-q", "-1", "-o", str(tmp_path / "plain"))
    repo.git("checkout", "-q", "main")
    done = run_git(repo.path, "am", "-q", *(str(p) for p in (tmp_path / "plain").iterdir()))
    assert oomrec_lines(done) == []


# -- partial copies: a copy counts only if it carries every file of the fix ---------------------

OTHER_AFTER = "a\nB\nc\n"
ID_MESSAGE = f"Chunk the prefill\n\n{TRAILER}\nOOM-Fix-Id: chunked-prefill\n"


def _two_file_fix(repo: Repo, message: str = f"Chunk the prefill\n\n{TRAILER}\n") -> str:
    return repo.commit(message, {"prefill.py": AFTER, "other.py": OTHER_AFTER})


def _on_release(repo: Repo, pre: str) -> str:
    """A release branch off `pre`, checked out, with a commit of its own: that commit."""
    repo.git("checkout", "-q", "-b", "release", pre)
    return repo.commit("release work")


def _kept(got: Judgement, path: str = "other.py") -> None:
    assert got.status == Status.UNKNOWN, got
    assert "carries only part of the fix" in got.reason
    assert path in got.reason


@pytest.mark.parametrize("how", ["whole", "amend", "no-commit"])
def test_a_pick_with_one_file_put_back_is_partial(code: tuple[Repo, str], how: str) -> None:
    repo, pre = code
    f = _two_file_fix(repo)
    assert verdict(repo.path, pre).status == Status.LIFTED
    rel = _on_release(repo, pre)
    if how == "no-commit":
        repo.git("cherry-pick", "-n", f)
        repo.git("restore", "--staged", "--worktree", "other.py")
        message = repo.git("log", "-1", "--format=%B", f)
        repo.git("commit", "-q", "-m", f"{message}\n(cherry picked from commit {f})")
    else:
        repo.git("cherry-pick", "-x", f)
        if how == "amend":
            repo.git("checkout", "HEAD~1", "--", "other.py")
            repo.git("commit", "-q", "--amend", "--no-edit")
    assert f"cherry picked from commit {f}" in repo.git("log", "-1", "--format=%B")
    if how == "whole":
        assert verdict(repo.path, rel).status == Status.LIFTED
        return
    assert repo.git("diff", "--name-only", "HEAD~1") == "prefill.py"
    _kept(verdict(repo.path, rel))
    _kept(verdict(repo.path, pre))
    # Judged with records on main (the fix's whole change in their history) too.
    assert [j.status for j in judge(repo.path, [rel, pre, f])] == [Status.UNKNOWN] * 2 + [
        Status.APPLIES
    ]
    # On main the whole fix is in: still lifted there.
    repo.git("checkout", "-q", "main")
    assert verdict(repo.path, pre).status == Status.LIFTED


def test_a_partial_backport_that_copied_the_fix_id_is_partial(code: tuple[Repo, str]) -> None:
    repo, pre = code
    _two_file_fix(repo, ID_MESSAGE)
    rel = _on_release(repo, pre)
    repo.commit(ID_MESSAGE, {"prefill.py": AFTER})
    _kept(verdict(repo.path, rel))
    repo.git("checkout", "-q", "main")
    assert verdict(repo.path, pre).status == Status.LIFTED


def test_a_fix_split_over_two_commits_with_only_part_two_picked(code: tuple[Repo, str]) -> None:
    repo, pre = code
    repo.commit(ID_MESSAGE.replace("the prefill", "the prefill, 1/2"), {"prefill.py": AFTER})
    part2 = repo.commit(
        ID_MESSAGE.replace("the prefill", "the prefill, 2/2"), {"other.py": OTHER_AFTER}
    )
    assert verdict(repo.path, pre).status == Status.LIFTED
    rel = _on_release(repo, pre)
    repo.git("cherry-pick", "-x", part2)
    _kept(verdict(repo.path, rel), "prefill.py")
    _kept(verdict(repo.path, pre), "prefill.py")


def test_the_fixs_whole_message_on_a_commit_that_changes_another_file(
    code: tuple[Repo, str],
) -> None:
    repo, pre = code
    fix(repo, ID_MESSAGE)
    rel = _on_release(repo, pre)
    repo.commit(ID_MESSAGE, {"other.py": OTHER_AFTER})
    _kept(verdict(repo.path, rel), "prefill.py")


def test_a_partial_pick_after_a_revert_of_the_fix_is_partial(code: tuple[Repo, str]) -> None:
    """The copies a revert cancelled do not make up for what the newest copy lacks; a rewrite of
    one file that keeps the fix (its fix id) on top of the whole fix still lifts."""
    repo, pre = code
    f = _two_file_fix(repo, ID_MESSAGE)
    rewritten = AFTER.replace("run_chunked(tokens, 512)", "run_chunked(tokens, size=512)")
    repo.commit("Tidy the prefill\n\nOOM-Fix-Id: chunked-prefill\n", {"prefill.py": rewritten})
    assert verdict(repo.path, pre).status == Status.LIFTED
    repo.git("reset", "-q", "--hard", f)
    repo.git("revert", "--no-edit", f)
    assert verdict(repo.path, pre).status == Status.APPLIES
    repo.git("cherry-pick", "-x", f)
    repo.git("checkout", "HEAD~1", "--", "other.py")
    repo.git("commit", "-q", "--amend", "--no-edit")
    _kept(verdict(repo.path, pre))


# -- a record's verdict does not depend on which other records are judged ----------------------


def _alone_and_together(path: Path, commits: list[str]) -> None:
    together = judge(path, commits)
    for commit, got in zip(commits, together, strict=True):
        alone = judge(path, [commit])[0]
        assert (alone.status, alone.reason) == (got.status, got.reason), commit


def test_a_copy_on_another_records_branch_does_not_change_a_verdict(code: tuple[Repo, str]) -> None:
    """`check` judges one model's records, the sweep all of them: another record whose commit
    sits after a copy of the fix on a side branch (the same OOM-Fix-Id on a commit that changes
    another file, absent from HEAD's tree) must not change the verdict of a record on main."""
    repo, pre = code
    message = f"Chunk the prefill\n\n{TRAILER}\nOOM-Fix-Id: chunked-prefill\n"
    repo.git("checkout", "-q", "-b", "side")
    repo.commit(message, {"other.py": "a\nB\nc\n"})
    side = repo.commit("side work")
    repo.git("checkout", "-q", "main")
    fix(repo, message)
    after = repo.commit("main work")
    _alone_and_together(repo.path, [pre, side, after])
    # And a pick of the fix onto the side branch, then its revert there.
    repo.git("checkout", "-q", "side")
    repo.git("cherry-pick", "-x", "main~1")
    repo.git("revert", "--no-edit", "HEAD")
    reverted = repo.head()
    repo.git("checkout", "-q", "main")
    _alone_and_together(repo.path, [pre, side, reverted, after])


BRANCH_OPS = st.lists(
    st.tuples(
        st.sampled_from(["fix", "pick", "partial", "id-copy", "revert", "plain", "switch"]),
        st.integers(0, 1),
    ),
    min_size=2,
    max_size=8,
)


@settings(max_examples=examples(8), deadline=None)
@given(ops=BRANCH_OPS)
def test_judged_alone_or_together_a_record_gets_one_verdict(ops: list[tuple[str, int]]) -> None:
    """Over generated histories on two branches (fixes of two files, whole and partial picks,
    id copies changing another file, reverts), each record judged alone gets the verdict it
    gets judged with all the others, at either branch. Every history starts with an id copy
    on the side branch and the fix on main (the case that split check from the sweep)."""
    ops = [("switch", 0), ("id-copy", 0), ("plain", 0), ("switch", 0), ("fix", 0), *ops]
    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo(Path(tmp) / "repo")
        base = repo.commit("code", {"prefill.py": BEFORE, "other.py": "a\nb\nc\n"})
        repo.git("branch", "side")
        commits, fixes, branch = [base], [], "main"
        for kind, i in ops:
            message = f"Fix {i}\n\n{TRAILER}\nOOM-Fix-Id: fix-{i}\n"
            if kind == "fix":
                repo.commit(message, {"prefill.py": AFTER + "#" * len(commits), "other.py": "B\n"})
                fixes.append(repo.head())
            elif kind in ("pick", "partial") and fixes:
                done = subprocess.run(
                    ["git", "cherry-pick", "-x", "--strategy-option=theirs", fixes[-1]],
                    cwd=repo.path,
                    capture_output=True,
                    check=False,
                )
                if done.returncode != 0:
                    repo.git("cherry-pick", "--abort")
                elif kind == "partial":
                    repo.git("checkout", "HEAD~1", "--", "other.py")
                    repo.git("commit", "-q", "--amend", "--no-edit", "--allow-empty")
            elif kind == "id-copy":
                repo.commit(message, {f"notes{i}.txt": f"{len(commits)}\n"})
            elif kind == "revert" and fixes:
                subprocess.run(
                    ["git", "revert", "--no-edit", "-X", "theirs", fixes.pop()],
                    cwd=repo.path,
                    capture_output=True,
                    check=False,
                )
                subprocess.run(["git", "revert", "--abort"], cwd=repo.path, capture_output=True)
            elif kind == "switch":
                branch = "side" if branch == "main" else "main"
                repo.git("checkout", "-q", branch)
            else:
                repo.commit(f"plain {len(commits)}")
            commits.append(repo.head())
        chosen = list(dict.fromkeys(commits))
        for head in ("main", "side"):
            repo.git("checkout", "-q", head)
            _alone_and_together(repo.path, chosen)
