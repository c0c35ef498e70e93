"""A cell judged by its process tree, where it has no cgroup of its own (OOMREC_CELL_SCOPE=tree
here; on hosts without a delegated memory cgroup it is the only way): each page counted once, so
a fork of a big runner is not a guard stop, while memory a child really adds still is."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.sweep.cell import proctree
from oomrec.sweep.cell.guard import GuardLimits
from oomrec.sweep.cell.runner import run_cell
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.test_cellscope import FORK, sweep_a_forking_runner

Cli = Callable[..., CliResult]
MIB = 1 << 20
PY = sys.executable
ROW = 'a,./models/a,512,32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"Hi",512'

# `grow.py PARENT_MIB CHILD_MIB`: touch PARENT_MIB, fork a child that touches CHILD_MIB of its
# own and waits to be stopped: the tree really holds both.
GROW = r"""
import os, sys, time
held = bytearray(int(sys.argv[1]) << 20)
held[::4096] = b"x" * (len(held) // 4096)
pid = os.fork()
if pid == 0:
    more = bytearray(int(sys.argv[2]) << 20)
    more[::4096] = b"y" * (len(more) // 4096)
    time.sleep(120)
    os._exit(0)
os.waitpid(pid, 0)
"""

# `forkloop.py MIB SECONDS`: touch MIB, then for SECONDS fork children that exec `true` (one
# after 10 ms, as a runner between fork and exec) and run `sh -c true`; all exit at once.
FORKLOOP = r"""
import os, subprocess, sys, time
held = bytearray(int(sys.argv[1]) << 20)
held[::4096] = b"x" * (len(held) // 4096)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    pid = os.fork()
    if pid == 0:
        time.sleep(0.01)
        os.execv("/bin/true", ["true"])
    os.waitpid(pid, 0)
    subprocess.run(["sh", "-c", "true"])
"""

needs_proc = pytest.mark.skipif(
    not os.path.exists(f"/proc/{os.getpid()}/smaps_rollup"), reason="no /proc/PID/smaps_rollup"
)


@pytest.fixture(autouse=True)
def _tree_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OOMREC_CELL_SCOPE", "tree")


@needs_proc
def test_a_fork_sharing_the_runners_pages_is_no_guard_stop_and_no_double_peak(
    repo: Repo, record: Path, tmp_path: Path, cli: Cli
) -> None:
    result = sweep_a_forking_runner(repo, record, tmp_path, cli)
    assert "no cgroup per cell: OOMREC_CELL_SCOPE=tree" in " ".join(result.stderr.split())


@needs_proc
def test_the_peak_of_a_forking_runner_counts_its_pages_once(tmp_path: Path) -> None:
    script = tmp_path / "fork.py"
    script.write_text(FORK)
    run = run_cell([PY, str(script), "300", str(tmp_path / "cell.csv")], 60)
    assert run.returncode == 0, run.output_tail
    assert run.peak_rss_bytes is not None
    # 300 MiB and the interpreter, within 5%; twice that were the fork counted on its own.
    assert 300 * MIB <= run.peak_rss_bytes <= 1.05 * (300 + 40) * MIB


@needs_proc
def test_memory_a_child_adds_of_its_own_is_still_a_guard_stop(tmp_path: Path) -> None:
    script = tmp_path / "grow.py"
    script.write_text(GROW)
    run = run_cell([PY, str(script), "250", "400"], 60, guard=GuardLimits(max_cell_bytes=500 * MIB))
    assert run.guard_stop is not None, run.output_tail
    assert run.guard_stop.cell_bytes > 500 * MIB
    assert "passed --max-cell-memory 500 MiB" in run.guard_stop.reason


@needs_proc
def test_a_runner_forking_and_execing_in_a_loop_is_no_guard_stop(tmp_path: Path) -> None:
    # Found by hand: a fork that exited between its statm and its PSS reads counted in full.
    script = tmp_path / "forkloop.py"
    script.write_text(FORKLOOP)
    for _ in range(2):
        run = run_cell(
            [PY, str(script), "300", "2"], 60, guard=GuardLimits(max_cell_bytes=400 * MIB)
        )
        assert run.guard_stop is None, run.guard_stop
        assert run.returncode == 0, run.output_tail
        assert run.peak_rss_bytes is not None and run.peak_rss_bytes < 400 * MIB


@needs_proc
def test_a_process_gone_between_its_statm_and_its_pss_counts_nothing() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    # Its statm said 300 MiB; by the PSS read it has exec'd and exited: it holds nothing now.
    assert proctree._excess([pid], {pid: 300 * MIB}) == {pid: 300 * MIB}
    me = os.getpid()
    rss = int(Path(f"/proc/{me}/statm").read_bytes().split()[1]) * proctree._PAGE
    excess = proctree._excess([me], {me: rss})
    assert excess is not None and 0 <= excess[me] < rss


def test_kcmp_tells_one_address_space_from_a_forks() -> None:
    if proctree._KCMP is None:
        pytest.skip(f"no kcmp number known for {os.uname().machine}")
    assert proctree._same_address_space(os.getpid(), os.getpid())
    pid = os.fork()
    if pid == 0:
        os.read(os.pipe()[0], 1)  # blocks until killed
        os._exit(0)
    try:
        assert not proctree._same_address_space(os.getpid(), pid)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


def test_tasks_of_one_address_space_count_once_and_others_in_full() -> None:
    if proctree._KCMP is None:
        pytest.skip(f"no kcmp number known for {os.uname().machine}")
    # A thread is a task of this address space, as a vfork child is until it execs.
    ready, release = threading.Event(), threading.Event()
    tids: list[int] = []

    def hold() -> None:
        tids.append(threading.get_native_id())
        ready.set()
        release.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    ready.wait()
    pid = os.fork()
    if pid == 0:
        os.read(os.pipe()[0], 1)  # blocks until killed
        os._exit(0)
    try:
        me, tid = os.getpid(), tids[0]
        line = Path(f"/proc/{me}/statm").read_bytes()
        statm = {me: line, tid: line, pid: line}
        rss = dict.fromkeys(statm, 1)
        assert list(proctree._one_per_address_space(statm, rss)) == [me, pid]
    finally:
        release.set()
        thread.join()
        os.kill(pid, 9)
        os.waitpid(pid, 0)


def test_an_unknown_cell_scope_is_one_line_and_exit_2(
    repo: Repo, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo.path / "models" / "a").mkdir(parents=True)
    monkeypatch.setenv("OOMREC_CELL_SCOPE", "cgroups")
    result = cli("sweep", "--models", "a", "--lengths", "512", "--runner", "true")
    assert result.exit_code != 0
    assert result.stderr.strip().splitlines() == [
        "oomrec: error: OOMREC_CELL_SCOPE='cgroups' is not cgroup or tree; unset it (a cgroup "
        "per cell where one can be made) or set it to tree (each cell's process tree)"
    ]
