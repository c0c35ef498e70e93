"""The OOM frontier as words: plain lines (one row each, full values, no box drawing) and the
texts every view shares (a frontier, a grid's glyphs, the legend). Glyphs and words carry every
fact; the terminal's tables (cli/report_tables.py) and the HTML page only add colour."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from oomrec.core.records import UNKNOWN_COMMIT, short_commit
from oomrec.core.shown import show_bytes
from oomrec.report.frontier import (
    CONTRADICTED_GLYPH,
    GLYPHS,
    LEGEND,
    Contradiction,
    Frontier,
    Machine,
    Outcome,
    Report,
)
from oomrec.report.runs import Run, as_matrix


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
    if f.guard_min is not None and (
        f.oom_min is None or f.guard_min.evidence.length < f.oom_min.evidence.length
    ):
        stop = f.guard_min.evidence
        limit = stop.record.mem_bytes
        at = f" at {show_bytes(limit)}" if limit else ""
        parts.append(f"guard >={short_length(stop.length)}{at}")
    text = " | ".join(parts)
    return f"{text} {CONTRADICTED_GLYPH}contradicted" if f.contradicted else text


def matrix_lines(report: Report) -> Iterator[str]:
    """The model x machine-class matrix, plain: one (model, machine) per line."""
    rows = [(f.model, f.machine.id, frontier_text(f)) for f in report.frontier.values()]
    yield from _columns([("model", "machine", "frontier"), *rows])


def is_matrix(report: Report, machine: Machine) -> bool:
    """Whether `machine`'s grid is drawn as a matrix, a column per length of its axis (dense or
    small), else as each model's runs (runs.as_matrix): every view decides it here."""
    models = [model for model in report.models if (model, machine) in report.frontier]
    filled = sum(run.size for model in models for run in report.runs.get((model, machine), ()))
    return as_matrix(len(models), len(report.lengths[machine]), filled)


def run_text(run: Run) -> str:
    """`512..8k o`: the lengths a model was tried at from 512 to 8k all had outcome `o`."""
    glyph = GLYPHS[run.outcome] + (CONTRADICTED_GLYPH if run.flagged else "")
    span = short_length(run.start)
    if run.end != run.start:
        span += f"..{short_length(run.end)}"
    return f"{span} {glyph}"


def run_rows(report: Report, machine: Machine) -> list[tuple[str, list[Run]]]:
    """Per model tried on `machine`, its runs (the grid of a sparse class)."""
    return [
        (model, report.runs[(model, machine)])
        for model in report.models
        if (model, machine) in report.runs
    ]


def grid_cells(report: Report, machine: Machine) -> list[tuple[str, list[str]]]:
    """Per model tried at some length of `machine`'s axis, one glyph per length (`!` after a
    contradicted OOM): the matrix, for a class is_matrix draws as one."""
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
    yield f"machine {machine.id}"
    if is_matrix(report, machine):
        header = ("model", *(short_length(n) for n in report.lengths[machine]))
        rows = [(model, *glyphs) for model, glyphs in grid_cells(report, machine)]
        yield from _columns([header, *rows])
        yield from legend_lines()
        return
    folded = [
        (model, "  ".join(run_text(r) for r in runs)) for model, runs in run_rows(report, machine)
    ]
    yield from _columns([("model", RUNS_HEADER), *folded])
    yield from legend_lines()
    yield RUNS_NOTE


RUNS_HEADER = "lengths tried, equal outcomes folded"
RUNS_NOTE = (
    "a..b g: every length from a to b the model was tried at had outcome g "
    "(too many lengths for a column each; --json's never_tried names the others)"
)


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


def regression_lines(report: Report) -> Iterator[str]:
    """One line per memory regression (report/regressions.py), then how many were not asked."""
    for r in report.regressions:
        yield f"regression: {r.line()}"
    if report.regressions_unasked:
        yield (
            f"regression: {report.regressions_unasked} more run/stop pairs were not asked of "
            "git (a bound on the report's time); --json lists the ones found"
        )


def _columns(rows: list[tuple[str, ...]]) -> Iterator[str]:
    """Rows padded into columns; the last column is never padded nor cut."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)] + [row[-1]]
        yield "  ".join(cells).rstrip()
