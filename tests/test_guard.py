"""The memory guard through `oomrec sweep`: real runners that allocate and touch memory in steps,
stopped (or not) by `--max-cell-memory` and `--min-available`; records, backstop, summary; and
the cell's tree dying with a SIGKILLed oomrec. Allocations stay under ~1 GiB per test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oomrec.core.schema import HEADER_15
from oomrec.core.shown import show_apart
from oomrec.sweep.cell.guard import GuardLimits
from oomrec.sweep.cell.proctree import ProcessTree
from oomrec.sweep.cell.runner import _ExitWatcher, _GuardWatch, run_cell
from tests.cgroups import make_memory_cgroup
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.helpers import gone
from tests.profiles import examples
from tests.test_memscope import oomrec_inside

Cli = Callable[..., CliResult]
MIB = 1024 * 1024

# `runner.py MODE STEPS length cell_csv`: allocate and touch 64 MiB every 50 ms, STEPS times,
# in this process (`self`) or in a child it waits for (`child`, `escaped-child` in its own
# session); `ignore-term` writes an ok row on SIGTERM and goes on; `hold` then keeps its memory
# 1 s. Each touched step's total is printed; then an ok row is written.
RUNNER = r"""
import os, signal, subprocess, sys, time
from pathlib import Path

mode, steps, length, cell_csv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
row = f"a,./models/a,{length},32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,\"Hi\",{length}"
if mode == "ignore-term":
    # A hostile runner: on SIGTERM it claims success, then goes on allocating.
    signal.signal(signal.SIGTERM, lambda *_: Path(cell_csv).write_text("HEADER\n" + row + "\n"))
if mode in ("child", "escaped-child"):
    code = open(sys.argv[0]).read()
    child = subprocess.run(
        [sys.executable, "-c", code, "self", str(steps), length, os.devnull],
        start_new_session=mode == "escaped-child",
    )
    if child.returncode:
        sys.exit(child.returncode)
else:
    held = []
    for step in range(steps):
        block = bytearray(64 << 20)
        block[::4096] = b"x" * (len(block) // 4096)
        held.append(block)
        print(f"touched {(step + 1) * 64} MiB", flush=True)
        time.sleep(0.05)
    if mode == "hold":
        time.sleep(1)
    if mode == "hold-on":
        # Until the guard stops it (30 s is ages to a guard that polls): a guard that never
        # acts fails the test, the runner then ending ok.
        time.sleep(30)
if cell_csv != os.devnull:
    Path(cell_csv).write_text("HEADER\n" + row + "\n")
""".replace("HEADER", HEADER_15)


@pytest.fixture
def guarded(cli: Cli, repo: Repo, tmp_path: Path) -> Callable[..., CliResult]:
    """A sweep of model `a` whose runner allocates `steps` x 64 MiB (mode: self/child/...)."""
    (repo.path / "models" / "a").mkdir(parents=True)
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)

    def run(mode: str, steps: int, lengths: str, *args: str) -> CliResult:
        template = f"{sys.executable} {script} {mode} {steps} {{length}} {{cell_csv}}"
        return cli(
            "sweep", "--runner", template, "--output", "out.csv", "--models", "a",
            "--lengths", lengths, "--json", *args,
        )  # fmt: skip

    return run


def record_text(repo: Repo) -> str:
    path = repo.path / "benchmarks" / ".oom-record"
    return path.read_text() if path.exists() else ""


def cells(result: CliResult) -> list[dict[str, object]]:
    assert result.exit_code == 0, result.stderr
    return list(json.loads(result.stdout)["cells"])


def test_a_cell_passing_max_cell_memory_is_stopped_recorded_and_backstopped(
    guarded: Callable[..., CliResult], repo: Repo
) -> None:
    # Unstopped, it would touch 896 MiB.
    result = guarded("self", 14, "512 2048", "--max-cell-memory", "512M")
    first, second = cells(result)
    assert first["verdict"] == "SKIP:oom_guard"
    assert first["oom_evidence"] == "memory guard"
    assert "passed --max-cell-memory 512 MiB" in str(first["reason"])
    peak = first["peak_rss_bytes"]
    assert isinstance(peak, int) and 512 * MIB < peak < 600 * MIB
    assert second["verdict"] == "SKIP:oom_backstop"
    assert "was SKIP:oom_guard at 512" in str(second["reason"])
    assert "touched 640 MiB" not in result.stderr
    line = record_text(repo).splitlines()
    assert len(line) == 1 and line[0].startswith("a,512,") and line[0].endswith(",guard")
    assert f",{peak}," in line[0]
    assert (repo.path / "out.csv").read_text().splitlines()[1].endswith(",512,SKIP:oom_guard")
    summary = json.loads(result.stdout)
    assert summary["guard_stops"] == 1
    assert summary["guard"] == {
        "max_cell_bytes": 512 * MIB,
        "min_available_bytes": None,
        "max_cell_gpu": None,
        "min_gpu_available": None,
    }
    assert summary["totals"] == {"SKIP:oom_guard": 1, "SKIP:oom_backstop": 1}


def test_a_cell_under_its_limits_runs_to_success_and_no_record(
    guarded: Callable[..., CliResult], repo: Repo
) -> None:
    result = guarded("self", 4, "512 2048", "--max-cell-memory", "512M", "--min-available", "256M")
    assert [c["verdict"] for c in cells(result)] == ["ok", "ok"]
    assert record_text(repo) == ""
    assert json.loads(result.stdout)["guard_stops"] == 0


@pytest.mark.parametrize("mode", ["child", "escaped-child"])
def test_a_child_that_allocates_is_stopped_with_its_runner(
    guarded: Callable[..., CliResult], repo: Repo, mode: str
) -> None:
    # An escaped child (setsid) is out of the runner's group, not out of the guard's tree.
    result = guarded(mode, 14, "512", "--max-cell-memory", "512M")
    (cell,) = cells(result)
    assert cell["verdict"] == "SKIP:oom_guard", cell
    peak = cell["peak_rss_bytes"]
    assert isinstance(peak, int) and 512 * MIB < peak < 640 * MIB
    assert "touched 640 MiB" not in result.stderr


def test_a_runner_that_ignores_sigterm_is_killed_after_the_grace(
    guarded: Callable[..., CliResult], repo: Repo
) -> None:
    result = guarded("ignore-term", 14, "512", "--max-cell-memory", "256M")
    (cell,) = cells(result)
    # The ok row it wrote on SIGTERM is a reaction to the guard: the guard's verdict stands.
    assert cell["verdict"] == "SKIP:oom_guard"
    assert "the guard had stopped it" in " ".join(cell["notes"])  # type: ignore[arg-type]
    assert record_text(repo).rstrip().endswith(",guard")


def test_min_available_stops_a_cell_that_eats_into_the_free_memory(
    repo: Repo, tmp_path: Path
) -> None:
    """The sweep runs in a memory cgroup of its own (1.5 GiB), so the memory it watches is that
    cgroup's, which only this test fills: the host's available memory, which other programs
    move, decides nothing (beside two CPU-bound processes the host-based version failed one run
    in three). The runner touches 896 MiB and holds it until killed; the limit of 1 GiB
    available is crossed after about 450 MiB of it."""
    (repo.path / "models" / "a").mkdir(parents=True)
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    template = f"{sys.executable} {script} hold-on 14 {{length}} {{cell_csv}}"
    cgroup = make_memory_cgroup(1536 * MIB)
    try:
        done = oomrec_inside(
            cgroup.procs, "sweep", "--runner", template, "--output", "out.csv", "--models", "a",
            "--lengths", "512 2048", "--json", "--min-available", "1G", cwd=repo.path,
        )  # fmt: skip
    finally:
        cgroup.remove()
    assert done.returncode == 0, done.stderr
    first, second = json.loads(done.stdout)["cells"]
    assert first["verdict"] == "SKIP:oom_guard", first
    assert "fell under --min-available" in str(first["reason"])
    assert second["verdict"] == "SKIP:oom_backstop"


def test_the_record_and_list_say_guard(
    guarded: Callable[..., CliResult], cli: Cli, repo: Repo
) -> None:
    guarded("self", 14, "512", "--max-cell-memory", "256M")
    listed = cli("record", "list", "--no-git", "--json")
    assert [r.get("kind") for r in json.loads(listed.stdout)["records"]] == ["guard"]
    # Off a terminal: one tab-separated line a record, the kind after the source.
    plain = cli("record", "list", "--no-git").stdout
    assert plain.rstrip("\n").split("\t")[-1] == "guard"
    # The next sweep pre-skips the cell like any record.
    again = guarded("self", 1, "512", "--max-cell-memory", "256M")
    assert [c["verdict"] for c in cells(again)] == ["SKIP:oom_record"]
    # With a bigger budget the guard's records alone can be lifted; an OOM seen still applies.
    cli("record", "add", "a", "2048")
    lifted = guarded("self", 1, "512 2048", "--ignore-guard-records")
    assert [c["verdict"] for c in cells(lifted)] == ["ok", "SKIP:oom_record"]
    assert "guard records ignored (--ignore-guard-records)" in lifted.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-cell-memory", "12X"], "--max-cell-memory '12X' is not a memory size; give e.g."),
        (["--max-cell-memory", "0"], "--max-cell-memory '0' is not a memory size"),
        (["--min-available", "150%"], "--min-available '150%' is not a share from 0 to 100%"),
        (["--min-available", "-5%"], "is not a share from 0 to 100%"),
        (["--min-available", "nan%"], "is not a share from 0 to 100%"),
        (["--max-cell-memory", "1000T"], "is not under this host's"),
    ],
)
def test_bad_limits_are_one_line_usage_errors(
    guarded: Callable[..., CliResult], args: list[str], message: str
) -> None:
    result = guarded("self", 1, "512", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_limits_from_pyproject_show_in_the_dry_run_and_off_overrides_them(
    cli: Cli, repo: Repo
) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    (repo.path / "pyproject.toml").write_text(
        '[tool.oomrec]\nrunner = "true {model}"\nmodels = "a"\n'
        'max_cell_memory = "512M"\nmin_available = "5%"\n'
    )
    shown = cli("sweep", "--dry-run", "--lengths", "512")
    assert shown.exit_code == 0, shown.stderr
    assert "  guard:   max cell memory 512 MiB, min available " in shown.stderr
    off = cli("sweep", "--dry-run", "--lengths", "512", "--json", "--max-cell-memory", "off")
    guard = json.loads(off.stdout)["guard"]
    assert guard["max_cell_bytes"] is None
    assert guard["min_available_bytes"] == psutil.virtual_memory().total * 5 // 100
    (repo.path / "pyproject.toml").write_text(
        '[tool.oomrec]\nrunner = "true {model}"\nmodels = "a"\nmax_cell_memory = true\n'
    )
    bad = cli("sweep", "--dry-run")
    assert bad.exit_code == 2
    assert "[tool.oomrec] max_cell_memory 'True' is not a memory size" in bad.stderr


def test_a_min_available_above_what_is_free_now_is_said_before_any_cell(
    guarded: Callable[..., CliResult],
) -> None:
    limit = psutil.virtual_memory().total - 1
    result = guarded("self", 4, "512", "--min-available", str(limit))
    assert "warning: this host has " in result.stderr
    assert "every cell will be stopped at once" in result.stderr
    assert [c["verdict"] for c in cells(result)] == ["SKIP:oom_guard"]


def test_without_a_guard_the_header_says_off(guarded: Callable[..., CliResult]) -> None:
    result = guarded("self", 1, "512", "--dry-run")
    assert "  guard:   off" in result.stderr


def test_a_sigkilled_sweep_takes_its_cells_process_group_with_it(
    repo: Repo, tmp_path: Path
) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    pids = tmp_path / "pids"
    script = tmp_path / "hold.py"
    # The runner starts a grandchild in its process group that holds memory, then waits.
    script.write_text(
        "import subprocess, sys, time\n"
        "g = subprocess.Popen([sys.executable, '-c', "
        "'b = bytearray(64 << 20); b[::4096] = b\"x\" * 16384; import time; time.sleep(60)'])\n"
        f"open({str(pids)!r} + '.tmp', 'w').write(f'{{__import__(\"os\").getpid()}} {{g.pid}}')\n"
        f"__import__('os').rename({str(pids)!r} + '.tmp', {str(pids)!r})\n"
        "time.sleep(60)\n"
    )
    sweep = subprocess.Popen(
        [sys.executable, "-m", "oomrec", "sweep", "--runner",
         f"{sys.executable} {script} {{length}}", "--models", "a", "--lengths", "512",
         "--output", "out.csv"],
        cwd=repo.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not pids.exists():
            assert time.monotonic() < deadline, "the runner never started"
            assert sweep.poll() is None, "the sweep ended early"
            time.sleep(0.02)
        runner, grandchild = (int(p) for p in pids.read_text().split())
    finally:
        os.kill(sweep.pid, signal.SIGKILL)
        sweep.wait()
    assert gone(runner)
    assert gone(grandchild)


def test_a_runner_that_exited_before_the_guards_signal_keeps_its_own_verdict() -> None:
    tree = ProcessTree()
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    tree.launched(proc.pid)
    watcher = _ExitWatcher(proc.pid)
    # Exited, not yet reaped: the moment the guard may still measure what it held.
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    watch = _GuardWatch(GuardLimits(max_cell_bytes=1), tree, watcher)
    watch.check(10**9, time.monotonic())
    assert watch.stop is None
    status, _ = watcher.reap()
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_runner_still_running_when_the_guard_decides_gets_sigterm() -> None:
    tree = ProcessTree()
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    tree.launched(proc.pid)
    watcher = _ExitWatcher(proc.pid)
    watch = _GuardWatch(GuardLimits(max_cell_bytes=1), tree, watcher)
    watch.check(2, time.monotonic())
    assert watch.stop is not None and watch.stop.cell_bytes == 2
    status, _ = watcher.reap()
    assert os.waitstatus_to_exitcode(status) == -signal.SIGTERM


@settings(max_examples=examples(5), deadline=None)
@given(mib=st.integers(min_value=1, max_value=160), processes=st.integers(min_value=1, max_value=2))
def test_a_cell_under_its_limits_is_never_stopped(mib: int, processes: int) -> None:
    # Each process touches `mib` MiB and holds it past several checks; 2 x 160 MiB plus two
    # interpreters stay under 384 MiB.
    code = (
        "import subprocess, sys, time\n"
        f"kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.3)'])"
        f" for _ in range({processes - 1})]\n"
        f"b = bytearray({mib} << 20); b[::4096] = b'x' * len(range(0, len(b), 4096))\n"
        "time.sleep(0.2)\n"
        "[k.wait() for k in kids]\n"
    )
    limits = GuardLimits(max_cell_bytes=384 * MIB, min_available_bytes=64 * MIB)
    run = run_cell([sys.executable, "-c", code], 30, guard=limits)
    assert run.guard_stop is None
    assert run.returncode == 0, run.output_tail


@pytest.mark.parametrize(
    ("a", "b", "shown"),
    [
        (int(21.96 * 2**30), 22 * 2**30, ("21.96 GiB", "22 GiB")),
        (22 * 2**30 - 1, 22 * 2**30, ("23,622,320,127 bytes", "23,622,320,128 bytes")),
        (int(511.6 * 2**20), 512 * 2**20, ("511.6 MiB", "512 MiB")),
        # What CI met: a cell just over a round limit; the limit reads as it was typed.
        (int(512.5 * 2**20), 512 * 2**20, ("512.5 MiB", "512 MiB")),
        (20 * 2**30, 22 * 2**30, ("20 GiB", "22 GiB")),
        (5 * 2**30, 5 * 2**30, ("5 GiB", "5 GiB")),
    ],
)
def test_a_stop_reason_never_reads_as_two_equal_sizes(
    a: int, b: int, shown: tuple[str, str]
) -> None:
    """`22 GiB fell under 22 GiB` said nothing: two different sizes get the digits to differ."""
    assert show_apart(a, b) == shown
    limits = GuardLimits(min_available_bytes=b)
    assert limits.breach(0, a) == (
        None if a >= b else f"available memory {shown[0]} fell under --min-available {shown[1]}"
    )
