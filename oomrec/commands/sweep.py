"""The sweep as a library verb: plan a (model x prompt length) grid against the record, then run
it (or preview it), never launching a cell certain to OOM.

Two steps, because a caller shows the plan before the first cell launches: `prepare()` reads the
settings, the record and the grid; `Prepared.preview()` is the dry run and `Prepared.run()` the
sweep. `sweep()` does both for a caller with nothing to show in between.

    from oomrec.commands.sweep import SweepOptions, sweep
    outcome = sweep(SweepOptions(models=["llama-3.1-8b-4bit"], lengths=[512, 2048]))
    print(outcome.to_json()["totals"])
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from oomrec.commands import Result
from oomrec.commands.common import record_warnings
from oomrec.core.errors import OomrecError
from oomrec.core.hardware import detect, detect_memory
from oomrec.core.modelnames import near_models
from oomrec.core.records import Loaded, RecordFile
from oomrec.core.schema import Token
from oomrec.staleness.fixlog import trailer_key
from oomrec.store import locations as config_mod
from oomrec.store.locations import display_path, load_settings
from oomrec.sweep import demo as demo_mod
from oomrec.sweep.cell.guard import AvailableMemory, GpuLimit
from oomrec.sweep.cell.probeguard import watch_problem
from oomrec.sweep.grid import (
    CellResult,
    Plan,
    Reporter,
    Sweep,
    SweepResult,
    plan_cells,
    preview,
)
from oomrec.sweep.options import (
    SweepConfig,
    SweepOptions,
    configure,
    no_models_dir,
    output_problem,
)
from oomrec.sweep.outlock import OutputLock
from oomrec.sweep.planner import (
    Action,
    Cell,
    Decision,
    JudgedLine,
    Planner,
    RecordWatch,
    gather_evidence,
)


@dataclass(kw_only=True)
class SweepOutcome(Result):
    """A sweep that ran, or a dry run's plan: the same JSON keys either way."""

    config: SweepConfig
    plan: Plan
    dry_run: bool
    # The dry run's decision per cell; empty after a real run.
    decided: list[tuple[Cell, Decision]] = field(default_factory=list)
    # The real run's cells; empty in a dry run.
    result: SweepResult = field(default_factory=SweepResult)

    @property
    def interrupted(self) -> bool:
        return self.result.interrupted

    def per_model(self) -> dict[str, Counter[str]]:
        """Cells per model and classification token (in a dry run, per verdict)."""
        if not self.dry_run:
            return self.result.counts()
        counts: dict[str, Counter[str]] = {}
        for cell, decision in self.decided:
            counts.setdefault(cell.model, Counter())[decision.action] += 1
        return counts

    def totals(self) -> Counter[str]:
        return sum(self.per_model().values(), Counter())

    def new_records(self) -> list[str]:
        return [r.recorded for r in self.result.results if r.recorded]

    def already_recorded(self) -> list[str]:
        return [r.already_recorded for r in self.result.results if r.already_recorded]

    def json_body(self) -> dict[str, Any]:
        config, plan = self.config, self.plan
        killed = self.result.killed_cell
        per_model = self.per_model()
        return {
            "hardware": config.hardware,
            "output": str(config.output),
            "record": config.record.shown_as,
            "missing_models": list(plan.missing),
            "models_dir_missing": plan.models_dir_missing,
            "guard": {
                "max_cell_bytes": config.guard.max_cell_bytes,
                "min_available_bytes": config.guard.min_available_bytes,
                "max_cell_gpu": _gpu_limit(config.guard.max_cell_gpu),
                "min_gpu_available": _gpu_limit(config.guard.min_gpu_available),
            },
            "dry_run": self.dry_run,
            "interrupted": self.interrupted,
            "killed_cell": None
            if killed is None
            else {"model": killed.model, "length": killed.length},
            "cells": [_planned_cell(c, d) for c, d in self.decided]
            if self.dry_run
            else [r.to_dict() for r in self.result.results],
            "counts": {model: dict(counts) for model, counts in per_model.items()},
            "totals": dict(self.totals()),
            "guard_stops": sum(1 for r in self.result.results if r.token == Token.OOM_GUARD),
            "new_records": self.new_records(),
            "already_recorded": self.already_recorded(),
            "refine": {"probes": config.refine, "step": config.refine_step}
            if config.refine
            else None,
            # Per model, after --refine: its frontier's bracket (empty in a dry run).
            "frontier": [bracket.to_dict() for bracket in self.result.brackets],
        }


def _planned_cell(cell: Cell, decision: Decision) -> dict[str, Any]:
    """A cell of the dry run with every key of a run cell's (CellResult.to_dict), holding what
    is known before launching: `verdict` is `run`, `done` or the skip token."""
    return {
        "model": cell.model,
        "length": cell.length,
        "model_path": cell.model_path,
        "verdict": decision.action,
        "reason": decision.reason,
        "launched": False,
        "seconds": None,
        "peak_rss_bytes": None,
        "record_line": decision.record_line,
        "recorded": None,
        "already_recorded": None,
        "oom_evidence": None,
        "notes": [],
        "probe": decision.action == Action.PROBE,
        "verified": [],
        # The name before schema_version 1; kept one release for scripts that read it.
        "action": decision.action,
    }


class QuietReporter:
    """A reporter that shows nothing: for callers that only want the outcome."""

    def log(self, message: str) -> None:
        pass

    def cell_started(self, done: int, cell: Cell) -> None:
        pass

    def cell_done(self, done: int, result: CellResult) -> None:
        pass


@dataclass(kw_only=True)
class Prepared:
    """A sweep planned and not started: what a caller shows before the first launch."""

    options: SweepOptions
    config: SweepConfig
    plan: Plan
    planner: Planner
    # The record as read for the plan (its lines name records that do not apply, and why).
    loaded: Loaded
    # Unreadable record or archive lines, a guard limit above what the host has: for stderr.
    warnings: list[str]
    demo: demo_mod.DemoLayout | None
    # Where the record's first-write notice goes once the run has a reporter.
    relay: _Relay
    # The output CSV's lock, held until release() (or the process ends), and what making it
    # did besides (its info/exclude line), said once the run is over.
    lock: OutputLock | None = None
    lock_notices: list[str] = field(default_factory=list)
    # The record as the plan read it: the run reads it again before a launch when it changed.
    watch: RecordWatch | None = None

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()

    @property
    def empty(self) -> OomrecError | None:
        """The error for a sweep with no cell to run (a typo in --models, an empty shard),
        unless allow_empty. A missing models dir has its own error, at launch."""
        plan, config = self.plan, self.config
        if plan.cells or self.options.allow_empty or plan.models_dir_missing:
            return None
        if plan.missing:
            names = ", ".join(plan.missing[:5]) + (", ..." if len(plan.missing) > 5 else "")
            near = near_models(plan.missing[0], config.models_dir)
            if near:
                names += f"; did you mean {' or '.join(near)}?"
            why = f"every model is missing under {config.models_dir_shown} ({names})"
        elif config.shard is not None:
            why = f"shard {config.shard[0]}/{config.shard[1]} holds none of the models"
        else:
            why = "the grid is empty"
        return OomrecError(
            f"no cell to run: {why}; check --models and --models-dir, or pass --allow-empty"
        )

    @property
    def refused(self) -> OomrecError | None:
        """What the run would refuse before its first cell, as far as it can be known without
        writing (an --output that is the record, or a FIFO): a dry run says it too."""
        if self.plan.models_dir_missing and not self.options.allow_empty:
            return no_models_dir(self.config)
        problem = output_problem(self.config) if self.plan.cells else None
        return None if problem is None else OomrecError(problem)

    def preview(self, reporter: Reporter | None = None) -> SweepOutcome:
        """The dry run: every cell's verdict; nothing launched, nothing written."""
        sweep = Sweep(self.config, self.planner, reporter or QuietReporter())
        decided = preview(self.plan, self.planner, sweep.prior_cells(self.plan))
        return SweepOutcome(config=self.config, plan=self.plan, dry_run=True, decided=decided)

    def run(
        self,
        reporter: Reporter | None = None,
        echo: Callable[[bytes], None] | None = None,
        *,
        raise_write_error: bool = True,
    ) -> SweepOutcome:
        """Run the cells, one at a time; SIGINT/SIGTERM stop the running cell and return what
        was done (`interrupted`). Raises the `empty` error when there is nothing to run, and
        an OomrecError when a row could not be written (unless not `raise_write_error`: then
        it is the outcome's `result.write_error`). `echo`: a runner's output, as it is read."""
        if self.empty is not None:
            raise self.empty
        reporter = reporter or QuietReporter()
        # The guest notice (record added to info/exclude) goes to the log, at the first write.
        self.relay.target = reporter.log
        if self.demo is not None:
            demo_mod.set_up(self.demo)
        plan, empty_csv = self.plan, False
        if not plan.cells and self.options.allow_empty:
            # As the harness: nothing to run (a missing models dir too) is an empty CSV, exit 0.
            plan = replace(plan, models_dir_missing=False)
            empty_csv = self.config.resume is None
        sweep = Sweep(self.config, self.planner, reporter, echo, self.watch)
        result = sweep.run(plan, empty_csv=empty_csv)
        for notice in self.lock_notices:
            reporter.log(notice)
        if result.write_error is not None and raise_write_error:
            raise OomrecError(result.write_error)
        return SweepOutcome(config=self.config, plan=self.plan, dry_run=False, result=result)


def prepare(
    options: SweepOptions, *, lock: bool = False, on_wait: Callable[[str], None] | None = None
) -> Prepared:
    """Read the settings, the record (with its archive and shared notes, judged at HEAD) and
    the grid; launch nothing. `lock`: this process is to run the sweep, so it holds the output
    CSV's lock from before it reads what an earlier run left (sweep.outlock) to its end: a
    sweep already writing that CSV stops this one at once, or, for a --resume, is waited for
    (`on_wait` says so)."""
    hardware = detect()
    day = date.today().isoformat()
    demo_dirs = demo_mod.layout(demo_mod.DEMO_DIR, hardware, day) if options.demo else None
    relay = _Relay()
    if demo_dirs is not None and options.record is None:
        # The demo keeps its record beside its CSV, away from the repository's real record.
        record_file = RecordFile(demo_dirs.record, shown_as=display_path(demo_dirs.record))
        settings = load_settings()
    else:
        record_file, settings = config_mod.open_record(
            options.record, writing=True, on_notice=relay
        )
    read_as: list[str] = []
    config = configure(
        options,
        settings,
        record_file,
        hardware=hardware,
        day=day,
        host_mem=detect_memory(),
        demo_dirs=demo_dirs,
        warnings=read_as,
    )
    if demo_dirs is None or options.output is not None:
        config_mod.check_output(config.output, settings, named_by_user=options.output is not None)
    held = None
    lock_notices: list[str] = []
    if lock:
        from oomrec.sweep import outlock

        held = outlock.acquire(
            config.output,
            # A resume continues what the other wrote; a hand run waits its turn, as one cell at
            # a time keeps each cell's memory its own.
            wait=options.resume is not None or options.append,
            on_wait=on_wait,
            notices=lock_notices,
        )
    # Before the read: a write meanwhile makes the sweep read the record again (RecordWatch).
    seen = record_file.stamp()
    loaded = record_file.load()
    parked, warnings = record_warnings(loaded, record_file)
    warnings[:0] = read_as
    key = trailer_key(settings)
    evidence = gather_evidence(
        record_file,
        loaded,
        key,
        hardware,
        judge=not config.ignore_record,
        parked=parked,
        warnings=warnings,
    )

    def gather_again() -> list[JudgedLine]:
        return gather_evidence(record_file, record_file.load(), key, hardware)

    watch = None if config.ignore_record else RecordWatch(record_file, seen, gather_again)
    planner = Planner(
        evidence,
        hardware,
        ignore_record=config.ignore_record,
        ignore_guard_records=config.ignore_guard_records,
        fake_oom=config.fake_oom,
        host_mem=config.host_mem,
        probe_problem=watch_problem(hardware),
        probe_undecided=config.probe_undecided,
    )
    warnings.extend(_guard_warnings(config))
    plan = plan_cells(config)
    warnings.extend(planner.shared_last_parts(list(dict.fromkeys(c.model for c in plan.cells))))
    return Prepared(
        options=options,
        config=config,
        plan=plan,
        planner=planner,
        loaded=loaded,
        warnings=warnings,
        demo=demo_dirs,
        relay=relay,
        lock=held,
        lock_notices=lock_notices,
        watch=watch,
    )


def sweep(options: SweepOptions, reporter: Reporter | None = None) -> SweepOutcome:
    """Plan and run a sweep: prepare() then run(), for a caller with nothing to show between."""
    prepared = prepare(options, lock=True)
    try:
        return prepared.run(reporter)
    finally:
        prepared.release()


def dry_run(options: SweepOptions) -> SweepOutcome:
    """The sweep's plan: every cell's verdict; nothing launched, nothing written. Raises what
    the real run would refuse before its first cell."""
    prepared = prepare(options)
    for refusal in (prepared.empty, prepared.refused):
        if refusal is not None:
            raise refusal
    return prepared.preview()


def _guard_warnings(config: SweepConfig) -> list[str]:
    if config.guard.min_available_bytes is None:
        return []
    available = AvailableMemory()
    try:
        return config.guard.warnings(available.read())
    finally:
        available.close()


class _Relay:
    """Passes a notice on to whoever listens by the time it is said: the record's first write
    (and its info/exclude notice) happens during the run, whose reporter is known only then."""

    def __init__(self) -> None:
        self.target: Callable[[str], None] | None = None

    def __call__(self, message: str) -> None:
        if self.target is not None:
            self.target(message)


def _gpu_limit(limit: GpuLimit | None) -> dict[str, float | int | None] | None:
    return None if limit is None else {"bytes": limit.size, "percent": limit.share}
