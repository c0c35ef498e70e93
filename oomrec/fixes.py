"""Fix commits: a commit carrying the trailer `OOM-Fix: <glob>[, <glob>...]` fixed the memory use
of the models its globs match (`*` for all). The trailer survives rebase and cherry-pick, and a
whole range is read with one `git log`.

No git import here: the hooks' fast path runs that `git log` as a plain subprocess (GitPython
alone would cost most of its 200 ms budget) and parses it with the same code as gitutil.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from oomrec.config import Settings
from oomrec.errors import OomrecError

DEFAULT_TRAILER = "OOM-Fix"
SHORT_SHA = 7

# A git trailer token: no spaces, no separator; checked so it can go into a --grep pattern.
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_FIELD_SEP = "\x00"
_VALUE_SEP = "\x1f"
_COMMIT_SEP = "\x1e"


@dataclass(frozen=True, slots=True)
class FixCommit:
    """A commit whose trailer says which models' memory use it fixed."""

    sha: str
    subject: str
    globs: tuple[str, ...]
    trailer: str = DEFAULT_TRAILER

    @property
    def short(self) -> str:
        return self.sha[:SHORT_SHA]

    @property
    def label(self) -> str:
        """The trailer as written: `OOM-Fix: gemma-4-*, qwen3-*`."""
        return f"{self.trailer}: {', '.join(self.globs)}"

    def glob_for(self, model: str) -> str | None:
        """The first of the fix's globs that matches `model`, or None when none does."""
        for glob in self.globs:
            if fnmatchcase(model, glob):
                return glob
        return None


def trailer_key(settings: Settings) -> str:
    """The fix trailer's key: `[tool.oomrec] fix_trailer`, default `OOM-Fix`."""
    key = settings.get("fix_trailer", DEFAULT_TRAILER)
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise OomrecError(
            f"{settings.source}: [tool.oomrec] fix_trailer {key!r} is not a trailer key; use "
            "letters, digits and '-', e.g. fix_trailer = \"OOM-Fix\""
        )
    return key


def log_args(key: str, revs: Sequence[str], walk: bool = True) -> list[str]:
    """Arguments for `git log` listing the commits of `revs` that carry the trailer `key`
    (only the commits named in `revs`, not their ancestors, when not `walk`).

    `--grep` lets git skip the (usual) commits without the key before formatting them; the
    trailer placeholder then keeps only real trailers (a `key:` line in the last paragraph).
    """
    return [
        # NUL cannot go into argv; git expands %x00, %x1f and %x1e itself.
        f"--format=%H%x00%s%x00%(trailers:key={key},valueonly,unfold,separator=%x1f)%x1e",
        "--regexp-ignore-case",
        f"--grep=^{key}[[:blank:]]*:",
        *([] if walk else ["--no-walk"]),
        "--end-of-options",
        *revs,
        "--",
    ]


def parse_log(text: str, key: str) -> list[FixCommit]:
    """The fix commits in `git log` output made with `log_args`, newest first as git lists them."""
    found: list[FixCommit] = []
    for chunk in text.split(_COMMIT_SEP):
        fields = chunk.lstrip("\n").split(_FIELD_SEP)
        if len(fields) != 3:
            continue
        sha, subject, values = fields
        globs = parse_globs(values.split(_VALUE_SEP))
        if globs:
            found.append(FixCommit(sha=sha, subject=subject, globs=globs, trailer=key))
    return found


def parse_globs(values: Sequence[str]) -> tuple[str, ...]:
    """The model globs of one or more trailer values (`gemma-4-*, qwen3-*`), in order, once each."""
    globs = (glob.strip() for value in values for glob in value.split(","))
    return tuple(dict.fromkeys(glob for glob in globs if glob))


def prune_command(fix: FixCommit, record_arg: str | None = None) -> str:
    """The `oomrec record prune` command that removes what `fix` made stale, ready to paste."""
    parts = ["oomrec", "record", "prune", "--since", fix.short]
    if "*" not in fix.globs:
        for glob in fix.globs:
            parts += ["--model", shlex.quote(glob)]
    if record_arg is not None:
        parts += ["--record", shlex.quote(record_arg)]
    return " ".join(parts)
