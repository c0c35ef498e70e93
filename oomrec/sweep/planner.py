"""What the sweep decides about a cell before anything launches, and the evidence it decides
from: the record, its archive and the shared notes, judged at HEAD. Apart from the sweep's
runner, so that `oomrec check` (in front of every hand run) loads no runner, guard or psutil.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple

from oomrec.core.gcpause import no_cycle_collection
from oomrec.core.modelnames import last_part
from oomrec.core.records import (
    KIND_GUARD,
    Applicability,
    Loaded,
    OomRecord,
    RecordFile,
    Stamp,
    applicability,
    short_commit,
)
from oomrec.core.schema import FAKE_OOM_ENV, Token

if TYPE_CHECKING:
    from oomrec.staleness.verdict import Fix, Judgement
    from oomrec.store.archive import ArchivedLine


class Action(StrEnum):
    """What the sweep does with a cell before launching anything (a dry run's `action`)."""

    RUN = "run"
    # A record a fix lifted, not yet verified: the cell runs alone under the guard, and its
    # outcome verifies the lift (archived) or refreshes the record (sweep/probe.py).
    PROBE = "probe"
    # Skipped without launching: the token its row gets.
    BACKSTOP = Token.OOM_BACKSTOP
    RECORD = Token.OOM_RECORD
    # Not launched either: --fake-oom, a true OOM as far as the backstop and the record know.
    FAKE_OOM = Token.TRUE_OOM
    # With --resume: an earlier run did it; no row is written.
    DONE = "done"


@dataclass(frozen=True, slots=True)
class Cell:
    model: str
    length: int
    # As the harness writes it into rows and passes it to the runner: `<models dir>/<model>`.
    model_path: str


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with a cell before launching anything, and why."""

    action: Action
    reason: str = ""
    # `path:lineno: line` of the record that pre-skips the cell (or, to run, that a fix lifted).
    record_line: str | None = None
    # PROBE: the lifted, unverified records the cell's run would verify.
    verifies: tuple[JudgedLine, ...] = ()

    @property
    def fake(self) -> bool:
        return self.action == Action.FAKE_OOM


class JudgedLine(NamedTuple):
    """A record line (of the record or its archive) and its judgement at HEAD.

    A NamedTuple: a sweep over a 100k-line record builds one per line before its first cell.
    """

    source: str
    lineno: int
    text: str
    record: OomRecord
    # As judged at HEAD (staleness/verdict.py); APPLIES when not judged.
    judgement: Judgement
    # Read from the archive: how it was archived (by a person, or verified by a probe).
    parked: ArchivedLine | None = None

    @property
    def length(self) -> int:
        return self.record.prompt_target_len

    @property
    def where(self) -> str:
        # A line of a shared note has no line number: its source names host and commit.
        return f"{self.source}:{self.lineno}" if self.lineno else self.source

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


class State(StrEnum):
    """A record's state on this host at HEAD: the three states of docs/staleness.md."""

    # In play: it pre-skips its cells.
    APPLIES = "applies"
    # A fix is in effect (graph and content), or (--probe-undecided) may be: a hypothesis,
    # which a guarded run of the cell (a probe) verifies or refutes.
    UNVERIFIED = "lifted, unverified"
    # Out of play: a probe's run proved it here, or a person archived it (prune).
    OUT = "out of play"


def record_state(
    item: JudgedLine, hardware: str, host_mem: int | None, probe_undecided: bool = False
) -> State:
    """The one rule for a record's state on a host (the sweep, `check`, `record list`,
    `record stale` and the report call it): only a verified run or a person takes a record out
    of play; an inference (a fix's change found in the tree) only makes it a probe."""
    judged = item.judgement
    parked = item.parked
    proof = parked.verified if parked is not None else None
    if parked is not None and proof is not None and proof.covers(hardware, host_mem):
        if not judged.applies:
            return State.OUT
        # Verified for an undecided fix: out while that same fix is still in the history.
        if judged.fixes and any(proved_by(fix, parked.fix) for fix in judged.fixes):
            return State.OUT
        return State.APPLIES
    if not judged.applies:
        # Archived by a person (prune): their decision stands while the fix is in effect.
        return State.OUT if parked is not None and proof is None else State.UNVERIFIED
    if probe_undecided and _undecided(judged):
        return State.UNVERIFIED
    return State.APPLIES


def state_text(item: JudgedLine, hardware: str, host_mem: int | None) -> str:
    """A record's state on this host as every view shows it (record list, stale, the plan)."""
    state = record_state(item, hardware, host_mem)
    parked = item.parked
    if state != State.OUT or parked is None:
        return str(item.judgement)
    if parked.verified is not None:
        return f"verified {parked.verified.describe()}; fix {short_commit(parked.fix)} in effect"
    judged = item.judgement
    fix = judged.fixes[0].describe() if judged.fixes else "a fix"
    return f"out of play: archived by record prune; {fix} in effect"


def proved_by(fix: Fix, sha: str) -> bool:
    return sha == fix.sha or sha in fix.copies


def _undecided(judged: Judgement) -> bool:
    """A fix is in the history whose change git cannot prove in effect here (or not)."""
    return judged.status == "unknown" and bool(judged.fixes)


class Planner:
    """Decides each cell before launch: backstop, then record, then fake OOM, then a probe of a
    lifted record, else run."""

    def __init__(
        self,
        evidence: Sequence[JudgedLine],
        hardware: str,
        *,
        ignore_record: bool = False,
        ignore_guard_records: bool = False,
        fake_oom: frozenset[tuple[str, int]] = frozenset(),
        host_mem: int | None = None,
        probe_problem: str | None = None,
        probe_undecided: bool = False,
    ) -> None:
        """`probe_problem`: why this host cannot watch the memory that matters (no probe: a
        lifted record keeps applying, and the decision says why). `probe_undecided`: records
        a fix may have lifted (undecided) are probed too."""
        self.ignore_record = ignore_record
        self.probe_problem = probe_problem
        self.hardware = hardware
        self.host_mem = host_mem
        self.fake_oom = fake_oom
        self.ignore_guard_records = ignore_guard_records
        self.probe_undecided = probe_undecided
        self.oom_min: dict[str, int] = {}
        # How the smallest of oom_min was known, for the backstop's reason.
        self.oom_token: dict[str, str] = {}
        # Per model, the records of this hardware (or of none) and memory, smallest length
        # first: those in play at HEAD, those a fix lifted but no run has verified (probes),
        # and those out of play (verified here, or archived by a person: the dry run's why).
        self.records: dict[str, list[JudgedLine]] = {}
        self.unverified: dict[str, list[JudgedLine]] = {}
        self.lifted: dict[str, list[JudgedLine]] = {}
        self._file(evidence)

    def add_evidence(self, evidence: Sequence[JudgedLine]) -> int:
        """The evidence read again mid-sweep (the record changed): its lines not yet known
        join the tables, each in its state; how many. None leaves: a line gone from the record
        (pruned, retracted, or a rewrite by another tool read halfway) keeps deciding until the
        next sweep reads the record afresh, so a running sweep never loses evidence."""
        tables = (self.records, self.unverified, self.lifted)
        known = {item.record for table in tables for hits in table.values() for item in hits}
        new = [item for item in evidence if item.record not in known]
        self._file(new)
        return len(new)

    def _file(self, evidence: Sequence[JudgedLine]) -> None:
        """Each line of `evidence` that reaches this host into its state's table."""
        hardware, host_mem, probe_undecided = self.hardware, self.host_mem, self.probe_undecided
        tables = {
            State.APPLIES: self.records,
            State.UNVERIFIED: self.unverified,
            State.OUT: self.lifted,
        }
        # applicability() reads only these two: decided once per distinct pair; the state of
        # a line not from the archive only by its judgement (shared by records judged alike).
        reaches: dict[tuple[str | None, int | None], Applicability] = {}
        states: dict[int, State] = {}
        for item in evidence:
            rec = item.record
            key = (rec.hardware, rec.mem_bytes)
            reach = reaches.get(key)
            if reach is None:
                reach = reaches[key] = applicability(rec, hardware, host_mem)
            if not reach.on_host:
                continue
            # Guard stops are the operator's budget: lifted alone when the budget changed.
            if self.ignore_guard_records and rec.kind == KIND_GUARD:
                continue
            if item.parked is None:
                state = states.get(id(item.judgement))
                if state is None:
                    state = states[id(item.judgement)] = record_state(
                        item, hardware, host_mem, probe_undecided
                    )
            else:
                state = record_state(item, hardware, host_mem, probe_undecided)
            tables[state].setdefault(rec.model, []).append(item)
        for table in tables.values():
            for hits in table.values():
                hits.sort(key=_length)

    @property
    def applicable_records(self) -> int:
        return sum(len(hits) for hits in self.records.values())

    @property
    def lifted_records(self) -> int:
        return sum(len(hits) for hits in self.lifted.values())

    @property
    def unverified_records(self) -> int:
        return sum(len(hits) for hits in self.unverified.values())

    def verified(self, lines: Sequence[JudgedLine]) -> None:
        """A probe's run verified these lifted records: out of play for the rest of the sweep."""
        gone = {id(item) for item in lines}
        for model, hits in list(self.unverified.items()):
            kept = [item for item in hits if id(item) not in gone]
            moved = [item for item in hits if id(item) in gone]
            if moved:
                self.lifted.setdefault(model, []).extend(moved)
                self.lifted[model].sort(key=_length)
            if kept:
                self.unverified[model] = kept
            else:
                del self.unverified[model]

    def record_hit(self, model: str, length: int) -> JudgedLine | None:
        """The applying record with the smallest length <= `length` for `model`, if any."""
        return _first_hit(self.records, model, length)

    def lifted_hit(self, model: str, length: int) -> JudgedLine | None:
        """The lifted record with the smallest length <= `length` for `model`, if any."""
        return _first_hit(self.lifted, model, length)

    def shared_last_parts(self, models: Sequence[str]) -> list[str]:
        """Warnings for records that name a last part two or more of `models` share: such a
        record (earlier oomrec versions wrote a nested model's last part) applies to all of them."""
        sharing: dict[str, list[str]] = {}
        for model in models:
            sharing.setdefault(last_part(model), []).append(model)
        said = []
        for part, names in sharing.items():
            if len(names) < 2 or part not in self.records:
                continue
            listed = " and ".join(sorted(names))
            for item in self.records[part]:
                said.append(
                    f"warning: {item.where}: model {part!r} is the last part of {listed}: "
                    f"the record applies to each of them (the safe side); if it is one "
                    f"model's, rewrite its first field as that model's name under the models "
                    f"dir (e.g. {sorted(n for n in names if n != part)[0]})"
                )
        return said

    def decide(self, cell: Cell) -> Decision:
        oom_at = self.oom_min.get(cell.model)
        if oom_at is not None and cell.length >= oom_at:
            token = self.oom_token.get(cell.model, Token.TRUE_OOM)
            return Decision(
                Action.BACKSTOP,
                f"{cell.model} was {token} at {oom_at} <= {cell.length} tokens in this sweep",
            )
        if not self.ignore_record:
            hit = self.record_hit(cell.model, cell.length)
            if hit is not None:
                return Decision(
                    Action.RECORD, f"recorded OOM at {hit.length} <= {cell.length}", str(hit)
                )
        # Exact pairs, as the harness keys them (never a nested model's last part).
        if (cell.model, cell.length) in self.fake_oom:
            return Decision(Action.FAKE_OOM, f"faked via --fake-oom / {FAKE_OOM_ENV}")
        hypothesis = _first_hit(self.unverified, cell.model, cell.length)
        if hypothesis is not None:
            return self._probe(cell, hypothesis)
        lifted = self.lifted_hit(cell.model, cell.length)
        if lifted is not None:
            return Decision(
                Action.RUN,
                f"recorded OOM at {lifted.length} "
                f"{state_text(lifted, self.hardware, self.host_mem)}",
                str(lifted),
            )
        return Decision(Action.RUN)

    def _probe(self, cell: Cell, hit: JudgedLine) -> Decision:
        """The decision for a cell that only lifted, unverified records cover."""
        judged = hit.judgement
        how = (
            str(judged)
            if not judged.applies
            else f"perhaps lifted by {judged.fixes[0].describe()}: {judged}"
        )
        if self.probe_problem is not None:
            return Decision(
                Action.RECORD,
                f"recorded OOM at {hit.length} <= {cell.length}, {how}; no probe here: "
                f"{self.probe_problem}",
                str(hit),
            )
        covering = [
            item
            for model in dict.fromkeys((cell.model, last_part(cell.model)))
            for item in self.unverified.get(model, ())
            if item.length <= cell.length
        ]
        return Decision(
            Action.PROBE,
            f"recorded OOM at {hit.length} <= {cell.length}, {how}; runs alone as a probe "
            "under the guard",
            str(hit),
            verifies=tuple(covering),
        )

    def known_oom(self, model: str) -> tuple[int, str] | None:
        """The smallest length at which `model` is known to run out of memory here, and how
        (the backstop's token, or SKIP:oom_record): every cell at or above it is skipped."""
        known = []
        if model in self.oom_min:
            known.append((self.oom_min[model], self.oom_token.get(model, Token.TRUE_OOM)))
        if not self.ignore_record:
            hit = self.record_hit(model, 2**63 - 1)
            if hit is not None:
                known.append((hit.length, Token.OOM_RECORD))
        return min(known, default=None)

    def note_oom(self, model: str, length: int, token: str = Token.TRUE_OOM) -> None:
        """`model` ran out of memory (`token`: SKIP:oom, or SKIP:oom_guard) at `length`."""
        if length <= self.oom_min.get(model, length):
            self.oom_min[model] = length
            self.oom_token[model] = token


class RecordWatch:
    """The record as the planner last read it, read again before a launch when it changed since
    (another process's `record add`, another sweep's OOM): one stat when it has not."""

    def __init__(
        self,
        record_file: RecordFile,
        seen: Stamp | None,
        gather: Callable[[], Sequence[JudgedLine]],
    ) -> None:
        """`seen`: the record's stamp taken before the read the planner was built from;
        `gather`: the evidence read again as it was for the plan (record, archive, notes)."""
        self.record_file = record_file
        self.seen = seen
        self.gather = gather

    def own_append(self) -> None:
        """This process appended to the record: when nothing else wrote it since the last read,
        the planner already knows what it holds (its backstop has this sweep's OOMs)."""
        last = self.record_file.last_append
        if last is not None and last[0] == self.seen:
            self.seen = last[1]

    def read_again(self, planner: Planner) -> int | None:
        """When the record changed since the last read, read the evidence again into `planner`:
        how many lines it did not know; None when unchanged (nothing read)."""
        now = self.record_file.stamp()
        if now == self.seen:
            return None
        added = planner.add_evidence(self.gather())
        # Taken before the read: a write during it is read at the next launch.
        self.seen = now
        return added


def _first_hit(table: dict[str, list[JudgedLine]], model: str, length: int) -> JudgedLine | None:
    """The record of `table` with the smallest length <= `length` for `model`: its own, or for
    a nested model one under its last part (written by earlier oomrec versions, or by hand)."""
    hits = table.get(model)
    best = hits[0] if hits and hits[0].length <= length else None
    if "/" in model:
        older = table.get(last_part(model))
        if older and older[0].length <= length and (best is None or older[0].length < best.length):
            best = older[0]
    return best


def gather_evidence(
    record_file: RecordFile,
    loaded: Loaded,
    key: str,
    hardware: str,
    judge: bool = True,
    parked: Sequence[ArchivedLine] | None = None,
    warnings: list[str] | None = None,
    models: Collection[str] | None = None,
) -> list[JudgedLine]:
    """Every record line of the record, its archive (`parked`, read here when None) and (when
    `judge`) the other hosts' shared notes, judged at HEAD (when `judge`); a line in two of
    them is read once. What of the shared notes cannot be read goes to `warnings`. `models`:
    only the lines of these model names are judged and returned (`oomrec check`'s one cell)."""
    with no_cycle_collection():
        return _gather(record_file, loaded, key, hardware, judge, parked, warnings, models)


def _gather(
    record_file: RecordFile,
    loaded: Loaded,
    key: str,
    hardware: str,
    judge: bool,
    parked: Sequence[ArchivedLine] | None,
    warnings: list[str] | None = None,
    models: Collection[str] | None = None,
) -> list[JudgedLine]:
    from oomrec.store import archive

    shown = record_file.shown_as
    items: list[tuple[str, int, str, OomRecord, ArchivedLine | None]] = [
        (shown, line.lineno, line.text, line.record, None)
        for line in loaded.lines
        if line.record is not None
    ]
    shown = archive.archive_file(record_file).shown_as
    archived = archive.load(record_file, loaded) if parked is None else parked
    items += [
        (shown, line.lineno, line.original, line.record, line)
        for line in archive.in_play(archived)
        if line.record is not None
    ]
    if judge:
        from oomrec.store import notes

        known = [item[3] for item in items]
        items += [
            (f"notes {line.host}@{short_commit(line.commit)}", 0, line.text, line.record, None)
            for line in notes.shared(known, hardware, warnings, archive.events(archived))
            if line.record is not None
        ]
    if models is not None:
        items = [item for item in items if item[3].model in models]
    records = [item[3] for item in items]
    if judge and records:
        from oomrec.staleness.verdict import judge_all, open_history

        judgements = judge_all(open_history(key, {r.commit for r in records}), records)
    else:
        from oomrec.staleness.verdict import APPLIES

        judgements = [APPLIES] * len(records)
    return [
        JudgedLine(src, no, text, rec, j, parked)
        for (src, no, text, rec, parked), j in zip(items, judgements, strict=True)
    ]


def _length(item: JudgedLine) -> int:
    return item.record.prompt_target_len
