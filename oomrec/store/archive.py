"""The archive beside the record: where `record prune` moves records that no longer apply.

Evidence is never deleted. `<record>.archive` holds one line per archived record:
`<UTC time> <fix SHA> <the record line, byte for byte>`, so `record restore` puts back exactly
what was there. The archive is read with the record and judged the same way: an archived
record that applies again (the fix was reverted, another branch is checked out) pre-skips.

Both files are written under the record's lock. A move appends to the destination first and
then rewrites the source atomically, so a crash between the two leaves a line in both (read
once), never in neither.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from oomrec.core.records import Loaded, NotARecord, OomRecord, RecordFile, RecordLine, parse_line

SUFFIX = ".archive"
_LINE = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z) ([0-9a-f]{40}|[0-9a-f]{64}|-) (.*)")


@dataclass(frozen=True, slots=True)
class ArchivedLine:
    lineno: int
    text: str
    # The record line as it was in the record, and what it holds (None: not a record).
    original: str
    record: OomRecord | None
    archived_at: str
    fix: str


def archive_file(record_file: RecordFile) -> RecordFile:
    """The archive of `record_file`, written only under the record's lock."""
    path = record_file.path.with_name(record_file.path.name + SUFFIX)
    return RecordFile(path, shown_as=record_file.shown_as + SUFFIX)


def archive_line(original: str, fix: str, when: datetime | None = None) -> str:
    stamp = (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{stamp} {fix or '-'} {original}"


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
        lines.append(ArchivedLine(lineno, raw, original, record, stamp, fix))
    return lines, warnings


def load(record_file: RecordFile, live: Loaded | None = None) -> list[ArchivedLine]:
    """The archived records, each once, less any whose line is also in the record (a move cut
    short by a crash leaves a line in both)."""
    return read(record_file, live)[0]


def read(
    record_file: RecordFile, live: Loaded | None = None
) -> tuple[list[ArchivedLine], list[str]]:
    """`load`, and the warnings about the archive's lines that are not archive lines."""
    archive = archive_file(record_file)
    lines, warnings = parse(archive.read_text(), archive.shown_as)
    seen = {line.text for line in (live or record_file.load()).lines}
    out = []
    for line in lines:
        if line.record is not None and line.original not in seen:
            seen.add(line.original)
            out.append(line)
    return out, warnings


def move_out(
    record_file: RecordFile, choose: Callable[[Loaded], dict[str, str]]
) -> list[RecordLine]:
    """Move record lines into the archive, under the lock. `choose` gets the record as read
    inside the lock and returns {line text: fix SHA} for the lines to move. Returns them."""
    archive = archive_file(record_file)
    moved: list[RecordLine] = []
    with record_file.locked():
        loaded = record_file.load()
        chosen = choose(loaded)
        moved = [line for line in loaded.lines if line.record and line.text in chosen]
        if not moved:
            return []
        when = datetime.now(UTC)
        archive.append_text(
            "".join(archive_line(line.text, chosen[line.text], when) + "\n" for line in moved)
        )
        gone = {line.text for line in moved}
        record_file.rewrite(lambda current: [x for x in current.lines if x.text not in gone])
    return moved


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
