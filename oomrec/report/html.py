"""The OOM frontier as one self-contained HTML page: inline CSS and SVG, no script, font, image
or link to load, so it opens offline and from an attachment. Every colour has a glyph or a word
beside it, and both colour schemes (light, dark) are readable.

The report's JSON rides along in a `<script type="application/json">` data block (never run),
so the page holds exactly the facts `oomrec report --json` prints.
"""

from __future__ import annotations

import errno
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date as Date
from html import escape
from pathlib import Path

from oomrec.core.atomic import replace_file
from oomrec.core.confine import reserved_target
from oomrec.core.errors import OomrecError
from oomrec.core.records import RecordFile, short_commit
from oomrec.core.shown import show_bytes
from oomrec.report.frontier import (
    CONTRADICTED_GLYPH,
    GLYPHS,
    LEGEND,
    FixMarker,
    Judged,
    Machine,
    Outcome,
    Report,
)
from oomrec.report.peaks import Peak
from oomrec.report.text import (
    RUNS_HEADER,
    RUNS_NOTE,
    frontier_text,
    grid_cells,
    is_matrix,
    run_rows,
    run_text,
    short_length,
)

DATA_ID = "oomrec-report"

_CSS = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1a1a1a; --muted: #5c5c5c;
  --line: #c8c8c8; --grid: #ececec;
  --ran: #006e4f; --oom: #b03a00; --lifted: #8e3b70; --backstop: #8a5a00; --guard: #5e5300;
  --record: #00558f; --timeout: #1a6f8c; --failed: #3a3a3a; --skipped: #6a6a6a;
  --untried: #8a8a8a; --fix: #6a3fb5;
  --ran-bg: #c8eedd; --oom-bg: #f9c9b4; --lifted-bg: #f0d3e6; --backstop-bg: #f8dfb0;
  --guard-bg: #f3ec8c; --record-bg: #c9e0f4; --timeout-bg: #cdeaf7; --failed-bg: #cfcfcf;
  --skipped-bg: #ededed; --untried-bg: transparent;
  --h0: #e3f2e6; --h1: #fdf3b8; --h2: #fcd79a; --h3: #f7b08a; --h4: #ef8a8a;
  --m0: #1f77b4; --m1: #d95f02; --m2: #2ca02c; --m3: #9467bd; --m4: #8c564b; --m5: #e7298a;
  --m6: #17becf; --m7: #7f7f7f; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #16181c; --fg: #e8e8e8; --muted: #a8a8a8; --line: #4a4d55; --grid: #2a2d33;
    --ran: #4fd1a5; --oom: #ff8a5c; --lifted: #e89cc9; --backstop: #f2b33d; --guard: #f0e442;
    --record: #74b8f0; --timeout: #8fd3f5; --failed: #d0d0d0; --skipped: #9a9a9a;
    --untried: #8a8a8a; --fix: #c9a7ff;
    --ran-bg: #0f4d39; --oom-bg: #6b2406; --lifted-bg: #5a2449; --backstop-bg: #5c3d00;
    --guard-bg: #4d4700; --record-bg: #123e66; --timeout-bg: #134a5e; --failed-bg: #3d3d3d;
    --skipped-bg: #262626;
    --h0: #1e3a28; --h1: #4a4414; --h2: #5c3d12; --h3: #6b2e1c; --h4: #7a1f24;
    --m0: #6cb6ff; --m1: #ffa657; --m2: #7ee787; --m3: #d2a8ff; --m4: #e0b88a; --m5: #ff80c0;
    --m6: #56d4dd; --m7: #b0b0b0; }
}
* { box-sizing: border-box; }
body { background: var(--bg); color: var(--fg); font: 14px/1.4 system-ui, sans-serif;
  margin: 1.5rem; max-width: 1200px; }
.wrap { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { border: 1px solid var(--line); padding: 0.2rem 0.45rem; text-align: left;
  vertical-align: top; }
table.heat td { text-align: center; font: bold 13px ui-monospace, monospace; min-width: 2.6rem;
  padding: 0.3rem 0.2rem; }
table.heat th.len { text-align: center; font-weight: normal; color: var(--muted); }
.ran { color: var(--ran); } .oom { color: var(--oom); } .lifted { color: var(--lifted); }
.backstop { color: var(--backstop); } .guard { color: var(--guard); }
.record { color: var(--record); } .timeout { color: var(--timeout); }
.failed { color: var(--failed); } .skipped { color: var(--skipped); }
.untried { color: var(--untried); }
td.ran { background: var(--ran-bg); } td.oom { background: var(--oom-bg); }
td.lifted { background: var(--lifted-bg); }
td.backstop { background: var(--backstop-bg); } td.guard { background: var(--guard-bg); }
td.record { background: var(--record-bg); } td.timeout { background: var(--timeout-bg); }
td.failed { background: var(--failed-bg); } td.skipped { background: var(--skipped-bg); }
.legend { display: flex; flex-wrap: wrap; gap: 0.3rem 1.1rem; margin: 0.4rem 0 0.8rem;
  padding: 0; list-style: none; }
.legend li { display: flex; align-items: center; gap: 0.35rem; }
.swatch { display: inline-block; min-width: 1.5rem; height: 1.25rem; border: 1px solid var(--line);
  font: bold 12px/1.2rem ui-monospace, monospace; text-align: center; }
.key { display: inline-block; width: 1.4rem; height: 0.25rem; border-radius: 2px; }
svg { display: block; max-width: 100%; height: auto; margin: 0.3rem 0; }
svg text { fill: var(--fg); font: 11px system-ui, sans-serif; }
svg .tick { fill: var(--muted); } svg .title { fill: var(--muted); font-size: 11px; }
svg .axis { stroke: var(--muted); } svg .gridline { stroke: var(--grid); }
svg .fix { stroke: var(--fix); stroke-dasharray: 4 3; } svg .fixlabel { fill: var(--fix); }
svg .series { fill: none; stroke-width: 2; }
span.run { display: inline-block; margin: 0.1rem 0.15rem; padding: 0 0.3rem;
  border: 1px solid var(--line); font: bold 12px ui-monospace, monospace; white-space: nowrap; }
span.ran { background: var(--ran-bg); } span.oom { background: var(--oom-bg); }
span.lifted { background: var(--lifted-bg); }
span.backstop { background: var(--backstop-bg); } span.guard { background: var(--guard-bg); }
span.record { background: var(--record-bg); } span.timeout { background: var(--timeout-bg); }
span.failed { background: var(--failed-bg); } span.skipped { background: var(--skipped-bg); }
.h0 { background: var(--h0); } .h1 { background: var(--h1); } .h2 { background: var(--h2); }
.h3 { background: var(--h3); } .h4 { background: var(--h4); }
@media (max-width: 700px) {
  /* The plots scale down with the page: their text scales up to stay about 10 px. */
  svg text, svg .title { font-size: 18px; }
}
"""
# One colour per machine class, in the report's class order (then round again).
_MACHINE_COLOURS = 8

_CLASS = {
    Outcome.RAN: "ran",
    Outcome.OOM: "oom",
    Outcome.LIFTED: "lifted",
    Outcome.BACKSTOP: "backstop",
    Outcome.GUARD: "guard",
    Outcome.RECORD: "record",
    Outcome.TIMEOUT: "timeout",
    Outcome.FAILED: "failed",
    Outcome.SKIPPED: "skipped",
    Outcome.NOT_TRIED: "untried",
}


def target_problem(path: Path, searched: Sequence[Path], record: RecordFile) -> str | None:
    """Why the page must not go to `path`, found before anything is read: the OOM record or a
    file that belongs to it, or a CSV the report reads; the page would wipe that evidence."""
    if record.owns(path):
        return (
            f"--html {path} is the OOM record {record.shown_as} or a file beside it; writing the "
            "page there would wipe it; pass another --html"
        )
    reserved = reserved_target(path, "--html", "the page")
    if reserved is not None:
        return reserved
    real = Path(os.path.realpath(path))
    for where in searched:
        top = Path(os.path.realpath(where))
        if real == top or (real.suffix.lower() == ".csv" and top in real.parents):
            return (
                f"--html {path} is a CSV this report reads; writing the page there would wipe "
                "it; pass another --html"
            )
    return None


def write_html(report: Report, path: Path) -> None:
    """Write the page to `path`; OomrecError (one line) when it cannot be written. A FIFO or a
    device (`/dev/stdout` in a pipe) is written only while something reads it: opened without
    blocking, one no process reads is refused rather than waited on."""
    # A record line's undecodable bytes (surrogates) escaped, as on a terminal.
    page = render(report).encode("utf-8", errors="backslashreplace")
    try:
        regular = not path.exists() or path.is_file()
        if regular:
            # All or nothing: a full disk leaves the previous page, not a truncated one. The
            # file itself is replaced, so a symlink to it stays one.
            replace_file(Path(os.path.realpath(path)), page, create_folder=False)
            return
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OomrecError(
                f"--html {path} is a FIFO no process reads; start its reader first, or give "
                "--html a file path"
            ) from None
        raise _cannot_write(path, exc) from None
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=True) as out:
            out.write(page)
    except OSError as exc:
        raise _cannot_write(path, exc) from None


def _cannot_write(path: Path, exc: OSError) -> OomrecError:
    return OomrecError(
        f"cannot write {path}: {exc.strerror or exc}; give --html a writable file path"
    )


def render(report: Report) -> str:
    return "\n".join(_page(report)) + "\n"


def _page(report: Report) -> Iterator[str]:
    yield "<!DOCTYPE html>"
    yield '<html lang="en"><head><meta charset="utf-8">'
    yield '<meta name="viewport" content="width=device-width, initial-scale=1">'
    yield "<title>OOM frontier</title>"
    yield f"<style>{_CSS}</style></head><body>"
    yield "<h1>OOM frontier</h1>"
    head = short_commit(report.head) if report.head else "no git"
    yield (
        f"<p>At {escape(head)}: {_count(report.files_read, 'CSV file')}, "
        f"{_count(report.rows, 'row')}, "
        f"{_count(len(report.ooms), 'OOM')}, {len(report.contradictions)} contradicted.</p>"
    )
    yield from _matrix(report)
    yield from _contradictions(report)
    yield from _regressions(report)
    yield from _headroom(report)
    yield "<h2>Per machine class: model x prompt length</h2>"
    yield from _legend()
    for machine in report.machines:
        yield from _grid(report, machine)
    yield "<h2>Largest length that ran, over time</h2>"
    yield (
        "<p>A line per machine class (the largest length that ran on each date), "
        f"&#x2715; an OOM, dashed lines the {escape('OOM-Fix')} commits for the model.</p>"
    )
    series, crosses = _by_model(report)
    for model in report.models:
        yield from _timeline(report, model, series.get(model, {}), crosses.get(model, []))
    # No `<` at all inside the data block: nothing in it can end it or open a tag.
    data = json.dumps(report.to_json(), sort_keys=True).replace("<", "\\u003c")
    yield f'<script type="application/json" id="{DATA_ID}">{data}</script>'
    yield "</body></html>"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _matrix(report: Report) -> Iterator[str]:
    yield "<h2>Frontier: model x machine class</h2>"
    # Each table is named (aria-label) for a screen reader's list of tables.
    yield (
        '<table class="matrix" aria-label="Frontier, model by machine class">'
        "<thead><tr><th>model</th>"
    )
    yield "".join(f"<th>{escape(m.id)}</th>" for m in report.machines) + "</tr></thead><tbody>"
    for model in report.models:
        cells = []
        for m in report.machines:
            f = report.frontier.get((model, m))
            if f is None:
                tip = f"{model} on {m.id}: never tried"
                cells.append(f'<td class="untried" title="{escape(tip)}">-</td>')
            else:
                kind = (
                    "oom"
                    if f.oom_min
                    else "guard"
                    if f.guard_min
                    else "ran"
                    if f.ran_max
                    else "untried"
                )
                cells.append(f'<td class="{kind}">{escape(frontier_text(f))}</td>')
        yield f"<tr><th>{escape(model)}</th>{''.join(cells)}</tr>"
    yield "</tbody></table>"


def _contradictions(report: Report) -> Iterator[str]:
    if not report.contradictions:
        return
    yield "<h2>Contradicted OOMs (kept: re-test them with --ignore-record)</h2><ul>"
    for c in report.contradictions:
        ev = c.evidence
        yield (
            f"<li>{escape(ev.model)} ran out of memory at {ev.length} on {escape(ev.machine.id)} "
            f"({escape(ev.seen.where)}, {escape(ev.seen.date or '?')}) and ran at {c.length} on "
            f"{escape(c.seen.date or '?')} ({escape(c.seen.where)})</li>"
        )
    yield "</ul>"


def _regressions(report: Report) -> Iterator[str]:
    if not report.regressions:
        return
    yield "<h2>Memory regressions (ran at A, stopped at a later B: something in A..B)</h2><ul>"
    for r in report.regressions:
        yield f'<li class="regression">{escape(r.line())}</li>'
    yield "</ul>"


# Headroom bands (peak / limit), a colour each, light to dark as the cell nears its limit.
_BANDS = ((0.5, "h0"), (0.7, "h1"), (0.85, "h2"), (0.95, "h3"), (float("inf"), "h4"))


def _band(share: float) -> str:
    return next(css for top, css in _BANDS if share < top)


def _headroom(report: Report) -> Iterator[str]:
    """A heatmap of each swept cell's peak against its limit (report/peaks.py): per class, a
    row per model, a column per length a sweep measured."""
    if not report.peaks:
        return
    yield "<h2>Headroom: each swept cell's peak against the memory it ran under</h2>"
    yield (
        '<ul class="legend">'
        + "".join(
            f'<li><span class="swatch {css}">&nbsp;</span>{label}</li>'
            for css, label in (
                ("h0", "under 50%"),
                ("h1", "50-70%"),
                ("h2", "70-85%"),
                ("h3", "85-95%"),
                ("h4", "95% or more"),
            )
        )
        + "</ul>"
    )
    by_class: dict[Machine, dict[str, dict[int, Peak]]] = {}
    for (model, machine, length), runs in report.peaks.items():
        by_class.setdefault(machine, {}).setdefault(model, {})[length] = runs[-1]
    for machine in sorted(by_class, key=lambda m: m.id):
        models = by_class[machine]
        lengths = sorted({n for cells in models.values() for n in cells})
        yield f"<h3>{escape(machine.id)}</h3>"
        label = f"Headroom on {machine.id}, model by prompt length"
        yield (
            f'<div class="wrap"><table class="heat" aria-label="{escape(label)}">'
            "<thead><tr><th>model</th>"
        )
        yield "".join(f'<th class="len">{escape(short_length(n))}</th>' for n in lengths)
        yield "</tr></thead><tbody>"
        for model in sorted(models):
            cells = []
            for n in lengths:
                peak = models[model].get(n)
                if peak is None or peak.headroom is None:
                    tip = f"{model} at {n} on {machine.id}: no peak measured"
                    cells.append(f'<td class="untried" title="{escape(tip)}">.</td>')
                    continue
                share = peak.headroom
                # Under 10% with a decimal: a small model on a big host is not shown as 0%.
                shown = f"{share:.1%}" if share < 0.1 else f"{share:.0%}"
                title = (
                    f"{model} at {n} on {machine.id}: peak {show_bytes(peak.peak_bytes)} of "
                    f"{show_bytes(peak.limit_bytes or 0)} ({shown}), commit "
                    f"{short_commit(peak.commit)}"
                )
                cells.append(f'<td class="{_band(share)}" title="{escape(title)}">{shown}</td>')
            yield f"<tr><th>{escape(model)}</th>{''.join(cells)}</tr>"
        yield "</tbody></table></div>"


def _legend() -> Iterator[str]:
    yield '<ul class="legend">'
    for outcome, glyph in GLYPHS.items():
        css = _CLASS[outcome]
        yield (
            f'<li><span class="swatch {css}" style="background: var(--{css}-bg)">'
            f"{escape(glyph)}</span>{escape(LEGEND[outcome])}</li>"
        )
    yield (
        f'<li><span class="swatch">{CONTRADICTED_GLYPH}</span>after a glyph: contradicted by a '
        "later run</li></ul>"
    )


def _grid(report: Report, machine: Machine) -> Iterator[str]:
    if not is_matrix(report, machine):
        yield from _runs(report, machine)
        return
    rows = grid_cells(report, machine)
    if not rows:
        return
    yield f"<h3>{escape(machine.id)}</h3>"
    label = f"Outcomes on {machine.id}, model by prompt length"
    yield (
        f'<div class="wrap"><table class="heat" aria-label="{escape(label)}">'
        "<thead><tr><th>model</th>"
    )
    yield "".join(
        f'<th class="len" title="{n} tokens">{short_length(n)}</th>'
        for n in report.lengths[machine]
    )
    yield "</tr></thead><tbody>"
    for model, glyphs in rows:
        cells = []
        for n, glyph in zip(report.lengths[machine], glyphs, strict=True):
            outcome = next(o for o, g in GLYPHS.items() if g == glyph.rstrip(CONTRADICTED_GLYPH))
            tip = f"{model} at {n} tokens on {machine.id}: {LEGEND[outcome]}"
            seen = report.seen.get((model, machine, n))
            if seen is not None:
                tip += (
                    f"\n{seen.where}, {seen.date or 'no date'}, commit {short_commit(seen.commit)}"
                )
            if glyph.endswith(CONTRADICTED_GLYPH):
                tip += "\ncontradicted by a later run at this length or more"
            cells.append(
                f'<td class="{_CLASS[outcome]}" title="{escape(tip)}">{escape(glyph)}</td>'
            )
        yield f"<tr><th>{escape(model)}</th>{''.join(cells)}</tr>"
    yield "</tbody></table></div>"


def _runs(report: Report, machine: Machine) -> Iterator[str]:
    """A sparse class's grid: per model its runs of one outcome, a coloured glyph each (a column
    per length would be models x lengths, nearly all never tried)."""
    folded = run_rows(report, machine)
    if not folded:
        return
    yield f"<h3>{escape(machine.id)}</h3>"
    label = f"Outcomes on {machine.id}, runs of one outcome per model"
    yield (
        f'<table class="runs" aria-label="{escape(label)}"><thead><tr><th>model</th>'
        f"<th>{escape(RUNS_HEADER)}</th></tr></thead><tbody>"
    )
    for model, runs in folded:
        cells = []
        for run in runs:
            tip = (
                f"{model} on {machine.id}: {LEGEND[run.outcome]} at each of the {run.size} "
                f"length(s) tried from {run.start} to {run.end} tokens"
            )
            if run.flagged:
                tip += "\ncontradicted by a later run at this length or more"
            cells.append(
                f'<span class="run {_CLASS[run.outcome]}" title="{escape(tip)}">'
                f"{escape(run_text(run))}</span>"
            )
        yield f"<tr><th>{escape(model)}</th><td>{' '.join(cells)}</td></tr>"
    yield "</tbody></table>"
    yield f"<p>{escape(RUNS_NOTE)}</p>"


# The timeline's size and margins (px): room left for the length labels and the axis title,
# below for the dates, above for the fix labels (a row each, up to _FIX_ROWS).
_W, _H = 760, 250
_LEFT, _RIGHT, _BOTTOM, _FIX_ROW, _FIX_ROWS = 70, 44, 44, 14, 3
# An estimate of an 11px label's width per character: generous, so labels kept apart by it do
# not touch (tests/test_report_html.py measures the real boxes in a browser).
_CHAR_W = 7.0


def _by_model(
    report: Report,
) -> tuple[dict[str, dict[Machine, list[tuple[str, str, int, str]]]], dict[str, list[Judged]]]:
    """Per model, its timeline's series and the OOMs drawn as crosses, gathered in one pass: one
    cross per (class, date, in play or not), the smallest length, as the series keeps the largest
    that ran per date (a record of a million lines is a million OOMs, not a million crosses)."""
    series: dict[str, dict[Machine, list[tuple[str, str, int, str]]]] = {}
    for (model, machine), points in report.timeline.items():
        series.setdefault(model, {})[machine] = points
    least: dict[tuple[str, Machine, str, bool], Judged] = {}
    for j in report.ooms:
        ev = j.evidence
        if not ev.seen.date:
            continue
        key = (ev.model, ev.machine, ev.seen.date, j.applies)
        held = least.get(key)
        if held is None or ev.length < held.evidence.length:
            least[key] = j
    crosses: dict[str, list[Judged]] = {}
    for (model, *_), j in least.items():
        crosses.setdefault(model, []).append(j)
    return series, crosses


def _timeline(
    report: Report,
    model: str,
    series: dict[Machine, list[tuple[str, str, int, str]]],
    ooms: list[Judged],
) -> Iterator[str]:
    fixes = sorted((f for f in report.fixes_for(model) if f.date), key=lambda f: f.date)
    if not series and not ooms:
        return
    colour = {m: f"var(--m{i % _MACHINE_COLOURS})" for i, m in enumerate(report.machines)}
    dates = [d for pts in series.values() for d, *_ in pts]
    dates += [j.evidence.seen.date or "" for j in ooms] + [f.date for f in fixes]
    days = [Date.fromisoformat(d).toordinal() for d in dates]
    lo_day, hi_day = min(days), max(days)
    if lo_day == hi_day:
        # One day: centred, a day either side, so the axis does not print one date twice.
        lo_day, hi_day = lo_day - 1, hi_day + 1
    lengths = [n for pts in series.values() for _, _, n, _ in pts] + [
        j.evidence.length for j in ooms
    ]
    lo_pow = math.floor(math.log2(max(1, min(lengths))))
    hi_pow = math.ceil(math.log2(max(1, max(lengths))))
    # Room at either end: a point at the smallest length sits above the date axis, not on it
    # (half a power of two); a series of one length is centred between the powers either side,
    # not at the foot of an empty range twice its size.
    if hi_pow == lo_pow:
        lo_pow, hi_pow = lo_pow - 1, hi_pow + 1
        lo_axis, hi_axis = float(lo_pow), float(hi_pow)
    else:
        lo_axis, hi_axis = lo_pow - 0.5, hi_pow + 0.5
    fix_rows = _fix_rows(fixes, lo_day, hi_day)
    top = 10 + _FIX_ROW * (max((r for r in fix_rows if r is not None), default=-1) + 1)
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - top - _BOTTOM

    def x(day: str | int) -> float:
        ordinal = Date.fromisoformat(day).toordinal() if isinstance(day, str) else day
        return _LEFT + (ordinal - lo_day) / (hi_day - lo_day) * plot_w

    def y(n: int) -> float:
        return top + plot_h - (math.log2(max(1, n)) - lo_axis) / (hi_axis - lo_axis) * plot_h

    title = f"{model}: the largest prompt length that ran, per date and machine class"
    yield f"<h3>{escape(model)}</h3>"
    yield (
        f'<svg width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" role="img">'
        f"<title>{escape(title)}</title>"
    )
    # The length axis: a labelled tick per power of two (every other one past eight).
    step = 1 if hi_pow - lo_pow <= 8 else 2
    for p in range(lo_pow, hi_pow + 1, step):
        ty = y(2**p)
        yield (
            f'<line class="gridline" x1="{_LEFT}" y1="{ty:.1f}" x2="{_W - _RIGHT}" y2="{ty:.1f}"/>'
        )
        yield (
            f'<text class="tick ylabel" x="{_LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">'
            f"{short_length(2**p)}</text>"
        )
    yield (
        f'<text class="title ytitle" transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" '
        'text-anchor="middle">prompt tokens (log)</text>'
    )
    yield f'<line class="axis" x1="{_LEFT}" y1="{top}" x2="{_LEFT}" y2="{top + plot_h}"/>'
    # The date axis: evenly spaced dates, as many as fit without touching.
    base = top + plot_h
    yield f'<line class="axis" x1="{_LEFT}" y1="{base}" x2="{_W - _RIGHT}" y2="{base}"/>'
    ticks = _date_ticks(lo_day, hi_day, plot_w)
    for ordinal in ticks:
        tx = x(ordinal)
        label = Date.fromordinal(ordinal).isoformat()
        # The ends' labels start at the length axis and end at the right edge, clear of the
        # length labels beside the axis.
        anchor = {ticks[0]: "start", ticks[-1]: "end"}.get(ordinal, "middle")
        yield f'<line class="axis" x1="{tx:.1f}" y1="{base}" x2="{tx:.1f}" y2="{base + 4}"/>'
        yield (
            f'<text class="tick xlabel" x="{tx:.1f}" y="{base + 16}" text-anchor="{anchor}">'
            f"{label}</text>"
        )
    yield (
        f'<text class="title xtitle" x="{_LEFT + plot_w / 2:.1f}" y="{_H - 6}" '
        'text-anchor="middle">date</text>'
    )
    for f, row in zip(fixes, fix_rows, strict=True):
        fx = x(f.date)
        label = _fix_label(f)
        width = len(label) * _CHAR_W
        anchor, lx = ("end", fx - 3) if fx + 3 + width > _W else ("start", fx + 3)
        named = (
            f"<title>fix {escape(f.sha)} ({escape(f.date)}): {escape(f.subject)}; "
            f"OOM-Fix: {escape(', '.join(f.globs))}</title>"
        )
        ly = 10 + _FIX_ROW * (row or 0) + 9
        yield (
            f'<line class="fix" x1="{fx:.1f}" y1="{ly - 9 if row is not None else top}" '
            f'x2="{fx:.1f}" y2="{base}">{named}</line>'
        )
        if row is not None:
            yield (
                f'<text class="fixlabel" x="{lx:.1f}" y="{ly}" text-anchor="{anchor}">'
                f"{escape(label)}{named}</text>"
            )
    # Out of play under the runs: a lifted cross never hides a later success at its point.
    yield from _crosses((j for j in ooms if not j.applies), colour, x, y)
    for machine, pts in series.items():
        stroke = colour.get(machine, "var(--m7)")
        coords = " ".join(f"{x(d):.1f},{y(n):.1f}" for d, _, n, _ in pts)
        yield f'<polyline class="series" style="stroke: {stroke}" points="{coords}"/>'
        for d, commit, n, where in pts:
            tip = f"{machine.id}, {d}: ran at {n} tokens\n{where}, commit {short_commit(commit)}"
            yield (
                f'<circle cx="{x(d):.1f}" cy="{y(n):.1f}" r="3.5" style="fill: {stroke}">'
                f"<title>{escape(tip)}</title></circle>"
            )
    # In play over the runs: hiding an OOM is the worse error.
    yield from _crosses((j for j in ooms if j.applies), colour, x, y)
    yield "</svg>"
    shown = [
        m for m in report.machines if m in series or any(j.evidence.machine == m for j in ooms)
    ]
    yield '<ul class="legend">'
    for m in shown:
        yield f'<li><span class="key" style="background: {colour[m]}"></span>{escape(m.id)}</li>'
    yield "<li>&#x2715; out of memory (colour: its machine class; dashed: out of play)</li>"
    if fixes:
        yield '<li><span class="fixlabel">- - -</span> an OOM-Fix commit for this model</li>'
    yield "</ul>"


def _crosses(
    ooms: Iterable[Judged],
    colour: dict[Machine, str],
    x: Callable[[str], float],
    y: Callable[[int], float],
) -> Iterator[str]:
    """An OOM's cross: solid when in play, dashed when out of play."""
    for j in ooms:
        ev = j.evidence
        stroke = colour.get(ev.machine, "var(--oom)")
        ox, oy = x(ev.seen.date or ""), y(ev.length)
        state = "in play" if j.applies else f"out of play ({j.status})"
        tip = (
            f"{ev.machine.id}, {ev.seen.date}: out of memory at {ev.length} tokens, {state}\n"
            f"{ev.seen.where}, commit {short_commit(ev.seen.commit)}"
        )
        dash = "" if j.applies else "; stroke-dasharray: 2 2"
        yield (
            f'<path class="cross{"" if j.applies else " lifted"}" '
            f'd="M{ox - 5:.1f},{oy - 5:.1f}L{ox + 5:.1f},{oy + 5:.1f}'
            f'M{ox - 5:.1f},{oy + 5:.1f}L{ox + 5:.1f},{oy - 5:.1f}" '
            f'style="stroke: {stroke}; stroke-width: 2.5{dash}"><title>{escape(tip)}</title></path>'
        )


def _fix_label(fix: FixMarker) -> str:
    subject = fix.subject if len(fix.subject) <= 28 else fix.subject[:27] + "\u2026"
    return f"fix {short_commit(fix.sha)} {subject}".rstrip()


def _fix_rows(fixes: Sequence[FixMarker], lo_day: int, hi_day: int) -> list[int | None]:
    """A row for each fix's label, so no two labels overlap: the first row whose labels end
    before this one starts; None when all _FIX_ROWS rows are taken there (the fix keeps its
    line, and its name in the line's hover title)."""
    plot_w = _W - _LEFT - _RIGHT
    ends: list[float] = []
    rows: list[int | None] = []
    for fix in fixes:
        day = Date.fromisoformat(fix.date).toordinal()
        start = _LEFT + (day - lo_day) / (hi_day - lo_day) * plot_w
        width = len(_fix_label(fix)) * _CHAR_W + 6
        if start + 3 + width > _W:
            # Drawn to the left of its line.
            start -= width + 6
        row = next((i for i, end in enumerate(ends) if end < start), None)
        if row is None and len(ends) < _FIX_ROWS:
            row = len(ends)
            ends.append(0.0)
        if row is not None:
            ends[row] = start + width
        rows.append(row)
    return rows


def _date_ticks(lo_day: int, hi_day: int, plot_w: float) -> list[int]:
    """Evenly spaced days from `lo_day` to `hi_day`: as many as fit (a label is ~75 px) and no
    two alike."""
    most = max(2, min(7, int(plot_w // 110)))
    span = hi_day - lo_day
    count = min(most, span + 1)
    return sorted({lo_day + round(i * span / (count - 1)) for i in range(count)})
