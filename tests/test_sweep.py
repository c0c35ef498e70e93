"""`oomrec sweep` through the CLI, with real runner processes, in real git repositories."""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core import hardware
from oomrec.core.schema import HEADER_15
from oomrec.sweep.cell import cellscope
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import TODAY, gone
from tests.scripted_runner import RUNNER, Runner
from tests.tty import run_on_tty

Cli = Callable[..., CliResult]


def ok_row(model: str, length: int) -> str:
    return (
        f"{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"
        f'"Hello, how are you today?",{length}'
    )


def skip(model: str, length: int, token: str) -> str:
    """A skip row exactly as the bash harness writes it."""
    return f'{model},./models/{model},,,,,,,{TODAY},,,,32,"",{length},{token}'


def fake(model: str, length: int) -> str:
    return (
        f'{model},./models/{model},,,,,,,{TODAY},,,,32,"(faked via MLXCEL_BENCH_FAKE_OOM)",'
        f"{length},SKIP:oom"
    )


def sweep(cli: Cli, runner: Runner, *args: str) -> CliResult:
    return cli("sweep", "--runner", runner.template, "--output", "benchmarks/out.csv", *args)


def csv_lines(repo: Repo, name: str = "benchmarks/out.csv") -> list[str]:
    return (repo.path / name).read_text().splitlines()


def record_text(repo: Repo) -> str | None:
    path = repo.path / "benchmarks" / ".oom-record"
    return path.read_text() if path.exists() else None


def test_fake_oom_backstops_the_longer_cells_of_that_model_only(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a", "b")
    result = sweep(cli, runner, "--models", "a b", "--lengths", "512 2048 8192",
                   "--fake-oom", "a:2048")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert csv_lines(repo) == [
        HEADER_15,
        ok_row("a", 512),
        fake("a", 2048),
        skip("a", 8192, "SKIP:oom_backstop"),
        ok_row("b", 512),
        ok_row("b", 2048),
        ok_row("b", 8192),
    ]
    assert runner.launched() == ["a:512", "b:512", "b:2048", "b:8192"]
    assert record_text(repo) == f"a,2048,{TODAY},{repo.head()},,benchmarks/out.csv,testhw,,fake\n"
    assert (
        "[3/6] a @ 8192: SKIP:oom_backstop (a was SKIP:oom at 2048 <= 8192 tokens in this sweep)"
        in result.stderr.splitlines()
    )
    assert "record: 1 new OOM record in benchmarks/.oom-record" in result.stderr


def test_fake_oom_from_the_environment_and_a_first_skip_row_gets_the_harness_header(
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    models("a")
    monkeypatch.setenv("MLXCEL_BENCH_FAKE_OOM", "a:512,,other:1")
    runner.behave({"a": "row:FAIL:bench"})
    assert sweep(cli, runner, "--models", "a", "--lengths", "512 2048").exit_code == 0
    assert csv_lines(repo) == [HEADER_15, fake("a", 512), skip("a", 2048, "SKIP:oom_backstop")]
    assert runner.launched() == []


def test_unsorted_lengths_backstop_from_the_smallest_oom(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    oom = "exit:1:RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    runner.behave({"a:8192": oom, "a:2048": oom})
    result = sweep(cli, runner, "--models", "a", "--lengths", "8192 2048 4096 512 16384")
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:8192", "a:2048", "a:512"]
    assert csv_lines(repo)[1:] == [
        skip("a", 8192, "SKIP:oom"),
        skip("a", 2048, "SKIP:oom"),
        skip("a", 4096, "SKIP:oom_backstop"),
        ok_row("a", 512),
        skip("a", 16384, "SKIP:oom_backstop"),
    ]
    lines = (record_text(repo) or "").splitlines()
    assert [line.split(",")[:2] for line in lines] == [["a", "8192"], ["a", "2048"]]


@pytest.mark.parametrize(
    "behaviour",
    [
        "exit:1:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB",
        "exit:1:[metal::malloc] Attempting to allocate 8589934592 bytes which is greater than "
        "the maximum allowed buffer size of 4294967296 bytes.",
    ],
    ids=["cuda", "metal"],
)
def test_a_runner_that_runs_out_of_memory_is_a_true_oom(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None], behaviour: str
) -> None:
    models("a")
    runner.behave({"a:2048": behaviour})
    result = sweep(cli, runner, "--models", "a", "--lengths", "512 2048 8192")
    assert result.exit_code == 0, result.stderr
    assert csv_lines(repo)[1:] == [
        ok_row("a", 512),
        skip("a", 2048, "SKIP:oom"),
        skip("a", 8192, "SKIP:oom_backstop"),
    ]
    model, length, day, commit, peak, source, hardware, mem = (
        (record_text(repo) or "").strip().split(",")
    )
    assert (model, length, day, commit, source, hardware) == (
        "a", "2048", TODAY, repo.head(), "benchmarks/out.csv", "testhw",
    )  # fmt: skip
    assert mem == ""  # unknown: the field is written all the same, after the tag
    # Only a cgroup of the cell's own always knows its peak. Without one, the sampler may or
    # may not catch a runner this short (a busy machine decides), and a peak below this
    # process's own (which a fork+exec child inherits in ru_maxrss) is no peak: either the
    # record has a measured peak or the cell says it has none.
    if cellscope.unavailable() is None:
        assert peak.isdigit() and int(peak) > 0
    elif peak == "":
        assert "; peak unknown; exit 1, output has " in result.stderr
    else:
        assert peak.isdigit() and int(peak) > 0
    assert "[2/3] a @ 2048: SKIP:oom (" in result.stderr
    assert "; OOM evidence: signature)" in result.stderr
    assert f"  recorded: a,2048,{TODAY}," in result.stderr


@pytest.mark.parametrize(
    ("behaviour", "token", "extra"),
    [
        ("exit:1:Segmentation fault", "FAIL:bench", []),
        ("exit:124:", "FAIL:timeout", []),
        ("sleep", "FAIL:timeout", ["--timeout", "0.5"]),
        ("exit:0:done", "FAIL:no_output", []),
        ("row:SKIP:oom_estimate", "SKIP:oom_estimate", []),
    ],
    ids=["bench", "exit-124", "our-timeout", "no-output", "oom-estimate"],
)
def test_other_outcomes_feed_neither_layer(
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    behaviour: str,
    token: str,
    extra: list[str],
) -> None:
    models("a")
    runner.behave({"a:512": behaviour})
    result = sweep(cli, runner, "--models", "a", "--lengths", "512 2048", *extra)
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:512", "a:2048"]
    rows = csv_lines(repo)[1:]
    assert rows[0].endswith(f",512,{token}")
    assert rows[1] == ok_row("a", 2048)
    assert record_text(repo) is None
    assert f"[1/2] a @ 512: {token} (" in result.stderr


def test_a_failure_log_line_says_what_the_runner_said_last(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    runner.behave({"a": "exit:3:error: weights file is corrupt"})
    result = sweep(cli, runner, "--models", "a", "--lengths", "512")
    [line] = [line for line in result.stderr.splitlines() if line.startswith("[1/1] ")]
    assert line.startswith("[1/1] a @ 512: FAIL:bench (")
    assert line.endswith(
        "; exit 3, no out-of-memory message in its output; "
        "last output: 'error: weights file is corrupt')"
    )


def test_the_record_pre_skips_its_model_at_and_above_its_length_on_this_hardware(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a", "b")
    record = repo.path / "benchmarks" / ".oom-record"
    record.parent.mkdir()
    text = (
        "a,2048,2026-07-03,9bef3f2,,benchmarks/old.csv,testhw\n"
        "a,512,2026-07-03,9bef3f2,,benchmarks/old.csv,gb10\n"
        "b,8192,2026-07-03,9bef3f2,,benchmarks/old.csv\n"
    )
    record.write_text(text)
    result = sweep(cli, runner, "--models", "a b", "--lengths", "512 2048 8192")
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:512", "b:512", "b:2048"]
    assert csv_lines(repo)[1:] == [
        ok_row("a", 512),
        skip("a", 2048, "SKIP:oom_record"),
        skip("a", 8192, "SKIP:oom_record"),
        ok_row("b", 512),
        ok_row("b", 2048),
        skip("b", 8192, "SKIP:oom_record"),
    ]
    assert (
        "[3/6] a @ 8192: SKIP:oom_record (recorded OOM at 2048 <= 8192: benchmarks/.oom-record:1: "
        "a,2048,2026-07-03,9bef3f2,,benchmarks/old.csv,testhw)"
    ) in result.stderr.splitlines()
    assert "record:  benchmarks/.oom-record (2 records apply to testhw at HEAD)" in result.stderr
    assert record.read_text() == text


@pytest.mark.parametrize(
    ("flag", "env"),
    [
        ("--ignore-record", None),
        (None, "MLXCEL_BENCH_IGNORE_OOM_RECORD"),
        (None, "OOMREC_IGNORE_RECORD"),
    ],
)
def test_ignoring_the_record_launches_recorded_cells_and_still_records(
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    flag: str | None,
    env: str | None,
) -> None:
    models("a")
    record = repo.path / "benchmarks" / ".oom-record"
    record.parent.mkdir()
    record.write_text("a,512,2026-07-03,9bef3f2,,benchmarks/old.csv\n")
    if env:
        monkeypatch.setenv(env, "1")
    runner.behave({"a:2048": "exit:1:std::bad_alloc"})
    result = sweep(cli, runner, "--models", "a", "--lengths", "512 2048", *([flag] if flag else []))
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:512", "a:2048"]
    assert f"record pre-skip disabled by {flag or env + '=1'}" in result.stderr
    lines = record.read_text().splitlines()
    assert len(lines) == 2
    assert lines[1].startswith(f"a,2048,{TODAY},{repo.head()},")


def test_a_missing_model_dir_prints_miss_and_writes_no_rows(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    result = sweep(cli, runner, "--models", "ghost a", "--lengths", "512",
                   "--fake-oom", "ghost:512")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "[miss] ghost (not found under ./models, skipping)" in result.stderr.splitlines()
    assert csv_lines(repo) == [HEADER_15, ok_row("a", 512)]
    assert record_text(repo) is None


def test_a_missing_models_dir_is_said_once_and_stops_the_sweep(
    cli: Cli, repo: Repo, runner: Runner
) -> None:
    result = sweep(cli, runner, "--models", "a b c", "--lengths", "512", "--fake-oom", "a:512")
    assert result.exit_code == 2
    said = [line for line in result.stderr.splitlines() if "./models" in line]
    assert said == [
        "  models:  ./models",
        "oomrec: error: models dir ./models does not exist: no model can run; pass --models-dir "
        "or set models_dir in [tool.oomrec]",
    ]
    assert result.stderr.splitlines(keepends=True)[-1] == (
        "oomrec: error: models dir ./models does not exist: no model can run; pass --models-dir "
        "or set models_dir in [tool.oomrec]\n"
    )
    assert "[miss]" not in result.stderr
    # No CSV; the output's lock (made with its folder, so that a second sweep sees it) stays
    # out of `git status`.
    assert not (repo.path / "benchmarks" / "out.csv").exists()
    assert repo.git("status", "--porcelain") == ""


def test_a_model_name_is_one_argument_and_never_a_command(
    cli: Cli, repo: Repo, runner: Runner
) -> None:
    name = "x;touch pwned $(touch pwned2) `touch pwned3`"
    (repo.path / "models" / name).mkdir(parents=True)
    (repo.path / "pyproject.toml").write_text(
        f"[tool.oomrec]\nmodels = [{json.dumps(name)}]\nlengths = [512]\n"
    )
    runner.behave({name: "argv"})
    result = cli("sweep", "--runner", runner.template, "--output", "out.csv")
    # Refused before anything runs (issue 41): a name a shell would split is no model's, and
    # its record line would reach every script that reads the record.
    assert result.exit_code == 2
    assert "contains a shell metacharacter" in result.stderr
    assert runner.launched() == []
    assert not list(repo.path.rglob("pwned*"))
    assert not list(runner.dir.glob("pwned*"))


def test_pyproject_gives_defaults_flags_override_and_paths_are_from_the_repo_root(
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (repo.path / "weights" / "a").mkdir(parents=True)
    (repo.path / "weights" / "b").mkdir(parents=True)
    (repo.path / "scripts").mkdir()
    script = repo.path / "scripts" / "cell.py"
    script.write_text(runner.script.read_text())
    script.chmod(0o755)
    (repo.path / "scripts" / "behaviour.json").write_text("{}")
    (repo.path / "pyproject.toml").write_text(
        "[tool.oomrec]\n"
        'runner = "scripts/cell.py {model} {model_path} {length} {cell_csv}"\n'
        'models = "a b"\n'
        "lengths = [512, 2048]\n"
        'models_dir = "weights"\n'
        'output = "results/sweep.csv"\n'
        "timeout = 60\n"
    )
    (repo.path / "sub").mkdir()
    monkeypatch.chdir(repo.path / "sub")
    result = cli("sweep", "--lengths", "1024", "--fake-oom", "b:1024")
    assert result.exit_code == 0, result.stderr
    weights = repo.path / "weights"
    assert (repo.path / "results" / "sweep.csv").read_text().splitlines() == [
        HEADER_15,
        f"a,{weights}/a,1024,32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"
        '"Hello, how are you today?",1024',
        f'b,{weights}/b,,,,,,,{TODAY},,,,32,"(faked via MLXCEL_BENCH_FAKE_OOM)",1024,SKIP:oom',
    ]
    assert (repo.path / "scripts" / "launched.txt").read_text() == "a:1024\n"
    assert record_text(repo) == f"b,1024,{TODAY},{repo.head()},,results/sweep.csv,testhw,,fake\n"


def test_the_default_runner_is_the_harness_cell_script_with_its_arguments(
    cli: Cli, repo: Repo, models: Callable[..., None]
) -> None:
    models("a")
    (repo.path / "scripts").mkdir()
    script = repo.path / "scripts" / "bench_decode.sh"
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        f"open({str(repo.path / 'argv.json')!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    script.chmod(0o755)
    result = cli("sweep", "--models", "a", "--lengths", "512", "--max-tokens", "16",
                 "--warmup-tokens", "2", "--cooldown", "30", "--big-cooldown", "2.5")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    argv = json.loads((repo.path / "argv.json").read_text())
    # The cooldowns go to the cell script, as the harness passes them (oomrec does not sleep).
    assert argv[:11] == ["./models/a", "--prompt-tokens", "512", "--max-tokens", "16",
                         "--warmup-tokens", "2", "--cooldown", "30", "--big-cooldown",
                         "2.5"]  # fmt: skip
    assert argv[11] == "--output" and argv[12].endswith("cell.csv")
    [output] = (repo.path / "benchmarks").glob("*.csv")
    # Named as the harness names it (tests/test_harness_parity.py), not by oomrec's tag.
    backend, hw = hardware.harness_file_parts()
    assert output.name == f"{backend}_{hw}_longprompt_{TODAY}.csv"
    assert output.read_text().splitlines()[1] == (
        f'a,./models/a,,,,,,,{TODAY},,,,16,"",512,FAIL:no_output'
    )
    assert f"rows: benchmarks/{output.name}" in result.stderr


def test_the_first_real_cell_gives_the_header_and_cooldown_is_accepted(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    header17 = HEADER_15 + ",mlxcel_commit,mlx_commit"
    runner.script.write_text(RUNNER.replace(HEADER_15, header17))
    result = sweep(cli, runner, "--models", "a", "--lengths", "512 2048", "--cooldown", "0.01",
                   "--fake-oom", "a:2048")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert csv_lines(repo) == [header17, ok_row("a", 512), fake("a", 2048)]


def test_dry_run_prints_the_plan_and_touches_nothing(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a", "b")
    record = repo.path / "benchmarks" / ".oom-record"
    record.parent.mkdir()
    record.write_text("b,2048,2026-07-03,9bef3f2,,benchmarks/old.csv,testhw\n")
    result = sweep(cli, runner, "--models", "a b ghost", "--lengths", "512 2048 8192",
                   "--fake-oom", "a:2048", "--dry-run")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[-7:] == [
        "  a @ 512: run",
        "  a @ 2048: SKIP:oom (faked via --fake-oom / MLXCEL_BENCH_FAKE_OOM)",
        "  a @ 8192: SKIP:oom_backstop (a was SKIP:oom at 2048 <= 8192 tokens in this sweep)",
        "  b @ 512: run",
        "  b @ 2048: SKIP:oom_record (recorded OOM at 2048 <= 2048: benchmarks/.oom-record:1: "
        "b,2048,2026-07-03,9bef3f2,,benchmarks/old.csv,testhw)",
        "  b @ 8192: SKIP:oom_record (recorded OOM at 2048 <= 8192: benchmarks/.oom-record:1: "
        "b,2048,2026-07-03,9bef3f2,,benchmarks/old.csv,testhw)",
        "dry run: 2 to run, 4 to skip; nothing launched, nothing written",
    ]
    assert "[miss] ghost (not found under ./models, skipping)" in result.stderr
    assert runner.launched() == []
    assert not (repo.path / "benchmarks" / "out.csv").exists()
    assert record.read_text().count("\n") == 1


def test_a_true_ooms_measured_peak_reaches_the_record(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    # Above this process's own high-water mark, which the runner's ru_maxrss inherits.
    need_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024 + 96
    models("a")
    runner.behave({"a:2048": f"alloc:{need_mib}:CUDA out of memory. Tried to allocate 2.00 GiB"})
    result = sweep(cli, runner, "--models", "a", "--lengths", "2048")
    assert result.exit_code == 0, result.stderr
    peak = (record_text(repo) or "").split(",")[4]
    assert int(peak) >= need_mib << 20
    assert f"peak {int(peak) / (1 << 20):.0f} MiB" in result.stderr


def test_json_summary_on_stdout_and_the_log_on_stderr(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    runner.behave({"a:2048": "exit:1:MemoryError"})
    result = sweep(cli, runner, "--models", "a", "--lengths", "512 2048 8192", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert [(c["length"], c["verdict"], c["launched"]) for c in summary["cells"]] == [
        (512, "ok", True),
        (2048, "SKIP:oom", True),
        (8192, "SKIP:oom_backstop", False),
    ]
    assert summary["counts"] == {"a": {"ok": 1, "SKIP:oom": 1, "SKIP:oom_backstop": 1}}
    assert summary["totals"] == {"ok": 1, "SKIP:oom": 1, "SKIP:oom_backstop": 1}
    assert summary["hardware"] == "testhw"
    assert summary["interrupted"] is False
    assert len(summary["new_records"]) == 1
    peak = summary["cells"][1]["peak_rss_bytes"]
    assert (peak is not None) == (cellscope.unavailable() is None)
    assert [c["oom_evidence"] for c in summary["cells"]] == [None, "signature", None]
    assert "[2/3] a @ 2048: SKIP:oom (" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "No such option: --bogus"),
        (["--models", "  "], "--models: no models"),
        (["--models", "a/../b"], "--models: model 'a/../b' has an empty, '.' or '..' part"),
        (["--models", "/srv/b"], "--models: model '/srv/b' is an absolute path"),
        (["--lengths", "512 0"], "--lengths: '0' is not a prompt length; give token counts"),
        (["--lengths", "512 abc"], "--lengths: 'abc' is not a prompt length"),
        (["--lengths", "1.5"], "--lengths: '1.5' is not a prompt length"),
        (["--lengths", "-5"], "--lengths: '-5' is not a prompt length"),
        (["--lengths", "2kb"], 'e.g. "512 2048 8192" or "512,2k,8k" (k = 1024)'),
        (["--runner", "./run.py {modle}"], "--runner: unknown placeholder {modle}"),
        (["--runner", "./run.py {length:99999999999}"], "asks for a width over 4096"),
        (["--runner", "./nope.sh {model}"], "--runner: ./nope.sh does not exist"),
        (["--runner", "./plain.txt {model}"], "--runner: ./plain.txt is not executable"),
        (["--runner", "no-such-program-x"], "--runner: 'no-such-program-x' is not an executable"),
        (["--timeout", "0"], "--timeout '0' is not a duration > 0; give seconds or a duration"),
        (["--timeout", "nan"], "--timeout 'nan' is not a duration > 0"),
        (["--timeout", "inf"], "--timeout 'inf' is not a duration > 0"),
        (["--timeout", "30 minutes"], "e.g. 1800, 30m, 1h30m, 90s"),
        (["--cooldown", "inf"], "--cooldown 'inf' is not a duration >= 0"),
        (["--cooldown", "100000"], "--cooldown must be a number of seconds from 0 to 86400"),
        (["--lengths", "9" * 5000], "--lengths: '9999999999"),
        (["--demo", "--runner", "./run.py"], "--demo runs the built-in demo runner"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    cli: Cli, repo: Repo, models: Callable[..., None], args: list[str], message: str
) -> None:
    models("a")
    (repo.path / "plain.txt").write_text("")
    run = repo.path / "run.py"
    run.write_text("#!/bin/sh\n")
    run.chmod(0o755)
    # Repeated --models accumulate, so the case's own --models replaces the base's.
    base = ["--runner", "./run.py {model}"] + ([] if "--models" in args else ["--models", "a"])
    result = cli("sweep", *base, *args)
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1
    assert message in result.stderr
    assert result.stdout == ""


def test_an_unwritable_output_fails_before_any_launch(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    result = sweep(cli, runner, "--models", "a", "--lengths", "512", "--output", "/proc/no/x.csv")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines(keepends=True)[-1] == (
        "oomrec: error: /proc/no/x.csv: cannot create its folder (No such file or directory); "
        "pass --output PATH\n"
    )
    assert runner.launched() == []


def test_an_oom_reaches_the_record_even_when_its_row_cannot_be_written(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    runner.behave({"a:512": "block:benchmarks/out.csv:CUDA out of memory. Tried to allocate 1 GiB"})
    result = sweep(cli, runner, "--models", "a", "--lengths", "512")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith("oomrec: error: ")
    assert (record_text(repo) or "").startswith(f"a,512,{TODAY},{repo.head()},")


def test_no_runner_and_no_models_say_what_to_do(cli: Cli, repo: Repo) -> None:
    result = cli("sweep", "--models", "a")
    assert result.exit_code == 2
    assert "no runner: pass --runner TEMPLATE" in result.stderr
    assert "oomrec sweep --demo" in result.stderr
    result = cli("sweep", "--runner", "true")
    assert result.exit_code == 2
    assert 'no models: pass --models "A B C"' in result.stderr


def test_bad_pyproject_values_are_usage_errors(cli: Cli, repo: Repo) -> None:
    (repo.path / "pyproject.toml").write_text("[tool.oomrec]\nmodels = 3\n")
    result = cli("sweep", "--runner", "true")
    assert result.exit_code == 2
    assert "[tool.oomrec] models: models must be a space-separated string" in result.stderr
    (repo.path / "pyproject.toml").write_text('[tool.oomrec]\nmodels = "a"\nlengths = [true]\n')
    result = cli("sweep", "--runner", "true")
    assert "'True' is not a prompt length" in result.stderr


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_mid_cell_leaves_a_valid_csv_no_temp_files_and_no_child(
    repo: Repo, runner: Runner, models: Callable[..., None], tmp_path: Path, signum: int
) -> None:
    models("a", "b")
    runner.behave({"a:2048": "sleep"})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "oomrec", "sweep", "--runner", runner.template,
         "--models", "a b", "--lengths", "512 2048", "--output", "out.csv"],
        cwd=repo.path,
        env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    pids_file = runner.dir / "pids.txt"
    deadline = time.monotonic() + 30
    while not (pids_file.exists() and pids_file.read_text().endswith("\n")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    rows = list(csv.reader((repo.path / "out.csv").open(newline="")))
    assert rows[0] == HEADER_15.split(",")
    assert [row[:3] for row in rows[1:]] == [["a", "./models/a", "512"]]
    assert stdout == ""
    assert "interrupted: a @ 2048 was killed; 1 of 4 cells done" in stderr
    assert list(tmp.iterdir()) == []
    runner_pid, sleeper_pid = map(int, pids_file.read_text().split())
    assert gone(runner_pid)
    assert gone(sleeper_pid)
    assert record_text(repo) is None


def test_a_header_that_differs_from_the_first_rows_is_warned_about_once(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a", "b")
    header17 = HEADER_15 + ",mlxcel_commit,mlx_commit"
    runner.script.write_text(RUNNER.replace(HEADER_15, header17))
    result = sweep(cli, runner, "--models", "a b", "--lengths", "512 2048",
                   "--fake-oom", "a:512")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert csv_lines(repo) == [
        HEADER_15,
        fake("a", 512),
        skip("a", 2048, "SKIP:oom_backstop"),
        ok_row("b", 512),
        ok_row("b", 2048),
    ]
    assert [line for line in result.stderr.splitlines() if line.startswith("warning:")] == [
        "warning: a cell's CSV header differs from the first line of benchmarks/out.csv"
    ]


def test_nested_model_names_run_and_rows_and_records_name_them_as_given(
    cli: Cli, repo: Repo, tmp_path: Path
) -> None:
    (repo.path / "models" / "org" / "tiny-lm").mkdir(parents=True)
    seen = tmp_path / "seen.txt"
    runner = (
        f"{sys.executable} -c \"open({str(seen)!r}, 'a').write('{{model}} {{model_path}}\\n')\""
    )
    result = cli("sweep", "--models", "org/tiny-lm", "--lengths", "512", "--runner", runner,
                 "--fake-oom", "org/tiny-lm:512", "--output", "out.csv")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    rows = (repo.path / "out.csv").read_text().splitlines()
    # As the harness names it: the directory under the models dir, in rows and records.
    assert rows[1].startswith("org/tiny-lm,./models/org/tiny-lm,")
    assert (repo.path / "benchmarks" / ".oom-record").read_text().startswith("org/tiny-lm,512,")
    for bad, said in (
        ("../escape", "has an empty, '.' or '..' part"),
        ("/abs/model", "is an absolute path"),
        ("org//x", "has an empty, '.' or '..' part"),
    ):
        result = cli("sweep", "--models", bad, "--runner", runner, "--dry-run")
        assert result.exit_code == 2
        assert said in result.stderr


def test_cooldowns_without_runner_placeholders_are_slept_by_oomrec(
    cli: Cli, repo: Repo, tmp_path: Path
) -> None:
    big = repo.path / "models" / "big"
    big.mkdir(parents=True)
    # A sparse file: 11 GiB of weights on paper, nothing on disk.
    with open(big / "model.safetensors", "wb") as fh:
        fh.truncate(11 * 1024**3)
    (repo.path / "models" / "small").mkdir()
    stamps = tmp_path / "stamps.txt"
    runner = (
        f"{sys.executable} -c \"import time; open({str(stamps)!r}, 'a')"
        f".write('{{model}} %f\\n' % time.monotonic())\""
    )
    result = cli("sweep", "--models", "big small", "--lengths", "1 2", "--runner", runner,
                 "--cooldown", "0.1", "--big-cooldown", "1.5", "--output", "o.csv")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    times = [float(row.split()[1]) for row in stamps.read_text().splitlines()]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # After each big cell: cooldown + big cooldown; after a small one: the cooldown alone.
    assert gaps[0] >= 1.6 and gaps[1] >= 1.6
    assert 0.1 <= gaps[2] < 1.5


def test_repeated_models_and_lengths_accumulate(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a", "b", "c")
    result = sweep(cli, runner, "--models", "a", "--models", "b c", "--lengths", "512",
                   "--lengths", "2048")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert runner.launched() == ["a:512", "a:2048", "b:512", "b:2048", "c:512", "c:2048"]


def test_on_a_terminal_the_sweep_shows_progress_and_its_log_on_stderr(
    repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    runner.behave({"a:2048": "exit:1:MemoryError"})
    args = ("sweep", "--runner", runner.template, "--models", "a", "--lengths", "512 2048 8192")
    status, screen, _ = run_on_tty(*args, cwd=repo.path, stderr_on_tty=True)
    assert status == 0, screen
    assert "[1/3] a @ 512: ok" in screen
    assert "[3/3] a @ 8192: SKIP:oom_backstop" in screen
    assert "cells per model and classification" in screen
    # Log and summary on stderr: a terminal on stdout alone sees nothing of them.
    status, screen, stderr = run_on_tty(*args, "--ignore-record", cwd=repo.path)
    assert status == 0, stderr
    assert screen == ""
    assert "[2/3] a @ 2048: SKIP:oom" in stderr


def test_through_a_pipe_stdout_is_empty_without_json(
    repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    models("a")
    proc = subprocess.run(
        [sys.executable, "-m", "oomrec", "sweep", "--runner", runner.template, "--models", "a",
         "--lengths", "512", "--output", "out.csv"],
        cwd=repo.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "[1/1] a @ 512: ok" in proc.stderr
    assert "rows: out.csv" in proc.stderr


def test_an_output_that_is_a_fifo_is_refused_before_any_launch(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    """A FIFO as --output would block the sweep in open() until someone reads it; refused
    before the first cell, with no `resume with:` for a sweep that never started."""
    models("a")
    os.mkfifo(repo.path / "out.csv")
    result = cli("sweep", "--runner", runner.template, "--models", "a", "--lengths", "512",
                 "--output", "out.csv")  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        "oomrec: error: out.csv: is a FIFO, not a regular file; pass --output PATH of a CSV"
    )
    assert "resume with" not in result.stderr
    assert runner.launched() == []


@pytest.mark.parametrize("output", ["fifo.csv", "benchmarks/.oom-record"])
def test_a_dry_run_says_what_the_real_run_would_refuse(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None], output: str
) -> None:
    """The plan is printed, then the same one-line error as the real run (exit 2): a dry run
    that says "run" for a sweep that would be refused is not a dry run of it."""
    models("a")
    os.mkfifo(repo.path / "fifo.csv")
    (repo.path / "benchmarks").mkdir(exist_ok=True)
    args = ("sweep", "--runner", runner.template, "--models", "a", "--lengths", "512",
            "--output", output)  # fmt: skip
    real, dry = cli(*args), cli(*args, "--dry-run")
    assert real.exit_code == dry.exit_code == 2
    assert dry.stderr.splitlines()[-1] == real.stderr.splitlines()[-1]
    assert dry.stderr.splitlines()[-1].startswith("oomrec: error: ")
    assert "  a @ 512: run" in dry.stderr
    assert runner.launched() == []


def test_a_second_sweep_on_the_same_csv_stops_at_once_and_a_resume_waits_for_the_first(
    repo: Repo, runner: Runner, models: Callable[..., None], tmp_path: Path
) -> None:
    """Two sweeps writing one CSV lost the first one's rows: the second now exits 2 before
    reading anything, naming the first's pid; with --resume it waits and then continues."""
    models("a", "b")
    runner.behave({"a:2048": "sleep"})
    argv = [sys.executable, "-m", "oomrec", "sweep", "--runner", runner.template,
            "--models", "a b", "--lengths", "512 2048", "--output", "out.csv"]  # fmt: skip
    first = subprocess.Popen(
        argv, cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    pids_file = runner.dir / "pids.txt"
    deadline = time.monotonic() + 60
    while not (pids_file.exists() and pids_file.read_text().endswith("\n")):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.02)
    second = subprocess.run(argv, cwd=repo.path, capture_output=True, text=True, timeout=120)
    assert second.returncode == 2
    assert f"out.csv: another sweep is writing it (pid {first.pid} on " in second.stderr
    assert second.stderr.count("\n") == 1
    waiting = subprocess.Popen(
        [*argv, "--resume"], cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    # It says it waits on the lock (a real condition: its own line), and is still running.
    assert waiting.stderr is not None
    said = waiting.stderr.readline()
    assert said.startswith("waiting for the oomrec writing "), said
    assert waiting.poll() is None
    runner.behave({})
    first.send_signal(signal.SIGINT)
    assert first.wait(timeout=60) == 130
    _, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, said + err
    rows = list(csv.reader((repo.path / "out.csv").open(newline="")))
    assert sorted((row[0], row[2]) for row in rows[1:]) == [
        ("a", "2048"), ("a", "512"), ("b", "2048"), ("b", "512"),
    ]  # fmt: skip
    # The lock file stays out of `git status`.
    assert "out.csv.oomrec.lock" not in repo.git("status", "--porcelain")


def test_the_cell_folder_a_killed_sweep_left_is_removed_by_the_next_and_a_live_one_kept(
    repo: Repo, runner: Runner, models: Callable[..., None], tmp_path: Path
) -> None:
    models("a")
    runner.behave({"a:512": "sleep"})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    argv = [sys.executable, "-m", "oomrec", "sweep", "--runner", runner.template,
            "--models", "a", "--lengths", "512"]  # fmt: skip

    def start(output: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*argv, "--output", output], cwd=repo.path, env=env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

    def wait_for_runner() -> tuple[int, int]:
        pids = runner.dir / "pids.txt"
        deadline = time.monotonic() + 60
        while not (pids.exists() and pids.read_text().endswith("\n")):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        runner_pid, sleeper_pid = map(int, pids.read_text().split())
        pids.unlink()
        return runner_pid, sleeper_pid

    killed = start("one.csv")
    runner_pid, sleeper_pid = wait_for_runner()
    killed.kill()
    killed.wait(timeout=60)
    for pid in (sleeper_pid, runner_pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    (left,) = [p for p in tmp.iterdir() if p.name.startswith("oomrec-cells-")]
    live = start("two.csv")
    wait_for_runner()
    try:
        folders = {p.name for p in tmp.iterdir() if p.name.startswith("oomrec-cells-")}
        assert left.name not in folders and len(folders) == 1
        # A third sweep while the second runs leaves the second's folder alone.
        runner.behave({})
        third = subprocess.run([*argv, "--output", "three.csv"], cwd=repo.path, env=env,
                               capture_output=True, text=True, timeout=120)  # fmt: skip
        assert third.returncode == 0, third.stderr
        assert {p.name for p in tmp.iterdir() if p.name.startswith("oomrec-cells-")} == folders
    finally:
        live.send_signal(signal.SIGINT)
        live.communicate(timeout=60)
    assert [p for p in tmp.iterdir() if p.name.startswith("oomrec-cells-")] == []


def test_off_a_terminal_the_summary_is_plain_columns(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    """A log file or a pipe gets aligned columns, not box drawing."""
    models("a", "b")
    result = sweep(cli, runner, "--models", "a b", "--lengths", "512 2048")
    assert result.exit_code == 0, result.stderr
    out = result.stdout + result.stderr
    assert not set(out) & set("─│┃━┏┓┗┛┡┩└┘┌┐├┤┼╇╈"), out
    lines = out.splitlines()
    at = lines.index("cells per model and classification")
    assert lines[at + 1].split() == ["model", "ok", "total"]
    assert lines[at + 4].split() == ["all", "4", "4"]


def test_a_dry_run_refuses_a_missing_models_dir_as_the_run_does(
    cli: Cli, repo: Repo, runner: Runner
) -> None:
    """A dry run raises what the run would refuse before its first cell (a preflight in CI
    catches it): a missing models dir too, said once; with --allow-empty both exit 0."""
    args = ("--models", "a", "--lengths", "512", "--dry-run")
    result = sweep(cli, runner, *args)
    assert result.exit_code == 2
    said = [line for line in result.stderr.splitlines() if "does not exist" in line]
    assert said == [
        "oomrec: error: models dir ./models does not exist: no model can run; pass --models-dir "
        "or set models_dir in [tool.oomrec]"
    ]
    allowed = sweep(cli, runner, *args, "--allow-empty")
    assert allowed.exit_code == 0, allowed.stderr
    assert "does not exist: no model can run (pass --models-dir" in allowed.stderr
