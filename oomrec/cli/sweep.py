"""`oomrec sweep`: run a (model x prompt length) grid, never launching a cell certain to OOM."""

import os
import shlex
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from oomrec.cli import celloptions as opt
from oomrec.cli import output as output_state
from oomrec.cli.apps import RecordOption, app
from oomrec.cli.output import Whole, info, tell
from oomrec.cli.render import plural, print_json, verb
from oomrec.core.errors import EXIT_INTERRUPTED
from oomrec.sweep.cell.defaults import DEFAULT_MAX_TOKENS, DEFAULT_WARMUP_TOKENS

if TYPE_CHECKING:
    from oomrec.commands.sweep import Prepared, SweepOutcome
    from oomrec.core.records import RecordLine
    from oomrec.sweep.grid import CellResult
    from oomrec.sweep.options import SweepConfig
    from oomrec.sweep.planner import Cell, Decision

# The sweep itself (its planner, runner and guard, psutil) and rich's progress bar and tables
# are imported in the functions that use them: `oomrec sweep --help` needs none of them.


@app.command("sweep")
def sweep_command(
    models: opt.ModelsOption = None,
    lengths: opt.LengthsOption = None,
    runner: opt.RunnerOption = None,
    models_dir: opt.ModelsDirOption = None,
    output: opt.OutputOption = None,
    record: RecordOption = None,
    timeout: opt.TimeoutOption = None,
    cooldown: opt.CooldownOption = "0",
    big_cooldown: opt.BigCooldownOption = "0",
    max_tokens: opt.MaxTokensOption = DEFAULT_MAX_TOKENS,
    warmup_tokens: opt.WarmupTokensOption = DEFAULT_WARMUP_TOKENS,
    fake_oom: opt.FakeOomOption = None,
    ignore_record: opt.IgnoreRecordOption = False,
    ignore_guard_records: opt.IgnoreGuardRecordsOption = False,
    probe_undecided: opt.ProbeUndecidedOption = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; launch nothing, write nothing.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON summary on stdout (the log on stderr).")
    ] = False,
    resume: opt.ResumeOption = False,
    resume_keep: opt.ResumeKeepOption = False,
    rerun_failed: opt.RerunFailedOption = False,
    shard: opt.ShardOption = None,
    max_cell_memory: opt.MaxCellMemoryOption = None,
    min_available: opt.MinAvailableOption = None,
    max_cell_gpu_memory: opt.MaxCellGpuMemoryOption = None,
    min_gpu_available: opt.MinGpuAvailableOption = None,
    refine: opt.RefineOption = 0,
    refine_step: opt.RefineStepOption = None,
    allow_empty: opt.AllowEmptyOption = False,
    demo: opt.DemoOption = False,
) -> None:
    """Run a benchmark sweep, never launching a cell that is certain to run out of memory.

    Before each launch: the backstop, then the OOM record, then --fake-oom (see docs/sweep.md).

    Defaults come from the tool.oomrec table of pyproject.toml; flags override them.

    Example: oomrec sweep --models "llama-3.1-8b qwen2.5-7b" --lengths "512 8192"
    """
    from oomrec.commands.sweep import prepare
    from oomrec.sweep.options import SweepOptions, from_given

    # Each parameter is named as the SweepOptions field it fills (celloptions.py).
    options = from_given(
        SweepOptions, locals(), resume="keep" if resume_keep else "rerun" if resume else None
    )
    prepared = prepare(
        options,
        lock=not dry_run,
        on_wait=lambda message: info(message, stream=sys.stderr),
    )
    # The log and the summary go to stderr, as the harness's do; stdout carries only --json.
    log = sys.stderr
    for warning in prepared.warnings:
        tell(warning)
    info(
        *_header(prepared, "--ignore-record" if ignore_record else None),
        *_memory_exclusions(prepared.loaded.lines, prepared.config),
        stream=log,
    )
    if dry_run:
        outcome = prepared.preview(_LineReporter(log, 0))
        if as_json:
            print_json(outcome.to_json())
        else:
            _say(
                log,
                *_plan_lines(outcome.decided),
                *_refine_plan(prepared),
            )
        for refusal in (prepared.empty, prepared.refused):
            if refusal is not None:
                raise refusal
        return
    try:
        if prepared.empty is not None:
            raise prepared.empty
        total = len(prepared.plan.cells)
        # With --refine, the most cells the sweep can run (probes stop early once the
        # bracket is as fine as the step).
        total += prepared.config.refine * len({c.model for c in prepared.plan.cells})
        fancy = log.isatty() and not output_state.STATE.quiet
        reporter = _ProgressReporter(log, total) if fancy else _LineReporter(log, total)
        try:
            with reporter:
                outcome = prepared.run(reporter)
        except BaseException:
            if reporter.started:
                # A crash mid-sweep: what was written stays, and this continues it. (Refused
                # before the first cell, as for an --output that is no file, there is nothing
                # to resume.)
                _say(log, Whole(f"resume with: {_resume_command()}"))
            raise
    finally:
        # The output's lock goes with the run (the process ending would drop it too).
        prepared.release()
    if as_json:
        print_json(outcome.to_json())
    _summary(log, outcome, demo)
    if outcome.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)


def _resume_command() -> str:
    """The command line that continues this sweep: as typed, with --resume."""
    args = sys.argv[1:]
    if not any(a in ("--resume", "--resume-keep") for a in args):
        args = [*args, "--resume"]
    return shlex.join(["oomrec", *args])


def _say(stream: TextIO, *lines: str) -> None:
    """Lines said even with --quiet (the plan, an interruption), folded as `info` folds."""
    for line in lines:
        tell(line, stream)


# Enough to see why; a record with hundreds of such lines says how many more.
MAX_EXCLUSIONS_SHOWN = 5


def _memory_exclusions(lines: "Sequence[RecordLine]", config: "SweepConfig") -> list[str]:
    """The records of this hardware that do not apply because this host has more memory."""
    from oomrec.core.records import Applicability, applicability, not_applying_because

    said = []
    for line in lines:
        rec = line.record
        if rec is None:
            continue
        if applicability(rec, config.hardware, config.host_mem) == Applicability.MORE_MEMORY:
            why = not_applying_because(rec, config.hardware, config.host_mem)
            said.append(f"  not applied: {config.record.shown_as}:{line.lineno} ({why})")
    if len(said) > MAX_EXCLUSIONS_SHOWN:
        more = len(said) - MAX_EXCLUSIONS_SHOWN
        said = [*said[:MAX_EXCLUSIONS_SHOWN], f"  not applied: ... and {more} more"]
    return said


def _header(prepared: "Prepared", flag: str | None) -> list[str]:
    from oomrec.core import nvidia
    from oomrec.core.hardware import detect_backend
    from oomrec.core.memscope import cgroup_binds, describe_binding, host_ram
    from oomrec.store.locations import display_path
    from oomrec.sweep.cell.accel import describe_gpus
    from oomrec.sweep.cell.cellscope import describe_mode
    from oomrec.sweep.options import ignore_record_from_env

    config, plan, planner = prepared.config, prepared.plan, prepared.planner
    n_models = len(config.models) - len(plan.missing)
    lines = [
        f"sweep: {plural(n_models, 'model')} x {plural(len(config.lengths), 'length')} = "
        f"{plural(len(plan.cells), 'cell')} on {config.hardware}",
        f"  runner:  {config.runner.text}",
        f"  models:  {config.models_dir_shown}",
        f"  output:  {display_path(config.output)}",
        f"  record:  {config.record.shown_as} ({plural(planner.applicable_records, 'record')} "
        f"{verb(planner.applicable_records, 'applies', 'apply')} to {config.hardware} at HEAD"
        + (
            f", {planner.unverified_records} lifted by fixes, to verify by a probe"
            if planner.unverified_records
            else ""
        )
        + (f", {planner.lifted_records} out of play" if planner.lifted_records else "")
        + ")",
        f"  guard:   {config.guard.describe()}",
    ]
    lines.append(f"  scope:   {describe_mode()}")
    # Which memory limit binds: said when the guard acts on it or a cgroup's is the tighter.
    host = host_ram()
    if config.guard.on or cgroup_binds(host):
        lines.append(f"  memory:  {describe_binding(host)}")
    if config.guard.gpu:
        lines.append(f"  gpu:     {describe_gpus()}")
    if detect_backend() == "cuda":
        order = nvidia.order_warning()
        if order is not None:
            lines.append(f"  warning: {order}")
    if config.shard is not None:
        i, n = config.shard
        took = ", ".join(config.models) or "none"
        lines.append(f"  shard {i}/{n}: {took} (of {config.all_models} models)")
    if config.ignore_guard_records and not config.ignore_record:
        lines.append("  guard records ignored (--ignore-guard-records); OOM records still apply")
    if config.ignore_record:
        name = ignore_record_from_env()
        why = flag or f"{name}={os.environ.get(name or '', '')}"
        lines.append(f"  record pre-skip disabled by {why} (new OOMs are still recorded)")
    if plan.models_dir_missing:
        if not prepared.options.allow_empty:
            return lines  # the run (and the dry run) stops with an error that says it: once
        lines.append(
            f"models dir {config.models_dir_shown} does not exist: no model can run "
            "(pass --models-dir or set models_dir in [tool.oomrec])"
        )
    else:
        from oomrec.core.modelnames import near_models

        for m in plan.missing:
            near = near_models(m, config.models_dir)
            hint = f"; did you mean {' or '.join(near)}?" if near else ""
            lines.append(f"[miss] {m} (not found under {config.models_dir_shown}, skipping{hint})")
    return lines


def _plan_lines(decided: "list[tuple[Cell, Decision]]") -> list[str]:
    from oomrec.sweep.planner import Action

    lines = []
    for cell, decision in decided:
        line = f"  {cell.model} @ {cell.length}: {decision.action}"
        if decision.record_line:
            line += f" ({decision.reason}: {decision.record_line})"
        elif decision.reason:
            line += f" ({decision.reason})"
        lines.append(line)
    to_run = sum(1 for _, d in decided if d.action == Action.RUN)
    probes = sum(1 for _, d in decided if d.action == Action.PROBE)
    done = sum(1 for _, d in decided if d.action == Action.DONE)
    already = f"{done} done, " if done else ""
    probed = f", {probes} to probe under the guard" if probes else ""
    lines.append(
        f"dry run: {already}{to_run} to run{probed}, "
        f"{len(decided) - to_run - probes - done} to skip; nothing launched, nothing written"
    )
    return lines


def _refine_plan(prepared: "Prepared") -> list[str]:
    """What --refine would probe, as far as the plan knows it before anything runs: below the
    smallest length the planner knows to OOM (a record, or a faked OOM the preview noted)."""
    config, planner = prepared.config, prepared.planner
    if not config.refine:
        return []
    lines = [
        f"refine: then up to {plural(config.refine, 'probe')} per model by bisection (lengths "
        f"at multiples of {config.refine_step}) between the largest length that runs and the "
        "smallest that runs out of memory; which, the ladder's outcomes decide"
    ]
    for model in dict.fromkeys(cell.model for cell in prepared.plan.cells):
        known = planner.known_oom(model)
        if known is not None:
            lines.append(f"  {model}: no probe at or above {known[0]} ({known[1]})")
    return lines


def _cell_line(done: int, total: int, result: "CellResult") -> str:
    """One finished cell, as the log shows it."""
    from oomrec.cli.cellline import cell_details

    probe = " (probe)" if result.probe else ""
    line = f"[{done}/{total}] {result.cell.model} @ {result.cell.length}{probe}: {result.token}"
    details = cell_details(result)
    if details:
        line += f" ({'; '.join(details)})"
    return line


class _LineReporter:
    """Plain log lines, one per finished cell (not a terminal: CI, a pipe, a file)."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = total
        self.started = False

    def __enter__(self) -> "_LineReporter":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def log(self, message: str) -> None:
        _say(self.stream, message)

    def cell_started(self, done: int, cell: "Cell") -> None:
        self.started = True

    def runner_line(self, line: str) -> None:
        """A line of the running cell's stderr, shown as the harness leaves it on the terminal."""
        self.stream.write(line + "\n")
        self.stream.flush()

    def cell_done(self, done: int, result: "CellResult") -> None:
        if output_state.STATE.quiet:
            return
        self.log(_cell_line(done, self.total, result))
        if result.recorded:
            self.log(Whole(f"  recorded: {result.recorded}"))
        if result.already_recorded:
            self.log(Whole(f"  already recorded: {result.already_recorded}"))
        for line in result.verified:
            self.log(Whole(f"  verified (archived): {line}"))


class _ProgressReporter(_LineReporter):
    """On a terminal: the same lines, under a live bar (cells done/total, current cell, ETA)."""

    def __init__(self, stream: TextIO, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        super().__init__(stream, total)
        shown_on = output_state.console(stream)
        # Two columns kept free: the terminal echoes Ctrl-C as `^C` after the bar, and a bar as
        # wide as the terminal would wrap it onto a new line, so that the erase on stop clears
        # the wrong line and leaves a frozen bar on the screen.
        shown_on.width = max(20, shown_on.width - 2)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=shown_on,
            transient=True,
        )
        self.task = self.progress.add_task("starting", total=total)

    def __enter__(self) -> "_ProgressReporter":
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def log(self, message: str) -> None:
        # soft_wrap: rich puts no newline inside a field (a record line a copy would paste
        # broken); prose is folded at spaces first, a Whole line is left to the terminal.
        self.progress.console.print(
            output_state.fold(message, self.stream), markup=False, highlight=False, soft_wrap=True
        )

    def cell_started(self, done: int, cell: "Cell") -> None:
        super().cell_started(done, cell)
        self.progress.update(self.task, description=f"{cell.model} @ {cell.length}")

    def runner_line(self, line: str) -> None:
        # Above the bar, as the log's lines: the progress line stays whole below them.
        from rich.text import Text

        self.progress.console.print(Text(line), highlight=False, soft_wrap=True)

    def cell_done(self, done: int, result: "CellResult") -> None:
        super().cell_done(done, result)
        self.progress.update(self.task, completed=done)


def _done_count(results: "Sequence[CellResult]", planned: "Sequence[Cell]") -> str:
    """`4 of 6 cells done`, and the refine probes apart: they are not of the grid's count."""
    grid = {(c.model, c.length) for c in planned}
    ladder = sum(1 for r in results if (r.cell.model, r.cell.length) in grid)
    probes = len(results) - ladder
    done = f"{ladder} of {plural(len(planned), 'cell')} done"
    return done + (f", and {plural(probes, 'refine probe')}" if probes else "")


def _ordered_tokens(counts: Counter[str]) -> list[str]:
    from oomrec.core.schema import Token

    # Summary columns in this order; any other token follows, alphabetically.
    order = (Token.SUCCESS, Token.TRUE_OOM, Token.OOM_GUARD, Token.OOM_BACKSTOP, Token.OOM_RECORD)
    known = [t for t in order if t in counts]
    return known + sorted(t for t in counts if t not in order)


def _summary(stream: TextIO, outcome: "SweepOutcome", demo: bool) -> None:
    from rich.table import Table

    from oomrec.core.schema import Token
    from oomrec.store.locations import display_path

    config, plan, result = outcome.config, outcome.plan, outcome.result
    per_model = outcome.per_model()
    totals = outcome.totals()
    if per_model and not output_state.styled(stream):
        # Off a terminal: plain aligned columns, no box drawing (a log file, a pipe to grep).
        tokens = _ordered_tokens(totals)
        rows = [["model", *tokens, "total"]]
        rows += [
            [model, *(str(counts[t]) for t in tokens), str(counts.total())]
            for model, counts in per_model.items()
        ]
        rows.append(["all", *(str(totals[t]) for t in tokens), str(totals.total())])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        info(
            "cells per model and classification",
            *(
                "  ".join(
                    cell.ljust(w) if i == 0 else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(row, widths, strict=True))
                ).rstrip()
                for row in rows
            ),
            stream=stream,
        )
    elif per_model:
        # The title on a line of its own: as the table's title it wraps to the table's width.
        title = "cells per model and classification"
        table = Table()
        tokens = _ordered_tokens(totals)
        table.add_column("model")
        for token in tokens:
            table.add_column(token, justify="right")
        table.add_column("total", justify="right")
        for model, counts in per_model.items():
            table.add_row(model, *(str(counts[t]) for t in tokens), str(counts.total()))
        table.add_row("all", *(str(totals[t]) for t in tokens), str(totals.total()), style="bold")
        if not output_state.STATE.quiet:
            shown_on = output_state.console(stream)
            shown_on.print(title, style="italic", markup=False, soft_wrap=True)
            shown_on.print(table)
    if result.brackets:
        info(
            "frontier after --refine:",
            *(f"  {bracket.describe()}" for bracket in result.brackets),
            stream=stream,
        )
    new = len(outcome.new_records())
    known = len(outcome.already_recorded())
    also = f", {known} already recorded" if known else ""
    info(
        f"rows: {display_path(result.output)}" if result.output else "rows: none written",
        f"record: {plural(new, 'new OOM record')}{also} in {config.record.shown_as}",
        stream=stream,
    )
    if config.guard.on:
        info(
            f"guard: {plural(totals[Token.OOM_GUARD], 'cell')} stopped by the memory guard",
            stream=stream,
        )
    if result.interrupted:
        killed = result.killed_cell
        what = f"{killed.model} @ {killed.length} was killed; " if killed else ""
        # Said even with --quiet: the sweep did not finish, and this is how to finish it.
        _say(
            stream,
            f"interrupted: {what}{_done_count(result.results, plan.cells)}",
            Whole(f"resume with: {_resume_command()}"),
        )
    elif demo:
        if new:
            info(
                "next: run `oomrec sweep --demo` again: the OOMs just recorded pre-skip their "
                "cells (SKIP:oom_record)",
                stream=stream,
            )
        elif totals[Token.OOM_RECORD]:
            info(
                "next: `oomrec sweep --demo --ignore-record` re-tests the skipped cells",
                stream=stream,
            )
        info(f"the record: oomrec record list --record {config.record.shown_as}", stream=stream)
        if result.output:
            info(
                f"the frontier: oomrec report {display_path(result.output.parent)} "
                f"--record {config.record.shown_as}",
                stream=stream,
            )
