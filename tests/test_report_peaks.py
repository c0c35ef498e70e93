"""Issue 43: every cell's peak is kept in the provenance file beside the CSV (the harness's CSV
stays as it is), with the limit it ran under; the report gives each cell's peak and headroom,
equal to what the sweep measured at run time; a peak that grew past --regression-threshold
between two commits is a memory regression. Real sweeps of a runner that allocates."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core.provenance import read_entry_list, sidecar_path
from oomrec.core.schema import HEADER_15
from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]
MIB = 1024 * 1024

# `runner.py MiB length cell_csv`: touch MiB of memory, hold it a moment, write an ok row.
RUNNER = r"""
import sys, time
from pathlib import Path

mib, length, cell_csv = int(sys.argv[1]), sys.argv[2], sys.argv[3]
block = bytearray(mib << 20)
block[::4096] = b"x" * (len(block) // 4096)
time.sleep(0.3)
row = f"a,./models/a,{length},32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,\"Hi\",{length}"
Path(cell_csv).write_text("HEADER\n" + row + "\n")
""".replace("HEADER", HEADER_15)


@pytest.fixture
def sweep(cli: Cli, repo: Repo, tmp_path: Path) -> Callable[[int, str], CliResult]:
    (repo.path / "models" / "a").mkdir(parents=True)
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)

    def run(mib: int, output: str) -> CliResult:
        template = f"{sys.executable} {script} {mib} {{length}} {{cell_csv}}"
        done = cli(
            "sweep", "--runner", template, "--output", output, "--models", "a",
            "--lengths", "512 1024", "--json",
        )  # fmt: skip
        assert done.exit_code == 0, done.stderr
        return done

    return run


def _peaks(cli: Cli, *args: str) -> dict:
    done = cli("report", "--json", *args)
    assert done.exit_code == 0, done.stderr
    return json.loads(done.stdout)


def test_the_reports_peaks_are_what_the_sweep_measured(
    sweep: Callable[[int, str], CliResult], cli: Cli, repo: Repo
) -> None:
    done = sweep(96, "benchmarks/first.csv")
    measured = {c["length"]: c["peak_rss_bytes"] for c in json.loads(done.stdout)["cells"]}
    assert all(isinstance(p, int) and p >= 96 * MIB for p in measured.values()), measured
    # Kept beside the CSV, which stays the harness's.
    csv = repo.path / "benchmarks" / "first.csv"
    assert csv.read_text().splitlines()[0] == HEADER_15
    entries = read_entry_list(sidecar_path(csv))
    assert {e.length: e.peak_bytes for e in entries} == measured
    assert all(e.limit_bytes for e in entries)
    data = _peaks(cli)
    got = {p["length"]: p for p in data["peaks"] if p["model"] == "a"}
    assert {n: p["peak_bytes"] for n, p in got.items()} == measured
    for p in got.values():
        assert p["headroom"] == round(p["peak_bytes"] / p["limit_bytes"], 4)
    # The page's headroom heatmap holds each cell, its peak in the hover title.
    page = repo.path / "page.html"
    assert cli("report", "--html", str(page)).exit_code == 0
    text = page.read_text()
    assert "<h2>Headroom: each swept cell" in text
    for p in got.values():
        share = p["peak_bytes"] / p["limit_bytes"]
        shown = f"{share:.1%}" if share < 0.1 else f"{share:.0%}"
        assert f">{shown}</td>" in text


def test_a_peak_that_grew_past_the_threshold_is_a_regression(
    sweep: Callable[[int, str], CliResult], cli: Cli, repo: Repo
) -> None:
    # A sweep's provenance names the commit it ran at: HEAD, whatever it leaves uncommitted.
    a = repo.head()
    sweep(64, "benchmarks/first.csv")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "first sweep")
    repo.commit("bigger buffers")
    b = repo.commit("and more")
    sweep(256, "benchmarks/second.csv")
    data = _peaks(cli)
    grown = [r for r in data["regressions"] if r["state"] == "peak"]
    assert {r["length"] for r in grown} == {512, 1024}
    for r in grown:
        assert r["range"] == f"{a}..{b}" and r["commits"] == 3 and r["first_seen"] == b
        assert r["peak_after"] > 1.1 * r["peak_before"]
    # Under a threshold the growth does not reach, nothing is flagged.
    assert not [r for r in _peaks(cli, "--regression-threshold", "10")["regressions"]]


def _entry(length: int, **extra: object) -> dict[str, object]:
    row = f'a,./models/a,{length},32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"Hi",{length}'
    return {
        "model": "a",
        "length": length,
        "token": "ok",
        "row": row,
        "commit": "unknown",
        "runner": "r",
        "hardware": "gb10",
        "mem_bytes": None,
        **extra,
    }


def test_hostile_provenance_gives_no_peak_and_no_hang(cli: Cli, repo: Repo) -> None:
    folder = repo.path / "benchmarks"
    folder.mkdir()
    rows = "".join(
        f'a,./models/a,{n},32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"Hi",{n}\n'
        for n in (1, 2, 3, 4, 5, 6)
    )
    (folder / "swept.csv").write_text(HEADER_15 + "\n" + rows)
    cells = [
        _entry(1, peak_bytes=-5, limit_bytes=10),
        _entry(2, peak_bytes=True, limit_bytes=10),
        _entry(3, peak_bytes=2**70, limit_bytes=10),
        _entry(4, peak_bytes="12", limit_bytes=10),
        _entry(5, peak_bytes=7, limit_bytes=0),
        # A key of a later format: the entry is still read, the key left out.
        _entry(6, peak_bytes=7, limit_bytes=14, later_key={"x": 1}),
    ]
    (folder / "swept.csv.oomrec.json").write_text(json.dumps({"schema_version": 1, "cells": cells}))
    # A FIFO where a second CSV's provenance would be: refused, never waited on.
    (folder / "other.csv").write_text(HEADER_15 + "\n" + rows)
    os.mkfifo(folder / "other.csv.oomrec.json")
    data = _peaks(cli)
    assert [(p["length"], p["peak_bytes"], p["headroom"]) for p in data["peaks"]] == [(6, 7, 0.5)]
