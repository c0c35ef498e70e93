"""The staleness verdict (oomrec.stale), against real repositories: linear history, branches,
merges, and every way git cannot say (unknown, rebased away, ambiguous, shallow, -dirty)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import git as gitpython
import pytest

from oomrec import gitutil
from oomrec.fixes import FixCommit
from oomrec.records import OomRecord
from oomrec.stale import Judge, Verdict, judge_fixes, record_statuses
from tests.gitrepo import FIX_MESSAGE, History, Repo, git


def verdicts(path: Path, fix: str, commits: list[str]) -> dict[str, Verdict]:
    return Judge(gitpython.Repo(path), commits).against(fix)


def test_linear_history_and_branches(history: History) -> None:
    h = history
    got = verdicts(h.repo.path, h.fix, [h.base, h.pre, h.fix, h.post, h.side, h.feat, h.merged])
    assert got == {
        h.base: Verdict("stale"),
        h.pre: Verdict("stale"),
        h.fix: Verdict("current"),
        h.post: Verdict("current"),
        h.side: Verdict("stale"),
        h.feat: Verdict("stale"),
        h.merged: Verdict("current"),
    }


def test_short_uppercase_and_dirty_commits_are_judged_by_their_hex(history: History) -> None:
    h = history
    short_pre, short_post = h.pre[:7], h.post[:10].upper()
    got = verdicts(h.repo.path, h.fix, [short_pre, short_post, f"{h.pre[:8]}-dirty"])
    assert got == {
        short_pre: Verdict("stale"),
        short_post: Verdict("current"),
        f"{h.pre[:8]}-dirty": Verdict("stale", f"{h.pre[:8]}-dirty judged by {h.pre[:8]}"),
    }
    assert str(got[f"{h.pre[:8]}-dirty"]) == f"stale ({h.pre[:8]}-dirty judged by {h.pre[:8]})"


def test_commits_git_cannot_judge_are_unknown_with_the_reason(history: History) -> None:
    h = history
    tree = h.repo.git("rev-parse", "HEAD^{tree}")
    got = verdicts(
        h.repo.path, h.fix, ["unknown", "", "  ", "HEAD", "abc", "deadbeefdeadbeef", tree]
    )
    assert {text: str(v) for text, v in got.items()} == {
        "unknown": "unknown: no commit recorded",
        "": "unknown: no commit recorded",
        "  ": "unknown: no commit recorded",
        "HEAD": "unknown: 'HEAD' is not a commit SHA",
        "abc": "unknown: 'abc' is not a commit SHA",
        "deadbeefdeadbeef": "unknown: commit deadbeefdeadbeef not in this repository "
        "(rebased away or from another clone?)",
        tree: f"unknown: {tree} is a tree, not a commit",
    }


def test_a_commit_rebased_away_is_unknown(history: History) -> None:
    h = history
    r = h.repo
    r.git("checkout", "-q", "side")
    r.git("rebase", "-q", "main")
    rebased = r.head()
    r.git("checkout", "-q", "main")
    # The old commit is gone once nothing refers to it: as after gc, or in another clone.
    r.git("reflog", "expire", "--expire=now", "--all")
    r.git("gc", "-q", "--prune=now")
    got = verdicts(r.path, h.fix, [h.side, rebased])
    assert got == {
        h.side: Verdict(
            "unknown",
            f"commit {h.side} not in this repository (rebased away or from another clone?)",
        ),
        rebased: Verdict("current"),
    }


def _twin_commits(repo: Repo, parent: str, prefix_len: int = 7) -> tuple[str, str]:
    """Write two real commits whose SHAs share their first `prefix_len` hex digits."""
    tree = repo.git("rev-parse", f"{parent}^{{tree}}")
    seen: dict[str, bytes] = {}
    n = 0
    while True:
        body = (
            f"tree {tree}\nparent {parent}\nauthor t <t@t> 1700000000 +0000\n"
            f"committer t <t@t> 1700000000 +0000\n\ntwin {n}\n"
        ).encode()
        sha = hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()
        if sha[:prefix_len] in seen:
            first = seen[sha[:prefix_len]]
            break
        seen[sha[:prefix_len]] = body
        n += 1
    shas = []
    for data in (first, body):
        shas.append(repo.git("hash-object", "-t", "commit", "-w", "--stdin", input=data.decode()))
    return shas[0], shas[1]


def test_an_ambiguous_short_sha_is_unknown(history: History) -> None:
    h = history
    one, two = _twin_commits(h.repo, h.post)
    prefix = one[:7]
    assert two.startswith(prefix) and one != two
    got = verdicts(h.repo.path, h.fix, [prefix, one])
    assert got == {
        prefix: Verdict(
            "unknown", f"short SHA {prefix} is ambiguous in this repository (record the full SHA)"
        ),
        one: Verdict("current"),
    }


def _shallow_clone(source: Repo, dest: Path, depth: int, *extra: str) -> Path:
    git(
        source.path.parent,
        "clone",
        "-q",
        f"--depth={depth}",
        *extra,
        source.path.as_uri(),
        str(dest),
    )
    assert git(dest, "rev-parse", "--is-shallow-repository") == "true"
    return dest


def test_depth_one_clone_judges_only_what_it_has(repo: Repo, tmp_path: Path) -> None:
    old = repo.head()
    fix = repo.commit(FIX_MESSAGE)
    clone = _shallow_clone(repo, tmp_path / "clone", 1)
    got = verdicts(clone, fix, [old, fix])
    assert got == {
        old: Verdict(
            "unknown",
            f"shallow clone: commit {old} is not in the fetched history "
            "(git fetch --unshallow, then retry)",
        ),
        fix: Verdict("current"),
    }


def test_shallow_clone_proves_what_its_history_proves(repo: Repo, tmp_path: Path) -> None:
    # main: base - c2 - fix - c4; side: base - s1 - s2. Depth 2 keeps c4, fix, s2, s1;
    # fix and s1 are where the history is cut.
    base = repo.head()
    c2 = repo.commit("c2")
    repo.git("checkout", "-q", "-b", "side", base)
    repo.commit("s1")
    s2 = repo.commit("s2")
    repo.git("checkout", "-q", "main")
    fix = repo.commit(FIX_MESSAGE)
    c4 = repo.commit("c4")
    clone = _shallow_clone(repo, tmp_path / "clone", 2, "--no-single-branch")
    got = verdicts(clone, fix, [c4, fix, s2, c2])
    assert got[c4] == Verdict("current")
    assert got[fix] == Verdict("current")
    # s2 does not contain the fix, but below the cut at s1 git cannot show it.
    assert got[s2] == Verdict(
        "unknown",
        f"shallow clone: the history of {s2} is cut off before fix {fix[:7]} could be found "
        "(git fetch --unshallow, then retry)",
    )
    assert got[c2].status == "unknown"
    assert "not in the fetched history" in got[c2].reason
    # Deeper, c2 is in the clone and an ancestor of the fix: provably stale.
    deeper = _shallow_clone(repo, tmp_path / "deeper", 3)
    assert verdicts(deeper, fix, [c2, c4]) == {c2: Verdict("stale"), c4: Verdict("current")}


def test_batch_answers_many_commits_with_a_few_git_calls(
    history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Judging 38 commits takes the same git processes as judging 2: git traces each one.
    trace = tmp_path / "git-trace"
    repo = gitpython.Repo(history.repo.path)
    commits = [history.pre, history.post] + [history.side[:n] for n in range(4, 40)]
    monkeypatch.setenv("GIT_TRACE", str(trace))
    got = Judge(repo, commits).against(history.fix)
    monkeypatch.delenv("GIT_TRACE")
    assert len(got) == 38 and all(v.status != "unknown" for v in got.values())
    commands = [
        line.split("built-in: git ")[1].split()[0]
        for line in trace.read_text().splitlines()
        if "built-in: git " in line
    ]
    assert commands == ["cat-file", "rev-parse", "rev-list"]


def test_judge_fixes_pairs_records_with_the_globs_that_match(history: History) -> None:
    h = history
    other = FixCommit(h.post, "qwen fix", ("qwen3-*", "llama-*"))
    fix = FixCommit(h.fix, "Chunk the prefill", ("gemma-4-*",))
    records = [
        OomRecord("gemma-4-31b", 32768, "2026-07-03", h.pre),
        OomRecord("qwen3-8b", 1024, "2026-07-03", h.fix),
        OomRecord("gemma-4-31b", 65536, "2026-07-03", h.post),
        OomRecord("mistral", 4096, "2026-07-03", h.pre),
        OomRecord("gemma-4-31b", 1024, "2026-07-03", "unknown"),
    ]
    unused = FixCommit(h.fix, "llama fix", ("llama-*",))
    judged = judge_fixes(gitpython.Repo(h.repo.path), [other, unused, fix], records)
    assert [
        (
            j.fix.sha,
            [(i, j.globs[records[i].model], str(j.verdict_of(records[i]))) for i in j.indices],
        )
        for j in judged
    ] == [
        (h.post, [(1, "qwen3-*", "stale")]),
        (
            h.fix,
            [
                (0, "gemma-4-*", "stale"),
                (2, "gemma-4-*", "current"),
                (4, "gemma-4-*", "unknown: no commit recorded"),
            ],
        ),
    ]
    assert [j.count(records, "stale") for j in judged] == [1, 1]
    assert record_statuses(judged, records) == [
        f"stale: fix {h.fix[:7]}",
        f"stale: fix {h.post[:7]}",
        "active",
        "active",
        "unknown: no commit recorded",
    ]


def test_fix_commits_reads_trailers_as_git_does(repo: Repo) -> None:
    trailered = repo.git(
        "interpret-trailers", "--trailer", "OOM-Fix: gemma-4-*, qwen3-*", input="Fix it\n\nWhy.\n"
    )
    a = repo.commit(trailered)
    b = repo.commit("Two trailers\n\nOOM-Fix: llama-*\nSigned-off-by: x <x@x>\noom-fix: llama-*\n")
    # Not a trailer: the key line is not in the message's last paragraph.
    repo.commit("Mentions it\n\nOOM-Fix: mistral\n\nSee above.\n")
    repo.commit("No fix here")
    found = gitutil.fix_commits(gitpython.Repo(repo.path), ["HEAD"], "OOM-Fix")
    assert [(f.sha, f.subject, f.globs) for f in found] == [
        (b, "Two trailers", ("llama-*",)),
        (a, "Fix it", ("gemma-4-*", "qwen3-*")),
    ]
    assert gitutil.fix_commits(gitpython.Repo(repo.path), [f"{a}..HEAD"], "OOM-Fix")[0].sha == b
