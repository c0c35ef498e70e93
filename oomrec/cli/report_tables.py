"""The OOM frontier as rich tables fitted to the terminal's width: the plain words of
report_text.py, in columns that wrap (never cut), coloured by outcome."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from oomrec.report.frontier import CONTRADICTED_GLYPH, GLYPHS, Machine, Outcome, Report
from oomrec.report.text import (
    RUNS_HEADER,
    frontier_text,
    grid_cells,
    is_matrix,
    run_rows,
    run_text,
    short_length,
)

# Readable on dark and light backgrounds alike: no white, black or dim.
STYLES: dict[Outcome, str] = {
    Outcome.RAN: "green",
    Outcome.OOM: "bold red",
    Outcome.LIFTED: "yellow",
    Outcome.BACKSTOP: "magenta",
    Outcome.GUARD: "magenta",
    Outcome.RECORD: "yellow",
    Outcome.TIMEOUT: "cyan",
    Outcome.FAILED: "blue",
    Outcome.SKIPPED: "blue",
    Outcome.NOT_TRIED: "",
}


def matrix_tables(report: Report, width: int) -> list[Table]:
    """The matrix as tables that fit `width` columns: as many machine classes per table as fit
    beside the model column (wrapped, never cut)."""
    tables = []
    model_width = _model_width(report.models)
    for part in _fitting(report.models, [MACHINE_WIDTH] * len(report.machines), width):
        machines = [report.machines[i] for i in part]
        # Fixed widths: left to itself, rich crops a table whose words do not fit.
        share = (width - 1 - model_width - _PER_COLUMN) // len(part) - _PER_COLUMN
        table = Table(title="OOM frontier (model x machine class)", title_justify="left")
        table.add_column("model", overflow="fold", width=model_width)
        for m in machines:
            table.add_column(m.id, overflow="fold", width=max(share, MACHINE_WIDTH))
        for model in report.models:
            if not any((model, m) in report.frontier for m in machines):
                continue
            cells: list[Text] = []
            for m in machines:
                f = report.frontier.get((model, m))
                if f is None:
                    cells.append(Text("-"))
                    continue
                style = (
                    "bold red"
                    if f.oom_min
                    else "yellow"
                    if f.guard_min
                    else "green"
                    if f.ran_max
                    else ""
                )
                cells.append(Text(frontier_text(f), style=style))
            table.add_row(Text(model), *cells)
        tables.append(table)
    return tables


def grid_tables(report: Report, machine: Machine, width: int) -> list[Table]:
    """The grid as tables that fit `width` columns: as many lengths per table as fit beside the
    model column (wrapped, never cut); a sparse class as each model's runs, folded."""
    if not is_matrix(report, machine):
        return [_runs_table(report, machine, width)]
    rows = grid_cells(report, machine)
    labels = [short_length(n) for n in report.lengths[machine]]
    models = [model for model, _ in rows]
    tables = []
    for part in _fitting(models, [max(len(x), 2) for x in labels], width):
        table = Table(title=f"machine {machine.id}: model x prompt length", title_justify="left")
        table.add_column("model", overflow="fold", width=_model_width(models))
        for i in part:
            table.add_column(labels[i], justify="center", no_wrap=True)
        for model, glyphs in rows:
            cells = [Text(glyphs[i], style=STYLES[_outcome(glyphs[i])]) for i in part]
            table.add_row(Text(model), *cells)
        tables.append(table)
    return tables


def _runs_table(report: Report, machine: Machine, width: int) -> Table:
    folded = run_rows(report, machine)
    models = [model for model, _ in folded]
    table = Table(title=f"machine {machine.id}: model x prompt length", title_justify="left")
    table.add_column("model", overflow="fold", width=_model_width(models))
    # The runs wrap between runs (never inside one), in what the model column leaves.
    room = max(width - 1 - _model_width(models) - 2 * _PER_COLUMN, MACHINE_WIDTH)
    table.add_column(RUNS_HEADER, overflow="fold", width=room)
    for model, runs in folded:
        cells = Text()
        for i, run in enumerate(runs):
            if i:
                cells.append("  ")
            cells.append(run_text(run).replace(" ", "\u00a0"), style=STYLES[run.outcome])
        table.add_row(Text(model), cells)
    return table


# A machine column narrower than this folds `ok <=32k` into one word a line.
MACHINE_WIDTH = 12
# The model column is at least this wide when a name is (longer names fold onto more lines).
MODEL_MIN_WIDTH = 24
# Each column costs its content, a space either side and a rule; the table one more rule.
_PER_COLUMN = 3


def _model_width(models: list[str]) -> int:
    return min(max((len(m) for m in models), default=5), MODEL_MIN_WIDTH)


def _fitting(models: list[str], widths: list[int], width: int) -> list[list[int]]:
    """The columns (by index) split into runs that fit `width` beside the model column; at least
    one column a run, so a very narrow terminal still gets every column."""
    room = width - 1 - (_model_width(models) + _PER_COLUMN)
    runs: list[list[int]] = [[]]
    used = 0
    for i, w in enumerate(widths):
        if runs[-1] and used + w + _PER_COLUMN > room:
            runs.append([])
            used = 0
        runs[-1].append(i)
        used += w + _PER_COLUMN
    return runs


def _outcome(glyph: str) -> Outcome:
    base = glyph.removesuffix(CONTRADICTED_GLYPH)
    return next(o for o, g in GLYPHS.items() if g == base)
