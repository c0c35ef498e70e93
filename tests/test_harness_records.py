"""oomrec reads the record as the bash harness (scripts/bench_longprompt.sh) means it: both
readers over the same files launch the same cells, and where they still differ oomrec is on the
safe side and says so. The harness's side is its record-reading loop and its line-writing
`echo`, transcribed below as small bash functions."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core import records
from oomrec.core.schema import HEADER_15
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.scripted_runner import Runner
from tests.test_sweep import record_text, sweep

Cli = Callable[..., CliResult]

# The harness's pre-skip: `IFS=, read` of model, length and the rest (no CSV quoting, no
# stripping: IFS holds no blank), a last line without a newline read too (`|| [ -n "$m" ]`), six
# fields at least, the length all digits and compared in bash arithmetic (`02048` is octal there,
# and an error: not honoured).
HARNESS_SKIPS = r"""
record_skips() {
  local model="$1" len="$2" file="$3" m l rest
  [ -f "$file" ] || return 1
  while IFS=, read -r m l rest || [ -n "$m" ]; do
    [ "$m" = "$model" ] || continue
    case "$l" in ''|*[!0-9]*) continue ;; esac
    commas="${rest//[!,]/}"
    [ "${#commas}" -ge 3 ] || continue
    if (( l <= len )) 2>/dev/null; then return 0; fi
  done < "$file"
  return 1
}
record_skips "$@"
"""

# The harness's record line: `echo` of six fields, its --output path as given (unquoted).
HARNESS_WRITES = r"""
echo "$1,$2,2026-12-01,abc1234,,$3" >> "$4"
"""


def harness_skips(record: Path, model: str, length: int) -> bool:
    done = subprocess.run(
        ["bash", "-c", HARNESS_SKIPS, "harness", model, str(length), str(record)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode == 0


def harness_writes(record: Path, model: str, length: int, output: str) -> None:
    subprocess.run(
        ["bash", "-c", HARNESS_WRITES, "harness", model, str(length), output, str(record)],
        check=True,
        timeout=30,
    )


def oomrec_plan(cli: Cli, models: list[str], lengths: list[int]) -> tuple[set[str], list[str]]:
    """The cells a dry run would not launch (`model:length`), and its warnings."""
    result = cli(
        "sweep", "--models", " ".join(models), "--lengths", " ".join(map(str, lengths)),
        "--runner", "true", "--dry-run", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    skipped = {
        f"{c['model']}:{c['length']}"
        for c in json.loads(result.stdout)["cells"]
        if c["action"] != "run"
    }
    warnings = [" ".join(w.split()) for w in result.stderr.splitlines() if w.startswith("warning")]
    return skipped, warnings


def harness_plan(record: Path, models: list[str], lengths: list[int]) -> set[str]:
    return {f"{m}:{n}" for m in models for n in lengths if harness_skips(record, m, n)}


LENGTHS = [512, 2048, 8192, 32768]


@pytest.fixture
def record(repo: Repo) -> Path:
    path = repo.path / "benchmarks" / ".oom-record"
    path.parent.mkdir()
    return path


def test_nested_names_and_shared_last_parts_are_read_alike(
    cli: Cli, repo: Repo, record: Path, models: Callable[..., None]
) -> None:
    names = ["org/moe-30b", "big/llama", "small/llama", "plain-8b"]
    models(*names)
    harness_writes(record, "org/moe-30b", 8192, "benchmarks/run.csv")
    harness_writes(record, "big/llama", 8192, "benchmarks/run.csv")
    ours, warnings = oomrec_plan(cli, names, LENGTHS)
    theirs = harness_plan(record, names, LENGTHS)
    assert (
        ours
        == theirs
        == {"org/moe-30b:8192", "org/moe-30b:32768"}
        | {
            "big/llama:8192",
            "big/llama:32768",
        }
    )
    assert warnings == []


def test_a_record_of_a_last_part_applies_to_each_model_that_shares_it_and_says_so(
    cli: Cli, repo: Repo, record: Path, models: Callable[..., None]
) -> None:
    names = ["big/llama", "small/llama", "org/moe-30b"]
    models(*names)
    # As earlier oomrec versions wrote nested models: their last part.
    record.write_text("llama,8192,2026-12-01,abc1234,,s\nmoe-30b,2048,2026-12-01,abc1234,,s\n")
    ours, warnings = oomrec_plan(cli, names, LENGTHS)
    # The harness reads these as other models' lines; oomrec applies them (the safe side): to
    # the one model of that last part, and to both models that share one, with a warning.
    assert harness_plan(record, names, LENGTHS) == set()
    assert ours == {f"{m}:{n}" for m in ("big/llama", "small/llama") for n in (8192, 32768)} | {
        f"org/moe-30b:{n}" for n in (2048, 8192, 32768)
    }
    assert warnings == [
        "warning: benchmarks/.oom-record:1: model 'llama' is the last part of big/llama and "
        "small/llama: the record applies to each of them (the safe side); if it is one model's, "
        "rewrite its first field as that model's name under the models dir (e.g. big/llama)"
    ]


@pytest.mark.parametrize(
    "output",
    [
        "benchmarks/run,1.csv",
        "benchmarks/a,b,c,d.csv",
        "bench marks/run 1.csv",
        'benchmarks/"q".csv',
        'benchmarks/"a,b".csv',
        "benchmarks/run,gb10.csv",
        "benchmarks/run,testhw,123,guard.csv",
        "benchmarks/x,y,z,w,v.csv",
        # An `--output` with no `.csv` whose last part reads as a tag: this host's and another's.
        "benchmarks/sweep,testhw",
        "benchmarks/sweep,v100",
    ],
)
def test_the_harness_source_path_with_commas_spaces_and_quotes_keeps_the_record_in_play(
    cli: Cli, repo: Repo, record: Path, models: Callable[..., None], output: str
) -> None:
    models("m")
    harness_writes(record, "m", 2048, output)
    # And an oomrec line of another machine after it: still scoped to that machine.
    record.write_text(record.read_text() + "m,512,2026-12-01,abc1234,,benchmarks/o.csv,v100\n")
    ours, warnings = oomrec_plan(cli, ["m"], LENGTHS)
    assert (
        ours
        == harness_plan(record, ["m"], [n for n in LENGTHS if n >= 2048])
        == {
            "m:2048",
            "m:8192",
            "m:32768",
        }
    )
    [line] = records.RecordFile(record).load().lines[:1]
    assert line.record is not None
    assert (line.record.model, line.record.hardware, line.record.mem_bytes) == ("m", None, None)
    if "," in output and '"' not in output:
        assert line.record.source_csv == output
        assert any(records.UNQUOTED_SOURCE in w for w in warnings), warnings


@pytest.mark.parametrize(
    ("tail", "honoured"),
    [
        ("m,2048,2026-12-01,abc1234,,benchmarks/run.csv", True),
        ("m,2048,2026-12-01,abc1234,,", True),
        ("m,2048,2026-12-01,abc1234,,benchmarks/run.csv,testh", True),
        ("m,2048,2026-12-01,abc1234", False),
        ("m,20", False),
    ],
)
def test_a_last_line_without_a_newline_is_read_alike_and_kept_by_the_next_writer(
    cli: Cli,
    repo: Repo,
    record: Path,
    runner: Runner,
    models: Callable[..., None],
    tail: str,
    honoured: bool,
) -> None:
    models("m", "n")
    record.write_text("n,512,2026-12-01,abc1234,,s\n" + tail)
    expected = {"m:2048", "m:8192", "m:32768"} if honoured else set()
    ours, _ = oomrec_plan(cli, ["m"], LENGTHS)
    assert ours == harness_plan(record, ["m"], LENGTHS) == expected
    # A real sweep appends a record: the harness must still read the line after it.
    runner.behave({"n:512": "exit:1:std::bad_alloc"})
    done = sweep(cli, runner, "--models", "n", "--lengths", "512", "--ignore-record")
    assert done.exit_code == 0, done.stderr
    assert harness_plan(record, ["m"], LENGTHS) == expected
    ours, _ = oomrec_plan(cli, ["m"], LENGTHS)
    assert ours == expected
    text = record_text(repo)
    assert text is not None and text.endswith("\n")
    torn = record.with_name(".oom-record.torn")
    # Nothing is lost: a line the harness does not honour, or one whose fields after the sixth
    # were dropped (they may be cut short), is kept as it was beside the record.
    if tail.count(",") != 5:
        assert torn.read_text() == tail + "\n"
    else:
        assert not torn.exists()


@pytest.mark.parametrize(
    "line",
    [
        "m, 2048,2026-12-01,abc1234,,s",
        "m ,2048,2026-12-01,abc1234,,s",
        "m,02048,2026-12-01,abc1234,,s",
        "\ufeffm,2048,2026-12-01,abc1234,,s",
    ],
)
def test_lines_the_harness_would_not_honour_apply_with_a_warning(
    cli: Cli, repo: Repo, record: Path, models: Callable[..., None], line: str
) -> None:
    models("m")
    # Twice (each kind is warned once), but a BOM only starts a file.
    record.write_text(line + "\n" + ("" if line.startswith("\ufeff") else line + "\n"))
    ours, warnings = oomrec_plan(cli, ["m"], LENGTHS)
    assert harness_plan(record, ["m"], LENGTHS) == set()
    assert ours == {"m:2048", "m:8192", "m:32768"}
    assert len(warnings) == 1, warnings
    assert "benchmarks/.oom-record:1: the bash harness" in warnings[0]
    assert "would not honour this line" in warnings[0]


def test_a_sweep_over_two_models_of_one_last_part_runs_the_one_that_fits(
    cli: Cli, repo: Repo, record: Path, runner: Runner, models: Callable[..., None]
) -> None:
    models("big/llama", "small/llama")
    runner.behave({"big/llama:8192": "exit:1:std::bad_alloc"})
    args = ("--models", "big/llama small/llama", "--lengths", "2048 8192 32768")
    first = sweep(cli, runner, *args)
    assert first.exit_code == 0, first.stderr
    assert record_text(repo) is not None
    assert record.read_text().startswith("big/llama,8192,")
    assert "small/llama:8192" in runner.launched() and "small/llama:32768" in runner.launched()
    before = len(runner.launched())
    again = sweep(cli, runner, *args)
    assert again.exit_code == 0, again.stderr
    launched = runner.launched()[before:]
    assert launched == [
        "big/llama:2048",
        "small/llama:2048",
        "small/llama:8192",
        "small/llama:32768",
    ]
    rows = (repo.path / "benchmarks" / "out.csv").read_text().splitlines()
    assert any(
        r.startswith("big/llama,./models/big/llama,") and "SKIP:oom_record" in r for r in rows
    )


def test_the_harness_fake_oom_key_is_the_name_as_given(
    cli: Cli, repo: Repo, monkeypatch: pytest.MonkeyPatch, models: Callable[..., None]
) -> None:
    models("org/plain-8b", "other/plain-8b")
    monkeypatch.setenv("MLXCEL_BENCH_FAKE_OOM", "org/plain-8b:2048")
    ours, _ = oomrec_plan(cli, ["org/plain-8b", "other/plain-8b"], [512, 2048, 8192])
    assert ours == {"org/plain-8b:2048", "org/plain-8b:8192"}


def test_allow_empty_covers_a_missing_models_dir_as_the_harness_does(cli: Cli, repo: Repo) -> None:
    refused = cli("sweep", "--models", "m", "--runner", "true", "--output", "o.csv")
    assert refused.exit_code == 2
    assert "models dir ./models does not exist" in refused.stderr
    allowed = cli(
        "sweep", "--models", "m", "--runner", "true", "--output", "o.csv", "--allow-empty"
    )
    assert allowed.exit_code == 0, allowed.stderr
    assert "models dir ./models does not exist" in allowed.stderr
    # The harness leaves a CSV holding only its header.
    assert (repo.path / "o.csv").read_text().count("\n") == 1


# A runner as the harness's bench_decode.sh writes its row: the model's last part, its path whole;
# `big/llama` runs out of memory from 1024 tokens.
LAST_PART_RUNNER = r"""
import sys
model_path, length, cell_csv = sys.argv[1:4]
if model_path.endswith("big/llama") and int(length) >= 1024:
    sys.exit("std::bad_alloc")
name = model_path.rstrip("/").rsplit("/", 1)[-1]
tail = f'2026-12-02,hw,0.3.3,release,32,"Hi",{length}'
open(cell_csv, "w").write(f"HEADER\n{name},{model_path},{length},32,1.0,2.0,3.0,4.0,{tail}\n")
""".replace("HEADER", HEADER_15)


def test_a_resume_without_provenance_finds_a_nested_models_rows_by_their_path(
    cli: Cli, repo: Repo, record: Path, models: Callable[..., None], tmp_path: Path
) -> None:
    models("big/llama", "small/llama")
    script = tmp_path / "runner.py"
    script.write_text(LAST_PART_RUNNER)
    args = ["--models", "big/llama small/llama", "--output", "o.csv", "--runner",
            f"{sys.executable} {script} {{model_path}} {{length}} {{cell_csv}}"]  # fmt: skip
    first = cli("sweep", *args, "--lengths", "512 1024")
    assert first.exit_code == 0, first.stderr
    # As a harness run leaves it: rows, no provenance, no record.
    (repo.path / "o.csv.oomrec.json").unlink()
    record.unlink()
    again = cli("sweep", *args, "--lengths", "512 1024 2048", "--resume-keep", "--json")
    assert again.exit_code == 0, again.stderr
    verdicts = {(c["model"], c["length"]): c["verdict"] for c in json.loads(again.stdout)["cells"]}
    assert verdicts == {
        ("big/llama", 512): "done",
        ("big/llama", 1024): "done",
        ("big/llama", 2048): "SKIP:oom_backstop",
        ("small/llama", 512): "done",
        ("small/llama", 1024): "done",
        ("small/llama", 2048): "ok",
    }
