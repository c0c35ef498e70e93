"""Repositories laid out as people lay them out: a bare repository with linked worktrees,
`$GIT_DIR`/`$GIT_WORK_TREE` from elsewhere, SHA-256 object names; through the CLI and the hooks."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import IDENTITY, git

Cli = Callable[..., CliResult]
VENV_BIN = os.path.dirname(sys.executable)


def oomrec(where: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", *args],
        cwd=where,
        env={**os.environ, **IDENTITY, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def code_repo(path: Path, *init: str) -> str:
    """A repository at `path` (`git init` with `init` options) with prefill.py committed; the
    commit's SHA."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main", *init)
    (path / "prefill.py").write_text("v1\n")
    git(path, "add", "prefill.py")
    git(path, "commit", "-q", "-m", "base")
    return git(path, "rev-parse", "HEAD")


def with_record(repo: Path, commit: str) -> None:
    record = repo / "benchmarks" / ".oom-record"
    record.parent.mkdir()
    record.write_text(f"gemma-4-31b,8192,2026-07-03,{commit},,b.csv\n")


@pytest.fixture
def bare(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A bare repository with two linked worktrees: (bare, worktree on main, worktree on b)."""
    seed = tmp_path / "seed"
    code_repo(seed)
    bare = tmp_path / "proj.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    git(bare, "worktree", "add", "-q", str(tmp_path / "wa"), "main")
    git(bare, "worktree", "add", "-q", "-b", "b", str(tmp_path / "wb"), "main")
    return bare, tmp_path / "wa", tmp_path / "wb"


def test_worktrees_of_a_bare_repository_share_one_record(bare: tuple[Path, Path, Path]) -> None:
    repo, wa, wb = bare
    oomrec(wa, "record", "add", "gemma-4-31b", "8192")
    shared = repo / "oomrec" / "benchmarks" / ".oom-record"
    assert shared.read_text().startswith("gemma-4-31b,8192,")
    listed = oomrec(wb, "record", "list")
    assert "gemma-4-31b" in listed and "applies" in listed
    # Nothing shows in either worktree's status: the record is inside the git dir.
    assert git(wa, "status", "--porcelain") == ""
    assert git(wb, "status", "--porcelain") == ""
    # A fix on one worktree's branch lifts the record there only.
    (wa / "prefill.py").write_text("chunked\n")
    git(wa, "commit", "-q", "-am", "Chunk\n\nOOM-Fix: gemma-4-*")
    assert "lifted, unverified" in oomrec(wa, "record", "list")
    assert "lifted, unverified" not in oomrec(wb, "record", "list")


def test_git_dir_and_work_tree_from_elsewhere(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = code_repo(repo)
    (repo / "prefill.py").write_text("chunked\n")
    git(repo, "commit", "-q", "-am", "Chunk\n\nOOM-Fix: gemma-4-*")
    with_record(repo, base)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}
    listed = oomrec(elsewhere, "record", "list", env=env)
    assert "lifted, unverified: fix" in listed
    # Without $GIT_WORK_TREE git takes the cwd as the worktree's top: so does oomrec.
    listed = oomrec(repo, "record", "list", env={"GIT_DIR": str(repo / ".git")})
    assert "lifted, unverified: fix" in listed


def test_a_sha256_repository_through_the_cli_and_the_hooks(tmp_path: Path) -> None:
    repo = tmp_path / "s256"
    base = code_repo(repo, "--object-format=sha256")
    assert len(base) == 64
    with_record(repo, base)
    env = {"PATH": VENV_BIN + os.pathsep + os.environ["PATH"]}
    oomrec(repo, "hook", "install", env=env)
    (repo / "prefill.py").write_text("chunked\n")
    done = subprocess.run(
        ["git", "commit", "-q", "-am", "Chunk\n\nOOM-Fix: gemma-4-*"],
        cwd=repo,
        env={**os.environ, **IDENTITY, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    fix = git(repo, "rev-parse", "HEAD")
    assert f"1 OOM record lifted, unverified (fix {fix[:7]} (Chunk))" in done.stdout + done.stderr
    assert "lifted, unverified: fix" in oomrec(repo, "record", "list")
    reverted = subprocess.run(
        ["git", "revert", "--no-edit", "HEAD"],
        cwd=repo,
        env={**os.environ, **IDENTITY, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "1 record applies again" in reverted.stdout + reverted.stderr
    assert oomrec(repo, "record", "list").rstrip().endswith("applies")
