"""`oomrec run MODEL LENGTH -- COMMAND...`: one hand-run cell through the sweep's own cell
pipeline, with real commands, real records and real processes: the pre-skip that launches
nothing, a real OOM recorded once (and "already recorded" the next time), the guard, the
command's output passed through live, the exit codes, and the CSV it appends to."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from oomrec.core.schema import HEADER
from tests.conftest import CliResult
from tests.gitrepo import Repo

Cli = Callable[..., CliResult]
PY = sys.executable
MODEL = "gemma-4-31b"
RECORD = Path("benchmarks") / ".oom-record"


@pytest.fixture(autouse=True)
def _model_dir(repo: Repo) -> None:
    """MODEL is a model under ./models: a hand run refuses a name that is none
    (test_model_names)."""
    (repo.path / "models" / MODEL).mkdir(parents=True)


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m oomrec run ARGS` as a shell runs it: real stdout and stderr pipes."""
    return subprocess.run(
        [PY, "-m", "oomrec", "run", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=600,
    )


def launch(
    *args: str, stdout: int = subprocess.DEVNULL, stderr: int = subprocess.DEVNULL
) -> subprocess.Popen[str]:
    """`python -m oomrec run ARGS` started and not waited for (text pipes where asked)."""
    return subprocess.Popen(
        [PY, "-m", "oomrec", "run", *args],
        stdout=stdout,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    """Until the command of `proc` has made `path` (a real condition, not a timer)."""
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)


@contextlib.contextmanager
def first_run_holding_the_lock(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A hand run of MODEL @ 512 whose command waits for `go` (yielded with it): it holds the
    log's lock meanwhile."""
    go, started = tmp_path / "go", tmp_path / "started"
    first = launch(
        MODEL, "512", "--", "sh", "-c", f"touch {started}; while [ ! -e {go} ]; do sleep 0.05; done"
    )
    try:
        wait_for(started, first)
        yield first, go
    finally:
        go.touch()
        first.wait(timeout=300)


def record_lines(repo: Repo) -> list[str]:
    path = repo.path / RECORD
    return path.read_text().splitlines() if path.exists() else []


def log_csv(repo: Repo) -> Path:
    (found,) = (repo.path / "benchmarks").glob("*_oomrec-run.csv")
    return found


def test_a_recorded_oom_is_pre_skipped_and_nothing_launches(repo: Repo, cli: Cli) -> None:
    assert cli("record", "add", MODEL, "8192").exit_code == 0
    marker = repo.path / "launched"
    done = run(MODEL, "32k", "--", "touch", str(marker))
    assert done.returncode == 1, done.stderr
    assert not marker.exists()
    assert done.stdout == ""
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"SKIP:oom_record: {MODEL} @ 32768 on testhw (recorded OOM at 8192")
    assert record_lines(repo)[0] in first
    # Below the record, the same command launches; it writes no row: its exit is its result.
    below = run(MODEL, "4096", "--", "touch", str(marker))
    assert below.returncode == 0, below.stderr
    assert marker.exists()
    assert below.stderr.startswith(f"ok: {MODEL} @ 4096 on testhw (")
    rows = log_csv(repo).read_text().splitlines()
    assert rows[1].endswith(",32768,SKIP:oom_record")
    assert rows[2].endswith(",4096") and "(ran; the command writes no row)" in rows[2]


# A real allocation failure under its own RLIMIT_AS (`ulimit -v`): Python's MemoryError.
OVER_LIMIT = """
import resource
import psutil
limit = psutil.Process().memory_info().vms + (256 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
held = bytearray(1 << 30)
"""


def test_a_real_oom_is_recorded_once_then_already_recorded(repo: Repo) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS is enforced by Linux only")
    command = ["--", PY, "-c", OVER_LIMIT]
    first = run(MODEL, "2048", *command)
    assert first.returncode == 1, first.stderr
    assert first.stderr.startswith(f"SKIP:oom: {MODEL} @ 2048 on testhw (")
    assert "output has 'MemoryError'" in first.stderr
    (line,) = record_lines(repo)
    assert line.startswith(f"{MODEL},2048,") and line.split(",")[6] == "testhw"
    assert f"  recorded: {line}" in first.stderr.splitlines()
    # The record now pre-skips it; launched anyway, the same OOM is not recorded twice.
    again = run(MODEL, "2048", "--ignore-record", *command)
    assert again.returncode == 1, again.stderr
    assert again.stderr.startswith(f"SKIP:oom: {MODEL} @ 2048")
    assert f"  already recorded: {line}" in again.stderr.splitlines(), again.stderr
    assert record_lines(repo) == [line]


# Touches MIB MiB, then sleeps (until the guard stops it).
HOLD = "import sys, time\nb = bytearray(int(sys.argv[1]) << 20)\nb[::4096] = b'x' * (len(b) // 4096)\ntime.sleep(60)\n"  # noqa: E501


def test_the_guard_stops_the_cell_and_records_it(repo: Repo) -> None:
    done = run(MODEL, "512", "--max-cell-memory", "128M", "--json", "--", PY, "-c", HOLD, "400")
    assert done.returncode == 1, done.stderr
    body = json.loads(done.stdout)
    assert body["verdict"] == "SKIP:oom_guard" and body["launched"] is True
    assert body["oom_evidence"] == "memory guard"
    assert "passed --max-cell-memory 128 MiB" in body["reason"]
    assert body["seconds"] < 60
    (line,) = record_lines(repo)
    assert line == body["recorded"] and line.endswith(",guard")


def test_the_output_passes_through_live_and_json_keeps_stdout_clean(repo: Repo) -> None:
    shown = run(MODEL, "512", "--", "sh", "-c", "echo out {model} {length}; echo err >&2")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"out {MODEL} 512\nerr\n"
    as_json = run(MODEL, "512", "--json", "--", "sh", "-c", "echo out; echo err >&2")
    assert json.loads(as_json.stdout)["verdict"] == "ok"
    assert as_json.stderr.startswith("out\nerr\n")


def test_output_is_shown_while_the_command_still_runs(repo: Repo, tmp_path: Path) -> None:
    go = tmp_path / "go"
    script = f"echo first; while [ ! -e {go} ]; do sleep 0.05; done; echo second"
    proc = launch(MODEL, "512", "--", "sh", "-c", script, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        # The first line arrives while the command waits for `go`: passed through, not at the end.
        assert proc.stdout.readline() == "first\n"
        go.touch()
        assert proc.stdout.read() == "second\n"
    finally:
        go.touch()
        proc.wait(timeout=300)
    assert proc.returncode == 0


def test_placeholders_and_a_row_of_the_commands_own(repo: Repo) -> None:
    row = f'{MODEL},./models/{MODEL},512,32,1.0,512.0,2.0,16.0,2026-12-02,testhw,0.1,release,32,"hi, there",512'  # noqa: E501
    script = "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')"
    header = HEADER
    command = ["--", PY, "-c", script, "{cell_csv}", f"{header}\n{row}"]
    for _ in range(2):
        done = run(MODEL, "512", *command)
        assert done.returncode == 0, done.stderr
    # A log of hand runs: each run's row appended, none replaced.
    assert log_csv(repo).read_text() == f"{header}\n{row}\n{row}\n"


def test_a_failing_command_is_exit_1_with_its_verdict(repo: Repo) -> None:
    done = run(MODEL, "512", "--", "sh", "-c", "echo 'Segmentation fault?' ; exit 3")
    assert done.returncode == 1
    assert done.stderr.startswith(f"FAIL:bench: {MODEL} @ 512 on testhw (")
    assert record_lines(repo) == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([MODEL, "512"], "no command to run: give it after --"),
        ([MODEL, "lots", "--", "true"], "length 'lots' is not a prompt length"),
        ([MODEL, "512", "--", "no-such-program-here"], "is not an executable on PATH"),
        ([MODEL, "512", "--", "echo", "{nope}"], "unknown placeholder {nope}"),
        ([MODEL, "512", "--timeout", "soon", "--", "true"], "--timeout"),
        # A sweep's --models reads "a b" as two models; a hand run is one cell.
        (["a b", "512", "--", "true"], "MODEL 'a b' is not one model name"),
        (["a\nb", "512", "--", "true"], "is not one model name"),
        (["a,b", "512", "--", "true"], "MODEL: model name 'a,b' contains ','"),
        ([MODEL, "512", "--", "/"], "/ is a directory, not a program"),
        ([MODEL, "512", "--output", "notes.txt", "--", "true"], "is not a CSV of the harness's"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(repo: Repo, args: list[str], says: str) -> None:
    (repo.path / "notes.txt").write_text("my notes")
    done = run(*args)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("oomrec: error: ") and says in line
    assert "Traceback" not in done.stderr


def test_an_interrupted_run_is_130_and_kills_the_command(repo: Repo, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; exec sleep 300"
    proc = launch(MODEL, "512", "--", "sh", "-c", script, stderr=subprocess.PIPE)
    wait_for(pid_file, proc)
    child = int(pid_file.read_text())
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert f"interrupted: {MODEL} @ 512 on testhw: the command was killed" in err
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert record_lines(repo) == []


def test_a_torn_last_line_is_kept_aside_and_rows_stay(repo: Repo) -> None:
    out = repo.path / "hand.csv"
    header = HEADER
    kept = 'x,./models/x,,,,,,,2026-01-01,,,,32,"",512,SKIP:oom'
    out.write_text(f"{header}\n{kept}\nx,./models/x,,,,")
    done = run(MODEL, "512", "--output", str(out), "--", "true")
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert lines[:2] == [header, kept]
    assert lines[2].startswith(f"{MODEL},./models/{MODEL},") and len(lines) == 3
    assert (repo.path / "hand.csv.torn").read_text() == "x,./models/x,,,,\n"


def test_a_closed_stdout_does_not_stop_the_cell_or_its_record(repo: Repo) -> None:
    # The allocator's message, then megabytes of output into a reader that stops at once.
    script = (
        "import sys\nprint('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
        "GiB')\nfor _ in range(20000): print('x' * 200)\nsys.exit(1)\n"
    )
    shell = (
        f'{PY} -m oomrec run {MODEL} 2048 -- {PY} -c "$SCRIPT" | head -c 10 >/dev/null; '
        "exit ${PIPESTATUS[0]}"
    )
    done = subprocess.run(
        ["bash", "-c", shell],
        capture_output=True,
        text=True,
        env={**os.environ, "SCRIPT": script},
        check=False,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr
    assert f"SKIP:oom: {MODEL} @ 2048" in done.stderr
    assert "OOM evidence: signature" in done.stderr
    assert "were not shown (the reader went away or was too slow)" in done.stderr
    assert len(record_lines(repo)) == 1


def test_a_sweep_csv_is_never_written_by_a_run(repo: Repo) -> None:
    (repo.path / "pyproject.toml").write_text('[tool.oomrec]\noutput = "benchmarks/sweep.csv"\n')
    sweep_csv = repo.path / "benchmarks" / "sweep.csv"
    sweep_csv.parent.mkdir()
    sweep_csv.write_text(f"{HEADER}\n")
    done = run(MODEL, "512", "--", "true")
    assert done.returncode == 0, done.stderr
    assert sweep_csv.read_text() == f"{HEADER}\n"
    assert log_csv(repo).read_text().count("\n") == 2


@pytest.mark.parametrize("kind", ["record", "fifo"])
def test_an_output_that_would_lose_evidence_or_hang_is_refused(repo: Repo, kind: str) -> None:
    target = repo.path / ("benchmarks/.oom-record" if kind == "record" else "pipe.csv")
    target.parent.mkdir(exist_ok=True)
    if kind == "record":
        target.write_text("")
    else:
        os.mkfifo(target)
    marker = repo.path / "launched"
    done = run(MODEL, "512", "--output", str(target), "--", "touch", str(marker))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("oomrec: error: ")
    assert not marker.exists()


def test_what_the_command_leaves_running_is_killed(repo: Repo, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    done = run(MODEL, "512", "--", "sh", "-c", f"sleep 300 & echo $! > {pid_file}")
    assert done.returncode == 0, done.stderr
    assert "killed" in done.stderr.splitlines()[0]
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_a_second_hand_run_waits_for_the_first_then_runs(repo: Repo, tmp_path: Path) -> None:
    with first_run_holding_the_lock(tmp_path) as (first, go):
        second = launch(MODEL, "1024", "--", "true", stderr=subprocess.PIPE)
        assert second.stderr is not None
        # It says it waits (one cell at a time), and launches only once the first is done.
        assert second.stderr.readline().startswith("waiting for the oomrec writing ")
        go.touch()
        assert first.wait(timeout=300) == 0
        assert second.wait(timeout=300) == 0
        assert second.stderr.read().startswith(f"ok: {MODEL} @ 1024")
    rows = log_csv(repo).read_text().splitlines()
    assert [row.rsplit(",", 1)[1] for row in rows[1:]] == ["512", "1024"]


def test_a_disk_that_fills_during_the_cell_still_gets_the_verdict_and_the_record(
    repo: Repo, tmp_path: Path
) -> None:
    from tests.test_disk_full import small_tmpfs

    with small_tmpfs(tmp_path / "small") as disk:
        # The command fills the disk the CSV is on, then runs out of memory.
        script = (
            f"cat /dev/zero > {disk}/filler 2>/dev/null; head -c 4096 /dev/zero >> {disk}/f2; "
            "echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'; exit 1"
        )
        done = run(MODEL, "512", "--output", str(disk / "hand.csv"), "--", "sh", "-c", script)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"SKIP:oom: {MODEL} @ 512 on testhw (")
    (line,) = record_lines(repo)
    assert f"  recorded: {line}" in lines
    assert lines[-1].startswith("oomrec: error: ")
    assert "cannot write the row of" in lines[-1] and "its OOM is in the record" in lines[-1]


def test_a_torn_line_repaired_keeps_the_files_mode_and_its_symlink(repo: Repo) -> None:
    target = repo.path / "kept.csv"
    target.write_text(f"{HEADER}\nx,./models/x,,,,")
    target.chmod(0o664)
    link = repo.path / "link.csv"
    link.symlink_to(target.name)
    done = run(MODEL, "512", "--output", str(link), "--", "true")
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()
    assert (target.stat().st_mode & 0o777) == 0o664
    assert target.read_text().splitlines()[1].startswith(f"{MODEL},")


def test_a_dangling_symlink_output_is_written_through(repo: Repo) -> None:
    link = repo.path / "dang.csv"
    link.symlink_to(repo.path / "later" / "hand.csv")
    done = run(MODEL, "512", "--output", str(link), "--", "true")
    assert done.returncode == 0, done.stderr
    assert (repo.path / "later" / "hand.csv").read_text().startswith(HEADER)


def test_interrupted_json_has_the_cells_keys(repo: Repo, tmp_path: Path) -> None:
    done = run(MODEL, "512", "--json", "--", "true")
    keys = list(json.loads(done.stdout))
    pid_file = tmp_path / "pid"
    proc = launch(
        MODEL, "512", "--json", "--", "sh", "-c", f"touch {pid_file}; exec sleep 300",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    wait_for(pid_file, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    body = json.loads(out)
    assert sorted(body) == sorted(keys)
    assert body["interrupted"] is True and body["verdict"] is None and body["launched"] is True


def test_sigterm_while_waiting_for_the_lock_is_130(repo: Repo, tmp_path: Path) -> None:
    with first_run_holding_the_lock(tmp_path):
        second = launch(MODEL, "1024", "--", "true", stderr=subprocess.PIPE)
        assert second.stderr is not None
        assert second.stderr.readline().startswith("waiting for the oomrec writing ")
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=300) == 130


def test_output_a_reader_does_not_take_is_dropped_and_counted(repo: Repo) -> None:
    # 50 MB into a pipe nobody reads until the run is over: the cell is not held up (it is
    # timed out by its own --timeout, not by the reader), and what was dropped is said.
    script = (
        "import sys,time; [sys.stdout.write('z' * 1000000) for _ in range(50)]; time.sleep(300)"
    )
    shell = f'{PY} -m oomrec run {MODEL} 512 --timeout 3 -- {PY} -c "{script}" | (sleep 8; wc -c)'
    done = subprocess.run(
        ["bash", "-c", shell], capture_output=True, text=True, check=False, timeout=600
    )
    assert "FAIL:timeout" in done.stderr
    assert "bytes of the command's output were not shown" in done.stderr
