"""`oomrec run MODEL LENGTH -- COMMAND...`: one hand-run cell through the sweep's own cell
pipeline (commands/sweep.py with a one-cell grid): the record's pre-skip, the launch in the
cell's own scope, the classification, a true OOM or a guard stop recorded with this host's tag
and memory, what the command leaves running killed.

A one-cell sweep, not a copy of one: whatever a sweep decides about a cell, a run decides the
same way. Two things differ, because a hand run is not a grid: the model is one name, resolved
as `check` resolves it (a directory under the models dir, or the one nested model whose last
part it is: core/modelnames.resolve_model; any other name is refused, as a typo would be checked
against no record), and the CSV is a log of hand runs, appended to and never replaced
(`benchmarks/{backend}_{hw}_{date}_oomrec-run.csv`).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oomrec.commands import Result
from oomrec.commands.sweep import Prepared, SweepOutcome, prepare
from oomrec.core import amounts
from oomrec.core.errors import OomrecError
from oomrec.core.modelnames import check_model_path
from oomrec.core.schema import Token
from oomrec.core.shown import shorten
from oomrec.sweep.grid import CellResult, Reporter
from oomrec.sweep.options import SweepOptions, from_given
from oomrec.sweep.planner import Cell

EXAMPLE = "oomrec run m 32768 -- scripts/bench_decode.sh {model_path} --prompt-tokens {length}"


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """One cell to run by hand; None means "as a sweep would": `[tool.oomrec]`, then defaults
    (the CSV excepted: a run's default is its own log)."""

    model: str
    length: str | int
    # The command and its arguments, with the sweep's placeholders ({model}, {length}, ...).
    command: Sequence[str]
    record: Path | None = None
    output: Path | None = None
    models_dir: str | None = None
    timeout: float | str | None = None
    max_cell_memory: str | None = None
    min_available: str | None = None
    max_cell_gpu_memory: str | None = None
    min_gpu_available: str | None = None
    # Launch even where a record applies (a new OOM is still recorded: "already recorded" when
    # the record holds it).
    ignore_record: bool = False
    # Probe the cell when a fix may have lifted its record (git cannot prove it either way).
    probe_undecided: bool = False


@dataclass(kw_only=True)
class RunResult(Result):
    """The cell's outcome: `cell` is None when the run was interrupted before it ended."""

    outcome: SweepOutcome

    @property
    def cell(self) -> CellResult | None:
        results = self.outcome.result.results
        return results[0] if results else None

    @property
    def verdict(self) -> str | None:
        return None if self.cell is None else self.cell.token

    @property
    def succeeded(self) -> bool:
        return self.verdict == Token.SUCCESS

    @property
    def interrupted(self) -> bool:
        return self.outcome.interrupted

    @property
    def write_error(self) -> str | None:
        """Why the cell's row could not be written (a full disk), or None."""
        return self.outcome.result.write_error

    def json_body(self) -> dict[str, Any]:
        config = self.outcome.config
        cell = self.cell
        body: dict[str, Any] = {
            "model": config.models[0],
            "length": config.lengths[0],
            "hardware": config.hardware,
            "host_mem_bytes": config.host_mem,
            "record": config.record.shown_as,
            "output": str(config.output) if self.outcome.result.output else None,
            "runner": config.runner.text,
            "interrupted": self.interrupted,
            "write_error": self.write_error,
        }
        if cell is not None:
            cell_keys = cell.to_dict()
        else:
            # Interrupted: the same keys, unknown (the command was killed, if it had launched).
            killed = self.outcome.result.killed_cell
            shape = CellResult(Cell(config.models[0], config.lengths[0], ""), "", "").to_dict()
            cell_keys = {
                **dict.fromkeys(shape),
                "model_path": killed.model_path if killed is not None else None,
                "launched": killed is not None,
                "notes": [],
            }
        return {**body, **{k: v for k, v in cell_keys.items() if k not in body}}


def prepare_run(options: RunOptions, on_wait: Callable[[str], None] | None = None) -> Prepared:
    """The one-cell sweep, planned and not started, its output's lock held until release():
    another oomrec writing that CSV is waited for (`on_wait` says so)."""
    return prepare(_sweep_options(options), lock=True, on_wait=on_wait)


def run(
    options: RunOptions,
    reporter: Reporter | None = None,
    echo: Callable[[bytes], None] | None = None,
) -> RunResult:
    """Run the cell (or pre-skip it); `echo` gets the command's output as it is read."""
    prepared = prepare_run(options)
    try:
        return finish(prepared, reporter, echo)
    finally:
        prepared.release()


def finish(
    prepared: Prepared,
    reporter: Reporter | None = None,
    echo: Callable[[bytes], None] | None = None,
) -> RunResult:
    outcome = prepared.run(reporter, echo, raise_write_error=False)
    return RunResult(warnings=list(prepared.warnings), outcome=outcome)


def _sweep_options(options: RunOptions) -> SweepOptions:
    if not options.command:
        raise OomrecError(f"no command to run: give it after --, e.g. {EXAMPLE}")
    model = _one_model(options.model, options.models_dir)
    length = amounts.one_length(options.length)
    # The fields a run shares with a sweep (named alike) pass as they are.
    return from_given(
        SweepOptions,
        vars(options),
        models=[model],
        lengths=[length],
        # The template is the command's own argv: shlex.join quotes each argument so that the
        # sweep's split gives it back whole.
        runner=shlex.join(options.command),
        runner_named="the command",
        models_need_dirs=False,
        append=True,
    )


def _one_model(typed: str, models_dir: str | None) -> str:
    """The model of a hand run: one name; `./models/x/` (the model path a hand command takes)
    is `x` (configure resolves it under the models dir, as `check` does)."""
    if not typed.strip() or any(ch.isspace() for ch in typed):
        # A sweep reads "a b" as two models; a hand run is one cell.
        raise OomrecError(
            f"MODEL {shorten(typed)} is not one model name (it holds whitespace or nothing); "
            "give the name of one model"
        )
    prefix = (models_dir or "models").removeprefix("./").rstrip("/") + "/"
    name = typed.removeprefix("./")
    if name.startswith(prefix) and name[len(prefix) :].strip("/"):
        name = name[len(prefix) :]
    name = name.rstrip("/")
    try:
        return check_model_path(name)
    except OomrecError as exc:
        raise OomrecError(f"MODEL: {exc}") from None
