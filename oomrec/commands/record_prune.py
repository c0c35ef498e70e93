"""`record prune` and `record restore`: move records that no longer apply at HEAD into the
archive, and back (the plan and the move are oomrec.staleness.prune's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oomrec.commands import Result
from oomrec.commands.common import judged_entry, record_warnings
from oomrec.core.hardware import option_tag
from oomrec.staleness.fixlog import trailer_key
from oomrec.staleness.verdict import Status
from oomrec.store.locations import open_record

if TYPE_CHECKING:
    # prune imports GitPython: loaded by the verbs only, so `--help` stays fast.
    from oomrec.staleness import prune
    from oomrec.staleness.verdict import Fix


@dataclass(kw_only=True)
class PruneResult(Result):
    """The records planned to move (`going`, with the fix each is archived for) and, in a real
    run, the lines moved as read inside the lock (`archived`: none in a dry run)."""

    record: str
    dry_run: bool
    # The --since fix; None: every fix in effect at HEAD.
    since: Fix | None
    going: list[prune.Row]
    archived: list[str]
    # Records that stay: how many, and how many of them only because git cannot say.
    kept: int
    kept_unknown: int

    @property
    def moved(self) -> list[str]:
        """The lines that moved (real run) or would move (dry run), verbatim."""
        return [row.line.text for row in self.going] if self.dry_run else self.archived

    @property
    def fixes(self) -> set[str]:
        """The short SHAs of the fixes the records are archived for."""
        return {row.fix.short for row in self.going if row.fix}

    def json_body(self) -> dict[str, Any]:
        moved = set(self.moved)
        return {
            "record": self.record,
            "dry_run": self.dry_run,
            "since": self.since.sha if self.since else None,
            "would_archive": len(self.going),
            "archived": len(self.archived),
            # What moved, or would: each with its line, status at HEAD and the lifting fix.
            "records": [
                judged_entry(row.line.lineno, row.record, row.judgement, row.fix)
                for row in self.going
                if row.line.text in moved
            ],
            "kept": self.kept,
            "kept_unknown": self.kept_unknown,
        }


def record_prune(
    *,
    record: Path | None = None,
    since: str | None = None,
    models: Sequence[str] = (),
    hardware: str | None = None,
    dry_run: bool = False,
) -> PruneResult:
    """Archive the records that no longer apply at HEAD: with `since` (a fix commit), only
    those it and its copies take out of play; `models` (globs) and `hardware` narrow the
    records looked at (and name the models `since` fixed when it carries no trailer)."""
    from oomrec.staleness import prune

    tag = option_tag(hardware)
    record_file, settings = open_record(record)
    if not dry_run:
        record_file.check_confined()
    loaded = record_file.load()
    _, warnings = record_warnings(loaded)
    plan = prune.plan(record_file, trailer_key(settings), since, models, tag, loaded)
    archived = [] if dry_run else [line.text for line in prune.apply(record_file, plan)]
    return PruneResult(
        warnings=warnings,
        record=record_file.shown_as,
        dry_run=dry_run,
        since=plan.since,
        going=plan.going,
        archived=archived,
        kept=len(plan.staying),
        kept_unknown=plan.count(Status.UNKNOWN),
    )


@dataclass(kw_only=True)
class RestoreResult(Result):
    """The archived records planned to move back (`back`) and those that stay; in a real run
    the lines moved back as read inside the lock (`restored`: none in a dry run)."""

    record: str
    dry_run: bool
    back: list[prune.RestoreRow]
    restored: list[str]
    stay: int

    def json_body(self) -> dict[str, Any]:
        moved = {row.line.original for row in self.back} if self.dry_run else set(self.restored)
        return {
            "record": self.record,
            "dry_run": self.dry_run,
            "would_restore": len(self.back),
            "restored": len(self.restored),
            "records": [
                {
                    **judged_entry(row.line.lineno, row.line.record, row.judgement),
                    "archived_at": row.line.archived_at,
                    "archived_for": None if row.line.fix == "-" else row.line.fix,
                    "retracted": row.line.reason,
                }
                for row in self.back
                if row.line.record is not None and row.line.original in moved
            ],
            "stay_archived": self.stay,
        }


def record_restore(
    *,
    record: Path | None = None,
    fix: str | None = None,
    everything: bool = False,
    retracted: bool = False,
    dry_run: bool = False,
) -> RestoreResult:
    """Move archived records back into the record: by default those that apply again at HEAD;
    with `fix`, those archived for that fix or a copy of it; with `retracted`, those taken
    back by `record retract`; with `everything`, all."""
    from oomrec.staleness import prune

    record_file, settings = open_record(record)
    if not dry_run:
        record_file.check_confined()
    back, stay = prune.restore_plan(record_file, trailer_key(settings), fix, everything, retracted)
    restored = [] if dry_run else prune.restore(record_file, back)
    return RestoreResult(
        record=record_file.shown_as,
        dry_run=dry_run,
        back=back,
        restored=restored,
        stay=len(stay),
    )
