"""One name for a model (issue 40): the sweep and its backstop, fake-OOM keys, record lines as
they are read, `check`, `run` and the report all decide a model's identity by
core/modelnames.model_name, as the bash harness (scripts/bench_longprompt.sh) keys its cells:
the `--models` word, a directory under ./models, compared whole (never by its last part).
Every test goes through the CLI on a real work dir with real runner processes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import TODAY
from tests.scripted_runner import Runner
from tests.test_harness_records import harness_plan, harness_writes
from tests.test_sweep import record_text, sweep

Cli = Callable[..., CliResult]

# The harness's fake-OOM hook as it reads MLXCEL_BENCH_FAKE_OOM: split on commas alone (IFS holds
# no blank, so none is stripped), an empty entry skipped, each entry a key as written; a cell is
# faked when the text `model:len` is a key.
HARNESS_FAKES = r"""
declare -A keys=()
IFS=',' read -ra entries <<< "$1"
for e in "${entries[@]}"; do [ -n "$e" ] && keys["$e"]=1; done
shift
for cell in "$@"; do [ -n "${keys[$cell]:-}" ] && echo "$cell"; done
true
"""


def harness_fakes(value: str, models: list[str], lengths: list[int]) -> set[str]:
    cells = [f"{m}:{n}" for m in models for n in lengths]
    done = subprocess.run(
        ["bash", "-c", HARNESS_FAKES, "harness", value, *cells],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return set(done.stdout.split())


def warnings_of(result: CliResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("warning:")]


@pytest.fixture
def record(repo: Repo) -> Path:
    path = repo.path / "benchmarks" / ".oom-record"
    path.parent.mkdir()
    return path


def test_a_fake_oom_fakes_the_exact_pair_never_another_models_last_part(
    cli: Cli,
    repo: Repo,
    record: Path,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = ["orgA/llama", "orgB/llama", "plain-8b"]
    models(*names)
    value = "llama:512,plain-8b:2048"
    monkeypatch.setenv("MLXCEL_BENCH_FAKE_OOM", value)
    done = sweep(cli, runner, "--models", " ".join(names), "--lengths", "512 2048 8192")
    assert done.exit_code == 0, done.stderr
    # What the harness fakes over the same grid, and what oomrec faked (not launched).
    grid = [f"{m}:{n}" for m in names for n in (512, 2048, 8192)]
    assert harness_fakes(value, names, [512, 2048, 8192]) == {"plain-8b:2048"}
    assert [c for c in grid if c not in runner.launched()] == ["plain-8b:2048", "plain-8b:8192"]
    # Only the faked pair is recorded: a later run of either tool launches orgA/llama and
    # orgB/llama at every length.
    line = f"plain-8b,2048,{TODAY},{repo.head()},,benchmarks/out.csv,testhw,,fake\n"
    assert record_text(repo) == line
    assert warnings_of(done) == [
        "warning: MLXCEL_BENCH_FAKE_OOM: entry 'llama:512' fakes no cell: 'llama' is only the "
        "last part of orgA/llama and orgB/llama; a fake names the model as --models does "
        "(e.g. orgA/llama:512)"
    ]


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("bogus", "not model:length"),
        ("m:2k", "length '2k' is not a token count in digits"),
        ("m:0512", "the harness compares the text, and '0512' is no ladder length as written"),
        (" m:512", "it holds a blank, and no model or length does"),
        ("m:512 ", "it holds a blank, and no model or length does"),
        (":512", "not model:length"),
    ],
)
def test_fake_oom_entries_the_harness_cannot_use_are_ignored_with_one_warning_each(
    cli: Cli,
    repo: Repo,
    record: Path,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    entry: str,
    why: str,
) -> None:
    models("m")
    # An empty entry (`,,`) the harness skips by design: no warning for it.
    value = f"{entry},,m:2048"
    monkeypatch.setenv("MLXCEL_BENCH_FAKE_OOM", value)
    done = sweep(cli, runner, "--models", "m", "--lengths", "512 2048")
    assert done.exit_code == 0, done.stderr
    assert harness_fakes(value, ["m"], [512, 2048]) == {"m:2048"}
    assert runner.launched() == ["m:512"]
    assert warnings_of(done) == [
        f"warning: MLXCEL_BENCH_FAKE_OOM: entry {entry!r} ignored ({why}), as the harness "
        "ignores it; write e.g. gemma-4-31b-it-4bit:32768"
    ]
    # The flag reads the same way.
    monkeypatch.delenv("MLXCEL_BENCH_FAKE_OOM")
    dry = cli("sweep", "--models", "m", "--lengths", "512", "--runner", "true", "--dry-run",
              "--fake-oom", entry)  # fmt: skip
    assert dry.exit_code == 0, dry.stderr
    assert len(warnings_of(dry)) == 1 and "--fake-oom: entry" in warnings_of(dry)[0]


def test_a_harness_record_of_a_trailing_slash_applies_and_both_sides_name_it_alike(
    cli: Cli, repo: Repo, record: Path, runner: Runner, models: Callable[..., None]
) -> None:
    models("plain-8b", "other")
    # The harness run with --models "plain-8b/" writes its key as typed.
    harness_writes(record, "plain-8b/", 2048, "benchmarks/run.csv")
    for typed in ("plain-8b", "plain-8b/", "./models/plain-8b/"):
        dry = cli("sweep", "--models", typed, "--lengths", "512 2048 8192", "--runner", "true",
                  "--dry-run", "--json")  # fmt: skip
        assert dry.exit_code == 0, dry.stderr
        cells = {(c["model"], c["length"]): c["action"] for c in json.loads(dry.stdout)["cells"]}
        assert cells == {
            ("plain-8b", 512): "run",
            ("plain-8b", 2048): "SKIP:oom_record",
            ("plain-8b", 8192): "SKIP:oom_record",
        }
    # The writing side: a sweep of "other/" records `other`, the name the harness reads for
    # --models other; and `plain-8b plain-8b/` is one model, run once.
    runner.behave({"other:512": "exit:1:std::bad_alloc"})
    done = sweep(cli, runner, "--models", "other/ plain-8b plain-8b/", "--lengths", "512 2048")
    assert done.exit_code == 0, done.stderr
    assert runner.launched() == ["other:512", "plain-8b:512"]
    assert record.read_text().splitlines()[1].startswith("other,512,")
    assert harness_plan(record, ["other"], [512, 2048]) == {"other:512", "other:2048"}
    assert "note: model 'plain-8b/' is 'plain-8b', given before: its cells run once" in (
        done.stderr.splitlines()
    )


def test_a_model_folder_named_with_two_dots_runs_and_only_a_dot_dot_part_is_refused(
    cli: Cli, repo: Repo, record: Path, runner: Runner, models: Callable[..., None]
) -> None:
    models("a..b", "org/x..y", "plain-8b")
    runner.behave({"a..b:2048": "exit:1:std::bad_alloc"})
    done = sweep(cli, runner, "--models", "a..b org/x..y plain-8b", "--lengths", "512 2048 8192")
    assert done.exit_code == 0, done.stderr
    assert runner.launched() == [
        "a..b:512",
        "a..b:2048",
        "org/x..y:512",
        "org/x..y:2048",
        "org/x..y:8192",
        "plain-8b:512",
        "plain-8b:2048",
        "plain-8b:8192",
    ]
    assert record.read_text().startswith("a..b,2048,")
    again = sweep(cli, runner, "--models", "a..b", "--lengths", "8192")
    assert again.exit_code == 0 and "SKIP:oom_record" in again.stderr
    # A record added by hand by that name is a name like any other.
    added = cli("record", "add", "org/x..y", "32768")
    assert added.exit_code == 0, added.stderr
    for bad in ("../plain-8b", "org/../plain-8b", ".."):
        refused = cli("sweep", "--models", bad, "--runner", "true", "--dry-run")
        assert refused.exit_code == 2
        assert "'..' part" in refused.stderr


def test_check_refuses_a_name_that_is_no_model_and_resolves_the_runners_last_part(
    cli: Cli, repo: Repo, record: Path, models: Callable[..., None]
) -> None:
    models("org/moe-30b", "big/llama", "small/llama", "gemma-4-31b-it-4bit")
    harness_writes(record, "org/moe-30b", 8192, "benchmarks/run.csv")
    # The runner's name for org/moe-30b: the record of org/moe-30b applies, and a notice says so.
    said = cli("check", "moe-30b", "32k")
    assert said.exit_code == 1, said.stderr
    assert said.stdout.startswith("SKIP:oom_record: org/moe-30b @ 32768 on testhw: recorded OOM")
    assert said.stderr == (
        "note: model 'moe-30b' read as 'org/moe-30b' (the one model under ./models whose last "
        "part it is)\n"
    )
    as_json = cli("check", "moe-30b", "32k", "--json")
    assert json.loads(as_json.stdout)["model"] == "org/moe-30b"
    # A typo, a last part two models share, a model of another repository: exit 2, one line.
    for typed, says in [
        ("gemma-4-31b-it-4bt", "is not a model under ./models; did you mean gemma-4-31b-it-4bit?"),
        ("llama", "is the last part of big/llama and small/llama under ./models; name one"),
        ("nosuch", "is not a model under ./models; give its directory's name there"),
        ("org/moe-3b", "did you mean org/moe-30b?"),
    ]:
        refused = cli("check", typed, "512")
        assert refused.exit_code == 2, (typed, refused.stdout)
        assert refused.stdout == ""
        assert refused.stderr.startswith(f"oomrec: error: model {typed!r} ")
        assert says in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
    # The plain path a wrapper script takes (no Typer) says the same.
    plain = subprocess.run(
        [sys.executable, "-m", "oomrec", "check", "nosuch", "512"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert plain.returncode == 2 and "is not a model under ./models" in plain.stderr


def test_run_refuses_a_name_that_is_no_model_and_launches_nothing(
    cli: Cli, repo: Repo, record: Path, models: Callable[..., None], tmp_path: Path
) -> None:
    models("org/moe-30b")
    ran = tmp_path / "ran"
    command = ["--", "sh", "-c", f"echo {{model}} >> {ran}"]
    refused = cli("run", "nosuch", "2k", *command)
    assert refused.exit_code == 2
    assert refused.stderr == (
        "oomrec: error: model 'nosuch' is not a model under ./models; give its directory's name "
        "there\n"
    )
    assert not ran.exists()
    assert not list((repo.path / "benchmarks").glob("*.csv"))
    # The runner's last-part name runs the nested model, and its record applies to it.
    done = cli("run", "moe-30b", "2k", *command)
    assert done.exit_code == 0, done.stderr
    assert ran.read_text() == "org/moe-30b\n"
    assert (
        "note: model 'moe-30b' read as 'org/moe-30b' (the one model under ./models whose last "
        "part it is)"
    ) in done.stderr.splitlines()
    harness_writes(record, "org/moe-30b", 8192, "benchmarks/run.csv")
    skipped = cli("run", "moe-30b", "32k", *command)
    assert skipped.exit_code == 1
    assert skipped.stderr.splitlines()[1].startswith("SKIP:oom_record: org/moe-30b @ 32768")
    assert ran.read_text() == "org/moe-30b\n"


# A runner as the harness's bench_decode.sh writes its row: `model` is the folder's name (the
# last part), `model_path` the path as given; org/moe-30b runs out of memory from 8192 tokens.
BASENAME_RUNNER = r"""
import sys
model_path, length, cell_csv = sys.argv[1:4]
if model_path.rstrip("/").endswith("moe-30b") and int(length) >= 8192:
    sys.exit("std::bad_alloc")
name = model_path.rstrip("/").rsplit("/", 1)[-1]
tail = f'2026-12-02,hw,0.3.3,release,32,"Hi",{length}'
open(cell_csv, "w").write(f"HEADER\n{name},{model_path},{length},32,1.0,2.0,3.0,4.0,{tail}\n")
"""


def test_report_gives_one_row_per_model_whatever_name_its_rows_carry(
    cli: Cli, repo: Repo, record: Path, models: Callable[..., None], tmp_path: Path
) -> None:
    from oomrec.core.schema import HEADER_15

    models("org/moe-30b", "big/llama", "small/llama")
    script = tmp_path / "runner.py"
    script.write_text(BASENAME_RUNNER.replace("HEADER", HEADER_15))
    done = cli(
        "sweep", "--models", "org/moe-30b big/llama small/llama", "--lengths", "2048 8192 32768",
        "--output", "benchmarks/sweep.csv",
        "--runner", f"{sys.executable} {script} {{model_path}} {{length}} {{cell_csv}}",
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    rows = (repo.path / "benchmarks" / "sweep.csv").read_text().splitlines()
    # The runner named org/moe-30b `moe-30b`; the sweep's skip row names it whole.
    assert [r.split(",")[0] for r in rows[1:4]] == ["moe-30b", "org/moe-30b", "org/moe-30b"]
    # A harness CSV of `--models "plain-8b/"`: its skip rows name `plain-8b/`, the runner's
    # rows `plain-8b`; no provenance beside it.
    (repo.path / "benchmarks" / "harness.csv").write_text(
        f"{HEADER_15}\n"
        'plain-8b,./models/plain-8b/,512,32,1.0,2.0,3.0,4.0,2026-12-02,hw,0.3.3,release,32,"Hi",512\n'
        'plain-8b/,./models/plain-8b/,,,,,,,2026-12-02,,,,32,"",2048,SKIP:oom_record\n'
    )
    report = cli("report", "benchmarks", "--json")
    assert report.exit_code == 0, report.stderr
    body = json.loads(report.stdout)
    # Two models that share the last part `llama` keep the runner's name: it is neither's alone.
    assert body["models"] == ["llama", "org/moe-30b", "plain-8b"]
    [moe] = [f for f in body["frontier"] if f["model"] == "org/moe-30b"]
    assert moe["machine"] == "testhw"
    assert (moe["ran_max"]["length"], moe["oom_min"]["length"]) == (2048, 8192)
    text = cli("report", "benchmarks")
    assert text.exit_code == 0
    assert not any(line.startswith("moe-30b ") for line in text.stdout.splitlines())


def test_record_add_and_retract_take_a_trailing_slash_as_the_same_model(
    cli: Cli, repo: Repo, record: Path, models: Callable[..., None]
) -> None:
    models("plain-8b")
    harness_writes(record, "plain-8b/", 2048, "benchmarks/run.csv")
    added = cli("record", "add", "plain-8b/", "8192")
    assert added.exit_code == 0, added.stderr
    assert record.read_text().splitlines()[1].startswith("plain-8b,8192,")
    gone = cli("record", "retract", "plain-8b", "2048", "--reason", "typo")
    assert gone.exit_code == 0, gone.stderr
    assert "retracted" in gone.stderr + gone.stdout
    assert [line.split(",")[:2] for line in record.read_text().splitlines()] == [
        ["plain-8b", "8192"]
    ]
    assert harness_plan(record, ["plain-8b"], [2048, 8192]) == {"plain-8b:8192"}


@pytest.mark.parametrize(
    "name",
    ["m" * 10_000, "/".join(["d" * 200] * 50)],
    ids=["one-10kB-part", "fifty-200-byte-parts"],
)
def test_a_name_no_directory_can_have_is_refused_before_anything_is_written(
    cli: Cli, repo: Repo, runner: Runner, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A 10 kB model name was written to the record before `record add` failed on it (the
    file system refuses the name): refused first, in one short line, for every command."""
    monkeypatch.setenv("MLXCEL_BENCH_FAKE_OOM", f"{name}:512")
    record = repo.path / "benchmarks" / ".oom-record"
    for args in (
        ("record", "add", name, "512"),
        ("sweep", "--runner", runner.template, "--models", name, "--lengths", "512 1024",
         "--allow-empty"),
        ("check", name, "512"),
        ("run", name, "512", "--", "true"),
        ("record", "retract", name, "512", "--reason", "x"),
    ):  # fmt: skip
        result = cli(*args)
        assert result.exit_code == 2, (args[:2], result.stderr[:300])
        [line] = result.stderr.splitlines()
        assert "bytes" in line and len(line) < 300, line
        assert "Traceback" not in result.stderr
    assert not record.exists()
    assert runner.launched() == []
