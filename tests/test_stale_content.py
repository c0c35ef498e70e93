"""Staleness judged by content (oomrec.staleness.content through oomrec.staleness.verdict), on real
repositories made by real git operations: a fix lifts a record only where its change is in
HEAD's tree and not in the tree the record was measured on. Each case of the "graph says, tree
says" table keeps its record; the plain cases keep lifting."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oomrec.core.records import OomRecord
from oomrec.staleness.verdict import History, Judgement, Status
from oomrec.store import gitrepo as gitutil
from tests.conftest import CliResult
from tests.gitrepo import IDENTITY, Repo, git

Cli = Callable[..., CliResult]
MODEL = "gemma-4-31b"
TRAILER = "OOM-Fix: gemma-4-*"
BEFORE = "def prefill(tokens):\n    x = 1\n    y = 2\n    return run(tokens)\n    # end\n"
AFTER = (
    "def prefill(tokens):\n    x = 1\n    y = 2\n    return run_chunked(tokens, 512)\n    # end\n"
)


def verdict(path: Path, commit: str, at: str = "HEAD", content: bool = True) -> Judgement:
    repo = gitutil.open_repo(path)
    assert repo is not None
    rec = OomRecord(MODEL, 8192, "2026-07-03", commit)
    history = History(repo, "OOM-Fix", [commit], at=(at,), content=content)
    return history.judge([rec], at=at)[0]


@pytest.fixture
def code(repo: Repo) -> tuple[Repo, str]:
    """`repo` with prefill.py before the fix committed: (repo, that commit)."""
    pre = repo.commit("add the prefill", {"prefill.py": BEFORE, "other.py": "a\nb\nc\n"})
    return repo, pre


def fix(repo: Repo, message: str = f"Chunk the prefill\n\n{TRAILER}\n") -> str:
    return repo.commit(message, {"prefill.py": AFTER})


# -- the plain cases still lift ---------------------------------------------------------------


def test_a_record_before_the_fix_on_main_is_lifted(code: tuple[Repo, str]) -> None:
    repo, pre = code
    f = fix(repo)
    after = repo.commit("later work")
    assert verdict(repo.path, pre).status == Status.LIFTED
    assert str(verdict(repo.path, pre)) == f"lifted, unverified: fix {f[:7]} (Chunk the prefill)"
    assert verdict(repo.path, after).status == Status.APPLIES


def test_a_pick_onto_a_release_branch_lifts_there(code: tuple[Repo, str]) -> None:
    repo, pre = code
    repo.git("branch", "release")
    f = fix(repo)
    repo.git("checkout", "-q", "release")
    on_release = repo.commit("release work")
    repo.git("cherry-pick", "-x", f)
    assert verdict(repo.path, on_release).status == Status.LIFTED
    assert verdict(repo.path, pre).status == Status.LIFTED


def test_a_revert_of_the_revert_lifts_again(code: tuple[Repo, str]) -> None:
    repo, pre = code
    fix(repo)
    repo.git("revert", "--no-edit", "HEAD")
    assert verdict(repo.path, pre).status == Status.APPLIES
    repo.git("revert", "--no-edit", "HEAD")
    assert verdict(repo.path, pre).status == Status.LIFTED


# -- the graph says "in effect", the tree says the change is not there -------------------------


def test_merge_s_ours_keeps_the_record_and_says_why(code: tuple[Repo, str]) -> None:
    repo, pre = code
    repo.git("checkout", "-q", "-b", "topic")
    f = fix(repo)
    repo.git("checkout", "-q", "main")
    repo.commit("main work")
    repo.git("merge", "-q", "-s", "ours", "-m", "Merge topic, keeping ours", "topic")
    got = verdict(repo.path, pre)
    assert got.status == Status.APPLIES
    assert str(got) == (
        f"applies (fix {f[:7]} (Chunk the prefill) is in HEAD's history but its change is not "
        "in HEAD's tree (merged with -s ours, or reverted by hand?))"
    )
    # A real merge of the same branch lifts it.
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.git("merge", "-q", "--no-edit", "topic")
    assert verdict(repo.path, pre).status == Status.LIFTED


def test_a_hand_revert_without_gits_line_keeps_the_record(code: tuple[Repo, str]) -> None:
    repo, pre = code
    f = fix(repo)
    repo.git("revert", "-n", f)
    repo.git("commit", "-q", "-m", "Back out the chunked prefill")
    assert verdict(repo.path, pre).status == Status.APPLIES


def test_revert_m_2_takes_out_a_fix_from_the_first_parent_side(code: tuple[Repo, str]) -> None:
    repo, pre = code
    repo.git("checkout", "-q", "-b", "feature")
    fix(repo)
    repo.git("checkout", "-q", "main")
    repo.commit("main work")
    repo.git("checkout", "-q", "feature")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge main into feature", "main")
    merge = repo.head()
    assert verdict(repo.path, pre).status == Status.LIFTED
    repo.git("revert", "--no-edit", "-m", "2", merge)
    assert "reversing" in repo.git("log", "-1", "--format=%B")
    assert verdict(repo.path, pre).status == Status.APPLIES
    # And the graph alone now reads it too: the kept parent is the one the message names.
    assert verdict(repo.path, pre, content=False).applies


def test_a_backported_revert_of_a_backported_fix_keeps_the_record(code: tuple[Repo, str]) -> None:
    repo, _pre = code
    repo.git("branch", "release")
    f = fix(repo)
    repo.commit("main work")
    repo.git("revert", "--no-edit", f)
    revert = repo.head()
    repo.git("checkout", "-q", "release")
    before = repo.commit("release work")
    repo.git("cherry-pick", "-x", f)
    assert verdict(repo.path, before).status == Status.LIFTED
    repo.git("cherry-pick", "-x", revert)
    assert verdict(repo.path, before).status == Status.APPLIES
    # The revert names a SHA that is not in release's history: matched by its patch.
    assert verdict(repo.path, before, content=False).applies


def test_a_rebased_fix_and_revert_pair_keeps_the_record(code: tuple[Repo, str]) -> None:
    repo, pre = code
    repo.git("checkout", "-q", "-b", "topic")
    fix(repo)
    repo.git("revert", "--no-edit", "HEAD")
    repo.git("checkout", "-q", "main")
    repo.commit("main work", {"other.py": "a\nb\nc\nd\n"})
    repo.git("checkout", "-q", "topic")
    repo.git("rebase", "-q", "main")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "--no-edit", "topic")
    assert verdict(repo.path, pre).status == Status.APPLIES
    assert verdict(repo.path, pre, content=False).applies


def test_revert_chain_ending_in_a_second_revert_of_the_fix(code: tuple[Repo, str]) -> None:
    repo, pre = code
    f = fix(repo)
    repo.git("revert", "--no-edit", f)
    repo.git("revert", "--no-edit", "HEAD")
    assert verdict(repo.path, pre).status == Status.LIFTED
    repo.git("revert", "--no-edit", f)
    assert verdict(repo.path, pre).status == Status.APPLIES
    # The newest event decides, not the deepest revert.
    assert verdict(repo.path, pre, content=False).applies


# -- the graph says "absent where measured", the tree says the change was there ----------------


def test_a_conflicted_pick_without_x_does_not_lift_a_record_measured_at_the_fix(
    code: tuple[Repo, str],
) -> None:
    repo, _pre = code
    repo.git("branch", "release")
    f = fix(repo)
    repo.git("checkout", "-q", "release")
    repo.commit("release tweak", {"prefill.py": BEFORE.replace("y = 2", "y = 3")})
    done = subprocess.run(
        ["git", "cherry-pick", f],
        cwd=repo.path,
        env={**os.environ, **IDENTITY},
        capture_output=True,
        check=False,
    )
    assert done.returncode != 0  # the conflict
    (repo.path / "prefill.py").write_text(AFTER.replace("y = 2", "y = 3"))
    repo.git("add", "prefill.py")
    repo.git("-c", "core.editor=true", "cherry-pick", "--continue")
    assert TRAILER in repo.git("log", "-1", "--format=%B")
    assert verdict(repo.path, f).applies
    # A record from release before the copy is lifted by it.
    assert verdict(repo.path, repo.git("rev-parse", "HEAD~1")).status == Status.LIFTED


@pytest.mark.parametrize("how", ["amend", "reword"])
def test_a_trailer_added_later_does_not_lift_records_measured_on_the_fix(
    code: tuple[Repo, str], how: str
) -> None:
    repo, pre = code
    untagged = repo.commit("Chunk the prefill", {"prefill.py": AFTER})
    if how == "amend":
        repo.git("commit", "-q", "--amend", "--no-edit", "--trailer", TRAILER)
    else:
        repo.commit("later work")
        env = {**os.environ, **IDENTITY, "GIT_SEQUENCE_EDITOR": "sed -i -e '1s/^pick/reword/'"}
        env["GIT_EDITOR"] = f"git interpret-trailers --in-place --trailer '{TRAILER}'"
        subprocess.run(["git", "rebase", "-q", "-i", pre], cwd=repo.path, env=env, check=True)
    assert TRAILER in repo.git("log", "--format=%B")
    got = verdict(repo.path, untagged)
    assert got.status == Status.APPLIES
    assert "on code that already had the change of fix" in str(got)
    assert verdict(repo.path, pre).status == Status.LIFTED


def test_a_trailer_on_the_prs_merge_commit(code: tuple[Repo, str]) -> None:
    repo, pre = code
    repo.git("checkout", "-q", "-b", "pr")
    tip = repo.commit("Chunk the prefill", {"prefill.py": AFTER})
    repo.git("checkout", "-q", "main")
    repo.commit("main work")
    repo.git("merge", "-q", "--no-ff", "-m", f"Merge pull request #7\n\n{TRAILER}", "pr")
    assert verdict(repo.path, tip).status == Status.APPLIES
    assert verdict(repo.path, pre).status == Status.LIFTED


def test_a_root_commit_fix_amended_with_the_same_patch(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "rooted")
    root = repo.commit(f"Chunk the prefill\n\n{TRAILER}\n", {"prefill.py": AFTER})
    repo.git("commit", "-q", "--amend", "-m", f"Chunk the prefill (reworded)\n\n{TRAILER}\n")
    assert repo.head() != root
    assert verdict(repo.path, root).status == Status.APPLIES
    repo_ = gitutil.open_repo(repo.path)
    assert repo_ is not None
    ids = gitutil.patch_ids(repo_, [root, repo.head()])
    assert ids[root] == ids[repo.head()]


# -- what the tree cannot say -----------------------------------------------------------------


def test_lines_rewritten_after_the_fix_make_it_unknown_and_a_fix_id_copy_keeps_it(
    code: tuple[Repo, str],
) -> None:
    repo, pre = code
    message = f"Chunk the prefill\n\n{TRAILER}\nOOM-Fix-Id: chunked-prefill\n"
    fix(repo, message)
    rewritten = AFTER.replace("run_chunked(tokens, 512)", "run_chunked(tokens, size=512)")
    repo.commit("Tidy the prefill", {"prefill.py": rewritten})
    got = verdict(repo.path, pre)
    assert got.status == Status.UNKNOWN
    assert "its prefill.py holds neither the fix's version" in got.reason
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.commit("Tidy the prefill\n\nOOM-Fix-Id: chunked-prefill\n", {"prefill.py": rewritten})
    assert verdict(repo.path, pre).status == Status.LIFTED


def test_a_partial_revert_is_unknown(repo: Repo) -> None:
    pre = repo.commit("code", {"a.py": "one\n", "b.py": "two\n"})
    f = repo.commit(f"Fix\n\n{TRAILER}\n", {"a.py": "ONE\n", "b.py": "TWO\n"})
    repo.commit("undo half", {"b.py": "two\n"})
    got = verdict(repo.path, pre)
    assert got.status == Status.UNKNOWN
    assert "its a.py has the fix's change and its b.py does not" in got.reason
    assert f


def test_an_empty_fix_commit_is_declared_and_the_graph_decides(repo: Repo) -> None:
    pre = repo.commit("pre")
    repo.git("commit", "-q", "--allow-empty", "-m", f"Driver 580 fixes it\n\n{TRAILER}")
    assert verdict(repo.path, pre).status == Status.LIFTED


def test_a_trailer_on_a_merge_s_ours_lifts_nothing(code: tuple[Repo, str]) -> None:
    """The PR-merge style with `-s ours`: the merge carries the trailer and brought no change to
    its first parent. It is no declared fix (that is a plain empty commit): the record applies,
    unknown, and says why."""
    repo, pre = code
    repo.git("checkout", "-q", "-b", "topic")
    fix(repo, "Chunk the prefill")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "-s", "ours", "-m", f"Merge PR #1\n\n{TRAILER}", "topic")
    merge = repo.head()
    got = verdict(repo.path, pre)
    assert got.status == Status.UNKNOWN
    assert str(got) == (
        f"applies (unknown: HEAD's tree may not hold the change of fix {merge[:7]} (Merge PR "
        "#1): it is a merge that brought no change to its first parent (merged with -s ours?))"
    )


@pytest.mark.parametrize("how", ["redundant", "resolved to ours"])
def test_an_empty_pick_of_the_fix_lifts_nothing(code: tuple[Repo, str], how: str) -> None:
    """A pick that changes no file: of a change the branch had already (the record measured
    with it), or a conflict resolved to the branch's side (the change is not there). Either
    way the fix's change is the original's, which the pick does not hold: the record applies."""
    repo, _ = code
    repo.git("checkout", "-q", "-b", "release")
    ours = AFTER if how == "redundant" else BEFORE.replace("run(tokens)", "run_release(tokens)")
    measured = repo.commit("the release's own version", {"prefill.py": ours})
    repo.git("checkout", "-q", "main")
    f = fix(repo)
    repo.git("checkout", "-q", "release")
    if how == "redundant":
        repo.git("cherry-pick", "-x", "--keep-redundant-commits", f)
    else:
        with pytest.raises(AssertionError):
            repo.git("cherry-pick", "-x", f)
        repo.git("checkout", "--ours", "prefill.py")
        repo.git("add", "prefill.py")
        repo.git("-c", "core.editor=true", "commit", "-q", "--allow-empty", "--no-edit")
    got = verdict(repo.path, measured)
    assert got.status in (Status.APPLIES, Status.UNKNOWN), str(got)
    assert "cherry-pick that changes no file" in str(got)


def test_a_fix_of_a_file_mode_alone_is_not_blind(repo: Repo) -> None:
    """`chmod +x` as the fix, then `chmod -x`: the blobs never change, so the tree check cannot
    see the mode. It said 'a fix of no file' and lifted for good; the record applies now."""
    script = repo.path / "guard.sh"
    pre = repo.commit("a guard", {"guard.sh": "echo guard\n"})
    script.chmod(0o755)
    repo.git("commit", "-q", "-am", f"Run the guard\n\n{TRAILER}")
    script.chmod(0o644)
    repo.git("commit", "-q", "-am", "not executable after all")
    got = verdict(repo.path, pre)
    assert got.status == Status.UNKNOWN
    assert "its guard.sh changes only its mode" in str(got)


def test_a_work_tree_that_undoes_the_fix_keeps_the_record(code: tuple[Repo, str], cli: Cli) -> None:
    """Judged at HEAD, the fix is in the tree; but what a sweep runs is the work tree, where the
    change is undone (not committed): the record applies (unknown) until the tree is clean.
    A sweep's own CSV left uncommitted changes nothing."""
    repo, pre = code
    f = fix(repo)
    assert verdict(repo.path, pre).status == Status.LIFTED
    (repo.path / "prefill.py").write_text(BEFORE)
    got = verdict(repo.path, pre)
    assert got.status == Status.UNKNOWN
    assert str(got) == (
        f"applies (unknown: the work tree changes prefill.py, which fix {f[:7]} (Chunk the "
        "prefill) changed: what runs is not HEAD's tree (commit or stash it, then check again))"
    )
    record = repo.path / "rec"
    record.write_text(f"{MODEL},8192,2026-07-03,{pre},,x.csv\n")
    (repo.path / "models" / MODEL).mkdir(parents=True)  # `check` names a model under ./models
    assert cli("check", MODEL, "8192", "--record", str(record)).exit_code == 1
    repo.git("checkout", "prefill.py")
    assert cli("check", MODEL, "8192", "--record", str(record)).exit_code == 3
    assert verdict(repo.path, pre).status == Status.LIFTED


def test_a_binary_fix_rewritten_later_is_unknown(repo: Repo) -> None:
    pre = repo.commit("weights", {"w.bin": "\0old\0"})
    repo.commit(f"Smaller buffers\n\n{TRAILER}\n", {"w.bin": "\0new\0"})
    assert verdict(repo.path, pre).status == Status.LIFTED
    repo.commit("again", {"w.bin": "\0newer\0"})
    got = verdict(repo.path, pre)
    assert got.status == Status.UNKNOWN
    assert "w.bin" in got.reason


def test_sha256_repositories_judge_like_sha1_ones(tmp_path: Path) -> None:
    path = tmp_path / "s256"
    path.mkdir()
    git(path, "init", "-q", "--object-format=sha256", "-b", "main")
    repo = Repo.__new__(Repo)
    repo.path, repo._n = path, 0
    pre = repo.commit("code", {"prefill.py": BEFORE, "sub/dir/x.py": "x\n"})
    assert len(pre) == 64
    f = repo.commit(f"Chunk\n\n{TRAILER}\n", {"prefill.py": AFTER, "sub/dir/x.py": "y\n"})
    assert verdict(path, pre).status == Status.LIFTED
    assert verdict(path, f).status == Status.APPLIES
    repo.git("revert", "-n", f)
    repo.git("commit", "-q", "-m", "Back out")
    assert verdict(path, pre).status == Status.APPLIES
    assert gitutil.head_sha(gitutil.open_repo(path)) == repo.head()


# -- every view reads the one verdict ----------------------------------------------------------


def test_every_view_gives_each_record_the_same_verdict(cli: Cli, repo: Repo) -> None:
    files = {name: BEFORE for name in ("a.py", "b.py", "c.py", "d.py")}
    pre = repo.commit("code", files)
    repo.commit("Fix a\n\nOOM-Fix: m-lift\n", {"a.py": AFTER})
    repo.git("checkout", "-q", "-b", "topic")
    repo.commit("Fix b\n\nOOM-Fix: m-ours\n", {"b.py": AFTER})
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "-s", "ours", "-m", "Merge topic, keeping ours", "topic")
    untagged = repo.commit("Chunk c", {"c.py": AFTER})
    repo.git("commit", "-q", "--amend", "--no-edit", "--trailer", "OOM-Fix: m-amend")
    repo.commit("Fix d\n\nOOM-Fix: m-unknown\n", {"d.py": AFTER})
    repo.commit("Rewrite d", {"d.py": AFTER.replace("512", "1024")})
    expected = {"m-lift": "lifted", "m-ours": "applies", "m-amend": "applies"}
    expected["m-unknown"] = "applies"
    rows = [
        ("m-lift", pre),
        ("m-ours", pre),
        ("m-amend", untagged),
        ("m-unknown", pre),
    ]
    record = repo.path / "benchmarks" / ".oom-record"
    record.parent.mkdir()
    record.write_text("".join(f"{m},8192,2026-07-03,{c},,b.csv\n" for m, c in rows))
    for model, _ in rows:
        (repo.path / "models" / model).mkdir(parents=True)

    def run(*args: str) -> Any:
        result = cli(*args)
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    listed = run("record", "list", "--json")["records"]
    by_list = {
        r["model"]: "lifted" if r["status"].startswith("lifted, unverified") else "applies"
        for r in listed
    }
    stale = run("record", "stale", "--json")
    lifted_lines = {e["line"] for e in stale["no_longer_apply"]}
    by_stale = {m: "lifted" if n in lifted_lines else "applies" for n, (m, _) in enumerate(rows, 1)}
    pruned = {e["line"] for e in run("record", "prune", "--dry-run", "--json")["records"]}
    by_prune = {m: "lifted" if n in pruned else "applies" for n, (m, _) in enumerate(rows, 1)}
    report = run("report", "--json", str(record.parent))
    by_report = {
        o["model"]: "lifted" if o["status"] == "lifted, unverified" else "applies"
        for o in report["ooms"]
    }
    models = " ".join(m for m, _ in rows)
    sweep = run(
        "sweep",
        "--models",
        models,
        "--lengths",
        "8192",
        "--runner",
        "true",
        "--dry-run",
        "--json",
    )
    by_sweep = {
        c["model"]: {"SKIP:oom_record": "applies", "probe": "lifted"}[c["verdict"]]
        for c in sweep["cells"]
    }
    by_check = {}
    for model, _ in rows:
        done = cli("check", model, "8192", "--json")
        assert done.exit_code in (1, 3), done.stderr
        by_check[model] = "lifted" if done.exit_code == 3 else "applies"
    assert by_list == by_stale == by_prune == by_report == by_sweep == by_check == expected
    # The reasons agree too: the unknown one is said the same in list and stale.
    unknown = {e["record"]["model"]: e["reason"] for e in stale["unknown"]}
    assert list(unknown) == ["m-unknown"]
    assert next(r for r in listed if r["model"] == "m-unknown")["status"] == (
        f"applies (unknown: {unknown['m-unknown']})"
    )


@pytest.mark.parametrize(
    "config",
    [
        ["diff.suppressBlankEmpty=true"],
        ["diff.context=0", "diff.interHunkContext=9"],
        ["diff.algorithm=patience", "diff.indentHeuristic=false"],
        ["diff.noprefix=true", "diff.mnemonicPrefix=true", "core.quotePath=false"],
        ["diff.external=false", "diff.orderFile=order.txt"],
        ["core.autocrlf=true", "diff.ignoreSubmodules=all"],
    ],
)
def test_hostile_diff_config_changes_no_verdict(code: tuple[Repo, str], config: list[str]) -> None:
    repo, pre = code
    # Blank lines in the context, and a second file git may order either way.
    spaced = BEFORE.replace("    y = 2\n", "\n    y = 2\n\n")
    base = repo.commit("spaced", {"prefill.py": spaced, "a é.py": "one\n\ntwo\n"})
    f = repo.commit(
        f"Chunk\n\n{TRAILER}\n",
        {"prefill.py": spaced.replace("run(tokens)", "run_chunked(tokens)"), "a é.py": "1\n\n2\n"},
    )
    (repo.path / "order.txt").write_text("prefill.py\n*\n")
    for item in config:
        name, _, value = item.partition("=")
        repo.git("config", name, value)
    assert verdict(repo.path, base).status == Status.LIFTED
    # Measured on other code than the fix's patch starts from: the tree cannot say.
    assert verdict(repo.path, pre).status == Status.UNKNOWN
    assert verdict(repo.path, f).status == Status.APPLIES
    repo.git("revert", "-n", f)
    repo.git("commit", "-q", "-m", "Back out")
    assert verdict(repo.path, base).status == Status.APPLIES


def test_prune_since_a_fix_whose_change_is_not_in_the_tree_is_refused(
    cli: Cli, code: tuple[Repo, str]
) -> None:
    repo, pre = code
    repo.git("checkout", "-q", "-b", "topic")
    f = fix(repo)
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "-s", "ours", "-m", "Merge topic, keeping ours", "topic")
    record = repo.path / "benchmarks" / ".oom-record"
    record.parent.mkdir()
    before = f"{MODEL},8192,2026-07-03,{pre},,b.csv\n"
    record.write_text(before)
    result = cli("record", "prune", "--since", f)
    assert result.exit_code == 2
    assert "its change not in HEAD's tree" in " ".join(result.stderr.split())
    assert record.read_text() == before
