"""A memory cgroup per cell (oomrec.sweep.cell.cellscope), with real processes and real cgroups on
this machine (root, cgroup v1; skipped where no cgroup can be made): the cell's own OOM counter as
evidence, its peak, a guard that does not count a fork's shared pages twice, no cgroup left."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from oomrec.sweep.cell import cellscope, runner
from oomrec.sweep.cell.runner import run_cell
from tests.cgroups import make_memory_cgroup
from tests.conftest import CliResult
from tests.gitrepo import Repo
from tests.test_memscope import oomrec_inside

Cli = Callable[..., CliResult]
MIB = 1 << 20
PY = sys.executable

# `touch.py MIB`: touch MIB of memory, then write an ok row to argv[2] (when given).
TOUCH = r"""
import sys
held = bytearray(int(sys.argv[1]) << 20)
held[::4096] = b"x" * (len(held) // 4096)
if len(sys.argv) > 2:
    row = 'a,./models/a,512,32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"Hi",512'
    open(sys.argv[2], "w").write("HEADER\n" + row + "\n")
"""

# `fork.py MIB cell_csv`: touch MIB, fork a child that keeps the parent's pages (no exec) for
# 1 s, as a runner between fork and exec does, then write an ok row.
FORK = r"""
import os, sys, time
held = bytearray(int(sys.argv[1]) << 20)
held[::4096] = b"x" * (len(held) // 4096)
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        time.sleep(0.4)
        os._exit(0)
    os.waitpid(pid, 0)
row = 'a,./models/a,512,32,1.0,2.0,3.0,4.0,2026-07-03,hw,0.3.3,release,32,"Hi",512'
open(sys.argv[2], "w").write("HEADER\n" + row + "\n")
"""


@pytest.fixture(autouse=True)
def _needs_cell_cgroups() -> None:
    why = cellscope.unavailable()
    if why is not None:
        pytest.skip(f"no cgroup per cell here: {why}")


def cell_cgroups() -> list[Path]:
    place = cellscope._place()
    assert isinstance(place, cellscope._Place)
    return sorted(place.parent.glob("oomrec-*"))


def test_the_peak_is_the_cells_own_and_no_cgroup_is_left(tmp_path: Path) -> None:
    script = tmp_path / "touch.py"
    script.write_text(TOUCH)
    before = cell_cgroups()
    run = run_cell([PY, str(script), "300"], 60)
    assert run.returncode == 0, run.output_tail
    assert run.peak_rss_bytes is not None
    # The cgroup charges each page once: 300 MiB and the interpreter, within 5%.
    assert 300 * MIB <= run.peak_rss_bytes <= 1.05 * (300 + 40) * MIB
    assert cell_cgroups() == before


def test_an_oom_kill_in_the_cells_own_cgroup_is_its_evidence(
    repo: Repo, record: Path, tmp_path: Path
) -> None:
    script = tmp_path / "touch.py"
    script.write_text(TOUCH.replace("HEADER", "h"))
    (repo.path / "models" / "a").mkdir(parents=True)
    # oomrec in a 256 MiB job; its cell touches 1 GiB: the kernel kills it in its own cgroup.
    job = make_memory_cgroup(256 * MIB)
    try:
        done = oomrec_inside(
            job.procs,
            "sweep", "--models", "a", "--lengths", "512 2048",
            "--runner", f"{PY} {script} 1024 {{cell_csv}}", "--json",
            cwd=repo.path,
        )  # fmt: skip
    finally:
        job.remove()
    assert done.returncode == 0, done.stderr
    cells = json.loads(done.stdout)["cells"]
    assert [(c["verdict"], c["oom_evidence"]) for c in cells] == [
        ("SKIP:oom", "cell cgroup"),
        ("SKIP:oom_backstop", None),
    ]
    assert "the kernel's OOM killer killed a process in the cell's cgroup oomrec-" in " ".join(
        done.stderr.split()
    )
    assert "scope:   a memory cgroup per cell (v1" in done.stderr or "(v2" in done.stderr
    assert record.read_text().startswith("a,512,")


def sweep_a_forking_runner(repo: Repo, record: Path, tmp_path: Path, cli: Cli) -> CliResult:
    """A 400 MiB runner that forks children sharing its pages, swept under a 600M guard: it
    runs, and nothing is recorded (the tree's summed RSS would read ~800 MiB)."""
    script = tmp_path / "fork.py"
    script.write_text(FORK.replace("HEADER", "h"))
    (repo.path / "models" / "a").mkdir(parents=True)
    result = cli(
        "sweep", "--models", "a", "--lengths", "512",
        "--runner", f"{PY} {script} 400 {{cell_csv}}", "--max-cell-memory", "600M", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    cells = json.loads(result.stdout)["cells"]
    assert [c["verdict"] for c in cells] == ["ok"], cells
    assert not record.exists() or record.read_text() == ""
    return result


def test_a_fork_that_shares_the_runners_pages_is_not_counted_twice(
    repo: Repo, record: Path, tmp_path: Path, cli: Cli
) -> None:
    result = sweep_a_forking_runner(repo, record, tmp_path, cli)
    assert "scope:   a memory cgroup per cell" in result.stderr


def test_cgroups_a_killed_oomrec_left_are_removed_by_the_next(tmp_path: Path) -> None:
    place = cellscope._place()
    assert isinstance(place, cellscope._Place)
    # A dead oomrec's cell cgroup: a pid that cannot be running (beyond pid_max); and a
    # cgroup another tool named oomrec-something, which is not oomrec's to remove.
    left = place.parent / "oomrec-4194999-3"
    left.mkdir()
    other = place.parent / "oomrec-test-4194999-3"
    other.mkdir()
    try:
        done = subprocess.run(
            [PY, "-c", "from oomrec.sweep.cell import cellscope; print(cellscope.unavailable())"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert done.stdout.strip() == "None"
        assert not left.exists()
        assert other.exists()
    finally:
        for path in (left, other):
            if path.exists():
                path.rmdir()


def test_a_cgroup_join_that_fails_between_fork_and_exec_is_a_runner_that_did_not_start() -> None:
    """Without /bin/sh the cell joins its cgroup in Popen's preexec_fn; when that write fails
    Popen raises SubprocessError, which has no strerror: reading it ended the sweep in an
    AttributeError. A real cgroup, removed before the spawn, makes the join fail."""
    scope = cellscope.make()
    if scope is None:
        pytest.skip(f"no cell cgroup here: {cellscope.unavailable()}")
    scope.remove()
    with pytest.raises(subprocess.SubprocessError) as caught:
        runner._spawn([PY, "-c", "pass"], None, None, scope, shell="/nonexistent/sh")
    assert not isinstance(caught.value, OSError)
    said = runner.start_error(caught.value)
    assert said and "\n" not in said
