"""oomrec in a user's repository: the first write of a record keeps it (and the files beside it)
out of `git status` through info/exclude, never the tracked .gitignore, and says so once."""

from __future__ import annotations

import sys
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


RUNNER = (
    "import sys\n"
    "model, length, cell = sys.argv[1:4]\n"
    "open(cell, 'w').write('HEADER\\n' + f'{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,'"
    " + f'2026-07-03,hw,0.3.3,release,32,\"Hi\",{length}\\n')\n"
)


def test_a_sweep_leaves_only_its_csv_in_git_status(
    cli: Cli, user_repo: Repo, tmp_path: Path
) -> None:
    """The lock, the provenance file and its journal are machine-local: info/exclude covers
    them, as it covers the record; the CSV is the user's to commit."""
    (user_repo.path / "models" / "a").mkdir(parents=True)
    (user_repo.path / "models" / "a" / "w.safetensors").write_text("x")
    user_repo.git("add", "models")
    user_repo.git("commit", "-q", "-m", "a model")
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    result = cli(
        "sweep", "--models", "a", "--lengths", "512 2048", "--output", "benchmarks/out.csv",
        "--runner", f"{sys.executable} {runner} {{model}} {{length}} {{cell_csv}}",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (user_repo.path / "benchmarks" / "out.csv.oomrec.json").exists()
    status = user_repo.git("status", "--porcelain", "--untracked-files=all").splitlines()
    assert status == ["?? benchmarks/out.csv"]
    assert "so the sweep's own files stay out of `git status`" in result.stderr
    again = cli(
        "sweep", "--models", "a", "--lengths", "512", "--output", "benchmarks/out.csv",
        "--runner", f"{sys.executable} {runner} {{model}} {{length}} {{cell_csv}}", "--resume",
    )  # fmt: skip
    assert again.exit_code == 0, again.stderr
    assert "info/exclude" not in again.stderr
