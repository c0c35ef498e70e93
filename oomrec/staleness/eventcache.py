"""The fix, pick and revert commits already found, kept between runs: a commit's message never
changes, so only history not scanned before needs `git log --grep`.

On a 100,000-commit repository that grep reads every commit message (~0.7 s); with the cache a
judgement reads only the commits not reachable from the tips it scanned last time.

The file lives in the repository's common git dir (`oomrec/events-<key>`, one per trailer key,
shared by linked worktrees, never tracked): a header line, one `tip <sha>` line per scanned tip,
the raw `git log` output of the event commits found (fixes.parse_log reads it), and an end line
naming how many characters that output holds. It is a cache: a file that cannot be read, is of
another version, is cut short, or names a tip this repository no longer has is ignored and
rewritten (atomically); a shallow repository is never cached, since deepening it brings commits
below the tips scanned. A fix the cache lost would never be seen again (its tips were scanned),
which is why a file cut short is ignored, not read as far as it goes.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from oomrec.core.atomic import replace_file
from oomrec.core.errors import OomrecError
from oomrec.core.schema import EVENT_CACHE_FORMAT
from oomrec.staleness.fixlog import Event, log_args, parse_log

if TYPE_CHECKING:
    import git

_HEADER = f"oomrec events v{EVENT_CACHE_FORMAT} "
_END = "\x1eend "
# Past this many tips the file starts over from the tips of the day.
_MAX_TIPS = 20_000


def events(repo: git.Repo, tips: Collection[str], key: str, shallow: bool) -> list[Event]:
    """The event commits in the history of `tips` (full SHAs), and possibly some outside it
    (found for earlier tips): callers keep those in the history they walk."""
    from oomrec.store.gitrepo import with_stdin_bytes

    if not tips:
        return []

    def log(revs: list[str]) -> str:
        # Bytes decoded with replacement: a message that is not UTF-8 must not make text the
        # cache file cannot be written in.
        out = with_stdin_bytes(repo.git.log, log_args(key, stdin=True), revs)
        return out.decode("utf-8", "replace")

    path = _path(repo, key)
    old_tips, old_text = ([], "") if shallow or path is None else _read(path, key)
    known = set(old_tips)
    new_tips = [t for t in tips if t not in known]
    if not new_tips:
        return parse_log(old_text, key)
    try:
        text = log([*new_tips, *(f"^{t}" for t in old_tips)])
    except OomrecError:
        if not old_tips:
            raise
        # A tip gone from the repository (gc after a rebase): start over.
        old_tips, old_text = [], ""
        text = log(new_tips)
    all_tips = [*old_tips, *new_tips]
    combined = old_text + text
    if len(all_tips) > _MAX_TIPS:
        all_tips = list(tips)
        combined = log(all_tips)
    if path is not None and not shallow:
        _write(path, key, all_tips, combined)
    return parse_log(combined, key)


def proves_no_event(common_dir: Path, key: str, shas: Collection[str]) -> bool:
    """Whether this cache alone proves that no fix, pick or revert commit is in the history of
    any of `shas` (full SHAs): each was scanned as a tip, and the scans found no event. Then no
    fix can be in effect there and every record applies, known without GitPython (`oomrec
    check`'s fast path). False whenever the cache cannot say (absent, cut short, a tip not
    scanned): the full judgement decides then."""
    if not shas:
        return False
    tips, body = _read(_file(common_dir, key), key)
    return set(shas) <= set(tips) and not parse_log(body, key)


def _path(repo: git.Repo, key: str) -> Path | None:
    try:
        common = Path(repo.common_dir)
    except (AttributeError, TypeError, ValueError):
        return None
    return _file(common, key)


def _file(common_dir: Path, key: str) -> Path:
    return common_dir / "oomrec" / f"events-{key}"


def _read(path: Path, key: str) -> tuple[list[str], str]:
    try:
        data = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return [], ""
    head, _, rest = data.partition("\n")
    if head != _HEADER + key:
        return [], ""
    tips: list[str] = []
    while rest.startswith("tip "):
        line, _, rest = rest.partition("\n")
        tips.append(line[4:].strip())
    body, _, end = rest.rpartition(_END)
    if end != f"{len(body)}\n":
        return [], ""
    return tips, body


def _write(path: Path, key: str, tips: list[str], text: str) -> None:
    body = _HEADER + key + "\n" + "".join(f"tip {t}\n" for t in tips) + text
    body += f"{_END}{len(text)}\n"
    try:
        # A cache: losing it to a power cut costs time only, so no fsync; private to oomrec.
        replace_file(
            path,
            body.encode("utf-8"),
            keep_mode=False,
            new_mode=None,
            durable=False,
            sync_folder=False,
            prefix=path.name + ".",
        )
    except OSError:
        # A cache that cannot be written (read-only repository, full disk) costs time only.
        return
