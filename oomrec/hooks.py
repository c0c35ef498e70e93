"""The git hooks: the shims `oomrec hook install` writes, and the check they run.

`oomrec hook post-merge` / `post-rewrite` only flag: one line per incoming fix commit that makes
records stale, with the prune command to run. They never edit the record and never fail the git
operation. The common case (no fix came in) must take under 200 ms, so the check reads the
range's trailers with one plain `git log` subprocess, and imports GitPython and the judging
machinery only when a fix commit is there. Nothing here imports them at module level.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from oomrec import fixes
from oomrec.config import display_path, load_settings, record_path
from oomrec.errors import OomrecError

EVENTS = ("post-merge", "post-rewrite")
# How uninstall (and install, when updating) knows a hook file is oomrec's own.
MARKER = "# oomrec-hook: written by `oomrec hook install`; `oomrec hook uninstall` removes it"
# The range a merge or a rebase brought in (git sets ORIG_HEAD to the tip before either).
_INCOMING = "ORIG_HEAD..HEAD"


def shim(event: str) -> str:
    """The POSIX sh hook that runs `oomrec hook <event>`: silent and exit 0 without oomrec."""
    return (
        "#!/bin/sh\n"
        f"{MARKER}\n"
        "# Flags OOM records that an incoming memory fix made stale. It never edits the record,\n"
        "# never fails the git operation, and stays silent when oomrec is not installed.\n"
        "command -v oomrec >/dev/null 2>&1 || exit 0\n"
        f'oomrec hook {event} "$@" || true\n'
        "exit 0\n"
    )


def run(event: str, args: Sequence[str], stdin: Iterable[str]) -> int:
    """Run the hook for `event`: print its flag lines, or one error line. Always returns 0."""
    try:
        for line in flag_lines(event, args, stdin):
            print(line)
    # A hook that fails would make git report the merge or rebase as failed: report, go on.
    except (Exception, KeyboardInterrupt) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"oomrec: hook {event}: {message}", file=sys.stderr)
    return 0


def flag_lines(event: str, args: Sequence[str], stdin: Iterable[str]) -> list[str]:
    """One line per fix commit that `event` brought in and that makes records stale."""
    settings = load_settings()
    key = fixes.trailer_key(settings)
    path = record_path(None, settings)
    if not _has_content(path):
        return []
    revs, walk = _incoming(event, args, stdin)
    if not revs:
        return []
    found = fixes.parse_log(_git_log(fixes.log_args(key, revs, walk=walk)), key)
    if not found:
        return []
    return _flags(found, path)


def flag_line(fix: fixes.FixCommit, count: int) -> str:
    """`oomrec: 2 OOM records predate fix 1a2b3c4 (OOM-Fix: gemma-4-*): oomrec record prune ...`"""
    what = "1 OOM record predates" if count == 1 else f"{count} OOM records predate"
    return f"oomrec: {what} fix {fix.short} ({fix.label}): {fixes.prune_command(fix)}"


def _incoming(event: str, args: Sequence[str], stdin: Iterable[str]) -> tuple[list[str], bool]:
    """The revisions to read trailers from, and whether to walk their history."""
    if event == "post-merge":
        # git passes 1 for a squash merge, which makes no commit: nothing entered the history.
        return ([], True) if args[:1] == ["1"] else ([_INCOMING], True)
    if event == "post-rewrite":
        if args[:1] == ["amend"]:
            # stdin: "<old-sha> <new-sha> [<extra>]" per rewritten commit; only the new ones.
            return [fields[1] for fields in map(str.split, stdin) if len(fields) >= 2], False
        # A rebase (also `git pull --rebase`): the upstream commits it moved onto and the
        # rebased commits (the ones on stdin) are all in ORIG_HEAD..HEAD.
        return [_INCOMING], True
    raise OomrecError(f"unknown hook {event!r}; oomrec has {', '.join(EVENTS)}")


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _git_log(args: list[str]) -> str:
    # A plain subprocess, not GitPython: see the module docstring (the 200 ms budget).
    done = subprocess.run(
        ["git", "log", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        check=False,
    )
    if done.returncode != 0:
        stderr = done.stderr.strip().splitlines()
        raise OomrecError(f"git log failed: {stderr[0] if stderr else done.returncode}")
    return done.stdout


def _flags(found: list[fixes.FixCommit], path: Path) -> list[str]:
    from oomrec import gitutil
    from oomrec.records import RecordFile
    from oomrec.stale import STALE, judge_fixes

    repo = gitutil.open_repo()
    if repo is None:
        raise OomrecError(f"{Path.cwd()}: not inside a git repository")
    records = RecordFile(path).load().records
    counts = [(j.fix, j.count(records, STALE)) for j in judge_fixes(repo, found, records)]
    return [flag_line(fix, count) for fix, count in counts if count]


def install(force: bool = False) -> list[str]:
    """Write both hooks into the repository's hooks directory (as git resolves it, honouring
    core.hooksPath); returns one line per hook saying what happened.

    A hook that is not oomrec's is never overwritten without `force`: nothing is written then.
    """
    directory = _hooks_dir()
    actions: list[tuple[str, Path, str]] = []
    foreign: list[str] = []
    for event in EVENTS:
        path = directory / event
        current = _read_hook(path)
        if current is None:
            actions.append((event, path, "installed"))
        elif current == shim(event):
            actions.append((event, path, "already installed"))
        elif MARKER in current:
            actions.append((event, path, "updated"))
        elif force:
            actions.append((event, path, "replaced (--force)"))
        else:
            foreign.append(event)
    if foreign:
        shown = " and ".join(display_path(directory / event) for event in foreign)
        chain = "; ".join(f'oomrec hook {event} "$@" || true' for event in foreign)
        raise OomrecError(
            f"{shown}: not oomrec's hook, left as is; to keep it, chain oomrec by adding the "
            f"line(s) `{chain}` to it (post-rewrite needs the hook's stdin), or pass --force "
            "to replace it"
        )
    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for event, path, action in actions:
        if action != "already installed":
            # Unlink first: replacing a symlinked hook must not write through to its target.
            path.unlink(missing_ok=True)
            path.write_text(shim(event), encoding="utf-8")
            path.chmod(0o755)
        lines.append(f"{action}: {display_path(path)}")
    return lines


def uninstall() -> list[str]:
    """Remove the hooks oomrec installed (by their marker line); leave every other hook."""
    directory = _hooks_dir()
    lines = []
    for event in EVENTS:
        path = directory / event
        current = _read_hook(path)
        if current is None:
            lines.append(f"not installed: {display_path(path)}")
        elif MARKER in current:
            path.unlink()
            lines.append(f"removed: {display_path(path)}")
        else:
            lines.append(f"left as is: {display_path(path)} (not installed by oomrec)")
    return lines


def _hooks_dir() -> Path:
    from oomrec import gitutil

    repo = gitutil.open_repo()
    if repo is None:
        raise OomrecError(
            f"{Path.cwd()}: not inside a git repository; run this in the repository whose "
            "merges should be checked"
        )
    return gitutil.hooks_dir(repo)


def _read_hook(path: Path) -> str | None:
    if not os.path.lexists(path):
        return None
    if path.is_dir():
        raise OomrecError(f"{display_path(path)}: is a directory, not a hook; remove it first")
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        # A dangling symlink: a hook that cannot run, so not oomrec's either.
        return ""
