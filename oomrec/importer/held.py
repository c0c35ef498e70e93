"""What the record, its archive and its retractions already hold of a CSV row's cell.

A row imported is "the same cell's evidence" as a record when the evidence key agrees
(`records.evidence_key`), or when the record is the one the row's own sweep wrote: a sweep's
record names its CSV and the row's day, and holds what the row cannot (the commit it ran at,
the machine's memory). Without the CSV's provenance file (`git mv`, a fresh clone where it is
not committed) the import only has the row, so it recognises that record by:

- the model and the length, and a true OOM (no kind);
- the source: the path the record names is one the file has had (its path now, or an earlier
  one `git log --follow` names): *sure*; or only the same file name: *in doubt*;
- the day: the row's `date` (a row without one is matched by its evidence key alone), one day
  apart at most (a cell that ran across midnight);
- the machine class: the tag the row or its file name gives, when it gives one;
- the commit, when the row names one in a commit column (the commit git finds for a row
  without one is a stand-in: the commit that added the line, after the one that ran).

A sure match holds the row: the record *is* its evidence (more exactly than the row can tell:
a duplicate from the row would carry no memory and hide the cell on larger hosts). A match in
doubt holds it only when the record applies at least as widely (no tag or the row's, no memory
or no less than the row's, the same commit); otherwise the row is added: a duplicate record
hides a cell longer, a missing one launches it certain to run out of memory.

Retracted evidence (its latest event a retraction, as `record pull` judges it) holds a row by
its evidence key or a sure match only: a retraction in doubt is not taken as the row's.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable
from datetime import date as Date
from pathlib import Path, PurePosixPath

from oomrec.core import gitrun
from oomrec.core.records import MEM_JITTER, EvidenceKey, OomRecord, covered, evidence_key
from oomrec.store.retractions import Event, retracted

SURE = "sure"
IN_DOUBT = "in doubt"
# What holds a row (Evidence.holds): a record, or a retraction; None: nothing, it is new.
HELD = "held"
RETRACTED = "retracted"


class Evidence:
    """What is already known of the cells: this host's records and archived records, its
    retraction events, and, asked once and only when a row is held by nothing local, other
    hosts' published records and events (`shared`: git notes, as `record pull` reads them).
    Evidence is retracted when its latest event, among all of them, is a retraction."""

    def __init__(
        self,
        records: Iterable[OomRecord],
        events: Iterable[Event] = (),
        shared: Callable[[], tuple[list[OomRecord], list[Event]]] | None = None,
    ) -> None:
        self.records = list(records)
        self.known: set[EvidenceKey] = {evidence_key(r) for r in self.records}
        self.events = list(events)
        self._shared = shared
        self._judge()

    def _judge(self) -> None:
        gone = retracted(self.events)
        self.gone = set(gone)
        self.gone_cells = CellEvidence(event.record for event in gone.values())
        applying = [r for r in self.records if evidence_key(r) not in self.gone]
        self.held_cells = CellEvidence(applying)

    def _read_shared(self) -> None:
        if self._shared is None:
            return
        records, events = self._shared()
        self._shared = None
        self.records += records
        self.events += events
        self._judge()

    def holds(
        self,
        row: OomRecord,
        row_date: str | None,
        row_commit: str | None,
        source: str,
        names: PastNames,
    ) -> str | None:
        """HELD, RETRACTED or None for a row (as `row`) not among the known evidence keys."""
        self._read_shared()
        key = evidence_key(row)
        fact = (row, row_date, row_commit, source)
        if (
            key in self.gone
            or covered(row, self.gone)
            or holds(*fact, self.gone_cells.candidates(row), names, sure_only=True)
        ):
            return RETRACTED
        if holds(*fact, self.held_cells.candidates(row), names):
            return HELD
        shared = {evidence_key(r) for r in self.held_cells.candidates(row)}
        if key in shared or covered(row, shared):
            return HELD
        return None


class CellEvidence:
    """Records by cell (model, length), to match rows against."""

    def __init__(self, records: Iterable[OomRecord]) -> None:
        self.by_cell: dict[tuple[str, int], list[OomRecord]] = {}
        for record in records:
            if record.kind is None:
                self.by_cell.setdefault((record.model, record.prompt_target_len), []).append(record)

    def candidates(self, record: OomRecord) -> list[OomRecord]:
        return self.by_cell.get((record.model, record.prompt_target_len), [])


class PastNames:
    """The paths each CSV has had in git (`git log --follow`), asked once per file and only for
    a file some record of its cells names otherwise."""

    def __init__(self, root: Path, in_git: bool) -> None:
        self.root = root
        self.in_git = in_git
        self._names: dict[str, frozenset[str]] = {}

    def of(self, source: str) -> frozenset[str]:
        names = self._names.get(source)
        if names is None:
            names = self._names[source] = frozenset({source, *self._from_git(source)})
        return names

    def _from_git(self, source: str) -> list[str]:
        if not self.in_git or os.path.isabs(source):
            return []
        try:
            done = gitrun.run(
                ["log", "--follow", "--name-only", "--format=", "-z", "--", source],
                cwd=self.root,
                capture_output=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return []
        if done.returncode != 0:
            return []
        text = done.stdout.decode("utf-8", errors="surrogateescape")
        return [name.strip("\n") for name in text.split("\0") if name.strip("\n")]


def match(
    row: OomRecord,
    row_date: str | None,
    row_commit: str | None,
    source: str,
    held: OomRecord,
    names: PastNames,
) -> str | None:
    """Whether `held` is the evidence of the row `row` was made from: SURE, IN_DOUBT or None.

    `row_date` and `row_commit` are what the row itself wrote (None: not given); `source` is
    the row's file as the record names it."""
    if held.kind is not None or row.kind is not None:
        return None
    if (held.model, held.prompt_target_len) != (row.model, row.prompt_target_len):
        return None
    if row_date is None or not _near(row_date, held.date):
        return None
    if row.hardware is not None and held.hardware is not None and row.hardware != held.hardware:
        return None
    if row_commit is not None and not _same_commit(row_commit, held.commit):
        return None
    if (
        row.mem_bytes is not None
        and held.mem_bytes is not None
        and held.mem_bytes < row.mem_bytes * (1 - MEM_JITTER)
    ):
        # The row claims an OOM with more memory than the record: not what it holds.
        return None
    if held.source_csv == source or held.source_csv in names.of(source):
        return SURE
    if PurePosixPath(held.source_csv).name == PurePosixPath(source).name:
        return IN_DOUBT
    return None


def covers(held: OomRecord, row: OomRecord) -> bool:
    """Whether `held` applies wherever `row` would: no tag or the row's, no memory or no less
    than the row's, the same commit (so no fix lifts it that would not lift the row)."""
    if held.hardware is not None and held.hardware != row.hardware:
        return False
    if held.mem_bytes is not None and (
        row.mem_bytes is None or held.mem_bytes < row.mem_bytes * (1 - MEM_JITTER)
    ):
        return False
    return held.commit == row.commit


def holds(
    row: OomRecord,
    row_date: str | None,
    row_commit: str | None,
    source: str,
    candidates: Iterable[OomRecord],
    names: PastNames,
    *,
    sure_only: bool = False,
) -> OomRecord | None:
    """The first of `candidates` that holds the row (see the module's rule), or None."""
    for held in candidates:
        found = match(row, row_date, row_commit, source, held, names)
        if found == SURE or (found == IN_DOUBT and not sure_only and covers(held, row)):
            return held
    return None


def _near(a: str, b: str) -> bool:
    try:
        return abs((Date.fromisoformat(a) - Date.fromisoformat(b)).days) <= 1
    except ValueError:
        return False


def _same_commit(a: str, b: str) -> bool:
    """The same commit as written: equal, or one an abbreviation (7+ hex digits) of the other."""
    a, b = a.lower(), b.lower()
    if a == b:
        return True
    short, full = sorted((a, b), key=len)
    return len(short) >= 7 and full.startswith(short) and "-" not in short + full
