"""A sweep's evidence while it runs and after it stops: a record written by another process
before a cell launches pre-skips that cell, an OOM the record cannot take still reaches the CSV
(whose `SKIP:oom` rows --resume reads as evidence), and --resume reads a CSV as
`record import-csv` does (a spreadsheet's BOM and CRLF, any column order, extra columns)."""

from __future__ import annotations

import contextlib
import csv
import io
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.scripted_runner import Runner
from tests.test_sweep import csv_lines, ok_row, skip, sweep

Cli = Callable[..., CliResult]

OOM = "exit:1:RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
GRID = ("--models", "a", "--lengths", "512 2048 8192")


def first_sweep(cli: Cli, repo: Repo, runner: Runner) -> Path:
    """a: runs at 512, OOMs at 2048, backstopped at 8192; the record then removed, so that
    what keeps a resume off the OOM is the CSV's own rows."""
    runner.behave({"a:2048": OOM})
    assert sweep(cli, runner, *GRID).exit_code == 0
    assert runner.launched() == ["a:512", "a:2048"]
    (repo.path / "benchmarks" / ".oom-record").unlink()
    return repo.path / "benchmarks" / "out.csv"


def test_resume_reads_a_csv_a_spreadsheet_saved_with_a_bom_and_crlf(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    out = first_sweep(cli, repo, runner)
    saved = b"\xef\xbb\xbf" + out.read_bytes().replace(b"\n", b"\r\n")
    out.write_bytes(saved)
    plan = sweep(cli, runner, *GRID, "--resume", "--dry-run")
    assert "dry run: 3 done, 0 to run, 0 to skip" in plan.stderr, plan.stderr
    result = sweep(cli, runner, *GRID, "--resume")
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:512", "a:2048"]
    assert out.read_bytes() == saved
    assert "header differs" not in result.stderr


def reordered(text: str) -> str:
    """The CSV as another tool leaves it: the older harness's 14 columns (no
    prompt_target_len: the length is prompt_tokens), in another order, among 26 more."""
    rows = list(csv.reader(io.StringIO(text)))
    names = [*rows[0][:14], *(f"metric_{i}" for i in range(26))]
    order = [*range(26, 40), *reversed(range(14)), *range(14, 26)]
    order = [order[i] for i in (*range(0, 40, 2), *range(1, 40, 2))]
    written = io.StringIO()
    out = csv.writer(written, lineterminator="\n")
    out.writerow([names[i] for i in order])
    for row in rows[1:]:
        cells = [*row[:14], *([""] * 26)]
        # The length is prompt_tokens: a skip row's is empty, its prompt_target_len held it.
        cells[2] = cells[2] or row[14]
        out.writerow([cells[i] for i in order] + row[15:])
    return written.getvalue()


def test_resume_reads_a_40_column_csv_of_another_order_as_the_import_does(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    out = first_sweep(cli, repo, runner)
    text = reordered(out.read_text())
    assert len(text.splitlines()[0].split(",")) == 40
    out.write_text(text)
    # The import reads its SKIP:oom row so (the same reader): the cell it names.
    imported = cli("record", "import-csv", "benchmarks/out.csv", "--dry-run", "--json")
    assert '"prompt_target_len":2048' in imported.stdout, imported.stdout
    plan = sweep(cli, runner, *GRID, "--resume", "--dry-run")
    assert "a @ 2048: done (earlier SKIP:oom)" in plan.stderr, plan.stderr
    # The rows the provenance file no longer matches are decided again, once each.
    assert "a @ 512: run (again: its row has no provenance" in plan.stderr
    assert "a @ 8192: SKIP:oom_backstop (again: its row has no provenance" in plan.stderr
    result = sweep(cli, runner, *GRID, "--resume")
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:512", "a:2048", "a:512"]
    before = text.splitlines()
    assert out.read_text().splitlines() == [
        before[0],
        before[2],
        ok_row("a", 512),
        skip("a", 8192, "SKIP:oom_backstop"),
    ]


@contextlib.contextmanager
def immutable_files(tmp_path: Path) -> Iterator[list[Path]]:
    """Files made immutable (`chattr +i`: a write fails even as root, where chmod stops
    nothing) are made mutable again at the end; skipped where the filesystem has no such flag."""
    probe = tmp_path / "chattr-probe"
    probe.write_text("")
    tried = subprocess.run(["chattr", "+i", str(probe)], capture_output=True, text=True)
    if tried.returncode != 0:
        pytest.skip(f"chattr +i does not work here ({tried.stderr.strip()})")
    made = [probe]
    try:
        yield made
    finally:
        for path in made:
            subprocess.run(["chattr", "-i", str(path)], check=False)


def test_an_oom_the_record_refuses_mid_sweep_goes_to_the_csv_and_resume_keeps_off_it(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None], tmp_path: Path
) -> None:
    models("a", "b")
    assert cli("record", "add", "other", "4096").exit_code == 0
    record = repo.path / "benchmarks" / ".oom-record"
    grid = ("--models", "a b", "--lengths", "512 2048 8192")
    with immutable_files(tmp_path) as made:
        made.append(record)
        # While a@2048 runs, the record becomes unwritable; then the cell runs out of memory.
        runner.behave({"a:2048": OOM, "before a:2048": [["chattr", "+i", str(record)]]})
        result = sweep(cli, runner, *grid)
        assert result.exit_code == 2, result.stderr
        said = [line for line in result.stderr.splitlines() if "oomrec: error:" in line]
        assert len(said) == 1, result.stderr
        assert said[0].startswith("oomrec: error: benchmarks/.oom-record: cannot write"), said
        assert "the SKIP:oom of a @ 2048 is not in the record; its row is in " in said[0]
        # Stopped there: nothing else launched, the cell's row written.
        assert runner.launched() == ["a:512", "a:2048"]
        assert csv_lines(repo)[1:] == [ok_row("a", 512), skip("a", 2048, "SKIP:oom")]
        assert "a,2048" not in record.read_text()
    plan = sweep(cli, runner, *grid, "--resume", "--dry-run")
    assert "  a @ 2048: done (earlier SKIP:oom)" in plan.stderr, plan.stderr
    assert "  a @ 8192: SKIP:oom_backstop" in plan.stderr
    resumed = sweep(cli, runner, *grid, "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert runner.launched() == ["a:512", "a:2048", "b:512", "b:2048", "b:8192"]
    assert skip("a", 8192, "SKIP:oom_backstop") in csv_lines(repo)
    # What the error said to do records it.
    imported = cli("record", "import-csv", "benchmarks/out.csv")
    assert imported.exit_code == 0, imported.stderr
    assert "\na,2048," in record.read_text()


def oomrec_cli(*args: str) -> list[str]:
    """`oomrec ARGS` as another process runs it (from the runner, in the sweep's cwd)."""
    return [sys.executable, "-m", "oomrec", *args]


def test_a_record_added_while_a_cell_runs_pre_skips_the_later_cells_it_covers(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a", "b")
    # While a@512 runs, another process records an OOM of a at 2048 (a `record add`).
    runner.behave({"before a:512": [oomrec_cli("record", "add", "a", "2048")]})
    result = sweep(cli, runner, "--models", "a b", "--lengths", "512 2048 8192")
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:512", "b:512", "b:2048", "b:8192"]
    assert csv_lines(repo)[1:4] == [
        ok_row("a", 512),
        skip("a", 2048, "SKIP:oom_record"),
        skip("a", 8192, "SKIP:oom_record"),
    ]
    lines = result.stderr.splitlines()
    said = [line for line in lines if "changed since it was read" in line]
    assert said == [
        "record: benchmarks/.oom-record changed since it was read; read it again before a @ "
        "2048: 1 new line, 1 record applies to testhw"
    ]
    assert any(
        line.startswith("[2/6] a @ 2048: SKIP:oom_record (recorded OOM at 2048 <= 2048")
        for line in lines
    ), result.stderr


def test_another_sweeps_oom_appended_mid_sweep_pre_skips_and_our_own_oom_reads_nothing_again(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a", "b")
    record = repo.path / "benchmarks" / ".oom-record"
    line = f"b,4096,2026-07-03,{repo.head()},,benchmarks/other.csv,testhw,"
    # a@2048 runs out of memory (this sweep records it); while b@512 runs, another sweep on
    # this machine appends its OOM of b at 4096 to the record, as its own append does.
    runner.behave(
        {
            "a:2048": OOM,
            "before b:512": [["sh", "-c", f"printf '%s\\n' '{line}' >> '{record}'"]],
        }
    )
    result = sweep(cli, runner, "--models", "a b", "--lengths", "512 2048 4096 8192")
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:512", "a:2048", "b:512", "b:2048"]
    assert csv_lines(repo)[7:] == [
        skip("b", 4096, "SKIP:oom_record"),
        skip("b", 8192, "SKIP:oom_record"),
    ]
    said = [line for line in result.stderr.splitlines() if "changed since it was read" in line]
    # Read again once: for the other sweep's line, not after this sweep's own append (whose
    # line only the backstop knew: read now, it counts as new to the record's evidence).
    assert len(said) == 1 and "before b @ 2048: 2 new lines, 2 records apply" in said[0], (
        result.stderr
    )


def test_a_record_line_gone_mid_sweep_keeps_deciding_until_the_next_sweep(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    assert cli("record", "add", "a", "2048").exit_code == 0
    record = repo.path / "benchmarks" / ".oom-record"
    # While a@512 runs, the record is rewritten without the line (a tool's rewrite read halfway
    # would look the same): the running sweep keeps the evidence it read.
    runner.behave({"before a:512": [["sh", "-c", f": > '{record}'"]]})
    result = sweep(cli, runner, *GRID)
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:512"]
    assert csv_lines(repo)[2:] == [
        skip("a", 2048, "SKIP:oom_record"),
        skip("a", 8192, "SKIP:oom_record"),
    ]
    assert "read it again before a @ 2048: 0 new lines, 1 record applies" in result.stderr


def test_a_record_that_cannot_be_read_again_stops_the_sweep_before_the_next_launch(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    record = repo.path / "benchmarks" / ".oom-record"
    assert cli("record", "add", "other", "4096").exit_code == 0
    # While a@512 runs, a folder takes the record's place: what it holds now cannot be known.
    aside = repo.path / "record-aside"
    runner.behave({"before a:512": [["mv", str(record), str(aside)], ["mkdir", str(record)]]})
    result = sweep(cli, runner, *GRID)
    assert result.exit_code == 2, result.stderr
    assert runner.launched() == ["a:512"]
    last = result.stderr.splitlines()[-1]
    assert last.startswith("oomrec: error: benchmarks/.oom-record: is a directory"), last
    assert last.endswith(
        "the sweep stopped before a @ 2048: the record changed and cannot be read again"
    ), last
    assert csv_lines(repo)[1:] == [ok_row("a", 512)]
