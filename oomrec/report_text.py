"""The OOM frontier as text: rich tables on a terminal, plain lines (one row each, full values,
no box drawing) anywhere else. Glyphs and words carry every fact; colour only adds."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rich.table import Table
from rich.text import Text

from oomrec.records import UNKNOWN_COMMIT, short_commit
from oomrec.report import (
    CONTRADICTED_GLYPH,
    GLYPHS,
    LEGEND,
    Contradiction,
    Frontier,
    Machine,
    Outcome,
    Report,
)

# Readable on dark and light backgrounds alike: no white, black or dim.
STYLES: dict[Outcome, str] = {
    Outcome.RAN: "green",
    Outcome.OOM: "bold red",
    Outcome.LIFTED: "yellow",
    Outcome.BACKSTOP: "magenta",
    Outcome.RECORD: "yellow",
    Outcome.TIMEOUT: "cyan",
    Outcome.FAILED: "blue",
    Outcome.SKIPPED: "blue",
    Outcome.NOT_TRIED: "",
}


def short_length(n: int) -> str:
    """`32768` -> `32k`: a multiple of 1024 in k, anything else as is."""
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def frontier_text(f: Frontier) -> str:
    """One matrix cell: `ok <=8k | oom >=32k since 9bef3f2`, with what took an OOM out of play
    and whether a later run contradicts it."""
    parts = [f"ok <={short_length(f.ran_max[0])}" if f.ran_max else "ok -"]
    if f.oom_min is not None:
        since = f.oom_min.evidence.since
        when = short_commit(since.commit) if since.commit != UNKNOWN_COMMIT else (since.date or "?")
        parts.append(f"oom >={short_length(f.oom_min.evidence.length)} since {when}")
    if f.lifted_min is not None:
        fix = short_commit(f.lifted_min.fix or "?")
        parts.append(f"oom >={short_length(f.lifted_min.evidence.length)} lifted by fix {fix}")
    text = " | ".join(parts)
    return f"{text} {CONTRADICTED_GLYPH}contradicted" if f.contradicted else text


def matrix_lines(report: Report) -> Iterator[str]:
    """The model x machine-class matrix, plain: one (model, machine) per line."""
    rows = [(f.model, f.machine.id, frontier_text(f)) for f in report.frontier.values()]
    yield from _columns([("model", "machine", "frontier"), *rows])


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
                style = "bold red" if f.oom_min else "green" if f.ran_max else ""
                cells.append(Text(frontier_text(f), style=style))
            table.add_row(Text(model), *cells)
        tables.append(table)
    return tables


def grid_cells(report: Report, machine: Machine) -> list[tuple[str, list[str]]]:
    """Per model tried at some length of `machine`'s axis, one glyph per length (`!` after a
    contradicted OOM)."""
    out = []
    for model in report.models:
        if (model, machine) not in report.frontier:
            continue
        glyphs = []
        for n in report.lengths[machine]:
            outcome, flagged = report.grid.get((model, machine, n), (Outcome.NOT_TRIED, False))
            glyphs.append(GLYPHS[outcome] + (CONTRADICTED_GLYPH if flagged else ""))
        if any(g != GLYPHS[Outcome.NOT_TRIED] for g in glyphs):
            out.append((model, glyphs))
    return out


def grid_lines(report: Report, machine: Machine) -> Iterator[str]:
    header = ("model", *(short_length(n) for n in report.lengths[machine]))
    rows = [(model, *glyphs) for model, glyphs in grid_cells(report, machine)]
    yield f"machine {machine.id}"
    yield from _columns([header, *rows])
    yield from legend_lines()


def grid_tables(report: Report, machine: Machine, width: int) -> list[Table]:
    """The grid as tables that fit `width` columns: as many lengths per table as fit beside the
    model column (wrapped, never cut)."""
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


def legend_lines() -> Iterator[str]:
    yield "legend:"
    for outcome, glyph in GLYPHS.items():
        yield f"  {glyph}  {LEGEND[outcome]}"
    yield (
        f"  {CONTRADICTED_GLYPH}  after a glyph: an OOM that a later run at that length or more "
        "contradicts (kept)"
    )


def contradiction_lines(found: Iterable[Contradiction]) -> Iterator[str]:
    """One line per contradicted OOM, naming the row that contradicts it."""
    for c in found:
        ev = c.evidence
        yield (
            f"contradicted: {ev.model} oom at {ev.length} on {ev.machine.id} "
            f"({ev.seen.where}, {ev.seen.date}) ran at {c.length} on {c.seen.date} "
            f"({c.seen.where}); the OOM is kept: re-test it with --ignore-record"
        )


def _outcome(glyph: str) -> Outcome:
    base = glyph.removesuffix(CONTRADICTED_GLYPH)
    return next(o for o, g in GLYPHS.items() if g == base)


def _columns(rows: list[tuple[str, ...]]) -> Iterator[str]:
    """Rows padded into columns; the last column is never padded nor cut."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)] + [row[-1]]
        yield "  ".join(cells).rstrip()
