"""The check the git hooks run (the hook files themselves: oomrec/hooks/files.py).

After a merge, a pull, a rebase, an amend, a branch switch, a commit that carries or quotes a
fix trailer (a squash merge, a conflicted merge or pick finished by `git commit`), or `git am`
(post-applypatch: am runs no post-commit), the hook
prints at most one line: how many records stopped applying or apply again at the new HEAD, and
the command to run. It never edits the record and never fails the git operation. The common
case (no fix, revert or pick between the old and the new HEAD) must take under 200 ms, so the
check reads that range with one plain `git log` subprocess, and imports GitPython and the
judging machinery only when such a commit is there. Nothing here imports them at module level.

After a pull (post-merge) that changed a committed record, one line more when the record and
the CSVs show a memory regression first seen in what came in (report/regressions.py); a pull
that leaves the record as it was costs one `git diff` more.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oomrec.core import gitrun
from oomrec.core.errors import OomrecError
from oomrec.staleness import fixlog as fixes
from oomrec.store.locations import load_settings, record_path

if TYPE_CHECKING:
    from oomrec.staleness.verdict import Fix
    from oomrec.store.locations import Settings

EVENTS = ("post-merge", "post-rewrite", "post-checkout", "post-commit", "post-applypatch")
_NULL_SHA = re.compile(r"0+")


def run(event: str, args: Sequence[str], stdin: Iterable[str]) -> int:
    """Run the hook for `event`: print its line, or one error line. Always returns 0."""
    try:
        for line in flag_lines(event, args, stdin):
            print(line)
    # A hook that fails would make git report the merge or rebase as failed: report, go on.
    except (Exception, KeyboardInterrupt) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"oomrec: hook {event}: {message}", file=sys.stderr)
    return 0


def flag_lines(event: str, args: Sequence[str], stdin: Iterable[str]) -> list[str]:
    """At most one line: what the git operation `event` changed about which records apply."""
    settings = load_settings()
    key = fixes.trailer_key(settings)
    path = record_path(None, settings)
    if not (_has_content(path) or _has_content(path.with_name(path.name + ".archive"))):
        return []
    moved = _moved(event, args, stdin, key)
    if moved is None:
        return []
    old, new = moved
    lines = _staleness_lines(event, path, key, old, new)
    if event == "post-merge" and old is not None:
        lines += _regression_lines(path, settings, old, new)
    return lines


def _staleness_lines(event: str, path: Path, key: str, old: str | None, new: str) -> list[str]:
    """The line on records a fix took out of play, or put back, between `old` and `new`."""
    revs = [f"{old}...{new}"] if old else [new]
    found = fixes.parse_log(_git("log", *fixes.log_args(key, revs)), key)
    if not any(e.globs or e.fix_ids or e.picked_from or e.reverts for e in found):
        quoted = [line for e in found for line in e.loose]
        if quoted and event == "post-commit":
            return [_quoted_line(quoted[0])]
        if _git("rev-parse", "--is-shallow-repository").strip() == "true":
            return [
                "oomrec: no OOM fix found, but this clone is shallow: fixes below the cut are "
                "not seen (git fetch --unshallow, or --deepen N)"
            ]
        return []
    return _compare(path, key, old, new)


def _moved(
    event: str, args: Sequence[str], stdin: Iterable[str], key: str
) -> tuple[str | None, str] | None:
    """The old and the new HEAD of the operation, or None when there is nothing to check."""
    if event == "post-merge":
        # git passes 1 for a squash merge, which makes no commit (post-commit sees it later).
        return None if args[:1] == ["1"] else ("ORIG_HEAD", "HEAD")
    if event == "post-rewrite":
        if args[:1] == ["amend"]:
            # An amend also runs post-commit, which speaks when HEAD carries the trailer: one
            # line per operation.
            if _post_commit_speaks(key):
                return None
            # stdin: "<old-sha> <new-sha> [<extra>]" per rewritten commit.
            pairs = [fields for fields in map(str.split, stdin) if len(fields) >= 2]
            return (pairs[0][0], "HEAD") if pairs else None
        return ("ORIG_HEAD", "HEAD")
    if event == "post-checkout":
        # prev HEAD, new HEAD, 1 for a branch checkout (0: files only).
        if len(args) < 3 or args[2] != "1" or args[0] == args[1] or _rebasing():
            return None
        return (None if _NULL_SHA.fullmatch(args[0]) else args[0], args[1])
    if event == "post-commit":
        # A rebase runs post-commit per picked commit: its post-rewrite speaks for all of them.
        if _rebasing():
            return None
        # `cherry-pick A..B` and `revert F1 F2` run post-commit per commit, under git's
        # sequencer: wait for the last one, then speak for the whole operation.
        sequence = _sequence_start()
        if sequence == "":
            return None
        parents = _post_commit_speaks(key) if sequence is None else []
        if parents is None:
            return None
        if sequence is not None:
            return (sequence, "HEAD")
        return ("HEAD^1" if parents else None, "HEAD")
    if event == "post-applypatch":
        # `git am` commits each patch without post-commit: this hook runs after each instead.
        # Speak once, after the last patch, for all the commits since am began (ORIG_HEAD).
        return _am_moved()
    raise OomrecError(f"unknown hook {event!r}; oomrec has {', '.join(EVENTS)}")


def _regression_lines(path: Path, settings: Settings, old: str, new: str) -> list[str]:
    """After a pull (a merge) that changed the record: one line when the record and the CSVs
    show a memory regression first seen in what came in (report/regressions.py). A pull that
    leaves the record as it was costs one `git diff`; only one that changed it reads the CSVs."""
    changed = gitrun.run(
        ["diff", "--quiet", old, new, "--", str(path)], capture_output=True, text=True
    )
    if changed.returncode != 1:
        return []
    from oomrec.core.gcpause import no_cycle_collection
    from oomrec.report.frontier import record_findings
    from oomrec.store.locations import open_record

    # Opened as the commands open it: its lines are named as `record stale` names them.
    record_file, _ = open_record(None)
    with no_cycle_collection():
        _, found = record_findings(record_file, record_file.load(), settings)
    # Only what the pull brought: a regression first seen at a commit `old` already had was
    # said before.
    new_ones = [
        r
        for r in found
        if gitrun.run(
            ["merge-base", "--is-ancestor", r.stopped.commit, old], capture_output=True
        ).returncode
        != 0
    ]
    if not new_ones:
        return []
    more = f" (and {len(new_ones) - 1} more)" if len(new_ones) > 1 else ""
    return [
        f"oomrec: the pulled record shows a memory regression: {new_ones[0].line()}{more}; "
        "see: oomrec report"
    ]


def _am_moved() -> tuple[str | None, str] | None:
    """For post-applypatch: (ORIG_HEAD, HEAD) after `git am`'s last patch; None before it, and
    under a rebase (`rebase --apply` runs am; its post-rewrite speaks for it)."""
    state = Path(_git("rev-parse", "--git-path", "rebase-apply").strip())
    if (state / "rebasing").exists():
        return None
    try:
        step = int((state / "next").read_text(encoding="ascii").strip())
        last = int((state / "last").read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        step = last = 0
    if step < last:
        return None
    return ("ORIG_HEAD", "HEAD")


def _post_commit_speaks(key: str) -> list[str] | None:
    """HEAD's parents when post-commit has something to check (HEAD is a merge, a revert, a
    pick, or its message carries or quotes the fix trailer), else None."""
    shown = _git(
        "log", "-1", "--no-show-signature", "--encoding=UTF-8", "--format=%P%x00%B", "HEAD"
    )
    parents, _, body = shown.partition("\0")
    folded = body.casefold()
    if len(parents.split()) > 1 or any(
        word in folded for word in (key.casefold(), "this reverts commit ", "cherry picked from")
    ):
        return parents.split()
    return None


def _sequence_start() -> str | None:
    """Under git's sequencer (a cherry-pick or revert of several commits): the HEAD it started
    from once this is its last commit, "" before that; None outside a sequence."""
    git_dir = Path(_git("rev-parse", "--git-dir").strip())
    sequencer = git_dir / "sequencer"
    try:
        todo = (sequencer / "todo").read_text(encoding="utf-8", errors="replace")
        head = (sequencer / "head").read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    # The todo still lists the commit just made: more than one line, more are to come.
    steps = [row for row in todo.splitlines() if row.strip() and not row.startswith("#")]
    return "" if len(steps) > 1 else head or None


def _rebasing() -> bool:
    """A rebase checks out its base first: post-rewrite speaks for the whole rebase."""
    git_dir = Path(_git("rev-parse", "--git-dir").strip())
    return (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists()


def _quoted_line(quoted: str) -> str:
    return (
        f"oomrec: HEAD quotes {quoted!r} outside its trailer block, so it lifts no record; "
        f"to make it count: git commit --amend --trailer '{quoted}'"
    )


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _git(*args: str) -> str:
    # A plain subprocess, not GitPython: see the module docstring (the 200 ms budget).
    done = gitrun.run(args, capture_output=True, text=True, encoding="utf-8", errors="replace")
    if done.returncode != 0:
        stderr = done.stderr.strip().splitlines()
        raise OomrecError(f"git {args[0]} failed: {stderr[0] if stderr else done.returncode}")
    out: str = done.stdout
    return out


def _compare(path: Path, key: str, old: str | None, new: str) -> list[str]:
    from oomrec.core.gcpause import no_cycle_collection

    # The record's objects are long-lived: collecting cycles among them would only walk them.
    with no_cycle_collection():
        return _compare_at(path, key, old, new)


def _compare_at(path: Path, key: str, old: str | None, new: str) -> list[str]:
    from oomrec.core.records import RecordFile
    from oomrec.staleness.verdict import History, Status
    from oomrec.store import archive
    from oomrec.store import gitrepo as gitutil

    repo = gitutil.open_repo()
    if repo is None:
        raise OomrecError(f"{Path.cwd()}: not inside a git repository")
    record_file = RecordFile(path)
    loaded = record_file.load()
    records = loaded.records + [
        x.record for x in archive.in_play(archive.load(record_file, loaded)) if x.record is not None
    ]
    at = (new,) if old is None else (old, new)
    history = History(repo, key, [r.commit for r in records], at=at)
    after = history.judge(records, at=new)
    before = history.judge(records, at=old) if old is not None else [None] * len(records)
    stopped = [
        a
        for a, b in zip(after, before, strict=True)
        if a.status == Status.LIFTED and (b is None or b.applies)
    ]
    # (now, before) for the records a fix lifted before and no longer lifts.
    again = [
        (a, b)
        for a, b in zip(after, before, strict=True)
        if a.applies and b is not None and not b.applies
    ]
    if not stopped and not again:
        return []
    parts = []
    if stopped:
        named = _fixes(fix for j in stopped for fix in j.fixes)
        parts.append(f"{_n(len(stopped), 'OOM record')} lifted, unverified ({named})")
    if again:
        verb = "applies" if len(again) == 1 else "apply"
        gone = [fix for _, b in again for fix in b.fixes]
        why = f"{_fixes(gone)} no longer in effect" if gone else "a fix left HEAD's history"
        parts.append(f"{_n(len(again), 'record')} {verb} again ({why})")
    knows = "the sweep already knows"
    if stopped:
        knows = "the next sweep probes their cells under the guard"
    return [f"oomrec: at the new HEAD {', '.join(parts)}; {knows}; see: oomrec record stale"]


def _fixes(fixes: Iterable[Fix]) -> str:
    """Every fix involved, once each, in order: `fix 1a2b3c4 (subject), fix 5d6e7f8 (...)`."""
    named = {fix.sha: fix.describe() for fix in fixes}
    return ", ".join(named.values())


def _n(count: int, noun: str) -> str:
    return f"1 {noun}" if count == 1 else f"{count} {noun}s"
