"""Records taken back by hand, and taken back from that: the one rule for whether a piece of
evidence is retracted, wherever the events come from (this host's archive, other hosts' notes).

`record retract` archives a record as retracted (it was a mistake, not fixed) and `record
restore --retracted` undoes that; both are events with a UTC time. Evidence is retracted when
its latest event is a retraction. On a tie the restore wins: a record wrongly applied hides a
cell, one wrongly lifted can wedge a machine.

In git notes an event is one line beside the record lines of the record's commit:
`oomrec-retracted <time> <reason, percent-encoded> <record line>` or
`oomrec-restored <time> <record line>`. A reader that predates them reads them as lines that
are no record, and ignores them.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from oomrec.core.records import EvidenceKey, NotARecord, OomRecord, evidence_key, parse_line
from oomrec.core.units import utc_stamp

NOTE_RETRACTED = "oomrec-retracted"
NOTE_RESTORED = "oomrec-restored"
_STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"
_NOTE = re.compile(rf"({NOTE_RETRACTED} ({_STAMP}) (\S*)|{NOTE_RESTORED} ({_STAMP})) (.*)")


@dataclass(frozen=True, slots=True)
class Event:
    """A retraction (`reason` set) or the restore of one, of the evidence `record` holds."""

    stamp: str
    record: OomRecord
    text: str
    reason: str | None = None

    @property
    def retracts(self) -> bool:
        return self.reason is not None

    def note_line(self) -> str:
        if self.reason is not None:
            reason = urllib.parse.quote(self.reason, safe="")
            return f"{NOTE_RETRACTED} {self.stamp} {reason} {self.text}"
        return f"{NOTE_RESTORED} {self.stamp} {self.text}"


def parse_note_line(text: str) -> Event | None:
    """The event a notes line holds; None for any other line."""
    match = _NOTE.fullmatch(text)
    if match is None:
        return None
    _, retracted_at, reason, restored_at, line = match.groups()
    try:
        record = parse_line(line)
    except NotARecord:
        return None
    if retracted_at is not None:
        return Event(retracted_at, record, line, urllib.parse.unquote(reason))
    return Event(restored_at, record, line)


def retracted(events: Iterable[Event], now: datetime | None = None) -> dict[EvidenceKey, Event]:
    """The evidence whose latest event is a retraction, with that event. A retraction stamped
    later than a day from `now` (clock skew aside: a stamp no clock wrote) is left out, or one
    stamped 9999 by any host would hide the record for good, beyond every restore."""
    horizon = _horizon(now)
    latest: dict[EvidenceKey, Event] = {}
    for event in events:
        if _unwritten(event, horizon):
            continue
        key = evidence_key(event.record)
        held = latest.get(key)
        # Later wins; at the same second a restore (False sorts first: not retracts) wins.
        if held is None or (event.stamp, not event.retracts) > (held.stamp, not held.retracts):
            latest[key] = event
    return {key: event for key, event in latest.items() if event.retracts}


def from_the_future(events: Iterable[Event], now: datetime | None = None) -> list[Event]:
    """The retractions `retracted` leaves out for their stamp."""
    horizon = _horizon(now)
    return [e for e in events if _unwritten(e, horizon)]


def _horizon(now: datetime | None) -> str:
    """The latest stamp a clock could have written: a day past `now`, for skew."""
    return utc_stamp((now or datetime.now(UTC)) + timedelta(days=1))


def _unwritten(event: Event, horizon: str) -> bool:
    """A retraction stamped past `horizon`: no clock wrote it."""
    return event.retracts and event.stamp > horizon


def applies(record: OomRecord, gone: dict[EvidenceKey, Event]) -> bool:
    return evidence_key(record) not in gone
