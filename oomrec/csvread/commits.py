"""The commit (and its date) a CSV row was measured at, where the row does not say: the
provenance oomrec's sweep keeps beside its CSV (`<csv>.oomrec.json`), else the commit that
added the row's line to git, else none (`unknown`). The import and the report both ask here, so
a lifted OOM is lifted in both.

git is asked once for the adding commits of every file (one `git log`) and, for a file changed
since (by a later commit or in the working tree), once for just the rows' lines (`git blame`).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from oomrec.core.errors import OomrecError

if TYPE_CHECKING:
    from oomrec.store.gitrepo import AddedBy


class Wanted(NamedTuple):
    """A row git may be asked about: its file as git names it (repo-relative), its line as git
    numbers it, and whether it lacks a commit of its own (else only its date is wanted)."""

    source: str
    git_line: int
    lacks_commit: bool


@dataclass
class GitCommits:
    """What git says about the rows asked for: each file's adding commit and, for the files
    changed after it, each row's own commit (None: not committed yet); and what it could not say."""

    added_by: dict[str, AddedBy] = field(default_factory=dict)
    by_line: dict[str, dict[int, AddedBy | None]] = field(default_factory=dict)
    # Files git never added (or outside any repository), and files it could not blame, why.
    no_adding_commit: list[str] = field(default_factory=list)
    blame_failed: list[tuple[str, str]] = field(default_factory=list)

    def of(self, row: Wanted) -> AddedBy | None:
        """The commit a row was added in: its line's (for a file changed since), else its
        file's; None when git cannot say."""
        lines = self.by_line.get(row.source)
        if lines is not None and row.lacks_commit:
            return lines.get(row.git_line)
        return self.added_by.get(row.source)

    def uncommitted(self, row: Wanted) -> bool:
        """Whether the row, lacking a commit, is on a line git has not committed yet."""
        lines = self.by_line.get(row.source)
        return row.lacks_commit and lines is not None and lines.get(row.git_line) is None


def git_commits(rows: Iterable[Wanted], root: Path, in_git: bool) -> GitCommits:
    """Ask git about these rows (see the module's docstring)."""
    rows = list(rows)
    needed = sorted({r.source for r in rows})
    out = GitCommits()
    if not needed:
        return out
    if not in_git:
        out.no_adding_commit = needed
        return out
    # GitPython costs ~0.2 s to import: only paid when some row lacks a commit or a date.
    from oomrec.store import gitrepo

    relative = [s for s in needed if not posixpath.isabs(s)]
    out.added_by = gitrepo.first_added(root, relative)
    out.no_adding_commit = [s for s in needed if s not in out.added_by]
    lineless: dict[str, list[int]] = {}
    for row in rows:
        if row.lacks_commit and row.source in out.added_by:
            lineless.setdefault(row.source, []).append(row.git_line)
    if not lineless:
        return out
    changed = {s for s in lineless if out.added_by[s].changed_later}
    changed |= gitrepo.uncommitted(root, lineless)
    for source in sorted(changed):
        try:
            out.by_line[source] = gitrepo.line_commits(root, source, lineless[source])
        except OomrecError as exc:
            # One file git cannot blame (changed while read, a name git quotes) does not stop
            # the others: its rows get no line commit, hence `unknown`, which prune keeps.
            out.blame_failed.append((source, str(exc)))
            out.by_line[source] = {}
    return out


def row_date(date: str | None, commit: AddedBy | None, path: str) -> str:
    """When a row was measured: its own date, else its commit's, else its file's modification
    date (the last hint left)."""
    if date:
        return date
    if commit is not None:
        return commit.date
    try:
        return Date.fromtimestamp(os.stat(path).st_mtime).isoformat()
    except (OSError, OverflowError, ValueError):
        # Gone, or a time stamp no date can hold (`touch -d @1e18`).
        return Date.today().isoformat()
