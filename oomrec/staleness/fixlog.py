"""Fix commits and the commits that copy or revert them, as git's log shows them.

A commit whose trailer block holds `OOM-Fix: <glob>[, <glob>...]` fixed the memory use of the
models its globs match (`*` for all). The commits that matter for judging records (a fix, a copy
of one, a revert) are all found by one `git log` whose `--grep` lets git skip every other commit
before formatting it; this module holds that log's arguments and its parser.

No git import here: the hooks' fast path runs that `git log` as a plain subprocess (GitPython
alone would cost most of its 200 ms budget) and parses it with the same code as gitutil.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from oomrec.core.errors import OomrecError
from oomrec.store.locations import Settings

DEFAULT_TRAILER = "OOM-Fix"
# Appended to the fix trailer's key: the trailer that names a fix across copies that change it.
ID_SUFFIX = "-Id"

# A git trailer token: no spaces, no separator; checked so it can go into a --grep pattern.
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_FIELD_SEP = "\x00"
_VALUE_SEP = "\x1f"
_COMMIT_SEP = "\x1e"
# git's own lines: `git cherry-pick -x` and `git revert` write them, in these exact words.
_PICKED = re.compile(r"\(cherry picked from commit ([0-9a-fA-F]{4,64})\)")
_REVERTS = re.compile(r"This reverts commit ([0-9a-fA-F]{4,64})")
# `git revert -m N M` adds which parent it kept: the mainline, whose side was not reverted.
_MAINLINE = re.compile(r"reversing\s+changes\s+made\s+to\s+([0-9a-fA-F]{4,64})")


def first_match(globs: Sequence[str], model: str) -> str | None:
    """The first glob that matches `model` (case-sensitively, as model directories are)."""
    for glob in globs:
        if fnmatchcase(model, glob):
            return glob
    return None


@dataclass(frozen=True, slots=True)
class Event:
    """A commit that can change which fixes are in effect: it carries the fix trailer or the
    fix-id trailer, says it was cherry-picked, or says it reverts a commit."""

    sha: str
    subject: str
    globs: tuple[str, ...]
    fix_ids: tuple[str, ...]
    picked_from: tuple[str, ...]
    reverts: tuple[str, ...]
    # Lines that look like the fix trailer but are not in the trailer block (quoted, indented).
    loose: tuple[str, ...] = ()
    # For a revert of a merge: the parent it kept (`reversing changes made to <sha>`).
    mainline: str | None = None


def trailer_key(settings: Settings) -> str:
    """The fix trailer's key: `[tool.oomrec] fix_trailer`, default `OOM-Fix`."""
    key = settings.get("fix_trailer", DEFAULT_TRAILER)
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise OomrecError(
            f"{settings.source}: [tool.oomrec] fix_trailer {key!r} is not a trailer key; use "
            "letters, digits and '-', e.g. fix_trailer = \"OOM-Fix\""
        )
    return key


def log_args(
    key: str, revs: Sequence[str] = (), walk: bool = True, stdin: bool = False
) -> list[str]:
    """Arguments for `git log` listing the event commits among `revs` (and their history, when
    `walk`); with `stdin` the revisions come on git's standard input instead.

    The patterns are passed as basic regular expressions, explicitly, with the options that make
    the output independent of user config; the trailer placeholders then keep only real trailers.
    """
    fmt = (
        "--format=%H%x00%s%x00"
        f"%(trailers:key={key},valueonly,unfold,separator=%x1f)%x00"
        f"%(trailers:key={key}{ID_SUFFIX},valueonly,unfold,separator=%x1f)%x00%B%x1e"
    )
    return [
        # NUL cannot go into argv; git expands %x00, %x1f and %x1e itself.
        fmt,
        "--basic-regexp",
        "--regexp-ignore-case",
        "--no-show-signature",
        "--no-notes",
        "--encoding=UTF-8",
        f"--grep={key}",
        "--grep=(cherry picked from commit ",
        "--grep=This reverts commit ",
        *([] if walk else ["--no-walk"]),
        *(["--stdin"] if stdin else []),
        "--end-of-options",
        *revs,
        "--",
    ]


def parse_log(text: str, key: str) -> list[Event]:
    """The event commits in `git log` output made with `log_args`, in git's order."""
    found: list[Event] = []
    loose_line = re.compile(rf"^\s*{re.escape(key)}\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
    for chunk in text.split(_COMMIT_SEP):
        fields = chunk.lstrip("\n").split(_FIELD_SEP)
        if len(fields) != 5:
            continue
        sha, subject, values, ids, body = fields
        globs = parse_globs(values.split(_VALUE_SEP))
        fix_ids = tuple(dict.fromkeys(v.strip() for v in ids.split(_VALUE_SEP) if v.strip()))
        picked = tuple(m.lower() for m in _PICKED.findall(body))
        reverts = tuple(m.lower() for m in _REVERTS.findall(body))
        trailer_values = {v.strip() for v in values.split(_VALUE_SEP)}
        loose = tuple(
            m.group(0).strip()
            for m in loose_line.finditer(body)
            if m.group(1).strip() not in trailer_values
        )
        mainline = _MAINLINE.search(body)
        if globs or fix_ids or picked or reverts or loose:
            found.append(
                Event(
                    sha,
                    subject,
                    globs,
                    fix_ids,
                    picked,
                    reverts,
                    loose,
                    mainline.group(1).lower() if mainline else None,
                )
            )
    return found


def parse_globs(values: Sequence[str]) -> tuple[str, ...]:
    """The model globs of one or more trailer values (`gemma-4-*, qwen3-*`), in order, once each."""
    globs = (glob.strip() for value in values for glob in value.split(","))
    return tuple(dict.fromkeys(glob for glob in globs if glob))
