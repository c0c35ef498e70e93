"""The sweep: a grid of (model x prompt length) cells, planned, then run one cell at a time.

Each cell is checked in the harness's order before anything launches: the monotonic backstop
(this model already ran out of memory at a length <= this one, earlier in this sweep), the
persistent record (a recorded OOM of this model, on this hardware or on any, at a length <= this
one), a faked OOM (a testing hook), and only then the runner. Every cell's row is appended to the
aggregate CSV and flushed as soon as the cell ends, so an interrupted sweep leaves a valid CSV;
every true OOM is appended to the record at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NoReturn, Protocol

from oomrec.core.errors import OomrecError
from oomrec.core.memscope import host_total
from oomrec.core.modelnames import model_name
from oomrec.core.provenance import journal_path, read_entry_list, sidecar_path
from oomrec.core.records import (
    KIND_FAKE,
    KIND_GUARD,
    UNKNOWN_COMMIT,
    OomRecord,
    evidence_key,
    format_line,
    source_field,
    source_path,
)
from oomrec.core.schema import (
    FAKE_OOM_PROMPT,
    HEADER,
    RECORDED_TOKENS,
    Token,
    line_token,
    ran_row,
    skip_row,
)
from oomrec.store import archive
from oomrec.store.archive import Verified
from oomrec.sweep import resume
from oomrec.sweep.cell import cellcsv
from oomrec.sweep.cell.classify import (
    HowKnown,
    Verdict,
    verdict_from_exit,
    verdict_from_guard,
    verdict_from_row,
)
from oomrec.sweep.cell.probeguard import ProbeGuard, probe_guard
from oomrec.sweep.cell.runner import CellRun, run_cell
from oomrec.sweep.cellfolder import cell_folder
from oomrec.sweep.options import SweepConfig, check_before_launch
from oomrec.sweep.planner import (
    Action,
    Cell,
    Decision,
    Planner,
    RecordWatch,
)


@dataclass(frozen=True)
class Plan:
    cells: tuple[Cell, ...]
    missing: tuple[str, ...]
    models_dir_missing: bool


def plan_cells(config: SweepConfig) -> Plan:
    """Cells model-major, length-minor, for every model whose directory exists."""
    dir_missing = not config.models_dir.is_dir() and not config.provided_models
    cells: list[Cell] = []
    missing: list[str] = []
    prefix = config.models_dir_shown.rstrip("/")
    for model in config.models:
        if model in config.provided_models or (config.models_dir / model).is_dir():
            name = model_name(model)
            cells.extend(Cell(name, n, f"{prefix}/{name}") for n in config.lengths)
        else:
            missing.append(model)
    return Plan(tuple(cells), tuple(missing), dir_missing)


def preview(
    plan: Plan, planner: Planner, done: dict[tuple[str, int], resume.PriorCell] | None = None
) -> list[tuple[Cell, Decision]]:
    """Every cell's decision as a dry run sees it: faked OOMs feed the backstop, nothing runs.
    `done`: with --resume, the cells the earlier run did (a done cell is not run again)."""
    decided = []
    for cell in plan.cells:
        earlier = (done or {}).get((cell.model, cell.length))
        if earlier is not None and earlier.done:
            decided.append((cell, Decision(Action.DONE, earlier.reason)))
            continue
        decision = planner.decide(cell)
        if earlier is not None:
            decision = Decision(decision.action, f"again: {earlier.reason}", decision.record_line)
        if decision.fake:
            planner.note_oom(cell.model, cell.length)
        decided.append((cell, decision))
    return decided


@dataclass
class CellResult:
    cell: Cell
    token: str
    reason: str
    launched: bool = False
    seconds: float | None = None
    peak_rss_bytes: int | None = None
    record_line: str | None = None
    # The record line appended for this cell, when it was a true OOM.
    recorded: str | None = None
    # The record line of a true OOM the record already held (the same evidence key).
    already_recorded: str | None = None
    # How a true OOM (or a guard stop) is known; None for any other verdict.
    oom_evidence: HowKnown | None = None
    # What else the log should say about the cell: leftover processes killed, rows dropped.
    notes: tuple[str, ...] = ()
    # Run as a probe of lifted, unverified records (under the probe's guard).
    probe: bool = False
    # The record lines a probe that ran verified (archived as verified).
    verified: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.cell.model,
            "length": self.cell.length,
            "model_path": self.cell.model_path,
            "verdict": self.token,
            "reason": self.reason,
            "launched": self.launched,
            "seconds": None if self.seconds is None else round(self.seconds, 3),
            "peak_rss_bytes": self.peak_rss_bytes,
            "record_line": self.record_line,
            "recorded": self.recorded,
            "already_recorded": self.already_recorded,
            "oom_evidence": self.oom_evidence,
            "notes": list(self.notes),
            "probe": self.probe,
            "verified": list(self.verified),
        }


# The verdicts that put a length on the OOM side of a model's frontier: seen (a true OOM, a guard
# stop) or known before the launch (the record, the backstop).
OOM_SIDE = frozenset({Token.TRUE_OOM, Token.OOM_GUARD, Token.OOM_RECORD, Token.OOM_BACKSTOP})


@dataclass(frozen=True)
class Bracket:
    """A model's frontier after --refine: the largest length that ran, the smallest on the OOM
    side (None where the sweep has none), and how many probes narrowed it."""

    model: str
    ran: int | None
    oom: int | None
    probes: int
    # Why refining stopped before its probes were spent (a probe failed), else None.
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "largest_ok": self.ran,
            "smallest_oom": self.oom,
            "probes": self.probes,
            "stopped": self.stopped,
        }

    def describe(self) -> str:
        probes = f"{self.probes} probe{'s' if self.probes != 1 else ''}"
        if self.ran is None or self.oom is None:
            side = "nothing ran" if self.ran is None else "nothing ran out of memory"
            return f"{self.model}: no bracket ({side})"
        line = f"{self.model}: runs at {self.ran}, OOM at {self.oom} ({probes}"
        return line + (f"; {self.stopped})" if self.stopped else ")")


def refine_midpoint(ran: int, oom: int, step: int) -> int | None:
    """The probe between `ran` and `oom`: the multiple of `step` strictly between them nearest
    their middle, or None when no multiple is left (the bracket is as fine as the step)."""
    low = ran // step + 1
    high = (oom - 1) // step
    if low > high:
        return None
    middle = (ran + oom) / 2 / step
    return min(max(round(middle), low), high) * step


class _RecordNotWritten(Exception):
    """A cell's OOM the record could not take: the sweep stops (`message` says why, where its
    row went); a sweep that cannot record OOMs must not go on launching cells."""

    def __init__(self, result: CellResult, message: str) -> None:
        super().__init__(message)
        self.result = result
        self.message = message


class _RowNotWritten(Exception):
    def __init__(self, result: CellResult, cause: OSError) -> None:
        super().__init__(str(cause))
        self.result = result
        self.cause = cause


@dataclass
class SweepResult:
    results: list[CellResult] = field(default_factory=list)
    # Why the sweep stopped early: a cell's row could not be written (its result is the last).
    write_error: str | None = None
    # Per model, with --refine: its frontier's bracket after the probes.
    brackets: list[Bracket] = field(default_factory=list)
    interrupted: bool = False
    # The cell whose runner the interrupt killed, if one was running.
    killed_cell: Cell | None = None
    # The aggregate CSV, once a row was written to it.
    output: Path | None = None

    def counts(self) -> dict[str, Counter[str]]:
        """Per model, how many cells ended with each token."""
        per_model: dict[str, Counter[str]] = {}
        for r in self.results:
            per_model.setdefault(r.cell.model, Counter())[r.token] += 1
        return per_model


class Reporter(Protocol):
    """What the sweep tells its user while it runs."""

    def log(self, message: str) -> None: ...

    def cell_started(self, done: int, cell: Cell) -> None: ...

    def cell_done(self, done: int, result: CellResult) -> None: ...


def write_header_only(path: Path) -> None:
    """The CSV of a sweep with no cell to run, as the harness leaves it: its header alone."""
    out = AggregateCsv(path)
    out.add([], HEADER)
    out.close()


class AggregateCsv:
    """The sweep's CSV: created at its first row, each batch of rows written and flushed at once.

    Like the harness, a sweep replaces the file: its header is that of the first row's source (a
    real cell's CSV header, else the harness's 15-column header).
    """

    def __init__(self, path: Path, continued_header: str | None = None) -> None:
        """`continued_header`: the header of a CSV a resumed sweep appends to."""
        self.path = path
        self.header: str | None = continued_header
        self._fh: IO[str] | None = None
        self._warned = False

    def add(self, rows: Sequence[str], header: str) -> str | None:
        """Append rows; the first time `header` differs from the file's, returns a warning."""
        warning = None
        if self._fh is None and self.header is not None:
            self._fh = open(  # noqa: SIM115  (held open across cells, closed by close())
                self.path, "a", encoding="utf-8", errors="surrogateescape", newline=""
            )
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(  # noqa: SIM115  (held open across cells, closed by close())
                self.path, "w", encoding="utf-8", errors="surrogateescape", newline=""
            )
            self.header = header
            text = header + "\n"
        else:
            text = ""
            if _header_key(header) != _header_key(self.header or "") and not self._warned:
                self._warned = True
                warning = f"a cell's CSV header differs from the first line of {self.path}"
        self._fh.write(text + "".join(row + "\n" for row in rows))
        self._fh.flush()
        return warning

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


class Sweep:
    """Runs a planned sweep: one cell at a time, rows and records written as cells end."""

    def __init__(
        self,
        config: SweepConfig,
        planner: Planner,
        reporter: Reporter,
        echo: Callable[[bytes], None] | None = None,
        watch: RecordWatch | None = None,
    ) -> None:
        """`echo`: the runner's output, chunk by chunk as it is read (`oomrec run`). `watch`:
        the record as the planner read it, read again before a launch when it changed."""
        self.config = config
        self.watch = watch
        self.echo = echo
        self.planner = planner
        self.reporter = reporter
        self.csv = AggregateCsv(config.output)
        self.sidecar: resume.Sidecar | None = None
        self._prior = resume.Prior(None, [])
        # With --resume: the cells an earlier run did, and why each counts as done.
        self.done: dict[tuple[str, int], resume.PriorCell] = {}
        self.result = SweepResult()
        self._commit: str | None = None
        self._bound: int | None = None
        self._last_launched: Cell | None = None
        # A runner given {cooldown} or {big_cooldown} sleeps itself, as the harness's does.
        self._runner_cools = config.runner.uses("cooldown") or config.runner.uses("big_cooldown")
        # A runner given no {cell_csv} cannot write a row: its clean exit is its result.
        self._runner_writes_rows = config.runner.uses("cell_csv")
        self._big: dict[str, bool] = {}
        self._guard_of_probes: ProbeGuard | None = None
        # Models whose runner named another model in its row, said once each.
        self._named_warned: set[str] = set()

    def _is_big(self, cell: Cell) -> bool:
        """Whether the cell's model weighs more than BIG_MODEL_BYTES (its *.safetensors)."""
        if cell.model_path not in self._big:
            self._big[cell.model_path] = weights_bytes(self._model_dir(cell)) > BIG_MODEL_BYTES
        return self._big[cell.model_path]

    def _model_dir(self, cell: Cell) -> Path:
        prefix = self.config.models_dir_shown.rstrip("/")
        return self.config.models_dir / cell.model_path[len(prefix) + 1 :]

    def run(self, plan: Plan, empty_csv: bool = False) -> SweepResult:
        """Run every cell; on SIGINT/SIGTERM kill the running cell and return what was done.
        `empty_csv`: a plan with no cell leaves a CSV holding the header, as the harness does."""
        check_before_launch(self.config, plan.models_dir_missing, launches=bool(plan.cells))
        if plan.cells or empty_csv:
            _check_writable(self.config.output)
            if self.config.resume is None and not self.config.append:
                self._start_afresh()
        if plan.cells:
            self._start_csv(plan)
        elif empty_csv:
            write_header_only(self.config.output)
        try:
            with sigterm_as_interrupt(), cell_folder() as tmp:
                cell_csv = Path(tmp) / "cell.csv"
                for cell in plan.cells:
                    self._step(cell, cell_csv)
                if self.config.refine:
                    self._refine(plan, cell_csv)
        except KeyboardInterrupt:
            self.result.interrupted = True
        except _RecordNotWritten as failed:
            self.result.results.append(failed.result)
            self.reporter.cell_done(len(self.result.results), failed.result)
            self.result.write_error = failed.message
        except _RowNotWritten as failed:
            result = failed.result
            self.result.results.append(result)
            self.reporter.cell_done(len(self.result.results), result)
            kept = (
                "; its OOM is in the record" if result.recorded or result.already_recorded else ""
            )
            self.result.write_error = (
                f"{self.config.output}: cannot write the row of {result.cell.model} @ "
                f"{result.cell.length} ({failed.cause.strerror or failed.cause}){kept}; free "
                "space or pass another --output"
            )
        finally:
            # After a failed write the disk is still full: closing must not hide the cell.
            full = (OSError,) if self.result.write_error else ()
            with contextlib.suppress(*full):
                self.csv.close()
            with contextlib.suppress(*full):
                if self.sidecar is not None:
                    self.sidecar.close()
        return self.result

    def _start_afresh(self) -> None:
        """As the harness (`: > "$OUTPUT"` before its first cell), the sweep's CSV starts empty,
        so an interrupted sweep or one with nothing to run never leaves an earlier sweep's rows
        as its own. A CSV that holds rows, or that a record line names as its source, is first
        moved aside to `<csv>.replaced-<UTC time>` (one rename, its provenance file with it):
        never lost, and said in one line."""
        path = self.config.output
        try:
            if not os.path.isfile(path):
                return
            why = _earlier_evidence(path, self.config)
            if why is not None:
                aside = _aside(path)
                os.rename(path, aside)
                for beside in (sidecar_path(path), journal_path(path)):
                    if os.path.lexists(beside):
                        os.rename(
                            beside, aside.with_name(beside.name.replace(path.name, aside.name, 1))
                        )
                self.reporter.log(
                    f"moved the earlier {path.name} aside to {aside.name} ({why}); this sweep "
                    "starts it afresh"
                )
                from oomrec.store.exclude import exclude_replaced

                said = exclude_replaced(path, aside)
                if said:
                    self.reporter.log(said)
            with open(path, "w", encoding="utf-8"):
                pass
        except OSError as exc:
            raise OomrecError(
                f"{path}: cannot start the sweep's CSV afresh ({exc.strerror}); pass --output "
                "PATH, or --resume to continue it"
            ) from None

    def _step(self, cell: Cell, cell_csv: Path) -> CellResult:
        return self._reported(cell, lambda: self._one(cell, cell_csv))

    def _reported(self, cell: Cell, outcome: Callable[[], CellResult]) -> CellResult:
        """One cell of the sweep as its reporter hears it: started, its result, done."""
        done = len(self.result.results)
        self.reporter.cell_started(done, cell)
        result = outcome()
        self.result.results.append(result)
        self.reporter.cell_done(done + 1, result)
        return result

    def _refine(self, plan: Plan, cell_csv: Path) -> None:
        """Bisect each model's frontier: up to `refine` probes between the largest length that
        ran and the smallest on the OOM side, each a normal cell (the record, the backstop and
        the guard decide it as any other), so no probe launches at or above a known OOM."""
        c = self.config
        paths = {cell.model: cell.model_path for cell in plan.cells}
        planned = {(cell.model, cell.length) for cell in plan.cells}
        for model, model_path in paths.items():
            # Resumed: the probes the earlier run made are this sweep's, and count.
            earlier = self._earlier_probes(model, planned)
            for length, token in earlier:
                self._step_done(
                    Cell(model, length, model_path), f"done in an earlier run: earlier {token}"
                )
            ran, oom = self._frontier(model)
            probes, stopped = len(earlier), None
            while ran is not None and oom is not None and probes < c.refine:
                mid = refine_midpoint(ran, oom, c.refine_step)
                if mid is None:
                    stopped = f"as fine as --refine-step {c.refine_step} allows"
                    break
                probes += 1
                token = self._probe(Cell(model, mid, model_path), cell_csv)
                if token == Token.SUCCESS:
                    ran = mid
                elif token in OOM_SIDE:
                    oom = mid
                else:
                    # A failure says nothing about memory: a guess past it could be wrong.
                    stopped = f"stopped: {token} at {mid}"
                    break
            self.result.brackets.append(Bracket(model, ran, oom, probes, stopped))

    def _stale_probes(self, plan: Plan) -> set[tuple[str, int]]:
        """The earlier run's cells of planned models beyond the plan (its refine probes) that
        are not done (another commit or runner): this refine probes afresh, so their rows go,
        as a planned cell's row of another commit does, and no cell has two rows."""
        prior = self._prior
        models = {cell.model for cell in plan.cells}
        planned = {(cell.model, cell.length) for cell in plan.cells}
        stale = set()
        for model, length in (*prior.entries, *prior.unknown):
            if model not in models or (model, length) in planned:
                continue
            earlier = self._prior_cell(model, length)
            if earlier is not None and not earlier.done:
                stale.add((model, length))
        return stale

    def _prior_cell(self, model: str, length: int) -> resume.PriorCell | None:
        """With --resume, whether the earlier run's row of a cell counts as done, and why."""
        c = self.config
        return resume.prior_cell(
            self._prior,
            model,
            length,
            self.provenance(),
            rerun_failed=c.rerun_failed,
            # Without --resume the prior run is empty, so no mode is read.
            mode=c.resume or resume.Mode.RERUN,
        )

    def _earlier_probes(self, model: str, planned: set[tuple[str, int]]) -> list[tuple[int, str]]:
        """With --resume, the done cells of `model` the earlier run had beyond the plan (its
        refine probes), by length, with their tokens."""
        if self.config.resume is None:
            return []
        prior = self._prior
        lengths = {n for m, n in (*prior.entries, *prior.unknown) if m == model}
        found = []
        for length in sorted(lengths):
            if (model, length) in planned:
                continue
            token = self._earlier_token(model, length)
            if token is not None:
                found.append((length, token))
        return found

    def _probe(self, cell: Cell, cell_csv: Path) -> str:
        """Run one refine probe (or, resumed, take the earlier run's row of it); its token."""
        earlier = self._earlier_token(cell.model, cell.length)
        if earlier is not None:
            self._step_done(cell, f"done in an earlier run: earlier {earlier}")
            return earlier
        return self._step(cell, cell_csv).token

    def _step_done(self, cell: Cell, reason: str) -> None:
        self._reported(cell, lambda: CellResult(cell, Action.DONE, reason))

    def _frontier(self, model: str) -> tuple[int | None, int | None]:
        """The model's largest length that ran and its smallest on the OOM side above it."""
        seen: dict[int, str] = {}
        for r in self.result.results:
            if r.cell.model == model:
                token = r.token
                if token == Action.DONE:
                    token = self._earlier_token(model, r.cell.length) or token
                seen[r.cell.length] = token
        ran = max((n for n, t in seen.items() if t == Token.SUCCESS), default=None)
        above = [n for n, t in seen.items() if t in OOM_SIDE and (ran is None or n > ran)]
        # A record between two rungs bounds the bracket too: a probe at or above it would be
        # pre-skipped, a probe spent.
        known = self.planner.known_oom(model)
        if known is not None and (ran is None or known[0] > ran):
            above.append(known[0])
        return ran, min(above, default=None)

    def _earlier_token(self, model: str, length: int) -> str | None:
        """With --resume, the token of the earlier run's row for the cell, when it is done."""
        if self.config.resume is None:
            return None
        prior = self._prior
        entry = prior.entries.get((model, length))
        if entry is not None:
            row_token: str | None = entry.token
        elif (model, length) in prior.unknown:
            row_token = line_token(prior.unknown[(model, length)]) or Token.SUCCESS
        else:
            return None
        earlier = self._prior_cell(model, length)
        return row_token if earlier is not None and earlier.done else None

    def provenance(self) -> resume.Provenance:
        c = self.config
        runner = f"{c.runner.text} (max_tokens={c.max_tokens}, warmup_tokens={c.warmup_tokens})"
        return resume.Provenance(self._head(), runner)

    def prior_cells(self, plan: Plan) -> dict[tuple[str, int], resume.PriorCell]:
        """With --resume, each planned cell the earlier run has a row for, and whether it is
        done; the backstop starts from the earlier run's true OOMs."""
        c = self.config
        if c.resume is None:
            return {}
        prior = resume.load(c.output)
        for model, length in prior.true_ooms():
            self.planner.note_oom(model, length)
        # A runner's row names a nested model by its last part: its path names the cell.
        by_path = {resume.path_key(cell.model_path): cell.model for cell in plan.cells}
        for (path, length), row in prior.unknown_paths.items():
            if path in by_path and line_token(row) in RECORDED_TOKENS:
                self.planner.note_oom(by_path[path], length)
        now = self.provenance()
        found = {}
        for cell in plan.cells:
            earlier = resume.prior_cell(
                prior,
                cell.model,
                cell.length,
                now,
                rerun_failed=c.rerun_failed,
                mode=c.resume,
                model_path=cell.model_path,
            )
            if earlier is not None:
                found[(cell.model, cell.length)] = earlier
        self._prior = prior
        return found

    def _start_csv(self, plan: Plan) -> None:
        """A fresh CSV and provenance file; with --resume, the earlier run's rows of the cells
        that are done (and of cells not in this plan) kept byte for byte, the others dropped."""
        if self.config.append:
            self._continue_csv()
            return
        earlier = self.prior_cells(plan)
        if not earlier and self.config.resume is None:
            self.sidecar = resume.Sidecar(self.config.output, [])
            return
        prior = self._prior
        redo = {key for key, v in earlier.items() if not v.done}
        if self.config.refine:
            redo |= self._stale_probes(plan)
        drop = {e.row for key, e in prior.entries.items() if key in redo}
        drop |= {row for key, row in prior.unknown.items() if key in redo}
        kept = [row for row in prior.rows if row not in drop]
        if prior.header is not None:
            resume.rewrite_csv(self.config.output, prior.header, kept)
            self.csv = AggregateCsv(self.config.output, continued_header=prior.header)
        kept_rows = set(kept)
        self.sidecar = resume.Sidecar(
            self.config.output, [e for e in prior.entries.values() if e.row in kept_rows]
        )
        self.done = {key: v for key, v in earlier.items() if v.done}

    def _continue_csv(self) -> None:
        """`oomrec run`: the CSV is a log, so its rows stay and the cell's row follows them (a
        torn last line, from a run killed mid-write, moved aside first, as --resume does)."""
        path = self.config.output
        torn = _ends_torn(path)
        prior = resume.load(path, cells=False)
        if prior.header is None:
            self.sidecar = resume.Sidecar(path, [])
            return
        if torn:
            resume.rewrite_csv(path, prior.header, prior.rows)
        self.csv = AggregateCsv(path, continued_header=prior.header)
        self.sidecar = resume.Sidecar(path, read_entry_list(sidecar_path(path)))

    def _one(self, cell: Cell, cell_csv: Path) -> CellResult:
        done = self.done.get((cell.model, cell.length))
        if done is not None:
            return CellResult(cell, Action.DONE, f"done in an earlier run: {done.reason}")
        self._read_record_again(cell)
        decision = self.planner.decide(cell)
        if decision.action in (Action.BACKSTOP, Action.RECORD):
            token = Token(decision.action)
            result = CellResult(cell, token, decision.reason, record_line=decision.record_line)
            self._write_row(result, [self._skip_row(cell, token)], HEADER)
            return result
        if decision.fake:
            result = CellResult(cell, Token.TRUE_OOM, decision.reason, oom_evidence=HowKnown.FAKE)
            rows, header = [self._skip_row(cell, Token.TRUE_OOM, FAKE_OOM_PROMPT)], HEADER
        elif decision.action == Action.PROBE:
            result, rows, header = self._launch(cell, cell_csv, self._probe_guard())
            result.probe = True
            result.record_line = decision.record_line
        else:
            result, rows, header = self._launch(cell, cell_csv)
        if result.token in RECORDED_TOKENS:
            # The record before the row: it is what keeps later sweeps from launching this
            # cell, so a failed CSV write or a signal between the two must not lose it.
            self.planner.note_oom(cell.model, cell.length, result.token)
            kind = (
                KIND_GUARD
                if result.token == Token.OOM_GUARD
                else KIND_FAKE
                if decision.fake
                else None
            )
            try:
                line, new = self._append_record(cell, result.peak_rss_bytes, kind)
            except OomrecError as exc:
                self._unrecorded(result, rows, header, exc)
            if self.watch is not None:
                self.watch.own_append()
            if new:
                result.recorded = line
            else:
                result.already_recorded = line
        self._write_row(result, rows, header)
        if result.probe and result.token == Token.SUCCESS:
            self._verify(result, decision)
        return result

    def _read_record_again(self, cell: Cell) -> None:
        """Before deciding a cell, the record as it is now, when another process wrote it since
        it was read (a `record add`, another sweep's OOM): its records pre-skip from this cell
        on. A record that cannot be read then stops the sweep: a recorded OOM may be unseen."""
        if self.watch is None:
            return
        try:
            added = self.watch.read_again(self.planner)
        except OomrecError as exc:
            raise OomrecError(
                f"{exc}; the sweep stopped before {cell.model} @ {cell.length}: the record "
                "changed and cannot be read again"
            ) from None
        if added is not None:
            n = self.planner.applicable_records
            self.reporter.log(
                f"record: {self.config.record.shown_as} changed since it was read; read it "
                f"again before {cell.model} @ {cell.length}: {added} new "
                f"line{'s' if added != 1 else ''}, {n} record{'s' if n != 1 else ''} "
                f"{'apply' if n != 1 else 'applies'} to {self.config.hardware}"
            )

    def _unrecorded(
        self, result: CellResult, rows: Sequence[str], header: str, exc: OomrecError
    ) -> NoReturn:
        """The record refused the cell's OOM (made read-only, immutable, replaced mid-sweep):
        its row still goes to the CSV, whose `SKIP:oom` rows --resume reads as evidence (and
        `record import-csv` records), then the sweep stops."""
        cell, c = result.cell, self.config
        what = f"the {result.token} of {cell.model} @ {cell.length}"
        try:
            self._write(rows, header, result.token, cell, result.peak_rss_bytes)
        except OSError as row_exc:
            where = (
                f"nor in {c.output} ({row_exc.strerror or row_exc}): record it by hand "
                f"(oomrec record add {cell.model} {cell.length}) once the record is writable"
            )
        else:
            where = (
                f"its row is in {c.output}, which --resume reads as evidence; make the record "
                f"writable, then `oomrec record import-csv {c.output}` records it"
            )
        raise _RecordNotWritten(result, f"{exc}; {what} is not in the record; {where}")

    def _probe_guard(self) -> ProbeGuard:
        if self._guard_of_probes is None:
            self._guard_of_probes = probe_guard(self.config.guard, self.config.hardware)
            self.reporter.log(f"probe guard: {self._guard_of_probes.describe()}")
        return self._guard_of_probes

    def _verify(self, result: CellResult, decision: Decision) -> None:
        """The probe ran to completion: archive the lifted records it covered as verified, with
        the run's commit, peak and CSV. A record that cannot be written keeps them unverified
        (the next sweep probes again), and says so."""
        c = self.config
        proof = Verified(
            hardware=c.hardware,
            mem_bytes=c.host_mem,
            commit=None if self._head() == UNKNOWN_COMMIT else self._head(),
            peak_bytes=result.peak_rss_bytes,
            csv=source_path(c.output, c.repo_root),
        )
        lines = [
            (item.text, item.judgement.fixes[0].sha)
            for item in decision.verifies
            if item.judgement.fixes
        ]
        try:
            result.verified = tuple(archive.verify(c.record, lines, proof))
        except (OomrecError, OSError) as exc:
            self.reporter.log(
                f"warning: the probe of {result.cell.model} @ {result.cell.length} ran, but its "
                f"records could not be archived as verified ({exc}); the next sweep probes again"
            )
            return
        self.planner.verified(decision.verifies)

    def _launch(
        self, cell: Cell, cell_csv: Path, probe: ProbeGuard | None = None
    ) -> tuple[CellResult, list[str], str]:
        """Run the cell (`probe`: under that guard); its result, and the rows (with their
        header) to write for it."""
        c = self.config
        if self._last_launched is not None and not self._runner_cools:
            pause = c.cooldown
            if c.big_cooldown and self._is_big(self._last_launched):
                pause += c.big_cooldown
            if pause > 0:
                time.sleep(pause)
        self._last_launched = cell
        cellcsv.remove(cell_csv)
        argv = c.runner.fill(
            {
                "model": cell.model,
                "model_path": cell.model_path,
                "length": cell.length,
                "max_tokens": c.max_tokens,
                "warmup_tokens": c.warmup_tokens,
                "cell_csv": str(cell_csv),
                "cooldown": _seconds_arg(c.cooldown),
                "big_cooldown": _seconds_arg(c.big_cooldown),
            }
        )
        self.result.killed_cell = cell
        shown = getattr(self.reporter, "runner_line", None)
        lines = _Lines(shown) if shown is not None and self.echo is None else None
        try:
            run = run_cell(
                argv,
                self.config.timeout,
                guard=self.config.guard if probe is None else probe.limits,
                echo=self.echo,
                hard_limit=None if probe is None else probe.hard_limit,
                live=None if lines is None else lines.feed,
            )
        finally:
            if lines is not None:
                lines.close()
        self.result.killed_cell = None
        written = cellcsv.read_cell_csv(cell_csv, cell.model, cell.length)
        cellcsv.remove(cell_csv)
        notes = [note for note in (run.leftovers.describe(), written.problem) if note]
        if written.dropped:
            n = len(written.dropped)
            notes.append(
                f"dropped {n} row{'s' if n > 1 else ''} of other cells from the cell CSV "
                f"(first: {written.dropped[0][:120]!r})"
            )
        if written.repeated:
            n = len(written.repeated)
            which = "its SKIP:oom" if line_token(written.rows[0]) == Token.TRUE_OOM else "the first"
            notes.append(
                f"the runner wrote {n + 1} rows for this cell; one kept ({which}), {n} left out "
                f"(first: {written.repeated[0][:120]!r})"
            )
        if run.guard_stop is not None:
            verdict = verdict_from_guard(run.guard_stop)
            rows, header = [self._skip_row(cell, verdict.token)], HEADER
            if written.rows:
                notes.append("the runner's row was dropped: the guard had stopped it")
        elif written.rows:
            verdict, differs = verdict_from_row(written.rows[0], written.harness_row)
            rows, header = list(written.rows), written.header or HEADER
            if differs:
                notes.append(differs)
            if written.named is not None:
                self._named_otherwise(cell, written.named)
        elif self._writes_no_row(run):
            # Given no {cell_csv}, the command cannot write a row: a clean exit is its result.
            verdict = Verdict(Token.SUCCESS, "exit 0 (the command writes no row)")
            rows, header = [self._ran_row(cell)], HEADER
        else:
            verdict = _verdict_without_row(run)
            rows, header = [self._skip_row(cell, verdict.token)], HEADER
        result = CellResult(
            cell,
            verdict.token,
            verdict.reason,
            launched=True,
            seconds=run.seconds,
            peak_rss_bytes=run.peak_rss_bytes,
            oom_evidence=verdict.evidence,
            notes=tuple(notes),
        )
        return result, rows, header

    def _named_otherwise(self, cell: Cell, named: str) -> None:
        """Say once per model that its runner's rows name another model (a symlink's target):
        the cell's CSV belongs to the cell, so they are its rows, copied as written."""
        if cell.model in self._named_warned:
            return
        self._named_warned.add(cell.model)
        self.reporter.log(
            f"warning: the runner's row of {cell.model} @ {cell.length} names the model "
            f"{named[:80]!r}: kept as that cell's row, as the harness keeps it (said once)"
        )

    def _writes_no_row(self, run: CellRun) -> bool:
        return (
            run.returncode == 0
            and not run.timed_out
            and run.exec_error is None
            and not self._runner_writes_rows
        )

    def _ran_row(self, cell: Cell) -> str:
        c = self.config
        return ran_row(cell.model, cell.model_path, c.date, c.max_tokens, cell.length)

    def _skip_row(self, cell: Cell, token: str, prompt: str = "") -> str:
        c = self.config
        return skip_row(
            cell.model, cell.model_path, c.date, c.max_tokens, cell.length, token, prompt
        )

    def _write_row(self, result: CellResult, rows: Sequence[str], header: str) -> None:
        """Write the cell's rows; a failed write (a full disk) ends the sweep with the cell's
        result kept, so what it was (and that its OOM is in the record) is still said."""
        try:
            self._write(rows, header, result.token, result.cell, result.peak_rss_bytes)
        except OSError as exc:
            raise _RowNotWritten(result, exc) from exc

    def _write(
        self, rows: Sequence[str], header: str, token: str, cell: Cell, peak: int | None = None
    ) -> None:
        warning = self.csv.add(rows, header)
        self.result.output = self.csv.path
        if self.sidecar is not None:
            now = self.provenance()
            self.sidecar.add(
                resume.Entry(
                    cell.model,
                    cell.length,
                    token,
                    row,
                    now.commit,
                    now.runner,
                    self.config.hardware,
                    self.config.host_mem,
                    peak if peak else None,
                    self._limit(),
                )
                for row in rows
            )
        if warning:
            self.reporter.log(f"warning: {warning}")

    def _append_record(
        self, cell: Cell, peak: int | None, kind: str | None = None
    ) -> tuple[str, bool]:
        """Append the cell's OOM (or guard stop: `kind`) unless the record holds the same
        evidence; the line, and whether it was new."""
        record = OomRecord(
            model=cell.model,
            prompt_target_len=cell.length,
            date=self.config.date,
            commit=self._head(),
            peak_bytes=peak,
            source_csv=source_field(source_path(self.config.output, self.config.repo_root)),
            hardware=self.config.hardware,
            mem_bytes=self.config.host_mem,
            kind=kind,
        )
        record_file = self.config.record
        added = record_file.append_new([record], unless_present=evidence_key)
        for notice in record_file.notices:
            self.reporter.log(f"warning: {notice}")
        record_file.notices.clear()
        if added:
            return format_line(record), True
        # Said as the record holds it (its peak, its source), not as this cell would have.
        key = evidence_key(record)
        held = next((r for r in record_file.load().records if evidence_key(r) == key), record)
        return format_line(held), False

    def _limit(self) -> int:
        """The memory a cell ran under: the memory that binds here (the host's RAM, or a
        tighter cgroup around oomrec), or the guard's per-cell budget where that is tighter;
        a peak's headroom is of it. Read once per sweep."""
        if self._bound is None:
            budget = self.config.guard.max_cell_bytes
            self._bound = min(host_total(), budget) if budget else host_total()
        return self._bound

    def _head(self) -> str:
        if self._commit is None:
            # GitPython costs ~0.17 s to import: paid once, and only by a sweep that saw an OOM.
            from oomrec.store import gitrepo as gitutil

            repo = gitutil.open_repo(self.config.repo_root)
            self._commit = gitutil.head_sha(repo) or UNKNOWN_COMMIT
        return self._commit


# The harness's big-cooldown threshold: "a >10GB model".
BIG_MODEL_BYTES = 10 * 1024**3


def weights_bytes(model_dir: Path) -> int:
    """The size of a model's weights (its *.safetensors), as the harness weighs a model."""
    total = 0
    with contextlib.suppress(OSError):
        for path in model_dir.glob("*.safetensors"):
            with contextlib.suppress(OSError):
                total += path.stat().st_size
    return total


def _header_key(header: str) -> str:
    # A CRLF or a spreadsheet's BOM does not make a resumed CSV's header another.
    return header.removeprefix("\ufeff").rstrip("\r")


def _seconds_arg(value: float) -> int | float:
    # `30`, not `30.0`: what a user typed, and what `sleep` in any shell accepts.
    return int(value) if value.is_integer() else value


def _ends_torn(path: Path) -> bool:
    """Whether the file's last line lacks its line ending (a write killed midway)."""
    try:
        with open(path, "rb") as handle:
            if handle.seek(0, os.SEEK_END) == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:
        return False


class _Lines:
    """The runner's stderr, shown live as the harness leaves it on the terminal: whole lines
    handed to the reporter (which keeps its progress line below them), a line longer than
    _LINE_CAP in pieces, what is left at the cell's end as a last line."""

    def __init__(self, show: Callable[[str], None]) -> None:
        self.show = show
        self.pending = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.pending += chunk
        while True:
            end = self.pending.find(b"\n")
            if end < 0:
                if len(self.pending) < _LINE_CAP:
                    return
                end = _LINE_CAP
            line, self.pending = bytes(self.pending[:end]), self.pending[end + 1 :]
            self.show(line.decode("utf-8", errors="replace").rstrip("\r"))

    def close(self) -> None:
        if self.pending:
            line, self.pending = bytes(self.pending), bytearray()
            with contextlib.suppress(OSError, ValueError):
                self.show(line.decode("utf-8", errors="replace").rstrip("\r"))


_LINE_CAP = 64 << 10


# What a sweep's CSV may hold before its header ends: reading this much tells rows from none.
_EARLIER_PEEK = 64 << 10


def _earlier_evidence(path: Path, config: SweepConfig) -> str | None:
    """Why an existing CSV must be kept (it holds rows; a record line names it), else None."""
    with open(path, "rb") as fh:
        head = fh.read(_EARLIER_PEEK + 1)
    lines = [line for line in head.split(b"\n") if line.strip()]
    if len(lines) > 1 or len(head) > _EARLIER_PEEK:
        return "it holds rows"
    try:
        held = config.record.load().records
    except (OomrecError, OSError):
        return None
    here = os.path.normpath(os.path.abspath(path))
    for record in held:
        source = Path(record.source_csv)
        # Relative to the repository's top level, or (none) the working directory, as
        # records.source_path names it.
        where = source if source.is_absolute() else (config.repo_root or Path.cwd()) / source
        if os.path.normpath(os.path.abspath(where)) == here:
            return "a record line names it as its source"
    return None


def _aside(path: Path) -> Path:
    """`<csv>.replaced-<UTC time>`, a name no file has yet."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.replaced-{stamp}")
    n = 1
    while os.path.lexists(aside):
        n += 1
        aside = path.with_name(f"{path.name}.replaced-{stamp}-{n}")
    return aside


def _check_writable(output: Path) -> None:
    """Fail before the first launch, not after a cell has run, when the CSV cannot be written.
    A symlink is followed: the folder that must exist is its target's."""
    output = Path(os.path.realpath(output))
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OomrecError(
            f"{output}: cannot create its folder ({exc.strerror}); pass --output PATH"
        ) from None
    if not os.access(output.parent, os.W_OK):
        raise OomrecError(f"{output}: cannot write the sweep's CSV there; pass --output PATH")


def _verdict_without_row(run: CellRun) -> Verdict:
    if run.exec_error is not None:
        return Verdict(Token.FAIL_BENCH, f"cannot run {run.argv[0]}: {run.exec_error}")
    verdict = verdict_from_exit(
        run.returncode,
        run.signature,
        run.kills,
        timed_out=run.timed_out,
        address_space=run.address_space,
    )
    if verdict.is_true_oom:
        return verdict
    # What the runner said last is usually why it failed; an OOM's reason names its message.
    lines = [line.strip() for line in run.output_tail.splitlines() if line.strip()]
    last = f"; last output: {lines[-1][:200]!r}" if lines else ""
    return Verdict(verdict.token, verdict.reason + last)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends a sweep as Ctrl-C does: the running cell killed, the CSV left valid."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
