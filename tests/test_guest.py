"""oomrec in a user's repository: the first write of a record keeps it (and the files beside it)
out of `git status` through info/exclude, never the tracked .gitignore, and says so once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]
NOTICE = "oomrec: added /benchmarks/.oom-record and /benchmarks/.oom-record.* to "


@pytest.fixture
def user_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A repository that has never seen oomrec (no ignore rule for its record)."""
    r = Repo(tmp_path / "user")
    r.commit("their project", {"src/main.py": "print('hi')\n"})
    monkeypatch.chdir(r.path)
    return r


def test_the_first_write_excludes_the_record_and_says_so_once(cli: Cli, user_repo: Repo) -> None:
    first = cli("record", "add", "m", "512")
    assert first.exit_code == 0, first.stderr
    assert first.stderr.startswith(NOTICE)
    assert str(user_repo.path / ".git" / "info" / "exclude") in first.stderr
    exclude = (user_repo.path / ".git" / "info" / "exclude").read_text()
    assert exclude.endswith("\n/benchmarks/.oom-record\n/benchmarks/.oom-record.*\n")
    # The record and its lock exist, and git does not show them.
    assert (user_repo.path / "benchmarks" / ".oom-record.lock").exists()
    assert user_repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert not (user_repo.path / ".gitignore").exists()
    second = cli("record", "add", "n", "512")
    assert (second.exit_code, second.stderr) == (0, "")
    assert (user_repo.path / ".git" / "info" / "exclude").read_text() == exclude


def test_a_record_already_ignored_changes_nothing(cli: Cli, user_repo: Repo) -> None:
    user_repo.commit("ignore it", {".gitignore": "benchmarks/.oom-record*\n"})
    before = (user_repo.path / ".git" / "info" / "exclude").read_text()
    result = cli("record", "add", "m", "512")
    assert (result.exit_code, result.stderr) == (0, "")
    assert (user_repo.path / ".git" / "info" / "exclude").read_text() == before
    assert (user_repo.path / ".gitignore").read_text() == "benchmarks/.oom-record*\n"


def test_a_linked_worktree_writes_the_common_exclude_and_odd_names_are_escaped(
    cli: Cli, user_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    linked = tmp_path / "linked"
    user_repo.git("worktree", "add", "-q", str(linked))
    monkeypatch.chdir(linked)
    (linked / "data").mkdir()
    result = cli("record", "add", "m", "512", "--record", "data/#odd [1]*.rec")
    assert result.exit_code == 0, result.stderr
    exclude = (user_repo.path / ".git" / "info" / "exclude").read_text()
    assert "/data/\\#odd \\[1]\\*.rec\n" in exclude
    assert (linked / "data" / "#odd [1]*.rec").exists()
    assert user_repo.git("-C", str(linked), "status", "--porcelain", "--untracked-files=all") == ""


def test_reads_and_dry_runs_write_no_exclude(cli: Cli, user_repo: Repo) -> None:
    before = (user_repo.path / ".git" / "info" / "exclude").read_text()
    assert cli("record", "list").exit_code == 0
    assert cli("record", "import-csv", "--dry-run", "src").exit_code == 0
    assert (user_repo.path / ".git" / "info" / "exclude").read_text() == before


def test_outside_git_nothing_is_said(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("record", "add", "m", "512")
    assert (result.exit_code, result.stderr) == (0, "")
    assert (tmp_path / "benchmarks" / ".oom-record").exists()
