"""The fix log asked of git through GitPython: the event commits of a revision range, and every
commit naming a fix id. Apart from fixlog.py (the log's arguments and parser), which the git
hooks' fast path imports without GitPython."""

from __future__ import annotations

from collections.abc import Sequence

import git
from git.exc import GitCommandError

from oomrec.core.errors import OomrecError
from oomrec.staleness.fixlog import ID_SUFFIX, Event, log_args, parse_log
from oomrec.store.gitrepo import first_stderr_line


def range_events(repo: git.Repo, revs: Sequence[str], key: str) -> list[Event]:
    """The event commits in a range such as `A..B`, in one `git log`."""
    try:
        out = repo.git.log(*log_args(key, revs))
    except GitCommandError as exc:
        shown = " ".join(revs)
        raise OomrecError(
            f"{shown!r} is not a revision range in {repo.working_tree_dir} "
            f"(git: {first_stderr_line(exc)}); give one such as main..HEAD"
        ) from None
    return parse_log(out, key)


def commits_with_ids(repo: git.Repo, key: str) -> dict[str, tuple[str, ...]]:
    """Every commit on any ref (`git log --all`) whose trailer block names a fix id (`<key>-Id`),
    with its ids, in ONE `git log`: the parts and copies of a fix wherever they are."""
    out = repo.git.log(
        "--all",
        f"--format=%H%x00%(trailers:key={key}{ID_SUFFIX},valueonly,unfold,separator=%x1f)%x1e",
        "--basic-regexp",
        "--regexp-ignore-case",
        "--no-show-signature",
        "--no-notes",
        "--encoding=UTF-8",
        f"--grep={key}{ID_SUFFIX}",
        "--",
    )
    found: dict[str, tuple[str, ...]] = {}
    for chunk in out.split("\x1e"):
        sha, _, ids = chunk.strip("\n").partition("\0")
        names = tuple(v.strip() for v in ids.split("\x1f") if v.strip())
        if sha and names:
            found[sha] = names
    return found
