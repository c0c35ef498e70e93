"""`record stale`: which records no longer apply at HEAD, which archived ones apply again, and
what is wrong with the fix trailers."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oomrec.commands import Result
from oomrec.commands.common import judged_entry, record_warnings
from oomrec.core.errors import OomrecError
from oomrec.core.records import OomRecord
from oomrec.staleness.fixlog import trailer_key
from oomrec.staleness.verdict import Judgement, Status
from oomrec.store import archive
from oomrec.store.locations import open_record

if TYPE_CHECKING:
    from oomrec.report.frontier import Contradiction
    from oomrec.report.regressions import Regression


@dataclass(frozen=True)
class StaleLine:
    """A record line and its judgement at HEAD; `line` is its line number in the record (or
    the archive), 0 for another host's record, which `host` then names."""

    line: int
    record: OomRecord
    judgement: Judgement
    host: str | None = None

    def to_json(self) -> dict[str, Any]:
        entry = judged_entry(self.line, self.record, self.judgement)
        entry["verify_command"] = self.verify_command
        return entry if self.host is None else {**entry, "from": f"notes:{self.host}"}

    @property
    def verify_command(self) -> str | None:
        """The hand run that verifies a lift (or, undecided, decides it) under the guard."""
        if not self.judgement.fixes:
            return None
        undecided = " --probe-undecided" if self.judgement.applies else ""
        model = shlex.quote(self.record.model)
        return f"oomrec run {model} {self.record.prompt_target_len}{undecided} -- CMD"


@dataclass(kw_only=True)
class StaleResult(Result):
    record: str
    # The --range, or "HEAD" for all of HEAD's history.
    range: str
    no_longer_apply: list[StaleLine] = field(default_factory=list)
    apply_again: list[StaleLine] = field(default_factory=list)
    unknown: list[StaleLine] = field(default_factory=list)
    # Other hosts' records that no longer apply: for the user to see; prune never touches them.
    shared_no_longer_apply: list[StaleLine] = field(default_factory=list)
    # Fix trailers that cannot work as written (also in `warnings`, as stderr lines).
    trailer_warnings: list[str] = field(default_factory=list)
    # Record lines a later CSV row contradicts: evidence for the user, never pruned on.
    contradicted: list[Contradiction] = field(default_factory=list)
    # Memory regressions the record and the CSVs show (report/regressions.py).
    regressions: list[Regression] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """Whether something needs the user: a record lifted, or an archived one back in play
        (what `--exit-code` exits 1 for)."""
        return bool(self.no_longer_apply or self.apply_again)

    def json_body(self) -> dict[str, Any]:
        return {
            "range": self.range,
            "no_longer_apply": [x.to_json() for x in self.no_longer_apply],
            "apply_again": [x.to_json() for x in self.apply_again],
            "unknown": [x.to_json() for x in self.unknown],
            "shared_no_longer_apply": [x.to_json() for x in self.shared_no_longer_apply],
            "warnings": self.trailer_warnings,
            "contradicted": [c.to_dict() for c in self.contradicted],
            "regressions": [r.to_dict() for r in self.regressions],
        }


def record_stale(*, record: Path | None = None, range_: str | None = None) -> StaleResult:
    """Judge every record line, archived line and other host's shared record at HEAD: those a
    fix lifts (with `range_`, `A..B`, only fixes with a copy or revert in it), the archived
    ones that apply again, and those that apply only because git cannot say."""
    from oomrec.core.hardware import detect
    from oomrec.report.frontier import record_findings
    from oomrec.staleness.verdict import hygiene, open_history
    from oomrec.store import gitrepo as gitutil
    from oomrec.store import notes

    record_file, settings = open_record(record)
    key = trailer_key(settings)
    if gitutil.open_repo() is None:
        raise OomrecError("record stale reads git history: run it inside the repository")
    loaded = record_file.load()
    everything, warnings = record_warnings(loaded, record_file)
    # Retraction events are no records to judge; they decide which shared records apply.
    parked = [line for line in archive.in_play(everything) if line.record is not None]
    live = [line for line in loaded.lines if line.record is not None]
    records: list[OomRecord] = [line.record for line in live if line.record is not None]
    records += [line.record for line in parked if line.record is not None]
    events = archive.events(everything)
    shared = [
        line
        for line in notes.shared(records, detect(), warnings, events)
        if line.record is not None
    ]
    records += [line.record for line in shared if line.record is not None]
    history = open_history(key, [r.commit for r in records])
    judgements = history.judge(records) if history is not None else []
    in_range = _range_fixes(range_, key)

    def lifted(j: Judgement) -> bool:
        return j.status == Status.LIFTED and (
            in_range is None or any(set(f.copies) & in_range for f in j.fixes)
        )

    n = len(live)
    m = n + len(parked)
    trailer_warnings = hygiene(history, {r.model for r in records}) if history is not None else []
    contradicted, regressions = record_findings(record_file, loaded, settings)
    return StaleResult(
        warnings=warnings + [f"warning: {w}" for w in trailer_warnings],
        record=record_file.shown_as,
        range=range_ or "HEAD",
        no_longer_apply=[
            StaleLine(live[i].lineno, records[i], j)
            for i, j in enumerate(judgements[:n])
            if lifted(j)
        ],
        apply_again=[
            StaleLine(parked[i].lineno, records[n + i], j)
            for i, j in enumerate(judgements[n:m])
            if j.applies
        ],
        unknown=[
            StaleLine(live[i].lineno, records[i], j)
            for i, j in enumerate(judgements[:n])
            if j.status == Status.UNKNOWN
        ],
        shared_no_longer_apply=[
            StaleLine(0, records[m + i], j, host=shared[i].host)
            for i, j in enumerate(judgements[m:])
            if lifted(j)
        ],
        trailer_warnings=trailer_warnings,
        contradicted=contradicted,
        regressions=regressions,
    )


def _range_fixes(range_: str | None, key: str) -> set[str] | None:
    """The commits with a fix trailer (or a copy or revert of one) in `range_`; None: all."""
    if range_ is None:
        return None
    from oomrec.staleness import fixgit
    from oomrec.store import gitrepo as gitutil

    repo = gitutil.open_repo()
    assert repo is not None
    return {event.sha for event in fixgit.range_events(repo, [range_], key)}
