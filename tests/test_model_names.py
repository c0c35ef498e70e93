"""One name for a model (issue 40): the sweep and its backstop, fake-OOM keys, record lines as
they are read, `check`, `run` and the report all decide a model's identity by
core/modelnames.model_name, as the bash harness (scripts/bench_longprompt.sh) keys its cells:
the `--models` word, a directory under ./models, compared whole (never by its last part).
Every test goes through the CLI on a real work dir with real runner processes."""

from __future__ import annotations

import json
import subprocess
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
