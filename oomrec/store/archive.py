"""The archive beside the record: where `record prune` moves records that no longer apply.

Evidence is never deleted. `<record>.archive` holds one line per archived record:
`<UTC time> <fix SHA> <the record line, byte for byte>`, so `record restore` puts back exactly
what was there. The archive is read with the record and judged the same way: an archived
record that applies again (the fix was reverted, another branch is checked out) pre-skips.

A record taken back by hand (`record retract`: it was a mistake, not fixed) is archived as
`<UTC time> retracted:<reason, percent-encoded> <the record line>` (`retracted-shared:` for
another host's shared record), and `record restore --retracted` appends `<UTC time> restored
<the record line>`: events, never judged, whose latest says whether the evidence is
retracted (store.retractions); `record push` publishes them.

A record a fix lifted is a hypothesis until a run of its cell proves it (a probe, which
sweep/planner.py decides and sweep/grid.py runs): the probe that ran is archived as
`<UTC time> verified:<fix SHA>,<tag>,<memory>,<run commit>,<peak>,<CSV, percent-encoded>
<the record line>`: the fix, the machine class the run proved it
on, the commit it ran at, its peak and its row's CSV (`-` for what is unknown). Such a line is out
of play on that class with no less memory while the fix stays in effect; elsewhere the lift is
still a hypothesis.

Both files are written under the record's lock. A move appends to the destination first and
then rewrites the source atomically, so a crash between the two leaves a line in both (read
once), never in neither.
"""

from __future__ import annotations

import contextlib
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from oomrec.core.records import (
    MEM_JITTER,
    Loaded,
    NotARecord,
    OomRecord,
    RecordFile,
    RecordLine,
    evidence_key,
    parse_line,
    short_commit,
)
from oomrec.core.shown import show_bytes
from oomrec.core.units import utc_stamp
from oomrec.store.retractions import Event, retracted

SUFFIX = ".archive"
RETRACTED = "retracted:"
RETRACTED_SHARED = "retracted-shared:"
RESTORED = "restored"
VERIFIED = "verified:"
_LINE = re.compile(
    r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z) "
    r"([0-9a-f]{40}|[0-9a-f]{64}|-|retracted:\S*|retracted-shared:\S*|restored|verified:\S*) (.*)"
)
_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Verified:
    """What a probe proved: its cell ran to completion at `commit` on a host of `hardware` with
    `mem_bytes` of memory, peaking at `peak_bytes`, its row in `csv`. None: unknown."""

    hardware: str | None
    mem_bytes: int | None
    commit: str | None
    peak_bytes: int | None
    csv: str

    def field(self, fix: str) -> str:
        """The archive line's second field, for a lift by `fix`."""
        values = [
            fix or "-",
            self.hardware or "-",
            _int_field(self.mem_bytes),
            self.commit or "-",
            _int_field(self.peak_bytes),
            urllib.parse.quote(self.csv, safe="") or "-",
        ]
        return VERIFIED + ",".join(values)

    def covers(self, host_tag: str | None, host_mem: int | None) -> bool:
        """Whether the run proves the cell on this host: the same machine class, and no less
        memory than the run had. Memory unknown on one side only proves nothing; unknown on
        both is the same class as far as anything can tell (as the record applied there)."""
        if self.hardware is None or host_tag is None or self.hardware != host_tag:
            return False
        if self.mem_bytes is None or host_mem is None:
            return self.mem_bytes is None and host_mem is None
        return host_mem >= self.mem_bytes * (1 - MEM_JITTER)

    def describe(self) -> str:
        at = short_commit(self.commit) if self.commit else "an unknown commit"
        peak = f", peak {show_bytes(self.peak_bytes)}" if self.peak_bytes is not None else ""
        mem = show_bytes(self.mem_bytes) if self.mem_bytes is not None else "unknown memory"
        return f"by a run at {at} on {self.hardware or 'an unknown host'} ({mem}{peak})"


def _int_field(value: int | None) -> str:
    return "-" if value is None else str(value)


def _parse_verified(field: str) -> tuple[str, Verified] | None:
    """(fix SHA, Verified) from a `verified:` field; None when it is not one oomrec wrote."""
    parts = field.removeprefix(VERIFIED).split(",")
    if len(parts) != 6:
        return None
    fix, hardware, mem, commit, peak, csv = parts
    if not _HEX.fullmatch(fix):
        return None
    numbers: list[int | None] = []
    for text in (mem, peak):
        if text == "-":
            numbers.append(None)
        elif text.isascii() and text.isdigit() and len(text) <= 19:
            numbers.append(int(text))
        else:
            return None
    return fix, Verified(
        hardware=None if hardware == "-" else hardware,
        mem_bytes=numbers[0],
        commit=commit if _HEX.fullmatch(commit) else None,
        peak_bytes=numbers[1],
        csv="" if csv == "-" else urllib.parse.unquote(csv),
    )


@dataclass(frozen=True, slots=True)
class ArchivedLine:
    lineno: int
    text: str
    # The record line as it was in the record, and what it holds (None: not a record).
    original: str
    record: OomRecord | None
    archived_at: str
    fix: str
    # Why it was retracted (`record retract`); None: archived for a fix (or with none).
    reason: str | None = None
    # A retraction of another host's shared record (not in this host's record).
    shared: bool = False
    # The event undoing a retraction (`record restore --retracted`).
    restored: bool = False
    # Archived by a probe that ran (`fix` is the fix it verified); None: by a person.
    verified: Verified | None = None

    @property
    def retracted(self) -> bool:
        return self.reason is not None

    @property
    def event(self) -> Event | None:
        """The retraction event this line is (None: an archived record)."""
        if self.record is None or not (self.retracted or self.restored):
            return None
        return Event(self.archived_at, self.record, self.original, self.reason)


def in_play(lines: Iterable[ArchivedLine]) -> list[ArchivedLine]:
    """The archived records still judged (and pre-skipping where they apply again): all but
    the retraction events."""
    return [line for line in lines if line.event is None]


def events(lines: Iterable[ArchivedLine]) -> list[Event]:
    return [event for line in lines if (event := line.event) is not None]


def retracted_now(lines: Sequence[ArchivedLine]) -> list[ArchivedLine]:
    """The retracted lines whose evidence is still retracted (no later restore), each once."""
    gone = retracted(events(lines))
    out: dict[str, ArchivedLine] = {}
    for line in lines:
        if line.retracted and line.record is not None:
            event = gone.get(evidence_key(line.record))
            if event is not None and event.stamp == line.archived_at:
                out.setdefault(line.original, line)
    return list(out.values())


def retraction(reason: str, shared: bool = False) -> str:
    """The archive line's second field for a record retracted for `reason`."""
    return (RETRACTED_SHARED if shared else RETRACTED) + urllib.parse.quote(reason, safe="")


def archive_file(record_file: RecordFile) -> RecordFile:
    """The archive of `record_file`, written only under the record's lock."""
    path = record_file.path.with_name(record_file.path.name + SUFFIX)
    archive = RecordFile(path, shown_as=record_file.shown_as + SUFFIX)
    # Its writes stay where the record's may go.
    archive.confinement = record_file.confinement
    return archive


def archive_line(original: str, fix: str, when: datetime | None = None) -> str:
    return f"{utc_stamp(when)} {fix or '-'} {original}"


def parse(text: str, shown_as: str = "") -> tuple[list[ArchivedLine], list[str]]:
    """The archive's lines, and a warning for each line that is not an archive line (kept
    verbatim in the file)."""
    lines: list[ArchivedLine] = []
    warnings: list[str] = []
    for lineno, raw in enumerate(text.split("\n"), start=1):
        raw = raw.removesuffix("\r")
        if not raw.strip():
            continue
        match = _LINE.fullmatch(raw)
        if match is None:
            warnings.append(f"warning: {shown_as}:{lineno}: not an archive line, kept as is")
            continue
        stamp, fix, original = match.groups()
        try:
            record: OomRecord | None = parse_line(original)
        except NotARecord:
            record = None
        reason, shared, restored = None, False, fix == RESTORED
        verified: Verified | None = None
        for tag in (RETRACTED, RETRACTED_SHARED):
            if fix.startswith(tag):
                reason, shared = urllib.parse.unquote(fix[len(tag) :]), tag == RETRACTED_SHARED
        if fix.startswith(VERIFIED):
            proved = _parse_verified(fix)
            if proved is None:
                warnings.append(
                    f"warning: {shown_as}:{lineno}: a verified line oomrec cannot read, kept as "
                    "is (its record applies)"
                )
                continue
            fix, verified = proved
        if reason is not None or restored:
            fix = "-"
        lines.append(
            ArchivedLine(
                lineno, raw, original, record, stamp, fix, reason, shared, restored, verified
            )
        )
    return lines, warnings


def load(record_file: RecordFile, live: Loaded | None = None) -> list[ArchivedLine]:
    """The archived records, each once, less any whose line is also in the record (a move cut
    short by a crash leaves a line in both)."""
    return read(record_file, live)[0]


def read(
    record_file: RecordFile, live: Loaded | None = None
) -> tuple[list[ArchivedLine], list[str]]:
    """`load`, and the warnings about the archive's lines that are not archive lines. Every
    retraction event is kept (in file order, which is time order)."""
    archive = archive_file(record_file)
    lines, warnings = parse(archive.read_text(), archive.shown_as)
    live_lines = {line.text for line in (live or record_file.load()).lines}
    # The latest archive line of a record line wins: a probe that verified it again, on
    # another machine class, is what its state now rests on.
    latest = {
        line.original: line.lineno
        for line in lines
        if line.event is None and line.record is not None
    }
    out = [
        line
        for line in lines
        if line.event is not None
        or (
            line.record is not None
            and line.original not in live_lines
            and latest[line.original] == line.lineno
        )
    ]
    return out, warnings


def move_out(
    record_file: RecordFile, choose: Callable[[Loaded], dict[str, str]]
) -> list[RecordLine]:
    """Move record lines into the archive, under the lock. `choose` gets the record as read
    inside the lock and returns {line text: fix SHA or `retraction(reason)`} for the lines to
    move. Returns them."""
    archive = archive_file(record_file)
    moved: list[RecordLine] = []
    with record_file.locked():
        loaded = record_file.load()
        chosen = choose(loaded)
        moved = [line for line in loaded.lines if line.record and line.text in chosen]
        if not moved:
            return []
        when = datetime.now(UTC)
        with _taken_back_unless_done(archive):
            archive.append_text(
                "".join(archive_line(line.text, chosen[line.text], when) + "\n" for line in moved)
            )
            gone = {line.text for line in moved}
            record_file.rewrite(lambda current: [x for x in current.lines if x.text not in gone])
    return moved


@contextlib.contextmanager
def _taken_back_unless_done(archive: RecordFile) -> Iterator[None]:
    """Under the record's lock: what is appended to the archive inside is cut off again when the
    rewrite of the record that goes with it fails (a full disk), so that the two do not
    disagree: a line archived yet still in the record (shown twice, archived again on each
    retry), a restore logged without its line back."""
    path = archive.real_path
    try:
        before: int | None = path.stat().st_size
    except FileNotFoundError:
        before = None
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            if before is None:
                path.unlink()
            else:
                os.truncate(path, before)
        raise


def verify(record_file: RecordFile, lines: Sequence[tuple[str, str]], proof: Verified) -> list[str]:
    """Archive as verified, under the lock, the record lines a probe refuted: `lines` holds
    (record line, the fix that lifted it). A line of this record moves out of it; one that is
    in no local file (another host's shared record) is only archived, as a retraction of a
    shared one is. Returns the lines archived."""
    archive = archive_file(record_file)
    fixes = dict(lines)
    if not fixes:
        return []
    record_file.check_writable()
    with record_file.locked():
        loaded = record_file.load()
        local = {line.text for line in loaded.lines if line.record is not None}
        when = datetime.now(UTC)
        with _taken_back_unless_done(archive):
            archive.append_text(
                "".join(archive_line(t, proof.field(f), when) + "\n" for t, f in fixes.items())
            )
            gone = local & fixes.keys()
            if gone:
                record_file.rewrite(
                    lambda current: [x for x in current.lines if x.text not in gone]
                )
    return list(fixes)


def add_retracted(record_file: RecordFile, texts: Sequence[str], reason: str) -> list[str]:
    """Archive record lines that are in no local file (another host's shared records) as
    retracted, under the lock. Returns the lines added."""
    archive = archive_file(record_file)
    new = list(dict.fromkeys(texts))
    if new:
        # A host that only reads shared records may have no record, nor its folder, yet.
        record_file.check_writable()
        with record_file.locked():
            when = datetime.now(UTC)
            tag = retraction(reason, shared=True)
            archive.append_text("".join(archive_line(t, tag, when) + "\n" for t in new))
    return new


def restore_retracted(record_file: RecordFile, chosen: Sequence[ArchivedLine]) -> list[str]:
    """Undo retractions, under the lock: a `restored` event for each, and a record of this
    host's back in the record (another host's applies again from its notes). Returns the
    record lines restored."""
    archive = archive_file(record_file)
    texts = list(dict.fromkeys(line.original for line in chosen))
    if not texts:
        return []
    local = {line.original for line in chosen if not line.shared}
    with record_file.locked(), _taken_back_unless_done(archive):
        archive.append_text("".join(archive_line(t, RESTORED) + "\n" for t in texts))

        def add(current: Loaded) -> list[RecordLine]:
            present = {x.text for x in current.lines}
            new = [t for t in texts if t in local and t not in present]
            tail = len(current.lines)
            return [
                *current.lines,
                *(RecordLine(tail + i + 1, text, None) for i, text in enumerate(new)),
            ]

        if local:
            record_file.rewrite(add)
    return texts


def move_back(
    record_file: RecordFile, choose: Callable[[Sequence[ArchivedLine]], Iterable[ArchivedLine]]
) -> list[ArchivedLine]:
    """Move archived lines back into the record, under the lock. `choose` gets the archived
    records as read inside the lock. Returns the lines restored."""
    archive = archive_file(record_file)
    with record_file.locked():
        lines, _ = parse(archive.read_text())
        chosen = list(choose([line for line in lines if line.record is not None]))
        if not chosen:
            return []
        texts = {line.text for line in chosen}

        def add(current: Loaded) -> list[RecordLine]:
            present = {x.text for x in current.lines}
            new = [x.original for x in chosen if x.original not in present]
            tail = len(current.lines)
            return [
                *current.lines,
                *(RecordLine(tail + i + 1, text, None) for i, text in enumerate(new)),
            ]

        record_file.rewrite(add)
        raw = archive.read_text()
        kept = [x for x in raw.split("\n") if x.removesuffix("\r") not in texts]
        archive.replace_text("\n".join(kept))
    return chosen
