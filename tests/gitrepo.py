"""Real throwaway git repositories for tests: `git init`, real commits, real clones."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "oomrec tests",
    "GIT_AUTHOR_EMAIL": "tests@oomrec.invalid",
    "GIT_COMMITTER_NAME": "oomrec tests",
    "GIT_COMMITTER_EMAIL": "tests@oomrec.invalid",
}


def git(repo: Path, *args: str, input: str | None = None) -> str:
    """Run git in `repo` with the test identity; returns stdout without the trailing newline."""
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **IDENTITY},
        capture_output=True,
        text=True,
        input=input,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {repo}: {done.stderr.strip()}")
    return done.stdout.rstrip("\n")


class Repo:
    """A real repository in a temp dir, with helpers to commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", "-b", "main")
        self._n = 0

    def commit(self, message: str, files: dict[str, str] | None = None) -> str:
        """Commit `files` (path -> content; a counter file when none) and return the full SHA."""
        self._n += 1
        for rel, content in (files or {f"file{self._n}.txt": f"change {self._n}\n"}).items():
            target = self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
            git(self.path, "add", "--", rel)
        git(self.path, "commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return git(self.path, "rev-parse", "HEAD")

    def git(self, *args: str, input: str | None = None) -> str:
        return git(self.path, *args, input=input)


FIX_MESSAGE = "Chunk the prefill\n\nOOM-Fix: gemma-4-*\n"


@dataclass(frozen=True)
class History:
    """base - pre - fix - post on main; `side` branches off pre and never merges the fix;
    `feat` branches off pre and `merged` merges the fix into it."""

    repo: Repo
    base: str
    pre: str
    fix: str
    post: str
    side: str
    feat: str
    merged: str


def build_history(repo: Repo) -> History:
    base = repo.head()
    pre = repo.commit("pre: before the fix")
    repo.git("checkout", "-q", "-b", "side", pre)
    side = repo.commit("side: never merges the fix")
    repo.git("checkout", "-q", "-b", "feat", pre)
    feat = repo.commit("feat: merges the fix later")
    repo.git("checkout", "-q", "main")
    fix = repo.commit(FIX_MESSAGE)
    post = repo.commit("post: after the fix")
    repo.git("checkout", "-q", "feat")
    repo.git("merge", "-q", "--no-ff", "-m", "merge the fix into feat", fix)
    merged = repo.head()
    repo.git("checkout", "-q", "main")
    return History(repo, base, pre, fix, post, side, feat, merged)
