"""The git hooks: installed into real repositories, run by real `git merge`, `git pull`,
`git pull --rebase` and `git commit --amend`, with oomrec on PATH and without it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.hooks.check import EVENTS
from oomrec.hooks.files import MARKER, shim, this_oomrec
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import line, write

Cli = Callable[..., CliResult]
ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = os.path.dirname(sys.executable)


@pytest.fixture(autouse=True)
def _oomrec_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The hooks run `oomrec` from PATH, as they do for a user who installed it.
    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ["PATH"])


def run_git(where: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"PATH": path} if path is not None else {})}
    done = subprocess.run(
        ["git", *args], cwd=where, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done


def oomrec_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [text for text in (done.stdout + done.stderr).splitlines() if "oomrec" in text]


def flag(fix: str, count: int, subject: str = "Chunk the prefill") -> str:
    what = "1 OOM record" if count == 1 else f"{count} OOM records"
    return (
        f"oomrec: at the new HEAD {what} lifted, unverified (fix {fix[:7]} ({subject})); the "
        "next sweep probes their cells under the guard; see: oomrec record stale"
    )


def again(fix: str, count: int, subject: str = "Chunk the prefill") -> str:
    what = "1 record applies" if count == 1 else f"{count} records apply"
    return (
        f"oomrec: at the new HEAD {what} again (fix {fix[:7]} ({subject}) no longer in "
        "effect); the sweep already knows; see: oomrec record stale"
    )


INSTALLED = "".join(f"installed: .git/hooks/{event}\n" for event in EVENTS)


def with_records(repo: Repo, commit: str) -> bytes:
    record = repo.path / "benchmarks" / ".oom-record"
    record.parent.mkdir(exist_ok=True)
    return write(
        record,
        [
            line("gemma-4-31b", 32768, commit),
            line("gemma-4-e4b", 65536, commit),
            line("qwen3-8b", 4096, commit),
        ],
    )


def fix_branch(repo: Repo, name: str, trailer: str) -> str:
    repo.git("checkout", "-q", "-b", name)
    fix = repo.commit(f"Chunk the prefill\n\n{trailer}\n")
    repo.git("checkout", "-q", "main")
    return fix


def test_shims_in_the_repository_are_what_install_writes() -> None:
    for event in EVENTS:
        path = ROOT / "hooks" / event
        assert path.read_text() == shim(event)
        assert path.stat().st_mode & stat.S_IXUSR


def test_merging_a_fix_prints_the_flag_line(cli: Cli, repo: Repo) -> None:
    before = with_records(repo, repo.head())
    assert cli("hook", "install").stdout == INSTALLED
    fix = fix_branch(repo, "fix", "OOM-Fix: gemma-4-*")
    repo.commit("main moves on")
    done = run_git(repo.path, "merge", "--no-edit", "fix")
    assert oomrec_lines(done) == [flag(fix, 2)]
    # The hook only flags: the record is untouched.
    assert (repo.path / "benchmarks" / ".oom-record").read_bytes() == before


def test_a_merge_without_fixes_prints_nothing(cli: Cli, repo: Repo) -> None:
    with_records(repo, repo.head())
    cli("hook", "install")
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("no fix here\n\nSigned-off-by: a <a@a>\n")
    repo.git("checkout", "-q", "main")
    done = run_git(repo.path, "merge", "--no-edit", "feature")
    assert oomrec_lines(done) == []


def test_pull_and_pull_rebase_flag_the_fixes_they_bring(
    cli: Cli, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(repo.path), str(clone))
    monkeypatch.chdir(clone)
    cli("hook", "install")
    record = clone / "benchmarks" / ".oom-record"
    record.parent.mkdir()
    write(record, [line("gemma-4-31b", 1, repo.head()), line("qwen3-8b", 2, repo.head())])

    first = repo.commit("Fix gemma\n\nOOM-Fix: gemma-4-*\n")
    pulled = run_git(clone, "pull", "-q", "--no-rebase")
    assert oomrec_lines(pulled) == [flag(first, 1, "Fix gemma")]

    # A local commit makes `pull --rebase` rebase (post-rewrite), not fast-forward.
    run_git(clone, "commit", "-q", "--allow-empty", "-m", "local work")
    second = repo.commit("Fix everything\n\nOOM-Fix: *\n")
    rebased = run_git(clone, "pull", "-q", "--rebase")
    assert oomrec_lines(rebased) == [flag(second, 1, "Fix everything")]


def test_amending_in_the_trailer_flags_it(cli: Cli, repo: Repo) -> None:
    with_records(repo, repo.head())
    cli("hook", "install")
    repo.commit("Chunk the prefill")
    done = run_git(
        repo.path,
        "commit",
        "--amend",
        "--allow-empty",
        "-m",
        "Chunk the prefill\n\nOOM-Fix: qwen3-*",
    )
    assert oomrec_lines(done) == [flag(repo.head(), 1)]


def bare_path() -> str:
    path = os.path.dirname(shutil.which("git") or "/usr/bin/git") + os.pathsep + "/bin"
    assert shutil.which("oomrec", path=path) is None
    return path


def test_the_hook_calls_the_oomrec_that_installed_it_when_path_has_none(
    cli: Cli, repo: Repo
) -> None:
    # git run from an IDE or another shell: oomrec is not on PATH, the remembered one runs.
    with_records(repo, repo.head())
    cli("hook", "install")
    fix = fix_branch(repo, "fix", "OOM-Fix: *")
    done = run_git(repo.path, "merge", "--no-edit", "fix", path=bare_path())
    assert oomrec_lines(done) == [flag(fix, 3)]


def test_without_any_oomrec_the_hook_is_silent(cli: Cli, repo: Repo) -> None:
    with_records(repo, repo.head())
    cli("hook", "install")
    hooks = repo.path / ".git" / "hooks"
    for event in EVENTS:
        # The oomrec that installed it is gone (uninstalled, a deleted venv).
        (hooks / event).write_text(shim(event, "/nonexistent/bin/oomrec"))
    fix_branch(repo, "fix", "OOM-Fix: *")
    done = run_git(repo.path, "merge", "--no-edit", "fix", path=bare_path())
    assert oomrec_lines(done) == []
    direct = subprocess.run(
        [str(hooks / "post-merge"), "0"],
        cwd=repo.path,
        env={**os.environ, "PATH": bare_path()},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (direct.returncode, direct.stdout, direct.stderr) == (0, "", "")


def test_an_error_in_the_hook_is_one_line_and_never_fails_git(cli: Cli, repo: Repo) -> None:
    with_records(repo, repo.head())
    cli("hook", "install")
    fix_branch(repo, "fix", "OOM-Fix: *")
    (repo.path / "pyproject.toml").write_text("[tool.oomrec\n")
    done = run_git(repo.path, "merge", "--no-edit", "fix")
    lines = oomrec_lines(done)
    assert len(lines) == 1
    assert lines[0].startswith(f"oomrec: hook post-merge: {repo.path / 'pyproject.toml'}: ")
    direct = subprocess.run(
        [sys.executable, "-m", "oomrec", "hook", "post-rewrite", "rebase"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert direct.returncode == 0 and direct.stdout == ""
    assert direct.stderr.startswith("oomrec: hook post-rewrite: ")
    assert direct.stderr.count("\n") == 1


def test_the_no_fix_path_loads_neither_gitpython_nor_typer(cli: Cli, repo: Repo) -> None:
    # The 200 ms budget (benchmarks/perf/bench_hook.py) depends on it.
    with_records(repo, repo.head())
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("no fix")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-edit", "feature")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "oomrec", "hook", "post-merge", "0"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == ""
    imported = {row.split("|")[-1].strip() for row in done.stderr.splitlines() if "|" in row}
    assert "oomrec.hooks.check" in imported
    assert not imported & {"git", "typer", "polars", "filelock", "rich", "oomrec.cli"}


def test_install_honours_core_hooks_path(cli: Cli, repo: Repo) -> None:
    repo.git("config", "core.hooksPath", "tools/githooks")
    result = cli("hook", "install")
    assert result.stdout == "".join(f"installed: tools/githooks/{e}\n" for e in EVENTS)
    for event in EVENTS:
        written = (repo.path / "tools" / "githooks" / event).read_text()
        assert written == shim(event, this_oomrec())
        assert not (repo.path / ".git" / "hooks" / event).exists()
    assert cli("hook", "install").stdout == "".join(
        f"already installed: tools/githooks/{e}\n" for e in EVENTS
    )


def test_install_keeps_a_foreign_hook_as_legacy_runs_it_first_and_uninstall_puts_it_back(
    cli: Cli, repo: Repo
) -> None:
    with_records(repo, repo.head())
    hooks = repo.path / ".git" / "hooks"
    foreign = '#!/bin/sh\necho "my own post-merge $*"\n'
    (hooks / "post-merge").write_text(foreign)
    (hooks / "post-merge").chmod(0o755)
    result = cli("hook", "install")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        "installed: .git/hooks/post-merge; your hook moved to .git/hooks/post-merge.legacy, "
        "runs first"
    )
    assert (hooks / "post-merge.legacy").read_text() == foreign
    fix = fix_branch(repo, "fix", "OOM-Fix: gemma-4-*")
    done = run_git(repo.path, "merge", "--no-edit", "fix")
    assert oomrec_lines(done) == [flag(fix, 2)]
    both = done.stdout + done.stderr
    assert "my own post-merge 0" in both
    assert both.index("my own post-merge") < both.index("oomrec: at the new HEAD")
    assert cli("hook", "install").stdout.splitlines()[0] == (
        "already installed: .git/hooks/post-merge; runs .git/hooks/post-merge.legacy first"
    )

    result = cli("hook", "uninstall")
    assert result.stdout.splitlines() == [
        "removed: .git/hooks/post-merge; .git/hooks/post-merge.legacy put back",
        "removed: .git/hooks/post-rewrite",
        "removed: .git/hooks/post-checkout",
        "removed: .git/hooks/post-commit",
        "removed: .git/hooks/post-applypatch",
    ]
    assert (hooks / "post-merge").read_text() == foreign
    assert not (hooks / "post-merge.legacy").exists()


def test_each_hook_is_handled_on_its_own(cli: Cli, repo: Repo) -> None:
    hooks = repo.path / ".git" / "hooks"
    (hooks / "post-merge").write_text("#!/bin/sh\necho one\n")
    (hooks / "post-merge.legacy").write_text("#!/bin/sh\necho two\n")
    result = cli("hook", "install")
    assert result.exit_code == 2
    assert result.stderr == (
        "oomrec: error: .git/hooks/post-merge: not oomrec's hook and .git/hooks/post-merge.legacy "
        "exists too; merge them into one (or remove one), then install again\n"
    )
    assert result.stdout == INSTALLED.split("\n", 1)[1]
    assert (hooks / "post-merge").read_text() == "#!/bin/sh\necho one\n"
    assert (hooks / "post-merge.legacy").read_text() == "#!/bin/sh\necho two\n"
    assert MARKER in (hooks / "post-rewrite").read_text()


def test_post_rewrite_input_and_arguments_reach_both_hooks_and_the_legacy_status_is_kept(
    repo: Repo, tmp_path: Path
) -> None:
    hooks = repo.path / ".git" / "hooks"
    seen = tmp_path / "seen"
    fake = tmp_path / "fake-oomrec"
    # Stand-ins that record what they were given: the legacy hook, and the oomrec it calls.
    for path, name in ((hooks / "post-rewrite.legacy", "legacy"), (fake, "oomrec")):
        path.write_text(f'#!/bin/sh\n{{ echo "{name} $*"; cat; }} >> {seen}\nexit 3\n')
        path.chmod(0o755)
    (hooks / "post-rewrite").write_text(shim("post-rewrite", str(fake)))
    (hooks / "post-rewrite").chmod(0o755)
    old = repo.head()
    run_git(repo.path, "commit", "-q", "--amend", "--allow-empty", "-m", "reworded")
    pair = f"{old} {repo.head()}"
    assert seen.read_text().splitlines() == [
        "legacy amend",
        pair,
        "oomrec hook post-rewrite amend",
        pair,
    ]
    done = subprocess.run(
        [str(hooks / "post-rewrite"), "rebase"], input="a b\n", capture_output=True, text=True
    )
    assert done.returncode == 3


def test_install_updates_an_older_oomrec_hook(cli: Cli, repo: Repo) -> None:
    old = repo.path / ".git" / "hooks" / "post-rewrite"
    old.write_text(f"#!/bin/sh\n{MARKER}\noomrec hook post-rewrite\n")
    result = cli("hook", "install")
    assert result.stdout == INSTALLED.replace(
        "installed: .git/hooks/post-rewrite", "updated: .git/hooks/post-rewrite"
    )
    assert old.read_text() == shim("post-rewrite", this_oomrec())


def test_uninstall_removes_only_oomrecs_hooks(cli: Cli, repo: Repo) -> None:
    hooks = repo.path / ".git" / "hooks"
    cli("hook", "install")
    foreign = "#!/bin/sh\nexit 0\n"
    (hooks / "post-merge").write_text(foreign)
    result = cli("hook", "uninstall")
    assert result.stdout == (
        "left as is: .git/hooks/post-merge (not installed by oomrec)\n"
        "removed: .git/hooks/post-rewrite\n"
        "removed: .git/hooks/post-checkout\n"
        "removed: .git/hooks/post-commit\n"
        "removed: .git/hooks/post-applypatch\n"
    )
    assert (hooks / "post-merge").read_text() == foreign
    assert not (hooks / "post-rewrite").exists()
    assert cli("hook", "uninstall").stdout.splitlines()[1] == (
        "not installed: .git/hooks/post-rewrite"
    )


def test_hook_install_outside_git_is_one_line(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("hook", "install")
    assert result.exit_code == 2
    assert result.stderr == (
        f"oomrec: error: {tmp_path}: not inside a git repository; run this in the repository "
        "whose merges should be checked\n"
    )


def test_pre_commit_hook_entry() -> None:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    for expected in (
        "- id: oomrec-post-merge",
        "  entry: oomrec hook post-merge",
        "  stages: [post-merge]",
        "  always_run: true",
        "  pass_filenames: false",
        "  verbose: true",
    ):
        assert expected in text.splitlines()


def test_switching_to_a_branch_without_the_fix_says_records_apply_again(
    cli: Cli, repo: Repo
) -> None:
    old = repo.head()
    repo.git("branch", "release")
    fix = repo.commit("Chunk the prefill\n\nOOM-Fix: gemma-4-*\n")
    with_records(repo, old)
    cli("hook", "install")
    away = run_git(repo.path, "checkout", "-q", "release")
    assert oomrec_lines(away) == [again(fix, 2)]
    back = run_git(repo.path, "checkout", "-q", "main")
    assert oomrec_lines(back) == [flag(fix, 2)]
    # A checkout of files only says nothing.
    assert oomrec_lines(run_git(repo.path, "checkout", "release", "--", ".")) == []


def test_a_revert_commit_says_records_apply_again(cli: Cli, repo: Repo) -> None:
    old = repo.head()
    fix = repo.commit("Chunk the prefill\n\nOOM-Fix: gemma-4-*\n")
    with_records(repo, old)
    cli("hook", "install")
    done = run_git(repo.path, "revert", "--no-edit", fix)
    assert oomrec_lines(done) == [again(fix, 2)]


def test_a_squash_merge_quoting_the_trailer_is_flagged(cli: Cli, repo: Repo) -> None:
    with_records(repo, repo.head())
    cli("hook", "install")
    fix_branch(repo, "fix", "OOM-Fix: gemma-4-*")
    squashed = run_git(repo.path, "merge", "--squash", "fix")
    assert oomrec_lines(squashed) == []
    # git's default squash message indents the squashed commit's message, trailer included.
    done = run_git(repo.path, "commit", "--no-edit")
    assert oomrec_lines(done) == [
        "oomrec: HEAD quotes 'OOM-Fix: gemma-4-*' outside its trailer block, so it lifts no "
        "record; to make it count: git commit --amend --trailer 'OOM-Fix: gemma-4-*'"
    ]


def merge_resolved_by_commit(
    repo: Repo, conflict: str, resolved: str
) -> subprocess.CompletedProcess[str]:
    """Merge branch `fix` into main, which conflicts in the file `conflict`; resolve it as
    `resolved` and finish with `git commit`, the hooks running."""
    conflicted = subprocess.run(
        ["git", "merge", "fix"], cwd=repo.path, capture_output=True, text=True, check=False
    )
    assert conflicted.returncode != 0
    (repo.path / conflict).write_text(resolved)
    repo.git("add", conflict)
    return run_git(repo.path, "commit", "--no-edit")


def test_a_conflicted_merge_finished_by_commit_is_flagged(cli: Cli, repo: Repo) -> None:
    repo.commit("base", {"prefill.py": "v1\n", "notes.txt": "n1\n"})
    with_records(repo, repo.head())
    cli("hook", "install")
    repo.git("checkout", "-q", "-b", "fix")
    fix = repo.commit("Chunk the prefill\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    repo.commit("notes on the fix", {"notes.txt": "chunked\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main change", {"notes.txt": "n2\n"})
    done = merge_resolved_by_commit(repo, "notes.txt", "chunked n2\n")
    assert oomrec_lines(done) == [flag(fix, 2)]


def test_a_conflict_resolved_over_the_fixed_lines_says_nothing_and_the_records_apply(
    cli: Cli, repo: Repo
) -> None:
    # The resolution rewrote the fix's own line: the tree cannot show the fix, so the records
    # keep applying (unknown, with the reason) and the hook has nothing to announce.
    repo.commit("base", {"prefill.py": "v1\n"})
    with_records(repo, repo.head())
    cli("hook", "install")
    repo.git("checkout", "-q", "-b", "fix")
    repo.commit("Chunk the prefill\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main change", {"prefill.py": "v2\n"})
    done = merge_resolved_by_commit(repo, "prefill.py", "chunked v2\n")
    assert oomrec_lines(done) == []
    listed = cli("record", "list")
    assert "holds neither the fix's version nor the one before it" in " ".join(
        listed.stdout.split()
    )


def test_a_shallow_clone_says_fixes_may_be_below_the_cut(
    cli: Cli, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(3):
        repo.commit(f"c{n}")
    clone = tmp_path / "shallow"
    run_git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo.path}", str(clone))
    monkeypatch.chdir(clone)
    cli("hook", "install")
    record = clone / "benchmarks" / ".oom-record"
    record.parent.mkdir()
    write(record, [line("gemma-4-31b", 1, repo.head())])
    repo.commit("upstream moves on")
    pulled = run_git(clone, "pull", "-q", "--no-rebase")
    assert oomrec_lines(pulled) == [
        "oomrec: no OOM fix found, but this clone is shallow: fixes below the cut are not seen "
        "(git fetch --unshallow, or --deepen N)"
    ]


def test_one_record_that_applies_again_is_said_in_the_singular(cli: Cli, repo: Repo) -> None:
    old = repo.head()
    fix = repo.commit("Chunk the prefill\n\nOOM-Fix: gemma-4-*\n")
    record = repo.path / "benchmarks" / ".oom-record"
    record.parent.mkdir(exist_ok=True)
    write(record, [line("gemma-4-31b", 32768, old)])
    cli("hook", "install")
    done = run_git(repo.path, "revert", "--no-edit", fix)
    assert oomrec_lines(done) == [again(fix, 1)]


def two_fixes(repo: Repo) -> tuple[str, str, str]:
    """(the commit before, fix one, fix two) on main, each fixing a file of its own."""
    old = repo.head()
    one = repo.commit("Chunk the prefill\n\nOOM-Fix: gemma-4-*\n", {"prefill.py": "chunked\n"})
    two = repo.commit("Smaller KV cache\n\nOOM-Fix: qwen3-*\n", {"kv.py": "small\n"})
    return old, one, two


def test_reverting_two_fixes_in_one_command_says_one_line_naming_both(cli: Cli, repo: Repo) -> None:
    old, one, two = two_fixes(repo)
    with_records(repo, old)
    cli("hook", "install")
    done = run_git(repo.path, "revert", "--no-edit", two, one)
    assert oomrec_lines(done) == [
        f"oomrec: at the new HEAD 3 records apply again (fix {one[:7]} (Chunk the prefill), fix "
        f"{two[:7]} (Smaller KV cache) no longer in effect); the sweep already knows; see: "
        "oomrec record stale"
    ]


def test_cherry_picking_a_range_of_fixes_says_one_line_naming_both(cli: Cli, repo: Repo) -> None:
    old, _, two = two_fixes(repo)
    repo.git("checkout", "-q", "-b", "release", old)
    with_records(repo, old)
    cli("hook", "install")
    done = run_git(repo.path, "cherry-pick", "-x", f"{old}..{two}")
    lines = oomrec_lines(done)
    picked_one, picked_two = repo.git("rev-list", "-2", "--reverse", "HEAD").split()
    assert lines == [
        f"oomrec: at the new HEAD 3 OOM records lifted, unverified (fix {picked_one[:7]} (Chunk "
        f"the prefill), fix {picked_two[:7]} (Smaller KV cache)); the next sweep probes their "
        "cells under the guard; see: oomrec record stale"
    ]


def test_a_rebase_that_picks_fixes_speaks_once(cli: Cli, repo: Repo) -> None:
    old, one, two = two_fixes(repo)
    repo.git("checkout", "-q", "-b", "topic", old)
    repo.commit("topic work", {"topic.py": "t\n"})
    with_records(repo, old)
    cli("hook", "install")
    # The fixes were on main already: rebasing topic onto main brings them into its history.
    done = run_git(repo.path, "rebase", "main")
    lines = oomrec_lines(done)
    assert len(lines) == 1, lines
    assert lines[0].startswith("oomrec: at the new HEAD 3 OOM records lifted, unverified (fix ")
    assert one[:7] in lines[0] and two[:7] in lines[0]


def test_a_rebase_of_fix_commits_does_not_speak_per_picked_commit(cli: Cli, repo: Repo) -> None:
    base = repo.head()
    repo.git("checkout", "-q", "-b", "topic")
    two_fixes(repo)
    repo.git("checkout", "-q", "main")
    repo.commit("main work", {"main.py": "m\n"})
    with_records(repo, base)
    cli("hook", "install")
    repo.git("checkout", "-q", "topic")
    # Each picked fix runs post-commit; the fixes were in topic's history before and after.
    done = run_git(repo.path, "rebase", "main")
    assert oomrec_lines(done) == []
