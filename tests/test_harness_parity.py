"""oomrec means each line, flag and file as the bash harness (scripts/bench_longprompt.sh) does,
and where the two still differ it takes the safe side and says so: each case runs oomrec's sweep
through the CLI on a real work dir and compares its record file and CSVs with what the harness
would leave (its reader transcribed in tests/test_harness_records.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.scripted_runner import Runner
from tests.test_harness_records import harness_plan, oomrec_plan
from tests.test_sweep import sweep

Cli = Callable[..., CliResult]


def _record(repo: Repo, text: str) -> Path:
    path = repo.path / "benchmarks" / ".oom-record"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


# --- a record's length with a leading zero ---------------------------------------------------


def test_an_octal_looking_length_covers_the_smaller_reading(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    """`0512` is 330 to the harness (bash arithmetic) and 512 as written: no cell either tool
    would skip is launched, and the sweep says which reading it took."""
    models("plain-8b")
    record = _record(repo, "plain-8b,0512,2026-07-03,abc1234,,benchmarks/old.csv\n")
    lengths = [256, 330, 400, 512, 2048]
    ours, warnings = oomrec_plan(cli, ["plain-8b"], lengths)
    theirs = harness_plan(record, ["plain-8b"], lengths)
    assert theirs == {"plain-8b:330", "plain-8b:400", "plain-8b:512", "plain-8b:2048"}
    assert ours == theirs
    assert len(warnings) == 1 and "octal (0512 is 330)" in warnings[0]
    # A real sweep launches only the cell below both readings, and keeps the record as it was.
    result = sweep(cli, runner, "--models", "plain-8b", "--lengths", "256 400 512")
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["plain-8b:256"]
    assert record.read_text() == "plain-8b,0512,2026-07-03,abc1234,,benchmarks/old.csv\n"

    # `0980` is an error to bash (no octal 8 or 9): the harness honours nothing, oomrec the
    # length as written (the safe side), and says the harness would not.
    record.write_text("plain-8b,0980,2026-07-03,abc1234,,benchmarks/old.csv\n")
    ours, warnings = oomrec_plan(cli, ["plain-8b"], [512, 980, 2048])
    assert harness_plan(record, ["plain-8b"], [512, 980, 2048]) == set()
    assert ours == {"plain-8b:980", "plain-8b:2048"}
    assert len(warnings) == 1 and "would not honour this line" in warnings[0]
