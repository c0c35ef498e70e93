"""oomrec means each line, flag and file as the bash harness (scripts/bench_longprompt.sh) does,
and where the two still differ it takes the safe side and says so: each case runs oomrec's sweep
through the CLI on a real work dir and compares its record file and CSVs with what the harness
would leave (its reader transcribed in tests/test_harness_records.py)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core import hardware
from oomrec.core.schema import HEADER_15
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import TODAY, gone
from tests.scripted_runner import Runner
from tests.test_harness_records import harness_plan, oomrec_plan
from tests.test_sweep import skip, sweep
from tests.tty import run_on_tty

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


# --- the default CSV name ----------------------------------------------------------------------

NVIDIA_SMI = """#!/bin/sh
# As nvidia-smi on an H200 host: its bare call succeeds, the name query prints the GPU's name.
case "$1" in
  --query-gpu=name) echo "NVIDIA H200" ;;
  --query-gpu=memory.total) echo "143771" ;;
  *) echo "NVIDIA-SMI 550.54" ;;
esac
"""


def _path_with(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nvidia: bool) -> None:
    """PATH as on a host with (or without) an NVIDIA GPU: a real `nvidia-smi` executable, or
    none anywhere on PATH."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    for tool in ("git", "sh", "bash", "env", "sysctl", "uname"):
        found = shutil.which(tool)
        if found and not (fake / tool).exists():
            (fake / tool).symlink_to(found)
    if nvidia:
        (fake / "nvidia-smi").write_text(NVIDIA_SMI)
        (fake / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))


@pytest.mark.parametrize(
    ("nvidia", "name"),
    [(True, "cuda_nvidia_h200_longprompt"), (False, "metal__longprompt")],
)
def test_the_default_csv_is_named_as_the_harness_names_it(
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    nvidia: bool,
    name: str,
) -> None:
    """bench_longprompt.sh names its CSV `{backend}_{hw}_longprompt_{date}.csv` from
    `nvidia-smi` (`cuda`, the GPU's name lowercased), else `metal` and an empty hw; a record
    keeps oomrec's short tag."""
    models("plain-8b")
    _path_with(monkeypatch, tmp_path, nvidia)
    runner.behave({"plain-8b:2048": "exit:1:std::bad_alloc"})
    try:
        result = cli("sweep", "--runner", f"{sys.executable} {runner.template}",
                     "--models", "plain-8b", "--lengths", "512 2048")  # fmt: skip
    finally:
        hardware._probe.cache_clear()
    assert result.exit_code == 0, result.stderr
    expected = f"benchmarks/{name}_{TODAY}.csv"
    assert [p.name for p in (repo.path / "benchmarks").glob("*.csv")] == [Path(expected).name]
    rows = (repo.path / expected).read_text().splitlines()
    assert [row.rsplit(",", 1)[-1] for row in rows[1:]] == ["512", "SKIP:oom"]
    # The record names that CSV and keeps the short tag.
    record = (repo.path / "benchmarks" / ".oom-record").read_text()
    assert record.endswith(f",{expected},testhw,\n")


def test_oomrec_backend_names_the_csv_backend(
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    models("plain-8b")
    _path_with(monkeypatch, tmp_path, nvidia=False)
    monkeypatch.setenv("OOMREC_BACKEND", "rocm")
    result = cli("sweep", "--runner", f"{sys.executable} {runner.template}",
                 "--models", "plain-8b", "--lengths", "512")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (repo.path / "benchmarks" / f"rocm__longprompt_{TODAY}.csv").exists()


# --- the cell's CSV belongs to the cell --------------------------------------------------------

# A runner as the harness's bench_decode.sh: its row names the model directory's basename after
# symlinks (`basename "$(realpath ...)"` is what some runners write); a cell whose file
# `cells/LENGTH.csv` exists writes those bytes instead, as given.
BYTES_RUNNER = r"""
import os, sys
from pathlib import Path
here = Path(__file__).parent
model_path, length, cell_csv = sys.argv[1:4]
with open(here / "launched.txt", "a") as log:
    log.write(f"{length}\n")
given = here / "cells" / f"{length}.csv"
if given.exists():
    Path(cell_csv).write_bytes(given.read_bytes())
else:
    name = os.path.basename(os.path.realpath(model_path))
    tail = f'2026-07-03,hw,0.3.3,release,32,"Hello, how are you today?",{length}'
    Path(cell_csv).write_text(f"HEADER\n{name},{model_path},{length},32,1.0,2.0,3.0,4.0,{tail}\n")
""".replace("HEADER", HEADER_15)

# bench_longprompt.sh's reading of a cell: cell_classification (the second line's last field,
# kept when it starts SKIP:/FAIL:) and what it copies (`tail -n +2` after the first cell).
HARNESS_CLASSIFIES = r"""
row=$(tail -n +2 "$1" 2>/dev/null | head -n 1)
if [[ -z "$row" ]]; then echo ""; exit 0; fi
token=$(awk -F, '{print $NF}' <<< "$row")
if [[ "$token" =~ ^(SKIP|FAIL): ]]; then printf '%s' "$token"; else echo ""; fi
"""


def harness_classifies(cell: Path) -> str:
    done = subprocess.run(
        ["bash", "-c", HARNESS_CLASSIFIES, "harness", str(cell)],
        capture_output=True,
        timeout=30,
        check=True,
    )
    return done.stdout.decode().removesuffix("\n")


def _bytes_runner(tmp_path: Path, cells: dict[int, bytes]) -> tuple[Path, str]:
    folder = tmp_path / "bytes-runner"
    (folder / "cells").mkdir(parents=True)
    script = folder / "runner.py"
    script.write_text(BYTES_RUNNER)
    for length, data in cells.items():
        (folder / "cells" / f"{length}.csv").write_bytes(data)
    return folder, f"{sys.executable} {script} {{model_path}} {{length}} {{cell_csv}}"


def _launched(folder: Path) -> list[str]:
    log = folder / "launched.txt"
    return log.read_text().split() if log.exists() else []


def test_a_row_naming_the_symlinks_target_is_the_cells_row(
    cli: Cli, repo: Repo, tmp_path: Path
) -> None:
    """models/plain-8b links to a folder of another name, and the runner writes that name: its
    SKIP:oom is the cell's, recorded and backstopped, its row copied as written."""
    target = tmp_path / "store" / "Plain-8B-weights"
    target.mkdir(parents=True)
    (repo.path / "models").mkdir()
    (repo.path / "models" / "plain-8b").symlink_to(target)
    oom = (
        'Plain-8B-weights,./models/plain-8b,,,,,,,2026-07-03,hw,0.3.3,release,32,"Hello, how '
        'are you today?",2048,SKIP:oom'
    )
    folder, template = _bytes_runner(tmp_path, {2048: f"{HEADER_15}\n{oom}\n".encode()})
    result = cli("sweep", "--runner", template, "--output", "benchmarks/out.csv",
                 "--models", "plain-8b", "--lengths", "512 2048 8192")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert _launched(folder) == ["512", "2048"]
    lines = (repo.path / "benchmarks" / "out.csv").read_text().splitlines()
    assert lines[2] == oom
    assert lines[3].endswith(",8192,SKIP:oom_backstop")
    record = (repo.path / "benchmarks" / ".oom-record").read_text()
    assert record.startswith("plain-8b,2048,")
    warned = [line for line in result.stderr.splitlines() if "'Plain-8B-weights'" in line]
    assert len(warned) == 1, result.stderr


@pytest.mark.parametrize(
    ("cell", "harness"),
    [
        # A CRLF row: the harness compares `SKIP:oom\r` and misses the OOM.
        (f"{HEADER_15}\r\nROW\r\n", "SKIP:oom\r"),
        # A trailing blank after the token: the same.
        (f"{HEADER_15}\nROW \n", "SKIP:oom "),
        # A blank line after the header: the harness classifies that blank line, a success.
        (f"{HEADER_15}\n\nROW\n", ""),
    ],
    ids=["crlf", "trailing-space", "blank-line"],
)
def test_a_row_the_harness_would_misread_is_an_oom_copied_as_written(
    cli: Cli, repo: Repo, tmp_path: Path, models: Callable[..., None], cell: str, harness: str
) -> None:
    models("plain-8b")
    row = 'plain-8b,./models/plain-8b,,,,,,,2026-07-03,,,,32,"Hello, you",2048,SKIP:oom'
    data = cell.replace("ROW", row).encode()
    folder, template = _bytes_runner(tmp_path, {2048: data})
    (tmp_path / "cell.csv").write_bytes(data)
    assert harness_classifies(tmp_path / "cell.csv") == harness
    result = cli("sweep", "--runner", template, "--output", "benchmarks/out.csv",
                 "--models", "plain-8b", "--lengths", "512 2048 8192")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    # The safe side: nothing above the OOM is launched, and the record holds it.
    assert _launched(folder) == ["512", "2048"]
    record = (repo.path / "benchmarks" / ".oom-record").read_text()
    assert record.startswith("plain-8b,2048,")
    # The runner's row, byte for byte as it wrote it (a blank line is no row).
    out = (repo.path / "benchmarks" / "out.csv").read_bytes()
    ending = "\r\n" if "\r\n" in cell else " \n" if "ROW \n" in cell else "\n"
    assert (row + ending).encode() in out
    said = [line for line in result.stderr.splitlines() if "the harness would read" in line]
    assert len(said) == 1 and "the safe side" in said[0], result.stderr


@pytest.mark.parametrize(
    ("second", "token", "launched"),
    [("", "512", ["plain-8b:512", "plain-8b:2048"]), ("SKIP:oom", "SKIP:oom", ["plain-8b:512"])],
    ids=["same-row-twice", "success-then-oom"],
)
def test_a_runner_that_writes_its_row_twice_gives_the_cell_one_row(
    cli: Cli,
    repo: Repo,
    runner: Runner,
    models: Callable[..., None],
    second: str,
    token: str,
    launched: list[str],
) -> None:
    """The harness copies every line after the header; a cell has one row, so oomrec keeps one
    (its SKIP:oom when one of them is, the safe side) and says how many it left out."""
    models("plain-8b")
    runner.behave({"plain-8b:512": f"twice:{second}"})
    result = sweep(cli, runner, "--models", "plain-8b", "--lengths", "512 2048")
    assert result.exit_code == 0, result.stderr
    rows = (repo.path / "benchmarks" / "out.csv").read_text().splitlines()[1:]
    assert [r for r in rows if ",512," in r or r.endswith(",512")] == [rows[0]]
    assert rows[0].rsplit(",", 1)[-1] == token
    assert runner.launched() == launched
    said = [line for line in result.stderr.splitlines() if "rows for this cell" in line]
    assert len(said) == 1 and "1 left out" in said[0], result.stderr
    record = repo.path / "benchmarks" / ".oom-record"
    assert record.exists() == (token == "SKIP:oom")


# --- an existing CSV ---------------------------------------------------------------------------


def _replaced(repo: Repo, name: str = "out.csv") -> list[Path]:
    found = (repo.path / "benchmarks").glob(f"{name}.replaced-*")
    return sorted(p for p in found if ".oomrec." not in p.name)


def test_a_second_sweep_the_same_day_moves_the_first_csv_aside(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    """The harness truncates its CSV at start; the earlier sweep's rows (which its record line
    names as its source) are moved aside, never lost, and the sweep says so."""
    models("a")
    runner.behave({"a:2048": "exit:1:std::bad_alloc"})
    first = sweep(cli, runner, "--models", "a", "--lengths", "512 2048")
    assert first.exit_code == 0, first.stderr
    earlier = (repo.path / "benchmarks" / "out.csv").read_bytes()
    sidecar = (repo.path / "benchmarks" / "out.csv.oomrec.json").read_bytes()
    # Interrupted before its first row (here: nothing to launch but the recorded cell's skip
    # row), the second sweep still starts the CSV afresh.
    second = sweep(cli, runner, "--models", "a", "--lengths", "4096")
    assert second.exit_code == 0, second.stderr
    [aside] = _replaced(repo)
    assert aside.read_bytes() == earlier
    assert aside.with_name(aside.name + ".oomrec.json").read_bytes() == sidecar
    text = (repo.path / "benchmarks" / "out.csv").read_text()
    assert text.splitlines()[1:] == [skip("a", 4096, "SKIP:oom_record")]
    said = [line for line in second.stderr.splitlines() if "moved the earlier out.csv" in line]
    assert said == [f"moved the earlier out.csv aside to {aside.name} (it holds rows); this "
                    "sweep starts it afresh"]  # fmt: skip
    # oomrec's own exclusion covers the copy: git does not list it.
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo.path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert ".replaced-" not in status


def _interrupted_sweep(repo: Repo, runner: Runner, *args: str) -> tuple[int, str]:
    """oomrec sweep as a real process, SIGINT as Ctrl-C sends it once its runner sleeps (the
    runner's pid file written: a real condition, not a timer); its exit status and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "oomrec", "sweep", "--runner", runner.template,
         "--output", "benchmarks/out.csv", *args],
        cwd=repo.path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    pids = runner.dir / "pids.txt"
    while not (pids.exists() and pids.read_text().endswith("\n")):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr


def test_an_interrupted_sweep_leaves_no_earlier_rows_as_its_own(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    """Ctrl-C before the first row: the harness's CSV is empty (it truncated it at start);
    oomrec's holds no earlier sweep's rows either, and those rows are kept aside. --resume
    continues the CSV as before."""
    models("a")
    first = sweep(cli, runner, "--models", "a", "--lengths", "512")
    assert first.exit_code == 0, first.stderr
    out = repo.path / "benchmarks" / "out.csv"
    earlier = out.read_bytes()
    runner.behave({"a:512": "sleep"})
    status, stderr = _interrupted_sweep(repo, runner, "--models", "a", "--lengths", "512")
    assert status == 130, stderr
    assert out.read_bytes() == b""
    [aside] = _replaced(repo)
    assert aside.read_bytes() == earlier
    runner.behave({})
    again = sweep(cli, runner, "--models", "a", "--lengths", "512")
    assert again.exit_code == 0, again.stderr
    rows = out.read_text()
    assert _replaced(repo) == [aside]
    resumed = sweep(cli, runner, "--models", "a", "--lengths", "512 2048", "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert out.read_text().startswith(rows) and _replaced(repo) == [aside]


# --- the runner's streams and signals ----------------------------------------------------------

# A runner as the harness's bench_decode.sh is run: it reads a line of its stdin, says something
# on stdout (the harness sends that to /dev/null) and on stderr (left on the terminal), and on
# SIGINT its trap cleans up. `hang` in its folder makes it wait (its pid file written first).
STREAMS_RUNNER = r"""#!/bin/bash
here=$(dirname "$0")
model_path=$1 length=$2 cell_csv=$3
trap 'echo trapped > "$here/trapped.txt"; exit 130' INT
IFS= read -r line || true
printf '%s\n' "$line" > "$here/stdin.txt"
echo "progress on stdout, not shown"
echo "loading $model_path @ $length (stderr, shown)" >&2
if [ -e "$here/hang" ]; then
  sleep 600 &
  echo "$$ $!" > "$here/pids.txt"
  wait
fi
printf '%s\n%s\n' "HEADER" \
  "plain-8b,$model_path,$length,32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,\"hi\",$length" \
  > "$cell_csv"
""".replace("HEADER", HEADER_15)


def _streams_runner(tmp_path: Path) -> tuple[Path, str]:
    folder = tmp_path / "streams"
    folder.mkdir()
    script = folder / "runner.sh"
    script.write_text(STREAMS_RUNNER)
    script.chmod(0o755)
    return folder, f"{script} {{model_path}} {{length}} {{cell_csv}}"


def test_the_runner_gets_stdin_and_shows_stderr_not_stdout(
    repo: Repo, tmp_path: Path, models: Callable[..., None]
) -> None:
    models("plain-8b")
    folder, template = _streams_runner(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "oomrec", "sweep", "--runner", template, "--models", "plain-8b",
         "--lengths", "512", "--output", "benchmarks/out.csv"],
        cwd=repo.path, input="answer from the terminal\n", capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (folder / "stdin.txt").read_text() == "answer from the terminal\n"
    assert "loading ./models/plain-8b @ 512 (stderr, shown)" in done.stderr.splitlines()
    assert "not shown" not in done.stderr + done.stdout


def test_on_a_terminal_the_runners_stderr_shows_above_the_progress_line(
    repo: Repo, tmp_path: Path, models: Callable[..., None]
) -> None:
    models("plain-8b")
    _, template = _streams_runner(tmp_path)
    status, screen, _ = run_on_tty(
        "sweep", "--runner", template, "--models", "plain-8b", "--lengths", "512 2048",
        "--output", "benchmarks/out.csv", cwd=repo.path, columns=120, stderr_on_tty=True,
    )  # fmt: skip
    assert status == 0, screen
    lines = screen.splitlines()
    for length in (512, 2048):
        # Each whole, on a line of its own: the bar never runs into it.
        assert f"loading ./models/plain-8b @ {length} (stderr, shown)" in lines, screen
    assert any(line.startswith("[2/2] plain-8b @ 2048: ok") for line in lines), screen
    assert "not shown" not in screen


def test_ctrl_c_sends_the_runner_sigint_so_its_trap_runs(
    repo: Repo, tmp_path: Path, models: Callable[..., None]
) -> None:
    """The harness's runner gets Ctrl-C (SIGINT) and its trap runs; oomrec forwards SIGINT to
    the runner's group and kills it only if it has not ended after a grace period."""
    models("plain-8b")
    folder, template = _streams_runner(tmp_path)
    (folder / "hang").touch()
    proc = subprocess.Popen(
        [sys.executable, "-m", "oomrec", "sweep", "--runner", template, "--models", "plain-8b",
         "--lengths", "512", "--output", "benchmarks/out.csv"],
        cwd=repo.path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    pids = folder / "pids.txt"
    while not (pids.exists() and pids.read_text().endswith("\n")):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert (folder / "trapped.txt").read_text() == "trapped\n"
    runner_pid, sleeper_pid = map(int, pids.read_text().split())
    assert gone(runner_pid) and gone(sleeper_pid)


# --- both tools over one work dir, in turn ---------------------------------------------------


def test_a_sweeps_records_and_the_harnesss_lines_mean_the_same_cells_to_both_readers(
    cli: Cli, repo: Repo, runner: Runner, models: Callable[..., None]
) -> None:
    """oomrec's sweep writes records from a runner's OOM and from the runner's own skip row,
    for a plain and a nested model; the harness then appends its own lines (a trailing slash, a
    comma in its `--output`). Each tool's reader, over the one record file, skips the same
    cells, and oomrec's next sweep launches exactly the cells the harness would."""
    models("plain-8b", "org/moe-30b", "tiny")
    runner.behave(
        {
            "plain-8b:2048": "exit:1:RuntimeError: CUDA out of memory. Tried to allocate 2 GiB",
            "org/moe-30b:8192": "row:SKIP:oom",
        }
    )
    grid = ["--models", "plain-8b org/moe-30b tiny", "--lengths", "512 2048 8192 32768"]
    first = sweep(cli, runner, *grid)
    assert first.exit_code == 0, first.stderr
    record = repo.path / "benchmarks" / ".oom-record"
    harness_writes_line = "tiny/,32768,2026-12-01,abc1234,,benchmarks/sweep,v100\n"
    record.write_text(record.read_text() + harness_writes_line)
    names = ["plain-8b", "org/moe-30b", "tiny"]
    lengths = [512, 2048, 8192, 32768]
    ours, warnings = oomrec_plan(cli, names, lengths)
    # The harness keys `tiny/` as typed; its run of `--models tiny/` honours it.
    theirs = harness_plan(record, ["plain-8b", "org/moe-30b"], lengths) | {
        cell.replace("tiny/", "tiny") for cell in harness_plan(record, ["tiny/"], lengths)
    }
    assert ours == theirs == {
        "plain-8b:2048", "plain-8b:8192", "plain-8b:32768",
        "org/moe-30b:8192", "org/moe-30b:32768", "tiny:32768",
    }  # fmt: skip
    assert any("unquoted source path" in w for w in warnings), warnings
    before = len(runner.launched())
    again = sweep(cli, runner, *grid)
    assert again.exit_code == 0, again.stderr
    launched = runner.launched()[before:]
    assert sorted(launched) == sorted(f"{m}:{n}" for m in names for n in lengths
                                      if f"{m}:{n}" not in theirs)  # fmt: skip
