"""`oomrec run MODEL LENGTH -- COMMAND...`: one hand-run cell, protected as a sweep's cell is."""

import os
import queue
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from oomrec.cli import celloptions as opt
from oomrec.cli.apps import RecordOption, app
from oomrec.cli.ending import error_line
from oomrec.cli.output import info, tell
from oomrec.cli.render import print_json
from oomrec.core.errors import EXIT_FOUND, EXIT_INTERRUPTED, EXIT_USAGE

if TYPE_CHECKING:
    from oomrec.commands.run import RunResult
    from oomrec.sweep.grid import CellResult
    from oomrec.sweep.planner import Cell


@app.command("run")
def run_command(
    model: Annotated[
        str,
        typer.Argument(metavar="MODEL", help="The model's name, as the record names it."),
    ],
    length: Annotated[
        str,
        typer.Argument(metavar="LENGTH", help="The prompt length in tokens (32768 or 32k)."),
    ],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="-- COMMAND...",
            help="The command for the cell, after --, run without a shell; the sweep's "
            "placeholders ({model} {model_path} {length} {cell_csv} ...) are filled in.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            help="The CSV the cell's row is appended to. Default: "
            "benchmarks/{backend}_{hw}_{date}_oomrec-run.csv.",
            dir_okay=False,
        ),
    ] = None,
    record: RecordOption = None,
    models_dir: Annotated[
        str | None,
        typer.Option(
            "--models-dir", metavar="DIR", help="What {model_path} is under. Default: ./models."
        ),
    ] = None,
    timeout: opt.TimeoutOption = None,
    max_cell_memory: opt.MaxCellMemoryOption = None,
    min_available: opt.MinAvailableOption = None,
    max_cell_gpu_memory: opt.MaxCellGpuMemoryOption = None,
    min_gpu_available: opt.MinGpuAvailableOption = None,
    ignore_record: opt.IgnoreRecordOption = False,
    probe_undecided: Annotated[
        bool,
        typer.Option(
            "--probe-undecided",
            help="Run the cell as a probe when a fix may have lifted its record (git cannot "
            "prove it): under the guard, and its outcome decides.",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print a JSON object on stdout (the command's output then goes to stderr).",
        ),
    ] = False,
) -> None:
    """Run one cell by hand, protected as a sweep's cell: a cell a record says runs out of
    memory is not launched; a true OOM (or a guard stop) is recorded with this host's tag and
    memory; the command's output passes through live. Exit 0 when it ran and succeeded, 1 when
    it was skipped, failed or ran out of memory (the verdict on stderr), 2 usage, 130
    interrupted.

    Example: oomrec run m 32k -- ./bench.sh {model_path} --prompt-tokens {length}
    """
    from oomrec.commands.run import RunOptions, finish, prepare_run
    from oomrec.sweep.grid import sigterm_as_interrupt
    from oomrec.sweep.options import from_given

    # Each parameter is named as the RunOptions field it fills (celloptions.py).
    options = from_given(RunOptions, locals(), command=command or [])
    # While it waits for another oomrec's lock, SIGTERM ends the wait as Ctrl-C does (130).
    with sigterm_as_interrupt():
        prepared = prepare_run(
            options, on_wait=lambda message: print(message, file=sys.stderr, flush=True)
        )
    for warning in prepared.warnings:
        tell(warning)
    echo = _LiveEcho(sys.stderr if as_json else sys.stdout)
    reporter = _RunReporter()
    try:
        result = finish(prepared, reporter, echo)
    finally:
        echo.close()
        prepared.release()
    if as_json:
        print_json(result.to_json())
    _verdict(sys.stderr, result)
    for message in reporter.said:
        print(message, file=sys.stderr, flush=True)
    if result.interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if result.write_error is not None:
        # Said after the verdict (an OOM still recorded); a cell that ran well but whose row
        # is lost is an error of its own.
        tell(error_line(result.write_error))
        raise typer.Exit(EXIT_FOUND if not result.succeeded else EXIT_USAGE)
    if not result.succeeded:
        raise typer.Exit(EXIT_FOUND)


def _verdict(stream: TextIO, result: "RunResult") -> None:
    """The verdict line (always: it is what a script's log must show), then what was written."""
    from oomrec.cli.cellline import cell_details
    from oomrec.store.locations import display_path

    config, cell = result.outcome.config, result.cell
    where = f"{config.models[0]} @ {config.lengths[0]} on {config.hardware}"
    if cell is None:
        killed = result.outcome.result.killed_cell
        what = "the command was killed" if killed else "nothing launched"
        print(f"interrupted: {where}: {what}", file=stream, flush=True)
        return
    details = cell_details(cell)
    line = f"{cell.token}: {where}" + (f" ({'; '.join(details)})" if details else "")
    print(line, file=stream, flush=True)
    if cell.recorded:
        print(f"  recorded: {cell.recorded}", file=stream, flush=True)
    if cell.already_recorded:
        print(f"  already recorded: {cell.already_recorded}", file=stream, flush=True)
    output = result.outcome.result.output
    if output is not None:
        info(f"  row: {display_path(output)}", stream=stream)


class _RunReporter:
    """Keeps the sweep's log lines (a first write's info/exclude notice, warnings) to print
    after the verdict: a script reads the verdict from the first line."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def log(self, message: str) -> None:
        self.said.append(message)

    def cell_started(self, done: int, cell: "Cell") -> None:
        pass

    def cell_done(self, done: int, result: "CellResult") -> None:
        pass


class _LiveEcho:
    """The command's output to `stream` as it comes, from a thread of its own: a reader that
    stops reading (a paused pager, a full pipe) must never stall the cell's guard and timeout,
    so what the stream cannot take in time is dropped (and the count said), never waited for."""

    # A few MiB of output in flight; past it, chunks are dropped.
    _DEPTH = 256

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.dropped = 0
        self._fd: int | None
        try:
            stream.flush()
            self._fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None  # not a file (a test's capture): written through the stream
        self._chunks: queue.Queue[bytes | None] = queue.Queue(self._DEPTH)
        self._thread = threading.Thread(target=self._write, name="oomrec-echo", daemon=True)
        self._thread.start()

    def __call__(self, chunk: bytes) -> None:
        try:
            self._chunks.put_nowait(chunk)
        except queue.Full:
            self.dropped += len(chunk)

    def _write(self) -> None:
        while (chunk := self._chunks.get()) is not None:
            try:
                if self._fd is None:
                    self.stream.write(chunk.decode("utf-8", errors="replace"))
                    self.stream.flush()
                else:
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(self._fd, view) :]
            except (OSError, ValueError):
                return  # the reader went away: the cell goes on without it

    def close(self) -> None:
        # What is queued is written; a reader that never reads is not waited for long.
        try:
            self._chunks.put(None, timeout=1.0)
        except queue.Full:
            pass
        else:
            self._thread.join(timeout=5.0)
        while True:
            try:
                left = self._chunks.get_nowait()
            except queue.Empty:
                break
            self.dropped += len(left or b"")
        if self.dropped:
            print(
                f"oomrec run: {self.dropped} bytes of the command's output were not shown "
                "(the reader went away or was too slow)",
                file=sys.stderr,
                flush=True,
            )
