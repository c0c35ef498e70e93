"""The OOM frontier (`oomrec report`): per model and machine class, the largest length that ran,
the smallest that ran out of memory (and whether a fix took it out of play), what was never tried,
and which OOMs a later successful run contradicts.

Facts come from every data row of the benchmark CSVs (not only `SKIP:oom` rows, as the import
reads; folded into cells by report.scan) and from the record and its archive. Evidence must be
true, so a contradiction only ever marks an OOM: oomrec never drops one on that alone.
"""

from __future__ import annotations

import contextlib
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cached_property
from itertools import accumulate
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oomrec.core.gcpause import no_cycle_collection
from oomrec.core.records import KIND_FAKE, KIND_GUARD, OomRecord
from oomrec.core.rowfacts import Outcome
from oomrec.core.schema import JSON_SCHEMA_VERSION as SCHEMA_VERSION
from oomrec.core.units import DEFAULT_REGRESSION_THRESHOLD
from oomrec.report.folded import CellKey, CellRows, Machine, Scan, Seen, record_machine, row_machine
from oomrec.report.peaks import Peak, read_peaks
from oomrec.report.regressions import Regression, Stop, find, stops_of
from oomrec.report.runs import Run, fold, untried
from oomrec.report.scan import oom_commits, resolve_commits, scan_csvs

if TYPE_CHECKING:
    from oomrec.core.records import Loaded, RecordFile
    from oomrec.staleness.verdict import History, Judgement
    from oomrec.store.archive import ArchivedLine
    from oomrec.store.locations import Settings

__all__ = ["CellRows", "Machine", "Outcome", "Scan", "Seen", "row_machine", "scan_csvs"]


# One glyph per outcome, ASCII so a pipe or an old terminal shows it too; colour only adds.
GLYPHS: dict[Outcome, str] = {
    Outcome.RAN: "o",
    Outcome.OOM: "X",
    Outcome.LIFTED: "x",
    Outcome.BACKSTOP: "b",
    Outcome.GUARD: "g",
    Outcome.RECORD: "r",
    Outcome.TIMEOUT: "t",
    Outcome.FAILED: "f",
    Outcome.SKIPPED: "s",
    Outcome.NOT_TRIED: ".",
}
LEGEND: dict[Outcome, str] = {
    Outcome.RAN: "ran",
    Outcome.OOM: "out of memory (CSV SKIP:oom or a record), in play",
    Outcome.LIFTED: "out of memory before a fix in effect at HEAD (a probe verifies it)",
    Outcome.BACKSTOP: "skipped by the backstop",
    Outcome.GUARD: "stopped by the memory guard at its limit (not an OOM; its record is the "
    "evidence)",
    Outcome.RECORD: "skipped by the record",
    Outcome.TIMEOUT: "timed out",
    Outcome.FAILED: "failed (FAIL:*)",
    Outcome.SKIPPED: "skipped for another reason (SKIP:oom_estimate, ...)",
    Outcome.NOT_TRIED: "never tried",
}
CONTRADICTED_GLYPH = "!"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One OOM: a CSV `SKIP:oom` row or a record line (live or archived)."""

    model: str
    length: int
    machine: Machine
    # The latest sighting (what a later run must beat) and the first (what "since" names).
    seen: Seen
    since: Seen
    # "csv", "record", "archive" (archived by a person: record prune) or "verified" (archived
    # by a probe that ran: out of play while its fix is in effect).
    kind: str
    record: OomRecord

    @property
    def guard(self) -> bool:
        """A stop by the memory guard (a record of kind guard): the operator's budget was
        reached, which is no proof that the cell runs out of memory on the machine."""
        return self.record.kind == KIND_GUARD

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "length": self.length,
            "machine": self.machine.id,
            "kind": self.kind,
            "stopped_by": "guard" if self.guard else "oom",
            # What stopped it: the memory it ran under (a guard stop's limit).
            "limit_bytes": self.record.mem_bytes,
            **self.seen.to_dict(),
            "since": self.since.to_dict(),
        }


def csv_evidence(scan: Scan) -> list[Evidence]:
    """The OOM rows of the CSVs, as records, so the one rule judges them like the record's."""
    out = []
    # In the order of their cells, not the scan's: which of two equal OOMs a view names first
    # must not depend on how the rows were read (whole or in kept parts).
    cells = sorted(
        scan.cells.items(), key=lambda kv: (kv[0][0], _machine_order(kv[0][1]), kv[0][2])
    )
    for (model, machine, length), cell in cells:
        seen = cell.latest.get(Outcome.OOM)
        if seen is None:
            continue
        record = OomRecord(
            model,
            length,
            seen.date or "",
            seen.commit,
            None,
            seen.where.rsplit(":", 1)[0],
            machine.tag,
        )
        out.append(Evidence(model, length, machine, seen, cell.first[Outcome.OOM], "csv", record))
    return out


def record_evidence(records: Iterable[tuple[OomRecord, str, str]]) -> list[Evidence]:
    """Records as evidence: (record, where it is as `path:line`, "record" or "archive"); an
    OOM faked with --fake-oom (kind `fake`) is none."""
    out = []
    # A record holds few classes and many lines: each class is decided once.
    classes: dict[tuple[str | None, int | None], Machine] = {}
    for r, where, kind in records:
        if r.kind == KIND_FAKE:
            continue
        seen = Seen(where, r.date or None, r.commit)
        machine = classes.get((r.hardware, r.mem_bytes))
        if machine is None:
            machine = classes[(r.hardware, r.mem_bytes)] = record_machine(r)
        out.append(Evidence(r.model, r.prompt_target_len, machine, seen, seen, kind, r))
    return out


@dataclass(frozen=True, slots=True)
class Contradiction:
    """An OOM and the later CSV row where the same model ran at that length or more."""

    evidence: Evidence
    machine: Machine
    length: int
    seen: Seen

    def to_dict(self) -> dict[str, Any]:
        return {
            "oom": self.evidence.to_dict(),
            "ran": {
                "length": self.length,
                "machine": self.machine.id,
                **self.seen.to_dict(),
            },
        }


def contradictions(evidence: Iterable[Evidence], scan: Scan) -> list[Contradiction]:
    """Each OOM that a strictly later (by date) successful row of the same model, at its length or
    more, on its machine (the same tag, and a memory not known to differ) contradicts, with that
    row (the latest such, then the longest, then the first in the scan). An untagged OOM is never
    contradicted: a run on one machine says nothing about another. Evidence to act on: nothing is
    dropped.

    Per model and class, the runs sorted latest (then longest) first with the longest length so
    far beside each: the first run long enough is found by bisection, and it is the answer when
    it is later than the OOM (no run after it is). Not each OOM against each run: a model with
    thousands of OOMs and runs would be their product."""
    runs: dict[str, dict[Machine, list[tuple[str, int, int, Seen]]]] = {}
    for i, ((model, machine, length), cell) in enumerate(scan.cells.items()):
        seen = cell.latest.get(Outcome.RAN)
        if seen is not None and seen.date is not None:
            runs.setdefault(model, {}).setdefault(machine, []).append((seen.date, length, -i, seen))
    index: dict[str, list[tuple[Machine, list[tuple[str, int, int, Seen]], list[int]]]] = {}
    for model, by_class in runs.items():
        for machine, rows in by_class.items():
            rows.sort(key=itemgetter(0, 1, 2), reverse=True)
            longest = list(accumulate((row[1] for row in rows), max))
            index.setdefault(model, []).append((machine, rows, longest))
    out = []
    for ev in evidence:
        if not ev.seen.date or ev.machine.tag is None:
            continue
        best: tuple[str, int, int, Seen, Machine] | None = None
        for machine, rows, longest in index.get(ev.model, ()):
            if not ev.machine.covers(machine):
                continue
            at = bisect_left(longest, ev.length)
            if at == len(rows) or rows[at][0] <= ev.seen.date:
                continue
            date, length, order, seen = rows[at]
            if best is None or (date, length, order) > best[:3]:
                best = (date, length, order, seen, machine)
        if best is not None:
            out.append(Contradiction(ev, best[4], best[1], best[3]))
    return out


@dataclass(frozen=True, slots=True)
class Judged:
    """An OOM with its judgement at HEAD: `fix` is the fix that took it out of play, if any."""

    evidence: Evidence
    applies: bool
    fix: str | None
    status: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.evidence.to_dict(), "status": self.status, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class FixMarker:
    sha: str
    date: str
    subject: str
    globs: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "date": self.date,
            "subject": self.subject,
            "globs": list(self.globs),
        }


@dataclass(frozen=True, slots=True)
class Frontier:
    """One model on one machine class."""

    model: str
    machine: Machine
    ran_max: tuple[int, Seen] | None
    oom_min: Judged | None
    lifted_min: Judged | None
    contradicted: bool
    # The smallest stop by the memory guard in play: its own state, never an OOM.
    guard_min: Judged | None = None
    # The lengths it was tried at (sorted) and its class's axis: never_tried's inputs, kept so
    # that only a view that shows the untried ranges pays for them (the plain report does not).
    tried: Sequence[int] = field(default=(), repr=False, compare=False)
    axis: Sequence[int] = field(default=(), repr=False, compare=False)

    @property
    def never_tried(self) -> tuple[tuple[int, int], ...]:
        """The lengths of the class's axis this model was never tried at, as (first, last)
        ranges of consecutive axis lengths (report/runs.py): as many as its tried lengths, not
        the axis."""
        return untried(self.axis, self.tried)

    def to_dict(self) -> dict[str, Any]:
        ran = None
        if self.ran_max is not None:
            ran = {"length": self.ran_max[0], **self.ran_max[1].to_dict()}
        return {
            "model": self.model,
            "machine": self.machine.id,
            "ran_max": ran,
            "oom_min": self.oom_min.to_dict() if self.oom_min else None,
            "lifted_oom_min": self.lifted_min.to_dict() if self.lifted_min else None,
            "guard_min": self.guard_min.to_dict() if self.guard_min else None,
            "never_tried": [list(span) for span in self.never_tried],
            "contradicted": self.contradicted,
        }


@dataclass
class Report:
    """The whole picture; `to_json()` is the one documented shape (see SCHEMA_VERSION)."""

    head: str | None
    machines: list[Machine]
    models: list[str]
    lengths: dict[Machine, list[int]]
    frontier: dict[tuple[str, Machine], Frontier]
    grid: dict[CellKey, tuple[Outcome, bool]]
    # Every OOM and its state (frontier._states), in the order found: `ooms` makes them Judged
    # and sorts them when a view asks.
    evidence: list[Evidence]
    states: list[State]
    contradictions: list[Contradiction]
    # Per (model, class), the largest length that ran on each date: (date, commit, length,
    # where the row is).
    timeline: dict[tuple[str, Machine], list[tuple[str, str, int, str]]]
    fixes: list[FixMarker]
    files_read: int
    files_skipped: dict[str, int]
    rows: int
    # Per grid cell, the row or record its outcome is shown from (for the page's hover titles).
    seen: dict[CellKey, Seen] = field(default_factory=dict)
    # SKIP:oom rows without a model or length to place them by (Scan.oom_rows_left_out).
    oom_rows_left_out: int = 0

    # Memory regressions (report/regressions.py): cells that ran at A and were stopped at a
    # later B; and how many (A, B) pairs were left unasked past its bound.
    regressions: list[Regression] = field(default_factory=list)
    regressions_unasked: int = 0
    # Each cell's peaks as its sweeps measured them (report/peaks.py), in the order the
    # provenance files list them; JSON shows the last.
    peaks: dict[CellKey, list[Peak]] = field(default_factory=dict)

    # Computed on first use: the plain report shows only the frontier, and over a million-line
    # record these two are a third of the build.
    @cached_property
    def runs(self) -> dict[tuple[str, Machine], list[Run]]:
        """The grid folded (report/runs.py): per (model, class), its lengths in runs of one
        outcome. What --json's `cells` are, and what a sparse grid is drawn as."""
        return fold(self.grid)

    @cached_property
    def ooms(self) -> list[Judged]:
        """Every OOM judged, by model, length and where it was seen."""
        judged = [Judged(e, *state) for e, state in zip(self.evidence, self.states, strict=True)]
        return sorted(
            judged, key=attrgetter("evidence.model", "evidence.length", "evidence.seen.where")
        )

    def machine(self, tag: str) -> Machine | None:
        """The class a `--machine` value names: its id (`gb10 122GB`) or its tag when unique."""
        for m in self.machines:
            if m.id == tag:
                return m
        tagged = [m for m in self.machines if m.tag == tag]
        return tagged[0] if len(tagged) == 1 else None

    def fixes_for(self, model: str) -> list[FixMarker]:
        """The fix commits whose globs match `model`."""
        return [f for f in self.fixes if any(fnmatchcase(model, g) for g in f.globs)]

    @no_cycle_collection()
    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "head": self.head,
            "files": {
                "read": self.files_read,
                "skipped": self.files_skipped,
                "rows": self.rows,
                "oom_rows_left_out": self.oom_rows_left_out,
            },
            "machines": [
                {
                    "id": m.id,
                    "hardware": m.tag,
                    "mem_gb": m.mem_gb,
                    "mem_bytes": m.mem_bytes,
                    "lengths": self.lengths[m],
                }
                for m in self.machines
            ],
            "models": self.models,
            "frontier": [f.to_dict() for f in self.frontier.values()],
            "cells": [
                {
                    "model": model,
                    "machine": machine.id,
                    "from": run.start,
                    "to": run.end,
                    "lengths": run.size,
                    "outcome": run.outcome.value,
                    "contradicted": run.flagged,
                }
                for (model, machine), runs in self.runs.items()
                for run in runs
            ],
            "ooms": [j.to_dict() for j in self.ooms],
            "contradictions": [c.to_dict() for c in self.contradictions],
            "regressions": [r.to_dict() for r in self.regressions],
            "peaks": [
                {
                    "model": model,
                    "machine": machine.id,
                    "length": length,
                    **runs[-1].to_dict(),
                    "runs": len(runs),
                }
                for (model, machine, length), runs in sorted(
                    self.peaks.items(), key=lambda kv: (kv[0][0], kv[0][1].id, kv[0][2])
                )
            ],
            "timeline": [
                {
                    "model": model,
                    "machine": machine.id,
                    "points": [{"date": d, "commit": c, "length": n} for d, c, n, _ in points],
                }
                for (model, machine), points in self.timeline.items()
            ],
            "fixes": [f.to_dict() for f in self.fixes],
        }


@no_cycle_collection()
def build(
    scan: Scan,
    records: Sequence[Evidence],
    judge: Callable[[list[OomRecord]], Sequence[Judgement]] | None = None,
    fixes: Sequence[FixMarker] = (),
    head: str | None = None,
) -> Report:
    """The report from the folded CSVs and the record's evidence. `judge(records)` returns a
    `stale.Judgement` per record (None: every OOM applies)."""
    # An OOM row a record was made from is that record's evidence, not a second OOM: a sweep
    # writes both, and import-csv makes one from the other.
    # The CSVs' few OOMs are keyed, not the record's many lines.
    rows = csv_evidence(scan)
    keys = {(e.model, e.length, e.record.source_csv) for e in rows}
    held = {k for e in records if (k := (e.model, e.length, e.record.source_csv)) in keys}
    rows = [e for e in rows if (e.model, e.length, e.record.source_csv) not in held]
    evidence = rows + list(records)
    judgements = [None] * len(evidence) if judge is None else judge([e.record for e in evidence])
    return _build(scan, evidence, judgements, fixes, head)


def _build(
    scan: Scan,
    evidence: list[Evidence],
    judgements: Sequence[Judgement | None],
    fixes: Sequence[FixMarker],
    head: str | None,
) -> Report:
    """build's work."""
    contra = contradictions(evidence, scan)
    contradicted = {id(c.evidence) for c in contra}

    machines = sorted({m for (_, m, _) in scan.cells}, key=_machine_order)
    for of in dict.fromkeys(e.machine for e in evidence):
        if not any(of.covers(m) for m in machines):
            machines.append(of)
    machines.sort(key=_machine_order)
    lengths: dict[Machine, set[int]] = {m: set() for m in machines}
    grid: dict[CellKey, tuple[Outcome, bool]] = {}
    ran: dict[tuple[str, Machine], tuple[int, Seen]] = {}
    for _, machine, length in scan.cells:
        # A class whose files name no target length is shown at the lengths its rows have.
        if machine not in scan.targets:
            lengths[machine].add(length)
    for machine, aimed in scan.targets.items():
        lengths[machine] |= aimed
    shown_from: dict[CellKey, Seen] = {}
    for (model, machine, length), cell in scan.cells.items():
        shown = cell.latest_not_oom()
        if shown is not None:
            grid[(model, machine, length)] = _SHOWN[(shown, False)]
            shown_from[(model, machine, length)] = cell.latest[shown]
        seen = cell.latest.get(Outcome.RAN)
        best = ran.get((model, machine))
        if seen is not None and (best is None or best[0] < length):
            ran[(model, machine)] = (length, seen)
    timeline: dict[tuple[str, Machine], list[tuple[str, str, int, str]]] = {}
    for (model, machine, date), (n, commit, where) in scan.fits.items():
        points = timeline.get((model, machine))
        if points is None:
            points = timeline[(model, machine)] = []
        points.append((date, commit, n, where))
    # A series holds one point per date: sorting each by date is sorting all by date, without
    # a Python key call per point (67,000 over bench_report.py's corpus).
    for points in timeline.values():
        points.sort(key=itemgetter(0))
    states = _states(evidence, judgements)
    by_class: dict[tuple[str, Machine], list[tuple[Evidence, State]]] = {}
    # The classes each evidence's class speaks for, decided once per class (a record of a
    # million lines has a few).
    covered = {of: [m for m in machines if of.covers(m)] for of in {e.machine for e in evidence}}
    for pair in zip(evidence, states, strict=True):
        ev, (applies, _, _) = pair
        flagged = id(ev) in contradicted
        for m in covered[ev.machine]:
            by_class.setdefault((ev.model, m), []).append(pair)
            lengths[m].add(ev.length)
            key = (ev.model, m, ev.length)
            # An OOM in play shows over every other outcome of its cell: hiding one is the
            # worse error. One a fix took out of play shows unless a row says more.
            shown, was_flagged = grid.get(key, (None, False))
            if applies and ev.record.kind == KIND_GUARD:
                # A guard stop shows over every outcome but an OOM: its own state.
                if shown != Outcome.OOM:
                    grid[key] = _SHOWN[(Outcome.GUARD, flagged or was_flagged)]
                    shown_from[key] = ev.seen
            elif applies:
                grid[key] = _SHOWN[(Outcome.OOM, flagged or was_flagged)]
                shown_from[key] = ev.seen
            elif shown is None or shown == Outcome.LIFTED:
                grid[key] = _SHOWN[(Outcome.LIFTED, flagged or was_flagged)]
                shown_from[key] = ev.seen
    rank = {m: i for i, m in enumerate(machines)}
    # In (model, class, length) order: the groups sorted, then each one's lengths (integers),
    # not a key call per cell.
    # The cells' own key tuples, grouped: a million cells are not made again.
    groups: dict[tuple[str, Machine], list[CellKey]] = {}
    for key in grid:
        groups.setdefault(key[:2], []).append(key)
    ordered = sorted(groups, key=lambda k: (k[0], rank[k[1]]))
    for k in ordered:
        groups[k].sort(key=itemgetter(2))
    grid = {key: grid[key] for k in ordered for key in groups[k]}
    tried = {k: [key[2] for key in groups.pop(k)] for k in ordered}
    axes = {m: sorted(v) for m, v in lengths.items()}
    frontier = {}
    for (model, m), done in tried.items():
        ooms = by_class.get((model, m), [])
        oom_min, lifted_min, guard_min = _oom_mins(ooms)
        frontier[(model, m)] = Frontier(
            model=model,
            machine=m,
            ran_max=ran.get((model, m)),
            oom_min=oom_min,
            lifted_min=lifted_min,
            guard_min=guard_min,
            contradicted=any(id(ev) in contradicted for ev, _ in ooms),
            tried=done,
            axis=axes[m],
        )
    return Report(
        head=head,
        machines=machines,
        models=sorted({model for (model, _, _) in grid}),
        lengths=axes,
        frontier=frontier,
        grid=grid,
        evidence=evidence,
        states=states,
        contradictions=contra,
        timeline=dict(
            sorted(timeline.items(), key=lambda kv: (kv[0][0], _machine_order(kv[0][1])))
        ),
        fixes=list(fixes),
        files_read=scan.files_read,
        files_skipped=scan.files_skipped,
        rows=scan.rows,
        seen=shown_from,
        oom_rows_left_out=scan.oom_rows_left_out,
    )


# What a Judged holds besides its evidence: (applies, the fix's sha, status).
State = tuple[bool, str | None, str]
_APPLIES: State = (True, None, "applies")
# A cell's (outcome, contradicted), one tuple each: a million cells share a few.
_SHOWN = {(o, flagged): (o, flagged) for o in Outcome for flagged in (False, True)}


def _machine_order(m: Machine) -> tuple[str, bool, bool, int]:
    # A total order: untagged last, unknown memory first.
    return (m.tag or "~", m.tag is None, m.mem_bytes is not None, m.mem_bytes or 0)


def _state(e: Evidence, j: Judgement | None) -> State:
    """The evidence's state as every view shows it (planner.record_state): a lift is
    `lifted, unverified` until a probe verifies it (`verified`), or a person archived it
    (`out of play`)."""
    if j is None:
        return _APPLIES
    fix = j.fixes[0].sha if not j.applies and j.fixes else None
    status = str(j.status)
    if not j.applies and e.kind in ("archive", "verified"):
        status = "verified" if e.kind == "verified" else "out of play"
    return (j.applies, fix, status)


def _states(evidence: Sequence[Evidence], judgements: Sequence[Judgement | None]) -> list[State]:
    """Each evidence's state, decided once per (judgement, kind): a million lines share a few
    judgements, and one tuple each (not a Judged per line) keeps the plain report lean."""
    decided: dict[tuple[int, str], State] = {}
    out = []
    for e, j in zip(evidence, judgements, strict=True):
        # The judgements list holds every j alive here, so no two share an id.
        key = (id(j), e.kind)
        state = decided.get(key)
        if state is None:
            state = decided[key] = _state(e, j)
        out.append(state)
    return out


def _oom_mins(
    ooms: list[tuple[Evidence, State]],
) -> tuple[Judged | None, Judged | None, Judged | None]:
    """The smallest OOM in play, the smallest a fix took out of play when it is smaller, and
    the smallest guard stop in play (never counted as an OOM)."""
    stops = [p for p in ooms if p[0].record.kind == KIND_GUARD]
    if stops:
        ooms = [p for p in ooms if p[0].record.kind != KIND_GUARD]
    oom_min = min((p for p in ooms if p[1][0]), key=_oom_order, default=None)
    lifted_min = min((p for p in ooms if not p[1][0]), key=_oom_order, default=None)
    guard_min = min((p for p in stops if p[1][0]), key=_oom_order, default=None)
    if oom_min and lifted_min and lifted_min[0].length >= oom_min[0].length:
        lifted_min = None
    return (
        Judged(oom_min[0], *oom_min[1]) if oom_min else None,
        Judged(lifted_min[0], *lifted_min[1]) if lifted_min else None,
        Judged(guard_min[0], *guard_min[1]) if guard_min else None,
    )


def _oom_order(pair: tuple[Evidence, State]) -> tuple[int, str]:
    # The smallest length, then the earliest sighting: "since" names when it was first seen.
    return (pair[0].length, pair[0].since.date or "9999")


def gather(
    paths: Sequence[Path],
    kept: list[Evidence],
    settings: Settings,
    threshold: float = DEFAULT_REGRESSION_THRESHOLD,
) -> Report:
    """The report over the CSVs under `paths` and the record's evidence (`record_lines`: the
    caller drops the loaded file first, a million-line record's lines are half its memory),
    every OOM judged at HEAD by the one rule, with the fix commits in HEAD's history as
    markers."""
    from oomrec.importer.backfill import commit_columns
    from oomrec.staleness.fixlog import trailer_key
    from oomrec.staleness.verdict import History, judge_all, repo_with_head

    repo = repo_with_head()
    in_git = settings.repo_root is not None
    keep_in = None
    if repo is not None:
        with contextlib.suppress(AttributeError, TypeError, ValueError):
            keep_in = Path(repo.git_dir) / "oomrec"
    scan = scan_csvs(paths, settings.base, commit_columns(settings), in_git=in_git, keep_in=keep_in)
    history = None
    if repo is not None:
        asked = oom_commits(scan) | {e.record.commit for e in kept}
        history = History(repo, trailer_key(settings), asked)
    report = build(scan, kept, lambda records: judge_all(history, records))
    report.peaks = read_peaks(at.path for at in scan.files_at.values())
    if history is not None:
        report.head = history.sha_at()
        report.fixes = fix_markers(history)
        root = settings.repo_root
        if root is not None:
            report.regressions, report.regressions_unasked = find(
                scan.cells,
                _stops(
                    ((e, s[0]) for e, s in zip(report.evidence, report.states, strict=True)),
                    scan,
                    root,
                ),
                root,
                report.peaks,
                threshold,
            )
    return report


def _stops(evidence: Iterable[tuple[Evidence, bool]], scan: Scan, root: Path) -> list[Stop]:
    """Every OOM and guard stop in play ((evidence, in play) pairs), first and latest sighting,
    by its own cell (the class it was seen on: a regression is within one class), for the
    cells some row ran in; their rows' commits asked of git first where the scan did not."""
    ran = {key for key, cell in scan.cells.items() if Outcome.RAN in cell.latest}
    if not ran:
        return []
    given = [
        (key, seen, ev.guard, applies)
        for ev, applies in evidence
        if (key := (ev.model, ev.machine, ev.length)) in ran
        for seen in dict.fromkeys((ev.since, ev.seen))
    ]
    both = {key for key, _, _, _ in given} | {
        key for key in ran if Outcome.GUARD in scan.cells[key].latest
    }
    # The scan asked git already for the cells a row shows stopped.
    resolve_commits(
        scan,
        [k for k in both if not {Outcome.OOM, Outcome.GUARD} & scan.cells[k].latest.keys()],
        root,
    )
    return stops_of({key: scan.cells[key] for key in both}, given)


def fix_markers(history: History) -> list[FixMarker]:
    """The fix commits in the history, oldest first, dated by their commit date (one git call)."""
    fixes = {sha: e for sha, e in history.events.items() if e.globs}
    if not fixes:
        return []
    out = history.repo.git.show("-s", "--format=%H %cs", *fixes)
    dates = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    markers = [
        FixMarker(sha, dates.get(sha, ""), fixes[sha].subject, fixes[sha].globs) for sha in fixes
    ]
    return sorted(markers, key=lambda f: (f.date, f.sha))


def record_findings(
    record_file: RecordFile, loaded: Loaded, settings: Settings, paths: Sequence[Path] = ()
) -> tuple[list[Contradiction], list[Regression]]:
    """For `record stale`: the record's lines (live and archived) that a later CSV row
    contradicts, with that row; and the memory regressions the record's lines, the CSVs and
    their provenance files show (report/regressions.py). The CSVs under `paths`, default
    `benchmarks/` (none without one)."""
    from oomrec.importer.backfill import DEFAULT_FOLDER, commit_columns

    if not paths:
        folder = settings.base / DEFAULT_FOLDER
        if not folder.is_dir():
            return [], []
        paths = [folder]
    kept = record_lines(record_file, loaded)
    root = settings.repo_root
    scan = scan_csvs(paths, settings.base, commit_columns(settings), in_git=root is not None)
    found = contradictions(kept, scan) if kept else []
    if root is None:
        return found, []
    rows = csv_evidence(scan)
    stops = _stops(((e, True) for e in [*rows, *kept]), scan, root)
    peaks = read_peaks(at.path for at in scan.files_at.values())
    regressions, _ = find(scan.cells, stops, root, peaks)
    return found, regressions


def record_lines(
    record_file: RecordFile, loaded: Loaded, parked: Sequence[ArchivedLine] | None = None
) -> list[Evidence]:
    """The record's lines and its archive's (`parked`, read here when None) as evidence, each
    named `path:line`."""
    from oomrec.store import archive

    store = archive.archive_file(record_file)
    kept = [
        (line.record, f"{record_file.shown_as}:{line.lineno}", "record")
        for line in loaded.lines
        if line.record is not None
    ]
    kept += [
        (a.record, f"{store.shown_as}:{a.lineno}", "archive" if a.verified is None else "verified")
        for a in archive.in_play(archive.load(record_file, loaded) if parked is None else parked)
        if a.record is not None
    ]
    return record_evidence(kept)
