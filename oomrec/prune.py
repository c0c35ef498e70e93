"""`record prune`: which records a fix made stale, and removing them without losing an append.

The plan is made outside the lock (judging can take a while); the rewrite then drops lines by
their exact text from the file as re-read inside the lock, so a record a sweep appended in the
meantime stays, as do unparsed lines and the order of everything kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from oomrec.records import Loaded, OomRecord, RecordFile, RecordLine
from oomrec.stale import CURRENT, STALE, UNKNOWN, Judge, Status, Verdict

if TYPE_CHECKING:
    import git

# A record line, its record, and its verdict against the fix.
Row = tuple[RecordLine, OomRecord, Verdict]


@dataclass(frozen=True)
class PrunePlan:
    fix: str
    head: str
    # The selected record lines in file order, and the verdict for each of their commits:
    # per commit, not per line, as a large record has far fewer commits than lines.
    chosen: list[tuple[RecordLine, OomRecord]]
    verdicts: dict[str, Verdict]
    prune_unknown: bool = False

    @property
    def head_has_fix(self) -> bool:
        return self.verdicts[self.head].status == CURRENT

    def goes(self, verdict: Verdict) -> bool:
        return verdict.status == STALE or (self.prune_unknown and verdict.status == UNKNOWN)

    def rows(self, going: bool, status: Status | None = None) -> list[Row]:
        """The chosen lines that go (or stay), with `status` when given, in file order."""
        goes = {commit: self.goes(v) for commit, v in self.verdicts.items()}
        return [
            (line, rec, self.verdicts[rec.commit])
            for line, rec in self.chosen
            if goes[rec.commit] == going
            and (status is None or self.verdicts[rec.commit].status == status)
        ]

    def texts(self) -> frozenset[str]:
        """The exact text of every line to remove."""
        return frozenset(line.text for line, _, _ in self.rows(going=True))


def select(
    lines: Sequence[RecordLine], models: Sequence[str], hardware: str | None
) -> list[tuple[RecordLine, OomRecord]]:
    """The record lines whose model matches any of `models` (all when none) and whose hardware
    tag is `hardware` (any when None), with their records."""
    return [
        (line, rec)
        for line in lines
        if (rec := line.record) is not None
        and (not models or any(fnmatchcase(rec.model, glob) for glob in models))
        and (hardware is None or rec.hardware == hardware)
    ]


def plan(
    repo: git.Repo,
    loaded: Loaded,
    fix: str,
    head: str,
    models: Sequence[str] = (),
    hardware: str | None = None,
    prune_unknown: bool = False,
) -> PrunePlan:
    """Judge the selected records against `fix` (a full SHA); stale ones go, unknown ones too
    when `prune_unknown`. HEAD is judged in the same batch, to warn when it lacks the fix."""
    chosen = select(loaded.lines, models, hardware)
    verdicts = Judge(repo, {rec.commit for _, rec in chosen} | {head}).against(fix)
    return PrunePlan(fix, head, chosen, verdicts, prune_unknown)


def apply(record_file: RecordFile, texts: frozenset[str]) -> list[RecordLine]:
    """Remove the record lines whose text is in `texts`, under the lock; returns the lines removed
    (as read inside the lock). Does not touch the file when there is nothing to remove."""
    if not texts:
        return []
    removed: list[RecordLine] = []

    def keep(loaded: Loaded) -> list[RecordLine]:
        kept = []
        for line in loaded.lines:
            if line.record is not None and line.text in texts:
                removed.append(line)
            else:
                kept.append(line)
        return kept

    record_file.rewrite(keep)
    return removed
