"""A sweep's evidence after it stops: --resume reads a CSV as `record import-csv` does (a
spreadsheet's BOM and CRLF, any column order, extra columns), and an OOM the record cannot take
still reaches the CSV, whose `SKIP:oom` rows --resume reads as evidence."""

from __future__ import annotations

import contextlib
import csv
import io
import subprocess
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
