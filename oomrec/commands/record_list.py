"""`record list`: the records (or the archived ones), sorted by model then length, with where
each comes from and, inside git, whether it applies at HEAD."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from operator import attrgetter
from pathlib import Path
from typing import Any

from oomrec.commands import Result
from oomrec.commands.common import record_warnings
from oomrec.core.hardware import option_tag
from oomrec.core.records import OomRecord
from oomrec.store import archive, noterefs
from oomrec.store.archive import ArchivedLine
from oomrec.store.locations import Settings, open_record

LOCAL = "local"
ARCHIVE = "archive"


@dataclass(kw_only=True)
class ListResult(Result):
    """The records chosen, in order, with one `origins` and (inside git) one `statuses` entry
    per record: column by column, as the listing prints them (100,000 records stay fast)."""

    record: str
    archived: bool
    records: list[OomRecord]
    # `local`, `archive` or `notes:<host>` (a record shared by another host).
    origins: list[str]
    # None: no status (outside git, --no-git, or no record).
    statuses: list[str] | None
    # The archived records' `archived_at`, with `archived`.
    archived_at: list[str] | None = None
    # With `archived`: why each was retracted (`record retract`); None: archived for a fix.
    reasons: list[str | None] | None = None

    @property
    def shared(self) -> bool:
        """Whether some record is another host's (shared through git notes)."""
        return any(origin.startswith("notes:") for origin in self.origins)

    def json_body(self) -> dict[str, Any]:
        rows = [r.to_dict() for r in self.records]
        for row, origin in zip(rows, self.origins, strict=True):
            row["from"] = origin
        if self.archived_at is not None:
            for row, stamp in zip(rows, self.archived_at, strict=True):
                row["archived_at"] = stamp
        if self.reasons is not None:
            for row, reason in zip(rows, self.reasons, strict=True):
                row["retracted"] = reason
        if self.statuses is not None:
            for row, status in zip(rows, self.statuses, strict=True):
                row["status"] = status
        return {"record": self.record, "archived": self.archived, "records": rows}


def record_list(
    *,
    record: Path | None = None,
    models: Sequence[str] = (),
    hardware: str | None = None,
    archived: bool = False,
    git: bool = True,
) -> ListResult:
    """The records of `record` (None: the configured one) whose model matches any of the
    `models` globs (all when none) and whose hardware tag is `hardware`, sorted by model then
    length. `archived`: the archive's records instead. `git`: add other hosts' shared records
    and each record's status at HEAD (inside a repository)."""
    record_file, settings = open_record(record)
    loaded = record_file.load()
    parked, warnings = record_warnings(loaded, record_file)
    origin: dict[int, str] = {}
    stamps: dict[int, str] = {}
    reasons: dict[int, str | None] = {}
    parked_of: dict[int, ArchivedLine] = {}
    if archived:
        shown = archive.in_play(parked) + archive.retracted_now(parked)
        pool = [line.record for line in shown if line.record is not None]
        stamps = {id(line.record): line.archived_at for line in shown}
        reasons = {id(line.record): line.reason for line in shown}
        parked_of = {id(line.record): line for line in shown}
    else:
        pool = loaded.records
    # One plain `git for-each-ref` first: with no notes ref, GitPython is never imported.
    if not archived and git and settings.repo_root is not None and noterefs.refs_present()[0]:
        from oomrec.core.hardware import detect
        from oomrec.store import notes

        for note in notes.shared(loaded.records, detect(), warnings, archive.events(parked)):
            if note.record is not None:
                pool.append(note.record)
                origin[id(note.record)] = f"notes:{note.host}"
    chosen = records_matching(pool, models, hardware)
    default = ARCHIVE if archived else LOCAL
    return ListResult(
        warnings=warnings,
        record=record_file.shown_as + (archive.SUFFIX if archived else ""),
        archived=archived,
        records=chosen,
        origins=[origin.get(id(rec), default) for rec in chosen],
        statuses=_retracted_status(
            _statuses(chosen, settings, parked_of if archived else None)
            if git and chosen
            else None,
            chosen,
            reasons,
        ),
        archived_at=[stamps[id(rec)] for rec in chosen] if archived else None,
        reasons=[reasons[id(rec)] for rec in chosen] if archived else None,
    )


def _retracted_status(
    statuses: list[str] | None, chosen: list[OomRecord], reasons: dict[int, str | None]
) -> list[str] | None:
    """A retracted record's status is its retraction, whatever git says of it."""
    if not any(reasons.get(id(rec)) for rec in chosen):
        return statuses
    base = statuses or [""] * len(chosen)
    return [
        f"retracted: {reasons[id(rec)]}" if reasons.get(id(rec)) else status
        for rec, status in zip(chosen, base, strict=True)
    ]


def records_matching(
    records: list[OomRecord], model_globs: Sequence[str], hardware: str | None
) -> list[OomRecord]:
    """Records matching any of the model globs (all when none) and the hardware tag, sorted by
    model then length."""
    tag = option_tag(hardware)
    chosen = [
        r
        for r in records
        if (not model_globs or any(fnmatchcase(r.model, glob) for glob in model_globs))
        and (tag is None or r.hardware == tag)
    ]
    # Two stable single-key sorts: three times faster than one on (model, length) tuples.
    chosen.sort(key=attrgetter("prompt_target_len"))
    chosen.sort(key=attrgetter("model"))
    return chosen


def _statuses(
    records: list[OomRecord],
    settings: Settings,
    parked_of: dict[int, ArchivedLine] | None = None,
) -> list[str] | None:
    """Each record's status at HEAD (of an archived one, `parked_of` its archive line: how it
    was archived decides whether it is out of play); None outside git."""
    if settings.repo_root is None:
        # Outside a repository: no status, and no GitPython import either.
        return None
    from oomrec.staleness.fixlog import trailer_key
    from oomrec.staleness.verdict import judge_all, open_history

    history = open_history(trailer_key(settings), [r.commit for r in records])
    if history is None:
        return None
    judged = judge_all(history, records)
    if parked_of is None:
        return [str(j) for j in judged]
    from oomrec.core.hardware import detect, detect_memory
    from oomrec.sweep.planner import JudgedLine, state_text

    hardware, host_mem = detect(), detect_memory()
    return [
        state_text(JudgedLine("", 0, "", rec, j, parked_of.get(id(rec))), hardware, host_mem)
        for rec, j in zip(records, judged, strict=True)
    ]
