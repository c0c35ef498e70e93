"""The OOM frontier as one self-contained HTML page: inline CSS and SVG, no script, font, image
or link to load, so it opens offline and from an attachment. Every colour has a glyph or a word
beside it, and both colour schemes (light, dark) are readable.

The report's JSON rides along in a `<script type="application/json">` data block (never run),
so the page holds exactly the facts `oomrec report --json` prints.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Sequence
from datetime import date as Date
from html import escape
from pathlib import Path

from oomrec.core.errors import OomrecError
from oomrec.core.records import RecordFile, short_commit
from oomrec.report.frontier import CONTRADICTED_GLYPH, GLYPHS, LEGEND, Machine, Outcome, Report
from oomrec.report.text import frontier_text, grid_cells, short_length

DATA_ID = "oomrec-report"

_CSS = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1a1a1a; --line: #c8c8c8;
  --ran: #1b7f3b; --oom: #c62828; --lifted: #9a6700; --backstop: #8e24aa; --record: #9a6700;
  --timeout: #00838f; --failed: #1f5fbf; --skipped: #1f5fbf; --untried: #666666; --fix: #6a3fb5; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #16181c; --fg: #e8e8e8; --line: #4a4d55; --ran: #5cd68a; --oom: #ff7b72;
    --lifted: #e3b341; --backstop: #d2a8ff; --record: #e3b341; --timeout: #56d4dd;
    --failed: #79b8ff; --skipped: #79b8ff; --untried: #9a9a9a; --fix: #c9a7ff; }
}
body { background: var(--bg); color: var(--fg); font: 14px/1.4 system-ui, sans-serif;
  margin: 1.5rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
th, td { border: 1px solid var(--line); padding: 0.2rem 0.45rem; text-align: left;
  vertical-align: top; }
td.g { text-align: center; font-family: ui-monospace, monospace; font-weight: bold; }
.ran { color: var(--ran); } .oom { color: var(--oom); } .lifted { color: var(--lifted); }
.backstop, .guard { color: var(--backstop); } .record { color: var(--record); }
.timeout { color: var(--timeout); } .failed, .skipped { color: var(--failed); }
.untried { color: var(--untried); }
svg text { fill: var(--fg); font: 11px system-ui, sans-serif; }
svg .axis { stroke: var(--line); } svg .fix { stroke: var(--fix); stroke-dasharray: 4 3; }
svg .fixlabel { fill: var(--fix); }
svg .series { fill: none; stroke: var(--ran); stroke-width: 2; }
svg .dot { fill: var(--ran); } svg .ox { stroke: var(--oom); stroke-width: 2; }
"""

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
    """Write the page to `path`; OomrecError (one line) when it cannot be written."""
    try:
        # A record line's undecodable bytes (surrogates) escaped, as on a terminal.
        path.write_text(render(report), encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise OomrecError(
            f"cannot write {path}: {exc.strerror or exc}; give --html a writable file path"
        ) from None


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
        f"<p>At {escape(head)}: {report.files_read} CSV files, {report.rows} rows, "
        f"{len(report.ooms)} OOMs, {len(report.contradictions)} contradicted.</p>"
    )
    yield from _matrix(report)
    yield from _contradictions(report)
    yield "<h2>Per machine class: model x prompt length</h2>"
    yield from _legend()
    for machine in report.machines:
        yield from _grid(report, machine)
    yield "<h2>Largest length that ran, over time</h2>"
    yield (
        "<p>A line per machine class (the largest length that ran on each date), "
        f"&#x2715; an OOM, dashed lines the {escape('OOM-Fix')} commits for the model.</p>"
    )
    for model in report.models:
        yield from _timeline(report, model)
    # No `<` at all inside the data block: nothing in it can end it or open a tag.
    data = json.dumps(report.to_json(), sort_keys=True).replace("<", "\\u003c")
    yield f'<script type="application/json" id="{DATA_ID}">{data}</script>'
    yield "</body></html>"


def _matrix(report: Report) -> Iterator[str]:
    yield "<h2>Frontier: model x machine class</h2>"
    yield '<table class="matrix"><thead><tr><th>model</th>'
    yield "".join(f"<th>{escape(m.id)}</th>" for m in report.machines) + "</tr></thead><tbody>"
    for model in report.models:
        cells = []
        for m in report.machines:
            f = report.frontier.get((model, m))
            if f is None:
                cells.append('<td class="untried">-</td>')
            else:
                kind = "oom" if f.oom_min else "ran" if f.ran_max else "untried"
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


def _legend() -> Iterator[str]:
    yield "<p>"
    yield " &middot; ".join(
        f'<span class="{_CLASS[o]}"><b>{escape(g)}</b></span> {escape(LEGEND[o])}'
        for o, g in GLYPHS.items()
    )
    yield f" &middot; <b>{CONTRADICTED_GLYPH}</b> after a glyph: contradicted by a later run</p>"


def _grid(report: Report, machine: Machine) -> Iterator[str]:
    rows = grid_cells(report, machine)
    if not rows:
        return
    yield f"<h3>{escape(machine.id)}</h3>"
    yield '<table class="grid"><thead><tr><th>model</th>'
    yield "".join(f"<th>{short_length(n)}</th>" for n in report.lengths[machine]) + "</tr></thead>"
    yield "<tbody>"
    for model, glyphs in rows:
        cells = []
        for n, glyph in zip(report.lengths[machine], glyphs, strict=True):
            outcome = next(o for o, g in GLYPHS.items() if g == glyph.rstrip(CONTRADICTED_GLYPH))
            label = f"{model} at {n}: {outcome.value}"
            cells.append(
                f'<td class="g {_CLASS[outcome]}" title="{escape(label)}">{escape(glyph)}</td>'
            )
        yield f"<tr><th>{escape(model)}</th>{''.join(cells)}</tr>"
    yield "</tbody></table>"


_W, _H, _PAD = 640, 180, 48


def _timeline(report: Report, model: str) -> Iterator[str]:
    series = {m: pts for (mo, m), pts in report.timeline.items() if mo == model}
    ooms = [j for j in report.ooms if j.evidence.model == model and j.evidence.seen.date]
    fixes = [f for f in report.fixes_for(model) if f.date]
    if not series and not ooms:
        return
    dates = [d for pts in series.values() for d, _, _ in pts]
    dates += [j.evidence.seen.date or "" for j in ooms] + [f.date for f in fixes]
    days = [Date.fromisoformat(d).toordinal() for d in dates]
    lengths = [n for pts in series.values() for _, _, n in pts] + [j.evidence.length for j in ooms]
    lo_day, hi_day = min(days), max(days)
    lo_len, hi_len = math.log2(max(1, min(lengths))), math.log2(max(2, max(lengths)))

    def x(day: str) -> float:
        span = max(1, hi_day - lo_day)
        return _PAD + (Date.fromisoformat(day).toordinal() - lo_day) / span * (_W - 2 * _PAD)

    def y(n: int) -> float:
        span = max(1.0, hi_len - lo_len)
        return _H - 24 - (math.log2(max(1, n)) - lo_len) / span * (_H - 48)

    yield f"<h3>{escape(model)}</h3>"
    yield (
        f'<svg width="{_W}" height="{_H}" role="img" '
        f'viewBox="0 0 {_W} {_H}"><title>{escape(model)}: largest length that ran</title>'
    )
    yield f'<line class="axis" x1="{_PAD}" y1="{_H - 24}" x2="{_W - _PAD}" y2="{_H - 24}"/>'
    yield f'<text x="{_PAD}" y="{_H - 6}">{escape(min(dates))}</text>'
    yield f'<text x="{_W - _PAD}" y="{_H - 6}" text-anchor="end">{escape(max(dates))}</text>'
    for f in fixes:
        fx = x(f.date)
        yield f'<line class="fix" x1="{fx:.1f}" y1="12" x2="{fx:.1f}" y2="{_H - 24}"/>'
        yield (
            f'<text class="fixlabel" x="{fx + 3:.1f}" y="12">fix {escape(short_commit(f.sha))}'
            f"<title>{escape(f.subject)} ({escape(', '.join(f.globs))})</title></text>"
        )
    for i, (machine, pts) in enumerate(series.items()):
        coords = " ".join(f"{x(d):.1f},{y(n):.1f}" for d, _, n in pts)
        yield f'<polyline class="series" points="{coords}"/>'
        for d, commit, n in pts:
            tip = f"{machine.id} {d} {short_commit(commit)}: ran at {n}"
            yield (
                f'<circle class="dot" cx="{x(d):.1f}" cy="{y(n):.1f}" r="3">'
                f"<title>{escape(tip)}</title></circle>"
            )
        last_d, _, last_n = pts[-1]
        label = f"{machine.id} ok <={short_length(last_n)}"
        yield (
            f'<text x="{min(x(last_d) + 5, _W - _PAD):.1f}" y="{y(last_n) - 4 - 12 * i:.1f}">'
            f"{escape(label)}</text>"
        )
    for j in ooms:
        ox, oy = x(j.evidence.seen.date or ""), y(j.evidence.length)
        tip = f"{j.evidence.machine.id} {j.evidence.seen.date}: oom at {j.evidence.length}"
        yield (
            f'<path class="ox" d="M{ox - 4:.1f},{oy - 4:.1f}L{ox + 4:.1f},{oy + 4:.1f}'
            f'M{ox - 4:.1f},{oy + 4:.1f}L{ox + 4:.1f},{oy - 4:.1f}"><title>{escape(tip)}'
            "</title></path>"
        )
    yield "</svg>"
