"""The report is bounded (issue 41): a sparse grid (many models, each tried at lengths of its
own) makes output that grows with its rows, not with models x lengths; and the grid folded into
runs of one outcome keeps every OOM and every success boundary, so the frontier is the one the
cells give."""

from __future__ import annotations

import itertools
import json
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core.records import OomRecord
from oomrec.core.units import GIB
from oomrec.report.frontier import (
    CellRows,
    Evidence,
    Machine,
    Outcome,
    Scan,
    Seen,
    build,
    contradictions,
    record_evidence,
)
from oomrec.report.runs import untried
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.test_report import _run, csv_text, failed, ran

Cli = Callable[..., CliResult]
GB10 = Machine("gb10")


def _sparse(repo: Repo, models: int, per_model: int, seed: int) -> int:
    """A CSV of `models` models, each tried at `per_model` random lengths no other model has,
    one row in four an OOM: the grid of a harness run over random prompt lengths."""
    rng = random.Random(seed)
    lengths = rng.sample(range(1, 1_000_000), models * per_model)
    rows = []
    for i, n in enumerate(lengths):
        model = f"model-{i % models:03d}-4bit"
        if i % 4 == 3:
            rows.append(failed(model, n, "2026-08-01", "SKIP:oom"))
        else:
            rows.append(ran(model, n, "2026-08-02"))
    folder = repo.path / "benchmarks"
    folder.mkdir(exist_ok=True)
    (folder / "cuda_gb10_sparse.csv").write_text(csv_text(*rows), encoding="utf-8")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", f"{models} models")
    return len(rows)


def _sizes(cli: Cli, tmp_path: Path) -> dict[str, int]:
    page = tmp_path / "page.html"
    done = cli("report", "--json", "--html", str(page))
    assert done.exit_code == 0, done.stderr
    data = json.loads(done.stdout)
    grid = cli("report", "--machine", "gb10")
    assert grid.exit_code == 0, grid.stderr
    text = page.read_text(encoding="utf-8")
    return {
        "cells": len(data["cells"]),
        "never_tried": sum(len(f["never_tried"]) for f in data["frontier"]),
        "json": len(done.stdout),
        "page cells": len(re.findall(r"<td|<span class=\"run", text)),
        "page": len(text),
        "grid": len(grid.stdout),
    }


def test_a_sparse_grid_grows_with_its_rows_not_models_x_lengths(
    repo: Repo, cli: Cli, tmp_path: Path
) -> None:
    rows = _sparse(repo, 40, 10, seed=1)
    small = _sizes(cli, tmp_path)
    # Each model's runs are its own lengths at most; its untried ranges one more.
    assert small["cells"] <= rows
    assert small["never_tried"] <= rows + 40
    # Twice the models, twice the rows: models x lengths would be four times the slots.
    more = _sparse(repo, 80, 10, seed=2) + rows
    big = _sizes(cli, tmp_path)
    assert big["cells"] <= more and big["never_tried"] <= more + 120
    for what in small:
        assert big[what] <= 3.3 * small[what], (what, small[what], big[what])


def test_a_sparse_grid_is_drawn_as_runs_that_name_each_oom(repo: Repo, cli: Cli) -> None:
    _sparse(repo, 40, 10, seed=3)
    lines = cli("report", "--machine", "gb10").stdout.splitlines()
    assert lines[1].split(None, 1) == ["model", "lengths tried, equal outcomes folded"]
    drawn: dict[str, list[tuple[int, int, str]]] = {}
    for line in lines[2:]:
        if line.startswith("model-"):
            model, *items = line.split("  ")
            for item in filter(None, (i.strip() for i in items)):
                span, glyph = item.split(" ")
                start, _, end = span.partition("..")
                drawn.setdefault(model, []).append((int(start), int(end or start), glyph))
    data = json.loads(cli("report", "--json").stdout)
    assert len(drawn) == 40 and len(data["ooms"]) == 100
    # The text and the JSON are the same runs, and each OOM is in one marked X in both.
    cells = {(c["model"], c["from"], c["to"]): c["outcome"] for c in data["cells"]}
    assert {(m, a, b) for m, runs in drawn.items() for a, b, _ in runs} == set(cells)
    for oom in data["ooms"]:
        (glyph,) = [g for a, b, g in drawn[oom["model"]] if a <= oom["length"] <= b]
        assert glyph.startswith("X")


def test_a_dense_grid_keeps_its_matrix(repo: Repo, cli: Cli) -> None:
    folder = repo.path / "benchmarks"
    folder.mkdir()
    rows = [ran(f"m{i}-4bit", 2**k, "2026-08-01") for i in range(3) for k in range(9, 16)]
    (folder / "cuda_gb10_dense.csv").write_text(csv_text(*rows), encoding="utf-8")
    lines = cli("report", "--machine", "gb10").stdout.splitlines()
    assert lines[1].split() == ["model", "512", "1k", "2k", "4k", "8k", "16k", "32k"]


# -- the library: the runs keep the frontier --------------------------------------------------

OUTCOMES = [Outcome.RAN, Outcome.FAILED, Outcome.TIMEOUT, Outcome.OOM]
CELLS = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(1, 40)),
    st.tuples(st.sampled_from(OUTCOMES), st.sampled_from(["2026-07-01", "2026-07-02"])),
    max_size=60,
)
RECORDS = st.lists(st.tuples(st.sampled_from(["a", "b", "d"]), st.integers(1, 40)), max_size=8)


@settings(max_examples=150, deadline=None)
@given(cells=CELLS, records=RECORDS)
def test_the_runs_keep_every_oom_and_every_success_boundary(
    cells: dict[tuple[str, int], tuple[Outcome, str]], records: list[tuple[str, int]]
) -> None:
    scan = Scan()
    for (model, n), (outcome, day) in cells.items():
        seen = Seen(f"x.csv:{n}", day, "abc1234")
        scan.cells[(model, GB10, n)] = CellRows({outcome: seen}, {outcome: seen})
    lines = [
        (
            OomRecord(m, n, "2026-07-01", "abc1234", None, "r.csv", "gb10"),
            f".oom-record:{i}",
            "record",
        )
        for i, (m, n) in enumerate(records, start=1)
    ]
    report = build(scan, record_evidence(lines))
    # Expanded over the lengths each model was tried at, the runs are the grid, cell for cell,
    # and two runs side by side never have one outcome (folded as far as it goes).
    expanded = {}
    for (model, machine), runs in report.runs.items():
        tried = sorted(n for (m, c, n) in report.grid if (m, c) == (model, machine))
        for run in runs:
            inside = [n for n in tried if run.start <= n <= run.end]
            assert len(inside) == run.size and inside[0] == run.start and inside[-1] == run.end
            expanded |= {(model, machine, n): (run.outcome, run.flagged) for n in inside}
        for left, right in itertools.pairwise(runs):
            assert (left.outcome, left.flagged) != (right.outcome, right.flagged)
            assert left.end < right.start
    assert expanded == report.grid
    # The frontier is what the cells and records give: the longest length that ran and the
    # shortest that ran out of memory, per model and class.
    oom_at: dict[str, set[int]] = {}
    for (model, n), (outcome, _) in cells.items():
        if outcome == Outcome.OOM:
            oom_at.setdefault(model, set()).add(n)
    for model, n in records:
        oom_at.setdefault(model, set()).add(n)
    for (model, machine), f in report.frontier.items():
        ran_at = [n for (m, n), (o, _) in cells.items() if m == model and o == Outcome.RAN]
        assert (f.ran_max[0] if f.ran_max else None) == max(ran_at, default=None)
        assert (f.oom_min.evidence.length if f.oom_min else None) == min(
            oom_at.get(model, ()), default=None
        )
        # Each OOM shows in a run marked OOM: none is folded away.
        for n in oom_at.get(model, ()):
            assert report.grid[(model, machine, n)][0] == Outcome.OOM
        # The untried ranges and the tried lengths cover the axis, apart.
        axis = report.lengths[machine]
        done = {n for (m, c, n) in report.grid if (m, c) == (model, machine)}
        spans = [n for a, b in f.never_tried for n in axis if a <= n <= b]
        assert sorted(spans) == sorted(set(axis) - done)
    assert set(report.frontier) == {(m, GB10) for m, _ in cells} | {(m, GB10) for m, _ in records}


def test_untried_ranges_are_the_gaps_between_the_tried_lengths() -> None:
    axis = [512, 1024, 2048, 4096, 8192]
    assert untried(axis, []) == ((512, 8192),)
    assert untried(axis, [1024, 4096]) == ((512, 512), (2048, 2048), (8192, 8192))
    assert untried(axis, [512, 1024, 2048, 4096, 8192]) == ()
    # A length off the axis (a measured prompt_tokens) tells nothing about the axis.
    assert untried(axis, [700, 8192]) == ((512, 4096),)


# -- the library: contradictions found without pairing each OOM with each run -----------------


def _pairwise(evidence: list[Evidence], scan: Scan) -> list[tuple[int, str, int, str]]:
    """The rule as written: each OOM against each later run of its model (the oracle)."""
    out = []
    for k, ev in enumerate(evidence):
        later = [
            (seen.date or "", length, seen, machine)
            for (model, machine, length), cell in scan.cells.items()
            if model == ev.model
            and (seen := cell.latest.get(Outcome.RAN)) is not None
            and seen.date is not None
            and ev.seen.date
            and length >= ev.length
            and seen.date > ev.seen.date
            and ev.machine.tag is not None
            and ev.machine.covers(machine)
        ]
        if later:
            _, length, seen, machine = max(later, key=lambda t: (t[0], t[1]))
            out.append((k, machine.id, length, seen.where))
    return out


MACHINES = [
    Machine("gb10"),
    Machine("gb10", 122 * GIB),
    Machine("gb10", 64 * GIB),
    Machine("m1", 128 * GIB),
]
DAYS = ["2026-07-01", "2026-07-02", "2026-07-03"]


@settings(max_examples=200, deadline=None)
@given(
    runs=st.dictionaries(
        st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(MACHINES), st.integers(1, 12)),
        st.sampled_from([*DAYS, None]),
        max_size=30,
    ),
    ooms=st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.integers(1, 12),
            st.sampled_from([*DAYS, ""]),
            st.sampled_from(["gb10", "m1", None]),
        ),
        max_size=10,
    ),
)
def test_contradictions_are_the_pairwise_rule(
    runs: dict[tuple[str, Machine, int], str | None], ooms: list[tuple[str, int, str, str | None]]
) -> None:
    scan = Scan()
    for (model, machine, n), day in runs.items():
        seen = Seen(f"x.csv:{len(scan.cells) + 1}", day, "abc1234")
        scan.cells[(model, machine, n)] = CellRows({Outcome.RAN: seen}, {Outcome.RAN: seen})
    lines = [
        (OomRecord(m, n, day, "abc1234", None, "r.csv", tag), f".oom-record:{i}", "record")
        for i, (m, n, day, tag) in enumerate(ooms, start=1)
    ]
    evidence = record_evidence(lines)
    found = contradictions(evidence, scan)
    index = {id(ev): k for k, ev in enumerate(evidence)}
    got = [(index[id(c.evidence)], c.machine.id, c.length, c.seen.where) for c in found]
    assert got == _pairwise(evidence, scan)


def test_a_tie_between_classes_names_the_first_run_in_the_scan() -> None:
    # Two classes ran the same length on the same day: the first row read is named, as the
    # pairwise rule names it, whichever class came first in the scan.
    scan = Scan()
    for where, machine, n in [("1", MACHINES[1], 1), ("2", MACHINES[2], 7), ("3", MACHINES[1], 7)]:
        seen = Seen(f"x.csv:{where}", "2026-07-02", "abc1234")
        scan.cells[("a", machine, n)] = CellRows({Outcome.RAN: seen}, {Outcome.RAN: seen})
    rec = OomRecord("a", 5, "2026-07-01", "abc1234", None, "r.csv", "gb10")
    (found,) = contradictions(record_evidence([(rec, ".oom-record:1", "record")]), scan)
    assert found.seen.where == "x.csv:2" and found.machine == MACHINES[2]


def test_on_a_terminal_a_sparse_grid_is_one_table_of_runs_that_fits(repo: Repo) -> None:
    _sparse(repo, 40, 10, seed=4)
    out = _run([sys.executable, "-m", "oomrec", "report", "--machine", "gb10"], repo.path, tty=True)
    lines = out.splitlines()
    assert max(len(x) for x in lines) <= 80
    assert "lengths tried, equal outcomes folded" in out and "…" not in out
    assert sum(1 for x in lines if x.startswith("│ model-")) >= 40
