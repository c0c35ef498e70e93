"""Every git question oomrec asks, answered through GitPython.

GitPython costs ~0.17 s to import, so this module is imported only by the commands that need
git, never by `oomrec --help`.
"""

from __future__ import annotations

from pathlib import Path

import git
from git.exc import GitCommandError, InvalidGitRepositoryError, NoSuchPathError

from oomrec.errors import OomrecError


def open_repo(start: Path | None = None) -> git.Repo | None:
    """The repository containing `start` (default: the cwd), or None outside any repository."""
    try:
        return git.Repo(start or Path.cwd(), search_parent_directories=True)
    except (InvalidGitRepositoryError, NoSuchPathError):
        return None


def head_sha(repo: git.Repo | None) -> str | None:
    """HEAD's full SHA, or None outside git or in a repository with no commit yet."""
    if repo is None:
        return None
    try:
        return repo.head.commit.hexsha
    except ValueError:
        return None


def resolve_commit(repo: git.Repo | None, rev: str) -> str:
    """The full SHA of the commit `rev` names; OomrecError when it names none."""
    if repo is None:
        raise OomrecError(
            f"cannot resolve commit {rev!r}: not inside a git repository; run from the repo"
        )
    try:
        return repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    except GitCommandError:
        raise OomrecError(
            f"{rev!r} is not a commit in {repo.working_tree_dir}; check the revision "
            "(git log --oneline)"
        ) from None
