"""`record prune` and `record restore`: move records that no longer apply at HEAD into the
archive, and back. Nothing is deleted: a pruned record is one `restore` away, and the sweep
reads the archive too, so an archived record that applies again still pre-skips.

The plan is made outside the lock (judging can take a while); the move then picks lines by their
exact text from the files as re-read inside the lock, so a record a sweep appended in the
meantime stays, as do unparsed lines and the order of everything kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from oomrec.core.errors import OomrecError
from oomrec.core.records import Loaded, OomRecord, RecordFile, RecordLine, short_commit
from oomrec.staleness.verdict import Fix, History, Judgement, Status, open_history
from oomrec.store import archive
from oomrec.store import gitrepo as gitutil


@dataclass(frozen=True)
class Row:
    line: RecordLine
    record: OomRecord
    judgement: Judgement
    # The fix the record is archived for: the --since fix, else the first that lifts it.
    fix: Fix | None = None


@dataclass
class PrunePlan:
    since: Fix | None
    going: list[Row] = field(default_factory=list)
    staying: list[Row] = field(default_factory=list)

    def count(self, status: Status) -> int:
        return sum(1 for row in self.staying if row.judgement.status == status)


def lines_matching(
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
    record_file: RecordFile,
    key: str,
    since: str | None = None,
    models: Sequence[str] = (),
    hardware: str | None = None,
    loaded: Loaded | None = None,
) -> PrunePlan:
    """Which records go to the archive: those that no longer apply at HEAD (with `since`, only
    those the fix `since` and its copies take out of play). `loaded`: the record as the caller
    read it (read here when None)."""
    repo = gitutil.open_repo()
    if repo is None:
        raise OomrecError(
            "record prune needs git history: run it inside the repository that holds the fixes"
        )
    if gitutil.head_sha(repo) is None:
        # No commit, so no fix: nothing can have taken a record out of play.
        raise OomrecError(
            f"record prune: {repo.working_dir} has no commit yet, so no fix; commit first (a "
            "fix is a commit with an OOM-Fix trailer)"
        )
    if loaded is None:
        loaded = record_file.load()
    chosen = lines_matching(loaded.lines, models, hardware)
    commits = [rec.commit for _, rec in chosen]
    fix_sha = gitutil.resolve_commit(repo, since) if since is not None else None
    tips = [fix_sha] if fix_sha else []
    history = History(repo, key, commits, extra_tips=tips)
    fix: Fix | None = None
    if fix_sha is not None:
        found = history.fix_of(fix_sha)
        if found is None:
            if not models:
                raise OomrecError(
                    f"{since!r} ({short_commit(fix_sha)}) carries no {key} trailer and is no copy "
                    f"of a fix: say which models it fixed with --model GLOB, or add the trailer "
                    f"(git commit --amend --trailer '{key}: <model glob>')"
                )
            history = History(repo, key, commits, extra_fixes={fix_sha: tuple(models)})
            found = history.fix_of(fix_sha)
            assert found is not None
        root, fix = found
        if not history.in_effect_at(root):
            raise OomrecError(
                f"HEAD ({short_commit(history.sha_at())}) does not have fix "
                f"{short_commit(fix_sha)} in effect (not merged here, reverted, or its change "
                "not in HEAD's tree): no record is lifted by it on this checkout; check out a "
                "branch that has the fix, then prune"
            )
    result = PrunePlan(fix)
    judgements = history.judge([rec for _, rec in chosen])
    for (line, rec), judgement in zip(chosen, judgements, strict=True):
        lifting = _lifting(judgement, fix)
        if lifting is not None:
            result.going.append(Row(line, rec, judgement, lifting))
        else:
            result.staying.append(Row(line, rec, judgement))
    return result


def _lifting(judgement: Judgement, since: Fix | None) -> Fix | None:
    if judgement.status != Status.LIFTED:
        return None
    if since is None:
        return judgement.fixes[0]
    for fix in judgement.fixes:
        if set(fix.copies) & set(since.copies):
            return fix
    return None


def apply(record_file: RecordFile, prune_plan: PrunePlan) -> list[RecordLine]:
    """Move the planned lines into the archive; returns the lines moved (as read in the lock)."""
    fixes = {row.line.text: row.fix.sha if row.fix else "" for row in prune_plan.going}
    if not fixes:
        return []
    return archive.move_out(record_file, lambda loaded: fixes)


@dataclass(frozen=True)
class RestoreRow:
    line: archive.ArchivedLine
    judgement: Judgement


def restore_plan(
    record_file: RecordFile,
    key: str,
    fix: str | None = None,
    everything: bool = False,
    retracted: bool = False,
) -> tuple[list[RestoreRow], list[RestoreRow]]:
    """The archived records to move back (and those to leave): by default those that apply
    again at HEAD (never a retracted one: it applies, it was a mistake); with `fix`, those
    archived for that fix or a copy of it; with `retracted`, the retracted ones; with
    `everything`, all."""
    loaded = archive.load(record_file)
    lines = archive.in_play(loaded) + archive.retracted_now(loaded)
    records = [line.record for line in lines if line.record is not None]
    history = open_history(key, [r.commit for r in records])
    judgements = (
        history.judge(records) if history is not None else [Judgement(Status.APPLIES)] * len(lines)
    )
    copies: set[str] = set()
    if fix is not None:
        repo = gitutil.open_repo()
        sha = gitutil.resolve_commit(repo, fix)
        found = history.fix_of(sha) if history is not None else None
        copies = set(found[1].copies) if found else {sha}
    back: list[RestoreRow] = []
    stay: list[RestoreRow] = []
    for line, judgement in zip(lines, judgements, strict=True):
        row = RestoreRow(line, judgement)
        if retracted:
            chosen = line.retracted
        elif fix is not None:
            chosen = line.fix in copies
        else:
            chosen = judgement.applies and not line.retracted
        (back if everything or chosen else stay).append(row)
    return back, stay


def restore(record_file: RecordFile, rows: Sequence[RestoreRow]) -> list[str]:
    """Move the rows' records back; returns the record lines restored."""
    undone = archive.restore_retracted(record_file, [r.line for r in rows if r.line.retracted])
    texts = {row.line.text for row in rows if not row.line.retracted}
    moved = archive.move_back(record_file, lambda lines: [x for x in lines if x.text in texts])
    return undone + [line.original for line in moved]
