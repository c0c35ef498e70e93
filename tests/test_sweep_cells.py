"""`oomrec sweep` against hostile and unusual runners: kill verdicts, long output, special files
at `{cell_csv}`, rows of other cells, escaped processes, huge timeouts. Real runner processes,
through the CLI, in real git repositories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.core.schema import HEADER_15
from oomrec.sweep.cell.cellcsv import CELL_CSV_CAP
from oomrec.sweep.cell.oomkill import KernelLog, read_counters
from tests.cgroups import make_memory_cgroup
from tests.conftest import CliResult
from tests.gitrepo import IDENTITY, Repo
from tests.helpers import gone

Cli = Callable[..., CliResult]

# One behaviour per cell length, from actions.json beside it ({"length": "action"}); lengths not
# named write an ok row. `runner.py model length cell_csv`.
RUNNER = r"""
import json, os, signal, subprocess, sys
from pathlib import Path

model, length, cell_csv = sys.argv[1:4]
here = Path(sys.argv[0]).parent
action = json.loads((here / "actions.json").read_text()).get(length, "ok")
tail = f'2026-07-03,hw,0.3.3,release,32,"Hi, you",{length}'
row = f"{model},./models/{model},{length},32,1.0,2.0,3.0,4.0,{tail}"
if action == "ok":
    Path(cell_csv).write_text(f"HEADER\n{row}\n")
elif action == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
elif action == "oom-then-chatter":
    print("RuntimeError: CUDA error: out of memory", flush=True)
    sys.stdout.write(("... a long traceback and a verbose logger ...\n") * 30_000)
    sys.exit(1)
elif action == "fifo":
    os.mkfifo(cell_csv)
elif action == "dev-zero":
    os.symlink("/dev/zero", cell_csv)
elif action == "passwd":
    os.symlink("/etc/passwd", cell_csv)
elif action == "dir":
    os.makedirs(Path(cell_csv) / "sub")
elif action == "huge":
    Path(cell_csv).write_text(f"HEADER\n{row}\n" + "x" * (CAP + 1))
elif action == "extra-rows":
    other = row.replace(f",{length}", ",99999").replace(model, "fabricated-model")
    fake_oom = f'{model},./models/{model},,,,,,,2026-07-03,,,,32,"",1,SKIP:oom'
    Path(cell_csv).write_text(f"HEADER\n{row}\n{other}\n{fake_oom}\n")
elif action.startswith("join:"):
    # Join a memory-limited cgroup, then touch four times its limit: the kernel's OOM killer.
    Path(action[5:]).write_text("0")
    held = bytearray(256 << 20)
    held[::4096] = b"x" * (len(held) // 4096)
elif action.startswith("wait-kill:"):
    # Say it runs, wait for the test's word, then SIGKILL itself (as `kill -9` or a scheduler).
    where = Path(action[10:])
    (where / "ready").write_text("1")
    while not (where / "go").exists():
        import time
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGKILL)
elif action == "escape":
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    (here / "escaped.pid").write_text(str(child.pid))
    Path(cell_csv).write_text(f"HEADER\n{row}\n")
""".replace("HEADER", HEADER_15).replace("CAP", str(CELL_CSV_CAP))


class CellRunner:
    """The runner script of one test and what it does per length."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        self.script = directory / "runner.py"
        self.script.write_text(RUNNER)

    def act(self, actions: dict[int, str]) -> None:
        table = {str(length): action for length, action in actions.items()}
        (self.script.parent / "actions.json").write_text(json.dumps(table))

    @property
    def template(self) -> str:
        return f"{sys.executable} {self.script} {{model}} {{length}} {{cell_csv}}"

    def args(self, lengths: str) -> list[str]:
        return [
            "sweep", "--runner", self.template, "--output", "out.csv", "--models", "a",
            "--lengths", lengths,
        ]  # fmt: skip


@pytest.fixture
def cell_runner(repo: Repo, tmp_path: Path) -> CellRunner:
    (repo.path / "models" / "a").mkdir(parents=True)
    return CellRunner(tmp_path / "runner")


@pytest.fixture
def run_sweep(cli: Cli, cell_runner: CellRunner) -> Callable[..., CliResult]:
    """A sweep of model `a` over the given lengths, each length doing what `actions` says."""

    def run(actions: dict[int, str], lengths: str, *args: str) -> CliResult:
        cell_runner.act(actions)
        return cli(*cell_runner.args(lengths), *args)

    return run


def rows(repo: Repo) -> list[str]:
    return (repo.path / "out.csv").read_text().splitlines()[1:]


def record(repo: Repo) -> str:
    path = repo.path / "benchmarks" / ".oom-record"
    return path.read_text() if path.exists() else ""


def test_a_runner_that_kill_9s_itself_is_fail_killed_and_recorded_nowhere(
    run_sweep: Callable[..., CliResult], repo: Repo
) -> None:
    if not read_counters().values:
        pytest.skip("no OOM-kill counter is readable on this machine")
    result = run_sweep({512: "kill"}, "512 2048", "--json")
    assert result.exit_code == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    assert [(c["verdict"], c["oom_evidence"]) for c in cells] == [
        ("FAIL:killed", None),
        ("ok", None),
    ]
    # No backstop: the longer cell ran. No record.
    assert rows(repo)[0].endswith(",512,FAIL:killed")
    assert record(repo) == ""
    assert "[1/2] a @ 512: FAIL:killed (" in result.stderr
    said = " ".join(result.stderr.split())
    # Said by the cell's own cgroup, else the kernel log, else the counters.
    assert (
        "not by the OOM killer: no OOM kill in the cell's cgroup oomrec-" in said
        or "not by the OOM killer: the kernel log has no OOM kill during the cell" in said
        or "not by the OOM killer: no OOM kill counted (/proc/vmstat" in said
    )


def test_a_real_oom_kill_is_a_confirmed_oom_recorded_with_its_evidence(
    run_sweep: Callable[..., CliResult], repo: Repo
) -> None:
    cgroup = make_memory_cgroup(64 << 20)
    try:
        result = run_sweep({512: f"join:{cgroup.procs}"}, "512 2048", "--json")
    finally:
        cgroup.remove()
    assert result.exit_code == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    # The kernel log names the cell's process; without one to read, only a counter's growth
    # says it, unconfirmed (a missed OOM is the worse error).
    evidence = "kernel log" if KernelLog().kills() is not None else "unconfirmed"
    assert [(c["verdict"], c["oom_evidence"]) for c in cells] == [
        ("SKIP:oom", evidence),
        ("SKIP:oom_backstop", None),
    ]
    if evidence == "kernel log":
        assert "killed by SIGKILL: the kernel's OOM killer killed pid " in result.stderr
    assert record(repo).startswith("a,512,")


def test_a_kill_9_during_another_cgroups_oom_is_fail_killed_and_recorded_nowhere(
    cell_runner: CellRunner, repo: Repo, tmp_path: Path
) -> None:
    if KernelLog().kills() is None:
        pytest.skip("the kernel log (/dev/kmsg) is not readable here")
    # oomrec in a cgroup of its own; another job OOMs in a sibling cgroup meanwhile.
    sweep_cgroup = make_memory_cgroup(8 << 30)
    other = make_memory_cgroup(64 << 20)
    signals = tmp_path / "signals"
    signals.mkdir()
    try:
        cell_runner.act({512: f"wait-kill:{signals}"})
        env = {**os.environ, **IDENTITY}
        sweep = subprocess.Popen(
            ["sh", "-c", f'echo $$ > "{sweep_cgroup.procs}" && exec "$@"', "sh",
             sys.executable, "-m", "oomrec", *cell_runner.args("512"), "--json"],
            cwd=repo.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not (signals / "ready").exists():
                assert sweep.poll() is None, sweep.communicate()
                assert time.monotonic() < deadline, "the cell never started"
                time.sleep(0.01)
            code = "b = bytearray(256 << 20); b[::4096] = b'x' * (len(b) // 4096)"
            oomed = subprocess.run(
                ["sh", "-c", f'echo $$ > "{other.procs}" && exec "$@"', "sh",
                 sys.executable, "-c", code],
                check=False,
            )  # fmt: skip
            assert oomed.returncode == -signal.SIGKILL  # the other job's real OOM kill
            (signals / "go").write_text("1")
            out, err = sweep.communicate(timeout=120)
        finally:
            if sweep.poll() is None:
                sweep.kill()
                sweep.wait()
    finally:
        other.remove()
        sweep_cgroup.remove()
    assert sweep.returncode == 0, err
    cells = json.loads(out)["cells"]
    assert [(c["verdict"], c["oom_evidence"]) for c in cells] == [("FAIL:killed", None)]
    said = " ".join(err.split())
    assert "no OOM kill in the cell's cgroup" in said or "OOM kill(s) in other cgroups" in said
    assert record(repo) == ""


def test_an_oom_line_followed_by_a_megabyte_of_output_is_a_true_oom(
    run_sweep: Callable[..., CliResult], repo: Repo
) -> None:
    result = run_sweep({512: "oom-then-chatter"}, "512 2048")
    assert result.exit_code == 0, result.stderr
    assert [row.rsplit(",", 1)[1] for row in rows(repo)] == ["SKIP:oom", "SKIP:oom_backstop"]
    assert record(repo).startswith("a,512,")
    assert "output has 'CUDA error: out of memory'" in result.stderr
    assert "OOM evidence: signature" in result.stderr


@pytest.mark.parametrize(
    ("action", "said"),
    [
        ("fifo", "the cell CSV is a FIFO, not a regular file; not read"),
        ("dev-zero", "the cell CSV is a character device, not a regular file; not read"),
        ("dir", "the cell CSV is a directory, not a regular file; not read"),
        ("huge", f"bytes, over the {CELL_CSV_CAP} bytes a cell CSV may have; not read"),
    ],
)
def test_a_special_or_huge_cell_csv_is_not_read_and_the_sweep_goes_on(
    run_sweep: Callable[..., CliResult], repo: Repo, action: str, said: str
) -> None:
    result = run_sweep({512: action}, "512 2048", "--timeout", "20")
    assert result.exit_code == 0, result.stderr
    first, second = rows(repo)
    assert first.endswith(",512,FAIL:no_output")
    assert second.endswith(',"Hi, you",2048')
    [line] = [line for line in result.stderr.splitlines() if line.startswith("[1/2]")]
    assert said in line
    assert "FAIL:timeout" not in result.stderr


def test_a_cell_csv_linked_to_another_file_is_not_copied_into_the_results(
    run_sweep: Callable[..., CliResult], repo: Repo
) -> None:
    result = run_sweep({512: "passwd"}, "512")
    assert result.exit_code == 0, result.stderr
    text = (repo.path / "out.csv").read_text()
    assert "root:" not in text
    assert rows(repo) == [f'a,./models/a,,,,,,,{_today()},,,,32,"",512,FAIL:no_output']
    assert "dropped " in result.stderr
    assert Path("/etc/passwd").exists()


def test_rows_of_other_cells_are_dropped_and_said(
    run_sweep: Callable[..., CliResult], repo: Repo
) -> None:
    result = run_sweep({512: "extra-rows"}, "512")
    assert result.exit_code == 0, result.stderr
    [row] = rows(repo)
    assert row.startswith("a,./models/a,512,32,")
    assert "fabricated" not in (repo.path / "out.csv").read_text()
    assert "dropped 2 rows of other cells from the cell CSV (first: 'fabricated-model," in (
        result.stderr
    )
    # The fabricated SKIP:oom of another length became no record.
    assert record(repo) == ""


def test_a_process_that_left_the_group_dies_with_its_cell_and_the_log_says_so(
    run_sweep: Callable[..., CliResult], cell_runner: CellRunner
) -> None:
    result = run_sweep({512: "escape"}, "512")
    assert result.exit_code == 0, result.stderr
    assert gone(int((cell_runner.script.parent / "escaped.pid").read_text()))
    assert "killed 1 leftover process of the cell (1 had left its process group)" in (result.stderr)


@pytest.mark.parametrize("timeout", ["2147484", "1e300"])
def test_a_huge_timeout_runs_the_sweep(
    run_sweep: Callable[..., CliResult], repo: Repo, timeout: str
) -> None:
    result = run_sweep({}, "512", "--timeout", timeout, "--cooldown", "0")
    assert result.exit_code == 0, result.stderr
    assert rows(repo)[0].startswith("a,./models/a,512,32,")


def _today() -> str:
    from datetime import date

    return date.today().isoformat()


# Hides every OOM-kill counter from the command it runs, as a locked-down container would: a
# private mount namespace with /proc/vmstat empty and no cgroup filesystem.
# No OOM-kill counter and no kernel log: /dev/null over /proc/vmstat and /dev/kmsg.
_HIDE_COUNTERS = (
    "mount --bind /dev/null /proc/vmstat && mount -t tmpfs none /sys/fs/cgroup && "
    'mount --bind /dev/null /dev/kmsg && exec "$0" "$@"'
)


def test_a_sigkill_with_no_counter_readable_is_an_unconfirmed_oom(
    cell_runner: CellRunner, repo: Repo
) -> None:
    probe = subprocess.run(
        ["unshare", "--mount", "sh", "-c", _HIDE_COUNTERS, "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot hide the OOM-kill counters here: {probe.stderr.strip()[:200]}")
    cell_runner.act({512: "kill"})
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", _HIDE_COUNTERS, sys.executable, "-m", "oomrec",
         *cell_runner.args("512 2048"), "--json"],
        cwd=repo.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cells = json.loads(done.stdout)["cells"]
    assert [(c["verdict"], c["oom_evidence"]) for c in cells] == [
        ("SKIP:oom", "unconfirmed"),
        ("SKIP:oom_backstop", None),
    ]
    assert "no OOM-kill counter or kernel log readable here, so not confirmed" in " ".join(
        done.stderr.split()
    )
    assert record(repo).startswith("a,512,")
